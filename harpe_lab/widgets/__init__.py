"""Jupyter widgets: tune a strategy by dragging, step through what the model saw, compare.

`Explorer` replays one conversation under one strategy and redraws as the sliders move;
`Compare` shows several strategies side by side with their comparison table. Both are
plain objects holding public ipywidgets controls (set ``.value`` from code or a test as a
person would by dragging) and display as their ``widget``.

The token plot is an ``ipywidgets.Image`` holding a PNG rendered by matplotlib's Agg
canvas: it needs no front-end extension, so it works the same in JupyterLab, Notebook 7,
VS Code and Voilà. Figures are `matplotlib.figure.Figure` objects that pyplot never sees,
so a notebook never shows a stray copy. Replays are cached by strategy and parameters,
and a redraw updates the existing artists' data.

A conversation is measured as the CLI measures it (`harpe_lab.measure.measure`, once per
conversation): counted with ``cl100k_base`` fitted to the recording's provider usage when it
has some, each call priced by the model that made it; both widgets say so in their
``header`` (`harpe_lab.measure.Measure.lines`: counter and fit error, prices, the recorded
calls, cost and compactions), and the Explorer marks the recording's own compactions on its
plot beside the replayed ones. So the same session, strategy and knobs give the CLI's totals.

Strategies come from the preset registry (`harpe_lab.presets.PRESETS`): the widgets show
the knobs of the picked preset only and never test a preset's name. A knob that scales with
the conversation runs up to the declared context window when one is known, else a little
above the full history's largest request (`Knob.range_for`); a value typed beside a slider
beyond its range widens it and says so, never clamped in silence. Every count on screen
(header, stats table, Compare table, plot markers) is `harpe_lab.replay.totals` of one
replay's frame, in the report's number format (`harpe_lab.report.format_value`; see
``docs/glossary.md``).

Every piece of transcript text shown as HTML goes through `html.escape`. A callback that
fails writes its traceback to the ``errors`` Output widget and keeps it in ``last_error``;
the Explorer then shows the error in place of its plot and blanks its numbers, so nothing on
screen belongs to an earlier replay. In Compare, a strategy that raises is a row (and a
panel) with its error.
"""

from ._compare import Compare
from ._explorer import Explorer
from ._render import render_request_html

__all__ = ["Explorer", "Compare", "render_request_html"]
