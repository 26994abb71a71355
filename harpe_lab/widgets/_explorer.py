"""The Explorer: one conversation under one preset, redrawn as its knobs move."""

from __future__ import annotations

import time
from collections import OrderedDict
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

from ..conversation import Conversation
from ..errors import HarpeLabError
from ._common import (_Guarded, _check_positive, _check_view_options, _figure, _full_history_peak,
                      _given_knobs, _knob_range, _knob_specs, _knob_window, _limit_tokens, _measure, _measure_lines,
                      _nice_step, _reach, _Redraw, _sources, _typed_value)
from ._render import _COUNTS, _error_html, _measure_html, _message_html, _summary_html, render_request_html

__all__ = ["Explorer"]


def _check_options(*, limit: Any, dpi: float, figsize: Any, cache_size: Any, datasets: Any, distill: Any,
                   calibrate: Any, pricing: Any) -> None:  # fmt: skip
    """Every other argument checked before any widget exists, so a bad one fails at once."""
    _check_view_options(limit=limit, dpi=dpi, distill=distill, calibrate=calibrate, pricing=pricing)
    if not (isinstance(figsize, (tuple, list)) and len(figsize) == 2):
        raise HarpeLabError(f"`figsize` must be a (width, height) pair in inches, but {figsize!r} was passed.")
    for value in figsize:
        _check_positive("figsize", value)
    if isinstance(cache_size, bool) or not isinstance(cache_size, int) or cache_size < 1:
        raise HarpeLabError(f"`cache_size` must be an int >= 1, but {cache_size!r} was passed.")
    if not isinstance(datasets, bool):
        raise HarpeLabError(f"`datasets` must be True or False, but {datasets!r} was passed.")



