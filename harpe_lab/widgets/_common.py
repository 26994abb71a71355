"""What the Explorer and Compare share: sources, callback plumbing, figures, the measure,
knob ranges and checks (the knobs and options a view is given)."""

from __future__ import annotations

import io
import traceback
from collections import OrderedDict
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..conversation import Conversation
from ..errors import HarpeLabError

__all__: list[str] = []


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
        from .. import datasets

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
        from .. import datasets

        names = datasets.list_datasets()
        if text not in names:
            raise HarpeLabError(f"`source` must be one of the bundled datasets {names} or an existing path, "
                                f"but {text!r} was passed.")  # fmt: skip
        return lambda: _first_conversation(datasets.load(text), text)

    def load() -> Conversation:
        from ..importers import load_any

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
    fig.canvas.draw()
    return _encode(fig)


def _encode(fig: Any) -> bytes:
    """The pixels of ``fig``'s Agg canvas, as drawn last, as PNG."""
    from PIL import Image

    buf = io.BytesIO()
    image = Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    if fig.patch.get_visible() and fig.patch.get_facecolor()[3] == 1:
        # drawn over an opaque background every pixel is opaque: the alpha channel says
        # nothing, and without it a quarter fewer bytes are filtered and compressed
        image = image.convert("RGB")
    image.save(buf, format="png", compress_level=1)
    return buf.getvalue()


class _Redraw:
    """PNGs of a figure holding one `harpe_lab.plots.TokenUsePlot`, redrawn after each
    `TokenUsePlot.update`.

    Most of the picture (title, x axis, legend: all text, the slow part of an Agg draw)
    changes only with the conversation, the strategy or the legend's entries. It is drawn
    once, without the plot's changing artists, and its pixels kept; a redraw puts them
    back and draws the changing artists over them in the order a full draw would, so the
    picture is the full draw's, pixel for pixel (a test compares them). The pixels drawn
    before the request cursor are kept too, so stepping through requests draws only the
    cursor and what lies over it (spines, markers, the off-scale note).
    """

    def __init__(self, fig: Any, plot: Any) -> None:
        self.figure = fig
        self.plot = plot
        self._still: tuple[Any, Any] | None = None  # (what the kept pixels show, the pixels)
        self._under: tuple[Any, Any] | None = None  # likewise, with what is drawn before the cursor

    def png(self) -> bytes:
        fig, canvas = self.figure, self.figure.canvas
        under, over = self.plot._changing()
        still = (self.plot._still(), canvas.get_width_height(), fig.dpi)
        key = (still, self.plot._version)
        renderer = canvas.get_renderer()
        if self._under is not None and self._under[0] == key:
            canvas.restore_region(self._under[1])
        else:
            if self._still is not None and self._still[0] == still:
                canvas.restore_region(self._still[1])
            else:
                self._draw_still(under + over)
                self._still = (still, canvas.copy_from_bbox(fig.bbox))
            for artist in under:
                artist.draw(renderer)
            self._under = (key, canvas.copy_from_bbox(fig.bbox))
        for artist in over:
            artist.draw(renderer)
        return _encode(fig)

    def _draw_still(self, changing: list[Any]) -> None:
        for artist in changing:
            artist.set_animated(True)  # a draw leaves animated artists out
        try:
            self.figure.canvas.draw()
        finally:
            for artist in changing:
                artist.set_animated(False)


def _figure(width: float, height: float, dpi: float, right: float = 0.98, left: float = 0.09) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    # A bare Figure is never registered with pyplot: no double display, no leak in Gcf.
    # Fixed margins rather than a layout engine: one draw per frame instead of two.
    fig = Figure(figsize=(width, height), dpi=dpi)
    fig.subplots_adjust(left=left, right=right, bottom=0.16, top=0.9)
    FigureCanvasAgg(fig)
    return fig


_PRICING_KINDS = "'auto', a model name, a harpe_lab.models.Pricing or CallPricing, or None"


def _check_measure_options(calibrate: Any, pricing: Any) -> None:
    from ..models import CallPricing, Pricing

    if not isinstance(calibrate, bool):
        raise HarpeLabError(f"`calibrate` must be True or False, but {calibrate!r} was passed.")
    if pricing is not None and not isinstance(pricing, (str, Pricing, CallPricing)):
        raise HarpeLabError(f"`pricing` must be {_PRICING_KINDS}, but {pricing!r} was passed.")


def _measure(conversation: Conversation, counter: Any, calibrate: bool, pricing: Any) -> Any:
    """How a widget measures ``conversation``: `harpe_lab.measure.measure` with the widget's
    options, ``counter=None`` meaning the default tokenizer (calibrated when the recording
    has provider usage) — the CLI's numbers for the same recording."""
    from ..measure import DEFAULT_COUNTER, measure

    return measure(conversation, counter=DEFAULT_COUNTER if counter is None else counter, calibrate=calibrate,
                   pricing=pricing)  # fmt: skip


def _measure_lines(m: Any) -> list[str]:
    """The measure's header lines, as a widget shows them: its advice names the widget's
    keyword, not the CLI's option."""
    return [line.replace("pass --pricing MODEL", 'pass pricing="MODEL" to the widget') for line in m.lines()]


