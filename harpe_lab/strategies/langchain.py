"""LangChain 1.x's context middleware, native: `Summarization` and `ClearToolUsesEdit`.

Source read: langchain 1.5.2 (langchain-core 1.8.3) as installed,
``langchain/agents/middleware/summarization.py`` (``SummarizationMiddleware``),
``langchain/agents/middleware/context_editing.py`` (``ContextEditingMiddleware`` with
``ClearToolUsesEdit``) and, for what the summarizer sees, ``langchain_core/messages/utils.py``
(``trim_messages``, ``get_buffer_string(format="xml")``). Their own code runs in
`harpe_lab.peers.langchain`; the differential tests check that both send the same requests.

LangChain's granularity. A LangChain agent's state holds one ``ToolMessage`` per tool result,
where Harpe holds one `ToolResults` per round; both middlewares count and cut at LangChain's
granularity (``("messages", 20)`` counts tool results one by one, a cut may fall between two
results of a round). So both work on *units*: our messages with each `ToolResults` of k
results split into k one-result `ToolResults` (a one-result round is its own unit), and
`regroup` joins consecutive units of one round again — into the original object when none
was changed. ``UserInput`` is LangChain's ``HumanMessage``, ``AssistantMessage`` its
``AIMessage`` (text as content, calls as ``tool_calls``).

Token counting. LangChain's ``token_counter`` is called on lists of messages; here it is the
replay's counter on the units, ``counter.count_rendered(Rendered("", units))``: the agent's
state holds no system prompt and no tool schemas, so neither counts (the peer applies the
same counter to its messages converted back). `ClearToolUsesEdit` can instead count the
whole request the way ``token_count_method="model"`` asks the model
(``get_num_tokens_from_messages([system, *messages], tools)``): ``token_count="model"``.
LangChain's own default estimate (``count_tokens_approximately``) is not modelled: pass the
counter you want compared (`harpe_lab.tokens.ApproxCounter` is the same kind of estimate).

`Summarization` — ``SummarizationMiddleware(model, trigger=, keep=,
trim_tokens_to_summarize=)``, run in ``before_model`` before every model call:

* ``trigger``: ``("tokens", n)`` (the state's tokens ``>= n``), ``("messages", n)`` (units
  ``>= n``), ``("fraction", f)`` (tokens ``>= int(f * context_window)``, at least 1); a
  mapping of several is a clause met when all are (LangChain's ``TriggerClause``); a list
  is met when any item is. LangChain also meets a token (or fraction) threshold when the
  last ``AIMessage`` in the state carries provider usage (``usage_metadata["total_tokens"]``,
  input plus output) of at least the threshold, from its model's provider: with
  ``reported_usage=True`` each reply carries the usage the replay reports for it
  (`observe`), as in an agent whose summarizer is its own model; off by default (an agent
  summarizing with another provider's model, or a model that reports none).
* when it triggers, the cutoff: ``keep=("messages", n)`` keeps the last n units;
  ``("tokens", n)`` / ``("fraction", f)`` the shortest suffix found by LangChain's binary
  search to fit n tokens. A cutoff on a tool result moves back to the ``AIMessage`` that made
  the call (or, with none, forward past the results), so a call and its results are never
  split. A cutoff of 0 means no summary.
* the units before the cutoff go to the summarizer: the newest of them that fit
  ``trim_tokens_to_summarize`` tokens (``trim_messages(strategy="last", allow_partial=True,
  start_on="human")``: a unit that does not fit whole keeps its last lines that do, and the
  kept list starts at a user message), formatted by ``get_buffer_string(format="xml")`` into
  LangChain's ``DEFAULT_SUMMARY_PROMPT`` (or ``summary_prompt``). The distiller receives that
  prompt as one user message, ``Rendered("", (UserInput(prompt),))``, as LangChain's model
  does; its reply, stripped, is the summary (``None`` is read as an empty reply: LangChain
  has no "not this time"). When nothing is left after trimming (no user message among the
  newest units, as in a long agent turn) the summary is ``"Previous conversation was too
  long to summarize."`` and no one is called: the folded messages are dropped, and the
  frame counts them so (not *summarized*).
* the state becomes one *user* message, ``"Here is a summary of the conversation to
  date:\\n\\n" + summary`` (LangChain's ``HumanMessage``, first), then the kept units. The
  state is what the next request starts from: the summary message is itself summarized by the
  next fold, and the system prompt is untouched.

`ClearToolUsesEdit` — ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])``, run in
``wrap_model_call`` on a copy of the state's messages at every request (the state itself is
never edited, so each request clears from the full history). It differs from Anthropic's
documented ``clear_tool_uses_20250919`` (`harpe_lab.strategies.clearing.ClearToolUses`):

* above ``trigger`` it clears the oldest tool results first, all but the newest ``keep``
  (excluded tools counting among the kept), and when ``clear_at_least`` is above 0 it
  recounts after each and *stops* once that many tokens are freed; freeing fewer, it still
  sends what it cleared (Anthropic sends nothing cleared);
* a result is cleared only when the nearest ``AIMessage`` before it holds its call;
* ``clear_tool_inputs`` is a bool (all tools or none);
* it counts the state's messages only, unless ``token_count="model"``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from ..tokens import prices_by_parts
from ._lifecycle import PolicyLifecycle
from .clearing import DEFAULT_PLACEHOLDER, _check_int, _names
from .editing import EditContext

__all__ = [
    "Summarization",
    "SummarizationContext",
    "ClearToolUsesEdit",
    "DEFAULT_SUMMARY_PROMPT",
    "SUMMARY_PREFIX",
    "DEFAULT_PLACEHOLDER",
    "Unit",
    "units_of",
    "Splitter",
    "trim_last",
    "safe_cutoff",
    "regroup",
    "buffer_xml",
]

SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
"""What LangChain puts before the summary in the user message that replaces the history."""

TOO_LONG = "Previous conversation was too long to summarize."

DEFAULT_SUMMARY_PROMPT = """<role>
Context Extraction Assistant
</role>

