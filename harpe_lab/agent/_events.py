"""What a turn tells its caller: the `TurnEvent` s, and the `Interaction` that receives them,
can cancel the turn and waits out retry delays."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Callable, Protocol, Union, runtime_checkable

from ..messages import ToolCall, ToolResult
from ..protocol import ContextCompacted

__all__ = [
    "TurnEvent",
    "ModelRequestStarted",
    "ModelRequestEnded",
    "AssistantStreamReset",
    "TransientError",
    "ToolBudgetReached",
    "AssistantText",
    "ToolStarted",
    "ToolFinished",
    "Interaction",
    "Interact",
]

# --- events --------------------------------------------------------------------------------
# TurnEvents go to ``Interact.emit`` only; Harpe never logs them.


@dataclass(frozen=True)
class ModelRequestStarted:
    """A model call is about to be made: ``attempt`` 0 is the first try."""

    attempt: int
    max_retries: int


@dataclass(frozen=True)
class ModelRequestEnded:
    """A model call returned (``ok``) or raised."""

    attempt: int
    ok: bool


@dataclass(frozen=True)
class AssistantStreamReset:
    """A transient failure: anything shown of the reply so far is void."""


@dataclass(frozen=True)
class TransientError:
    """A transient failure; the call is retried after ``retry_in_seconds``."""

    detail: str
    attempt: int
    retry_in_seconds: float


@dataclass(frozen=True)
class ToolBudgetReached:
    """``rounds`` tool rounds were run: from now on no tools are offered to the model."""

    rounds: int


@dataclass(frozen=True)
class AssistantText:
    """The model said something (non-blank) alongside tool calls."""

    text: str


@dataclass(frozen=True)
class ToolStarted:
    """A tool call is about to run."""

    call: ToolCall


@dataclass(frozen=True)
class ToolFinished:
    """A tool call ran; ``result`` is what goes back to the model."""

    call: ToolCall
    result: ToolResult


TurnEvent = Union[
    ModelRequestStarted, ModelRequestEnded, AssistantStreamReset, TransientError, ToolBudgetReached,
    AssistantText, ToolStarted, ToolFinished, ContextCompacted,
]


# --- interaction -----------------------------------------------------------------------------


@runtime_checkable
class Interaction(Protocol):
    """What `ask` needs from its caller (Harpe's ``Interact``): a cancellation flag, a
    cancellable pause, and a sink for `TurnEvent` s."""

    cancelled: bool

    def pause(self, seconds: float) -> bool: ...

    def emit(self, event: Any) -> None: ...


class Interact:
    """The default `Interaction`.

    ``cancelled`` can be set from any thread (or call `cancel`); a `pause` in progress then
    returns at once. ``on_event`` receives every `TurnEvent`. ``sleep`` replaces the real
    wait in `pause` (tests pass a function that records the delay and returns at once).
    """

    def __init__(self, on_event: Callable[[Any], None] | None = None, *,
                 sleep: Callable[[float], Any] | None = None) -> None:
        self.on_event = on_event
        self._sleep = sleep
        self._cancel = threading.Event()

    @property
    def cancelled(self) -> bool:
        """True once the turn should stop."""
        return self._cancel.is_set()

    @cancelled.setter
    def cancelled(self, value: bool) -> None:
        if value:
            self._cancel.set()
        else:
            self._cancel.clear()

    def cancel(self) -> None:
        """Ask the running turn to stop (it ends as interrupted)."""
        self._cancel.set()

    def pause(self, seconds: float) -> bool:
        """Wait ``seconds``; return True when cancelled (before or during the wait)."""
        if self._sleep is not None:
            self._sleep(seconds)
            return self.cancelled
        return self._cancel.wait(seconds)

    def emit(self, event: Any) -> None:
        """Pass ``event`` to ``on_event``."""
        if self.on_event is not None:
            self.on_event(event)

    def __repr__(self) -> str:
        return f"Interact(cancelled={self.cancelled})"
