"""Replaying the summaries the recording agent wrote."""

from __future__ import annotations

from typing import Any, Callable, Literal

from ..errors import StrategyError
from ..messages import Rendered
from ._fallback import DistillFallback, _Reporting

__all__ = ["RecordedDistiller"]


class RecordedDistiller(_Reporting):
    """Return the summaries the recording agent wrote, in order, one per call.

    ``source`` is a `Conversation` (its ``compactions`` with a non-empty ``summary``, in
    turn order — e.g. Claude Code's compaction summaries) or any sequence of strings. It
    ignores the request, so a replay compares the real summaries under the replayed
    strategy's timing.

    Running out: by default (``on_exhausted="skip"``) each further call returns ``None`` —
    which `SummarizingContext` treats as "not this time", keeping the history — sets
    ``exhausted``, and reports a `DistillFallback` (``events``, ``on_event`` and a
    `DistillFallbackWarning`). ``on_exhausted="raise"`` raises `StrategyError` instead.
    """

    def __init__(
        self,
        source: Any,
        *,
        on_exhausted: Literal["skip", "raise"] = "skip",
        on_event: Callable[[object], None] | None = None,
    ) -> None:
        if on_exhausted not in ("skip", "raise"):
            raise StrategyError(f"on_exhausted must be one of ['skip', 'raise'], but {on_exhausted!r} was passed")
        compactions = getattr(source, "compactions", None)
        if compactions is not None:
            summaries = tuple(c.summary for c in sorted(compactions, key=lambda c: c.turn) if c.summary)
            if not summaries:
                raise StrategyError(
                    f"conversation {getattr(source, 'id', '?')!r} has no recorded compaction summary "
                    f"({len(compactions)} compactions, none with text); use ExtractiveDistiller or LLMDistiller"
                )
        elif isinstance(source, str):
            raise TypeError(
                "RecordedDistiller takes a Conversation or a sequence of summaries, not one str; wrap it: [text]"
            )
        else:
            summaries = tuple(source)
            bad = [k for k, s in enumerate(summaries) if not isinstance(s, str)]
            if bad:
                raise TypeError(f"summaries must be str; item {bad[0]} is {type(summaries[bad[0]]).__name__}")
        self.summaries: tuple[str, ...] = summaries
        self.on_exhausted = on_exhausted
        self.on_event = on_event
        self.events: list[DistillFallback] = []
        self.calls = 0

    @property
    def used(self) -> int:
        """How many recorded summaries have been returned."""
        return min(self.calls, len(self.summaries))

    @property
    def exhausted(self) -> bool:
        """True once a call found no recorded summary left."""
        return self.calls > len(self.summaries)

    def fresh(self) -> "RecordedDistiller":
        """An unused distiller with the same summaries, for the next replay."""
        return RecordedDistiller(self.summaries, on_exhausted=self.on_exhausted, on_event=self.on_event)

    def __call__(self, rendered: Rendered) -> str | None:
        k = self.calls
        self.calls += 1
        if k < len(self.summaries):
            return self.summaries[k]
        detail = f"call {k + 1} but only {len(self.summaries)} recorded summaries"
        if self.on_exhausted == "raise":
            raise StrategyError(
                f"RecordedDistiller ran out: {detail}; the replayed strategy compacts more often than the recording did"
            )
        self._fallback("exhausted", detail)
        return None

    def __repr__(self) -> str:
        return f"RecordedDistiller({len(self.summaries)} summaries, {self.used} used)"

