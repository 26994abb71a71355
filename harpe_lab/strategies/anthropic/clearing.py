"""Tool-result clearing: Anthropic's context editing strategy ``clear_tool_uses_20250919``.

Source read: Anthropic's documentation page "Context editing"
(https://platform.claude.com/docs/en/build-with-claude/context-editing, beta header
``context-management-2025-06-27``; the version that lists Claude Opus 4.6), its table
"Configuration options for tool result clearing", and the Anthropic SDKs' type docs for
``BetaClearToolUses20250919Edit`` (``clear_tool_inputs``: a bool, or the tool names whose
inputs to clear). The API applies the edit server-side to each request, from the full
history the client sends; nothing is remembered between requests. As documented:

* ``trigger`` (default 100,000 input tokens): "once the prompt exceeds this threshold,
  clearing will begin" — the request's input tokens, system prompt and tool schemas
  included, before any edit;
* ``keep`` (default 3 tool uses): "how many recent tool use/result pairs to keep after
  clearing occurs. The API removes the oldest tool interactions first";
* ``clear_at_least`` (default none): "if the API can't clear at least the specified amount,
  the strategy will not be applied";
* ``exclude_tools`` (default none): "tool names whose tool uses and results should never be
  cleared";
* ``clear_tool_inputs`` (default false): also clear the tool call's parameters.

Each cleared result "is replaced with placeholder text so Claude knows it was removed"; the
documentation does not give the text, so ``placeholder`` defaults to ``"[cleared]"``, the
text of LangChain's mirror of this strategy (``ClearToolUsesEdit``,
langchain-ai/langchain ``libs/langchain_v1/langchain/agents/middleware/context_editing.py``
at 03373459), which also gave the choices the documentation leaves open: a tool use is one
call and its result (so a round of parallel calls is several); the newest ``keep`` tool
uses of *any* tool are kept, excluded tools counting among them; a cleared input becomes
``{}``. Where LangChain differs from the documentation, this follows the documentation:
LangChain stops clearing as soon as ``clear_at_least`` tokens are cleared, and clears
whatever it can when that is fewer. The ``tool_uses`` kind of trigger is not modelled.

Because the edit is recomputed at every request above the trigger, each new tool use pushes
one more old result out: the prefix (and the provider's prompt cache) changes at almost every
request once the trigger is passed — what ``clear_at_least`` is there to ration.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, Rendered, ToolCall, ToolResult, ToolResults
from ...protocol import Limit
from ...tokens import prices_by_parts
from ..editing import EditContext, Edits, edited_by
from .._validate import check_counter, check_int
from .._preset import Factory, Knob, Preset

__all__ = ["ClearToolUses", "DEFAULT_PLACEHOLDER", "Priced", "PRESETS"]

DEFAULT_PLACEHOLDER = "[cleared]"
"""LangChain's placeholder for a cleared result (Anthropic does not document its own)."""



def _names(name: str, value: object) -> frozenset[str]:
    if isinstance(value, str) or isinstance(value, (bytes, bytearray)) or not isinstance(value, Iterable):
        raise StrategyError(f"{name} must be an iterable of tool names, got {value!r}")
    names = frozenset(value)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise StrategyError(f"{name} must hold tool names (str), got {bad[0]!r}")
    return names


@dataclass(frozen=True, kw_only=True)
class ClearToolUses:
    """Anthropic's ``clear_tool_uses_20250919``: above ``trigger`` input tokens, replace all
    but the newest ``keep`` tool results with ``placeholder``.

    An edit policy (see `harpe_lab.strategies.editing`) that needs the request's size: call
    it as ``clear(messages, tokens=price)`` where ``price(messages)`` is the input tokens of
    a request carrying ``messages`` (`Priced` binds one; `context` builds it from a
    counter). Call ids and the calls' names never change.
    """

    trigger: int = 100_000
    """Input tokens; the edit applies to a request above this."""
    keep: int = 3
    """The newest tool uses (call and result) kept verbatim."""
    clear_at_least: int = 0
    """Tokens an edit must free, else the request is sent unedited (0: any amount)."""
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    """Tools whose uses are never cleared."""
    clear_tool_inputs: bool | frozenset[str] = False
    """Also replace a cleared use's call input by ``{}``: ``True`` for every tool, or the
    names of the tools whose inputs to clear."""
    placeholder: str = DEFAULT_PLACEHOLDER
    """The text a cleared result carries."""

    def __post_init__(self) -> None:
        check_int("trigger", self.trigger, 0)
        check_int("keep", self.keep, 0)
        check_int("clear_at_least", self.clear_at_least, 0)
        object.__setattr__(self, "exclude_tools", _names("exclude_tools", self.exclude_tools))
        if not isinstance(self.clear_tool_inputs, bool):
            object.__setattr__(self, "clear_tool_inputs", _names("clear_tool_inputs", self.clear_tool_inputs))
        if not isinstance(self.placeholder, str):
            raise StrategyError(f"placeholder must be a str, got {self.placeholder!r}")

    def __call__(self, messages: Sequence[Message], *, tokens: Callable[[Sequence[Message]], int]) -> tuple[Message, ...]:
        """The edit of ``messages``, ``tokens`` pricing a request carrying a list of them."""
        return edited_by(_Clearer(self, tokens), messages)

    def context(self, base_system: str, *, counter: Any, tools: Sequence[Mapping[str, Any]] = ()) -> EditContext:
        """A fresh lifecycle context that sends this edit applied to the whole transcript,
        pricing each request as the provider would — ``counter.count_rendered`` of the system
        prompt, the messages and the ``tools`` schemas — and declaring ``trigger`` as a
        ``"high_water"`` `Limit` (a request whose cleared form is still above it goes out)."""
        check_counter(counter)
        price = _RequestPrice(counter, base_system, tuple(tools))
        return EditContext(base_system, Priced(self, price), limit=Limit(tokens=self.trigger, kind="high_water"))


