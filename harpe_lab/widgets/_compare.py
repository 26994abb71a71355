"""Compare: several strategies on one conversation, side by side, with their table."""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

from ..conversation import Conversation
from ..errors import HarpeLabError
from ._common import (_Guarded, _check_knob, _check_positive, _check_preset, _default_counter, _figure,
                      _full_history_peak, _knob_specs, _nice_step, _png, _Redraw)
from ._render import _CSS, _error_html

__all__ = ["Compare"]


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

        from ..plots import TokenUsePlot
        from ..presets import DEFAULT_BUDGET

        if not isinstance(conversation, Conversation):
            raise HarpeLabError(f"`conversation` must be a Conversation, but {type(conversation).__name__} was passed.")
        from ..evaluate import with_probe_turn

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
            view = TokenUsePlot(fig.add_subplot(), legend=None)
            self._panel_figs[name] = (view, _Redraw(fig, view))
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
        from ..plots import plot_strategies
        from ..replay import replay

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
        self.frame = self._table(replays, failures)
        from ..report import table_html

        self.table.value = _CSS + table_html(self.frame, _COMPARE_COLUMNS, classes="harpe-summary harpe-compare-table",
                                             span="error")  # fmt: skip
        self._ok()

    def _table(self, replays: Mapping[str, Any], failures: Mapping[str, BaseException]) -> Any:
        import pandas as pd

        from ..evaluate import compare
        from ..report import totals_row

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
