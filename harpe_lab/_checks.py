"""The invariants the replay engine checks after every render: a request is never empty,
a tool call travels with its results, and a strategy that promises a budget keeps it."""

from __future__ import annotations

from types import MappingProxyType
from typing import Any, Mapping, Sequence

from .errors import StrategyError
from .messages import AssistantMessage, Message, Rendered, ToolResults
from .protocol import Limit
from .tokens import prices_by_parts

__all__ = ["Invariants"]


def _meet(results: ToolResults, reply: AssistantMessage) -> bool:
    """Whether ``results`` answer ``reply``'s calls (some of them: a recording may hold a
    partial answer, and strategies keep what they were given)."""
    return not {r.id for r in results.results}.isdisjoint(c.id for c in reply.calls)


def _answers(sent: Message, original: Message) -> bool:
    """Whether ``sent`` stands where ``original`` (a reply with calls, or the results that
    answer one) belongs: the original itself, or a stand-in of its kind with the same ids."""
    if sent is original:
        return True
    if isinstance(original, AssistantMessage):
        return isinstance(sent, AssistantMessage) and [c.id for c in sent.calls] == [c.id for c in original.calls]
    return isinstance(sent, ToolResults) and [r.id for r in sent.results] == [r.id for r in original.results]


class Invariants:
    """Checks for one replay of strategy ``strategy``.

    ``pairs`` maps ``id()`` of each original reply with tool calls, and of the results that
    answer it, to the pair. ``limit`` is the strategy's declared `Limit` (checked only when
    it is a ``"budget"``), ``counter`` the replay's own.
    """

    __slots__ = ("strategy", "pairs", "originals", "limit", "counter", "_fixed", "_fast")

    def __init__(self, strategy: str, pairs: Mapping[int, tuple[Message, Message]], limit: Limit | None,
                 counter: Any, originals: Mapping[int, Any] = MappingProxyType({})) -> None:
        self.strategy = strategy
        self.pairs = pairs
        self.originals = originals
        self.limit = limit if limit is not None and limit.kind == "budget" else None
        self.counter = counter
        self._fixed: dict[str, int] = {}
        own = None if self.limit is None else (self.limit.counter or counter)
        # with the replay's own additive counter, the messages' price is the engine's running
        # sum: only system and tools are priced here, once per system prompt
        self._fast = own is counter and prices_by_parts(counter)

    def not_empty(self, messages: Sequence[Message], i: int) -> None:
        if not messages:
            raise StrategyError(
                f"{self.strategy} rendered an empty request at request {i}; it needs at least the user input"
            )

    def pairs_kept(self, msgs: Sequence[Message], i: int, start: int = 0, stop: int | None = None) -> None:
        """A reply with tool calls is followed by the results that answer it, and results
        never come without their call (checked from ``start`` to ``stop``; the rest was
        checked before). The partner may be a stand-in the strategy made (a masked
        observation, a cleared call) as long as it carries the same call ids; a reply or
        results the strategy made itself (a copy with a notice added, say) are held to the
        same rule by their ids. A reply the recording itself left unanswered is not."""
        pairs, originals = self.pairs, self.originals
        n = len(msgs)
        for k in range(start, n if stop is None else min(stop, n)):
            m = msgs[k]
            pair = pairs.get(id(m))
            if pair is None:
                if id(m) in originals:
                    continue
                if isinstance(m, AssistantMessage) and m.calls:
                    after = msgs[k + 1] if k + 1 < n else None
                    if not (isinstance(after, ToolResults) and _meet(after, m)):
                        raise StrategyError(f"{self.strategy} sent tool calls without their results at request {i}")
                elif isinstance(m, ToolResults):
                    before = msgs[k - 1] if k else None
                    if not (isinstance(before, AssistantMessage) and _meet(m, before)):
                        raise StrategyError(f"{self.strategy} sent tool results without the call they answer at "
                                            f"request {i}")
                continue
            call, results = pair
            if m is call and (k + 1 == n or not _answers(msgs[k + 1], results)):
                raise StrategyError(f"{self.strategy} separated a tool call from its results at request {i}")
            if m is results and (k == 0 or not _answers(msgs[k - 1], call)):
                raise StrategyError(f"{self.strategy} sent tool results without the call they answer at request {i}")

    def budget_kept(self, system: str, session: Any, messages_tokens: int, i: int) -> None:
        """Raise when a strategy that promises a budget sent more (``messages_tokens`` is the
        engine's price of ``session.messages`` with the replay's counter)."""
        limit = self.limit
        if limit is None:
            return
        if self._fast:
            fixed = self._fixed.get(system)
            if fixed is None:
                c = self.counter
                fixed = self._fixed[system] = c.count_rendered(Rendered(system, ()), limit.tools)
            used = fixed + messages_tokens
        else:
            used = (limit.counter or self.counter).count_rendered(Rendered(system, session.messages), limit.tools)
        if used > limit.tokens:
            raise StrategyError(f"{self.strategy} promised at most {limit.tokens} tokens but sent {used} at request {i}")
