"""Laser's folds over a message log: `fold` with a bound (`Last`, `After`, `UpTo`, `Whole`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar, Union

from ...errors import StrategyError
from ...messages import Message
from .._validate import check_int
from ._policies import _seq

__all__ = ["Checkpoint", "Bound", "Last", "After", "UpTo", "Whole", "fold"]

Checkpoint = Union[int, Callable[[Message], bool]]
"""A message index (0-based, into the messages folded), or a predicate: the checkpoint is
then the *last* message for which it is true (the most recent checkpoint)."""


def _check_checkpoint(checkpoint: object) -> None:
    if isinstance(checkpoint, bool) or not (
        (isinstance(checkpoint, int) and checkpoint >= 0) or callable(checkpoint)
    ):
        raise StrategyError(
            f"checkpoint must be a message index >= 0 or a predicate Message -> bool, got {checkpoint!r}"
        )


def _find(messages: Sequence[Message], checkpoint: Checkpoint) -> int | None:
    if isinstance(checkpoint, int):
        if checkpoint >= len(messages):
            raise StrategyError(f"checkpoint index {checkpoint} is past the end of {len(messages)} messages")
        return checkpoint
    for i in range(len(messages) - 1, -1, -1):
        if checkpoint(messages[i]):
            return i
    return None


@dataclass(frozen=True)
class Last:
    """Fold only the last ``n`` messages."""

    n: int

    def __post_init__(self) -> None:
        check_int("n", self.n, 1)

    def select(self, messages: Sequence[Message]) -> Sequence[Message]:
        return messages[max(0, len(messages) - self.n) :]


@dataclass(frozen=True)
class After:
    """Fold the messages after the checkpoint (not the checkpoint itself). When a
    predicate matches nothing, there was no checkpoint yet and every message is folded."""

    checkpoint: Checkpoint

    def __post_init__(self) -> None:
        _check_checkpoint(self.checkpoint)

    def select(self, messages: Sequence[Message]) -> Sequence[Message]:
        i = _find(messages, self.checkpoint)
        return messages if i is None else messages[i + 1 :]


@dataclass(frozen=True)
class UpTo:
    """Fold the messages up to and including the checkpoint. When a predicate matches
    nothing, the checkpoint has not been reached and nothing is folded."""

    checkpoint: Checkpoint

    def __post_init__(self) -> None:
        _check_checkpoint(self.checkpoint)

    def select(self, messages: Sequence[Message]) -> Sequence[Message]:
        i = _find(messages, self.checkpoint)
        return messages[:0] if i is None else messages[: i + 1]


@dataclass(frozen=True)
class Whole:
    """Fold every message."""

    def select(self, messages: Sequence[Message]) -> Sequence[Message]:
        return messages


Bound = Union[Last, After, UpTo, Whole]
_Acc = TypeVar("_Acc")


def fold(
    messages: Sequence[Message], init: _Acc, fn: Callable[[_Acc, Message], _Acc], *, bound: Bound = Whole()
) -> _Acc:
    """``fn(...fn(fn(init, m0), m1)..., mk)`` over the messages ``bound`` selects, oldest
    first. ``messages`` is not changed."""
    if not callable(fn):
        raise StrategyError(f"fn must be callable (acc, message) -> acc, got {fn!r}")
    if not isinstance(bound, (Last, After, UpTo, Whole)):
        raise StrategyError(f"bound must be Last(n), After(checkpoint), UpTo(checkpoint) or Whole(), got {bound!r}")
    acc = init
    for m in bound.select(_seq(messages)):
        acc = fn(acc, m)
    return acc
