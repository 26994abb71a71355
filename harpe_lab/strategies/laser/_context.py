"""`PolicyContext`: any Laser policy run through Harpe's context lifecycle."""

from __future__ import annotations

from bisect import bisect_left
from typing import Any, Iterable, Sequence

from ...errors import StrategyError
from ...messages import Message
from ...protocol import Compaction, Limit
from ...tokens import BytesCounter
from .._lifecycle import PolicyLifecycle
from ._manifest import Manifest, _manifest, _positions
from ._policies import Chain, LastN, Policy, TokenBudget, _valid_start, message_text

__all__ = ["PolicyContext"]


def _tail_policies(policy: Policy) -> tuple[LastN | TokenBudget, ...] | None:
    """The steps of a policy that keeps a tail of the transcript (`LastN`, `TokenBudget`, or a
    `Chain` of them; these exact classes, whose selection `_TailWindow` computes), else None."""
    steps = policy.policies if type(policy) is Chain else (policy,)
    return steps if all(type(p) in (LastN, TokenBudget) for p in steps) else None


class _TailWindow:
    """Where a chain of `LastN` and `TokenBudget` starts keeping the transcript, without
    walking the window at every request: the running sums of each budget's estimates make
    its walk newest-first a bisection. Exactly the chain's own answer (a test compares them)."""

    def __init__(self, steps: tuple[LastN | TokenBudget, ...]) -> None:
        self.steps = steps
        # per TokenBudget step: sums[k] is the estimate of transcript[:k]
        self.sums: list[list[int] | None] = [[0] if type(p) is TokenBudget else None for p in steps]

    def restored(self, length: int) -> None:
        """The transcript was replaced by one whose first ``length`` messages are the old ones."""
        for sums in self.sums:
            if sums is not None:
                del sums[length + 1 :]

    def start(self, seq: Sequence[Message]) -> int | None:
        """The first index the chain keeps of ``seq`` (None: an estimate below zero, which
        the bisection cannot take; the chain is then run as it is)."""
        n = len(seq)
        lo = 0
        for p, sums in zip(self.steps, self.sums):
            if sums is None:
                s = max(lo, n - p.n)  # type: ignore[union-attr]
            else:
                estimate = p.estimate  # type: ignore[union-attr]
                for k in range(len(sums) - 1, n):
                    e = estimate(seq[k])
                    if e < 0:
                        return None
                    sums.append(sums[-1] + e)
                # the newest is kept; then each older one while the sum from it fits
                s = bisect_left(sums, sums[n] - p.max_tokens, lo, n - 1)  # type: ignore[union-attr]
            lo = _valid_start(seq, s, lo)
        return lo


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
        self._last: tuple[int, Sequence[int]] = (0, [])  # transcript length and kept indices
        steps = _tail_policies(policy)
        self._tail = None if steps is None else _TailWindow(steps)

    def manifest(self, *, ids: Sequence[str] | None = None, estimator: Any = None) -> Manifest:
        """What the last request carried, as `assemble` records it (indices into the
        transcript as it was then; ``ids`` one per message of that transcript)."""
        n, kept = self._last
        if ids is not None and len(ids) < n:
            raise StrategyError(f"ids must name every message: {n} messages but {len(ids)} ids")
        estimator = BytesCounter() if estimator is None else estimator
        tokens = sum(int(estimator.count(message_text(m))) for m in self._sent.messages)
        return _manifest(n, kept, tokens, ids, self.policy)

    def _restored(self) -> None:
        if self._tail is not None:
            self._tail.restored(self._marked[1])

    def compact(self) -> Compaction:
        # The policy reads the stored transcript itself: a copy at every request would cost
        # O(history) per request. A policy never modifies its input, nor keeps it.
        seq = self._transcript
        start = None if self._tail is None or not seq else self._tail.start(seq)
        if start is not None:
            # a tail: the previous request plus what came since, unless its start moved
            _, kept = self._last
            same = not self._aborted and bool(kept) and kept[0] == start
            self._last = (len(seq), range(start, len(seq)))
            return self._request(tuple(seq[start:]), () if same else None)
        out = tuple(self.policy(seq))
        kept = _positions(seq, out, self.policy)
        if seq and kept[-1] != len(seq) - 1:
            raise StrategyError(f"policy {self.policy!r} dropped the newest message; a request must end with it")
        self._last = (len(seq), kept)
        return self._request(out)
