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

Every piece of transcript text shown as HTML goes through `html.escape`. A callback that
fails writes its traceback to the ``errors`` Output widget and keeps it in ``last_error``.
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

_CHARS_PER_TOKEN = 4  # presets convert Harpe's character budgets at this rate
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


def _default_distill(distill: Any) -> Any:
    if distill is not None:
        return distill
    from .summarize import ExtractiveDistiller

    return ExtractiveDistiller()


def _nice_step(span: float) -> int:
    raw = max(1.0, span / 200)
    mag = 10 ** int(len(str(int(raw))) - 1)
    return int(max(1, round(raw / mag) * mag))


def _summary_html(totals: Mapping[str, Any], extra: Mapping[str, Any] = ()) -> str:
    keys = [("requests", "requests"), ("input_tokens_sum", "tokens sent"), ("input_tokens_max", "largest request"),
            ("compactions", "compactions"), ("overshoots", "overshoots"), ("overshoot_tokens_max", "worst overshoot"),
            ("distill_calls", "distill calls")]  # fmt: skip
    rows = [(label, totals.get(k, 0)) for k, label in keys] + list(dict(extra).items())
    cells = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(f'{v:,}' if isinstance(v, int) else str(v))}</td></tr>"
                    for k, v in rows)  # fmt: skip
    return f'{_CSS}<table class="harpe-summary">{cells}</table>'


# --- Explorer -------------------------------------------------------------------------------


