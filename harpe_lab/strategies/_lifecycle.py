"""The lifecycle every policy-driven strategy shares: a stored transcript, marked at each turn
start so an aborted turn keeps only its user input, and a request that either continues the
previous one (the messages appended since, and nothing else changed) or compacts."""

from __future__ import annotations

from itertools import chain
from operator import is_
from typing import Any, Iterable

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput
from ..protocol import Compaction, Limit

__all__ = ["PolicyLifecycle"]

_MESSAGE_TYPES = (UserInput, AssistantMessage, ToolResults)


class PolicyLifecycle:
    """Harpe's lifecycle around a ``policy`` (messages in, the request's messages out).

    Subclasses implement ``compact`` — apply the policy to `transcript`, check what it
    returned, and hand the result to `_request` — and may override `_added` (a message was
    stored) and `_restored` (an aborted turn restored the transcript).
    """

    def __init__(self, base_system: str, policy: Any, *, limit: Limit | None = None,
                 initial: Iterable[Message] = ()) -> None:
        if not isinstance(base_system, str):
            raise StrategyError(f"base_system must be a str, got {type(base_system).__name__}")
        if not callable(policy):
            raise StrategyError(f"policy must be callable messages -> messages, got {policy!r}")
        if limit is not None and not isinstance(limit, Limit):
            raise StrategyError(f"limit must be a harpe_lab.protocol.Limit or None, got {limit!r}")
        start = list(initial)
        for i, m in enumerate(start):
            if not isinstance(m, _MESSAGE_TYPES):
                raise TypeError(f"initial[{i}] is not a harpe_lab message: {m!r}")
        self.base_system = base_system
        self.policy = policy
        self.limit = limit
        self._transcript = start
        # The transcript at the turn start, as (list, length): the list only grows between
        # turn starts (an abort replaces it), so a turn start costs O(1), not a copy.
        self._marked = (start, len(start))
        self._turn_input: UserInput | None = None
        self._sent = Rendered(base_system)  # the last request
        self._since: list[Message] = list(start)
        self._aborted = False  # an abort since the last request

    @property
    def transcript(self) -> tuple[Message, ...]:
        """The whole stored history (a copy)."""
        return tuple(self._transcript)

    def begin_turn(self, input: UserInput) -> None:
        if not isinstance(input, UserInput):
            raise TypeError(f"begin_turn takes a UserInput, got {type(input).__name__}")
        self._marked = (self._transcript, len(self._transcript))
        self._turn_input = input
        self.append(input)

    def append(self, message: Message) -> None:
        if not isinstance(message, _MESSAGE_TYPES):
            raise TypeError(f"append takes a harpe_lab message, got {type(message).__name__}")
        self._added(message)
        self._transcript.append(message)
        self._since.append(message)

    def _added(self, message: Message) -> None:
        """Called before ``message`` is stored."""

    def _request(self, messages: tuple[Message, ...] | Rendered, edits: tuple[int, ...] | None = None) -> Compaction:
        """The request carrying ``messages`` (or the request itself, when a subclass defers
        building its tuple): compacted unless it is the previous request followed by
        exactly the messages appended since. ``edits``: a subclass that knows the places
        where ``messages`` differs from those (`Compaction.edits`) passes them, and nothing
        is compared."""
        rendered = messages if isinstance(messages, Rendered) else Rendered(self.base_system, messages)
        if edits is None:
            now, sent = rendered.messages, self._sent.messages
            continues = len(now) == len(sent) + len(self._since) and all(map(is_, now, chain(sent, self._since)))
            if continues:
                edits = ()
        else:
            continues = not edits
        if self._aborted:  # what the aborted turn appended is gone: no promise this time
            edits, self._aborted = None, False
        self._sent, self._since = rendered, []
        return Compaction(rendered, not continues, edits)

    def observe(self, usage: Usage) -> None:
        pass

    def commit_turn(self) -> None:
        self._turn_input = None

    def abort_turn(self) -> None:
        marked, length = self._marked
        self._transcript = marked[:length] + ([] if self._turn_input is None else [self._turn_input])
        self._turn_input = None
        self._since = []
        self._aborted = True
        self._restored()

    def _restored(self) -> None:
        """Called after an aborted turn restored the transcript."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.policy!r}, {len(self._transcript)} messages)"
