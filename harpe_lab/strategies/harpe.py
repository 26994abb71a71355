"""Harpe's own four context strategies, reproduced exactly (the lifecycle is `harpe_lab.protocol`).

A *context* decides what goes into each model request. The engine drives it through a turn::

    begin_turn(input) → compact() → [observe(usage) → append(reply)
        → append(tool results) → compact()]* → commit_turn() | abort_turn()

`FullContext` sends everything, `WindowedContext` the newest whole turns that fit a
character budget, `TurnContext` only the current turn, and `SummarizingContext` folds the
oldest turns into a summary in the system prompt once the provider reports more input
tokens than its high-water mark. See ``docs/concepts.md`` and the Harpe specification §4.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Sequence

from .._text import CHARS_PER_TOKEN, message_chars, truncate, turn_groups
from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, Usage, UserInput
from ..protocol import DISTILL_SYSTEM, Compaction, Context, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from ._lifecycle import Summarizes, TurnLifecycle
from ._preset import DEFAULT_BUDGET, Factory, Knob, Preset, budget_knob, make_distiller

__all__ = [
    "Context",
    "Compaction",
    "ContextCompacted",
    "FullContext",
    "WindowedContext",
    "TurnContext",
    "SummarizingContext",
    "truncate",
    "message_chars",
    "turn_groups",
    "SUMMARY_HEADER",
    "CHARS_PER_TOKEN",
    "DISTILL_SYSTEM",
    "distill_request",
    "PRESETS",
]

SUMMARY_HEADER = (
    "# Conversation summary\n\n(Older turns, distilled; the messages below are the most recent turns.)\n\n"
)


# --- strategies -------------------------------------------------------------------------


class FullContext(TurnLifecycle):
    """Send the whole transcript every time. Never compacts."""

    def compact(self) -> Compaction:
        return self._whole(False, self._base_system)


class WindowedContext(TurnLifecycle):
    """Send the newest whole turns that fit ``max_chars`` (Harpe fixes 24,000 ≈ 6k tokens).

    Only the rendered view is cut; the stored transcript is never shortened, and
    ``compacted`` is always false (mid-turn, the provider session keeps its growing tail).
    """

    def __init__(self, base_system: str, initial: Iterable[Message] = (), max_chars: int = 24_000) -> None:
        if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 0:
            raise StrategyError(f"max_chars must be an int >= 0, got {max_chars!r}")
        super().__init__(base_system, initial)
        self._max_chars = max_chars
        self._window: _Window | None = None

    @property
    def max_chars(self) -> int:
        """The character budget of the newest whole turns sent."""
        return self._max_chars

    @property
    def limit(self) -> Limit:
        """A target of ``max_chars / 4`` tokens: Harpe's 4 characters a token, an estimate."""
        return Limit(tokens=self._max_chars // CHARS_PER_TOKEN, kind="target")

    def compact(self) -> Compaction:
        t = self._transcript
        window = self._window
        if window is None or window.source is not t or len(t) < window.seen:  # first, or after an abort
            window = self._window = _Window(t, self._max_chars)
        return self._send(Rendered(self._base_system, tuple(t[window.start():])), False)


class _Window:
    """Where `truncate` would cut ``source``, a transcript list that only grows, kept up to
    date as it grows: the cut only moves forward, so a request costs the messages added
    and the turns dropped, not a walk over the window."""

    __slots__ = ("source", "seen", "max_chars", "starts", "sizes", "total")

    def __init__(self, source: list[Message], max_chars: int) -> None:
        self.source = source
        self.max_chars = max_chars
        self.seen = len(source) - len(truncate(source, max_chars))  # the window so far, added below
        self.starts: deque[int] = deque()  # the window's turns: where each starts, its characters
        self.sizes: deque[int] = deque()
        self.total = 0

    def start(self) -> int:
        t, starts, sizes = self.source, self.starts, self.sizes
        for k in range(self.seen, len(t)):
            m = t[k]
            chars = message_chars(m)
            if not starts or isinstance(m, UserInput):
                starts.append(k)
                sizes.append(0)
            sizes[-1] += chars
            self.total += chars
        self.seen = len(t)
        while len(sizes) > 1 and self.total > self.max_chars:  # the longest suffix of whole turns that fits
            self.total -= sizes.popleft()
            starts.popleft()
        return starts[0] if starts else len(t)


class TurnContext(TurnLifecycle):
    """Send only the current turn: no history across turns (the past lives in the log)."""

    def __init__(self, base_system: str) -> None:
        super().__init__(base_system)  # no initial history: Harpe's TurnContext takes none (§4.6)

    def _mark_turn(self) -> None:
        self._transcript = []  # a turn starts from nothing, even after a turn never closed

    def commit_turn(self) -> None:
        super().commit_turn()
        self._transcript = []

    def _restored(self) -> None:
        self._transcript = []  # an aborted turn keeps nothing, not even its input (§4.6)

    def compact(self) -> Compaction:
        return self._send(Rendered(self._base_system, tuple(self._transcript)), False)


def _lead(summary: str) -> str:
    """What `distill_request` writes before the excerpt (a request whose excerpt is written
    once for several summaries is this plus the rest of one of them)."""
    if summary:
        return "Current summary:\n\n" + summary + "\n\nNew conversation excerpt to fold into it:\n\n"
    return "Conversation excerpt to summarize:\n\n"


def distill_request(dropped: Sequence[Message], summary: str) -> str:
    """Harpe's distill request text for folding ``dropped`` into ``summary``."""
    parts = [_lead(summary)]
    # each text once, in the one join (not copied into a line first: a fold may write the
    # whole history, megabytes, Gemini's twice)
    for m in dropped:
        if isinstance(m, UserInput):
            parts += ("User: ", m.text, "\n")
        elif isinstance(m, AssistantMessage):
            if m.text:
                parts += ("Agent: ", m.text, "\n")
            for c in m.calls:
                parts += ("Agent: [called tool ", c.name, "]\n")
        else:
            for r in m.results:
                parts += ("[tool result] ", r.content, "\n")
    parts.append("\nReply with the updated summary.")
    return "".join(parts)


class SummarizingContext(TurnLifecycle, Summarizes):
    """Fold the oldest turns into a running summary once the provider reports more than
    ``high_water_tokens`` input tokens; keep the newest turns that fit ``low_water_chars``.

    Reactive, as in Harpe: the count compared is the previous reply's, so one oversized
    request can go out before compaction. ``distill(Rendered) -> str | None`` receives
    Harpe's distill system prompt and request text; ``None`` means "not this time" and
    leaves everything as it was. Each distill call is reported as a `DistillCall` and each
    compaction as `ContextCompacted`, to ``on_event`` and to every `subscribe` d sink.
    """

    def __init__(
        self,
        base_system: str,
        initial: Iterable[Message] = (),
        *,
        high_water_tokens: int,
        low_water_chars: int,
        distill: Distill,
        on_event: Callable[[object], None] | None = None,
    ) -> None:
        if not isinstance(high_water_tokens, int) or isinstance(high_water_tokens, bool) or high_water_tokens <= 0:
            raise StrategyError(f"high_water_tokens must be an int > 0, got {high_water_tokens!r}")
        if not isinstance(low_water_chars, int) or isinstance(low_water_chars, bool) or low_water_chars < 0:
            raise StrategyError(f"low_water_chars must be an int >= 0, got {low_water_chars!r}")
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        super().__init__(base_system, initial)
        self._high_water_tokens = high_water_tokens
        self._low_water_chars = low_water_chars
        self._summary = ""
        self._marked_summary = ""
        self._last_input_tokens = 0
        self._marked_input_tokens = 0
        # the system prompt with the summary, kept as one string while the summary is the
        # same: the engine hashes and compares it at every request, and a string built again
        # each time would be hashed again, all of it (a long summary: tens of kilobytes)
        self._system = (base_system, "")

    @property
    def high_water_tokens(self) -> int:
        """The provider-reported input tokens above which the next request folds."""
        return self._high_water_tokens

    @property
    def low_water_chars(self) -> int:
        """The character budget of the newest whole turns a fold keeps."""
        return self._low_water_chars

    @property
    def limit(self) -> Limit:
        """The reactive high-water mark."""
        return Limit(tokens=self._high_water_tokens, kind="high_water")

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_summary = self._summary
        self._marked_input_tokens = self._last_input_tokens

    def observe(self, usage: Usage) -> None:
        self._last_input_tokens = usage.input_tokens

    def compact(self) -> Compaction:
        changed = self._last_input_tokens > self._high_water_tokens and self._compact_transcript()
        system, summary = self._system
        if summary is not self._summary:
            summary = self._summary
            system = self._base_system + "\n\n" + SUMMARY_HEADER + summary if summary else self._base_system
            self._system = (system, summary)
        return self._whole(changed, system)

    def _compact_transcript(self) -> bool:
        kept = truncate(self._transcript, self._low_water_chars)
        drop = len(self._transcript) - len(kept)
        if drop == 0:
            return False
        request = distill_request(self._transcript[:drop], self._summary)
        text = self._distill(Rendered(DISTILL_SYSTEM, (UserInput(request),)))
        if text is None:
            return False
        if not isinstance(text, str):
            raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
        self._summary = text
        self._transcript = kept
        self._events.emit(ContextCompacted(drop))
        return True

    def _restored(self) -> None:
        # a fold during the aborted turn is undone with the transcript (§4.7)
        self._summary = self._marked_summary
        self._last_input_tokens = self._marked_input_tokens


# --- presets ------------------------------------------------------------------------------


def _full(*, system: str, **_: Any) -> Factory:
    return lambda: FullContext(system)


def _turn(*, system: str, **_: Any) -> Factory:
    return lambda: TurnContext(system)


def _windowed(*, system: str, budget: int, **_: Any) -> Factory:
    return lambda: WindowedContext(system, max_chars=CHARS_PER_TOKEN * budget)


def _summarizing(*, system: str, distill: Distill | None, high_water: int, low_water: int | None, **_: Any) -> Factory:
    low = high_water // 2 if low_water is None else low_water
    make = make_distiller(distill, high_water)
    return lambda: SummarizingContext(system, high_water_tokens=high_water, low_water_chars=CHARS_PER_TOKEN * low,
                                      distill=make())  # fmt: skip


PRESETS: tuple[Preset, ...] = (
    Preset(name="full", family="harpe",
           source='Harpe spec §4.4 (`harpe-format.md`)',
           description="Harpe's FullContext: the whole transcript, every request",
           _make=_full),
    Preset(name="windowed", family="harpe",
           source='Harpe spec §4.5',
           description="Harpe's WindowedContext: the newest whole turns that fit the budget (measured in characters)",
           knobs=(budget_knob(f"the window, converted to characters at {CHARS_PER_TOKEN} a token"),),
           limit_kind="target", _make=_windowed,
           note="the current turn is never cut, so a long agent turn goes over the budget"),
    Preset(name="turn", family="harpe",
           source='Harpe spec §4.6',
           description="Harpe's TurnContext: only the current turn", _make=_turn),
    Preset(name="summarizing", family="harpe",
           source='Harpe spec §4.7',
           description="Harpe's SummarizingContext: fold the oldest turns into a summary above the high water",
           knobs=(Knob(name="high_water", unit="tokens", default=DEFAULT_BUDGET, scales=True,
                       help="compact after the provider reports more input tokens than this"),
                  Knob(name="low_water", unit="tokens", default=None, minimum=0, scales=True,
                       help=f"keep the newest turns that fit this (as {CHARS_PER_TOKEN}× characters); "
                            "default: half the high water")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_summarizing,
           note="reactive: the request that crosses the high water goes out before the compaction"),
)
