"""LangChain 1.x's own middleware, run through Harpe's lifecycle.

The hooks are called as ``create_agent``'s loop calls them (langchain 1.5.2,
``langchain/agents/factory.py``): before every model call each middleware's ``before_model``
sees the agent state ``{"messages": [...]}`` and its update is merged with langgraph's
``add_messages`` reducer (a summary replaces the state: ``RemoveMessage(REMOVE_ALL_MESSAGES)``
then the new messages); then a ``ModelRequest`` (the state's messages, the system prompt as a
``SystemMessage``, the tool schemas) goes through the middlewares' ``wrap_model_call``, the
first outermost, and what reaches the innermost handler is the request, converted back to our
messages. The agent's model reply is not needed: the replay appends the recorded one.

* `summarization` — ``SummarizationMiddleware``, in a `MiddlewareContext` that keeps the
  agent state across requests (a fold rewrites it for good), the twin of
  `harpe_lab.strategies.langchain.Summarization`;
* `context_editing` — ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])``, as an
  edit policy (`MiddlewareEdit`, in `harpe_lab.strategies.editing.EditContext`), the twin
  of `harpe_lab.strategies.langchain.ClearToolUsesEdit`.

The summarizer is our distiller behind LangChain's own model interface: `DistillModel`, a
``BaseChatModel`` whose ``_generate`` converts the prompt LangChain sends back to a
`Rendered` and calls the distiller (through `MeteredDistill`, so its calls are reported). The
token counter LangChain is given is our counter on its messages converted back, so the peer
and the native twin count the same; ``DistillModel.get_num_tokens_from_messages`` does the
same with the system prompt and tools, for ``token_count_method="model"``.

Messages, ours → LangChain's, one per unit (see `harpe_lab.strategies.langchain`):
`UserInput` → ``HumanMessage(content=text)``; `AssistantMessage` → ``AIMessage(content=text,
tool_calls=[{"id", "name", "args"}])`` (arguments must be an object); each `ToolResult` →
``ToolMessage(content, tool_call_id, status)``. Each gets a unique ``id`` (as the
``add_messages`` reducer gives one). Back: the very object sent maps to the message it came
from; a copy (``deepcopy``, ``model_copy``) with the same ``id`` and the same fields maps to
it too; a changed one is rebuilt from its fields, with what LangChain never sees
(attachments of an untouched part, ``success``, ``pinned``) from the message it stands for;
one LangChain made up (the summary ``HumanMessage``) becomes a new message. With
``reported_usage`` a reply carries the usage the replay reported for it as ``usage_metadata``
(``response_metadata["model_provider"]`` the summarizing model's own ``ls_provider``), so
``SummarizationMiddleware``'s trigger on reported usage fires as in an agent; without it the
replies carry none and that path never fires, as in the native twin. Tested against
langchain 1.5.2, langchain-core 1.8.3, langgraph 1.2.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ..protocol import Compaction, ContextCompacted, Distill, DistillCall, EventHub, Limit, MeteredDistill
from ..strategies._lifecycle import PolicyLifecycle
from ..strategies.editing import EditContext
from ..strategies.langchain import ClearToolUsesEdit, Splitter, Summarization, regroup

try:
    from langchain.agents.middleware import ClearToolUsesEdit as _LCClearToolUsesEdit
    from langchain.agents.middleware import ContextEditingMiddleware, SummarizationMiddleware
    from langchain.agents.middleware.types import AgentMiddleware, ModelRequest, ModelResponse
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult
    from langgraph.graph.message import add_messages
    from langgraph.runtime import Runtime
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "harpe_lab.peers.langchain runs LangChain's own middleware; install it with "
        "`pip install 'harpe_lab[peers]'` (or `pip install langchain`)"
    ) from exc

__all__ = [
    "DistillModel",
    "MiddlewareContext",
    "MiddlewareEdit",
    "summarization",
    "context_editing",
    "to_langchain",
]


def to_langchain(unit: Message, id: str | None = None, *, usage: Usage | None = None, provider: str = "") -> BaseMessage:
    """LangChain's message for one unit (a `ToolResults` must hold exactly one result); a
    reply with ``usage`` carries it as ``usage_metadata``, from ``provider``."""
    if isinstance(unit, UserInput):
        return HumanMessage(content=unit.text, id=id)
    if isinstance(unit, AssistantMessage):
        bad = next((c for c in unit.calls if not isinstance(c.input, dict)), None)
        if bad is not None:
            raise StrategyError(f"LangChain's tool calls take an object of arguments; call {bad.id!r} has {bad.input!r:.80}")
        calls = [{"id": c.id, "name": c.name, "args": c.input, "type": "tool_call"} for c in unit.calls]
        if usage is None:
            return AIMessage(content=unit.text, tool_calls=calls, id=id)
        meta = {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens}
        return AIMessage(content=unit.text, tool_calls=calls, id=id, usage_metadata=meta,
                         response_metadata={"model_provider": provider})
    if isinstance(unit, ToolResults) and len(unit.results) == 1:
        r = unit.results[0]
        return ToolMessage(content=r.content, tool_call_id=r.id, status="success" if r.success else "error", id=id)
    raise TypeError(f"not a harpe_lab unit (a message, or one tool result): {unit!r:.200}")


def _content(m: BaseMessage) -> str:
    return m.content if isinstance(m.content, str) else m.text


def _calls(m: AIMessage) -> tuple[ToolCall, ...]:
    return tuple(ToolCall(c.get("id") or "", c["name"], c.get("args", {})) for c in m.tool_calls)


class _Converter:
    """Units to LangChain's messages and back (see the module doc)."""

    def __init__(self) -> None:
        self._n = 0
        self._to: dict[int, tuple[Message, BaseMessage]] = {}
        # id(LangChain message) and its .id -> (that message, unit, original message)
        self._back: dict[int, tuple[BaseMessage, Message, Message]] = {}
        self._by_id: dict[str, tuple[BaseMessage, Message, Message]] = {}
        self._split = Splitter()
        self._made: dict[int, tuple[BaseMessage, Message, Any]] = {}

    def to(self, unit: Message, original: Message, *, usage: Usage | None = None, provider: str = "") -> BaseMessage:
        hit = self._to.get(id(unit))
        if hit is not None and hit[0] is unit:
            return hit[1]
        self._n += 1
        lc = to_langchain(unit, id=f"harpe-{self._n}", usage=usage, provider=provider)
        self._to[id(unit)] = (unit, lc)
        entry = (lc, unit, original)
        self._back[id(lc)] = entry
        self._by_id[lc.id] = entry  # type: ignore[index]
        return lc

    def all(self, messages: Iterable[Message], *, usage: Usage | None = None, provider: str = "") -> list[BaseMessage]:
        return [self.to(u, m, usage=usage, provider=provider) for m in messages for u in self._split(m)]

    def back(self, lc: BaseMessage) -> tuple[Message, Message | None]:
        """``(unit, original)`` for a LangChain message (``original`` ``None``: made up)."""
        hit = self._back.get(id(lc))
        if hit is not None and hit[0] is lc:
            return hit[1], hit[2]
        known = self._by_id.get(lc.id) if lc.id is not None else None
        if known is None:
            # made up by LangChain (a summary): one message per object while its content
            # stays (trim_messages edits a copy's content in place), so a summary that stays
            # in the state is the same message at every request
            made = self._made.get(id(lc))
            if made is not None and made[0] is lc and made[2] == lc.content:
                return made[1], None
            unit = _made_up(lc)
            self._made[id(lc)] = (lc, unit, lc.content)
            return unit, None
        sent, unit, original = known
        text = _content(lc)
        if isinstance(lc, HumanMessage) and isinstance(unit, UserInput):
            return (unit if text == unit.text else UserInput(text, (), unit.pinned)), original
        if isinstance(lc, AIMessage) and isinstance(unit, AssistantMessage):
            calls = _calls(lc)
            if text == unit.text and calls == unit.calls:
                return unit, original
            return AssistantMessage(text, calls, unit.pinned), original
        if isinstance(lc, ToolMessage) and isinstance(unit, ToolResults):
            r = unit.results[0]
            if lc.tool_call_id != r.id:
                raise StrategyError(f"LangChain changed the result for call {r.id!r} to {lc.tool_call_id!r}")
            if text == r.content:
                return unit, original
            return ToolResults((ToolResult(r.id, text, (), r.success),), unit.pinned), original
        raise StrategyError(f"LangChain turned a {type(sent).__name__} into a {type(lc).__name__}: {lc!r:.200}")

    def unit(self, lc: BaseMessage) -> Message:
        return self.back(lc)[0]


