"""What a strategy reports during a replay, collected for the frame."""

from __future__ import annotations

from typing import Any, Callable

from ..protocol import ContextCompacted, DistillCall, DistillFallback
from ._frame import ReplayEvent

__all__ = ["Listener"]


class Listener:
    """Collects the events a strategy reports, and what they mean for the frame."""

    def __init__(self, on_event: Callable[[ReplayEvent], None] | None, counter: Any) -> None:
        self.events: list[ReplayEvent] = []
        self.on_event = on_event
        self.counter = counter
        self.request = self.turn = 0
        self.folded = False  # a ContextCompacted since the last request
        self.distill = [0, 0, 0]  # calls, input tokens, output tokens since the last request (the engine resets it)
        self.fallbacks: list[Any] = []
        self.closed = False

    def __call__(self, event: object) -> None:
        if self.closed:  # a strategy or distiller reused after its replay
            return
        ev = ReplayEvent(self.request, self.turn, type(event).__name__, event)
        self.events.append(ev)
        if isinstance(event, ContextCompacted):
            self.folded = True
        elif isinstance(event, DistillCall):
            d = self.distill
            d[0] += 1
            if event.usage is not None:
                d[1] += event.usage.input_tokens
                d[2] += event.usage.output_tokens
            else:
                # the request as written (a calibrated counter adds no agent's prompt to it)
                count = getattr(self.counter, "count_written", self.counter.count_rendered)
                d[1] += count(event.request)
                d[2] += self.counter.count(event.reply) if isinstance(event.reply, str) else 0
        elif isinstance(event, DistillFallback):
            self.fallbacks.append(event)
        if self.on_event is not None:
            self.on_event(ev)

