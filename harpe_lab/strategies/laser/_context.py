"""`PolicyContext`: any Laser policy run through Harpe's context lifecycle."""

from __future__ import annotations

from itertools import chain
from typing import Any, Iterable, Sequence

from ...errors import StrategyError
from ...messages import Message, Rendered, Usage, UserInput
from ...protocol import Compaction, Limit
from ...tokens import BytesCounter
from ._manifest import Manifest, _manifest, _positions
from ._policies import _MESSAGE_TYPES, Policy, message_text

__all__ = ["PolicyContext"]


def _continues(sent: tuple[Message, ...], since: list[Message], new: tuple[Message, ...]) -> bool:
    if len(new) != len(sent) + len(since):
        return False
    return all(a is b for a, b in zip(new, chain(sent, since)))


class PolicyContext:
    """Run a policy through Harpe's context lifecycle over a stored transcript.

    Every `compact` renders ``Rendered(base_system, policy(transcript))`` and reports
    ``compacted=True`` exactly when that is not the previous request followed by the
    messages appended since (the window moved). The policy's output is checked: a
    non-empty subsequence of the transcript that ends with its newest message.
    `manifest` records what the last request carried. `abort_turn` restores the
    transcript to before the turn plus its user input. ``limit`` declares the request size
    the policy aims at (a `harpe_lab.protocol.Limit`), for overshoot to be measured against.
    """

    def __init__(self, base_system: str, policy: Policy, *, initial: Iterable[Message] = (),
                 limit: Limit | None = None) -> None:
        if not isinstance(base_system, str):
            raise StrategyError(f"base_system must be a str, got {type(base_system).__name__}")
        if not callable(policy):
            raise StrategyError(f"policy must be callable messages -> messages, got {policy!r}")
        start = list(initial)
        for i, m in enumerate(start):
            if not isinstance(m, _MESSAGE_TYPES):
                raise TypeError(f"initial[{i}] is not a harpe_lab message: {m!r}")
        if limit is not None and not isinstance(limit, Limit):
            raise StrategyError(f"limit must be a harpe_lab.protocol.Limit or None, got {limit!r}")
        self.base_system = base_system
        self.policy = policy
        self.limit = limit
        self._transcript = start
        self._marked = list(start)
        self._turn_input: UserInput | None = None
        self._sent: tuple[Message, ...] = ()
        self._since: list[Message] = list(start)
        self._last: tuple[int, list[int]] = (0, [])  # transcript length and kept indices

    @property
    def transcript(self) -> tuple[Message, ...]:
        """The whole stored history (a copy)."""
        return tuple(self._transcript)

    def manifest(self, *, ids: Sequence[str] | None = None, estimator: Any = None) -> Manifest:
        """What the last request carried, as `assemble` records it (indices into the
        transcript as it was then; ``ids`` one per message of that transcript)."""
        n, kept = self._last
        if ids is not None and len(ids) < n:
            raise StrategyError(f"ids must name every message: {n} messages but {len(ids)} ids")
        estimator = BytesCounter() if estimator is None else estimator
        tokens = sum(int(estimator.count(message_text(m))) for m in self._sent)
        return _manifest(n, kept, tokens, ids, self.policy)

    def begin_turn(self, input: UserInput) -> None:
        if not isinstance(input, UserInput):
            raise TypeError(f"begin_turn takes a UserInput, got {type(input).__name__}")
        self._marked = list(self._transcript)
        self._turn_input = input
        self._transcript.append(input)
        self._since.append(input)

    def append(self, message: Message) -> None:
        if not isinstance(message, _MESSAGE_TYPES):
            raise TypeError(f"append takes a harpe_lab message, got {type(message).__name__}")
        self._transcript.append(message)
        self._since.append(message)

    def compact(self) -> Compaction:
        seq = tuple(self._transcript)
        out = tuple(self.policy(seq))
        kept = _positions(seq, out, self.policy)
        if seq and kept[-1] != len(seq) - 1:
            raise StrategyError(f"policy {self.policy!r} dropped the newest message; a request must end with it")
        compacted = not _continues(self._sent, self._since, out)
        self._sent, self._since, self._last = out, [], (len(seq), kept)
        return Compaction(Rendered(self.base_system, out), compacted)

    def observe(self, usage: Usage) -> None:
        pass

    def commit_turn(self) -> None:
        self._turn_input = None

    def abort_turn(self) -> None:
        self._transcript = self._marked + ([] if self._turn_input is None else [self._turn_input])
        self._turn_input = None
        self._since = []

    def __repr__(self) -> str:
        return f"PolicyContext({self.policy!r}, {len(self._transcript)} messages)"
