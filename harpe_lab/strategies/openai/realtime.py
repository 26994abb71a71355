"""OpenAI Realtime's retention-ratio truncation (`RetentionRatio`): server-side, what a
developer gets by setting one option of the Realtime session.

Source read: OpenAI's Realtime API reference and the "Managing costs" guide
(platform.openai.com, ``session.truncation`` of type ``retention_ratio``): when the
conversation's tokens after the instructions exceed ``token_limits.post_instructions`` (by
default the model's input limit), the oldest messages are dropped until only
``retention_ratio`` of that limit is used — "to amortize truncations and improve cache
rates". What is dropped stays dropped.

Mapped onto harpe_lab's lifecycle: the truncation drops whole messages (a reply with its tool
results as one, since no provider takes results without their call), counted by the counter
given; the newest message and its call are always kept.

Not modelled: Realtime's audio tokens and its ``token_limits`` on the instructions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ...errors import StrategyError
from ...messages import Message, Rendered, ToolResults
from ...protocol import Compaction, EventHub, Limit
from .._lifecycle import TurnLifecycle
from .._validate import check_base, check_counter, check_int
from .._preset import Factory, Knob, Preset, fixed_tokens

__all__ = ["RETENTION_RATIO", "RetentionRatio", "RetentionRatioContext", "Truncated", "PRESETS"]

RETENTION_RATIO = 0.8
"""The ``retention_ratio`` OpenAI's documentation shows."""


@dataclass(frozen=True)
class Truncated:
    """Event: the messages came to ``tokens_before`` (over the limit); the oldest ``dropped``
    went, leaving ``tokens_after``."""

    dropped: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, kw_only=True)
class RetentionRatio:
    """OpenAI Realtime's ``retention_ratio`` truncation: when the messages exceed ``limit``
    tokens, drop the oldest until at most ``ratio × limit`` remain."""

    limit: int
    """``token_limits.post_instructions``: tokens of the messages, the instructions aside."""
    ratio: float = RETENTION_RATIO
    """``retention_ratio``: the share of ``limit`` left after a truncation."""

    def __post_init__(self) -> None:
        check_int("limit", self.limit, 1)
        r = self.ratio
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or not 0 <= r <= 1:
            raise StrategyError(f"ratio must be a fraction in [0, 1], got {r!r}")

    def context(self, base_system: str, *, counter: Any, tools: Sequence[Mapping[str, Any]] = (),
                on_event: Callable[[object], None] | None = None) -> "RetentionRatioContext":
        """A fresh lifecycle context: ``counter`` prices each message; the declared limit is
        ``limit`` plus what the system prompt and ``tools`` cost."""
        return RetentionRatioContext(base_system, self, counter=counter, tools=tools, on_event=on_event)


class RetentionRatioContext(TurnLifecycle):
    """OpenAI Realtime's retention-ratio truncation in Harpe's lifecycle.

    The request is the window: the messages from the oldest kept on. Each message is priced
    once, as it is appended, so a request costs O(1) but for the messages a truncation drops.
    Reports `Truncated`.
    """

    def __init__(self, base_system: str, config: RetentionRatio, *, counter: Any,
                 tools: Sequence[Mapping[str, Any]] = (), on_event: Callable[[object], None] | None = None) -> None:
        check_base(base_system, config, RetentionRatio)
        check_counter(counter)
        super().__init__(base_system)
        self._events = EventHub(on_event)
        self.config = config
        self.counter = counter
        self.tools = tuple(tools)
        self._fixed = int(counter.count_rendered(Rendered(base_system, ()), self.tools))
        self._over = config.limit  # read at every request
        # the window is the transcript: the messages from the oldest kept on
        self._prices: list[int] = []  # the window's messages' tokens
        self._tokens = 0
        self._changed = False
        self._marked_state: tuple = ([], 0)

    @property
    def limit(self) -> Limit:
        """The whole request the limit allows, as a target: the newest message is sent even
        when it alone is over."""
        return Limit(tokens=self._fixed + self.config.limit, kind="target")

    @property
    def tokens(self) -> int:
        """The window's messages' tokens."""
        return self._tokens

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_state = (self._prices, self._tokens)

    def _added(self, message: Message) -> None:
        price = int(self.counter.count_message(message))
        self._prices.append(price)
        self._tokens += price

    def compact(self) -> Compaction:
        if self._tokens > self._over:
            self._truncate()
        changed, self._changed = self._changed, False
        return self._whole(changed, self._base_system)

    def _truncate(self) -> None:
        w, prices = self._transcript, self._prices
        before = self._tokens
        target = self.config.ratio * self.config.limit
        # the newest message and, for tool results, the call they answer are never dropped
        last = len(w) - 2 if len(w) >= 2 and isinstance(w[-1], ToolResults) else len(w) - 1
        start, tokens = 0, before
        while tokens > target and start < last:
            tokens -= prices[start]
            start += 1
        while start < last and isinstance(w[start], ToolResults):  # results whose call went
            tokens -= prices[start]
            start += 1
        if start == 0:
            return
        # new lists: the requests sent and the turn's mark read the old ones
        self._transcript, self._prices, self._tokens = w[start:], prices[start:], tokens
        self._changed = True
        self._events.emit(Truncated(start, before, tokens))

    def _restored(self) -> None:
        prices, self._tokens = self._marked_state
        length = self._marked[1]
        self._prices = prices[:length]
        self._changed = True
        for kept in self._transcript[length:]:  # the turn's input, priced again
            self._added(kept)

    def __repr__(self) -> str:
        return f"RetentionRatioContext(limit={self.config.limit:,}, {len(self._transcript)} messages)"


# --- presets ------------------------------------------------------------------------------


def _retention_ratio(*, counter: Any, system: str, tools: tuple, budget: int, retention: int, **_: Any) -> Factory:
    room = budget - fixed_tokens(counter, system, tools)
    if room < 1:
        raise StrategyError(
            f"budget {budget:,} tokens leaves no room for messages: the system prompt and tools alone take "
            f"{budget - room:,}; raise the budget"
        )
    config = RetentionRatio(limit=room, ratio=retention / 100)
    return lambda: config.context(system, counter=counter, tools=tools)


PRESETS: tuple[Preset, ...] = (
    Preset(name="retention-ratio", family="openai-realtime",
           source="OpenAI Realtime API reference and \"Managing costs\" guide (`session.truncation`, "
                  "`retention_ratio`)",
           description="OpenAI Realtime's retention-ratio truncation: when the messages exceed the limit, the oldest "
                       "are dropped until retention% of it is used",
           knobs=(Knob(name="budget", unit="tokens", default=32_000, minimum=1, scales=True,
                       help="the request's tokens, system and tools included (token_limits.post_instructions is this "
                            "less the system prompt and tools; gpt-realtime's window is 32,768)"),
                  Knob(name="retention", unit="% of the limit", default=80, minimum=0, maximum=100,
                       help="retention_ratio: the share of the limit left after a truncation")),
           needs=frozenset({"counter"}), limit_kind="target", _make=_retention_ratio,
           note="truncates in steps, so the cached prefix survives between them; goes over only when the newest "
                "message alone does not fit"),
)
