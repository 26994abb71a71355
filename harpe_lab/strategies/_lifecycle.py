"""The turn lifecycle, defined once (the Harpe specification, §4): a stored transcript,
marked at each turn start so that an aborted turn keeps only its user input, and a request
that either continues the previous one (the messages appended since, and nothing else
changed) or compacts.

Every strategy of ours comes from `TurnLifecycle` (Harpe's four contexts, orion's, Claude
Code's) or from `PolicyLifecycle`, the same around a ``policy`` (Laser's, AutoGen's,
OpenHands', LangChain's, the edit policies'). What a strategy adds lives in hooks: `_mark_turn`
(a turn starts), `_added` (a message is stored), `_restored` (an abort restored the transcript).
One that folds history into a summary also takes `Summarizes`, for its ``summary`` and ``distill``.
"""

from __future__ import annotations

from itertools import chain
from operator import is_
from typing import Any, Iterable

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput, deferred
from ..protocol import Compaction, Distill, Limit, MeteredDistill

__all__ = ["TurnLifecycle", "PolicyLifecycle", "Summarizes"]

_MESSAGE_TYPES = (UserInput, AssistantMessage, ToolResults)


class TurnLifecycle:
    """Harpe's lifecycle: ``begin_turn(input) → compact() → [observe → append(reply) →
    append(results) → compact()]* → commit_turn() | abort_turn()``.

    Subclasses implement ``compact``, returning `_request` (a request made of messages,
    compared with the last one), `_whole` (the whole transcript) or `_send` (a request and
    what the subclass knows of it), and keep their own state in the hooks. ``base_system``
    is read-only.
    """

    def __init__(self, base_system: str, initial: Iterable[Message] = ()) -> None:
        if not isinstance(base_system, str):
            raise StrategyError(f"base_system must be a str, got {type(base_system).__name__}")
        start = list(initial)
        for i, m in enumerate(start):
            if not isinstance(m, _MESSAGE_TYPES):
                raise TypeError(f"initial[{i}] is not a harpe_lab message: {m!r}")
        self._base_system = base_system
        self._transcript = start
        # The transcript at the turn start, as (list, length): the list only grows until a
        # compaction or an abort replaces it, so its first `length` messages stay what they
        # were, and a turn start costs O(1), not a copy of the whole history.
        self._marked: tuple[list[Message], int] = (start, len(start))
        self._turn_input: UserInput | None = None
        self._sent = Rendered(base_system)  # the last request
        self._since: list[Message] = list(start)  # the messages appended after it
        self._aborted = False  # an abort since the last request

    @property
    def base_system(self) -> str:
        """The system prompt every request starts from."""
        return self._base_system

    @property
    def transcript(self) -> tuple[Message, ...]:
        """The whole stored history (a copy: the context's own list is never handed out)."""
        return tuple(self._transcript)

    def begin_turn(self, input: UserInput) -> None:
        if not isinstance(input, UserInput):
            raise TypeError(f"begin_turn takes a UserInput, got {type(input).__name__}")
        self._mark_turn()
        self._marked = (self._transcript, len(self._transcript))
        self._turn_input = input
        self._added(input)
        self._transcript.append(input)
        self._since.append(input)

    def append(self, message: Message) -> None:
        if not isinstance(message, _MESSAGE_TYPES):
            raise TypeError(f"append takes a harpe_lab message, got {type(message).__name__}")
        self._added(message)
        self._transcript.append(message)
        self._since.append(message)

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

    # --- hooks ------------------------------------------------------------------------------

    def _mark_turn(self) -> None:
        """Called at a turn start, before its input is stored: save what `_restored` puts back."""

    def _added(self, message: Message) -> None:
        """Called before ``message`` is stored."""

    def _restored(self) -> None:
        """Called after an aborted turn restored the transcript (to ``_marked``, plus the
        turn's input when it had one: ``self._transcript[self._marked[1]:]``)."""

    # --- requests ---------------------------------------------------------------------------

    def _request(self, messages: tuple[Message, ...] | Rendered, edits: tuple[int, ...] | None = None) -> Compaction:
        """The request carrying ``messages`` (or the request itself, when a subclass defers
        building its tuple): compacted unless it is the previous request followed by
        exactly the messages appended since. ``edits``: a subclass that knows the places
        where ``messages`` differs from those (`Compaction.edits`) passes them, and nothing
        is compared."""
        rendered = messages if isinstance(messages, Rendered) else Rendered(self._base_system, messages)
        if edits is None:
            now, sent = rendered.messages, self._sent.messages
            continues = len(now) == len(sent) + len(self._since) and all(map(is_, now, chain(sent, self._since)))
            if continues:
                edits = ()
        else:
            continues = not edits
        if self._aborted:  # what the aborted turn appended is gone: no promise this time
            edits = None
        return self._send(rendered, not continues, edits)

    def _whole(self, compacted: bool, system: str) -> Compaction:
        """The request carrying the whole transcript under ``system``: unless an abort or a
        compaction cut it, that is the previous request followed by the messages appended
        since (`Compaction.edits`)."""
        # the list itself, its tuple built only when read: appends extend it past the
        # request's length, and an abort or a compaction replaces it
        return self._send(deferred(system, self._transcript), compacted, None if compacted or self._aborted else ())

    def _send(self, rendered: Rendered, compacted: bool, edits: tuple[int, ...] | None = None) -> Compaction:
        """The request ``rendered``, as it is, recorded as the last one sent (every request
        goes out through here: `_request` and `_whole` compare with it)."""
        self._sent, self._since, self._aborted = rendered, [], False
        return Compaction(rendered, compacted, edits)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({len(self._transcript)} messages)"


class PolicyLifecycle(TurnLifecycle):
    """Harpe's lifecycle around a ``policy`` (messages in, the request's messages out).

    Subclasses implement ``compact`` — apply the policy to `transcript`, check what it
    returned, and hand the result to `_request` — and may use the hooks of `TurnLifecycle`.
    """

    def __init__(self, base_system: str, policy: Any, *, limit: Limit | None = None,
                 initial: Iterable[Message] = ()) -> None:
        super().__init__(base_system, initial)
        if not callable(policy):
            raise StrategyError(f"policy must be callable messages -> messages, got {policy!r}")
        if limit is not None and not isinstance(limit, Limit):
            raise StrategyError(f"limit must be a harpe_lab.protocol.Limit or None, got {limit!r}")
        self.policy = policy
        self.limit = limit

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.policy!r}, {len(self._transcript)} messages)"


class Summarizes:
    """Beside `TurnLifecycle`, for a strategy that folds history into a summary written by
    a metered distiller: the last ``summary`` (`protocol.HoldsSummary`) and the ``distill``
    it calls, read from ``_summary`` and ``_distill``."""

    _summary: str
    _distill: MeteredDistill

    @property
    def summary(self) -> str:
        """The last summary the distiller wrote ("" before the first compaction)."""
        return self._summary

    @property
    def distill(self) -> Distill:
        """The distiller this context calls."""
        return self._distill.distill
