"""orion's context windows: whole turns chosen by tokens, optionally with one running summary.

orion (an agent framework) chooses what each model request carries by counting tokens:

* the system prompt, the tool schemas (and the reply priming a chat request always ends
  with) and ``reserve_tokens`` for the reply are taken off ``max_tokens``;
* the messages are grouped into turns (`harpe_lab.context.turn_groups`: a turn starts at
  each user input), so a reply is never separated from the tool results that answer it;
* the latest turn is always kept, and so is every turn holding a pinned message
  (``pinned=True`` on a `UserInput`, `AssistantMessage` or `ToolResults`);
* then the most recent other turns, newest first, until the first that does not fit — the
  window stops there rather than skip a turn to fit an older, smaller one;
* the kept turns go out in their original order.

When the pinned turns and the latest turn alone do not fit, the window raises
`BudgetError` with the numbers. `SlidingWindow` simply leaves the other turns out;
`SummarizeWindow` folds them (and any earlier summary) into exactly one pinned user
message, ``[Summary of earlier conversation]``, placed first and counted in the budget.

Both are frozen, validated configurations and pure callables from messages to messages.
`OrionContext` runs either of them through Harpe's context lifecycle (for
`harpe_lab.replay.replay` and live agents); `prepare_context` renders a selection as one
`ChatMLTemplate` prompt for completion-style models.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import KW_ONLY, dataclass
from itertools import chain
from typing import Any, Callable, Iterable, Mapping, Sequence, Union

from ..context import DISTILL_SYSTEM, distill_request
from ..errors import BudgetError, StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill

__all__ = [
    "SlidingWindow",
    "SummarizeWindow",
    "Window",
    "WindowSelection",
    "OrionContext",
    "ContextBudget",
    "StrategyWarning",
    "ChatMLTemplate",
    "PreparedContext",
    "prepare_context",
    "SUMMARY_PREFIX",
    "summary_message",
    "summarize_request",
]

SUMMARY_PREFIX = "[Summary of earlier conversation]"
"""The first line of orion's summary message; the summary text follows a blank line."""

_MESSAGE_TYPES = (UserInput, AssistantMessage, ToolResults)


# --- events -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ContextBudget:
    """Event: what one request (one `OrionContext.compact`) used of the window's budget.

    ``used_tokens`` is the counter's price of the whole request (system prompt, messages,
    tool schemas, reply priming); ``max_tokens`` the window's ``max_tokens`` (the request
    itself is promised to stay within ``max_tokens - reserve_tokens``);
    ``messages_in_context`` counts the request's messages (a summary message included);
    ``messages_pruned`` the stored messages it does not carry verbatim.
    """

    used_tokens: int
    max_tokens: int
    messages_in_context: int
    messages_pruned: int


@dataclass(frozen=True)
class StrategyWarning:
    """Event: a strategy could not do what it is configured to and did something weaker.

    `OrionContext` emits it when ``distill`` fails (raises, returns ``None`` or writes a
    summary too long to fit): that request goes out as a plain sliding window and the fold
    is tried again at the next compaction.
    """

    message: str


# --- configuration ------------------------------------------------------------------------


