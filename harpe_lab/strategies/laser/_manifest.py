"""Laser's manifests: `assemble` applies a policy and records a `Manifest` of what the model
received."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ...errors import StrategyError
from ...messages import Message
from ...tokens import BytesCounter
from ._policies import Policy, message_text

__all__ = ["Manifest", "assemble"]


@dataclass(frozen=True)
class Manifest:
    """What a model received: input indices kept and dropped (and their ids, when given),
    and the estimated tokens of the kept messages."""

    kept: tuple[int, ...]
    dropped: tuple[int, ...]
    estimated_tokens: int
    kept_ids: tuple[str, ...] = ()
    dropped_ids: tuple[str, ...] = ()
    policy: str = ""
    """The policy's repr."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "policy": self.policy,
            "kept": list(self.kept),
            "dropped": list(self.dropped),
            "kept_ids": list(self.kept_ids),
            "dropped_ids": list(self.dropped_ids),
            "estimated_tokens": self.estimated_tokens,
        }


def _positions(seq: Sequence[Message], out: Sequence[Message], policy: object) -> list[int]:
    """Indices of ``out`` in ``seq``; ``out`` must be a non-empty subsequence (by identity)
    when ``seq`` is not empty. Walks from the end, so a tail costs O(len(out))."""
    kept: list[int] = []
    j = len(seq) - 1
    for m in reversed(out):
        while j >= 0 and seq[j] is not m:
            j -= 1
        if j < 0:
            raise StrategyError(
                f"policy {policy!r} returned a message that is not one of its inputs, or out of "
                f"order: {m!r:.120}; a policy must return a subsequence of the messages it is given"
            )
        kept.append(j)
        j -= 1
    if seq and not kept:
        raise StrategyError(f"policy {policy!r} returned no messages for {len(seq)}; a request cannot be empty")
    kept.reverse()
    return kept


def _manifest(
    n: int, kept: Sequence[int], tokens: int, ids: Sequence[str] | None, policy: object
) -> "Manifest":
    keep = set(kept)
    dropped = tuple(i for i in range(n) if i not in keep)
    return Manifest(
        kept=tuple(kept),
        dropped=dropped,
        estimated_tokens=tokens,
        kept_ids=() if ids is None else tuple(ids[i] for i in kept),
        dropped_ids=() if ids is None else tuple(ids[i] for i in dropped),
        policy=repr(policy),
    )


def assemble(
    messages: Sequence[Message],
    policy: Policy,
    *,
    ids: Sequence[str] | None = None,
    estimator: Any = None,
) -> tuple[tuple[Message, ...], Manifest]:
    """Apply ``policy`` and record what the model receives.

    ``ids`` (one per message, e.g. ``conversation.message_ids()``) name the messages in the
    manifest; ``estimator`` (default `BytesCounter`) estimates the kept messages' tokens as
    `TokenBudget` does. Raises `StrategyError` when the policy returns anything but a
    non-empty subsequence of its input.
    """
    seq = tuple(messages)
    if ids is not None:
        ids = tuple(ids)
        if len(ids) != len(seq):
            raise StrategyError(f"ids must name every message: {len(seq)} messages but {len(ids)} ids")
    if not callable(policy):
        raise StrategyError(f"policy must be callable, got {policy!r}")
    estimator = BytesCounter() if estimator is None else estimator
    out = tuple(policy(seq))
    kept = _positions(seq, out, policy)
    tokens = sum(int(estimator.count(message_text(m))) for m in out)
    return out, _manifest(len(seq), kept, tokens, ids, policy)