<primary_objective>
Your sole objective in this task is to extract the highest quality/most relevant context from the conversation history below.
</primary_objective>

<objective_information>
You're nearing the total number of input tokens you can accept, so you must extract the highest quality/most relevant pieces of information from your conversation history.
This context will then overwrite the conversation history presented below. Because of this, ensure the context you extract is only the most important information to continue working toward your overall goal.
</objective_information>

<instructions>
The conversation history below will be replaced with the context you extract in this step.
You want to ensure that you don't repeat any actions you've already completed, so the context you extract from the conversation history should be focused on the most important information to your overall goal.

You should structure your summary using the following sections. Each section acts as a checklist - you must populate it with relevant information or explicitly state "None" if there is nothing to report for that section:

## SESSION INTENT

What is the user's primary goal or request? What overall task are you trying to accomplish? This should be concise but complete enough to understand the purpose of the entire session.

## SUMMARY

Extract and record all of the most important context from the conversation history. Include important choices, conclusions, or strategies determined during this conversation. Include the reasoning behind key decisions. Document any rejected options and why they were not pursued.

## ARTIFACTS

What artifacts, files, or resources were created, modified, or accessed during this conversation? For file modifications, list specific file paths and briefly describe the changes made to each. This section prevents silent loss of artifact information.

## NEXT STEPS

What specific tasks remain to be completed to achieve the session intent? What should you do next?

</instructions>

The user will message you with the full message history from which you'll extract context to create a replacement. Carefully read through it all and think deeply about what information is most important to your overall goal and should be saved:

With all of this in mind, please carefully read over the entire conversation history, and extract the most important and relevant context to replace it so that you can free up space in the conversation history.
Respond ONLY with the extracted context. Do not include any additional information, or text before or after the extracted context.

<messages>
Messages to summarize:
{messages}
</messages>"""  # noqa: E501
"""LangChain 1.5.2's ``DEFAULT_SUMMARY_PROMPT``, word for word (a test compares them)."""

_KINDS = ("tokens", "messages", "fraction")
_DEFAULT_KEEP = ("messages", 20)
_DEFAULT_TRIM = 4000
_ID_DISPLAY = 64