@dataclass(frozen=True)
class Priced(Edits):
    """``clear`` bound to a request price: a one-argument edit policy for `EditContext`.
    ``price(messages)`` is the input tokens of a request carrying ``messages``."""

    clear: ClearToolUses
    price: Callable[[Sequence[Message]], int]

    def incremental(self) -> "_Clearer":
        """This policy's editor (`harpe_lab.strategies.editing`); when the price is a sum
        over the messages (a counter that `prices_by_parts`), it keeps that sum as they come
        instead of pricing the whole request each time."""
        price = self.price
        if isinstance(price, _RequestPrice) and prices_by_parts(price.counter):
            fixed = int(price.counter.count_rendered(Rendered(price.system, ()), price.tools))
            return _Clearer(self.clear, price, fixed=fixed, count=price.counter.count_message)
        return _Clearer(self.clear, price)


@dataclass(frozen=True)
class _RequestPrice:
    counter: Any
    system: str
    tools: tuple[Mapping[str, Any], ...]

    def __call__(self, messages: Sequence[Message]) -> int:
        return int(self.counter.count_rendered(Rendered(self.system, tuple(messages)), self.tools))


def _clears_input(clear: ClearToolUses, name: str) -> bool:
    inputs = clear.clear_tool_inputs
    return inputs if isinstance(inputs, bool) else name in inputs


