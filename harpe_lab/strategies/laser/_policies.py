"""Laser's policies: `LastN`, `TokenBudget` (with `MessagePrice`), `Chain`, the text Laser
estimates (`message_text`) and `block`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from ..._text import message_text
from ...errors import StrategyError
from ...messages import Message, ToolResults
from ...tokens import BytesCounter
from .._validate import check_int

__all__ = ["Policy", "LastN", "TokenBudget", "MessagePrice", "Chain", "message_text", "block"]

Policy = Callable[[Sequence[Message]], Sequence[Message]]
"""A context policy: messages in, the messages a model receives out (a subsequence). It
only reads its input: `PolicyContext` hands it the stored transcript itself, not a copy."""

_MEMO_SIZE = 1 << 17



def _seq(messages: Iterable[Message]) -> Sequence[Message]:
    return messages if isinstance(messages, (list, tuple)) else tuple(messages)


def _valid_start(messages: Sequence[Message], start: int, lo: int = 0) -> int:
    """Move a tail's start so the tail does not begin with orphan tool results (reaching
    back no further than ``lo``: the tail of ``messages[lo:]``)."""
    end = len(messages)
    s = start
    while s < end and isinstance(messages[s], ToolResults):
        s += 1
    if s < end or start >= end:
        return s
    # Only tool results were left: reach back to the call they answer instead.
    s = start
    while s > lo and isinstance(messages[s], ToolResults):
        s -= 1
    return s


# --- policies -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LastN:
    """Keep the last ``n`` messages (never starting with orphan tool results)."""

    n: int

    def __post_init__(self) -> None:
        check_int("n", self.n, 1)

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        seq = _seq(messages)
        return tuple(seq[_valid_start(seq, max(0, len(seq) - self.n)) :])


@dataclass(frozen=True)
class MessagePrice:
    """A `TokenBudget` estimator that prices each whole message with a harpe_lab counter,
    chat overhead included — the replay's own measure — instead of Laser's text estimate."""

    counter: Any

    def __post_init__(self) -> None:
        if not callable(getattr(self.counter, "count_message", None)):
            raise StrategyError(f"counter must have count_message (e.g. harpe_lab.TiktokenCounter()), got {self.counter!r}")

    def count(self, text: str) -> int:
        return int(self.counter.count(text))

    def price(self, message: Message) -> int:
        return int(self.counter.count_message(message))


@dataclass(frozen=True)
class TokenBudget:
    """Keep the newest messages whose estimates sum to at most ``max_tokens``, stopping at
    the first message that does not fit; the newest message is always kept.

    A message's estimate is ``estimator.count(message_text(message))`` — no per-message
    overhead — or, with a `MessagePrice` estimator, the counter's price of the whole message. With the default `BytesCounter` a plain text message costs
    ``ceil(len(text.encode("utf-8")) / 4)`` tokens.
    """

    max_tokens: int
    estimator: Any = field(default_factory=BytesCounter)
    """Anything with ``count(text) -> int``."""
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_int("max_tokens", self.max_tokens, 1)
        # str, bytes, lists and tuples have a count method too, and would count the wrong thing
        if isinstance(self.estimator, (str, bytes, bytearray, list, tuple)) or not callable(
            getattr(self.estimator, "count", None)
        ):
            raise StrategyError(
                f"estimator must have count(text) -> int (e.g. harpe_lab.BytesCounter()), got {self.estimator!r}"
            )

    def __getstate__(self) -> dict[str, Any]:
        # The memo holds messages by id; it is neither portable nor worth shipping.
        return {"max_tokens": self.max_tokens, "estimator": self.estimator}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_memo", {})

    def estimate(self, message: Message) -> int:
        """Estimated tokens of one message (memoized per message object)."""
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        if isinstance(self.estimator, MessagePrice):
            n = self.estimator.price(message)
        else:
            n = int(self.estimator.count(message_text(message)))
        if len(self._memo) >= _MEMO_SIZE:
            self._memo.clear()
        # The message is held so its id cannot be reused by another object.
        self._memo[id(message)] = (message, n)
        return n

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        seq = _seq(messages)
        start, used = len(seq), 0
        memo, estimate = self._memo, self.estimate
        for i in range(len(seq) - 1, -1, -1):
            m = seq[i]
            hit = memo.get(id(m))  # estimate's memo, inlined: every request walks the window
            n = hit[1] if hit is not None and hit[0] is m else estimate(m)
            if used + n > self.max_tokens and start < len(seq):
                break
            used += n
            start = i
        return tuple(seq[_valid_start(seq, start) :])


@dataclass(frozen=True)
class Chain:
    """Apply ``policies`` in order, each to the previous one's output."""

    policies: tuple[Policy, ...]

    def __post_init__(self) -> None:
        if isinstance(self.policies, (str, bytes)) or not isinstance(self.policies, Iterable):
            raise StrategyError(f"policies must be a list of policies, got {self.policies!r}")
        policies = tuple(self.policies)
        if not policies:
            raise StrategyError("policies must hold at least one policy, got []")
        for i, p in enumerate(policies):
            if not callable(p):
                raise StrategyError(f"policies[{i}] must be a callable policy, got {p!r}")
        object.__setattr__(self, "policies", policies)

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        out: Sequence[Message] = _seq(messages)
        for p in self.policies:
            out = tuple(p(out))
        return tuple(out)


def block(messages: Sequence[Message], n: int = 50, token_budget: int | None = None) -> str:
    """The `message_text` of the last ``n`` messages — within ``token_budget`` estimated
    tokens when given — joined by newlines: the messages
    ``Chain([LastN(n), TokenBudget(token_budget)])`` keeps."""
    policy: Policy = LastN(n) if token_budget is None else Chain([LastN(n), TokenBudget(token_budget)])
    return "\n".join(message_text(m) for m in policy(messages))
