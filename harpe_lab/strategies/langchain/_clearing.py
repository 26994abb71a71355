"""LangChain's ``ContextEditingMiddleware(edits=[ClearToolUsesEdit])``, natively (the rules are
in the package doc)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, Rendered, ToolCall, ToolResult, ToolResults
from ...protocol import Limit
from ...tokens import prices_by_parts
from .._validate import check_counter, check_int
from ..clearing import DEFAULT_PLACEHOLDER, _names
from ..editing import EditContext
from ._units import Splitter, _is_tool, _tool_id, regroup, units_of

# --- ContextEditingMiddleware(edits=[ClearToolUsesEdit]) ----------------------------------------


@dataclass(frozen=True, kw_only=True)
class ClearToolUsesEdit:
    """LangChain's ``ClearToolUsesEdit`` in ``ContextEditingMiddleware``, natively: an edit
    policy (`harpe_lab.strategies.editing`) recomputed at every request. See the module doc
    for how it differs from `harpe_lab.strategies.clearing.ClearToolUses`.

    Call it as ``edit(messages, tokens=price)`` with ``price(units)`` LangChain's token count
    of a list of units; `context` binds one from a counter.
    """

    trigger: int = 100_000
    """Tokens; the edit applies to a request counting more."""
    clear_at_least: int = 0
    """Stop clearing once this many tokens are freed (0: clear every candidate)."""
    keep: int = 3
    """The newest tool results kept verbatim."""
    clear_tool_inputs: bool = False
    """Also replace a cleared result's call arguments by ``{}``."""
    exclude_tools: frozenset[str] = field(default_factory=frozenset)
    """Tools whose results are never cleared (they still count among the kept)."""
    placeholder: str = DEFAULT_PLACEHOLDER
    token_count: Literal["messages", "model"] = "messages"
    """``"messages"``: the state's messages alone (a ``token_counter`` given to the
    middleware); ``"model"``: the whole request, system prompt and tool schemas included
    (``token_count_method="model"``)."""

    def __post_init__(self) -> None:
        check_int("trigger", self.trigger, 0)
        check_int("clear_at_least", self.clear_at_least, 0)
        check_int("keep", self.keep, 0)
        if not isinstance(self.clear_tool_inputs, bool):
            raise StrategyError(f"clear_tool_inputs must be a bool (LangChain clears all inputs or none), "
                                f"got {self.clear_tool_inputs!r}")
        object.__setattr__(self, "exclude_tools", _names("exclude_tools", self.exclude_tools))
        if not isinstance(self.placeholder, str):
            raise StrategyError(f"placeholder must be a str, got {self.placeholder!r}")
        if self.token_count not in ("messages", "model"):
            raise StrategyError(f"token_count must be one of ['messages', 'model'], but {self.token_count!r} was passed")

    def edit_units(self, units: Sequence[Message], *, tokens: Callable[[Sequence[Message]], int],
                   by_parts: Callable[[Message], int] | None = None) -> list[Message]:
        """LangChain's ``apply`` on a copy of ``units``. ``by_parts``, when the price is a sum
        over units plus a constant, prices one unit, so the recount after each clearing is a
        difference instead of a whole count (the same number)."""
        out = list(units)
        before = tokens(out)
        if before <= self.trigger:
            return out
        candidates = [i for i, u in enumerate(out) if _is_tool(u)]
        if self.keep >= len(candidates):
            candidates = []
        elif self.keep:
            candidates = candidates[: -self.keep]
        now = before
        for idx in candidates:
            tool = out[idx]
            ai = next((k for k in range(idx - 1, -1, -1) if isinstance(out[k], AssistantMessage)), None)
            if ai is None:
                continue
            rid = _tool_id(tool)
            call = next((c for c in out[ai].calls if c.id == rid), None)  # type: ignore[union-attr]
            if call is None or call.name in self.exclude_tools:
                continue
            r = tool.results[0]  # type: ignore[union-attr]
            changed = [(idx, ToolResults((ToolResult(r.id, self.placeholder, (), r.success),), tool.pinned))]
            if self.clear_tool_inputs:
                m = out[ai]
                calls = tuple(ToolCall(c.id, c.name, {}) if c.id == rid else c for c in m.calls)  # type: ignore[union-attr]
                changed.append((ai, AssistantMessage(m.text, calls, m.pinned)))  # type: ignore[union-attr]
            for k, new in changed:
                if by_parts is not None and self.clear_at_least > 0:
                    now += by_parts(new) - by_parts(out[k])
                out[k] = new
            if self.clear_at_least > 0:
                if by_parts is None:
                    now = tokens(out)
                if max(0, before - now) >= self.clear_at_least:
                    break
        return out

    def __call__(self, messages: Sequence[Message], *, tokens: Callable[[Sequence[Message]], int],
                 by_parts: Callable[[Message], int] | None = None,
                 split: Callable[[Message], Sequence[Message]] = units_of) -> tuple[Message, ...]:
        """The edit of ``messages`` (our messages; ``split`` makes their units)."""
        seq = tuple(messages)
        pairs = [(u, m) for m in seq for u in split(m)]
        edited = self.edit_units([u for u, _ in pairs], tokens=tokens, by_parts=by_parts)
        if all(a is b for a, (b, _) in zip(edited, pairs)):
            return seq
        return regroup([(u, m) for u, (_, m) in zip(edited, pairs)])

    def price(self, base_system: str, *, counter: Any, tools: Sequence[Mapping[str, Any]] = ()
              ) -> Callable[[Sequence[Message]], int]:
        """LangChain's token count of a list of units with ``counter``, as ``token_count`` says."""
        check_counter(counter)
        if self.token_count == "model":
            return _UnitPrice(counter, base_system, tuple(tools))
        return _UnitPrice(counter, "", ())

    def context(self, base_system: str, *, counter: Any, tools: Sequence[Mapping[str, Any]] = ()) -> EditContext:
        """A fresh lifecycle context that sends this edit applied to the whole transcript,
        declaring ``trigger`` as a ``"high_water"`` `Limit` (plus what the system prompt and
        ``tools`` add to a request when only messages are counted)."""
        price = self.price(base_system, counter=counter, tools=tools)
        extra = 0
        if self.token_count == "messages":
            extra = max(0, int(counter.count_rendered(Rendered(base_system, ()), tuple(tools))
                               - counter.count_rendered(Rendered("", ()))))
        by_parts = counter.count_message if prices_by_parts(counter) else None
        return EditContext(base_system, _Bound(self, price, by_parts),
                           limit=Limit(tokens=self.trigger + extra, kind="high_water"))