def _knob_range(knob: Any, peak: int, window: int | None) -> tuple[int, int]:
    """A slider's range for ``knob``: a knob that scales with the conversation runs up to the
    declared context ``window`` when it is known (so a strategy's real threshold, e.g. Claude
    Code's 167,000 in a 200,000 window, is on the slider), else `Knob.range_for` of the
    full history's ``peak``; other knobs keep `Knob.range_for`'s declared range."""
    lo, hi = knob.range_for(peak)
    if knob.scales and window:
        hi = max(knob.minimum + 1, window)
        if knob.maximum is not None:
            hi = min(hi, knob.maximum)
    return lo, hi


def _whole_text(text: str) -> int:
    """A typed number: ``12000``, ``12,000``, ``12_000``, ``12 000``, ``12k``, ``1.5k``;
    ValueError for anything else, or a fraction."""
    t = "".join(str(text).split()).replace(",", "").replace("_", "").lower()
    scale = 1000 if t.endswith("k") else 1
    t = t.removesuffix("k")
    if not t or not t.replace(".", "", 1).lstrip("-").isdigit():
        raise ValueError(text)
    value = float(t) * scale
    if value != int(value):
        raise ValueError(text)
    return int(value)


def _nice_step(span: float) -> int:
    raw = max(1.0, span / 200)
    mag = 10 ** int(len(str(int(raw))) - 1)
    return int(max(1, round(raw / mag) * mag))


def _knob_specs() -> "OrderedDict[str, Any]":
    """Every knob name in the registry, in registry order, with its first `Knob`."""
    from ..presets import PRESETS

    out: OrderedDict[str, Any] = OrderedDict()
    for preset in PRESETS.values():
        for k in preset.knobs:
            out.setdefault(k.name, k)
    return out


def _check_knob(knob: Any, value: Any, param: str | None = None) -> int:
    """``value`` checked by ``knob`` (integral floats accepted), as a seaborn-style error."""
    from ..errors import StrategyError

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
    from ..presets import PRESETS

    if not isinstance(name, str) or name not in PRESETS:
        raise HarpeLabError(f"`{param}` must be one of {list(PRESETS)}, but {name!r} was passed.")
    return PRESETS[name]


def _full_history_peak(conversation: Conversation, counter: Any) -> int:
    """The largest request the full history makes: what `Knob.range_for` scales by."""
    from ..presets import get_preset
    from ..replay import replay

    full = replay(conversation, get_preset("full").build(system=conversation.system, counter=counter),
                  counter=counter, name="full")  # fmt: skip
    return int(full.requests["input_tokens"].max()) if len(full) else 1000


def _given_knobs(strategy: str, budget: int | None, knobs: dict[str, Any]) -> dict[str, int]:
    """The knobs passed by name and ``budget`` (set on the preset's budget knob), each checked."""
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
    return given


def _check_view_options(*, limit: Any, dpi: float, distill: Any, calibrate: Any, pricing: Any) -> None:
    """The options both views take, checked before any widget exists: a bad one fails at once,
    not at the first redraw."""
    if limit is not None:
        _limit_tokens(limit)  # a bad count or an unknown model
    _check_positive("dpi", dpi)
    if distill is not None and not callable(distill):
        raise HarpeLabError(f"`distill` must be a callable Rendered -> str | None, but {distill!r} was passed.")
    _check_measure_options(calibrate, pricing)


def _knob_window(limit: int | str | None, conversation: Conversation) -> int | None:
    """The window a preset's window knob takes in a view: ``limit``'s when given, else the
    recording's model's (`harpe_lab.recorded.model_window`), as the CLI and compare set it."""
    if limit is not None:
        return _limit_tokens(limit)
    from ..recorded import model_window

    return model_window(conversation)


def _limit_tokens(limit: int | str) -> int:
    from ..models import model_input_limit

    return model_input_limit(limit)


def _reach(knob: Any, top: int, window: int | None, peak: int) -> str:
    """How far a slider runs, in words, for a message about a value beyond it."""
    if knob.scales and window and top == window:
        return f"it runs up to the context window, {window:,}"
    if knob.scales:
        return f"it runs to a little above the full history's largest request, {peak:,}"
    return "its usual range"


def _typed_value(label: str, text: str, knob: Any, lo: int, hi: int, current: int, reach: str,
                 who: str) -> tuple[int | None, str]:
    """A value typed beside a slider running ``lo``..``hi``: ``(value, message)``, where
    ``value`` is None when ``knob`` refuses it (the slider stays at ``current``) and the
    message says what became of it — empty for a value within the range. A value the knob
    accepts beyond the range is applied: the range is widened, never the value clamped."""
    from ..errors import StrategyError

    try:
        value = _whole_text(text)
    except ValueError:
        return None, f"{label}: {str(text).strip()!r} is not a whole number of {knob.unit}; it stays at {current:,}."
    try:
        knob.check(value)
    except StrategyError:
        upper = "" if knob.maximum is None else f" and at most {knob.maximum:,}"
        return None, (f"{label}: {value:,} is outside what {who} accepts (at least {knob.minimum:,}{upper} "
                      f"{knob.unit}); it stays at {current:,}.")  # fmt: skip
    if lo <= value <= hi:
        return value, ""
    return value, (f"{label}: {value:,} is outside the slider's range {lo:,}–{hi:,} ({reach}); the range now "
                   f"reaches {value:,} and the replay uses it.")  # fmt: skip