# --- units: our messages at LangChain's granularity ----------------------------------------

Unit = Message
"""A message as LangChain holds it: a `UserInput`, an `AssistantMessage`, or a `ToolResults`
with exactly one result (a ``ToolMessage``)."""


def units_of(message: Message) -> tuple[Message, ...]:
    """``message`` as units: itself, or one one-result `ToolResults` per result (sharing the
    `ToolResult` objects, so `regroup` can tell an untouched round)."""
    if isinstance(message, ToolResults) and not message.results:
        raise StrategyError("a ToolResults with no result has no LangChain message (no ToolMessage to stand for it)")
    if isinstance(message, ToolResults) and len(message.results) != 1:
        return tuple(ToolResults((r,), message.pinned) for r in message.results)
    return (message,)


class Splitter:
    """`units_of` with a memory: the same message always gives the same unit objects, so
    counts cached by object (every harpe_lab counter) are reused across requests."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Message, tuple[Message, ...]]] = {}

    def __call__(self, message: Message) -> tuple[Message, ...]:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        units = units_of(message)
        if units[0] is not message:
            self._memo[id(message)] = (message, units)
        return units


def regroup(units: Sequence[tuple[Message, Message | None]]) -> tuple[Message, ...]:
    """Our messages from ``(unit, original)`` pairs, ``original`` being the message a unit came
    from (``None`` for one made up). Consecutive tool-result units of one original round
    become one `ToolResults`: the original itself when they are all its results, untouched
    (the same `ToolResult` objects); else a new one with the original's ``pinned``."""
    out: list[Message] = []
    k = 0
    n = len(units)
    while k < n:
        unit, original = units[k]
        if not isinstance(unit, ToolResults) or not isinstance(original, ToolResults):
            out.append(unit)
            k += 1
            continue
        group = [unit]
        k += 1
        while k < n and units[k][1] is original and isinstance(units[k][0], ToolResults):
            group.append(units[k][0])
            k += 1
        results = tuple(r for u in group for r in u.results)
        whole = len(results) == len(original.results) and all(a is b for a, b in zip(results, original.results))
        out.append(original if whole else ToolResults(results, original.pinned))
    return tuple(out)


def _is_tool(unit: Message) -> bool:
    return isinstance(unit, ToolResults)


def _tool_id(unit: Message) -> str:
    return unit.results[0].id  # type: ignore[union-attr]


def _with_text(unit: Message, text: str) -> Message:
    """``unit`` with its text (LangChain's ``content``) replaced."""
    if isinstance(unit, UserInput):
        return UserInput(text, unit.attachments, unit.pinned)
    if isinstance(unit, AssistantMessage):
        return AssistantMessage(text, unit.calls, unit.pinned)
    r = unit.results[0]
    return ToolResults((ToolResult(r.id, text, r.attachments, r.success),), unit.pinned)


def _text(unit: Message) -> str:
    if isinstance(unit, ToolResults):
        return unit.results[0].content
    return unit.text


def _display_id(call_id: str) -> str:
    return f"{call_id[:_ID_DISPLAY]}..." if len(call_id) > _ID_DISPLAY else call_id


def buffer_xml(units: Sequence[Message]) -> str:
    """LangChain's ``get_buffer_string(messages, format="xml")`` of the units' messages."""
    out = []
    for m in units:
        if isinstance(m, UserInput):
            kind = "human"
        elif isinstance(m, AssistantMessage):
            kind = "ai"
        elif isinstance(m, ToolResults):
            kind = "tool"
        else:
            raise TypeError(f"not a harpe_lab message: {m!r}")
        text = _text(m)
        content = escape(text) if text else ""
        if isinstance(m, AssistantMessage) and m.calls:
            parts = [f"<message type={quoteattr(kind)}>"]
            if content:
                parts.append(f"  <content>{content}</content>")
            for c in m.calls:
                args = escape(json.dumps(c.input, ensure_ascii=False))
                parts.append(f"  <tool_call id={quoteattr(_display_id(c.id or ''))} name={quoteattr(c.name or '')}>"
                             f"{args}</tool_call>")
            parts.append("</message>")
            out.append("\n".join(parts))
        else:
            out.append(f"<message type={quoteattr(kind)}>{content}</message>")
    return "\n".join(out)