@dataclass(frozen=True)
class _UnitPrice:
    counter: Any
    system: str
    tools: tuple[Mapping[str, Any], ...]

    def __call__(self, units: Sequence[Message]) -> int:
        return int(self.counter.count_rendered(Rendered(self.system, tuple(units)), self.tools))


@dataclass(frozen=True)
class _Bound:
    """``edit`` bound to a price: a one-argument edit policy for `EditContext`."""

    edit: ClearToolUsesEdit
    price: Callable[[Sequence[Message]], int]
    by_parts: Callable[[Message], int] | None = None
    split: Splitter = field(default_factory=Splitter, compare=False, repr=False)

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        return self.edit(messages, tokens=self.price, by_parts=self.by_parts, split=self.split)

    def incremental(self) -> "_Clearer | None":
        """An editor for `EditContext`, when the price is a sum over the units (``None``: the
        edit is applied to the whole transcript at each request)."""
        price = self.price
        if not isinstance(price, _UnitPrice) or self.by_parts is None or not prices_by_parts(price.counter):
            return None
        fixed = int(price.counter.count_rendered(Rendered(price.system, ()), price.tools))
        return _Clearer(self.edit, fixed, self.by_parts, self.split)


class _Clearer:
    """`ClearToolUsesEdit` over messages that only grow, priced as a sum over the units.

    LangChain clears the candidates (all tool results but the newest ``keep``) oldest first,
    each answered by the nearest reply before it, and stops for good once ``clear_at_least``
    tokens are freed; the candidates only grow at their end, so each call goes on from where
    the last stopped. The clearing is sent while the request is above the trigger. A
    decision is, for a results message, the indices of its results cleared; for a reply
    (``clear_tool_inputs``), the call ids whose input is cleared."""

    def __init__(self, edit: ClearToolUsesEdit, fixed: int, count: Callable[[Message], int],
                 split: Callable[[Message], Sequence[Message]]) -> None:
        self.edit = edit
        self.count = count
        self.split = split
        self.tokens = fixed
        self.reply = -1  # the newest reply's message index
        self.tools: list[tuple[int, int, int]] = []  # (message index, result index, reply index)
        self.done = 0  # tools[:done] went through the clearing loop
        self.stopped = False  # clear_at_least was reached
        self.freed = 0
        self.plan: dict[int, frozenset] = {}
        self.units: dict[int, Message] = {}  # the current unit of a reply whose inputs are cleared
        self.applied = False

    def build(self, message: Message, decision: object) -> Message:
        m = message
        assert isinstance(decision, frozenset)
        if isinstance(m, AssistantMessage):
            return AssistantMessage(m.text, tuple(ToolCall(c.id, c.name, {}) if c.id in decision else c
                                                  for c in m.calls), m.pinned)
        assert isinstance(m, ToolResults)
        placeholder = self.edit.placeholder
        return ToolResults(tuple(ToolResult(r.id, placeholder, (), r.success) if j in decision else r
                                 for j, r in enumerate(m.results)), m.pinned)

    def extend(self, messages: Sequence[Message], start: int) -> list[tuple[int, object]]:
        edit = self.edit
        count = self.count
        for k in range(start, len(messages)):
            m = messages[k]
            units = self.split(m)
            self.tokens += sum(map(count, units))
            if isinstance(m, AssistantMessage):
                self.reply = k
            elif isinstance(m, ToolResults):
                self.tools.extend((k, j, self.reply) for j in range(len(m.results)))
        changed: set[int] = set()
        upto = max(0, len(self.tools) - edit.keep) if edit.keep < len(self.tools) else 0
        while not self.stopped and self.done < upto:
            k, j, ai = self.tools[self.done]
            self.done += 1
            if ai < 0:
                continue
            m = messages[k]
            r = m.results[j]  # type: ignore[union-attr]
            call = next((c for c in messages[ai].calls if c.id == r.id), None)  # type: ignore[union-attr]
            if call is None or call.name in edit.exclude_tools:
                continue
            self.plan[k] = self.plan.get(k, frozenset()) | {j}
            changed.add(k)
            if edit.clear_tool_inputs:
                self.plan[ai] = self.plan.get(ai, frozenset()) | {r.id}
                changed.add(ai)
            if edit.clear_at_least > 0:
                unit = ToolResults((ToolResult(r.id, edit.placeholder, (), r.success),), m.pinned)
                self.freed += count(self.split(m)[j]) - count(unit)
                if edit.clear_tool_inputs:
                    old = self.units.get(ai, messages[ai])
                    new = AssistantMessage(old.text, tuple(ToolCall(c.id, c.name, {}) if c.id == r.id else c
                                                           for c in old.calls), old.pinned)  # type: ignore[union-attr]
                    self.units[ai] = new
                    self.freed += count(old) - count(new)
                if max(0, self.freed) >= edit.clear_at_least:
                    self.stopped = True
        applied = bool(self.plan) and self.tokens > edit.trigger
        if applied != self.applied:
            changed.update(self.plan)
            self.applied = applied
        if not applied:
            return [(k, None) for k in changed]
        return [(k, self.plan.get(k)) for k in changed]

