"""Harpe's ``Agent.ask`` loop: one turn of a context against a live model, with the
engine's retry policy, tools run in order, and the journal written as it goes."""

from __future__ import annotations

import contextvars
import inspect
import mimetypes
import os
import weakref
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..strategies.harpe import FullContext
from ..errors import AgentError
from ..journal import Journal, JsonlLogger, TurnData, TurnLog
from ..messages import AssistantMessage, Attachment, Message, Rendered, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ..models import classify, secrets_of
from ..protocol import DistillCall, ReportsEvents
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
)
from ._tools import _TOOL_LOGGER, Tool, _result_text, _toolbox

__all__ = ["ask", "answer_text", "retry_delay"]


def retry_delay(attempt: int) -> float:
    """Harpe's back-off before retry number ``attempt`` (1-based): 1, 2, 4, ... capped at 30 s."""
    return float(min(2 ** (attempt - 1), 30))


def _run_call(call: ToolCall, box: Mapping[str, Tool], log: "_Log") -> ToolResult:
    """Run one call; Harpe's texts for an unknown tool and a failing handler."""
    tool = box.get(call.name)
    if tool is None:
        return ToolResult(call.id, f"Unknown tool: {call.name}", success=False)
    arguments = call.input if isinstance(call.input, Mapping) else {"_raw": call.input}
    token = _TOOL_LOGGER.set(log.tool_logger(call.id))
    try:
        inspect.signature(tool.handler).bind(**arguments)
        value = tool.handler(**arguments)
        return ToolResult(call.id, _result_text(value))
    except Exception as exc:  # noqa: BLE001 - any handler failure becomes the model's result
        return ToolResult(call.id, f"The tool '{call.name}' failed: {str(exc) or type(exc).__name__}", success=False)
    finally:
        _TOOL_LOGGER.reset(token)


# --- the journal writer, or nothing ------------------------------------------------------------


class _Log:
    """The turn's journal writer; every method is a no-op without a logger."""

    def __init__(self, logger: JsonlLogger | None) -> None:
        self.turn = TurnLog(logger) if logger is not None else None

    def __getattr__(self, name: str) -> Any:
        turn = self.__dict__.get("turn")
        if turn is None:
            return _nothing
        return getattr(turn, name)

    def tool_logger(self, call_id: str) -> JsonlLogger | None:
        return self.turn.tool_logger(call_id) if self.turn is not None and call_id else None


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


# --- the engine --------------------------------------------------------------------------------


def _attachment(path: Any) -> Attachment:
    p = Path(os.fspath(path))
    if not p.is_file():
        raise AgentError(f"attachment {str(p)!r} is not a file; pass paths of existing files")
    mime = mimetypes.guess_type(p.name)[0] or "application/octet-stream"
    return Attachment(p.name, p.stat().st_size, mime, str(p.resolve()))


