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
from ..anthropic.clearing import DEFAULT_PLACEHOLDER, _names
from ..editing import EditContext, Edits, edited_by
from ._units import Splitter, units_of

# --- ContextEditingMiddleware(edits=[ClearToolUsesEdit]) ----------------------------------------


@dataclass(frozen=True, kw_only=True)
class ClearToolUsesEdit:
    """LangChain's ``ClearToolUsesEdit`` in ``ContextEditingMiddleware``, natively: an edit
    policy (`harpe_lab.strategies.editing`) recomputed at every request. See the module doc
    for how it differs from `harpe_lab.strategies.anthropic.clearing.ClearToolUses`.

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

    def __call__(self, messages: Sequence[Message], *, tokens: Callable[[Sequence[Message]], int],
                 by_parts: Callable[[Message], int] | None = None,
                 split: Callable[[Message], Sequence[Message]] = units_of) -> tuple[Message, ...]:
        """The edit of ``messages`` (our messages; ``split`` makes their units), ``tokens``
        pricing a list of units. ``by_parts``, when the price is a sum over units plus a
        constant, prices one unit, so the recount after each clearing is a difference
        instead of a whole count (the same number)."""
        return edited_by(_Clearer(self, tokens, count=by_parts, split=split), messages)

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
class _Bound(Edits):
    """``edit`` bound to a price: a one-argument edit policy for `EditContext`."""

    edit: ClearToolUsesEdit
    price: Callable[[Sequence[Message]], int]
    by_parts: Callable[[Message], int] | None = None
    split: Splitter = field(default_factory=Splitter, compare=False, repr=False)

    def incremental(self) -> "_Clearer":
        """This policy's editor (`harpe_lab.strategies.editing`); when the price is a sum
        over the units, it keeps that sum as they come instead of pricing every unit at
        each request."""
        price = self.price
        fixed = None
        if isinstance(price, _UnitPrice) and self.by_parts is not None and prices_by_parts(price.counter):
            fixed = int(price.counter.count_rendered(Rendered(price.system, ()), price.tools))
        return _Clearer(self.edit, price, count=self.by_parts, split=self.split, fixed=fixed)


class _Clearer:
    """`ClearToolUsesEdit` over messages that only grow: the policy's one implementation,
    LangChain's ``apply`` on our messages' units.

    Above the trigger, LangChain clears the candidates (all tool results but the newest
    ``keep``) oldest first, each answered by the nearest reply before it (a result without
    one, or whose call there is missing or of an excluded tool, is passed over), and stops
    once ``clear_at_least`` tokens are freed. A decision is, for a results message, the
    indices of its results cleared; for a reply (``clear_tool_inputs``), the call ids whose
    input is cleared.

    With ``count`` (the price of one unit, the price being a sum over units plus a
    constant) what a clearing frees does not depend on the request, so the stop is for good
    and the candidates only grow at their end: each call goes on from where the last
    stopped, and the plan is sent while the request is above the trigger (priced as
    ``fixed`` plus the running sum, or by ``tokens`` when ``fixed`` is ``None``). Without
    it, each call plans again from the start, recounting the whole request by ``tokens``
    after each clearing, as LangChain does."""

    def __init__(self, edit: ClearToolUsesEdit, tokens: Callable[[Sequence[Message]], int], *,
                 count: Callable[[Message], int] | None, split: Callable[[Message], Sequence[Message]],
                 fixed: int | None = None) -> None:
        self.edit = edit
        self.tokens = tokens
        self.count = count
        self.split = split
        self.running = fixed is not None  # the request's price is fixed + the units' counts
        self.total = fixed or 0
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

    def _units(self, messages: Sequence[Message]) -> list[Message]:
        """The units of ``messages`` with the plan applied."""
        plan = self.plan
        out: list[Message] = []
        for k, m in enumerate(messages):
            out.extend(self.split(m) if k not in plan else units_of(self.build(m, plan[k])))
        return out

    def extend(self, messages: Sequence[Message], start: int) -> list[tuple[int, object]]:
        edit = self.edit
        count = self.count
        for k in range(start, len(messages)):
            m = messages[k]
            if self.running:
                self.total += sum(map(count, self.split(m)))  # type: ignore[arg-type]
            if isinstance(m, AssistantMessage):
                self.reply = k
            elif isinstance(m, ToolResults):
                self.tools.extend((k, j, self.reply) for j in range(len(m.results)))
        before = self.total if self.running else self.tokens([u for m in messages for u in self.split(m)])
        changed: set[int] = set()
        if count is None:  # what a clearing frees depends on the request: plan again
            previous = self.plan
            self.plan, self.done, self.stopped = {}, 0, False
            if before > edit.trigger:
                self._clear(messages, before, changed)
            changed = {k for k in previous.keys() | self.plan.keys() if previous.get(k) != self.plan.get(k)}
        else:
            self._clear(messages, before, changed)
        applied = bool(self.plan) and before > edit.trigger
        if applied != self.applied:
            changed.update(self.plan)
            self.applied = applied
        if not applied:
            return [(k, None) for k in changed]
        return [(k, self.plan.get(k)) for k in changed]

    def _clear(self, messages: Sequence[Message], before: int, changed: set[int]) -> None:
        """Go on with the clearing loop over the candidates, from ``tools[done]``."""
        edit = self.edit
        count = self.count
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
                if count is None:
                    freed = before - self.tokens(self._units(messages))
                else:
                    unit = ToolResults((ToolResult(r.id, edit.placeholder, (), r.success),), m.pinned)
                    self.freed += count(self.split(m)[j]) - count(unit)
                    if edit.clear_tool_inputs:
                        old = self.units.get(ai, messages[ai])
                        new = AssistantMessage(old.text, tuple(ToolCall(c.id, c.name, {}) if c.id == r.id else c
                                                               for c in old.calls), old.pinned)  # type: ignore[union-attr]
                        self.units[ai] = new
                        self.freed += count(old) - count(new)
                    freed = self.freed
                if max(0, freed) >= edit.clear_at_least:
                    self.stopped = True
