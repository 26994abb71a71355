"""Compare: several strategies on one conversation, side by side, with their table."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..conversation import Conversation
from ..errors import HarpeLabError
from ._common import (_Guarded, _check_knob, _check_preset, _check_view_options, _figure, _full_history_peak,
                      _knob_range, _knob_specs, _knob_window, _limit_tokens, _measure, _measure_lines,
                      _nice_step, _png, _reach, _Redraw, _typed_value)
from ._render import _compare_table_html, _error_html, _measure_html, _message_html

__all__ = ["Compare"]


def _strategies(
    strategies: Sequence[str] | Mapping[str, Callable[[], Any]],
) -> tuple[dict[str, Any], dict[str, Callable[[], Any] | None]]:
    """(label → preset, label → factory): a preset's factory is ``None`` (built per budget),
    a factory given directly is kept as it is."""
    presets: dict[str, Any] = {}
    factories: dict[str, Callable[[], Any] | None] = {}
    if isinstance(strategies, Mapping):
        for label, factory in strategies.items():
            if not callable(factory):
                raise HarpeLabError(f"`strategies[{label!r}]` must be a zero-argument context factory, "
                                    f"but {type(factory).__name__} was passed.")  # fmt: skip
            factories[str(label)] = factory
    elif isinstance(strategies, (str, bytes)) or not isinstance(strategies, Sequence):
        raise HarpeLabError(f"`strategies` must be a list of preset names or a dict of label → factory, "
                            f"but {strategies!r} was passed.")  # fmt: skip
    else:
        for name in strategies:
            presets[name] = _check_preset(name, "strategies")
            factories[name] = None
    if not factories:
        raise HarpeLabError("`strategies` must name at least one strategy, but none was passed.")
    return presets, factories



class Compare(_Guarded):
    """Several strategies on one conversation, side by side, with their comparison table.

    ``strategies`` are preset names (`harpe_lab.presets.PRESETS`) or a mapping of label →
    zero-argument context factory. The ``budget`` slider sets each preset's budget knob
    (`Preset.budget_knob`; presets without one ignore it, as do factories given directly);
    its range runs up to the declared context window when one is known (``limit``, a token
    count or a model name, else the recording's), else to a little above the conversation's
    largest full-history request. A budget can be typed in ``budget_value`` beside it: one
    beyond the slider's range widens it, one the knob refuses is kept out, and ``message``
    says so either way. A preset's window knob (a coding agent's context window) is set to
    ``limit``'s window, else the recording's model's (`harpe_lab.recorded.model_window`), as
    the CLI and compare set it (`Preset.at_window`).

    The conversation is measured as the CLI and the Explorer measure it
    (`harpe_lab.measure.measure`): ``counter`` names the tokenizer (``None``: ``cl100k_base``)
    or is a counter object, fitted to the recording's provider usage when it has some unless
    ``calibrate=False``; ``pricing`` is ``"auto"`` (each call priced by its own model), a
    model name, a `Pricing`, or ``None``. ``measure`` is the result, ``counter`` and
    ``pricing`` its parts.

    Views: ``header`` (the measure's lines: counter, prices, what the recording says
    happened), ``plot`` (all token curves overlaid), ``panels`` (one per strategy: its token
    plot, or its error), ``table`` (escaped HTML in the report's number format, one row per
    strategy, in a box that scrolls sideways rather than overflow its area: tokens sent,
    largest request, compactions, overshoots and cached prefix from
    `harpe_lab.replay.totals`, the cost with prompt caching when priced, the headline
    retention with its denominator — "no probes" when there are none —, the needed-next kept
    share (of the things the recorded replies named that were seen earlier, the share the
    requests still held outside any summary: `harpe_lab.evaluate.needed_next`) with the
    number of needs in its header, when the replies name any, and the artifacts kept; with
    a budget, the note of each strategy the budget did not bind, which is then
    left out of the best values, marked in bold; a strategy that raised is a row whose error
    spans the columns), ``errors``; ``replays`` maps label → `Replay` (those that ran),
    ``failures`` label → exception; ``frame`` is every figure as a DataFrame (the
    `harpe_lab.evaluate.compare` columns at the slider's budget, the totals and ``error``;
    ``frame.attrs`` are compare's). A conversation whose probes are asked after its last
    turn is replayed with one empty turn added there (`harpe_lab.evaluate.with_probe_turn`),
    so the table can judge them.
    """

    def __init__(self, conversation: Conversation, strategies: Sequence[str] | Mapping[str, Callable[[], Any]], *,
                 budget: int | None = None, counter: Any = None, calibrate: bool = True, pricing: Any = "auto",
                 distill: Any = None, probes: Any = None, limit: int | str | None = None, dpi: float = 72) -> None:
        import ipywidgets as w

        if not isinstance(conversation, Conversation):
            raise HarpeLabError(f"`conversation` must be a Conversation, but {type(conversation).__name__} was passed.")
        from ..evaluate import with_probe_turn

        self._presets, self._factories = _strategies(strategies)
        budget_knobs = [p.budget_knob for p in self._presets.values() if p.budget_knob is not None]
        if budget is not None:
            budget = _check_knob(budget_knobs[0] if budget_knobs else _knob_specs()["budget"], budget, "budget")
        _check_view_options(limit=limit, dpi=dpi, distill=distill, calibrate=calibrate, pricing=pricing)
        window = None if limit is None else _limit_tokens(limit)

        # probes asked after the last turn are judged at an extra, empty turn
        conversation = with_probe_turn(conversation)
        self.conversation = conversation
        self.measure = _measure(conversation, counter, calibrate, pricing)
        self.counter = self.measure.counter
        self.pricing = self.measure.pricing
        self._model_window = _knob_window(limit, conversation)
        if window is None and self.measure.recorded is not None:
            window = self.measure.recorded.window
        self.limit = limit
        self._distill = distill
        self.probes = probes
        self.dpi = dpi
        self.last_error: BaseException | None = None
        self.replays: dict[str, Any] = {}
        self.failures: dict[str, BaseException] = {}
        self.frame: Any = None
        self._cache: dict[tuple, Any] = {}

        self._build_budget(w, budget, budget_knobs, window)
        self._build_views(w)
        self._build_figures(dpi)
        self.budget.observe(self._guard(self._on_budget), names="value")
        self.budget_value.observe(self._guard(lambda change: self._on_typed(change.new)), names="value")
        self._guard(self.refresh)()
        if self.last_error is not None:
            raise self.last_error

    # -- construction: the budget control, the views, the figures ------------------------------

    def _build_budget(self, w: Any, budget: int | None, budget_knobs: list[Any], window: int | None) -> None:
        """The budget slider and its text box; its range fits the presets' budget knobs to the
        conversation (up to the window when one is known)."""
        from ..presets import DEFAULT_BUDGET

        peak = _full_history_peak(self.conversation, self.counter)
        ranges = [_knob_range(k, peak, window) for k in budget_knobs] or [(1, max(2, int(peak * 1.1)))]
        lo, hi = max(r[0] for r in ranges), max(r[1] for r in ranges)
        value = budget if budget is not None else (DEFAULT_BUDGET if DEFAULT_BUDGET <= hi else max(lo, hi // 2))
        top = max(hi, value)
        self._budget_knob = budget_knobs[0] if budget_knobs else _knob_specs()["budget"]
        self._peak, self._window = peak, window
        # the number is typed in the box beside it: a slider's own readout clamps a typed
        # value to its range without a word
        self.budget = w.IntSlider(description="budget", min=lo, max=top, value=value, step=_nice_step(top - lo),
                                  continuous_update=False, disabled=not budget_knobs, readout=False,
                                  tooltip="each preset's budget knob, in tokens",
                                  layout=w.Layout(width="360px"))  # fmt: skip
        self.budget.add_class("harpe-budget")
        self.budget_value = w.Text(value=f"{value:,}", continuous_update=False, disabled=not budget_knobs,
                                   tooltip="type a budget in tokens and press Enter",
                                   layout=w.Layout(width="80px"))  # fmt: skip
        self.budget_value.add_class("harpe-budget-value")
        self.message = w.HTML()
        self.message.add_class("harpe-message-area")
        self._typing = False

    def _build_views(self, w: Any) -> None:
        """The overlay plot, one panel per strategy, the table, and their layout."""
        # no margin: at 100% of a narrow area a widget's usual margin would overflow it
        self.plot = w.Image(format="png", layout=w.Layout(width="100%", max_width="900px", margin="0"))
        self.plot.add_class("harpe-compare-plot")
        self._panel_images = {name: w.Image(format="png", layout=w.Layout(width="100%", margin="0"))
                              for name in self._factories}  # fmt: skip
        self._panel_errors = {name: w.HTML(layout=w.Layout(display="none")) for name in self._factories}
        self._panels = {name: w.VBox([self._panel_images[name], self._panel_errors[name]]) for name in self._factories}
        columns = f"repeat({min(3, len(self._factories))}, minmax(0, 1fr))"  # never wider than the area
        self.panels = w.GridBox(list(self._panels.values()), layout=w.Layout(grid_template_columns=columns,
                                                                             grid_gap="4px"))  # fmt: skip
        self.table = w.HTML(layout=w.Layout(width="100%", margin="0"))
        self.table.add_class("harpe-compare-table")
        self.header = w.HTML(value=_measure_html(_measure_lines(self.measure)))
        self.header.add_class("harpe-header")
        self.errors = w.Output()
        controls = w.HBox([self.budget, self.budget_value, w.Label("tokens")], layout=w.Layout(align_items="center"))
        self.widget = w.VBox([self.header, controls, self.message, self.plot, self.panels, self.table, self.errors],
                             layout=w.Layout(max_width="100%"))  # fmt: skip
        self.widget.add_class("harpe-compare")

    def _build_figures(self, dpi: float) -> None:
        from ..plots import TokenUsePlot

        self._figure = _figure(9, 3.6, dpi, right=0.78)  # the legend sits to the right
        self._overlay_ax = self._figure.add_subplot()
        self._panel_figs = {}
        for name in self._factories:
            fig = _figure(4.2, 2.6, dpi, left=0.17, right=0.97)
            view = TokenUsePlot(fig.add_subplot(), legend=None)
            self._panel_figs[name] = (view, _Redraw(fig, view))

    def _on_budget(self, change: Any) -> None:
        self._show_budget()
        if not self._typing:
            self.message.value = ""
        self.refresh()

    def _show_budget(self) -> None:
        typing, self._typing = self._typing, True
        try:
            self.budget_value.value = f"{self.budget.value:,}"
        finally:
            self._typing = typing

    def _on_typed(self, text: str) -> None:
        """A budget typed beside the slider: applied when the budget knob accepts it — the
        slider's range widened to hold it if need be — else left out; ``message`` says which."""
        if self._typing:
            return  # the box being set to the slider's value, not a person typing
        slider, knob = self.budget, self._budget_knob
        value, said = _typed_value("budget", text, knob, slider.min, slider.max, slider.value,
                                   _reach(knob, slider.max, self._window, self._peak), "a budget")  # fmt: skip
        self.message.value = _message_html(said)
        if value is None:
            self._show_budget()
            return
        typing, self._typing = self._typing, True
        try:
            slider.max = max(slider.max, value)
            slider.min = min(slider.min, value)
            slider.value = value  # replays (the slider's observer), the message kept
        finally:
            self._typing = typing
        self._show_budget()

    def _factory(self, name: str) -> Callable[[], Any]:
        given = self._factories[name]
        if given is not None:
            return given
        preset = self._presets[name]
        knobs = {} if preset.budget_knob is None else {preset.budget_knob.name: self.budget.value}
        return preset.build(counter=self.counter, system=self.conversation.system, distill=self._distill,
                            **preset.at_window(knobs, self._model_window))

    def _key(self, name: str) -> tuple:
        preset = self._presets.get(name)
        depends = preset is not None and preset.budget_knob is not None
        return (name, self.budget.value if depends else None)

    def refresh(self) -> None:
        """Replay every strategy at the current budget (cached) and redraw; a strategy
        that raises becomes a row with its error."""
        from ..plots import plot_strategies
        from ..replay import replay

        replays, failures = {}, {}
        for name in self._factories:
            key = self._key(name)
            if key not in self._cache:
                try:
                    self._cache[key] = replay(self.conversation, self._factory(name), counter=self.counter,
                                              pricing=self.pricing, name=name)  # fmt: skip
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
        for name, (view, redraw) in self._panel_figs.items():
            if name in replays:
                view.update(replays[name])
                self._panel_images[name].value = redraw.png()
                self._panel_images[name].layout.display = None
                self._panel_errors[name].layout.display = "none"
            else:
                self._panel_errors[name].value = _error_html(f"{name}: no replay", failures[name])
                self._panel_errors[name].layout.display = None
                self._panel_images[name].layout.display = "none"
        self.frame = self._table(replays, failures, self.budget.value if budgeted else None)
        self.table.value = _compare_table_html(self.frame)
        self._ok()

    def _table(self, replays: Mapping[str, Any], failures: Mapping[str, BaseException], budget: int | None) -> Any:
        import pandas as pd

        from ..evaluate import compare
        from ..report import totals_row

        judged = compare(list(replays.values()), probes=self.probes, budget=budget) if replays else pd.DataFrame()
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
        frame = pd.DataFrame(rows)
        frame.attrs.update(judged.attrs)
        return frame

    def __repr__(self) -> str:
        return f"Compare({self.conversation.id!r}, {list(self._factories)})"
