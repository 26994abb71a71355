"""AutoGen's model contexts run by autogen-core's own code, through Harpe's lifecycle.

`AutogenContext` holds one of autogen-core's ``ChatCompletionContext`` s (built by
`buffered`, `head_and_tail`, `token_limited`, or any zero-argument factory of your own),
adds each message as AutoGen's ``LLMMessage`` and, at every request, awaits its
``get_messages()`` and converts the answer back. Tested against autogen-core 0.7.5; the
native twins are in `harpe_lab.strategies.autogen`, whose module doc describes the message
mapping and the one post-processing step both sides share (`pair_up`: no orphaned call or
result, the newest message always sent).

Messages, ours → AutoGen's (the same object comes back, so the engine sees the originals):

* `UserInput` → ``UserMessage(content=text, source="user")`` (attachments are not sent);
* `AssistantMessage` without calls → ``AssistantMessage(content=text, source="assistant")``;
  with calls → ``content=[FunctionCall(id, json.dumps(input), name), ...]``,
  ``thought=text`` (``None`` when empty);
* `ToolResults` → one ``FunctionExecutionResultMessage`` of ``FunctionExecutionResult``
  (``call_id``, ``content``, ``name`` of the call, ``is_error = not success``).

A message AutoGen made up (`HeadAndTail`'s ``"Skipped N messages."``) comes back as a new
`UserInput`.

`CountingClient` is the model client `TokenLimitedChatCompletionContext` needs only to count:
``count_tokens(messages, tools)`` is our counter's price of those messages (converted back)
with the tool schemas — ``counter.count_rendered(Rendered("", messages), tools)`` — so AutoGen
and the native `harpe_lab.strategies.autogen.TokenLimited` measure the same; it cannot create.

AutoGen's API is async although nothing in these contexts awaits; each call runs on a fresh
event loop (``asyncio.run``), or on a worker thread's when one is already running (a notebook).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolCall, ToolResult, ToolResults, UserInput
from ..protocol import Compaction, Limit
from ..strategies._lifecycle import PolicyLifecycle
from ..strategies.autogen import TokenLimited, pair_up

try:
    from autogen_core import FunctionCall
    from autogen_core import models as _models
    from autogen_core import model_context as _model_context
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "harpe_lab.peers.autogen runs autogen-core's own model contexts; install it with "
        "`pip install harpe_lab[peers]` (or `pip install autogen-core`)"
    ) from exc

__all__ = [
    "AutogenContext",
    "CountingClient",
    "buffered",
    "head_and_tail",
    "token_limited",
    "to_autogen",
    "from_autogen",
    "from_autogen_any",
    "run",
]



def run(coro: Any) -> Any:
    """Run an AutoGen coroutine to its result, from sync code or inside a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


def to_autogen(message: Message, names: Mapping[str, str] | None = None) -> Any:
    """AutoGen's ``LLMMessage`` for one harpe_lab message. ``names`` maps a call id to its
    tool's name (AutoGen's results carry it; ``""`` when unknown)."""
    if isinstance(message, UserInput):
        return _models.UserMessage(content=message.text, source="user")
    if isinstance(message, AssistantMessage):
        if not message.calls:
            return _models.AssistantMessage(content=message.text, source="assistant")
        calls = [FunctionCall(id=c.id, arguments=json.dumps(c.input, ensure_ascii=False), name=c.name)
                 for c in message.calls]
        return _models.AssistantMessage(content=calls, thought=message.text or None, source="assistant")
    if isinstance(message, ToolResults):
        names = names or {}
        return _models.FunctionExecutionResultMessage(content=[
            _models.FunctionExecutionResult(content=r.content, name=names.get(r.id, ""), call_id=r.id,
                                            is_error=not r.success)
            for r in message.results
        ])
    raise TypeError(f"not a harpe_lab message: {message!r}")


def from_autogen(message: Any) -> Message:
    """A harpe_lab message for an ``LLMMessage`` AutoGen made up (it has no original):
    a text ``UserMessage`` becomes a `UserInput`; anything else is refused."""
    if isinstance(message, _models.UserMessage) and isinstance(message.content, str):
        return UserInput(message.content)
    raise StrategyError(f"autogen returned a message harpe_lab cannot map back: {message!r:.200}")