def _split_lines(text: str) -> list[str]:
    # LangChain's default text splitter: lines, each keeping its newline
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def trim_last(units: Sequence[Message], max_tokens: int, count: Callable[[Sequence[Message]], int]) -> list[Message]:
    """``trim_messages(units, max_tokens=, token_counter=count, strategy="last",
    allow_partial=True, start_on="human", include_system=True)`` for units (which hold no
    system message): the newest units within ``max_tokens``, the newest one left out cut to
    its last lines that fit, then units dropped from the oldest end until a user message
    leads. ``count`` is called on the same lists, in the same order, as LangChain calls it."""
    msgs = list(units)[::-1]
    if not msgs:
        return []
    if count(msgs) <= max_tokens:
        for _ in range(len(msgs)):
            if not isinstance(msgs[-1], UserInput):
                msgs.pop()
            else:
                break
        return msgs[::-1]
    left, right = 0, len(msgs)
    for _ in range(len(msgs).bit_length()):
        if left >= right:
            break
        mid = (left + right + 1) // 2
        if count(msgs[:mid]) <= max_tokens:
            left = mid
        else:
            right = mid - 1
    idx = left
    if idx < len(msgs):
        text = _text(msgs[idx])
        if text:
            splits = _split_lines(text)[::-1]
            base = count(msgs[:idx])
            lo, hi = 0, len(splits)
            for _ in range(len(splits).bit_length()):
                if lo >= hi:
                    break
                mid = (lo + hi + 1) // 2
                if base + count([_with_text(msgs[idx], "".join(splits[:mid]))]) <= max_tokens:
                    lo = mid
                else:
                    hi = mid - 1
            if lo > 0:
                msgs = [*msgs[:idx], _with_text(msgs[idx], "".join(splits[:lo][::-1]))]
                idx += 1
    for _ in range(idx):
        if idx > 0 and not isinstance(msgs[idx - 1], UserInput):
            idx -= 1
        else:
            break
    return msgs[:idx][::-1]


def safe_cutoff(units: Sequence[Message], cutoff: int) -> int:
    """LangChain's ``_find_safe_cutoff_point``: a cutoff on a tool result moves back to the
    ``AIMessage`` holding one of the calls of the results there, or (none) past them."""
    if cutoff >= len(units) or not _is_tool(units[cutoff]):
        return cutoff
    ids: set[str] = set()
    idx = cutoff
    while idx < len(units) and _is_tool(units[idx]):
        if _tool_id(units[idx]):
            ids.add(_tool_id(units[idx]))
        idx += 1
    for i in range(cutoff - 1, -1, -1):
        m = units[i]
        if isinstance(m, AssistantMessage) and m.calls and ids & {c.id for c in m.calls if c.id}:
            return i
    return idx


# --- validation --------------------------------------------------------------------------------


def _size(name: str, kind: object, value: object) -> tuple[str, int | float]:
    if kind not in _KINDS:
        raise StrategyError(f"{name} kind must be one of {list(_KINDS)}, but {kind!r} was passed")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StrategyError(f"{name} {kind} must be a number, got {value!r}")
    if kind == "fraction":
        if not (isinstance(value, (int, float)) and math.isfinite(value) and 0 < value <= 1):
            raise StrategyError(f"{name} fraction must be > 0 and <= 1, got {value!r}")
        return kind, float(value)
    if not isinstance(value, int) or value <= 0:
        raise StrategyError(f"{name} {kind} must be an int > 0, got {value!r}")
    return kind, value  # type: ignore[return-value]


def _clause(item: object) -> tuple[tuple[str, int | float], ...]:
    if isinstance(item, tuple) and item and all(isinstance(p, tuple) and len(p) == 2 for p in item):
        return tuple(_size("trigger", *p) for p in item)  # already a clause
    if isinstance(item, tuple) and len(item) == 2:
        return (_size("trigger", *item),)
    if isinstance(item, Mapping):
        if not item:
            raise StrategyError("a trigger clause must name at least one of 'tokens', 'messages', 'fraction'")
        return tuple(_size("trigger", k, v) for k, v in item.items())
    raise StrategyError(
        f"trigger must be a (kind, value) pair, a mapping of them, or a list of either, got {item!r}"
    )


