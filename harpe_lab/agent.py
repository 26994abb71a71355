"""Live sessions: Harpe's ``Agent.ask`` loop run against a real model through litellm.

`ask` drives a context through one turn exactly as Harpe's engine does (specification
§4.2) and writes the journal as it goes::

    begin_turn(input) → log user → compact() → [model call → observe(usage) → append(reply)
        → run tools → append(results) → compact() (restart from it when it compacted)]*
        → commit_turn + answered | abort_turn + interrupted | abort_turn + failed(detail)

The provider session is modelled the way `harpe_lab.replay` models it: the rendering at
the turn start (or at the last compaction) plus every message appended since. So a
journal written here, replayed under the same context, yields the same requests.

Model calls go through ``litellm.completion`` with litellm's own retries switched off; the
engine's policy is the only one: transient errors (HTTP 5xx, 408, 429, timeouts, lost
connections) are retried after ``min(2 ** (attempt - 1), 30)`` seconds, or after the
``Retry-After`` the provider sent (uncapped), up to ``max_retries`` times; anything else
gives up at once. Each attempt is logged as Harpe logs it (``harpe.model.sent``,
``replied`` + ``harpe.metering.usage``, ``failed``, ``retried``, ``gaveUp``).

`chat` is the small driver around `ask`: it wraps each turn in the journal's
request/response bracket, resumes from the journal when it exists, and serves both a
notebook (``session.say(text)``) and the command line (``harpe-lab chat PATH --model M``).
See ``docs/live.md``.
"""

from __future__ import annotations

import collections.abc
import contextvars
import inspect
import json
import mimetypes
import os
import re
import threading
import types
import typing
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Mapping, Protocol, Sequence, Union, runtime_checkable

from .context import FullContext
from .protocol import ContextCompacted, DistillCall, ReportsEvents
from .errors import AgentError
from .journal import Journal, JsonlLogger, TurnData, TurnLog
from .models import classify, reply_of, route, secrets_of, send, usage_of
from .messages import (
    AssistantMessage,
    Attachment,
    Message,
    Rendered,
    ToolCall,
    ToolResult,
    ToolResults,
    Usage,
    UserInput,
    strip_harpe_keys,
    to_openai,
)

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