def _check_int(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise StrategyError(f"{name} must be an int >= {minimum}, got {value!r}")


def _check_window_fields(window: Any) -> None:
    _check_int("max_tokens", window.max_tokens, 1)
    _check_int("reserve_tokens", window.reserve_tokens, 0)
    if window.reserve_tokens >= window.max_tokens:
        raise StrategyError(
            f"reserve_tokens must be less than max_tokens ({window.max_tokens}), got "
            f"{window.reserve_tokens}; the request needs room beside the reply's reserve"
        )
    counter = window.counter
    if not (callable(getattr(counter, "count_message", None)) and callable(getattr(counter, "count_rendered", None))):
        raise StrategyError(
            f"counter must be a token counter with count_message and count_rendered "
            f"(e.g. harpe_lab.BytesCounter() or harpe_lab.TiktokenCounter()), got {counter!r}"
        )


@dataclass(frozen=True)
class SlidingWindow:
    """orion's sliding window: the pinned turns, the latest turn, and the most recent other
    turns that fit ``max_tokens - reserve_tokens`` (see the module docstring).

    Calling it returns the kept messages; `select` also says which were dropped. It never
    mutates its input, and applying it to its own output changes nothing.
    """

    max_tokens: int
    """The model's context size in tokens (request plus reply)."""
    _: KW_ONLY
    counter: Any
    """A `harpe_lab.tokens` counter: ``count_message`` prices each message, memoized."""
    reserve_tokens: int = 2048
    """Tokens kept free for the reply."""

    def __post_init__(self) -> None:
        _check_window_fields(self)

    @property
    def max_request_tokens(self) -> int:
        """The most tokens a request may use: ``max_tokens - reserve_tokens``."""
        return self.max_tokens - self.reserve_tokens

    def select(
        self, messages: Sequence[Message], *, system: str = "", tools: Sequence[Mapping[str, Any]] = ()
    ) -> "WindowSelection":
        """Choose the turns of ``messages`` that go into a request with this ``system``
        prompt and these OpenAI ``tools`` schemas. Raises `BudgetError` when the pinned
        turns and the latest turn alone do not fit."""
        index = _TurnIndex.scan(self.counter, _sequence(messages))
        chosen = _choose(self, index, system, tuple(tools), None, "SlidingWindow")
        kept = tuple(i for t in chosen.turns for i in index.span(t))
        return WindowSelection(chosen.messages, kept, len(index.messages), chosen.tokens)

    def __call__(
        self, messages: Sequence[Message], *, system: str = "", tools: Sequence[Mapping[str, Any]] = ()
    ) -> tuple[Message, ...]:
        """The messages `select` keeps, as a tuple."""
        index = _TurnIndex.scan(self.counter, _sequence(messages))
        return _choose(self, index, system, tuple(tools), None, "SlidingWindow").messages


@dataclass(frozen=True)
class SummarizeWindow:
    """orion's summarizing window: `SlidingWindow`'s selection, but the turns that do not
    fit, and any earlier summary, are folded into one pinned user message placed first::

        UserInput("[Summary of earlier conversation]\\n\\n" + summary, pinned=True)

    The summary message counts against the budget. ``distill(Rendered) -> str | None``
    writes the summary: it receives Harpe's `DISTILL_SYSTEM` prompt and the request
    `summarize_request` builds (Harpe's distill request over the dropped messages). When
    the new summary leaves too little room, more turns are folded in, with another distill
    call, until the request fits. When distill raises, returns ``None`` or cannot be made
    to fit, the request falls back to the plain sliding window and a warning is reported
    (`StrategyWarning` from `OrionContext`, ``warning`` from `select`).
    """

    max_tokens: int
    """The model's context size in tokens (request plus reply)."""
    _: KW_ONLY
    counter: Any
    """A `harpe_lab.tokens` counter: ``count_message`` prices each message, memoized."""
    distill: Distill
    """Writes the summary: ``Rendered -> str | None``."""
    reserve_tokens: int = 2048
    """Tokens kept free for the reply."""

    def __post_init__(self) -> None:
        _check_window_fields(self)
        if not callable(self.distill):
            raise StrategyError(
                f"distill must be a callable Rendered -> str | None, got {self.distill!r}; "
                "use harpe_lab.summarize.ExtractiveDistiller for an offline one"
            )

    @property
    def max_request_tokens(self) -> int:
        """The most tokens a request may use: ``max_tokens - reserve_tokens``."""
        return self.max_tokens - self.reserve_tokens

    def select(
        self,
        messages: Sequence[Message],
        *,
        system: str = "",
        tools: Sequence[Mapping[str, Any]] = (),
        summary: str | None = None,
    ) -> "WindowSelection":
        """Choose what goes into a request, folding what does not fit into the summary.

        ``summary`` is the running summary so far (``None``: there is none yet; its
        message is then counted and sent first). The result's ``messages`` start with the
        summary message whenever there is a summary; ``summary`` holds its new text.
        """
        seq = _sequence(messages)
        head = None if summary is None else summary_message(summary)
        index = _TurnIndex.scan(self.counter, seq)
        f = _fold(self, self.distill, index, system, tuple(tools), summary, head)
        request = f.chosen.messages
        kept = _positions(seq, request[1:] if f.head is not None else request)
        return WindowSelection(request, kept, len(seq), f.chosen.tokens, f.summary, f.folded > 0, f.warning)

    def __call__(
        self, messages: Sequence[Message], *, system: str = "", tools: Sequence[Mapping[str, Any]] = ()
    ) -> tuple[Message, ...]:
        """The request's messages `select` returns (summary message first when there is one)."""
        return self.select(messages, system=system, tools=tools).messages


Window = Union[SlidingWindow, SummarizeWindow]


@dataclass(frozen=True)
class WindowSelection:
    """What a window chose for one request.

    ``kept`` are indices into the input of the messages sent verbatim (`dropped` the
    others); ``messages`` is the request's message list (the summary message first, when
    there is one, then the kept messages). ``tokens`` is the counter's price of the whole
    request. ``folded`` says whether this call folded inputs into the summary (then every
    dropped input was); ``warning`` says why a fold fell back.
    """

    messages: tuple[Message, ...]
    kept: tuple[int, ...]
    total: int
    """How many messages the input held."""
    tokens: int
    summary: str | None = None
    folded: bool = False
    warning: str | None = None

    @property
    def dropped(self) -> tuple[int, ...]:
        """Indices of the inputs the request does not carry verbatim."""
        keep = set(self.kept)
        return tuple(i for i in range(self.total) if i not in keep)


def summary_message(summary: str) -> UserInput:
    """orion's summary message: a pinned `UserInput` of `SUMMARY_PREFIX`, a blank line and
    the summary text."""
    return UserInput(f"{SUMMARY_PREFIX}\n\n{summary}", pinned=True)


def summarize_request(dropped: Sequence[Message], summary: str | None) -> Rendered:
    """The distill request for folding ``dropped`` into ``summary``: Harpe's
    `DISTILL_SYSTEM` and one user message built by `harpe_lab.context.distill_request`."""
    return Rendered(DISTILL_SYSTEM, (UserInput(distill_request(dropped, summary or "")),))


# --- selection ----------------------------------------------------------------------------


def _sequence(messages: Iterable[Message]) -> Sequence[Message]:
    return messages if isinstance(messages, (list, tuple)) else tuple(messages)


def _messages(messages: Iterable[Message]) -> Sequence[Message]:
    seq = _sequence(messages)
    for i, m in enumerate(seq):
        if not isinstance(m, _MESSAGE_TYPES):
            raise TypeError(f"message {i} is not a harpe_lab message: {m!r}")
    return seq


class _TurnIndex:
    """Messages grouped into turns, each turn priced once.

    A context grows its index one message at a time (`add`), so a replay prices every
    message once, not once per request. A pure call `scan` s its input instead: it finds
    the turn starts and pins in one pass and prices only the turns the selection visits.
    A scanned index is read-only.
    """

    __slots__ = ("counter", "messages", "starts", "sizes", "pinned", "_pinned_total")

    def __init__(self, counter: Any, messages: Iterable[Message] = ()) -> None:
        self.counter = counter
        self.messages: list[Message] = []
        self.starts: list[int] = []  # index of each turn's first message
        self.sizes: list[int | None] = []  # tokens of each turn (None: not priced yet)
        self.pinned: list[int] = []  # turns holding a pinned message, ascending
        self._pinned_total: int | None = 0
        for m in messages:
            self.add(m)

    @classmethod
    def scan(cls, counter: Any, messages: Sequence[Message]) -> "_TurnIndex":
        index = cls(counter)
        try:
            starts = [i for i, m in enumerate(messages) if m.role == "user"]
            marks = [i for i, m in enumerate(messages) if m.pinned]
        except AttributeError:
            _messages(messages)  # raises a TypeError naming the item that is not a message
            raise
        if messages and (not starts or starts[0] != 0):
            starts.insert(0, 0)  # a leading non-user prefix is a turn of its own
        pinned: list[int] = []
        for i in marks:
            t = bisect_right(starts, i) - 1
            if not pinned or pinned[-1] != t:
                pinned.append(t)
        index.messages = list(messages)
        index.starts, index.sizes, index.pinned = starts, [None] * len(starts), pinned
        index._pinned_total = None
        return index

    def add(self, message: Message) -> None:
        """Append one message (an index built by `add` has every turn priced)."""
        n = self.counter.count_message(message)
        if isinstance(message, UserInput) or not self.starts:
            self.starts.append(len(self.messages))
            self.sizes.append(0)
        t = len(self.starts) - 1
        self.messages.append(message)
        self.sizes[t] += n  # type: ignore[operator]
        if self.pinned and self.pinned[-1] == t:
            self._pinned_total += n  # type: ignore[operator]
        elif message.pinned:
            self.pinned.append(t)
            self._pinned_total += self.sizes[t]  # type: ignore[operator]

    def size(self, t: int) -> int:
        n = self.sizes[t]
        if n is None:
            count = self.counter.count_message
            n = self.sizes[t] = sum(count(m) for m in self.turn(t))
        return n

    @property
    def pinned_total(self) -> int:
        if self._pinned_total is None:
            self._pinned_total = sum(self.size(t) for t in self.pinned)
        return self._pinned_total

    def turn(self, t: int) -> list[Message]:
        end = self.starts[t + 1] if t + 1 < len(self.starts) else len(self.messages)
        return self.messages[self.starts[t] : end]

    def span(self, t: int) -> range:
        end = self.starts[t + 1] if t + 1 < len(self.starts) else len(self.messages)
        return range(self.starts[t], end)


@dataclass
class _Chosen:
    turns: list[int]  # kept turns, ascending
    messages: tuple[Message, ...]  # the request's messages (head first)
    tokens: int  # count_rendered of the request


def _choose(
    window: Window,
    index: _TurnIndex,
    system: str,
    tools: tuple,
    head: UserInput | None,
    what: str,
) -> _Chosen:
    counter = window.counter
    limit = window.max_tokens - window.reserve_tokens
    fixed = counter.count_rendered(Rendered(system), tools)
    head_tokens = counter.count_message(head) if head is not None else 0
    available = limit - fixed - head_tokens
    size, pinned = index.size, index.pinned
    n = len(index.starts)
    latest_pinned = bool(pinned) and pinned[-1] == n - 1
    latest = size(n - 1) if n else 0
    older_pinned = index.pinned_total - (latest if latest_pinned else 0)
    need = older_pinned + latest
    if need > available:
        raise BudgetError(_budget_message(window, what, older_pinned, latest, head_tokens, fixed, available))
    # Walk newest first over cached turn totals and stop at the first turn that does not
    # fit: a request costs O(turns kept), however long the history.
    used = need
    first = n - 1
    p = len(pinned) - 1 - latest_pinned
    t = n - 2
    while t >= 0:
        if p >= 0 and pinned[p] == t:
            p -= 1  # already paid for
        elif used + size(t) > available:
            break
        else:
            used += size(t)
        first = t
        t -= 1
    turns = pinned[: p + 1] + list(range(max(first, 0), n))
    chosen = _render(index, turns, head, system, tools, counter)
    while chosen.tokens > limit:
        # Only a counter that prices a request otherwise than as the sum of its parts
        # (ScaledCounter rounds the total) lands here: give up the oldest unpinned window
        # turn until the request fits.
        pinned_set = set(pinned)
        droppable = [t for t in turns[:-1] if t not in pinned_set]
        if not droppable:
            raise BudgetError(
                _budget_message(window, what, older_pinned, latest, head_tokens, fixed, available)
                + f" (the counter prices this request at {chosen.tokens} tokens)"
            )
        turns.remove(droppable[0])
        chosen = _render(index, turns, head, system, tools, counter)
    return chosen


def _choose_or_none(
    window: Window, index: _TurnIndex, system: str, tools: tuple, head: UserInput | None, what: str
) -> _Chosen | None:
    try:
        return _choose(window, index, system, tools, head, what)
    except BudgetError:
        return None


def _render(
    index: _TurnIndex, turns: list[int], head: UserInput | None, system: str, tools: tuple, counter: Any
) -> _Chosen:
    messages: list[Message] = [] if head is None else [head]
    for t in turns:
        messages.extend(index.turn(t))
    out = tuple(messages)
    return _Chosen(turns, out, counter.count_rendered(Rendered(system, out), tools))


def _budget_message(
    window: Window, what: str, pinned: int, latest: int, head: int, fixed: int, available: int
) -> str:
    summary = f", the summary message ({head})" if head else ""
    return (
        f"{what}: the pinned turns ({pinned} tokens){summary} and the latest turn ({latest}) need "
        f"{pinned + latest + head} tokens, but max_tokens={window.max_tokens} minus reserve_tokens="
        f"{window.reserve_tokens} minus {fixed} for the system prompt, tool schemas and reply "
        f"priming leaves {available + head}. Raise max_tokens, lower reserve_tokens, unpin "
        "messages or shorten the system prompt."
    )


def _positions(seq: Sequence[Message], kept: Sequence[Message]) -> tuple[int, ...]:
    """Indices in ``seq`` of ``kept``, a subsequence (by identity: equal messages of
    different turns are different messages)."""
    out: list[int] = []
    j = 0
    for m in kept:
        while seq[j] is not m:
            j += 1
        out.append(j)
        j += 1
    return tuple(out)


@dataclass
class _Folded:
    chosen: _Chosen
    index: _TurnIndex | None  # the messages still unsummarized, when the summary changed
    summary: str | None
    head: UserInput | None
    folded: int  # messages folded into the summary by this call
    warning: str | None


def _fold(
    window: SummarizeWindow,
    distill: Distill,
    index: _TurnIndex,
    system: str,
    tools: tuple,
    summary: str | None,
    head: UserInput | None,
) -> _Folded:
    what = "SummarizeWindow"
    window_chosen = _choose(window, index, system, tools, head, what)
    if len(window_chosen.turns) == len(index.starts):
        return _Folded(window_chosen, None, summary, head, 0, None)

    def fallback(reason: str) -> _Folded:
        return _Folded(
            window_chosen, None, summary, head, 0,
            f"{what}: {reason}; this request is the sliding window without a new summary "
            "(the fold is tried again at the next compaction)",
        )  # fmt: skip

    if _choose_or_none(window, index, system, tools, summary_message(""), what) is None:
        # Not even an empty summary fits beside the pinned and latest turns: a distill call
        # could only be wasted.
        return fallback("there is no room for a summary message beside the pinned and latest turns")
    current, chosen, text, folded = index, window_chosen, summary, 0
    while True:
        kept = set(chosen.turns)
        dropped = [m for t in range(len(current.starts)) if t not in kept for m in current.turn(t)]
        rest = _TurnIndex(window.counter, (m for t in chosen.turns for m in current.turn(t)))
        try:
            new = distill(summarize_request(dropped, text))
        except Exception as error:  # reported as a StrategyWarning, never swallowed
            return fallback(f"distill raised {type(error).__name__}: {error}")
        if new is None:
            return fallback("distill returned None")
        if not isinstance(new, str):
            raise StrategyError(f"distill must return a str or None, got {type(new).__name__}: {new!r:.80}")
        new_head = summary_message(new)
        folded += len(dropped)
        next_chosen = _choose_or_none(window, rest, system, tools, new_head, what)
        if next_chosen is None:
            size = window.counter.count_message(new_head)
            return fallback(
                f"distill wrote a summary message of {size} tokens, too long to fit beside the "
                "pinned and latest turns"
            )
        current, chosen, text = rest, next_chosen, new
        if len(chosen.turns) == len(rest.starts):
            return _Folded(chosen, rest, text, new_head, folded, None)


# --- the context --------------------------------------------------------------------------


def _continues(sent: tuple[Message, ...], since: list[Message], new: tuple[Message, ...]) -> bool:
    """Whether ``new`` is the previous request followed by the messages appended since
    (by identity), i.e. the provider session can simply go on."""
    if len(new) != len(sent) + len(since):
        return False
    return all(a is b for a, b in zip(new, chain(sent, since)))


class OrionContext:
    """Run an orion window (`SlidingWindow` or `SummarizeWindow`) through Harpe's context
    lifecycle, over a stored transcript that is never shortened.

    Every `compact` selects afresh with the window and reports ``compacted=True`` exactly
    when the new request is not the previous request followed by the messages appended
    since — when the window slid or a summary was folded — so an engine that otherwise
    extends its provider session stays faithful. Each compact emits `ContextBudget` to
    ``on_event``; a fold emits `ContextCompacted` (messages folded); a distill fallback
    emits `StrategyWarning`. `abort_turn` restores the transcript to before the turn plus
    its user input, and the summary to what it was at the turn's start.

    Capabilities it declares (`harpe_lab.protocol`): ``limit`` (a budget of
    ``max_request_tokens`` that no request exceeds, priced by the window's counter with
    ``tools``), ``base_system`` and ``summary``, and ``subscribe`` for its events (the
    window's distill calls are reported as `DistillCall`).
    """

    def __init__(
        self,
        base_system: str,
        window: Window,
        *,
        tools: Sequence[Mapping[str, Any]] = (),
        initial: Iterable[Message] = (),
        on_event: Callable[[object], None] | None = None,
    ) -> None:
        if not isinstance(base_system, str):
            raise StrategyError(f"base_system must be a str, got {type(base_system).__name__}")
        if not isinstance(window, (SlidingWindow, SummarizeWindow)):
            raise StrategyError(f"window must be an orion SlidingWindow or SummarizeWindow, got {window!r}")
        tools = tuple(tools)
        for i, schema in enumerate(tools):
            if not isinstance(schema, Mapping):
                raise StrategyError(f"tools[{i}] must be an OpenAI tool schema (a dict), got {schema!r}")
        start = list(_messages(tuple(initial)))
        self.base_system = base_system
        self.window = window
        self.tools = tools
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(window.distill, self._events) if isinstance(window, SummarizeWindow) else None
        # orion prices requests itself; the provider's report is kept only as a record
        self.last_input_tokens = 0
        self._transcript = start
        self._live = _TurnIndex(window.counter, start)  # not folded into the summary
        self._summary: str | None = None
        self._head: UserInput | None = None
        self._marked: tuple[list[Message], list[Message], str | None, UserInput | None] = (
            list(start), list(start), None, None
        )  # fmt: skip
        self._turn_input: UserInput | None = None
        self._sent: tuple[Message, ...] = ()
        self._since: list[Message] = list(start)

    @property
    def max_request_tokens(self) -> int:
        """The window's promise: no request exceeds ``max_tokens - reserve_tokens``."""
        return self.window.max_tokens - self.window.reserve_tokens

    @property
    def counter(self) -> Any:
        """The window's counter (what ``max_request_tokens`` is measured with)."""
        return self.window.counter

    @property
    def limit(self) -> Limit:
        """The window's promise, as a hard budget."""
        return Limit(tokens=self.max_request_tokens, kind="budget", counter=self.window.counter, tools=self.tools)

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    @property
    def summary(self) -> str:
        """The running summary ("" before the first fold, and for a `SlidingWindow`)."""
        return self._summary or ""

    @property
    def transcript(self) -> tuple[Message, ...]:
        """The whole stored history (a copy)."""
        return tuple(self._transcript)

    def begin_turn(self, input: UserInput) -> None:
        if not isinstance(input, UserInput):
            raise TypeError(f"begin_turn takes a UserInput, got {type(input).__name__}")
        self._marked = (list(self._transcript), list(self._live.messages), self._summary, self._head)
        self._turn_input = input
        self._add(input)

    def append(self, message: Message) -> None:
        if not isinstance(message, _MESSAGE_TYPES):
            raise TypeError(f"append takes a harpe_lab message, got {type(message).__name__}")
        self._add(message)

    def _add(self, message: Message) -> None:
        self._transcript.append(message)
        self._live.add(message)
        self._since.append(message)

    def compact(self) -> Compaction:
        window = self.window
        warning = None
        folded = 0
        if isinstance(window, SummarizeWindow):
            f = _fold(window, self._distill, self._live, self.base_system, self.tools, self._summary, self._head)
            if f.index is not None:
                self._live, self._summary, self._head = f.index, f.summary, f.head
            chosen, warning, folded = f.chosen, f.warning, f.folded
        else:
            chosen = _choose(window, self._live, self.base_system, self.tools, None, "SlidingWindow")
        rendered = Rendered(self.base_system, chosen.messages)
        compacted = not _continues(self._sent, self._since, chosen.messages)
        self._sent, self._since = chosen.messages, []
        if warning is not None:
            self._emit(StrategyWarning(warning))
        if folded:
            self._emit(ContextCompacted(folded))
        originals = len(chosen.messages) - (self._head is not None)
        pruned = len(self._transcript) - originals
        self._emit(ContextBudget(chosen.tokens, window.max_tokens, len(chosen.messages), pruned))
        return Compaction(rendered, compacted)

    def observe(self, usage: Usage) -> None:
        self.last_input_tokens = usage.input_tokens

    def commit_turn(self) -> None:
        self._turn_input = None

    def abort_turn(self) -> None:
        transcript, live, self._summary, self._head = self._marked
        tail = [] if self._turn_input is None else [self._turn_input]
        self._transcript = transcript + tail
        self._live = _TurnIndex(self.window.counter, live + tail)
        self._turn_input = None
        self._since = []

    def _emit(self, event: object) -> None:
        self._events.emit(event)

    def __repr__(self) -> str:
        return f"OrionContext({type(self.window).__name__}, {len(self._transcript)} messages)"


# --- completion-style prompts -------------------------------------------------------------


@dataclass(frozen=True)
class ChatMLTemplate:
    """Render a request as one ChatML prompt string, for completion-style models::

        <|im_start|>system
        {system}

        # Tools

        <tools>
        {one JSON schema per line}
        </tools><|im_end|>
        <|im_start|>user
        {text}<|im_end|>
        <|im_start|>assistant
        {text}
        <tool_call>
        {"name": ..., "arguments": {...}}
        </tool_call><|im_end|>
        <|im_start|>tool
        <tool_response id="{call id}">
        {content}
        </tool_response><|im_end|>
        <|im_start|>assistant

    Each message is ``<|im_start|>{role}\\n{content}<|im_end|>\\n``. The system block is
    omitted when there is neither a system prompt nor a tool schema; the tools section only
    when there are schemas. An assistant's text is followed by one ``<tool_call>`` block
    per call; all results of one tool round form one ``tool`` message, one
    ``<tool_response>`` block per result (a failed result is marked ``success="false"``).
    Attachments are not rendered (their bytes never enter the log). Text is inserted
    verbatim, as model chat templates do. ``add_generation_prompt`` ends the prompt with
    an open assistant message.
    """

    add_generation_prompt: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.add_generation_prompt, bool):
            raise StrategyError(f"add_generation_prompt must be a bool, got {self.add_generation_prompt!r}")

    def format(self, system: str, messages: Sequence[Message], tool_schemas: Sequence[Mapping[str, Any]] = ()) -> str:
        """The prompt for ``system``, ``messages`` and ``tool_schemas``."""
        parts: list[str] = []
        head = system
        if tool_schemas:
            lines = "\n".join(json.dumps(dict(s), ensure_ascii=False, sort_keys=True) for s in tool_schemas)
            head = (head + "\n\n" if head else "") + "# Tools\n\n<tools>\n" + lines + "\n</tools>"
        if head:
            parts.append(_block("system", head))
        for m in messages:
            if isinstance(m, UserInput):
                parts.append(_block("user", m.text))
            elif isinstance(m, AssistantMessage):
                calls = [
                    "<tool_call>\n"
                    + json.dumps({"name": c.name, "arguments": c.input}, ensure_ascii=False)
                    + "\n</tool_call>"
                    for c in m.calls
                ]
                parts.append(_block("assistant", "\n".join(([m.text] if m.text else []) + calls)))
            elif isinstance(m, ToolResults):
                responses = [
                    f'<tool_response id="{r.id}"{"" if r.success else _FAILED}>\n{r.content}\n</tool_response>'
                    for r in m.results
                ]
                parts.append(_block("tool", "\n".join(responses)))
            else:
                raise TypeError(f"not a harpe_lab message: {m!r}")
        if self.add_generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "".join(parts)