def _clauses(trigger: object) -> tuple[tuple[tuple[str, int | float], ...], ...]:
    if isinstance(trigger, tuple) and trigger and all(
            isinstance(c, tuple) and c and all(isinstance(p, tuple) for p in c) for c in trigger):
        return tuple(_clause(c) for c in trigger)  # already clauses (a copy, a pickle)
    if isinstance(trigger, list):
        if not trigger:
            raise StrategyError("trigger must hold at least one clause; a strategy that never acts is FullContext")
        return tuple(_clause(item) for item in trigger)
    return (_clause(trigger),)


def _check_counter(counter: object) -> None:
    if not callable(getattr(counter, "count_rendered", None)):
        raise StrategyError(f"counter must have count_rendered (e.g. harpe_lab.BytesCounter()), got {counter!r}")


# --- SummarizationMiddleware ---------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class Summarization:
    """LangChain's ``SummarizationMiddleware``, natively (see the module doc for every rule).

    Build a context with ``Summarization(...).context(system, counter=, distill=)``.
    """

    trigger: Any
    """``("tokens", n)``, ``("messages", n)``, ``("fraction", f)``; a mapping of several
    (all must hold) or a list of either (any). Stored as clauses: a tuple of clauses, each a
    tuple of ``(kind, value)`` pairs, any clause met when all its pairs are. LangChain's
    default, ``None`` (never summarize), is refused: a strategy that never acts is
    `FullContext`."""
    keep: tuple[str, int | float] = _DEFAULT_KEEP
    """What survives a fold: ``("messages", n)`` units, or ``("tokens", n)`` /
    ``("fraction", f)`` of the newest units."""
    trim_tokens_to_summarize: int | None = _DEFAULT_TRIM
    """The summarizer sees at most this many tokens of the newest folded units (``None``:
    all of them)."""
    context_window: int | None = None
    """The model's maximum input tokens (LangChain reads the model's profile
    ``max_input_tokens``): needed by ``"fraction"``, ignored otherwise."""
    summary_prompt: str = field(default=DEFAULT_SUMMARY_PROMPT, repr=False)
    """The prompt, with ``{messages}`` where the formatted history goes."""
    reported_usage: bool = False
    """Replies carry the usage the replay reports, and the newest reply's total (input plus
    output tokens) also meets a token threshold (see the module doc)."""

    def __post_init__(self) -> None:
        clauses = _clauses(self.trigger)
        object.__setattr__(self, "trigger", clauses)
        if not (isinstance(self.keep, tuple) and len(self.keep) == 2):
            raise StrategyError(f"keep must be a (kind, value) pair such as ('messages', 20), got {self.keep!r}")
        object.__setattr__(self, "keep", _size("keep", *self.keep))
        if self.trim_tokens_to_summarize is not None:
            _check_int("trim_tokens_to_summarize", self.trim_tokens_to_summarize, 0)
        if self.context_window is not None:
            _check_int("context_window", self.context_window, 1)
        fraction = any(k == "fraction" for c in clauses for k, _ in c) or self.keep[0] == "fraction"
        if fraction and self.context_window is None:
            raise StrategyError(
                "a 'fraction' trigger or keep needs the model's maximum input tokens: pass context_window="
            )
        if not isinstance(self.summary_prompt, str) or "{messages}" not in self.summary_prompt:
            raise StrategyError(f"summary_prompt must be a str with a {{messages}} field, got {self.summary_prompt!r:.80}")
        try:
            self.summary_prompt.format(messages="")
        except (KeyError, IndexError, ValueError) as exc:
            raise StrategyError(f"summary_prompt must format with only {{messages}}: {exc!r}") from exc
        if not isinstance(self.reported_usage, bool):
            raise StrategyError(f"reported_usage must be a bool, got {self.reported_usage!r}")

    def _threshold(self, kind: str, value: int | float) -> int:
        if kind == "fraction":
            return max(1, int(self.context_window * value))  # type: ignore[operator]
        return int(value)

    def triggered(self, units: Sequence[Message], tokens: int, reported: int | None = None) -> bool:
        """Whether LangChain summarizes a state of ``units`` pricing ``tokens``, the newest
        reply in it having reported ``reported`` total tokens (``None``: no usage)."""
        def met(kind: str, value: int | float) -> bool:
            if kind == "messages":
                return len(units) >= value
            threshold = self._threshold(kind, value)
            return tokens >= threshold or bool(reported) and reported >= threshold  # type: ignore[operator]

        return any(all(met(k, v) for k, v in clause) for clause in self.trigger)

    def cutoff(self, units: Sequence[Message], count: Callable[[Sequence[Message]], int]) -> int:
        """How many of the oldest units a fold summarizes (0: none)."""
        kind, value = self.keep
        if kind == "messages":
            if len(units) <= value:
                return 0
            return safe_cutoff(units, len(units) - int(value))
        if not units:
            return 0
        target = max(1, self._threshold(kind, value))
        if count(units) <= target:
            return 0
        left, right = 0, len(units)
        candidate = len(units)
        for _ in range(len(units).bit_length() + 1):
            if left >= right:
                break
            mid = (left + right) // 2
            if count(units[mid:]) <= target:
                candidate = right = mid
            else:
                left = mid + 1
        if candidate == len(units):
            candidate = left
        if candidate >= len(units):
            if len(units) == 1:
                return 0
            candidate = len(units) - 1
        return safe_cutoff(units, candidate)

    def prompt(self, units: Sequence[Message], count: Callable[[Sequence[Message]], int]) -> str | None:
        """The summarizer's prompt for folding ``units`` (``None``: nothing to send, see the
        module doc)."""
        if not units:
            return None
        trimmed = list(units) if self.trim_tokens_to_summarize is None else trim_last(
            units, self.trim_tokens_to_summarize, count)
        if not trimmed:
            return None
        return self.summary_prompt.format(messages=buffer_xml(trimmed)).rstrip()

    @property
    def limit_tokens(self) -> int | None:
        """The lowest token threshold of a clause that is only a token threshold (``None``:
        every clause counts messages)."""
        marks = [self._threshold(k, v) for c in self.trigger if len(c) == 1 for k, v in c if k != "messages"]
        return min(marks) if marks else None

    def context(self, base_system: str, *, counter: Any, distill: Distill, tools: Sequence[Mapping[str, Any]] = (),
                on_event: Callable[[object], None] | None = None) -> "SummarizationContext":
        """A fresh lifecycle context (see `SummarizationContext`)."""
        return SummarizationContext(base_system, self, counter=counter, distill=distill, tools=tools,
                                    on_event=on_event)


