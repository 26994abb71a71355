"""The Explorer: one conversation under one preset, redrawn as its knobs move."""

from __future__ import annotations

import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

from ..conversation import Conversation
from ..errors import HarpeLabError
from ._common import (_Guarded, _check_knob, _check_positive, _check_preset, _default_counter, _figure,
                      _full_history_peak, _knob_specs, _limit_tokens, _nice_step, _Redraw, _sources)
from ._render import _COUNTS, _error_html, _summary_html, render_request_html

__all__ = ["Explorer"]


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

        from ..models import model_input_limit
        from ..plots import TokenUsePlot
        from ..presets import PRESETS

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
        from ..report import GLOSSARY

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
        self._redraw = _Redraw(self._figure, self._plot)

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
        from ..presets import get_preset

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
        from ..replay import replay

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
        from ..replay import totals

        result = self.replay_for()
        n = len(result)
        with self._hold():
            self.step.max = max(0, n - 1)
            if self.step.value > self.step.max:
                self.step.value = self.step.max
        self._draw(result)  # the picture first: in a browser it is sent while the rest is worked out
        figures = totals(result.requests)
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
        self.plot.value = self._redraw.png()
        if len(result):
            used = int(result.requests["input_tokens"].iat[i])
            cap, what = self._cap(result)
            with self.gauge.hold_sync():  # one message to the front end, not three
                self.gauge.max = max(cap, used, 1)
                self.gauge.value = used
                self.gauge.bar_style = "danger" if used > cap else ("warning" if used > 0.9 * cap else "success")
            self.gauge_label.value = f"{used:,} / {cap:,} tokens ({what}) at request {i}"
            self.request_view.value = render_request_html(result, i)
        self.redraws += 1
        self.last_redraw_seconds = time.perf_counter() - started

    def __repr__(self) -> str:
        return f"Explorer({self.source.value!r}, {self.strategy.value!r}, {self._safe_parameters()})"