def _openai_tool(tool: Any) -> dict[str, Any]:
    schema = getattr(tool, "schema", tool)  # a Tool, or a ToolSchema dict
    return {"type": "function", "function": dict(schema)}


def _tool_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(tool, Mapping) or tool.get("type") != "function" or not isinstance(tool.get("function"), Mapping):
        raise StrategyError(f'tools must be OpenAI tool schemas {{"type": "function", "function": {{...}}}}, got {tool!r:.200}')
    return dict(tool["function"])


class _Converter:
    """Ours → AutoGen's and back, by identity: each message is converted once, and the
    AutoGen object maps back to the very message it came from."""

    def __init__(self) -> None:
        self._to: dict[int, tuple[Message, Any]] = {}
        self._back: dict[int, tuple[Any, Message]] = {}
        self._names: dict[str, str] = {}

    def to(self, m: Message) -> Any:
        hit = self._to.get(id(m))
        if hit is not None and hit[0] is m:
            return hit[1]
        if isinstance(m, AssistantMessage):
            self._names.update((c.id, c.name) for c in m.calls)
        llm = to_autogen(m, self._names)
        self._to[id(m)] = (m, llm)
        self._back[id(llm)] = (llm, m)
        return llm

    def back(self, llm: Any) -> Message:
        hit = self._back.get(id(llm))
        if hit is not None and hit[0] is llm:
            return hit[1]
        return from_autogen(llm)

    def back_all(self, llms: Iterable[Any]) -> tuple[Message, ...]:
        """`back` of each (inlined: AutoGen's token-limited context counts its whole list
        after every message it pops)."""
        get = self._back.get
        out = []
        for llm in llms:
            hit = get(id(llm))
            out.append(hit[1] if hit is not None and hit[0] is llm else from_autogen(llm))
        return tuple(out)


class CountingClient(_models.ChatCompletionClient):
    """A ``ChatCompletionClient`` that only counts, with a harpe_lab counter: what
    ``TokenLimitedChatCompletionContext`` calls. ``count_tokens(messages, tools)`` is
    ``counter.count_rendered(Rendered("", messages), tools)`` on the messages mapped back to
    ours; ``remaining_tokens`` is ``window - count_tokens`` (``window`` 0 when not given)."""

    def __init__(self, counter: Any, *, window: int = 0,
                 back: Callable[[Iterable[Any]], tuple[Message, ...]] | None = None) -> None:
        if not callable(getattr(counter, "count_rendered", None)):
            raise StrategyError(f"counter must be a harpe_lab token counter, got {counter!r}")
        self.counter = counter
        self.window = window
        self._back = back or (lambda llms: tuple(map(from_autogen_any, llms)))

    def count_tokens(self, messages: Sequence[Any], *, tools: Sequence[Any] = []) -> int:
        ours = self._back(messages)
        return int(self.counter.count_rendered(Rendered("", ours), tuple(_openai_tool(t) for t in tools)))

    def remaining_tokens(self, messages: Sequence[Any], *, tools: Sequence[Any] = []) -> int:
        return self.window - self.count_tokens(messages, tools=tools)

    async def create(self, *args: Any, **kwargs: Any) -> Any:
        raise StrategyError("CountingClient only counts tokens; it cannot call a model")

    def create_stream(self, *args: Any, **kwargs: Any) -> Any:
        raise StrategyError("CountingClient only counts tokens; it cannot call a model")

    async def close(self) -> None:
        pass

    def actual_usage(self) -> Any:
        return _models.RequestUsage(prompt_tokens=0, completion_tokens=0)

    def total_usage(self) -> Any:
        return _models.RequestUsage(prompt_tokens=0, completion_tokens=0)

    @property
    def capabilities(self) -> Any:  # deprecated in AutoGen, still abstract
        return {"vision": False, "function_calling": True, "json_output": False}

    @property
    def model_info(self) -> Any:
        return {"vision": False, "function_calling": True, "json_output": False, "family": "unknown",
                "structured_output": False}


def from_autogen_any(llm: Any) -> Message:
    """Any ``LLMMessage`` as a harpe_lab message, converted field by field (the inverse of
    `to_autogen`; tool names and a system message have no place and are dropped)."""
    if isinstance(llm, _models.AssistantMessage):
        if isinstance(llm.content, list):
            calls = tuple(ToolCall(c.id, c.name, json.loads(c.arguments) if c.arguments else {}) for c in llm.content)
            return AssistantMessage(llm.thought or "", calls)
        return AssistantMessage(llm.content)
    if isinstance(llm, _models.FunctionExecutionResultMessage):
        return ToolResults(tuple(ToolResult(r.call_id, r.content, success=not r.is_error) for r in llm.content))
    return from_autogen(llm)