class _Clearer:
    """`ClearToolUses` over messages that only grow: the policy's one implementation.

    The uses to clear are the oldest ones but the newest ``keep``, of tools not excluded
    (by the name the request's last call of that id gives), so what is *planned* — the edit
    if it applies — only grows at its end: each call plans the uses the ``keep`` newest left
    behind since the last. A use plans its result's placeholder (unless the result already
    is one) and, with ``clear_tool_inputs``, ``{}`` for the inputs of the calls answered in
    the reply right before its results. The plan is sent while the request is above the
    trigger and it frees at least ``clear_at_least`` tokens; when that flips, every planned
    message flips with it. A later call renaming the id of a use already seen (an excluded
    tool may be involved) plans again from the start. A decision is, for a results message,
    the indices of its results that become the placeholder; for a reply, the ids of the
    calls whose input becomes ``{}``.

    The request is priced by ``tokens`` (the whole list of messages), or, given ``count``,
    as ``fixed`` plus each message's ``count``: a running sum, and each planned message's
    saving priced once."""

    def __init__(self, clear: ClearToolUses, tokens: Callable[[Sequence[Message]], int], *,
                 fixed: int = 0, count: Callable[[Message], int] | None = None) -> None:
        self.clear = clear
        self.tokens = tokens
        self.count = count
        self.total = fixed  # the running price, when ``count`` is given
        self.names: dict[str, str] = {}
        self.uses: list[tuple[int, int]] = []
        self.result_ids: set[str] = set()
        self.planned_uses = 0  # uses[:planned_uses] are planned
        self.plan: dict[int, frozenset] = {}  # message index -> its decision
        self.freed: dict[int, int] = {}  # message index -> tokens its edit frees (with ``count``)
        self.applied = False

    def _placeholder(self, r: ToolResult) -> ToolResult:
        return ToolResult(r.id, self.clear.placeholder, (), r.success)

    def build(self, message: Message, decision: object) -> Message:
        m = message
        assert isinstance(decision, frozenset)
        if isinstance(m, AssistantMessage):
            clear = self.clear
            return AssistantMessage(m.text, tuple(
                ToolCall(c.id, c.name, {}) if c.id in decision and _clears_input(clear, c.name) else c
                for c in m.calls
            ), m.pinned)
        assert isinstance(m, ToolResults)
        return ToolResults(tuple(self._placeholder(r) if j in decision else r for j, r in enumerate(m.results)),
                           m.pinned)

    def _replan(self, messages: Sequence[Message], upto: int, changed: set[int]) -> None:
        """Plan ``uses[:upto]`` (those before ``planned_uses`` are planned already)."""
        clear = self.clear
        names = self.names
        inputs = clear.clear_tool_inputs
        touched: dict[int, set] = {}
        for i, j in self.uses[self.planned_uses : upto]:
            r = messages[i].results[j]  # type: ignore[union-attr]
            if names.get(r.id) in clear.exclude_tools:
                continue
            if r != self._placeholder(r):
                touched.setdefault(i, set(self.plan.get(i, ()))).add(j)
            call = messages[i - 1] if inputs and i > 0 else None
            if isinstance(call, AssistantMessage):
                for c in call.calls:
                    if c.id == r.id and _clears_input(clear, c.name) and ToolCall(c.id, c.name, {}) != c:
                        touched.setdefault(i - 1, set(self.plan.get(i - 1, ()))).add(c.id)
        self.planned_uses = upto
        for i, js in touched.items():
            decision = frozenset(js)
            self.plan[i] = decision
            if clear.clear_at_least and self.count is not None:
                m = messages[i]
                self.freed[i] = self.count(m) - self.count(self.build(m, decision))
            changed.add(i)

    def _frees(self, messages: Sequence[Message], before: int) -> int:
        """Tokens the plan frees from a request of ``before`` tokens."""
        if self.count is not None:
            return sum(self.freed.values())
        plan = self.plan
        edited = tuple(m if k not in plan else self.build(m, plan[k]) for k, m in enumerate(messages))
        return before - self.tokens(edited)

    def extend(self, messages: Sequence[Message], start: int) -> list[tuple[int, object]]:
        clear = self.clear
        names = self.names
        renamed = False
        count = self.count
        for i in range(start, len(messages)):
            m = messages[i]
            if count is not None:
                self.total += count(m)
            if isinstance(m, AssistantMessage):
                for c in m.calls:
                    if not renamed and c.id in self.result_ids and names.get(c.id) != c.name:
                        renamed = True
                    names[c.id] = c.name
            elif isinstance(m, ToolResults):
                self.uses.extend((i, j) for j in range(len(m.results)))
                self.result_ids.update(r.id for r in m.results)
        changed: set[int] = set()
        if renamed and clear.exclude_tools:
            changed.update(self.plan)
            self.plan, self.freed, self.planned_uses = {}, {}, 0
        self._replan(messages, max(self.planned_uses, len(self.uses) - clear.keep), changed)
        applied = False
        if self.plan:
            before = self.total if count is not None else self.tokens(tuple(messages))
            applied = before > clear.trigger and (
                not clear.clear_at_least or self._frees(messages, before) >= clear.clear_at_least
            )
        if applied != self.applied:
            changed.update(self.plan)
            self.applied = applied
        if not applied:
            return [(i, None) for i in changed]
        return [(i, self.plan.get(i)) for i in changed]


# --- presets ------------------------------------------------------------------------------


def _clearing(*, counter: Any, system: str, tools: tuple, high_water: int, keep: int, clear_at_least: int,
              **_: Any) -> Factory:
    policy = ClearToolUses(trigger=high_water, keep=keep, clear_at_least=clear_at_least)
    return lambda: policy.context(system, counter=counter, tools=tools)


PRESETS: tuple[Preset, ...] = (
    Preset(name="clearing", family="anthropic",
           source='Anthropic docs, "Context editing" (`clear_tool_uses_20250919`)',
           description="Anthropic's clear_tool_uses_20250919: above the trigger, all but the newest keep tool "
                       "results replaced by \"[cleared]\"",
           knobs=(Knob(name="high_water", unit="tokens", default=100_000, scales=True,
                       help="the trigger: the whole request's input tokens above which results are cleared"),
                  Knob(name="keep", unit="tool uses", default=3, minimum=0, help="the newest tool uses kept verbatim"),
                  Knob(name="clear_at_least", unit="tokens", default=0, minimum=0, scales=True,
                       help="an edit freeing fewer tokens is not applied (0: any)")),
           needs=frozenset({"counter"}), limit_kind="high_water", _make=_clearing,
           note="recomputed at every request above the trigger: once past it, the cached prefix breaks at almost "
                "every request"),
)
