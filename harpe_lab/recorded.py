"""What really happened in a recording: its model calls as the provider reported them, what
they cost, and where the recording's agent compacted.

A replay says what a strategy *would* have sent; `recorded` says what the agent *did* send,
from the usage the provider reported per reply, so every surface can show the two side by
side. Requests are numbered as the replay engine numbers them (one per model call, a
turn's unanswered last tool round included), so ``request`` here and in `Replay.requests`
name the same call.

``Recorded.calls`` columns (one row per request that has recorded usage):

=====================  ==================================================================
request, turn, step    as in the replay's request frame
model                  the model that made the call ("" when the recording names none)
input_tokens           the provider's input tokens, cached parts included
cache_read_tokens      of them, read from the prompt cache
cache_write_tokens     of them, written to the prompt cache
output_tokens          the reply's tokens
cost_usd               priced without prompt caching, by the call's own model
cost_usd_cached        priced as billed: fresh, cache reads and cache writes at their prices
=====================  ==================================================================

``Recorded.misses`` are the calls where the provider's prompt cache fell short with nothing
recorded to explain it (`CacheMiss`): the provider dropped or missed its cache, seconds after
the call before. A replay cannot foresee that and prices such a call as reading what it
shares with the call before; `Recorded.missed` says what they added to the bill, and the
replay's cost is shown beside the bill less them too. On the shared Codex rollouts they are
3–9 calls and 13–24% of the bill; the replay is within 4% of the rest.

A recording that names no priced model (a Cline SDK session, an exported chat) has no cost
unless a stand-in is given (`recorded`'s ``stand_in``, the prices the replay was asked to
use): its calls are then priced as that model, and ``Recorded.stand_in`` says so.

The declared window is the recording's own when it states one
(``metadata["context_window"]``, as Codex rollouts do), Claude Code's 200,000 for a Claude
Code session (the window its auto-compact assumes; litellm's table lists 1,000,000 for
Opus 4.6, the long-context beta), else the main model's input limit in litellm's table.
The model's window (`model_window`), which an agent's window knob takes when a preset is
replayed on the session (`harpe_lab.presets.Preset.at_window`), is the same but where the
recording states an agent's effective window below the model's: a Codex rollout's 258,400 is
95% of gpt-5.x-codex's 272,000 (``metadata["model_window"]``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .conversation import Conversation
from .messages import AssistantMessage
from .models import CallPricing, Pricing

__all__ = ["Recorded", "RecordedPoint", "CacheMiss", "recorded", "CALL_COLUMNS"]

CALL_COLUMNS = ("request", "turn", "step", "model", "input_tokens", "cache_read_tokens", "cache_write_tokens",
                "output_tokens", "cost_usd", "cost_usd_cached")
CLAUDE_CODE_WINDOW = 200_000


@dataclass(frozen=True, kw_only=True)
class RecordedPoint:
    """One compaction the recording's agent made: the first request sent after it, its
    trigger, and the input tokens the provider reported just before and just after."""

    request: int
    turn: int
    trigger: str
    tokens_before: int | None
    """The agent's own figure when it recorded one (Claude Code's ``preTokens``), else the
    last recorded input before the compaction."""
    tokens_after: int | None
    """The first recorded input after it."""
    window: int | None = None

    @property
    def share_of_window(self) -> float:
        """``tokens_before`` as a share of the declared window (NaN when either is unknown)."""
        if not self.tokens_before or not self.window:
            return math.nan
        return self.tokens_before / self.window

    def describe(self) -> str:
        before = f"{self.tokens_before:,}" if self.tokens_before else "?"
        after = f"{self.tokens_after:,}" if self.tokens_after else "?"
        share = "" if math.isnan(self.share_of_window) else f" ({self.share_of_window:.0%} of the window)"
        trigger = f"{self.trigger} " if self.trigger else ""
        return f"{trigger}compaction before request {self.request}: {before} → {after} tokens{share}"


@dataclass(frozen=True, kw_only=True)
class CacheMiss:
    """A recorded call that read less than half of what the call before it sent from the
    prompt cache, with nothing recorded to explain it: no compaction between the two, the
    same model, no reset the recording's agent made (``metadata["cache_resets"]``) and, when
    the times are recorded, no pause past the cache's lifetime. The provider dropped or
    missed its cache; a replay, which cannot foresee that, prices the call as reading all it
    shares with the call before."""

    request: int
    read: int
    """The tokens the provider reported reading from its cache."""
    shared: int
    """The tokens the call before sent, or this call's input if smaller: what a held cache serves."""
    extra_usd: float
    """What the miss added to the call's cost with caching (NaN when the call is not priced)."""


