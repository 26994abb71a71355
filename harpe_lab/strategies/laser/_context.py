"""`PolicyContext`: any Laser policy run through Harpe's context lifecycle."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ...errors import StrategyError
from ...messages import Message
from ...protocol import Compaction, Limit
from ...tokens import BytesCounter
from .._lifecycle import PolicyLifecycle
from ._manifest import Manifest, _manifest, _positions
from ._policies import Policy, message_text

__all__ = ["PolicyContext"]


class PolicyContext(PolicyLifecycle):
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
        super().__init__(base_system, policy, limit=limit, initial=initial)
        self._last: tuple[int, list[int]] = (0, [])  # transcript length and kept indices

    def manifest(self, *, ids: Sequence[str] | None = None, estimator: Any = None) -> Manifest:
        """What the last request carried, as `assemble` records it (indices into the
        transcript as it was then; ``ids`` one per message of that transcript)."""
        n, kept = self._last
        if ids is not None and len(ids) < n:
            raise StrategyError(f"ids must name every message: {n} messages but {len(ids)} ids")
        estimator = BytesCounter() if estimator is None else estimator
        tokens = sum(int(estimator.count(message_text(m))) for m in self._sent.messages)
        return _manifest(n, kept, tokens, ids, self.policy)

    def compact(self) -> Compaction:
        # The policy reads the stored transcript itself: a copy at every request would cost
        # O(history) per request. A policy never modifies its input, nor keeps it.
        seq = self._transcript
        out = tuple(self.policy(seq))
        kept = _positions(seq, out, self.policy)
        if seq and kept[-1] != len(seq) - 1:
            raise StrategyError(f"policy {self.policy!r} dropped the newest message; a request must end with it")
        self._last = (len(seq), kept)
        return self._request(out)