def _made_up(lc: BaseMessage) -> Message:
    if isinstance(lc, HumanMessage):
        return UserInput(_content(lc))
    if isinstance(lc, AIMessage):
        return AssistantMessage(_content(lc), _calls(lc))
    if isinstance(lc, ToolMessage):
        return ToolResults((ToolResult(lc.tool_call_id, _content(lc), (), lc.status != "error"),))
    raise StrategyError(f"LangChain returned a message harpe_lab cannot map back: {lc!r:.200}")


class _Count:
    """LangChain's ``token_counter``: our counter on the messages converted back."""

    def __init__(self, counter: Any, conv: _Converter) -> None:
        self.counter = counter
        self.conv = conv

    def __call__(self, messages: Sequence[Any]) -> int:
        unit = self.conv.unit
        return int(self.counter.count_rendered(Rendered("", tuple(unit(m) for m in messages))))


class DistillModel(BaseChatModel):
    """A LangChain chat model backed by a harpe_lab distiller and counter.

    ``_generate`` sends the messages LangChain gives it (system messages joined into the
    system prompt, the rest converted back) to ``distill`` and replies with its text
    (``""`` for ``None``). ``get_num_tokens_from_messages`` is ``counter.count_rendered`` of
    the same, with the tool schemas. ``profile`` holds ``max_input_tokens`` when known.
    """

    distill: Any = None
    counter: Any = None
    conv: Any = None

    @property
    def _llm_type(self) -> str:
        return "harpe-lab-distill"

    def _rendered(self, messages: Sequence[BaseMessage]) -> Rendered:
        system = "\n\n".join(_content(m) for m in messages if isinstance(m, SystemMessage))
        conv = self.conv or _Converter()
        return Rendered(system, tuple(conv.unit(m) for m in messages if not isinstance(m, SystemMessage)))

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        if self.distill is None:
            raise StrategyError("this DistillModel has no distiller: it can only count")
        reply = self.distill(self._rendered(messages))
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=reply or ""))])

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Sequence[Any] | None = None) -> int:
        if self.counter is None:
            raise StrategyError("this DistillModel has no counter")
        return int(self.counter.count_rendered(self._rendered(messages), tuple(tools or ())))


