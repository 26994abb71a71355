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

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolCall, ToolResult, ToolResults
from ..protocol import Limit
from ..tokens import prices_by_parts
from .editing import EditContext
from ._validate import check_counter, check_int

__all__ = ["ClearToolUses", "DEFAULT_PLACEHOLDER", "Priced"]

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

    def _clears_input(self, name: str) -> bool:
        inputs = self.clear_tool_inputs
        return inputs if isinstance(inputs, bool) else name in inputs

    def cleared(self, messages: Sequence[Message]) -> list[tuple[int, int]]:
        """The tool uses cleared when the edit applies: (message index of the results,
        result index), oldest first."""
        names: dict[str, str] = {}
        uses: list[tuple[int, int]] = []
        for i, m in enumerate(messages):
            if isinstance(m, AssistantMessage):
                names.update((c.id, c.name) for c in m.calls)
            elif isinstance(m, ToolResults):
                uses.extend((i, j) for j in range(len(m.results)))
        old = uses[: max(0, len(uses) - self.keep)]
        return [(i, j) for i, j in old if names.get(messages[i].results[j].id) not in self.exclude_tools]

    def edit(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        """The messages with every use `cleared` returns cleared (no trigger check)."""
        out = list(messages)
        by_message: dict[int, set[int]] = {}
        for i, j in self.cleared(out):
            by_message.setdefault(i, set()).add(j)
        for i, js in by_message.items():
            m = out[i]
            results = tuple(
                ToolResult(r.id, self.placeholder, (), r.success) if j in js else r for j, r in enumerate(m.results)
            )
            if results != m.results:
                out[i] = ToolResults(results, m.pinned)
            if self.clear_tool_inputs and i > 0 and isinstance(out[i - 1], AssistantMessage):
                ids = {m.results[j].id for j in js}
                call = out[i - 1]
                calls = tuple(
                    ToolCall(c.id, c.name, {}) if c.id in ids and self._clears_input(c.name) else c for c in call.calls
                )
                if calls != call.calls:
                    out[i - 1] = AssistantMessage(call.text, calls, call.pinned)
        return tuple(out)

    def __call__(self, messages: Sequence[Message], *, tokens: Callable[[Sequence[Message]], int]) -> tuple[Message, ...]:
        seq = tuple(messages)
        before = tokens(seq)
        if before <= self.trigger:
            return seq
        out = self.edit(seq)
        if out == seq:
            return seq
        if self.clear_at_least and before - tokens(out) < self.clear_at_least:
            return seq
        return out

    def context(self, base_system: str, *, counter: Any, tools: Sequence[Mapping[str, Any]] = ()) -> EditContext:
        """A fresh lifecycle context that sends this edit applied to the whole transcript,
        pricing each request as the provider would — ``counter.count_rendered`` of the system
        prompt, the messages and the ``tools`` schemas — and declaring ``trigger`` as a
        ``"high_water"`` `Limit` (a request whose cleared form is still above it goes out)."""
        check_counter(counter)
        price = _RequestPrice(counter, base_system, tuple(tools))
        return EditContext(base_system, Priced(self, price), limit=Limit(tokens=self.trigger, kind="high_water"))


@dataclass(frozen=True)
class Priced:
    """``clear`` bound to a request price: a one-argument edit policy for `EditContext`.
    ``price(messages)`` is the input tokens of a request carrying ``messages``."""

    clear: ClearToolUses
    price: Callable[[Sequence[Message]], int]

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        return self.clear(messages, tokens=self.price)

    def incremental(self) -> "_Clearer | None":
        """An editor for `EditContext`, when the price is a sum over the messages (``None``:
        the policy is applied to the whole transcript at each request)."""
        price = self.price
        if (not isinstance(price, _RequestPrice) or not prices_by_parts(price.counter)
                or self.clear.clear_tool_inputs):
            return None
        fixed = int(price.counter.count_rendered(Rendered(price.system, ()), price.tools))
        return _Clearer(self.clear, fixed, price.counter.count_message)


@dataclass(frozen=True)
class _RequestPrice:
    counter: Any
    system: str
    tools: tuple[Mapping[str, Any], ...]

    def __call__(self, messages: Sequence[Message]) -> int:
        return int(self.counter.count_rendered(Rendered(self.system, tuple(messages)), self.tools))


class _Clearer:
    """`ClearToolUses` (inputs kept) over messages that only grow, priced as a sum over them.

    The uses to clear are the oldest ones, so what is *planned* — the edit if it applies —
    only grows at its end: each call plans the uses the ``keep`` newest left behind since the
    last. The plan is sent while the request is above the trigger and it frees at least
    ``clear_at_least`` tokens; when that flips, every planned message flips with it. A later
    call renaming the id of a use already seen (an excluded tool may be involved) plans again
    from the start. A decision is the indices of a message's results that become the
    placeholder."""

    def __init__(self, clear: ClearToolUses, fixed: int, count: Callable[[Message], int]) -> None:
        self.clear = clear
        self.count = count
        self.tokens = fixed
        self.names: dict[str, str] = {}
        self.uses: list[tuple[int, int]] = []
        self.result_ids: set[str] = set()
        self.planned_uses = 0  # uses[:planned_uses] are planned
        self.plan: dict[int, frozenset[int]] = {}  # message index -> results cleared
        self.freed: dict[int, int] = {}  # message index -> tokens its edit frees
        self.applied = False

    def _placeholder(self, r: ToolResult) -> ToolResult:
        return ToolResult(r.id, self.clear.placeholder, (), r.success)

    def build(self, message: Message, decision: object) -> Message:
        m = message
        assert isinstance(m, ToolResults) and isinstance(decision, frozenset)
        return ToolResults(tuple(self._placeholder(r) if j in decision else r for j, r in enumerate(m.results)),
                           m.pinned)

    def _replan(self, messages: Sequence[Message], upto: int, changed: set[int]) -> None:
        """Plan ``uses[:upto]`` (those before ``planned_uses`` are planned already)."""
        clear = self.clear
        names = self.names
        touched: dict[int, set[int]] = {}
        for i, j in self.uses[self.planned_uses : upto]:
            m = messages[i]
            r = m.results[j]  # type: ignore[union-attr]
            if names.get(r.id) not in clear.exclude_tools and r != self._placeholder(r):
                touched.setdefault(i, set(self.plan.get(i, ()))).add(j)
        self.planned_uses = upto
        for i, js in touched.items():
            decision = frozenset(js)
            self.plan[i] = decision
            if clear.clear_at_least:
                m = messages[i]
                self.freed[i] = self.count(m) - self.count(self.build(m, decision))
            changed.add(i)

    def extend(self, messages: Sequence[Message], start: int) -> list[tuple[int, object]]:
        clear = self.clear
        names = self.names
        renamed = False
        count = self.count
        for i in range(start, len(messages)):
            m = messages[i]
            self.tokens += count(m)
            if isinstance(m, AssistantMessage):
                for c in m.calls:
                    if not renamed and c.id in self.result_ids and names.get(c.id) != c.name:
                        renamed = True
                    names[c.id] = c.name
            elif isinstance(m, ToolResults):
                self.uses.extend((i, j) for j in range(len(m.results)))
                self.result_ids.update(r.id for r in m.results)
        changed: set[int] = set()
        if renamed and self.exclude_matters():
            changed.update(self.plan)
            self.plan, self.freed, self.planned_uses = {}, {}, 0
        self._replan(messages, max(self.planned_uses, len(self.uses) - clear.keep), changed)
        applied = bool(self.plan) and self.tokens > clear.trigger and (
            not clear.clear_at_least or sum(self.freed.values()) >= clear.clear_at_least
        )
        if applied != self.applied:
            changed.update(self.plan)
            self.applied = applied
        if not applied:
            return [(i, None) for i in changed]
        return [(i, self.plan.get(i)) for i in changed]

    def exclude_matters(self) -> bool:
        return bool(self.clear.exclude_tools)
