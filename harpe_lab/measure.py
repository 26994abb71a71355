"""How every surface measures a recording by default: a counter calibrated on the provider's
own usage, each call priced by the model that made it, and what really happened beside it.

The CLI, the Explorer, Compare, the report and the notebooks all call `measure` so one
recording gives the same numbers everywhere:

* **Counter.** ``counter`` names the tokenizer (``cl100k_base`` by default, or a counter
  object); when the recording holds provider usage and ``calibrate`` is true, the counter is
  fitted to it (`harpe_lab.calibrate`), which adds what the file lacks — the agent's system
  prompt and tool schemas (Claude Code's are not in its transcripts: ~24–29k tokens per
  request) — and corrects the tokenizer's scale (cl100k counts Claude's tokens ~25% short).
  A counter that is already calibrated (a `ScaledCounter`) is used as it is. Without usage,
  the named counter is used and the numbers are said to be uncalibrated.
* **Prices.** ``pricing="auto"`` prices each call by its recorded model (`CallPricing`);
  ``AutoPricing(model)`` too, and a recording that names no model the price table knows
  as that stand-in, recorded calls included; a model name prices every call as that model;
  ``None`` prices nothing.
* **What happened.** `Measure.recorded` is `harpe_lab.recorded.recorded`: the recorded
  calls, their cost with and without caching, and the recorded compactions.
* **Notes.** What the numbers rest on that a reader should know: a calibration's caveats,
  models priced as another, a recording that wrote cache entries of both lifetimes (priced
  with one), and a sanitized recording (its texts replaced by redaction markers, each
  weighed as the text it replaced; `harpe_lab._text.hidden_chars`).

`Measure.lines` is the header every surface prints, one fact per line.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

from ._text import REDACTED, message_parts
from .conversation import Conversation
from .errors import HarpeLabError
from .models import AutoPricing, CallPricing, Pricing, resolve_pricing
from .recorded import Recorded, recorded
from .tokens import ScaledCounter

__all__ = ["Measure", "measure", "DEFAULT_COUNTER"]

DEFAULT_COUNTER = "cl100k_base"


def counter_named(name: str) -> Any:
    """A counter by the name the CLI takes: an encoding, ``approx`` or ``bytes``."""
    from .tokens import ApproxCounter, BytesCounter, TiktokenCounter

    if name == "bytes":
        return BytesCounter()
    if name == "approx":
        return ApproxCounter()
    return TiktokenCounter(name)


def _name(counter: Any) -> str:
    if isinstance(counter, ScaledCounter):
        return f"calibrated {_name(counter.base)}"
    return str(getattr(counter, "name", type(counter).__name__))


# eq=False: it holds frames, and pandas compares the attrs it is kept in
@dataclass(frozen=True, kw_only=True, eq=False)
class Measure:
    """The counter and prices a recording is measured with, and why (see the module doc)."""

    counter: Any
    counter_name: str
    calibration: Any = None
    """The `harpe_lab.calibrate.Calibration`, when the counter was fitted here."""
    pricing: Pricing | CallPricing | None = None
    recorded: Recorded | None = None
    notes: tuple[str, ...] = field(default=())
    uncalibrated_why: str = ""

    @property
    def calibrated(self) -> bool:
        return isinstance(self.counter, ScaledCounter)

    @property
    def fixed_tokens(self) -> float:
        """Tokens per request the file lacks, by the fit (0 when uncalibrated)."""
        return float(self.counter.offset) if self.calibrated else 0.0

    def counter_line(self) -> str:
        cal = self.calibration
        if cal is not None:
            missing = f"≈ {cal.offset / 1000:,.1f}k tokens per request not in the file, " if cal.offset >= 50 else ""
            error = (f"median error {cal.error_after:.1%}" if cal.requests > 1
                     else "one request: no error to measure")
            plural = "" if cal.requests == 1 else "s"
            return (f"counter: {self.counter_name} fitted to {cal.requests:,} recorded request{plural} "
                    f"(×{cal.factor:.3f} + {cal.offset:,.0f}; {missing}{error})")
        if self.calibrated:
            return f"counter: {self.counter_name} (×{self.counter.factor:.3f} + {self.counter.offset:,.0f}, given)"
        why = f": {self.uncalibrated_why}" if self.uncalibrated_why else ""
        return f"counter: {self.counter_name}, uncalibrated{why}"

    def pricing_line(self) -> str:
        p = self.pricing
        if p is None:
            named = sorted(self.recorded.models) if self.recorded is not None else []
            if named:
                return (f"prices: none (the price table knows no model the recording names: {', '.join(named)}; "
                        f"pass --pricing MODEL)")
            return "prices: none (the recording names no model; pass --pricing MODEL)"
        books = p.models.values() if isinstance(p, CallPricing) else [p]
        parts = [_price_text(b) for b in books]
        per_call = "per call, " if isinstance(p, CallPricing) else ""
        line = f"prices ({per_call}USD per million tokens): " + "; ".join(parts)
        if self.recorded is not None and self.recorded.stand_in:
            line += " — a stand-in for every call: the recording names no model the price table knows"
        return line

    def recorded_lines(self) -> list[str]:
        r = self.recorded
        if r is None or not len(r.calls):
            return ["recorded: no provider usage in the file"]
        cost = ""
        if not math.isnan(r.cost_usd_cached):
            cost = f", cost ${r.cost_usd_cached:,.2f} with caching (${r.cost_usd:,.2f} without)"
            if r.stand_in:
                cost += " at the stand-in's prices"
        window = f", window {r.window:,}" if r.window else ""
        calls = f"{len(r.calls):,} call{'' if len(r.calls) == 1 else 's'}"
        lines = [f"recorded: {calls}, peak input {r.peak_input_tokens:,} tokens{window}{cost}"]
        lines += [f"recorded {c.describe()}" for c in r.compactions]
        if r.misses:
            n = len(r.misses)
            at = ", ".join(str(m.request) for m in r.misses[:8]) + (", …" if n > 8 else "")
            extra = sum(m.extra_usd for m in r.misses)
            cost = "" if math.isnan(extra) else f": ${extra:,.2f} of the cost with caching"
            lines.append(f"recorded cache misses: {n:,} call{'s' * (n > 1)} (request{'s' * (n > 1)} {at}) read "
                         f"under half of what the call before sent from the cache, with no compaction or pause to "
                         f"explain it{cost}; a replay assumes the cache held")
        return lines

    def lines(self) -> list[str]:
        """The header: counter, prices, what the recording says happened, then notes."""
        return [self.counter_line(), self.pricing_line(), *self.recorded_lines(), *self.notes]

    def as_dict(self) -> dict[str, Any]:
        cal = self.calibration
        p = self.pricing
        books = (p.models if isinstance(p, CallPricing) else {p.model: p}) if p is not None else {}
        return {
            "counter": self.counter_name,
            "calibrated": self.calibrated,
            "calibration": None if cal is None else {
                "factor": cal.factor, "offset": cal.offset, "requests": cal.requests, "method": cal.method,
                "error_before": _num(cal.error_before), "error_after": _num(cal.error_after),
                "error_holdout": _num(cal.error_holdout),
            },
            "pricing": {name: _price_dict(b) for name, b in books.items()},
            "unpriced_models": list(p.unpriced) if isinstance(p, CallPricing) else [],
            "recorded": None if self.recorded is None else self.recorded.as_dict(),
            "notes": list(self.notes),
        }


def _num(v: float) -> float | None:
    return None if isinstance(v, float) and math.isnan(v) else v


def _price_text(p: Pricing) -> str:
    m = 1e6
    text = f"{p.model} input {p.input * m:g}, output {p.output * m:g}"
    if p.cache is None:
        return text + ", no prompt cache"
    text += f", cache read {p.cache_read * m:g}"
    if p.cache.kind == "breakpoints":
        text += f", cache write {p.cache_write * m:g} (×{p.cache_write / p.input:.3g})"
    ttl = "never expires" if math.isinf(p.cache.ttl) else f"TTL {p.cache.ttl / 60:g} min"
    return f"{text}, {ttl}"


def _price_dict(p: Pricing) -> dict[str, Any]:
    cache = p.cache
    return {
        "input_per_token": p.input, "output_per_token": p.output, "cache_read_per_token": p.cache_read,
        "cache_write_per_token": p.cache_write, "cache_write_multiplier": p.cache_write / p.input if p.input else None,
        "cache_kind": None if cache is None else cache.kind,
        "cache_ttl_seconds": None if cache is None or math.isinf(cache.ttl) else cache.ttl,
    }


def _markers(conversation: Conversation) -> int:
    """How many redaction markers a sanitized recording holds where its texts were."""
    texts = [conversation.system, *(text for m in conversation.messages() for _, text in message_parts(m))]
    return sum(len(REDACTED.findall(text)) for text in texts if "[REDACTED_" in text)


def measure(conversation: Conversation, *, counter: Any = DEFAULT_COUNTER, calibrate: bool = True,
            pricing: str | Pricing | CallPricing | AutoPricing | None = "auto") -> Measure:
    """The counter and prices to measure ``conversation`` with, and what it recorded (see
    the module doc). ``counter``: a name (``cl100k_base``, ``o200k_base``, ``approx``,
    ``bytes``) or a counter object."""
    from .calibrate import CalibrationWarning
    from .calibrate import calibrate as fit

    if not isinstance(conversation, Conversation):
        raise TypeError(f"measure takes a Conversation, got {type(conversation).__name__}")
    base = counter_named(counter) if isinstance(counter, str) else counter
    notes: list[str] = []
    price = resolve_pricing(pricing, conversation.models(), cache_ttl=conversation.metadata.get("cache_ttl"))
    rec = recorded(conversation, stand_in=price)
    calibration = None
    used = base
    why = ""
    if not calibrate:
        why = "calibration turned off"
    elif isinstance(base, ScaledCounter):
        pass  # calibrated already
    elif not len(rec.calls):
        why = "the recording has no provider usage to fit it to, so counts are the tokenizer's estimate"
    else:
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", CalibrationWarning)
                calibration = fit(conversation, base)
            used = calibration.counter
            notes += [str(w.message) for w in caught if issubclass(w.category, CalibrationWarning)]
        except HarpeLabError as err:
            why = str(err)
    markers = _markers(conversation)
    if markers:
        notes.append(f"sanitized: {markers:,} redaction marker{'s' * (markers != 1)} ([REDACTED_… len=N …]) where "
                     "texts were; each weighs the N characters it replaced, in the counts and in every strategy's own "
                     "measure of text")
    mixed = conversation.metadata.get("cache_ttl_replies")
    if mixed:
        ttl = "1-hour" if conversation.metadata.get("cache_ttl") == 3600 else "5-minute"
        five, hour = mixed.get("300", 0), mixed.get("3600", 0)
        notes.append(f"cache TTL: the recording wrote 5-minute cache entries at {five:,} repl{'y' if five == 1 else 'ies'} "
                     f"and 1-hour ones at {hour:,}; every call, replayed and recorded, is priced with the "
                     f"{ttl} one, so a call after a pause of 5 to 60 minutes may be priced as the other kind of entry")
    if isinstance(price, CallPricing) and price.unpriced:
        notes.append(f"warning: not in the price table, priced as {price.default.model}: {', '.join(price.unpriced)}")
    name = _name(used) if calibration is None else _name(base)
    return Measure(counter=used, counter_name=name, calibration=calibration, pricing=price, recorded=rec,
                   notes=tuple(notes), uncalibrated_why=why)