# --- tools -----------------------------------------------------------------------------------

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARGS_HEADER = re.compile(r"^(\s*)(Args|Arguments|Parameters|Params):\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _json_schema(annotation: Any, where: str) -> dict[str, Any]:
    """The JSON schema of one parameter annotation."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation is type(None):
        return {"type": "null"}
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        kinds = {_SIMPLE.get(type(v)) for v in args}
        schema: dict[str, Any] = {"enum": list(args)}
        if len(kinds) == 1 and None not in kinds:
            schema = {"type": kinds.pop(), **schema}
        return schema
    if origin is Union or origin is types.UnionType:
        options = [a for a in args if a is not type(None)]
        inner = [_json_schema(a, where) for a in options]
        schema = inner[0] if len(inner) == 1 else {"anyOf": inner}
        if len(options) < len(args):  # Optional[X]: the model may send null
            return {"anyOf": [*(schema["anyOf"] if "anyOf" in schema else [schema]), {"type": "null"}]}
        return schema
    if annotation in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset,
                                                                 collections.abc.Sequence, collections.abc.Iterable):
        schema = {"type": "array"}
        item_args = [a for a in args if a is not Ellipsis]
        if len(set(item_args)) == 1:
            schema["items"] = _json_schema(item_args[0], where)
        return schema
    if annotation is dict or origin in (dict, collections.abc.Mapping):
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = _json_schema(args[1], where)
        return schema
    raise AgentError(
        f"{where}: cannot describe the annotation {annotation!r} as JSON; use str, int, float, bool, "
        "list[...], dict[str, ...], Optional[...] or Literal[...], or give Tool(parameters=...) a schema"
    )


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {param: doc}) from a docstring: the first paragraph, and the entries
    of a Google-style ``Args:`` section."""
    lines = doc.splitlines()
    first: list[str] = []
    for line in lines:
        if not line.strip():
            if first:
                break
            continue
        if _ARGS_HEADER.match(line):
            break
        first.append(line.strip())
    params: dict[str, str] = {}
    for i, line in enumerate(lines):
        header = _ARGS_HEADER.match(line)
        if not header:
            continue
        base = len(header.group(1))
        entry_indent: int | None = None
        current: str | None = None
        for body in lines[i + 1:]:
            if not body.strip():
                continue
            indent = len(body) - len(body.lstrip())
            if indent <= base:
                break  # the next section
            if entry_indent is None:
                entry_indent = indent
            m = _ARG_LINE.match(body.strip())
            if indent == entry_indent and m:
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current is not None:
                params[current] = (params[current] + " " + body.strip()).strip()
        break
    return " ".join(first), params


@dataclass(frozen=True)
class Tool:
    """A tool the model may call: a Python callable and the schema that describes it.

    Build one with `Tool.from_function` (or pass the plain function to `ask`): the name is
    the function's, the description the docstring's first paragraph, and the parameters'
    JSON schema comes from the signature — annotations (str, int, float, bool, list, dict,
    Optional, Literal), defaults (a parameter with a default is optional) and the
    docstring's ``Args:`` section.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Callable[..., Any] = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.fullmatch(self.name):
            raise AgentError(
                f"a tool name is 1-64 letters, digits, '_' or '-' (the providers' rule), got {self.name!r}; "
                "pass name=... to Tool.from_function"
            )
        if not callable(self.handler):
            raise AgentError(f"tool {self.name!r}: the handler must be callable, got {self.handler!r}")
        if inspect.iscoroutinefunction(self.handler):
            raise AgentError(f"tool {self.name!r} is async; ask runs tools synchronously — wrap it, "
                             "e.g. lambda **kw: asyncio.run(f(**kw))")
        if not isinstance(self.parameters, Mapping) or self.parameters.get("type") != "object":
            raise AgentError(f"tool {self.name!r}: parameters must be a JSON schema of type 'object', "
                             f"got {self.parameters!r}")

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None,
                      description: str | None = None) -> "Tool":
        """Describe ``fn`` as a tool (see the class docstring)."""
        if isinstance(fn, Tool):
            return fn
        if not callable(fn):
            raise AgentError(f"a tool is a callable or a Tool, got {fn!r}")
        tool_name = name or getattr(fn, "__name__", "")
        where = f"tool {tool_name!r}"
        doc_text, param_docs = _parse_docstring(inspect.getdoc(fn) or "")
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise AgentError(f"{where}: cannot read its signature ({exc}); wrap it in a def") from None
        try:
            hints = typing.get_type_hints(fn)
        except Exception as exc:  # an annotation that names something undefined
            raise AgentError(f"{where}: cannot resolve its annotations ({exc})") from None
        properties: dict[str, Any] = {}
        required: list[str] = []
        for p in signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.kind is p.POSITIONAL_ONLY:
                raise AgentError(f"{where}: parameter {p.name!r} is positional-only; the model passes "
                                 "arguments by name")
            schema = dict(_json_schema(hints.get(p.name, p.annotation), f"{where}, parameter {p.name!r}"))
            if p.name in param_docs:
                schema["description"] = param_docs[p.name]
            if p.default is p.empty:
                required.append(p.name)
            elif _is_json(p.default) and p.default is not None:
                schema["default"] = p.default
            properties[p.name] = schema
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
        return cls(name=tool_name, description=description if description is not None else doc_text,
                   parameters=parameters, handler=fn)

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry offered to the model."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = json.loads(json.dumps(self.parameters))
        return {"type": "function", "function": function}

    def __call__(self, **arguments: Any) -> Any:
        return self.handler(**arguments)


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _toolbox(tools: Iterable[Any]) -> dict[str, Tool]:
    box: dict[str, Tool] = {}
    if isinstance(tools, (str, bytes)) or callable(tools):
        raise AgentError(f"tools must be a sequence of callables or Tools, got {tools!r}; "
                         "wrap a single tool in a list")
    for t in tools:
        tool = Tool.from_function(t)
        if tool.name in box:
            raise AgentError(f"two tools are named {tool.name!r}; give one another name with "
                             "Tool.from_function(f, name=...)")
        box[tool.name] = tool
    return box


def _result_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


# Inside a tool call, the logger scoped to it: a subagent's `ask` run by the tool writes
# its turn there (nested under ``harpe.tools.call=ID``) without being told.
_TOOL_LOGGER: contextvars.ContextVar[JsonlLogger | None] = contextvars.ContextVar("harpe_lab_tool_logger",
                                                                                   default=None)


def current_logger() -> JsonlLogger | None:
    """The journal logger of the tool call running now (``None`` outside a logged tool
    call). `ask` uses it when given no logger, so subagent turns nest in the journal."""
    return _TOOL_LOGGER.get()


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


# --- the model -------------------------------------------------------------------------------

_RESERVED = ("model", "messages", "tools", "max_tokens", "num_retries", "max_retries", "stream")


class Brain:
    """A model reached through litellm: ``Brain("openai/gpt-4o-mini", api_key=...)``.

    ``litellm_kwargs`` go to every ``litellm.completion`` call (``api_base``, ``api_key``,
    ``temperature``, ``timeout``, ...). Retries are the engine's (`ask`'s ``max_retries``),
    so litellm's and the OpenAI client's are switched off. The API key is never logged
    nor shown in ``repr``.
    """

    def __init__(self, model: str, **litellm_kwargs: Any) -> None:
        if not isinstance(model, str) or not model.strip():
            raise AgentError(f"model must be a litellm model name such as 'openai/gpt-4o-mini', got {model!r}")
        bad = [k for k in litellm_kwargs if k in _RESERVED]
        if bad:
            raise AgentError(
                f"Brain does not take {', '.join(sorted(bad))}: the model is the first argument, messages "
                "and tools come from ask, max_tokens is ask(max_output_tokens=...), retries are "
                "ask(max_retries=...), and replies are not streamed"
            )
        self.model = model
        self.kwargs = dict(litellm_kwargs)
        self._provider: tuple[str, str] | None = None

    @property
    def provider(self) -> str:
        """The provider litellm routes to (``"openai"``, ``"anthropic"``, ...)."""
        return self._route()[0]

    @property
    def model_name(self) -> str:
        """The model name without the provider prefix, as Harpe logs it."""
        return self._route()[1]

    def _route(self) -> tuple[str, str]:
        if self._provider is None:
            self._provider = route(self.model, api_base=self.kwargs.get("api_base"),
                                   custom_llm_provider=self.kwargs.get("custom_llm_provider"))
        return self._provider

    def complete(self, rendered: Rendered, *, tools: Sequence[Mapping[str, Any]] = (),
                 max_output_tokens: int = 8192) -> tuple[AssistantMessage, Usage]:
        """One model call: send ``rendered`` (and ``tools``), return the reply and its usage
        (zeros when the provider reported none). litellm's exceptions propagate; `ask`
        classifies them (`harpe_lab.models.classify`)."""
        response = send(self.model, strip_harpe_keys(to_openai(rendered)), tools=tools,
                        max_tokens=max_output_tokens, **self.kwargs)
        model = str(getattr(response, "model", "") or self.model_name)
        usage = usage_of(response, provider=self.provider, model=model)
        return reply_of(response), usage or Usage(0, provider=self.provider, model=model)

    def _secrets(self) -> list[str]:
        """Credentials that must never reach a journal (`harpe_lab.models.secrets_of`)."""
        return secrets_of(self.kwargs)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={'***' if str(v) in self._secrets() else v!r}" for k, v in self.kwargs.items())
        return f"Brain({self.model!r}{', ' + shown if shown else ''})"


def retry_delay(attempt: int) -> float:
    """Harpe's back-off before retry number ``attempt`` (1-based): 1, 2, 4, ... capped at 30 s."""
    return float(min(2 ** (attempt - 1), 30))


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
    secrets = brain._secrets()
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