# eq=False: it holds frames, and pandas compares the attrs it is kept in
@dataclass(frozen=True, kw_only=True, eq=False)
class Recorded:
    """What `recorded` found; costs are NaN when no call could be priced."""

    conversation: str
    requests: int
    """Every request the replay engine numbers, recorded usage or not."""
    calls: Any
    """One row per request with recorded usage (`CALL_COLUMNS`)."""
    models: Mapping[str, int] = field(default_factory=dict)
    pricing: CallPricing | None = None
    stand_in: bool = False
    """The recording names no priced model: ``pricing`` is the stand-in it was given."""
    compactions: tuple[RecordedPoint, ...] = ()
    window: int | None = None
    misses: tuple[CacheMiss, ...] = ()
    """The calls where the provider's cache fell short with no recorded reason (`CacheMiss`)."""

    @property
    def cost_usd(self) -> float:
        return float(self.calls["cost_usd"].sum(min_count=1)) if len(self.calls) else math.nan

    @property
    def cost_usd_cached(self) -> float:
        return float(self.calls["cost_usd_cached"].sum(min_count=1)) if len(self.calls) else math.nan

    @property
    def peak_input_tokens(self) -> int:
        return int(self.calls["input_tokens"].max()) if len(self.calls) else 0

    @property
    def cache_read_share(self) -> float:
        """Of all recorded input, the share read from the prompt cache."""
        total = float(self.calls["input_tokens"].sum()) if len(self.calls) else 0.0
        return float(self.calls["cache_read_tokens"].sum()) / total if total else math.nan

    def until(self, request: int) -> Any:
        """The calls before ``request`` (e.g. the first compaction's)."""
        return self.calls[self.calls["request"] < request]

    @property
    def _compared_until(self) -> int:
        """The first recorded compaction's request, where the recorded and replayed histories part."""
        return self.compactions[0].request if self.compactions else self.requests

    def against(self, frame: Any) -> tuple[float, float, int]:
        """``(replayed, recorded, calls)``: a replay's cost with caching (its request frame)
        beside the recorded bill, over the calls the provider recorded before the first
        recorded compaction (the whole session without one), where the two histories part.
        Only recorded calls count: a cut-off last request has no bill to compare."""
        calls = self.until(self._compared_until)
        mine = frame.loc[frame["request"].isin(calls["request"]), "cost_usd_cached"].sum(min_count=1)
        return float(mine), float(calls["cost_usd_cached"].sum(min_count=1)), len(calls)

    def unrecorded(self) -> list[int]:
        """The requests `against` leaves out: sent before the first recorded compaction (in the
        whole session without one) but with no recorded call — a tool round whose turn ended
        without a reply the recording kept (Claude Code stopped by a hook, a cut-off session)."""
        billed = set(self.calls["request"])
        return [k for k in range(self._compared_until) if k not in billed]

    def compared(self) -> str:
        """What `against` compares, as every surface states it: "61 recorded calls; request 18
        left out: no recorded call"."""
        calls, gaps = len(self.until(self._compared_until)), self.unrecorded()
        text = f"{calls:,} recorded call{'s' * (calls != 1)}"
        if gaps:  # they are in a replay's table: without this, summing its rows would not give the figure
            text += f"; request{'s' * (len(gaps) > 1)} {listed(gaps)} left out: no recorded call"
        return text

    def missed(self) -> tuple[int, float]:
        """``(calls, USD)``: the cache misses (`misses`) among the calls `against` compares,
        and what they added to the recorded cost with caching."""
        within = [m for m in self.misses if m.request < self._compared_until]
        return len(within), float(sum(m.extra_usd for m in within))

    def as_dict(self) -> dict[str, Any]:
        """The figures every surface shows, JSON-ready."""
        nan = lambda v: None if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
        return {
            "calls": len(self.calls),
            "models": dict(self.models),
            "window": self.window,
            "peak_input_tokens": self.peak_input_tokens,
            "cost_usd": nan(round(self.cost_usd, 6)),
            "cost_usd_cached": nan(round(self.cost_usd_cached, 6)),
            "cache_read_share": nan(self.cache_read_share),
            "priced_as": self.pricing.default.model if self.stand_in and self.pricing is not None else None,
            "cache_misses": [{"request": m.request, "read": m.read, "shared": m.shared, "extra_usd": nan(m.extra_usd)}
                             for m in self.misses],
            "compactions": [
                {"request": c.request, "turn": c.turn, "trigger": c.trigger, "tokens_before": c.tokens_before,
                 "tokens_after": c.tokens_after, "share_of_window": nan(c.share_of_window)}
                for c in self.compactions
            ],
        }


def _requests(conversation: Conversation) -> list[tuple[int, int, Any, int]]:
    """``(turn, step, recorded usage or None, messages held when sent)`` per request, in the
    replay engine's order."""
    from .replay._recording import rounds as _rounds

    out = []
    for t, turn in enumerate(conversation.turns):
        rounds = _rounds(turn.messages) or [(None, [])]
        replies = [k for k, m in enumerate(turn.messages) if isinstance(m, AssistantMessage)]
        for step, (reply, after) in enumerate(rounds):
            usage = turn.usage[step] if reply is not None and step < len(turn.usage) else None
            held = 1 + (replies[step] if step < len(replies) else len(turn.messages))
            out.append((t, step, usage, held))
            if reply is None and not after:
                break
    return out


