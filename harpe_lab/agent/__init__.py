"""Live sessions: Harpe's ``Agent.ask`` loop run against a real model through litellm.

`ask` drives a context through one turn exactly as Harpe's engine does (specification
§4.2) and writes the journal as it goes::

    begin_turn(input) → log user → compact() → [model call → observe(usage) → append(reply)
        → run tools → append(results) → compact() (restart from it when it compacted)]*
        → commit_turn + answered | abort_turn + interrupted | abort_turn + failed(detail)

The provider session is modelled the way `harpe_lab.replay` models it: the rendering at
the turn start (or at the last compaction) plus every message appended since. So a
journal written here, replayed under the same context, yields the same requests.

Model calls go through `harpe_lab.models` with litellm's own retries switched off; the
engine's policy is the only one: transient errors (HTTP 5xx, 408, 429, timeouts, lost
connections) are retried after ``min(2 ** (attempt - 1), 30)`` seconds, or after the
``Retry-After`` the provider sent (uncapped), up to ``max_retries`` times; anything else
gives up at once. Each attempt is logged as Harpe logs it (``harpe.model.sent``,
``replied`` + ``harpe.metering.usage``, ``failed``, ``retried``, ``gaveUp``).

`chat` is the small driver around `ask`: it wraps each turn in the journal's
request/response bracket, resumes from the journal when it exists, and serves both a
notebook (``session.say(text)``) and the command line (``harpe-lab chat PATH --model M``).

Modules: ``_events`` (turn events, `Interact`), ``_tools`` (`Tool`), ``_brain`` (`Brain`,
the model through `harpe_lab.models`), ``_loop`` (`ask`), ``_session`` (`chat`). See
``docs/live.md``.
"""

from __future__ import annotations

from ..errors import AgentError
from ..protocol import ContextCompacted
from ._brain import Brain
from ._events import (
    AssistantStreamReset,
    AssistantText,
    Interact,
    Interaction,
    ModelRequestEnded,
    ModelRequestStarted,
    ToolBudgetReached,
    ToolFinished,
    ToolStarted,
    TransientError,
    TurnEvent,
)
from ._loop import answer_text, ask, retry_delay
from ._session import ChatSession, chat
from ._tools import Tool, current_logger

__all__ = [
    "AgentError",
    "Brain",
    "Tool",
    "ask",
    "chat",
    "ChatSession",
    "answer_text",
    "current_logger",
    "Interact",
    "Interaction",
    "TurnEvent",
    "ModelRequestStarted",
    "ModelRequestEnded",
    "AssistantStreamReset",
    "TransientError",
    "ToolBudgetReached",
    "AssistantText",
    "ToolStarted",
    "ToolFinished",
    "ContextCompacted",
    "retry_delay",
]
