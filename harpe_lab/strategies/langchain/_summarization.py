"""LangChain's ``SummarizationMiddleware``, natively (the rules are in the package doc)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput
from ...protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from ...tokens import prices_by_parts, text_price
from .._lifecycle import PolicyLifecycle
from .._validate import check_counter, check_int
from ._units import buffer_xml, regroup, safe_cutoff, trim_last, units_of

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

SUMMARY_ATTEMPTS = 3
"""LangChain calls its summary model ``with_retry``: three attempts in all, the error of the
last one propagating (langchain-ai/langchain#39268)."""

_KINDS = ("tokens", "messages", "fraction")
_DEFAULT_KEEP = ("messages", 20)
_DEFAULT_TRIM = 4000
_ID_DISPLAY = 64


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
            check_int("trim_tokens_to_summarize", self.trim_tokens_to_summarize, 0)
        if self.context_window is not None:
            check_int("context_window", self.context_window, 1)
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

    def prompt(self, units: Sequence[Message], count: Callable[[Sequence[Message]], int], *,
               count_text: Callable[[str], int] | None = None) -> str | None:
        """The summarizer's prompt for folding ``units`` (``None``: nothing to send, see the
        module doc); ``count_text`` as `trim_last` takes it."""
        if not units:
            return None
        trimmed = list(units) if self.trim_tokens_to_summarize is None else trim_last(
            units, self.trim_tokens_to_summarize, count, count_text=count_text)
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
        # the state at the turn start, as (list, length): the list only grows until a fold or
        # an abort replaces it, as the transcript does
        self._state_mark: tuple[list[Message], int] = (self._state, 0)

    def _mark_turn(self) -> None:
        self._state_mark = (self._state, len(self._state))

    def _added(self, message: Message) -> None:
        for unit in units_of(message):
            self._origin[id(unit)] = (unit, message)
            self._state.append(unit)

    def _restored(self) -> None:
        state, length = self._state_mark
        # the turn's input, when it was kept: a `UserInput` is its own unit (`units_of`)
        self._state = state[:length] + self._transcript[self._marked[1]:]

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
        return self._request(self._step(self._transcript))


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
        check_counter(counter)
        mark = config.limit_tokens
        limit = None
        if mark is not None:
            extra = counter.count_rendered(Rendered(base_system, ()), tuple(tools)) - counter.count_rendered(Rendered("", ()))
            limit = Limit(tokens=mark + max(0, int(extra)), kind="high_water")
        super().__init__(base_system, limit=limit)
        self.config = config
        self.counter = counter
        self._count_text = text_price(counter)
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self.folds = 0
        """Folds made so far (with a distill call or not)."""
        self._usage: Usage | None = None
        self._reported: dict[int, tuple[Message, int]] = {}  # id(reply) -> (reply, total tokens)
        # (state list, its length, the messages before its last group, where that group starts)
        self._grouped: tuple[list[Message], int, tuple[Message, ...], int] | None = None
        self._counted: tuple[list[Message], int, int] | None = None  # (state list, length, its tokens)

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

    def _summary(self, folded: Sequence[Message]) -> tuple[str, bool] | None:
        """``(summary of folded, whether the summarizer was called)``: `TOO_LONG` without a
        call when the summarizer would see nothing, else its reply, stripped — an empty one
        too, as LangChain takes it. ``None`` when the distiller gave none ("not this time":
        nothing is folded)."""
        prompt = self.config.prompt(folded, self.count, count_text=self._count_text)
        if prompt is None:
            return TOO_LONG, False
        request = Rendered("", (UserInput(prompt),))
        for attempt in range(SUMMARY_ATTEMPTS):
            try:
                reply = self._distill(request)
                break
            except StrategyError:
                raise  # the lab's own misuse error, not a failed call
            except Exception:
                if attempt + 1 == SUMMARY_ATTEMPTS:
                    raise  # before_model lets it propagate: the run stops, the state untouched
        if reply is None:
            return None
        if not isinstance(reply, str):
            raise StrategyError(f"distill must return a str or None, got {type(reply).__name__}")
        return reply.strip(), True

    def _state_tokens(self) -> int:
        """``count(self._state)``. With a counter that prices a request by its parts, kept as
        a running sum while the state only grew (the same list, longer)."""
        state = self._state
        if not prices_by_parts(self.counter):
            return self.count(state)
        memo = self._counted
        if memo is not None and memo[0] is state and len(state) >= memo[1]:
            total = memo[2] + self.counter.count_messages(state[memo[1]:])
        else:
            total = self.count(state)
        self._counted = (state, len(state), total)
        return total

    def _step(self, transcript: Sequence[Message]) -> tuple[Message, ...]:
        state = self._state
        if self.config.triggered(state, self._state_tokens(), self.reported(state)):
            cut = self.config.cutoff(state, self.count)
            if cut > 0:
                folded, kept = state[:cut], state[cut:]
                summary = self._summary(folded)
                if summary is not None:  # None: the state stays, and the next model call tries again
                    text, called = summary
                    self._state = [UserInput(SUMMARY_PREFIX + text), *kept]
                    self.folds += 1
                    if called:
                        # without a distill call the folded messages are dropped, not summarized
                        self._events.emit(ContextCompacted(len(regroup(self._pairs(folded)))))
        return self._regrouped()

    def _regrouped(self) -> tuple[Message, ...]:
        """``regroup(self._pairs(self._state))``. While the state only grew (the same list,
        longer), only its last group and the units appended since are regrouped: a request
        costs what was appended, not the state."""
        state = self._state
        memo = self._grouped
        if memo is not None and memo[0] is state and len(state) >= memo[1]:
            _, _, done, start = memo
        else:
            done, start = [], 0
        pairs = self._pairs(state[start:])
        tail = regroup(pairs)
        # where the last message's group begins: a run of tool-result units of one round
        j = len(pairs) - 1
        if j >= 0 and isinstance(pairs[j][0], ToolResults) and isinstance(pairs[j][1], ToolResults):
            while j > 0 and pairs[j - 1][1] is pairs[j][1] and isinstance(pairs[j - 1][0], ToolResults):
                j -= 1
        out = (*done, *tail)
        self._grouped = (state, len(state), out[:-1] if tail else done, start + max(j, 0))
        return out

    def __repr__(self) -> str:
        return f"SummarizationContext({self.config!r}, {len(self._state)} units)"