def declared_window(conversation: Conversation) -> int | None:
    """The context window the recording's agent worked with (see the module doc)."""
    meta = conversation.metadata
    stated = meta.get("context_window")
    if isinstance(stated, int) and stated > 0:
        return stated
    if meta.get("format") == "claude_code":
        return CLAUDE_CODE_WINDOW
    models = conversation.models()
    if not models:
        return None
    from .errors import HarpeLabError
    from .models import model_input_limit

    try:
        return model_input_limit(next(iter(models)))
    except HarpeLabError:
        return None


def listed(requests: Sequence[int], most: int = 12) -> str:
    """Request numbers as the headers list them: the first ``most``, then how many more."""
    more = f", … ({len(requests) - most} more)" if len(requests) > most else ""
    return ", ".join(str(k) for k in requests[:most]) + more


def model_window(conversation: Conversation) -> int | None:
    """The context window of the recording's model (see the module doc): what a preset's
    window knob is set to on this session."""
    stated = conversation.metadata.get("model_window")
    if isinstance(stated, int) and stated > 0:
        return stated
    return declared_window(conversation)


def recorded(conversation: Conversation, *, stand_in: Pricing | CallPricing | None = None) -> Recorded:
    """The recording's own calls, costs and compactions (see the module doc); ``stand_in``
    prices the calls of a recording that names no priced model."""
    import pandas as pd

    models = conversation.models()
    pricing = CallPricing.for_models(models, cache_ttl=conversation.metadata.get("cache_ttl")) if models else None
    standing_in = pricing is None and stand_in is not None
    if standing_in:
        pricing = stand_in if isinstance(stand_in, CallPricing) else CallPricing(stand_in, {}, {})
    main = next(iter(models), "")
    rows = []
    requests = _requests(conversation)
    for i, (t, step, u, _) in enumerate(requests):
        if u is None or u.input_tokens <= 0:
            continue
        model = u.model if u.model and u.model != "<synthetic>" else main
        cost = cost_cached = math.nan
        if pricing is not None:
            cost, cost_cached = pricing.for_call(model).billed(u.input_tokens, u.cache_read_tokens,
                                                               u.cache_write_tokens, u.output_tokens)
        rows.append((i, t, step, model, u.input_tokens, u.cache_read_tokens, u.cache_write_tokens, u.output_tokens,
                     cost, cost_cached))
    calls = pd.DataFrame(rows, columns=list(CALL_COLUMNS))
    window = declared_window(conversation)
    points = _points(conversation, requests, window)
    return Recorded(conversation=conversation.id, requests=len(requests), calls=calls, models=models,
                    pricing=pricing, stand_in=standing_in, compactions=points, window=window,
                    misses=_misses(conversation, requests, rows, pricing, points))


_MISSED = 0.5  # a call that read less than this share of what the call before sent missed the cache


def _misses(conversation: Conversation, requests: list[tuple[int, int, Any, int]], rows: list[tuple],
            pricing: CallPricing | None, points: tuple[RecordedPoint, ...]) -> tuple[CacheMiss, ...]:
    """The recorded calls whose cache read fell with nothing recorded to explain it (`CacheMiss`)."""
    starts = {p.request for p in points}
    out = []
    for (before, t0, step0, model0, sent, *_), (i, t, step, model, tokens, read, write, output, _, billed) in zip(
            rows, rows[1:]):
        shared = min(sent, tokens)
        if read >= _MISSED * shared or model != model0 or any(before < s <= i for s in starts):
            continue
        meta = conversation.turns[t].metadata
        if step in (meta.get("cache_resets") or ()):
            continue  # the agent invalidated its cache, and the replay prices that too
        price = pricing.for_call(model) if pricing is not None else None
        cache = price.cache if price is not None else None
        if cache is not None and shared < cache.min_tokens:
            continue
        times = (conversation.turns[t0].metadata.get("request_times") or (), meta.get("request_times") or ())
        at = [ts[s] if s < len(ts) else None for ts, s in zip(times, (step0, step))]
        if cache is not None and cache.ttl and None not in at and at[1] - at[0] > cache.ttl:
            continue  # a pause past the cache's lifetime: the replay prices it as a miss too
        extra = math.nan
        if price is not None:
            lost = shared - read
            held = price.billed(tokens, read + lost, max(0, write - lost), output)[1]
            extra = billed - held
        out.append(CacheMiss(request=i, read=read, shared=shared, extra_usd=extra))
    return tuple(out)


def _points(conversation: Conversation, requests: list[tuple[int, int, Any, int]],
            window: int | None) -> tuple[RecordedPoint, ...]:
    points = []
    for c in sorted(conversation.compactions, key=lambda c: (c.turn, c.message or 0)):
        first = next((i for i, (t, _, _, held) in enumerate(requests)
                      if t > c.turn or (t == c.turn and (c.message is None or held >= c.message))), None)
        if first is None:
            continue  # compacted after the last request: nothing was sent after it
        before = c.pre_tokens or next((u.input_tokens for _, _, u, _ in reversed(requests[:first])
                                       if u is not None and u.input_tokens > 0), None)
        after = next((u.input_tokens for _, _, u, _ in requests[first:] if u is not None and u.input_tokens > 0),
                     None)
        points.append(RecordedPoint(request=first, turn=c.turn, trigger=c.trigger, tokens_before=before,
                                    tokens_after=after, window=window))
    return tuple(points)
