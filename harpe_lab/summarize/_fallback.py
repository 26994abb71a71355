"""A distiller's fallback to ``None``, reported so that it is never silent."""

from __future__ import annotations

import warnings
from typing import Callable

# events the engine reacts to live in the protocol
from ..protocol import DistillFallback, DistillFallbackWarning

__all__ = ["DistillFallback", "DistillFallbackWarning"]


class _Reporting:
    """Shared fallback reporting: an ``events`` list, an optional ``on_event`` handler, the
    sinks of `subscribe` (a replay's, say), and — when nobody subscribed — a
    `DistillFallbackWarning`, so a fallback is never silent."""

    on_event: Callable[[object], None] | None
    events: list[DistillFallback]
    _sinks: tuple[Callable[[object], None], ...] = ()

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every fallback to ``sink`` (which then owns telling the user)."""
        self._sinks = (*self._sinks, sink)

    def _fallback(self, reason: str, detail: str) -> None:
        event = DistillFallback(reason, detail, type(self).__name__)
        self.events.append(event)
        if not self._sinks:
            warnings.warn(f"{type(self).__name__} returned None ({reason}): {detail}", DistillFallbackWarning,
                          stacklevel=3)
        if self.on_event is not None:
            self.on_event(event)
        for sink in self._sinks:
            sink(event)