def _check_int(name: str, value: Any, low: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise AgentError(f"{name} must be an int >= {low}, got {value!r}")


class _Stopped(Exception):
    pass


class _GaveUp(Exception):
    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def _fetch(brain: Brain, rendered: Rendered, tools: Sequence[Mapping[str, Any]], *, max_retries: int,
           max_output_tokens: int, interact: Any, log: _Log) -> tuple[AssistantMessage, Usage]:
    """Harpe's ``fetchReply``: attempts with back-off; raises `_Stopped` or `_GaveUp`."""
    provider, model = brain.provider, brain.model_name
    secrets = secrets_of(brain.kwargs)
    attempt = 0
    while True:
        interact.emit(ModelRequestStarted(attempt, max_retries))
        log.model_sent(provider, model)
        try:
            reply, usage = brain.complete(rendered, tools=tools, max_output_tokens=max_output_tokens)
        except KeyboardInterrupt:
            interact.emit(ModelRequestEnded(attempt, False))
            raise _Stopped() from None
        except Exception as exc:  # noqa: BLE001 - every provider failure is classified below
            interact.emit(ModelRequestEnded(attempt, False))
            failure = classify(exc, secrets)
            detail, retryable = failure.detail, failure.transient
            log.model_failed(detail, provider=provider, model=model, retryable=retryable)
            if not retryable:
                log.model_gave_up(detail, retries=0)
                raise _GaveUp(detail) from None
            interact.emit(AssistantStreamReset())
            attempt += 1
            if attempt > max_retries:
                log.model_gave_up(detail, retries=max_retries)
                raise _GaveUp(detail) from None
            after = failure.retry_after
            delay = retry_delay(attempt) if after is None else after
            log.model_retried(detail, attempt=attempt, retry_in_seconds=delay)
            interact.emit(TransientError(detail, attempt, delay))
            try:
                if interact.pause(delay):
                    raise _Stopped()
            except KeyboardInterrupt:
                raise _Stopped() from None
            continue
        interact.emit(ModelRequestEnded(attempt, True))
        log.model_replied(provider, model)
        log.usage(usage)
        if interact.cancelled:  # the reply is discarded; its tokens were logged
            raise _Stopped()
        return reply, usage


def ask(
    message: str,
    *,
    brain: Brain,
    tools: Iterable[Any] = (),
    context: Any = None,
    logger: JsonlLogger | Journal | None = None,
    attachments: Iterable[Any] = (),
    max_tool_rounds: int = 50,
    max_retries: int = 4,
    max_output_tokens: int = 8192,
    interact: Any = None,
) -> TurnData:
    """Run one turn of Harpe's engine (``Agent.ask``) and return what it produced.

    ``context`` is any harpe_lab context (`FullContext`, `SummarizingContext`, ...); without
    one a fresh ``FullContext("")`` holds just this turn. ``tools`` are callables or `Tool`
    s. ``logger`` (a `JsonlLogger` or `Journal`) receives the turn's records inside its
    ``harpe.turn.id`` scope; inside a tool call the call's logger is used by default, so a
    subagent's turn nests. ``attachments`` are file paths (a missing file raises before
    anything is logged). ``interact`` (default `Interact()`) can cancel the turn, receives
    `TurnEvent` s and waits out retry delays.

    The result's ``outcome`` is ``"answered"`` (messages = the replies and tool results),
    ``"interrupted"`` (``interact.cancelled`` or Ctrl-C) or ``"failed"`` (``error`` = the
    model error's detail); the context is committed or aborted accordingly. Errors from
    the context itself (e.g. a distiller) propagate, with no terminator written — as in
    Harpe.
    """
    if not isinstance(message, str):
        raise AgentError(f"message must be a str, got {type(message).__name__}")
    if not isinstance(brain, Brain):
        raise AgentError(f"brain must be a Brain, e.g. Brain('openai/gpt-4o-mini'), got {brain!r}")
    _check_int("max_tool_rounds", max_tool_rounds, 0)
    _check_int("max_retries", max_retries, 0)
    _check_int("max_output_tokens", max_output_tokens, 1)
    box = _toolbox(tools)
    schemas = [t.schema for t in box.values()]
    interact = Interact() if interact is None else interact
    if not isinstance(interact, Interaction):
        raise AgentError(f"interact needs cancelled, pause(seconds) and emit(event), got {interact!r}")
    ctx = FullContext("") if context is None else context
    for method in ("begin_turn", "append", "compact", "observe", "commit_turn", "abort_turn"):
        if not callable(getattr(ctx, method, None)):
            raise AgentError(f"{type(ctx).__name__} is not a context: it has no {method}()")
    if isinstance(logger, Journal):
        logger = logger.logger
    if logger is None:
        logger = _TOOL_LOGGER.get()
    elif not isinstance(logger, JsonlLogger):
        raise AgentError(f"logger must be a JsonlLogger or a Journal, got {logger!r}")
    user = UserInput(message, tuple(_attachment(a) for a in attachments))

    log = _Log(logger)
    if isinstance(ctx, ReportsEvents):  # a context's events reach this turn's interact.emit too
        _listen(ctx)
    token = _INTERACT.set(interact)
    try:
        return _turn(user, brain, box, schemas, ctx, log, interact, max_tool_rounds, max_retries, max_output_tokens)
    finally:
        _INTERACT.reset(token)


_INTERACT: contextvars.ContextVar[Any] = contextvars.ContextVar("harpe_lab_interact", default=None)
_LISTENED: "weakref.WeakSet[Any]" = weakref.WeakSet()


def _forward(event: Any) -> None:
    interact = _INTERACT.get()
    # the engine's metering is not one of Harpe's turn events
    if interact is not None and not isinstance(event, DistillCall):
        interact.emit(event)


def _listen(ctx: Any) -> None:
    """Subscribe the forwarder once per context (``ask`` runs once per turn on the same one)."""
    try:
        if ctx in _LISTENED:
            return
        _LISTENED.add(ctx)
    except TypeError:
        raise AgentError(f"{type(ctx).__name__} reports events but cannot be weakly referenced; give it __weakref__")
    ctx.subscribe(_forward)


def _turn(user: UserInput, brain: Brain, box: Mapping[str, Tool], schemas: list[dict[str, Any]], ctx: Any,
          log: _Log, interact: Any, max_tool_rounds: int, max_retries: int,
          max_output_tokens: int) -> TurnData:
    def interrupted() -> TurnData:
        ctx.abort_turn()
        log.interrupted()
        return TurnData(input=user, outcome="interrupted")

    ctx.begin_turn(user)
    log.user(user)
    first = ctx.compact().rendered
    system, session = first.system, list(first.messages)  # the provider session
    produced: list[Message] = []
    rounds = 0
    while True:
        if interact.cancelled:
            return interrupted()
        offered: Sequence[Mapping[str, Any]] = schemas
        if rounds >= max_tool_rounds:
            offered = ()
            if rounds == max_tool_rounds and schemas:
                interact.emit(ToolBudgetReached(rounds))
        try:
            reply, usage = _fetch(brain, Rendered(system, tuple(session)), offered, max_retries=max_retries,
                                  max_output_tokens=max_output_tokens, interact=interact, log=log)
        except _Stopped:
            return interrupted()
        except _GaveUp as gave_up:
            ctx.abort_turn()
            log.failed(gave_up.detail)
            return TurnData(input=user, outcome="failed", error=gave_up.detail)
        ctx.observe(usage)
        ctx.append(reply)
        log.assistant(reply)
        produced.append(reply)
        session.append(reply)
        if not reply.calls:
            ctx.commit_turn()
            log.answered()
            return TurnData(input=user, messages=tuple(produced), outcome="answered")
        if reply.text.strip():
            interact.emit(AssistantText(reply.text))
        results: list[ToolResult] = []
        try:
            for call in reply.calls:
                if interact.cancelled:
                    break
                interact.emit(ToolStarted(call))
                result = _run_call(call, box, log)
                results.append(result)
                interact.emit(ToolFinished(call, result))
        except KeyboardInterrupt:
            return interrupted()
        if interact.cancelled:  # the round's results are not logged
            return interrupted()
        round_results = ToolResults(tuple(results))
        ctx.append(round_results)
        log.tool_results(round_results)
        produced.append(round_results)
        session.append(round_results)
        rounds += 1
        after = ctx.compact()
        if after.compacted:  # restart the provider session from the compacted rendering
            system, session = after.rendered.system, list(after.rendered.messages)


def answer_text(data: TurnData) -> str:
    """The text of the turn's last reply (``""`` when it produced none)."""
    for m in reversed(data.messages):
        if isinstance(m, AssistantMessage):
            return m.text
    return ""