class Explorer(_Guarded):
    """Replay a conversation under a strategy and tune it by dragging.

    Controls (public, set ``.value`` to drive them): ``source`` (conversation picker),
    ``strategy`` (a preset of `harpe_lab.presets.PRESETS`), ``knobs`` (one ``IntSlider``
    per knob name in the registry; only the selected preset's knobs are shown), ``values``
    (beside each slider, a text box to type its value in: a value beyond the slider's range
    that the knob accepts widens the range, one it refuses is kept out, and either way
    ``message`` says so), ``auto`` (a checkbox beside each knob whose default is derived
    from the others: checked, the preset derives it), and ``step`` (the request shown).
    ``budget``, ``high_water`` and ``low_water`` are the sliders of those knobs. A knob that
    scales with the conversation runs up to the declared context window when one is known
    (``limit``, else the recording's, `harpe_lab.recorded.Recorded.window`), else a little
    above the full history's largest request (`harpe_lab.presets.Knob.range_for`). A
    preset's window knob (a coding agent's context window) starts at ``limit``'s window, else
    the recording's model's (`harpe_lab.recorded.model_window`), as the CLI and compare set it
    (`Preset.at_window`).

    Views: ``header`` (the counter and prices in use and what the recording says happened:
    `harpe_lab.measure.Measure.lines`), ``plot`` (the token plot as a PNG `Image`, with the
    recording's own compactions marked beside the replayed ones; after an error
    ``plot_error`` shows the error in its place), ``counts`` (Labels ``compactions``,
    ``summaries`` and ``overshoots``; ``compactions`` is also an attribute), ``summary``
    (the stats table, cost with and without prompt caching included), ``message`` (what
    became of a typed value), ``request_view`` (the request at ``step``, escaped HTML,
    its secrets redacted unless ``redact=False``), ``gauge`` and ``gauge_label`` (tokens at ``step`` / the limit), ``errors`` (tracebacks
    of failed callbacks; the exception is also kept in ``last_error``). Every count comes
    from `harpe_lab.replay.totals` of the replay's frame (see ``docs/glossary.md``).
    ``replay`` is the current `Replay` (``None`` after an error); ``widget`` the whole layout.

    ``source`` is a Conversation, a bundled dataset name, a path any importer reads, or a
    list or dict of those; with ``datasets`` (the default) the picker also offers every
    bundled dataset. ``budget`` sets the preset's budget knob (`Preset.budget_knob`); other
    knobs are passed by name (``high_water=1500``). ``distill`` defaults to the preset's
    offline distiller.

    Each conversation is measured as the CLI measures it (`harpe_lab.measure.measure`, once
    per conversation): ``counter`` names the tokenizer (``None``: ``cl100k_base``) or is a
    counter object, fitted to the recording's provider usage when it has some unless
    ``calibrate=False`` (a `harpe_lab.tokens.ScaledCounter` is used as given); ``pricing``
    is ``"auto"`` (each call priced by the model that made it), a model name, a `Pricing`,
    or ``None``. ``measure``, ``counter`` and ``pricing`` are those of the picked
    conversation. ``limit`` (a token count or a model name) is drawn as the model's limit
    and is the gauge's maximum; without it the recording's declared window is.
    """

    def __init__(self, source: Any, *, strategy: str = "summarizing", budget: int | None = None, counter: Any = None,
                 calibrate: bool = True, pricing: Any = "auto", distill: Any = None, limit: int | str | None = None,
                 datasets: bool = True, dpi: float = 80, figsize: tuple[float, float] = (9.0, 3.6),
                 cache_size: int = 256, redact: bool = True, **knobs: Any) -> None:
        import ipywidgets as w

        if not isinstance(redact, bool):
            raise HarpeLabError(f"`redact` must be True or False, but {redact!r} was passed.")
        self.redact = redact
        given = _given_knobs(strategy, budget, knobs)
        _check_options(limit=limit, dpi=dpi, figsize=figsize, cache_size=cache_size, datasets=datasets,
                       distill=distill, calibrate=calibrate, pricing=pricing)  # fmt: skip
        self._loaders = _sources(source, with_datasets=datasets)
        self._conversations: dict[str, Conversation] = {}
        self._measures: dict[str, Any] = {}
        self._peaks: dict[str, int] = {}
        self._counter = counter
        self._calibrate = calibrate
        self._pricing = pricing
        self._distill = distill
        self.limit = limit
        self.dpi = dpi
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self._given = given
        self._fitted: dict[str, str] = {}  # knob name -> the unit its slider was last fitted in
        self.last_error: BaseException | None = None
        self.replay: Any = None
        self.redraws = 0
        self.last_redraw_seconds = 0.0
        self._holding = self._typing = False

        from ..plots import TokenUsePlot
        from ..presets import PRESETS

        wide = {"style": {"description_width": "100px"}, "layout": w.Layout(width="420px")}
        self.source = w.Dropdown(options=list(self._loaders), description="conversation", **wide)
        self.strategy = w.Dropdown(options=list(PRESETS), value=strategy, description="strategy", **wide)
        self._build_knob_rows(w, given)
        self._build_views(w, figsize, wide)
        self._figure = _figure(*figsize, dpi, right=0.78, left=0.11)
        self._ax = self._figure.add_subplot()
        self._plot = TokenUsePlot(self._ax)
        self._redraw = _Redraw(self._figure, self._plot)
        self._lay_out(w)
        self._fit_knobs()
        # every callback guarded, so that a failure lands in ``errors``
        self.source.observe(self._guard(self._on_source), names="value")
        self.strategy.observe(self._guard(self._on_strategy), names="value")
        for control in (*self.knobs.values(), *self.auto.values()):
            control.observe(self._guard(self._on_params), names="value")
        for name, slider in self.knobs.items():
            slider.observe(lambda _, n=name: self._show_value(n), names="value")
        for name, text in self.values.items():
            text.observe(self._guard(lambda change, n=name: self._on_typed(n, change.new)), names="value")
        self.step.observe(self._guard(self._on_step), names="value")
        self.prev_button.on_click(self._guard(lambda _: self._move(-1)))
        self.next_button.on_click(self._guard(lambda _: self._move(+1)))
        self._guard(self.refresh)()
        if self.last_error is not None:
            raise self.last_error


    def _build_knob_rows(self, w: Any, given: Mapping[str, int]) -> None:
        """Per knob of any preset: a slider, a text box, its unit, and ``auto`` if it may be derived."""
        from ..presets import PRESETS

        self.knobs: dict[str, Any] = {}
        self.values: dict[str, Any] = {}
        self.auto: dict[str, Any] = {}
        self.knob_rows: dict[str, Any] = {}
        derived = {k.name for p in PRESETS.values() for k in p.knobs if k.default is None}
        for name, knob in _knob_specs().items():
            css = name.replace("_", "-")
            # the number is typed in the box beside it: a slider's own readout clamps a typed
            # value to its range without a word
            slider = w.IntSlider(description=name.replace("_", " "), min=0, max=1, value=0, continuous_update=False,
                                 readout=False, tooltip=knob.help, style={"description_width": "112px"},
                                 layout=w.Layout(width="320px"))  # fmt: skip
            slider.add_class("harpe-" + css)
            slider.add_class("harpe-knob")
            text = w.Text(value="", continuous_update=False, tooltip=f"type a value in {knob.unit} and press Enter",
                          layout=w.Layout(width="80px"))  # fmt: skip
            text.add_class("harpe-value-" + css)
            text.add_class("harpe-knob-value")
            self.knobs[name] = slider
            self.values[name] = text
            row = [slider, text, w.Label(knob.unit)]
            if name in derived:
                box = w.Checkbox(value=name not in given, description="auto", indent=False,
                                 layout=w.Layout(width="52px"))  # fmt: skip
                box.add_class("harpe-auto-" + css)
                self.auto[name] = box
                row.append(box)
            self.knob_rows[name] = w.HBox(row, layout=w.Layout(align_items="center"))
            self.knob_rows[name].add_class("harpe-knob-row")
        self.budget = self.knobs.get("budget")
        self.high_water = self.knobs.get("high_water")
        self.low_water = self.knobs.get("low_water")

    def _build_views(self, w: Any, figsize: tuple[float, float], wide: dict[str, Any]) -> None:
        """The stepper, plot, request, gauge, counts and text areas, with the CSS classes tests find."""
        self.step = w.IntSlider(description="request", min=0, max=0, value=0, continuous_update=False, **wide)
        self.prev_button = w.Button(description="◀", layout=w.Layout(width="40px"), tooltip="previous request")
        self.next_button = w.Button(description="▶", layout=w.Layout(width="40px"), tooltip="next request")
        # no margin: at 100% of a narrow area a widget's usual margin would overflow it
        self.plot = w.Image(format="png", layout=w.Layout(width="100%", max_width=f"{int(figsize[0] * 100)}px",
                                                          margin="0"))  # fmt: skip
        self.plot_error = w.HTML(layout=w.Layout(display="none", width="100%", max_width=f"{int(figsize[0] * 100)}px",
                                                 margin="0"))  # fmt: skip
        self.request_view = w.HTML()
        self.gauge = w.FloatProgress(min=0, max=1, value=0, description="limit used",
                                     style={"description_width": "100px"}, layout=w.Layout(width="360px"))  # fmt: skip
        self.gauge_label = w.Label()
        self.header = w.HTML()
        self.message = w.HTML()
        self.counts = {name: w.Label(value="0") for name in _COUNTS}
        self.compactions = self.counts["compactions"]
        self.summary = w.HTML()
        self.errors = w.Output()
        for widget, cls in ((self.plot, "harpe-plot"), (self.plot_error, "harpe-plot-error"),
                            (self.request_view, "harpe-request-view"), (self.step, "harpe-step"),
                            (self.errors, "harpe-errors"), (self.summary, "harpe-stats"),
                            (self.header, "harpe-header"), (self.message, "harpe-message-area"),
                            (self.gauge, "harpe-gauge")):  # fmt: skip
            widget.add_class(cls)
        for name, label in self.counts.items():
            label.add_class("harpe-" + name)

    def _lay_out(self, w: Any) -> None:
        """Two columns that wrap into one when the notebook is narrow (a file browser open)."""
        from ..report import GLOSSARY

        glossary = dict(GLOSSARY)
        tips = {"compactions": glossary["compacted"], "summaries": glossary["summarized"],
                "overshoots": glossary["overshoot_tokens"]}  # fmt: skip
        self._controls = controls = w.VBox([self.source, self.strategy, *self.knob_rows.values(), self.message],
                                           layout=w.Layout(margin="0 12px 0 0"))  # fmt: skip
        header = w.HBox([w.HBox([w.Label(f"{name}:", tooltip=tips[name]), label], layout=w.Layout(margin="0 12px 0 0"))
                         for name, label in self.counts.items()], layout=w.Layout(flex_flow="row wrap"))  # fmt: skip
        header.add_class("harpe-counts")
        stats = w.VBox([header, self.summary], layout=w.Layout(max_width="290px"))
        top = w.HBox([controls, stats], layout=w.Layout(flex_flow="row wrap", width="100%"))
        stepper = w.HBox([self.step, self.prev_button, self.next_button])
        gauge = w.HBox([self.gauge, self.gauge_label], layout=w.Layout(flex_flow="row wrap"))
        self.widget = w.VBox([self.header, top, self.plot, self.plot_error, stepper, gauge, self.request_view,
                              self.errors], layout=w.Layout(max_width="100%"))  # fmt: skip
        self.widget.add_class("harpe-explorer")

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
    def measure(self) -> Any:
        """The `harpe_lab.measure.Measure` of the picked conversation (computed once for each)."""
        label = self.source.value
        m = self._measures.get(label)
        if m is None:
            m = self._measures[label] = _measure(self._conversation(), self._counter, self._calibrate, self._pricing)
        return m

    @property
    def counter(self) -> Any:
        """The counter the picked conversation is replayed with (``measure.counter``)."""
        return self.measure.counter

    @property
    def pricing(self) -> Any:
        """The prices of the picked conversation's replays (``measure.pricing``; None: unpriced)."""
        return self.measure.pricing

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

    def window(self) -> int | None:
        """The context window the sliders and the gauge run to: ``limit``'s when given,
        else the one the recording declares (None when neither is known)."""
        if self.limit is not None:
            return _limit_tokens(self.limit)
        recorded = self.measure.recorded
        return None if recorded is None else recorded.window

    def parameters(self) -> dict[str, Any]:
        """The knob values the picked preset is built with (``None``: derived, "auto")."""
        out: dict[str, Any] = {}
        for k in self.preset.knobs:
            box = self.auto.get(k.name)
            out[k.name] = None if box is not None and box.value else self.knobs[k.name].value
        return out

    def shown_knobs(self) -> list[str]:
        """The knob names whose sliders are on screen (the picked preset's), top to bottom."""
        shown = {name for name, row in self.knob_rows.items() if row.layout.display != "none"}
        rows = {id(row): name for name, row in self.knob_rows.items()}
        return [rows[id(c)] for c in self._controls.children if id(c) in rows and rows[id(c)] in shown]

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
        when it was computed before: counted with ``counter``, priced with ``pricing``."""
        from ..replay import replay

        params = self.parameters() if parameters is None else dict(parameters)
        key = self._key(params)
        hit = self._cache.get(key)
        if hit is not None:
            self._cache.move_to_end(key)
            return hit
        result = replay(self._conversation(), self.factory(params), counter=self.counter, pricing=self.pricing,
                        name=self.strategy.value)  # fmt: skip
        self._store(key, result)
        return result

    def _store(self, key: tuple, value: Any) -> None:
        self._cache[key] = value
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    def _fit_knobs(self) -> None:
        """Show the picked preset's knobs, hide the others, and fit each shown slider's
        range to the conversation (`_knob_range`: up to the declared window when known); a
        value given to the constructor or set before is kept, else the default (or half the
        range when the default lies beyond it)."""
        preset = self.preset
        mine = {k.name: k for k in preset.knobs}
        peak = self.peak()
        window = self.window()
        with self._hold():
            for name, row in self.knob_rows.items():
                row.layout.display = None if name in mine else "none"
            # the preset's knobs in its own order, the others (hidden) after them
            rows = [self.knob_rows[n] for n in mine] + [r for n, r in self.knob_rows.items() if n not in mine]
            self._controls.children = (self.source, self.strategy, *rows, self.message)
            for name, knob in mine.items():
                slider = self.knobs[name]
                lo, hi = _knob_range(knob, peak, window)
                given = self._given.pop(name, None)  # a value given to the constructor applies once
                if given is not None:
                    value = given
                elif self._fitted.get(name) == knob.unit and lo <= slider.value <= hi:
                    value = slider.value  # the same quantity (hybrid's "window" counts rounds, not tokens)
                elif knob is preset.window_knob and (model := _knob_window(self.limit, self._conversation())):
                    value = model
                elif knob.default is not None and knob.default <= hi:
                    value = knob.default
                else:
                    value = max(lo, hi // 2)
                self._set_range(knob, lo, max(hi, value), value)
                self._fitted[name] = knob.unit
                self._show_auto(name)

    def _set_range(self, knob: Any, lo: int, top: int, value: int) -> None:
        """Set ``knob``'s slider range and value in an order the slider accepts (it clamps a
        value outside its range); its step follows the span for a knob that scales."""
        slider = self.knobs[knob.name]
        slider.max = max(slider.max, top)
        slider.min = min(lo, value)
        slider.value = value
        slider.max = top
        slider.step = _nice_step(top - lo) if knob.scales else 1
        self._show_value(knob.name)

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
        if self.source.value not in self._measures:
            self.header.value = ""  # the conversation could not be measured: no lines of another one
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

    def _say(self, text: str) -> None:
        """Show ``text`` under the knobs (nothing when empty)."""
        self.message.value = _message_html(text)

    def _on_source(self, change: Any) -> None:
        self._say("")
        self._fit_knobs()
        self.refresh()

    def _on_strategy(self, change: Any) -> None:
        self._say("")
        self._fit_knobs()
        self.refresh()

    def _on_params(self, change: Any) -> None:
        if self._holding:
            return
        if not self._typing:
            self._say("")
        for name in self.auto:
            self._show_auto(name)
        self.refresh()

    def _show_auto(self, name: str) -> None:
        """A knob left to the preset ("auto") takes no typed number: its value is derived."""
        box = self.auto.get(name)
        auto = box is not None and box.value
        self.knobs[name].disabled = auto
        self.values[name].disabled = auto
        self._show_value(name)

    def _show_value(self, name: str) -> None:
        """The text box beside a slider shows its value, or "auto" while the preset derives it."""
        box = self.auto.get(name)
        shown = "auto" if box is not None and box.value else f"{self.knobs[name].value:,}"
        if self.values[name].value != shown:
            typing, self._typing = self._typing, True
            try:
                self.values[name].value = shown
            finally:
                self._typing = typing

    def _on_typed(self, name: str, text: str) -> None:
        """A value typed beside a slider: applied when the knob accepts it — the slider's
        range widened to hold it if need be — else left out; ``message`` says which."""
        if self._typing:
            return  # the box being set to the slider's value, not a person typing
        slider = self.knobs[name]
        preset = self.preset
        knob = preset.knob(name) if name in {k.name for k in preset.knobs} else _knob_specs()[name]
        reach = _reach(knob, slider.max, self.window(), self.peak())
        value, said = _typed_value(name.replace("_", " "), text, knob, slider.min, slider.max, slider.value, reach,
                                   f"the {preset.name!r} strategy")  # fmt: skip
        if value is None:
            self._show_value(name)
            self._say(said)
            return
        typing, self._typing = self._typing, True
        try:
            with self._hold():
                box = self.auto.get(name)
                if box is not None:
                    box.value = False  # a typed number is a chosen value, not the derived one
                self._set_range(knob, min(slider.min, value), max(slider.max, value), value)
                self._show_auto(name)
            self._say(said)
            self.refresh()
        finally:
            self._typing = typing

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

        self.header.value = _measure_html(_measure_lines(self.measure))
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
        self._show_derived(result)
        self._ok()

    def _show_derived(self, result: Any) -> None:
        """A budget knob left to the preset sits at the limit the preset derived, so
        unchecking "auto" starts from the real threshold (e.g. Claude Code's 167,000)."""
        knob = self.preset.budget_knob
        box = None if knob is None else self.auto.get(knob.name)
        if box is None or not box.value or result.limit is None:
            return
        slider = self.knobs[knob.name]
        derived = int(result.limit.tokens)
        if slider.value != derived:
            with self._hold():
                self._set_range(knob, min(slider.min, derived), max(slider.max, derived), derived)

    def _cap(self, result: Any) -> tuple[int, str]:
        """The gauge's maximum: the model limit, else the strategy's limit, else the
        recording's context window, else the full history's peak."""
        if self.limit is not None:
            return _limit_tokens(self.limit), "model limit"
        if result.limit is not None:
            return result.limit.tokens, result.limit.kind.replace("_", " ")
        window = self.window()
        if window:
            return window, "context window"
        return max(1, self.peak()), "full history's peak"

    def _draw(self, result: Any) -> None:
        started = time.perf_counter()
        i = self.step.value
        params = self.parameters()
        low = params.get("low_water")
        limit, limit_label = self.limit, None
        if limit is None and self.window():
            limit, limit_label = self.window(), "context window"
        self._plot.update(result, low_water=low, limit=limit, limit_label=limit_label, cursor=i,
                          recorded=self.measure.recorded)  # fmt: skip
        self.plot.value = self._redraw.png()
        if len(result):
            used = int(result.requests["input_tokens"].iat[i])
            cap, what = self._cap(result)
            with self.gauge.hold_sync():  # one message to the front end, not three
                self.gauge.max = max(cap, used, 1)
                self.gauge.value = used
                self.gauge.bar_style = "danger" if used > cap else ("warning" if used > 0.9 * cap else "success")
            self.gauge_label.value = f"{used:,} / {cap:,} tokens ({what}) at request {i}"
            self.request_view.value = render_request_html(result, i, redact=self.redact)
        self.redraws += 1
        self.last_redraw_seconds = time.perf_counter() - started

    def __repr__(self) -> str:
        return f"Explorer({self.source.value!r}, {self.strategy.value!r}, {self._safe_parameters()})"