class AutogenContext(PolicyLifecycle):
    """Harpe's lifecycle over an autogen-core ``ChatCompletionContext`` built by ``make``.

    Every appended message is added to AutoGen's context (``add_message``); `compact`
    awaits ``get_messages()``, maps the answer back to our messages and sends
    ``pair_up(answer, stored messages)`` with ``system``. `abort_turn` forgets the turn's
    messages but its user input, by clearing AutoGen's context and adding the rest again.
    ``compacted`` is ``True`` exactly when the request is not the previous one plus the
    messages appended since.
    """

    def __init__(self, system: str, make: Callable[[_Converter], Any], *, limit: Limit | None = None,
                 name: str = "autogen") -> None:
        super().__init__(system, self._paired, limit=limit)
        self.name = name
        self._conv = _Converter()
        self._ctx = make(self._conv)
        if not isinstance(self._ctx, _model_context.ChatCompletionContext):
            raise StrategyError(f"make must build an autogen_core ChatCompletionContext, got {self._ctx!r:.200}")
        self.last_selection: tuple[Message, ...] = ()
        """What AutoGen's ``get_messages()`` returned for the last request, as our messages."""

    @property
    def model_context(self) -> Any:
        """AutoGen's context object itself."""
        return self._ctx

    def select(self) -> tuple[Message, ...]:
        """What AutoGen's ``get_messages()`` returns now, as our messages (before `pair_up`)."""
        return self._conv.back_all(run(self._ctx.get_messages()))

    def _paired(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        self.last_selection = self.select()
        return pair_up(self.last_selection, messages)

    def _added(self, message: Message) -> None:
        run(self._ctx.add_message(self._conv.to(message)))

    def compact(self) -> Compaction:
        return self._request(self.policy(tuple(self._transcript)))

    def _restored(self) -> None:
        conv, ctx, messages = self._conv, self._ctx, list(self._transcript)

        async def reload() -> None:
            await ctx.clear()
            for m in messages:
                await ctx.add_message(conv.to(m))

        run(reload())

    def __repr__(self) -> str:
        return f"AutogenContext({self.name}, {len(self._transcript)} messages)"


def buffered(system: str = "", *, buffer_size: int) -> AutogenContext:
    """AutoGen's ``BufferedChatCompletionContext(buffer_size)``."""
    return AutogenContext(system, lambda conv: _model_context.BufferedChatCompletionContext(buffer_size=buffer_size),
                          name=f"BufferedChatCompletionContext(buffer_size={buffer_size})")


def head_and_tail(system: str = "", *, head_size: int, tail_size: int) -> AutogenContext:
    """AutoGen's ``HeadAndTailChatCompletionContext(head_size, tail_size)``."""
    return AutogenContext(
        system,
        lambda conv: _model_context.HeadAndTailChatCompletionContext(head_size=head_size, tail_size=tail_size),
        name=f"HeadAndTailChatCompletionContext(head_size={head_size}, tail_size={tail_size})",
    )


def token_limited(system: str = "", *, token_limit: int, counter: Any, tools: Iterable[Mapping[str, Any]] = ()
                  ) -> AutogenContext:
    """AutoGen's ``TokenLimitedChatCompletionContext(CountingClient(counter), token_limit=,
    tool_schema=)``, declaring the same `Limit` as the native
    ``TokenLimited(...).context(system)`` (``tools``: OpenAI tool schemas)."""
    tools = tuple(tools)
    schemas = [_tool_schema(t) for t in tools]
    limit = TokenLimited(token_limit=token_limit, counter=counter, tools=tools).context(system).limit

    def make(conv: _Converter) -> Any:
        client = CountingClient(counter, back=conv.back_all)
        return _model_context.TokenLimitedChatCompletionContext(client, token_limit=token_limit,
                                                                 tool_schema=schemas or None)

    return AutogenContext(system, make, limit=limit,
                          name=f"TokenLimitedChatCompletionContext(token_limit={token_limit})")