def _overrides(mw: Any, hook: str) -> bool:
    return getattr(type(mw), hook) is not getattr(AgentMiddleware, hook)


class _Agent:
    """One agent's model-call path: ``before_model`` hooks on a state, then the
    ``wrap_model_call`` chain around a handler that records the request."""

    def __init__(self, system: str, middleware: Sequence[Any], model: Any, tools: Sequence[Mapping[str, Any]]) -> None:
        for mw in middleware:
            if not isinstance(mw, AgentMiddleware):
                raise StrategyError(f"middleware must be LangChain AgentMiddleware objects, got {mw!r:.200}")
        self.middleware = tuple(middleware)
        self.model = model
        self.system_message = SystemMessage(content=system) if system else None
        self.tools = [dict(t) for t in tools]
        self.runtime = Runtime()
        self._before = [mw for mw in self.middleware if _overrides(mw, "before_model")]
        self._wrap = [mw for mw in self.middleware if _overrides(mw, "wrap_model_call")]

    def before_model(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        for mw in self._before:
            update = mw.before_model({"messages": messages}, self.runtime)
            if update and "messages" in update:
                messages = add_messages(messages, update["messages"])
        return messages

    def model_call(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        sent: list[Any] = []

        def innermost(request: Any) -> Any:
            sent.append(request)
            return ModelResponse(result=[AIMessage(content="")])

        call: Callable[[Any], Any] = innermost
        for mw in reversed(self._wrap):
            call = (lambda m, h: (lambda request: m.wrap_model_call(request, h)))(mw, call)
        call(ModelRequest(model=self.model, messages=list(messages), system_message=self.system_message,
                          tools=list(self.tools), tool_choice=None, state={"messages": messages},
                          runtime=self.runtime))
        request = sent[-1]
        if request.system_message is not self.system_message:
            raise StrategyError("a middleware changed the system prompt; harpe_lab's peer does not model that")
        return list(request.messages)


class MiddlewareContext(PolicyLifecycle):
    """Harpe's lifecycle over a LangChain agent state run through ``middleware``.

    Appended messages join the state (``add_messages``); `compact` runs the agent's model-call
    path and sends the request converted back. A fold (a ``before_model`` update that removes
    messages) that called the model is reported as `ContextCompacted`; `abort_turn` restores the state from before
    the turn plus its user input.
    """

    def __init__(self, system: str, middleware: Sequence[Any], *, model: Any, conv: _Converter,
                 tools: Sequence[Mapping[str, Any]] = (), limit: Limit | None = None,
                 events: EventHub | None = None, reported_usage: bool = False, name: str = "langchain") -> None:
        super().__init__(system, lambda messages: messages, limit=limit)
        self.reported_usage = reported_usage
        self._usage: Usage | None = None
        self._agent = _Agent(system, middleware, model, tools)
        self._provider = model._get_ls_params().get("ls_provider", "")  # what LangChain matches replies to
        self._conv = conv
        self._events = events or EventHub()
        self._distill_calls = 0
        self._events.subscribe(self._seen)
        self._lc: list[BaseMessage] = []
        self._mark: list[BaseMessage] = []
        self._input: list[BaseMessage] = []
        self.name = name

    @property
    def state(self) -> tuple[BaseMessage, ...]:
        """The agent state's messages, LangChain's own objects."""
        return tuple(self._lc)

    def subscribe(self, sink: Callable[[object], None]) -> None:
        self._events.subscribe(sink)

    def _seen(self, event: object) -> None:
        if isinstance(event, DistillCall):
            self._distill_calls += 1

    def begin_turn(self, input: UserInput) -> None:
        self._mark = list(self._lc)
        super().begin_turn(input)
        self._input = self._lc[len(self._mark):]

    def observe(self, usage: Usage) -> None:
        if self.reported_usage:
            self._usage = usage

    def _added(self, message: Message) -> None:
        usage = None
        if isinstance(message, AssistantMessage) and self._usage is not None:
            usage, self._usage = self._usage, None
        self._lc = add_messages(self._lc, self._conv.all([message], usage=usage, provider=self._provider))

    def _restored(self) -> None:
        self._lc = self._mark + self._input

    def compact(self) -> Compaction:
        before, calls = self._lc, self._distill_calls
        self._lc = self._agent.before_model(before)
        if self._lc is not before and self._distill_calls > calls:
            # a fold that called no model dropped its messages without summarizing them
            now = set(map(id, self._lc))
            gone = [m for m in before if id(m) not in now]
            if gone:
                self._events.emit(ContextCompacted(len(regroup([self._conv.back(m) for m in gone]))))
        sent = self._agent.model_call(self._lc)
        return self._request(regroup([self._conv.back(m) for m in sent]))

    def __repr__(self) -> str:
        return f"MiddlewareContext({self.name}, {len(self._lc)} messages in the state)"


class MiddlewareEdit:
    """An edit policy (`harpe_lab.strategies.editing`) that sends what stateless
    ``wrap_model_call`` middleware (context editing) makes of the whole transcript."""

    def __init__(self, system: str, middleware: Sequence[Any], *, model: Any, conv: _Converter,
                 tools: Sequence[Mapping[str, Any]] = ()) -> None:
        self._agent = _Agent(system, middleware, model, tools)
        if self._agent._before:
            raise StrategyError("MiddlewareEdit runs wrap_model_call only; a before_model hook changes the state: "
                                "use MiddlewareContext")
        self._conv = conv

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        sent = self._agent.model_call(self._conv.all(messages))
        return regroup([self._conv.back(m) for m in sent])

    def __repr__(self) -> str:
        return f"MiddlewareEdit({[type(m).__name__ for m in self._agent.middleware]})"


def _trigger(config: Summarization) -> list[Any]:
    return [c[0] if len(c) == 1 else dict(c) for c in config.trigger]


def summarization(system: str, config: Summarization, *, counter: Any, distill: Distill,
                  tools: Sequence[Mapping[str, Any]] = (), on_event: Callable[[object], None] | None = None
                  ) -> MiddlewareContext:
    """LangChain's ``SummarizationMiddleware`` with the knobs of the native ``config``: its
    model a `DistillModel` over ``distill`` (profile ``max_input_tokens`` =
    ``config.context_window``), its ``token_counter`` our ``counter``; declaring the native
    twin's `Limit`."""
    if not isinstance(config, Summarization):
        raise StrategyError(f"config must be a harpe_lab.strategies.langchain.Summarization, got {config!r}")
    conv = _Converter()
    events = EventHub(on_event)
    profile = {"max_input_tokens": config.context_window} if config.context_window is not None else None
    model = DistillModel(distill=MeteredDistill(distill, events), counter=counter, conv=conv, profile=profile)
    middleware = SummarizationMiddleware(
        model, trigger=_trigger(config), keep=config.keep, token_counter=_Count(counter, conv),
        summary_prompt=config.summary_prompt, trim_tokens_to_summarize=config.trim_tokens_to_summarize,
    )
    limit = config.context(system, counter=counter, distill=distill, tools=tools).limit
    return MiddlewareContext(system, [middleware], model=model, conv=conv, tools=tools, limit=limit, events=events,
                             reported_usage=config.reported_usage,
                             name=f"SummarizationMiddleware(trigger={_trigger(config)}, keep={config.keep})")


def context_editing(system: str, config: ClearToolUsesEdit, *, counter: Any,
                    tools: Sequence[Mapping[str, Any]] = ()) -> EditContext:
    """LangChain's ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])`` with the knobs of
    the native ``config``, counting with our ``counter`` (``token_counter=`` for
    ``token_count="messages"``, the model's ``get_num_tokens_from_messages`` for
    ``"model"``); declaring the native twin's `Limit`."""
    if not isinstance(config, ClearToolUsesEdit):
        raise StrategyError(f"config must be a harpe_lab.strategies.langchain.ClearToolUsesEdit, got {config!r}")
    conv = _Converter()
    model = DistillModel(counter=counter, conv=conv)
    edit = _LCClearToolUsesEdit(trigger=config.trigger, clear_at_least=config.clear_at_least, keep=config.keep,
                                clear_tool_inputs=config.clear_tool_inputs, exclude_tools=tuple(sorted(config.exclude_tools)),
                                placeholder=config.placeholder)
    if config.token_count == "model":
        middleware = ContextEditingMiddleware(edits=[edit], token_count_method="model")
    else:
        middleware = ContextEditingMiddleware(edits=[edit], token_counter=_Count(counter, conv))
    limit = config.context(system, counter=counter, tools=tools).limit
    return EditContext(system, MiddlewareEdit(system, [middleware], model=model, conv=conv, tools=tools), limit=limit)