_FAILED = ' success="false"'


def _block(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


@dataclass(frozen=True)
class PreparedContext:
    """A prompt ready for a completion model, and what went into it.

    ``token_count`` is the prompt string counted by the counter given to `prepare_context`
    (the window itself budgets by chat-message prices, so the two can differ by the
    template's markup). ``messages_included`` counts the input messages the prompt
    carries verbatim, ``messages_pruned`` the others; ``messages`` is the selection (a
    summary message first, when there is one); ``warnings`` any fallback a
    `SummarizeWindow` had to make.
    """

    prompt: str
    token_count: int
    messages_included: int
    messages_pruned: int
    messages: tuple[Message, ...] = ()
    summary: str | None = None
    warnings: tuple[str, ...] = ()


def prepare_context(
    template: ChatMLTemplate,
    system: str,
    messages: Sequence[Message],
    tool_schemas: Sequence[Mapping[str, Any]],
    config: Window,
    counter: Any,
) -> PreparedContext:
    """Select ``messages`` with the window ``config`` and render them with ``template``.

    A `SummarizeWindow` starts without a summary and folds what does not fit into one (one
    or more distill calls). Raises `BudgetError` when the pinned and latest turns do not fit.
    """
    if not callable(getattr(template, "format", None)):
        raise StrategyError(f"template must have format(system, messages, tool_schemas), got {template!r}")
    if not isinstance(config, (SlidingWindow, SummarizeWindow)):
        raise StrategyError(f"config must be an orion SlidingWindow or SummarizeWindow, got {config!r}")
    if not callable(getattr(counter, "count", None)):
        raise StrategyError(f"counter must be a token counter with count(text), got {counter!r}")
    tools = tuple(tool_schemas)
    selection = config.select(messages, system=system, tools=tools)
    prompt = template.format(system, selection.messages, tools)
    return PreparedContext(
        prompt=prompt,
        token_count=counter.count(prompt),
        messages_included=len(selection.kept),
        messages_pruned=selection.total - len(selection.kept),
        messages=selection.messages,
        summary=selection.summary,
        warnings=() if selection.warning is None else (selection.warning,),
    )