# --- the driver ------------------------------------------------------------------------------


ContextFactory = Callable[[list], Any]


class ChatSession:
    """A chat bound to a journal file: each `say` is one bracketed turn.

    Made by `chat`; use as a context manager or call `close` to close the journal.
    ``context`` is the live context (resumed from the journal), ``turns`` what each `say`
    returned in this session.
    """

    def __init__(self, path: Path, brain: Brain, context: Any, tools: dict[str, Tool], interact: Any,
                 options: dict[str, Any], resumed: int) -> None:
        self.path = path
        self.brain = brain
        self.context = context
        self.interact = interact
        self.resumed = resumed
        """Messages of history read back from the journal when the session started."""
        self.turns: list[TurnData] = []
        self._tools = list(tools.values())
        self._options = options
        self._logger = JsonlLogger(path)
        self._journal = Journal(self._logger)

    def say(self, text: str, *, attachments: Iterable[Any] = ()) -> TurnData:
        """Ask one turn, bracketed in the journal (request ``{"text": text}``, response
        ``"turnEnd"``), and return its `TurnData`."""
        if not isinstance(text, str):
            raise AgentError(f"say takes the user's text as a str, got {type(text).__name__}")
        if self._logger.closed:
            raise AgentError(f"the chat on {str(self.path)!r} is closed; start a new one with chat(...)")
        self.interact.cancelled = False  # a Ctrl-C of the previous turn does not cancel this one
        self._journal.request({"text": text})
        try:
            data = ask(text, brain=self.brain, tools=self._tools, context=self.context, logger=self._logger,
                       attachments=attachments, interact=self.interact, **self._options)
        finally:
            # the bracket closes even when ask raised: Harpe reads such a turn as interrupted
            self._journal.response("turnEnd")
        self.turns.append(data)
        return data

    def close(self) -> None:
        """Close the journal file."""
        self._logger.close()

    def __enter__(self) -> "ChatSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChatSession({str(self.path)!r}, {self.brain!r}, {len(self.turns)} turns)"


