"""Everything the replay engine (and the live loop) may ask of a context strategy.

A strategy implements the lifecycle, `Context`. That is all a user's own strategy needs to
replay: the engine drives it, prices what it sends and fills the frame. A strategy may
also declare small optional capabilities, which the engine checks with ``isinstance`` and
never guesses at with ``getattr``:

=====================  ================================================================
`DeclaresLimit`        ``limit``: a `Limit` (tokens, and whether it is a hard budget the
                       engine enforces, a reactive high-water mark, or a target the
                       strategy aims at by an estimate). Overshoot is measured against it.
`HoldsSummary`         ``base_system`` and ``summary``: the system prompt without the
                       summary, and the running summary, so the frame can split them.
`ReportsEvents`        ``subscribe(sink)``: the strategy passes each event it reports
                       (`ContextCompacted`, `DistillCall`, orion's ``ContextBudget``, a
                       distiller's fallback, ...) to ``sink`` as well as to its own handler.
                       Build a fresh strategy (and distiller) per replay: a sink stays
                       subscribed for the object's life.
=====================  ================================================================

The engine never assigns attributes on a strategy object. Distill calls are counted from
the `DistillCall` events a strategy reports (`MeteredDistill` does that for it).

Distillers (``Rendered -> str | None``) may declare `ReportsUsage` (``last_usage`` after a
call) and, when they hold state across calls, `Renewable` (``fresh()``: an unused copy), so
every replay can start from a new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Protocol, runtime_checkable

from .errors import StrategyError
from .messages import Message, Rendered, Usage, UserInput

__all__ = [
    "Context",
    "Compaction",
    "ContextCompacted",
    "DistillCall",
    "DistillFallback",
    "DistillFallbackWarning",
    "Limit",
    "LimitKind",
    "DeclaresLimit",
    "HoldsSummary",
    "ReportsEvents",
    "ReportsUsage",
    "Renewable",
    "Distill",
    "MeteredDistill",
    "EventHub",
    "fresh_distiller",
    "DISTILL_SYSTEM",
]

Distill = Callable[[Rendered], "str | None"]
LimitKind = Literal["budget", "high_water", "target"]
_KINDS = ("budget", "high_water", "target")

DISTILL_SYSTEM = (
    "You maintain a running summary of a conversation between a user and an agent. Reply with "
    "ONLY the updated summary text — no preamble, no headings. Preserve: the user's goals and "
    "constraints, decisions made, facts discovered, tool actions taken and their outcomes, and "
    "unresolved questions. Be concise; drop pleasantries and dead ends."
)
"""Harpe's distill system prompt (spec §4.7): what every `Distill` receives as the system of
the request a strategy hands it, unless the strategy has its own."""


@dataclass(frozen=True)
class Compaction:
    """What `Context.compact` returns: the request to send, and whether history was cut
    (so the engine must restart the provider session from ``rendered``)."""

    rendered: Rendered
    compacted: bool
    edits: tuple[int, ...] | None = field(default=None, compare=False)
    """What the strategy knows of how the request relates to the previous one: a tuple says
    it is the previous request followed by the messages appended since (the new user input
    at a turn start), except at these positions, where a stand-in replaced what was there
    (``()``: nothing replaced). ``None`` (the default): not known, so the engine compares
    the request with the previous one itself, which costs O(request). A tuple is a promise
    the engine checks only at its ends: a strategy that cannot keep it exactly passes ``None``.
    Not compared: two compactions are equal when they send the same request the same way."""


@dataclass(frozen=True)
class ContextCompacted:
    """Event: a compaction folded ``dropped_messages`` messages into a summary."""

    dropped_messages: int


@dataclass(frozen=True)
class DistillCall:
    """Event: the strategy called its distiller with ``request`` and got ``reply`` (``None``:
    "not this time"). ``usage`` is what the distiller reported, else ``None`` (the engine
    then prices request and reply with its own counter)."""

    request: Rendered
    reply: str | None
    usage: Usage | None = None


@dataclass(frozen=True)
class DistillFallback:
    """Event: a distiller returned ``None`` instead of a summary. ``reason`` is ``"error"``
    (the model call failed and ``on_error="skip"``) or ``"exhausted"`` (a
    `RecordedDistiller` has no recorded summary left); ``detail`` says what happened."""

    reason: str
    detail: str
    distiller: str = ""


class DistillFallbackWarning(UserWarning):
    """Warned whenever a distiller falls back to ``None``, so it is never silent."""


@dataclass(frozen=True, kw_only=True)
class Limit:
    """A strategy's declared limit on request size, in tokens.

    ``kind``:

    * ``"budget"`` — a promise: no request exceeds ``tokens`` as ``counter`` prices it (with
      the ``tools`` schemas). The engine checks it after every compact and raises when broken.
    * ``"high_water"`` — a reactive mark: the strategy compacts after the provider reports
      more input tokens than ``tokens``, so one request can go over.
    * ``"target"`` — what the strategy aims at through an estimate (characters, message
      text); requests may land above it.

    For every kind the frame's ``overshoot_tokens`` is the replayed request's input tokens
    above ``tokens``.
    """

    tokens: int
    kind: LimitKind
    counter: Any = None
    """For ``"budget"``: the counter the promise is measured with (``None``: the replay's)."""
    tools: tuple = ()
    """For ``"budget"``: the tool schemas the strategy counts in every request."""

    def __post_init__(self) -> None:
        if not isinstance(self.tokens, int) or isinstance(self.tokens, bool) or self.tokens < 0:
            raise StrategyError(f"Limit.tokens must be an int >= 0, got {self.tokens!r}")
        if self.kind not in _KINDS:
            raise StrategyError(f"Limit.kind must be one of {list(_KINDS)}, but {self.kind!r} was passed")
        object.__setattr__(self, "tools", tuple(self.tools))


@runtime_checkable
class Context(Protocol):
    """The lifecycle every context strategy implements (Harpe ≥ 0.8)::

        begin_turn(input) → compact() → [observe(usage) → append(reply)
            → append(tool results) → compact()]* → commit_turn() | abort_turn()
    """

    def begin_turn(self, input: UserInput) -> None: ...

    def append(self, message: Message) -> None: ...

    def compact(self) -> Compaction: ...

    def observe(self, usage: Usage) -> None: ...

    def commit_turn(self) -> None: ...

    def abort_turn(self) -> None: ...


@runtime_checkable
class DeclaresLimit(Protocol):
    """A strategy with a declared request-size limit."""

    @property
    def limit(self) -> Limit | None: ...


@runtime_checkable
class HoldsSummary(Protocol):
    """A strategy that carries a running summary alongside its base system prompt."""

    @property
    def base_system(self) -> str: ...

    @property
    def summary(self) -> str: ...


@runtime_checkable
class ReportsEvents(Protocol):
    """A strategy (or distiller) that reports events; ``subscribe`` adds a listener."""

    def subscribe(self, sink: Callable[[object], None]) -> None: ...


@runtime_checkable
class ReportsUsage(Protocol):
    """A distiller that records the provider's usage of its last call (``None``: unknown)."""

    last_usage: Usage | None


@runtime_checkable
class Renewable(Protocol):
    """A distiller with state across calls; ``fresh()`` returns an unused one like it."""

    def fresh(self) -> Any: ...


def fresh_distiller(distill: Distill) -> Distill:
    """``distill.fresh()`` for a stateful distiller, else ``distill`` itself (a stateless
    one can be shared)."""
    return distill.fresh() if isinstance(distill, Renewable) else distill


class EventHub:
    """Where one strategy reports: its own ``on_event`` handler (the strategy's events, as
    its source defines them) and every subscribed sink (those plus the engine's metering,
    `DistillCall`). Strategies hold one and call `emit`."""

    __slots__ = ("_handler", "_sinks")

    def __init__(self, on_event: Callable[[object], None] | None = None) -> None:
        if on_event is not None and not callable(on_event):
            raise StrategyError(f"on_event must be callable or None, got {on_event!r}")
        self._handler = on_event
        self._sinks: tuple[Callable[[object], None], ...] = ()

    def subscribe(self, sink: Callable[[object], None]) -> None:
        if not callable(sink):
            raise StrategyError(f"an event sink must be callable, got {sink!r}")
        self._sinks = (*self._sinks, sink)

    def emit(self, event: object) -> None:
        if self._handler is not None:
            self._handler(event)
        self.meter(event)

    def meter(self, event: object) -> None:
        """Report ``event`` to the subscribed sinks only."""
        for sink in self._sinks:
            sink(event)

    @property
    def metered(self) -> bool:
        return bool(self._sinks)


class MeteredDistill:
    """Call ``distill`` and report each call as a `DistillCall` to ``hub``; a distiller
    that reports events (a fallback, say) reports them to the same hub."""

    __slots__ = ("distill", "hub", "_reports_usage")

    def __init__(self, distill: Distill, hub: EventHub) -> None:
        if distill is None or not callable(distill):
            raise StrategyError(
                f"distill must be a callable Rendered -> str | None, got {distill!r}; "
                "use harpe_lab.summarize.ExtractiveDistiller for an offline one"
            )
        self.distill = distill
        self.hub = hub
        self._reports_usage = isinstance(distill, ReportsUsage)
        if isinstance(distill, ReportsEvents):
            distill.subscribe(hub.emit)

    def __call__(self, request: Rendered) -> str | None:
        reply = self.distill(request)
        if self.hub.metered:
            usage = self.distill.last_usage if self._reports_usage else None  # type: ignore[attr-defined]
            self.hub.meter(DistillCall(request, reply, usage if isinstance(usage, Usage) else None))
        return reply