class _UnitLifecycle(PolicyLifecycle):
    """Harpe's lifecycle over a LangChain-style *state*: a list of units that a middleware
    may rewrite, restored with the transcript when a turn aborts."""

    def __init__(self, base_system: str, *, limit: Limit | None = None) -> None:
        super().__init__(base_system, self._step, limit=limit)
        self._state: list[Message] = []
        self._origin: dict[int, tuple[Message, Message]] = {}  # id(unit) -> (unit, original)
        self._state_mark: list[Message] = []
        self._input_units: list[Message] = []

    def begin_turn(self, input: UserInput) -> None:
        self._state_mark = list(self._state)
        super().begin_turn(input)
        self._input_units = self._state[len(self._state_mark):]

    def _added(self, message: Message) -> None:
        for unit in units_of(message):
            self._origin[id(unit)] = (unit, message)
            self._state.append(unit)

    def _restored(self) -> None:
        self._state = self._state_mark + self._input_units

    def _pairs(self, units: Iterable[Message]) -> list[tuple[Message, Message | None]]:
        get = self._origin.get
        out = []
        for u in units:
            hit = get(id(u))
            out.append((u, hit[1] if hit is not None and hit[0] is u else None))
        return out

    @property
    def state(self) -> tuple[Message, ...]:
        """The state's units, as LangChain holds them (summary message first after a fold)."""
        return tuple(self._state)

    def _step(self, transcript: Sequence[Message]) -> tuple[Message, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def compact(self) -> Compaction:
        return self._request(self._step(self.transcript))


class SummarizationContext(_UnitLifecycle):
    """`Summarization` run before every request over a LangChain-style state.

    Declares a ``"high_water"`` `Limit` at the lowest pure token threshold plus what the
    system prompt and ``tools`` add to a request (LangChain counts the state's messages
    only); none when every clause counts messages. Reports each distill call
    (`MeteredDistill`) and a fold that called the distiller as `ContextCompacted`; a fold
    whose summarizer saw nothing (``"Previous conversation was too long to summarize."``)
    drops the messages without summarizing them.
    """

    def __init__(self, base_system: str, config: Summarization, *, counter: Any, distill: Distill,
                 tools: Sequence[Mapping[str, Any]] = (), on_event: Callable[[object], None] | None = None) -> None:
        if not isinstance(config, Summarization):
            raise StrategyError(f"config must be a Summarization, got {config!r}")
        _check_counter(counter)
        mark = config.limit_tokens
        limit = None
        if mark is not None:
            extra = counter.count_rendered(Rendered(base_system, ()), tuple(tools)) - counter.count_rendered(Rendered("", ()))
            limit = Limit(tokens=mark + max(0, int(extra)), kind="high_water")
        super().__init__(base_system, limit=limit)
        self.config = config
        self.counter = counter
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self.folds = 0
        """Folds made so far (with a distill call or not)."""
        self._usage: Usage | None = None
        self._reported: dict[int, tuple[Message, int]] = {}  # id(reply) -> (reply, total tokens)

    def observe(self, usage: Usage) -> None:
        if self.config.reported_usage:
            self._usage = usage

    def _added(self, message: Message) -> None:
        if isinstance(message, AssistantMessage) and self._usage is not None:
            u = self._usage
            self._reported[id(message)] = (message, u.input_tokens + u.output_tokens)
            self._usage = None
        super()._added(message)

    def reported(self, units: Sequence[Message]) -> int | None:
        """The total tokens the newest reply in ``units`` reported (``None``: none)."""
        last = next((u for u in reversed(units) if isinstance(u, AssistantMessage)), None)
        hit = self._reported.get(id(last)) if last is not None else None
        return hit[1] if hit is not None and hit[0] is last else None

    @property
    def distill(self) -> Distill:
        return self._distill.distill

    def subscribe(self, sink: Callable[[object], None]) -> None:
        self._events.subscribe(sink)

    def count(self, units: Sequence[Message]) -> int:
        """LangChain's ``token_counter``: the replay's counter on the units alone."""
        return int(self.counter.count_rendered(Rendered("", tuple(units))))

    def _summary(self, folded: Sequence[Message]) -> str | None:
        prompt = self.config.prompt(folded, self.count)
        if prompt is None:
            return None
        reply = self._distill(Rendered("", (UserInput(prompt),)))
        return (reply or "").strip()

    def _step(self, transcript: Sequence[Message]) -> tuple[Message, ...]:
        state = self._state
        if self.config.triggered(state, self.count(state), self.reported(state)):
            cut = self.config.cutoff(state, self.count)
            if cut > 0:
                folded, kept = state[:cut], state[cut:]
                text = self._summary(folded)
                self._state = [UserInput(SUMMARY_PREFIX + (TOO_LONG if text is None else text)), *kept]
                self.folds += 1
                if text is not None:
                    # without a distill call the folded messages are dropped, not summarized
                    self._events.emit(ContextCompacted(len(regroup(self._pairs(folded)))))
        return regroup(self._pairs(self._state))

    def __repr__(self) -> str:
        return f"SummarizationContext({self.config!r}, {len(self._state)} units)"


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
        _check_int("trigger", self.trigger, 0)
        _check_int("clear_at_least", self.clear_at_least, 0)
        _check_int("keep", self.keep, 0)
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
        _check_counter(counter)
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