def chat(
    path: Any,
    *,
    brain: Brain,
    context: ContextFactory | Any = None,
    tools: Iterable[Any] = (),
    input: Iterable[str] | None = None,
    output: Callable[[str], Any] | None = None,
    interact: Any = None,
    **options: Any,
) -> ChatSession:
    """A chat session writing the journal at ``path``, resumed when the file exists.

    ``context`` is a factory taking the resumed history (`Journal.load` of the file, ``[]``
    for a new one) and returning the context, e.g. ``lambda history: FullContext(system,
    history)``; default ``FullContext("", history)``. A ready context object is accepted
    only for a new journal (there is nothing to resume into it).

    In a notebook: ``session = chat(path, brain=...)`` then ``session.say("hi")``. With
    ``input`` (lines, e.g. ``sys.stdin``), each non-blank line is said in turn and
    ``output`` (default ``print``) gets the answer, ``[interrupted]`` or ``[failed: ...]``.
    ``options`` go to `ask` (``max_tool_rounds``, ``max_retries``, ``max_output_tokens``).
    """
    if not isinstance(brain, Brain):
        raise AgentError(f"brain must be a Brain, e.g. Brain('openai/gpt-4o-mini'), got {brain!r}")
    unknown = set(options) - {"max_tool_rounds", "max_retries", "max_output_tokens"}
    if unknown:
        raise AgentError(f"chat passes only max_tool_rounds, max_retries and max_output_tokens to ask, "
                         f"got {', '.join(sorted(unknown))}")
    p = Path(os.fspath(path))
    history: list[Message] = Journal.load(p) if p.is_file() and p.stat().st_size else []
    if context is None:
        ctx = FullContext("", history)
    elif callable(getattr(context, "begin_turn", None)):
        if history:
            raise AgentError(
                f"{str(p)!r} holds {len(history)} messages to resume, but a ready context cannot take them; "
                "pass a factory instead, e.g. context=lambda history: FullContext(system, history)"
            )
        ctx = context
    elif callable(context):
        ctx = context(history)
    else:
        raise AgentError(f"context must be a factory taking the resumed history, got {context!r}")
    session = ChatSession(p, brain, ctx, _toolbox(tools), Interact() if interact is None else interact,
                          options, len(history))
    if input is not None:
        show = print if output is None else output
        try:
            for line in input:
                text = line.rstrip("\r\n")
                if not text.strip():
                    continue
                data = session.say(text)
                if data.outcome == "answered":
                    show(answer_text(data))
                elif data.outcome == "failed":
                    show(f"[failed: {data.error}]")
                else:
                    show("[interrupted]")
        except BaseException:
            session.close()
            raise
    return session
