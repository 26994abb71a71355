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

Strategies come from the preset registry (`harpe_lab.presets.PRESETS`): the widgets show
the knobs of the picked preset only, with ranges from `Knob.range_for` of the conversation's
largest full-history request, and never test a preset's name. Every count on screen (header,
stats table, Compare table, plot markers) is `harpe_lab.replay.totals` of one replay's frame,
in the report's number format (`harpe_lab.report.format_value`; see ``docs/glossary.md``).

Every piece of transcript text shown as HTML goes through `html.escape`. A callback that
fails writes its traceback to the ``errors`` Output widget and keeps it in ``last_error``;
the Explorer then shows the error in place of its plot and blanks its numbers, so nothing on
screen belongs to an earlier replay. In Compare, a strategy that raises is a row (and a
panel) with its error.
"""

from __future__ import annotations

import html
import io
import json
import time
import traceback
from collections import OrderedDict
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .conversation import Conversation
from .errors import HarpeLabError
from .messages import AssistantMessage, Message, ToolResults, UserInput

__all__ = ["Explorer", "Compare", "render_request_html", "message_text"]

_MAX_SHOWN_SENT = 60  # the request view lists at most this many verbatim messages
_SNIPPET = 600  # characters of each message shown in the request view

_CSS = """
<style>
.harpe-request { font: 12px/1.35 ui-monospace, SFMono-Regular, Menlo, monospace; max-height: 420px;
  overflow-y: auto; border: 1px solid #ddd; padding: 6px; background: #fcfcfc; }
.harpe-request .msg { margin: 3px 0; padding: 3px 6px; border-left: 4px solid #2e7d32; white-space: pre-wrap;
  word-break: break-word; }
.harpe-request .msg.summarized { border-color: #f2a541; color: #8a6d3b; }
.harpe-request .msg.dropped { border-color: #c62828; color: #999; text-decoration: line-through; }
.harpe-request .msg.system, .harpe-request .msg.synthetic { border-color: #8e6cc4; }
.harpe-request .tag { font-weight: bold; margin-right: 6px; }
.harpe-summary td, .harpe-summary th { padding: 1px 8px; text-align: right; }
.harpe-compare-table td:first-child, .harpe-compare-table th:first-child { text-align: left; }
.harpe-compare-table td.span { text-align: left; color: #8e1b1b; white-space: normal; }
.harpe-error-box { border: 1px solid #c62828; background: #fdecea; color: #8e1b1b; padding: 10px 12px;
  font: 13px/1.4 system-ui, sans-serif; white-space: pre-wrap; word-break: break-word; }
</style>
"""


# --- text ----------------------------------------------------------------------------------


def message_text(message: Message) -> str:
    """A message as plain text: user or assistant text, each tool call as ``→ name(args)``,
    each tool result's content. Not escaped."""
    if isinstance(message, UserInput):
        return message.text
    if isinstance(message, AssistantMessage):
        calls = [f"→ {c.name}({json.dumps(c.input, ensure_ascii=False)})" for c in message.calls]
        return "\n".join([message.text] * bool(message.text) + calls)
    if isinstance(message, ToolResults):
        return "\n".join(r.content if r.success else f"[failed] {r.content}" for r in message.results)
    return str(message)


def _role(message: Message) -> str:
    return {"user": "user", "assistant": "assistant", "tool_results": "tool"}.get(getattr(message, "role", ""), "?")


def _snippet(text: str, limit: int = _SNIPPET) -> str:
    if len(text) <= limit:
        return html.escape(text)
    return html.escape(text[:limit]) + f" <i>… ({len(text) - limit:,} more characters)</i>"


def render_request_html(replay: Any, i: int) -> str:
    """Request ``i`` of ``replay`` as HTML: the system prompt (with any summary), then every
    message the full history held, marked sent, summarized or dropped. Runs of messages
    that were not sent collapse to one line; all transcript text is escaped."""
    if not 0 <= i < len(replay):
        raise HarpeLabError(f"`request` must be in 0..{len(replay) - 1}, but {i!r} was passed.")
    conversation = replay.conversation
    by_id = {mid: m for t in conversation.turns for m, mid in zip(t.all_messages, t.ids)}
    rendered = replay.rendered(i)
    kept = replay.kept(i)
    original = {id(m) for m in by_id.values()}
    parts = [_CSS, '<div class="harpe-request">']
    parts.append(f'<div class="msg system"><span class="tag">system</span>{_snippet(rendered.system, 1200)}</div>')
    synthetic = [m for m in rendered.messages if id(m) not in original]
    for m in synthetic:
        parts.append(f'<div class="msg synthetic"><span class="tag">synthetic {_role(m)}</span>'
                     f"{_snippet(message_text(m))}</div>")  # fmt: skip
    items = list(kept.items())
    sent_total = sum(state == "sent" for _, state in items)
    skip_sent = max(0, sent_total - _MAX_SHOWN_SENT)  # the oldest sent ones collapse too
    run: list[str] = []
    run_state = ""

    def flush() -> None:
        if not run:
            return
        first, last = html.escape(run[0]), html.escape(run[-1])
        span = first if len(run) == 1 else f"{first} … {last}"
        css, tag = ("sent", "sent, not listed") if run_state == "hidden" else (run_state, run_state)
        parts.append(f'<div class="msg {css}"><span class="tag">{tag}</span>'
                     f"{len(run)} message{'s' * (len(run) != 1)} ({span})</div>")  # fmt: skip
        run.clear()

    seen_sent = 0
    for mid, state in items:
        if state == "sent":
            seen_sent += 1
            if seen_sent > skip_sent:
                flush()
                m = by_id[mid]
                parts.append(f'<div class="msg sent"><span class="tag">{_role(m)} {html.escape(mid)}</span>'
                             f"{_snippet(message_text(m))}</div>")  # fmt: skip
                continue
            state = "hidden"
        if run and run_state != state:
            flush()
        run_state = state
        run.append(mid)
    flush()
    parts.append("</div>")
    return "".join(parts)


# --- sources --------------------------------------------------------------------------------


def _sources(source: Any, with_datasets: bool = False) -> "OrderedDict[str, Callable[[], Conversation]]":
    """Picker entries: label → loader. Conversations are taken as given; a string names a
    bundled dataset or a file any importer reads. ``with_datasets`` appends every bundled
    dataset (loaded when picked)."""
    out: OrderedDict[str, Callable[[], Conversation]] = OrderedDict()

    def add(label: str, loader: Callable[[], Conversation]) -> None:
        base, k = label, 2
        while label in out:
            label, k = f"{base} ({k})", k + 1
        out[label] = loader

    def const(c: Conversation) -> Callable[[], Conversation]:
        return lambda: c

    if isinstance(source, Conversation):
        add(source.id, const(source))
    elif isinstance(source, Mapping):
        for label, c in source.items():
            if not isinstance(c, Conversation):
                raise HarpeLabError(f"`source[{label!r}]` must be a Conversation, but {type(c).__name__} was passed.")
            add(str(label), const(c))
    elif isinstance(source, (str, Path)):
        add(str(source), _string_loader(source))
    elif isinstance(source, Sequence):
        for k, c in enumerate(source):
            if isinstance(c, Conversation):
                add(c.id, const(c))
            elif isinstance(c, (str, Path)):
                add(str(c), _string_loader(c))
            else:
                raise HarpeLabError(f"`source[{k}]` must be a Conversation, a dataset name or a path, "
                                    f"but {type(c).__name__} was passed.")  # fmt: skip
    else:
        raise HarpeLabError(
            f"`source` must be a Conversation, a dataset name, a path, or a list or dict of those, "
            f"but {type(source).__name__} was passed."
        )
    if not out:
        raise HarpeLabError("`source` must name at least one conversation, but an empty collection was passed.")
    if with_datasets:
        from . import datasets

        for name in datasets.list_datasets():
            label = f"dataset: {name}"
            if label not in out and name not in out:
                out[label] = (lambda n: lambda: datasets.load(n))(name)
    return out


def _first_conversation(value: Any, name: str) -> Conversation:
    if isinstance(value, Conversation):
        return value
    if isinstance(value, Sequence) and value and isinstance(value[0], Conversation):
        return value[0]
    raise HarpeLabError(f"loading {name!r} gave {type(value).__name__}, not a Conversation")


def _string_loader(source: str | Path) -> Callable[[], Conversation]:
    text = str(source)
    if isinstance(source, str) and not Path(text).exists():
        from . import datasets

        names = datasets.list_datasets()
        if text not in names:
            raise HarpeLabError(f"`source` must be one of the bundled datasets {names} or an existing path, "
                                f"but {text!r} was passed.")  # fmt: skip
        return lambda: _first_conversation(datasets.load(text), text)

    def load() -> Conversation:
        from .importers import load_any

        return _first_conversation(load_any(text), text)

    return load


# --- shared machinery -------------------------------------------------------------------------


class _Guarded:
    """Callback plumbing shared by the widgets: errors go to an Output widget."""

    errors: Any
    last_error: BaseException | None

    def _guard(self, fn: Callable[..., None]) -> Callable[..., None]:
        def run(*args: Any, **kwargs: Any) -> None:
            try:
                fn(*args, **kwargs)
            except Exception as exc:  # shown to the user in the errors widget, and kept
                self.last_error = exc
                self.errors.append_stderr("".join(traceback.format_exception(exc)))

        return run

    def _ok(self) -> None:
        self.last_error = None
        if self.errors.outputs:
            self.errors.outputs = ()

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


def _png(fig: Any) -> bytes:
    """Render ``fig`` once with Agg and encode the pixels as PNG.

    Cheaper than ``savefig``: no dpi swap (which would invalidate the text layout cache)
    and no second layout pass. compress_level 1: the PNG is sent once and thrown away,
    so encoding speed beats size.
    """
    from PIL import Image

    fig.canvas.draw()
    buf = io.BytesIO()
    Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1).save(
        buf, format="png", compress_level=1
    )
    return buf.getvalue()


def _figure(width: float, height: float, dpi: float, right: float = 0.98, left: float = 0.09) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A bare Figure is never registered with pyplot: no double display, no leak in Gcf.
    # Fixed margins rather than a layout engine: one draw per frame instead of two.
    fig = Figure(figsize=(width, height), dpi=dpi)
    fig.subplots_adjust(left=left, right=right, bottom=0.16, top=0.9)
    FigureCanvasAgg(fig)
    return fig


def _default_counter(counter: Any) -> Any:
    if counter is not None:
        return counter
    from .tokens import ApproxCounter

    return ApproxCounter()


def _nice_step(span: float) -> int:
    raw = max(1.0, span / 200)
    mag = 10 ** int(len(str(int(raw))) - 1)
    return int(max(1, round(raw / mag) * mag))


def _knob_specs() -> "OrderedDict[str, Any]":
    """Every knob name in the registry, in registry order, with its first `Knob`."""
    from .presets import PRESETS

    out: OrderedDict[str, Any] = OrderedDict()
    for preset in PRESETS.values():
        for k in preset.knobs:
            out.setdefault(k.name, k)
    return out


def _check_knob(knob: Any, value: Any, param: str | None = None) -> int:
    """``value`` checked by ``knob`` (integral floats accepted), as a seaborn-style error."""
    from .errors import StrategyError

    try:
        return knob.check(value)
    except StrategyError:
        upper = "" if knob.maximum is None else f" and <= {knob.maximum:,}"
        raise HarpeLabError(f"`{param or knob.name}` must be a whole number of {knob.unit} >= {knob.minimum:,}{upper}, "
                            f"but {value!r} was passed.") from None  # fmt: skip


def _check_positive(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise HarpeLabError(f"`{name}` must be a positive number, but {value!r} was passed.")


def _check_preset(name: Any, param: str = "strategy") -> Any:
    from .presets import PRESETS

    if not isinstance(name, str) or name not in PRESETS:
        raise HarpeLabError(f"`{param}` must be one of {list(PRESETS)}, but {name!r} was passed.")
    return PRESETS[name]


def _full_history_peak(conversation: Conversation, counter: Any) -> int:
    """The largest request the full history makes: what `Knob.range_for` scales by."""
    from .presets import get_preset
    from .replay import replay

    full = replay(conversation, get_preset("full").build(system=conversation.system, counter=counter),
                  counter=counter, name="full")  # fmt: skip
    return int(full.requests["input_tokens"].max()) if len(full) else 1000


_STAT_ROWS = (("requests", "requests"), ("input_tokens_sum", "tokens sent"), ("input_tokens_max", "largest request"),
              ("compactions", "compactions"), ("summaries", "summaries"), ("overshoots", "overshoots"),
              ("overshoot_tokens_max", "worst overshoot"), ("distill_calls", "distill calls"),
              ("cached_prefix_share", "cached prefix"))  # fmt: skip
_COUNTS = ("compactions", "summaries", "overshoots")
"""The counts the Explorer's header shows, next to its stats table."""


def _summary_html(totals: Mapping[str, Any]) -> str:
    """The stats table: one row per `_STAT_ROWS` key (``data-key``), in the shared format."""
    from .report import format_value

    cells = "".join(f"<tr data-key='{k}'><th>{html.escape(label)}</th><td>{html.escape(format_value(k, totals.get(k)))}</td></tr>"
                    for k, label in _STAT_ROWS)  # fmt: skip
    return f'{_CSS}<table class="harpe-summary">{cells}</table>'


def _error_html(what: str, exc: BaseException) -> str:
    return (f"{_CSS}<div class='harpe-error-box'><b>{html.escape(what)}</b><br>"
            f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</div>")  # fmt: skip


# --- Explorer -------------------------------------------------------------------------------


class Explorer(_Guarded):
    """Replay a conversation under a strategy and tune it by dragging.

    Controls (public, set ``.value`` to drive them): ``source`` (conversation picker),
    ``strategy`` (a preset of `harpe_lab.presets.PRESETS`), ``knobs`` (one ``IntSlider``
    per knob name in the registry; only the selected preset's knobs are shown, their
    ranges from `harpe_lab.presets.Knob.range_for` of the conversation's largest
    full-history request), ``auto`` (a checkbox beside each knob whose default is derived
    from the others: checked, the preset derives it), and ``step`` (the request shown).
    ``budget``, ``high_water`` and ``low_water`` are the sliders of those knobs.

    Views: ``plot`` (the token plot as a PNG `Image`; after an error ``plot_error`` shows
    the error in its place), ``counts`` (Labels ``compactions``, ``summaries`` and
    ``overshoots``; ``compactions`` is also an attribute), ``summary`` (the stats table),
    ``request_view`` (the request at ``step``, escaped HTML), ``gauge`` and ``gauge_label``
    (tokens at ``step`` / the limit), ``errors`` (tracebacks of failed callbacks; the
    exception is also kept in ``last_error``). Every count comes from
    `harpe_lab.replay.totals` of the replay's frame (see ``docs/glossary.md``). ``replay``
    is the current `Replay` (``None`` after an error); ``widget`` the whole layout.

    ``source`` is a Conversation, a bundled dataset name, a path any importer reads, or a
    list or dict of those; with ``datasets`` (the default) the picker also offers every
    bundled dataset. ``budget`` sets the preset's budget knob (`Preset.budget_knob`); other
    knobs are passed by name (``high_water=1500``). ``counter`` defaults to
    `harpe_lab.tokens.ApproxCounter`; ``distill`` to the preset's offline distiller.
    ``limit`` (a token count or a model name) is drawn as the model's limit, and is the
    gauge's maximum.
    """

    def __init__(self, source: Any, *, strategy: str = "summarizing", budget: int | None = None, counter: Any = None,
                 distill: Any = None, limit: int | str | None = None, datasets: bool = True, dpi: float = 80,
                 figsize: tuple[float, float] = (9.0, 3.6), cache_size: int = 256, **knobs: Any) -> None:
        import ipywidgets as w

        from .plots import TokenUsePlot, model_input_limit
        from .presets import PRESETS

        preset = _check_preset(strategy)
        specs = _knob_specs()
        for name in knobs:
            if name not in specs:
                raise HarpeLabError(f"`{name}` is not a knob of any preset: the knobs are {list(specs)} "
                                    f"(and `budget`, which sets the preset's budget knob).")  # fmt: skip
        param = {name: name for name in knobs}
        if budget is not None:
            target = preset.budget_knob.name if preset.budget_knob is not None else "budget"
            if target != "budget" and target in knobs:
                raise HarpeLabError(f"pass `budget` or `{target}`, not both: for {strategy!r} the budget is its {target}.")
            knobs[target], param[target] = budget, "budget"
        mine = {k.name: k for k in preset.knobs}
        given: dict[str, int] = {}
        for name, value in knobs.items():
            if value is not None:
                given[name] = _check_knob(mine.get(name, specs[name]), value, param[name])
        if limit is not None:
            model_input_limit(limit)  # a bad count or an unknown model fails here, not at the first redraw
        _check_positive("dpi", dpi)
        if not (isinstance(figsize, (tuple, list)) and len(figsize) == 2):
            raise HarpeLabError(f"`figsize` must be a (width, height) pair in inches, but {figsize!r} was passed.")
        for value in figsize:
            _check_positive("figsize", value)
        if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
            raise HarpeLabError(f"`cache_size` must be an int >= 1, but {cache_size!r} was passed.")
        if not isinstance(datasets, bool):
            raise HarpeLabError(f"`datasets` must be True or False, but {datasets!r} was passed.")
        if distill is not None and not callable(distill):
            raise HarpeLabError(f"`distill` must be a callable Rendered -> str | None, but {distill!r} was passed.")

        self._loaders = _sources(source, with_datasets=datasets)
        self._conversations: dict[str, Conversation] = {}
        self._peaks: dict[str, int] = {}
        self.counter = _default_counter(counter)
        self._distill = distill
        self.limit = limit
        self.dpi = dpi
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._given = given
        self._fitted: set[str] = set()
        self.last_error: BaseException | None = None
        self.replay: Any = None
        self.redraws = 0
        self.last_redraw_seconds = 0.0
        self._holding = False

        wide = {"style": {"description_width": "90px"}, "layout": w.Layout(width="420px")}
        self.source = w.Dropdown(options=list(self._loaders), description="conversation", **wide)
        self.strategy = w.Dropdown(options=list(PRESETS), value=strategy, description="strategy", **wide)
        self.knobs: dict[str, Any] = {}
        self.auto: dict[str, Any] = {}
        self.knob_rows: dict[str, Any] = {}
        derived = {k.name for p in PRESETS.values() for k in p.knobs if k.default is None}
        for name, knob in specs.items():
            slider = w.IntSlider(description=name.replace("_", " "), min=0, max=1, value=0, continuous_update=False,
                                 readout_format=",d", tooltip=knob.help, **wide)  # fmt: skip
            slider.add_class("harpe-" + name.replace("_", "-"))
            slider.add_class("harpe-knob")
            self.knobs[name] = slider
            row = [slider]
            if name in derived:
                box = w.Checkbox(value=name not in given, description="auto", indent=False,
                                 layout=w.Layout(width="60px"))  # fmt: skip
                box.add_class("harpe-auto-" + name.replace("_", "-"))
                self.auto[name] = box
                row.append(box)
            row.append(w.Label(knob.unit))
            self.knob_rows[name] = w.HBox(row)
            self.knob_rows[name].add_class("harpe-knob-row")
        self.budget = self.knobs.get("budget")
        self.high_water = self.knobs.get("high_water")
        self.low_water = self.knobs.get("low_water")
        self.step = w.IntSlider(description="request", min=0, max=0, value=0, continuous_update=False, **wide)
        self.prev_button = w.Button(description="◀", layout=w.Layout(width="40px"), tooltip="previous request")
        self.next_button = w.Button(description="▶", layout=w.Layout(width="40px"), tooltip="next request")
        self.plot = w.Image(format="png", layout=w.Layout(width="100%", max_width=f"{int(figsize[0] * 100)}px"))
        self.plot_error = w.HTML(layout=w.Layout(display="none", width="100%", max_width=f"{int(figsize[0] * 100)}px"))
        self.request_view = w.HTML()
        self.gauge = w.FloatProgress(min=0, max=1, value=0, description="limit used", **wide)
        self.gauge_label = w.Label()
        from .report import GLOSSARY

        glossary = dict(GLOSSARY)
        self.counts = {name: w.Label(value="0") for name in _COUNTS}
        tips = {"compactions": glossary["compacted"], "summaries": glossary["summarized"],
                "overshoots": glossary["overshoot_tokens"]}  # fmt: skip
        self.compactions = self.counts["compactions"]
        self.summary = w.HTML()
        self.errors = w.Output()
        for widget, cls in ((self.plot, "harpe-plot"), (self.plot_error, "harpe-plot-error"),
                            (self.request_view, "harpe-request-view"), (self.step, "harpe-step"),
                            (self.errors, "harpe-errors"), (self.summary, "harpe-stats")):  # fmt: skip
            widget.add_class(cls)
        for name, label in self.counts.items():
            label.add_class("harpe-" + name)

        self._figure = _figure(*figsize, dpi, right=0.8)
        self._ax = self._figure.add_subplot()
        self._plot = TokenUsePlot(self._ax)

        controls = w.VBox([self.source, self.strategy, *self.knob_rows.values()])
        header = w.HBox([w.HBox([w.Label(f"{name}:", tooltip=tips[name]), label], layout=w.Layout(margin="0 12px 0 0"))
                         for name, label in self.counts.items()])  # fmt: skip
        header.add_class("harpe-counts")
        stats = w.VBox([header, self.summary, w.HBox([self.gauge, self.gauge_label])])
        stepper = w.HBox([self.step, self.prev_button, self.next_button])
        self.widget = w.VBox([w.HBox([controls, stats]), self.plot, self.plot_error, stepper, self.request_view,
                              self.errors])  # fmt: skip
        self.widget.add_class("harpe-explorer")

        self._fit_knobs()
        self.source.observe(self._guard(self._on_source), names="value")
        self.strategy.observe(self._guard(self._on_strategy), names="value")
        for control in (*self.knobs.values(), *self.auto.values()):
            control.observe(self._guard(self._on_params), names="value")
        self.step.observe(self._guard(self._on_step), names="value")
        self.prev_button.on_click(self._guard(lambda _: self._move(-1)))
        self.next_button.on_click(self._guard(lambda _: self._move(+1)))
        self._guard(self.refresh)()
        if self.last_error is not None:
            raise self.last_error

    # -- data ---------------------------------------------------------------------------------

    def _conversation(self) -> Conversation:
        label = self.source.value
        c = self._conversations.get(label)
        if c is None:
            c = self._conversations[label] = self._loaders[label]()
        return c

    @property
    def conversation(self) -> Conversation:
        """The conversation picked in ``source``."""
        return self._conversation()

    @property
    def preset(self) -> Any:
        """The `harpe_lab.presets.Preset` picked in ``strategy``."""
        from .presets import get_preset

        return get_preset(self.strategy.value)

    def peak(self) -> int:
        """The largest request the full history of the picked conversation makes."""
        label = self.source.value
        if label not in self._peaks:
            self._peaks[label] = _full_history_peak(self._conversation(), self.counter)
        return self._peaks[label]

    def parameters(self) -> dict[str, Any]:
        """The knob values the picked preset is built with (``None``: derived, "auto")."""
        out: dict[str, Any] = {}
        for k in self.preset.knobs:
            box = self.auto.get(k.name)
            out[k.name] = None if box is not None and box.value else self.knobs[k.name].value
        return out

    def shown_knobs(self) -> list[str]:
        """The knob names whose sliders are on screen (the picked preset's)."""
        return [name for name, row in self.knob_rows.items() if row.layout.display != "none"]

    def factory(self, parameters: Mapping[str, Any] | None = None) -> Callable[[], Any]:
        """A zero-argument factory of fresh strategies for the picked preset with the
        current knob values (or ``parameters``)."""
        params = self.parameters() if parameters is None else dict(parameters)
        conversation = self._conversation()
        return self.preset.build(counter=self.counter, system=conversation.system, distill=self._distill, **params)

    def _key(self, parameters: Mapping[str, Any]) -> tuple:
        return (self.source.value, self.strategy.value, tuple(sorted(parameters.items())))

    def replay_for(self, parameters: Mapping[str, Any] | None = None) -> Any:
        """The replay for the current controls (or other ``parameters``), from the cache
        when it was computed before."""
        from .replay import replay

        params = self.parameters() if parameters is None else dict(parameters)
        key = self._key(params)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        result = replay(self._conversation(), self.factory(params), counter=self.counter, name=self.strategy.value)
        self._store(key, result)
        return result

    def _store(self, key: tuple, value: Any) -> None:
        self._cache[key] = value
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def _fit_knobs(self) -> None:
        """Show the picked preset's knobs, hide the others, and fit each shown slider's
        range to the conversation (`Knob.range_for` of the full history's peak); a value
        given to the constructor or set before is kept, else the default (or half the
        range when the default lies beyond it)."""
        preset = self.preset
        mine = {k.name: k for k in preset.knobs}
        peak = self.peak()
        with self._hold():
            for name, row in self.knob_rows.items():
                row.layout.display = None if name in mine else "none"
            for name, knob in mine.items():
                slider = self.knobs[name]
                lo, hi = knob.range_for(peak)
                given = self._given.pop(name, None)  # a value given to the constructor applies once
                if given is not None:
                    value = given
                elif name in self._fitted and lo <= slider.value <= hi:
                    value = slider.value
                elif knob.default is not None and knob.default <= hi:
                    value = knob.default
                else:
                    value = max(lo, hi // 2)
                top = max(hi, value)
                slider.max = max(slider.max, top)
                slider.min = lo
                slider.value = value
                slider.max = top
                slider.step = _nice_step(top - lo) if knob.scales else 1
                self._fitted.add(name)
                self._show_auto(name)

    @contextmanager
    def _hold(self) -> Iterator[None]:
        """Batch several control changes into one redraw (made by the caller)."""
        held, self._holding = self._holding, True
        try:
            yield
        finally:
            self._holding = held

    # -- callbacks ------------------------------------------------------------------------------

    def _guard(self, fn: Callable[..., None]) -> Callable[..., None]:
        guarded = super()._guard(fn)

        def run(*args: Any, **kwargs: Any) -> None:
            before = self.last_error
            self.last_error = None
            guarded(*args, **kwargs)
            if self.last_error is not None:
                self._show_error(self.last_error)
            elif before is not None and self.replay is None:
                self.last_error = before  # nothing redrew: the error still stands

        return run

    def _show_error(self, exc: BaseException) -> None:
        """The error in place of the plot; the counts, stats, gauge and request view reset,
        so nothing on screen belongs to an earlier replay."""
        self.replay = None
        params = ", ".join(f"{k}={'auto' if v is None else f'{v:,}'}" for k, v in self._safe_parameters().items())
        what = f"{self.strategy.value}{f' ({params})' if params else ''} on {self.source.value}: no replay"
        self.plot_error.value = _error_html(what, exc)
        self.plot_error.layout.display = None
        self.plot.layout.display = "none"
        for label in self.counts.values():
            label.value = "–"
        self.summary.value = _summary_html({})
        self.gauge.value = 0
        self.gauge.bar_style = ""
        self.gauge_label.value = ""
        self.request_view.value = ""
        with self._hold():
            self.step.max = 0

    def _safe_parameters(self) -> dict[str, Any]:
        try:
            return self.parameters()
        except Exception:  # the error being shown may be about the parameters themselves
            return {}

    def _on_source(self, change: Any) -> None:
        self._fit_knobs()
        self.refresh()

    def _on_strategy(self, change: Any) -> None:
        self._fit_knobs()
        self.refresh()

    def _on_params(self, change: Any) -> None:
        if self._holding:
            return
        for name in self.auto:
            self._show_auto(name)
        self.refresh()

    def _show_auto(self, name: str) -> None:
        """A knob left to the preset ("auto") shows no number: its value is derived."""
        box = self.auto.get(name)
        auto = box is not None and box.value
        self.knobs[name].disabled = auto
        self.knobs[name].readout = not auto

    def _on_step(self, change: Any) -> None:
        if self._holding or self.replay is None:
            return
        self._draw(self.replay)

    def _move(self, delta: int) -> None:
        self.step.value = min(self.step.max, max(self.step.min, self.step.value + delta))

    def refresh(self) -> None:
        """Replay (or take from the cache) and redraw everything: the counts, the stats
        table and the plot all show `totals` of the one frame."""
        from .replay import totals

        result = self.replay_for()
        n = len(result)
        with self._hold():
            self.step.max = max(0, n - 1)
            if self.step.value > self.step.max:
                self.step.value = self.step.max
        figures = totals(result.requests)
        self._draw(result)
        for name, label in self.counts.items():
            label.value = str(figures.get(name, 0))
        self.summary.value = _summary_html(figures)
        self.replay = result
        self.plot_error.layout.display = "none"
        self.plot.layout.display = None
        self._ok()

    def _cap(self, result: Any) -> tuple[int, str]:
        """The gauge's maximum: the model limit, else the strategy's limit, else the full
        history's peak."""
        if self.limit is not None:
            return _limit_tokens(self.limit), "model limit"
        if result.limit is not None:
            return result.limit.tokens, result.limit.kind.replace("_", " ")
        return max(1, self.peak()), "full history's peak"

    def _draw(self, result: Any) -> None:
        started = time.perf_counter()
        i = self.step.value
        params = self.parameters()
        low = params.get("low_water")
        self._plot.update(result, low_water=low, limit=self.limit, cursor=i)
        self.plot.value = _png(self._figure)
        if len(result):
            used = int(result.requests["input_tokens"].iat[i])
            cap, what = self._cap(result)
            self.gauge.max = max(cap, used, 1)
            self.gauge.value = used
            self.gauge.bar_style = "danger" if used > cap else ("warning" if used > 0.9 * cap else "success")
            self.gauge_label.value = f"{used:,} / {cap:,} tokens ({what}) at request {i}"
            self.request_view.value = render_request_html(result, i)
        self.redraws += 1
        self.last_redraw_seconds = time.perf_counter() - started

    def __repr__(self) -> str:
        return f"Explorer({self.source.value!r}, {self.strategy.value!r}, {self._safe_parameters()})"


def _limit_tokens(limit: int | str) -> int:
    from .plots import model_input_limit

    return model_input_limit(limit)


# --- Compare --------------------------------------------------------------------------------

_COMPARE_COLUMNS = ("strategy", "requests", "input_tokens_sum", "input_tokens_median", "input_tokens_max",
                    "compactions", "summaries", "overshoots", "overshoot_tokens_max", "distill_calls",
                    "cached_prefix_share", "retention", "retention_denominator", "artifact_retention",
                    "error")  # fmt: skip


class Compare(_Guarded):
    """Several strategies on one conversation, side by side, with their comparison table.

    ``strategies`` are preset names (`harpe_lab.presets.PRESETS`) or a mapping of label →
    zero-argument context factory. The ``budget`` slider sets each preset's budget knob
    (`Preset.budget_knob`; presets without one ignore it, as do factories given directly);
    its range runs to a little above the conversation's largest full-history request.

    Views: ``plot`` (all token curves overlaid), ``panels`` (one per strategy: its token
    plot, or its error), ``table`` (escaped HTML in the report's number format: one row per
    strategy, counts from `harpe_lab.replay.totals`; a strategy that raised is a row whose
    error spans the columns), ``errors``; ``replays`` maps label → `Replay` (those that ran),
    ``failures`` label → exception; ``frame`` is the table as a DataFrame (the
    `harpe_lab.evaluate.compare` columns, the totals and ``error``). A conversation whose
    probes are asked after its last turn is replayed with one empty turn added there
    (`harpe_lab.evaluate.with_probe_turn`), so the table can judge them.
    """

    def __init__(self, conversation: Conversation, strategies: Sequence[str] | Mapping[str, Callable[[], Any]], *,
                 budget: int | None = None, counter: Any = None, distill: Any = None, probes: Any = None,
                 dpi: float = 72) -> None:
        import ipywidgets as w

        from .plots import TokenUsePlot
        from .presets import DEFAULT_BUDGET

        if not isinstance(conversation, Conversation):
            raise HarpeLabError(f"`conversation` must be a Conversation, but {type(conversation).__name__} was passed.")
        from .evaluate import with_probe_turn

        self._presets: dict[str, Any] = {}
        self._factories: dict[str, Callable[[], Any] | None] = {}
        if isinstance(strategies, Mapping):
            for label, factory in strategies.items():
                if not callable(factory):
                    raise HarpeLabError(f"`strategies[{label!r}]` must be a zero-argument context factory, "
                                        f"but {type(factory).__name__} was passed.")  # fmt: skip
                self._factories[str(label)] = factory
        elif isinstance(strategies, (str, bytes)) or not isinstance(strategies, Sequence):
            raise HarpeLabError(f"`strategies` must be a list of preset names or a dict of label → factory, "
                                f"but {strategies!r} was passed.")  # fmt: skip
        else:
            for name in strategies:
                self._presets[name] = _check_preset(name, "strategies")
                self._factories[name] = None
        if not self._factories:
            raise HarpeLabError("`strategies` must name at least one strategy, but none was passed.")
        budget_knobs = [p.budget_knob for p in self._presets.values() if p.budget_knob is not None]
        if budget is not None:
            budget = _check_knob(budget_knobs[0] if budget_knobs else _knob_specs()["budget"], budget, "budget")
        if distill is not None and not callable(distill):
            raise HarpeLabError(f"`distill` must be a callable Rendered -> str | None, but {distill!r} was passed.")
        _check_positive("dpi", dpi)

        # probes asked after the last turn are judged at an extra, empty turn
        conversation = with_probe_turn(conversation)
        self.conversation = conversation
        self.counter = _default_counter(counter)
        self._distill = distill
        self.probes = probes
        self.dpi = dpi
        self.last_error: BaseException | None = None
        self.replays: dict[str, Any] = {}
        self.failures: dict[str, BaseException] = {}
        self.frame: Any = None
        self._cache: dict[tuple, Any] = {}

        peak = _full_history_peak(conversation, self.counter)
        ranges = [k.range_for(peak) for k in budget_knobs] or [(1, max(2, int(peak * 1.1)))]
        lo, hi = max(r[0] for r in ranges), max(r[1] for r in ranges)
        value = budget if budget is not None else (DEFAULT_BUDGET if DEFAULT_BUDGET <= hi else max(lo, hi // 2))
        top = max(hi, value)
        self.budget = w.IntSlider(description="budget", min=lo, max=top, value=value, step=_nice_step(top - lo),
                                  continuous_update=False, disabled=not budget_knobs, readout_format=",d",
                                  tooltip="each preset's budget knob, in tokens", layout=w.Layout(width="420px"))  # fmt: skip
        self.budget.add_class("harpe-budget")
        self.plot = w.Image(format="png", layout=w.Layout(width="100%", max_width="900px"))
        self.plot.add_class("harpe-compare-plot")
        self._panel_images = {name: w.Image(format="png", layout=w.Layout(width="100%")) for name in self._factories}
        self._panel_errors = {name: w.HTML(layout=w.Layout(display="none")) for name in self._factories}
        self._panels = {name: w.VBox([self._panel_images[name], self._panel_errors[name]]) for name in self._factories}
        self.panels = w.GridBox(list(self._panels.values()),
                                layout=w.Layout(grid_template_columns=f"repeat({min(3, len(self._factories))}, 1fr)"))  # fmt: skip
        self.table = w.HTML()
        self.table.add_class("harpe-compare-table")
        self.errors = w.Output()
        self.widget = w.VBox([self.budget, self.plot, self.panels, self.table, self.errors])
        self.widget.add_class("harpe-compare")

        self._figure = _figure(9, 3.6, dpi, right=0.78)  # the legend sits to the right
        self._overlay_ax = self._figure.add_subplot()
        self._panel_figs = {}
        for name in self._factories:
            fig = _figure(4.2, 2.6, dpi, left=0.17, right=0.97)
            self._panel_figs[name] = (fig, TokenUsePlot(fig.add_subplot(), legend=None))
        self.budget.observe(self._guard(lambda _: self.refresh()), names="value")
        self._guard(self.refresh)()
        if self.last_error is not None:
            raise self.last_error

    def _factory(self, name: str) -> Callable[[], Any]:
        given = self._factories[name]
        if given is not None:
            return given
        preset = self._presets[name]
        knobs = {} if preset.budget_knob is None else {preset.budget_knob.name: self.budget.value}
        return preset.build(counter=self.counter, system=self.conversation.system, distill=self._distill, **knobs)

    def _key(self, name: str) -> tuple:
        preset = self._presets.get(name)
        depends = preset is not None and preset.budget_knob is not None
        return (name, self.budget.value if depends else None)

    def refresh(self) -> None:
        """Replay every strategy at the current budget (cached) and redraw; a strategy
        that raises becomes a row with its error."""
        from .plots import plot_strategies
        from .replay import replay

        replays, failures = {}, {}
        for name in self._factories:
            key = self._key(name)
            if key not in self._cache:
                try:
                    self._cache[key] = replay(self.conversation, self._factory(name), counter=self.counter, name=name)
                except Exception as exc:  # shown as the strategy's row and panel
                    self._cache[key] = exc
            got = self._cache[key]
            if isinstance(got, BaseException):
                failures[name] = got
            else:
                replays[name] = got
        self.replays, self.failures = replays, failures
        self._overlay_ax.clear()
        budgeted = any(p.budget_knob is not None for p in self._presets.values())
        if replays:
            colors = {name: f"C{k % 10}" for k, name in enumerate(self._factories)}  # stable when one fails
            plot_strategies(replays, ax=self._overlay_ax, limit=self.budget.value if budgeted else None, colors=colors)
        else:
            self._overlay_ax.text(0.5, 0.5, "no strategy could replay: see the table", ha="center", va="center",
                                  transform=self._overlay_ax.transAxes)  # fmt: skip
        self.plot.value = _png(self._figure)
        for name, (fig, view) in self._panel_figs.items():
            if name in replays:
                view.update(replays[name])
                self._panel_images[name].value = _png(fig)
                self._panel_images[name].layout.display = None
                self._panel_errors[name].layout.display = "none"
            else:
                self._panel_errors[name].value = _error_html(f"{name}: no replay", failures[name])
                self._panel_errors[name].layout.display = None
                self._panel_images[name].layout.display = "none"
        self.frame = self._table(replays, failures)
        from .report import table_html

        self.table.value = _CSS + table_html(self.frame, _COMPARE_COLUMNS, classes="harpe-summary harpe-compare-table",
                                             span="error")  # fmt: skip
        self._ok()

    def _table(self, replays: Mapping[str, Any], failures: Mapping[str, BaseException]) -> Any:
        import pandas as pd

        from .evaluate import compare
        from .report import totals_row

        judged = compare(list(replays.values()), probes=self.probes) if replays else pd.DataFrame()
        rows = []
        k = 0
        for name in self._factories:
            if name in replays:
                row = dict(judged.iloc[k]) if len(judged) else {}
                row.update(totals_row(name, replays[name]))
                row["error"] = ""
                k += 1
            else:
                exc = failures[name]
                row = {"conversation": self.conversation.id, "strategy": name,
                       "error": f"{type(exc).__name__}: {exc}"}  # fmt: skip
            rows.append(row)
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return f"Compare({self.conversation.id!r}, {list(self._factories)})"