class Explorer(_Guarded):
    """Replay a conversation under a strategy and tune it by dragging.

    Controls (public, set ``.value`` to drive them): ``source`` (conversation picker),
    ``strategy`` (a preset of `harpe_lab.presets.STRATEGIES`), ``budget``, ``high_water``
    and ``low_water`` sliders (tokens; the water marks drive ``summarizing``, the budget
    the windowing presets and the gauge), and ``step`` (the request shown).

    Views: ``plot`` (the token plot as a PNG `Image`), ``request_view`` (the request at
    ``step``, escaped HTML), ``gauge`` and ``gauge_label`` (tokens used at ``step`` / the
    budget), ``compactions`` (a Label holding the number of compactions), ``summary``
    (totals), ``errors`` (tracebacks of failed callbacks; the exception is also kept in
    ``last_error``). ``replay`` is the current `Replay`; ``widget`` the whole layout;
    ``redraws`` and ``last_redraw_seconds`` count and time the redraws.

    ``source`` is a Conversation, a bundled dataset name, a path any importer reads, or a
    list or dict of those; with ``datasets`` (the default) the picker also offers every
    bundled dataset. ``counter`` defaults to `harpe_lab.tokens.ApproxCounter` and
    ``distill`` to `harpe_lab.summarize.ExtractiveDistiller`. ``limit`` (a token count or
    a model name) replaces the budget as the plot's limit line and the gauge's maximum.
    """

    def __init__(self, source: Any, *, strategy: str = "summarizing", budget: int | None = None,
                 high_water: int | None = None, low_water: int | None = None, counter: Any = None,
                 distill: Any = None, limit: int | str | None = None, datasets: bool = True, dpi: float = 80,
                 figsize: tuple[float, float] = (9.0, 3.6), cache_size: int = 256) -> None:
        import ipywidgets as w

        from .plots import TokenUsePlot
        from .presets import STRATEGIES

        if strategy not in STRATEGIES:
            raise HarpeLabError(f"`strategy` must be one of {list(STRATEGIES)}, but {strategy!r} was passed.")
        self._loaders = _sources(source, with_datasets=datasets)
        self._conversations: dict[str, Conversation] = {}
        self.counter = _default_counter(counter)
        self._distill = distill
        self.limit = limit
        self.dpi = dpi
        self.cache_size = cache_size
        self._cache: OrderedDict[tuple, Any] = OrderedDict()
        self.last_error: BaseException | None = None
        self.replay: Any = None
        self.redraws = 0
        self.last_redraw_seconds = 0.0
        self._holding = False

        slider = dict(continuous_update=False, style={"description_width": "90px"}, layout=w.Layout(width="420px"))
        self.source = w.Dropdown(options=list(self._loaders), description="conversation",
                                 style={"description_width": "90px"}, layout=w.Layout(width="420px"))  # fmt: skip
        self.strategy = w.Dropdown(options=list(STRATEGIES), value=strategy, description="strategy",
                                   style={"description_width": "90px"}, layout=w.Layout(width="420px"))  # fmt: skip
        self.budget = w.IntSlider(description="budget", min=100, max=1000, value=500, **slider)
        self.high_water = w.IntSlider(description="high water", min=100, max=1000, value=400, **slider)
        self.low_water = w.IntSlider(description="low water", min=0, max=1000, value=200, **slider)
        self.step = w.IntSlider(description="request", min=0, max=0, value=0, **slider)
        self.prev_button = w.Button(description="◀", layout=w.Layout(width="40px"), tooltip="previous request")
        self.next_button = w.Button(description="▶", layout=w.Layout(width="40px"), tooltip="next request")
        self.plot = w.Image(format="png", layout=w.Layout(width="100%", max_width=f"{int(figsize[0] * 100)}px"))
        self.request_view = w.HTML()
        self.gauge = w.FloatProgress(min=0, max=1, value=0, description="budget used",
                                     style={"description_width": "90px"}, layout=w.Layout(width="420px"))  # fmt: skip
        self.gauge_label = w.Label()
        self.compactions = w.Label(value="0")
        self.summary = w.HTML()
        self.errors = w.Output()
        for widget, cls in ((self.plot, "harpe-plot"), (self.high_water, "harpe-high-water"),
                            (self.low_water, "harpe-low-water"), (self.budget, "harpe-budget"),
                            (self.compactions, "harpe-compactions"), (self.request_view, "harpe-request-view"),
                            (self.step, "harpe-step"), (self.errors, "harpe-errors")):  # fmt: skip
            widget.add_class(cls)

        self._figure = _figure(*figsize, dpi, right=0.8)
        self._ax = self._figure.add_subplot()
        self._plot = TokenUsePlot(self._ax)

        controls = w.VBox([self.source, self.strategy, self.budget, self.high_water, self.low_water])
        stats = w.VBox([w.HBox([w.Label("compactions:"), self.compactions]), self.summary,
                        w.HBox([self.gauge, self.gauge_label])])  # fmt: skip
        stepper = w.HBox([self.step, self.prev_button, self.next_button])
        self.widget = w.VBox([w.HBox([controls, stats]), self.plot, stepper, self.request_view, self.errors])
        self.widget.add_class("harpe-explorer")

        self._set_ranges(self._conversation(), budget, high_water, low_water)
        self.source.observe(self._guard(self._on_source), names="value")
        for control in (self.strategy, self.budget, self.high_water, self.low_water):
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

    def parameters(self) -> dict[str, Any]:
        """The parameters the current strategy uses (others do not change its replay)."""
        name = self.strategy.value
        if name == "summarizing":
            return {"high_water": self.high_water.value, "low_water": self.low_water.value}
        if name in ("full", "turn"):
            return {}
        return {"budget": self.budget.value}

    def factory(self, parameters: Mapping[str, Any] | None = None) -> Callable[[], Any]:
        """A zero-argument context factory for the current controls (or for the strategy
        picked with other ``parameters``)."""
        from .presets import make_strategy

        conversation = self._conversation()
        params = self.parameters() if parameters is None else parameters
        if self.strategy.value == "summarizing":
            from .context import SummarizingContext

            high, low = params["high_water"], params["low_water"]
            distill = _default_distill(self._distill)
            system = conversation.system
            return lambda: SummarizingContext(system, high_water_tokens=high, low_water_chars=_CHARS_PER_TOKEN * low,
                                              distill=distill)  # fmt: skip
        return make_strategy(self.strategy.value, budget=params.get("budget"), counter=self.counter,
                             system=conversation.system, distill=self._distill)  # fmt: skip

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

    def _set_ranges(self, conversation: Conversation, budget: int | None = None, high: int | None = None,
                    low: int | None = None) -> None:
        """Fit the sliders to the conversation: the budget runs up to a bit above the
        largest request the full history would make."""
        from .presets import make_strategy
        from .replay import replay

        full = replay(conversation, make_strategy("full", system=conversation.system), counter=self.counter, name="full")
        peak = int(full.requests["input_tokens"].max()) if len(full) else 1000
        top = max(200, int(peak * 1.1))
        step = _nice_step(top)
        if budget is None:
            # with a given high-water mark, a budget twice as large keeps both in view
            budget = min(top, 2 * high) if high is not None else max(100, top // 2)
        high = high if high is not None else max(100, int(budget * 0.75))
        low = low if low is not None else high // 3
        with self._hold():
            for s, value in ((self.budget, budget), (self.high_water, high), (self.low_water, low)):
                s.step = step
                s.max = max(top, value)
                s.value = value
            self.budget.min = self.high_water.min = max(1, step)
            self.low_water.max = max(self.low_water.min, self.high_water.value)
        self._enable()

    @contextmanager
    def _hold(self) -> Iterator[None]:
        """Batch several control changes into one redraw (made by the caller)."""
        held, self._holding = self._holding, True
        try:
            yield
        finally:
            self._holding = held

    def _enable(self) -> None:
        name = self.strategy.value
        self.high_water.disabled = self.low_water.disabled = name != "summarizing"

    # -- callbacks ------------------------------------------------------------------------------

    def _on_source(self, change: Any) -> None:
        self._set_ranges(self._conversation())
        self.refresh()

    def _on_params(self, change: Any) -> None:
        if self._holding:
            return
        if change.owner is self.high_water:
            # low water above high water would compact at every request: keep it below
            with self._hold():
                self.low_water.max = max(self.low_water.min, self.high_water.value)
        self._enable()
        self.refresh()

    def _on_step(self, change: Any) -> None:
        if self._holding:
            return
        self._draw(self.replay)

    def _move(self, delta: int) -> None:
        self.step.value = min(self.step.max, max(self.step.min, self.step.value + delta))

    def refresh(self) -> None:
        """Replay (or take from the cache) and redraw everything."""
        result = self.replay_for()
        self.replay = result
        n = len(result)
        with self._hold():
            self.step.max = max(0, n - 1)
            if self.step.value > self.step.max:
                self.step.value = self.step.max
        totals = result.totals()
        from .plots import compaction_requests

        self.compactions.value = str(len(compaction_requests(result)))
        self.summary.value = _summary_html(totals)
        self._draw(result)

    def _draw(self, result: Any) -> None:
        started = time.perf_counter()
        i = self.step.value
        high = self.high_water.value if self.strategy.value == "summarizing" else None
        low = self.low_water.value if self.strategy.value == "summarizing" else None
        limit = self.limit if self.limit is not None else self.budget.value
        self._plot.update(result, high_water=high, low_water=low, limit=limit, cursor=i,
                          limit_label="budget" if self.limit is None else None)  # fmt: skip
        self.plot.value = _png(self._figure)
        if len(result):
            used = int(result.requests["input_tokens"].iat[i])
            cap = self.budget.value if self.limit is None else _limit_tokens(self.limit)
            self.gauge.max = max(cap, used, 1)
            self.gauge.value = used
            self.gauge.bar_style = "danger" if used > cap else ("warning" if used > 0.9 * cap else "success")
            self.gauge_label.value = f"{used:,} / {cap:,} tokens at request {i}"
            self.request_view.value = render_request_html(result, i)
        self.redraws += 1
        self.last_redraw_seconds = time.perf_counter() - started
        self._ok()

    def __repr__(self) -> str:
        return f"Explorer({self.source.value!r}, {self.strategy.value!r}, {self.parameters()})"


def _limit_tokens(limit: int | str) -> int:
    from .plots import model_input_limit

    return model_input_limit(limit)


# --- Compare --------------------------------------------------------------------------------


class Compare(_Guarded):
    """Several strategies on one conversation, side by side, with their comparison table.

    ``strategies`` are preset names (`harpe_lab.presets.STRATEGIES`) or a mapping of label →
    zero-argument context factory. The ``budget`` slider re-runs the presets at a new
    budget (factories given directly do not depend on it). Views: ``plot`` (all token
    curves overlaid), ``panels`` (one token plot per strategy), ``table`` (the
    `harpe_lab.evaluate.compare` table, escaped HTML), ``errors``; ``replays`` maps label →
    `Replay`; ``frame`` is the table as a DataFrame. A conversation whose probes are asked
    after its last turn is replayed with one empty turn added there
    (`harpe_lab.evaluate.with_probe_turn`), so the table can judge them.
    """

    def __init__(self, conversation: Conversation, strategies: Sequence[str] | Mapping[str, Callable[[], Any]], *,
                 budget: int | None = None, counter: Any = None, distill: Any = None, probes: Any = None,
                 dpi: float = 72) -> None:
        import ipywidgets as w

        from .plots import TokenUsePlot
        from .presets import DEFAULT_BUDGET, STRATEGIES

        if not isinstance(conversation, Conversation):
            raise HarpeLabError(f"`conversation` must be a Conversation, but {type(conversation).__name__} was passed.")
        from .evaluate import with_probe_turn

        # probes asked after the last turn are judged at an extra, empty turn
        conversation = with_probe_turn(conversation)
        if isinstance(strategies, Mapping):
            self._factories = dict(strategies)
        else:
            self._factories = {}
            for name in strategies:
                if name not in STRATEGIES:
                    raise HarpeLabError(f"`strategies` must be among {list(STRATEGIES)}, but {name!r} was passed.")
                self._factories[name] = None
        if not self._factories:
            raise HarpeLabError("`strategies` must name at least one strategy, but none was passed.")
        self.conversation = conversation
        self.counter = _default_counter(counter)
        self._distill = distill
        self.probes = probes
        self.dpi = dpi
        self.last_error: BaseException | None = None
        self.replays: dict[str, Any] = {}
        self.frame: Any = None
        self._cache: dict[tuple, Any] = {}

        self.budget = w.IntSlider(description="budget", min=100, max=max(200, DEFAULT_BUDGET * 4),
                                  value=budget or DEFAULT_BUDGET, step=100, continuous_update=False,
                                  layout=w.Layout(width="420px"))  # fmt: skip
        self.plot = w.Image(format="png", layout=w.Layout(width="100%", max_width="900px"))
        self.plot.add_class("harpe-compare-plot")
        self._panel_images = {name: w.Image(format="png", layout=w.Layout(width="100%")) for name in self._factories}
        self.panels = w.GridBox(list(self._panel_images.values()),
                                layout=w.Layout(grid_template_columns=f"repeat({min(3, len(self._factories))}, 1fr)"))  # fmt: skip
        self.table = w.HTML()
        self.errors = w.Output()
        self.widget = w.VBox([self.budget, self.plot, self.panels, self.table, self.errors])
        self.widget.add_class("harpe-compare")

        self._figure = _figure(9, 3.6, dpi)
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
        from .presets import make_strategy

        given = self._factories[name]
        if given is not None:
            return given
        return make_strategy(name, budget=self.budget.value, counter=self.counter, system=self.conversation.system,
                             distill=_default_distill(self._distill) if name in ("summarizing", "summarize-window") else None)  # fmt: skip

    def refresh(self) -> None:
        """Replay every strategy at the current budget (cached) and redraw."""
        from .plots import plot_strategies
        from .replay import replay

        replays = {}
        for name, given in self._factories.items():
            key = (name, None if given is not None or name in ("full", "turn") else self.budget.value)
            if key not in self._cache:
                self._cache[key] = replay(self.conversation, self._factory(name), counter=self.counter, name=name)
            replays[name] = self._cache[key]
        self.replays = replays
        self._overlay_ax.clear()
        plot_strategies(replays, ax=self._overlay_ax)
        self._overlay_ax.axhline(self.budget.value, color="black", lw=1, ls="--", gid="budget", label="budget")
        self._overlay_ax.legend(fontsize=8, loc="upper left")
        self.plot.value = _png(self._figure)
        for name, (fig, view) in self._panel_figs.items():
            view.update(replays[name])
            self._panel_images[name].value = _png(fig)
        self.frame = self._table(replays)
        self.table.value = _CSS + self.frame.to_html(escape=True, float_format=lambda v: f"{v:,.3g}",
                                                     classes="harpe-summary")  # fmt: skip
        self._ok()

    def _table(self, replays: Mapping[str, Any]) -> Any:
        from .evaluate import compare

        return compare(list(replays.values()), probes=self.probes)

    def __repr__(self) -> str:
        return f"Compare({self.conversation.id!r}, {list(self._factories)})"
