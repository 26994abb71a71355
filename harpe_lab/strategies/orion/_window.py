"""orion's windows: the configurations (`SlidingWindow`, `SummarizeWindow`), what they
choose (`WindowSelection`), and the selection and fold behind them — turns priced once,
chosen newest first, what does not fit folded into one summary message."""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import KW_ONLY, dataclass
from typing import Any, Iterable, Mapping, Sequence, Union

from ..harpe import DISTILL_SYSTEM, distill_request
from ...errors import BudgetError, StrategyError
from ...messages import AssistantMessage, Message, Rendered, ToolResults, UserInput
from ...protocol import Distill
from ...tokens import prices_by_parts
from .._validate import check_int

__all__ = [
    "SlidingWindow",
    "SummarizeWindow",
    "Window",
    "WindowSelection",
    "SUMMARY_PREFIX",
    "summary_message",
    "summarize_request",
]

SUMMARY_PREFIX = "[Summary of earlier conversation]"
"""The first line of orion's summary message; the summary text follows a blank line."""

_MESSAGE_TYPES = (UserInput, AssistantMessage, ToolResults)


# --- configuration ------------------------------------------------------------------------



def _check_window_fields(window: Any) -> None:
    check_int("max_tokens", window.max_tokens, 1)
    check_int("reserve_tokens", window.reserve_tokens, 0)
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
    `DISTILL_SYSTEM` and one user message built by `harpe_lab.strategies.harpe.distill_request`."""
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

    __slots__ = ("counter", "messages", "starts", "sizes", "pinned", "_pinned_total", "_unpinned", "_next_pin",
                 "_fixed")

    def __init__(self, counter: Any, messages: Iterable[Message] = ()) -> None:
        self.counter = counter
        self.messages: list[Message] = []
        self.starts: list[int] = []  # index of each turn's first message
        self.sizes: list[int | None] = []  # tokens of each turn (None: not priced yet)
        self.pinned: list[int] = []  # turns holding a pinned message, ascending
        self._pinned_total: int | None = 0
        # _unpinned[t]: tokens of the unpinned turns before turn t, for the turns known so far
        # (None for a scanned index, which prices only the turns a selection visits);
        # _next_pin: the first of `pinned` not yet passed by it
        self._unpinned: list[int] | None = [0]
        self._next_pin = 0
        self._fixed: tuple[str, tuple, int] | None = None
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
        index._unpinned = None
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

    def keep(self, turns: Sequence[int]) -> "_TurnIndex":
        """A new index of these turns (ascending), every one priced: what `add` ing their
        messages one by one would build, from the sums already known."""
        out = _TurnIndex(self.counter)
        pinned = set(self.pinned)
        for t in turns:
            out.starts.append(len(out.messages))
            out.sizes.append(self.size(t))
            out.messages.extend(self.turn(t))
            if t in pinned:
                out.pinned.append(len(out.starts) - 1)
                out._pinned_total += out.sizes[-1]  # type: ignore[operator]
        return out

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

    def fixed(self, system: str, tools: tuple) -> int:
        """The counter's price of a request of ``system`` and ``tools`` and no messages (the
        last one asked for is kept: a context asks for its own at every request)."""
        last = self._fixed
        if last is None or last[0] is not system or last[1] is not tools:
            last = self._fixed = (system, tools, self.counter.count_rendered(Rendered(system), tools))
        return last[2]

    def unpinned_before(self, n: int) -> list[int] | None:
        """Running sums of the unpinned turns' tokens: ``[k]`` is the tokens of the unpinned
        turns before turn ``k``, for ``k`` up to ``n`` (turns before ``n`` only: a turn's
        size and pin are final once the next turn starts). None for a scanned index."""
        sums = self._unpinned
        if sums is not None:
            pinned, p, sizes = self.pinned, self._next_pin, self.sizes
            for t in range(len(sums) - 1, n):
                if p < len(pinned) and pinned[p] == t:
                    p += 1
                    sums.append(sums[-1])
                else:
                    sums.append(sums[-1] + sizes[t])  # type: ignore[operator]
            self._next_pin = p
        return sums

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
    fixed = index.fixed(system, tools)
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
    # Newest first, every older turn is added while it fits (a pinned one is paid for
    # already) and the walk stops at the first that does not: the turns kept are the
    # longest run back from the latest whose unpinned tokens fit. With the running sums of
    # an index built message by message that run is found by bisection.
    unpinned = index.unpinned_before(n - 1) if n else None
    if unpinned is not None:
        first = bisect_left(unpinned, unpinned[n - 1] - (available - need), 0, n - 1)
        used = need + unpinned[n - 1] - unpinned[first]
        turns = pinned[: bisect_left(pinned, first)] + list(range(first, n))
    else:  # walk, pricing only the turns it visits
        used = need
        first = n - 1
        p = len(pinned) - 1 - latest_pinned
        t = n - 2
        sizes = index.sizes
        while t >= 0:
            if p >= 0 and pinned[p] == t:
                p -= 1  # already paid for
            else:
                s = sizes[t]
                if s is None:
                    s = size(t)
                if used + s > available:
                    break
                used += s
            first = t
            t -= 1
        turns = pinned[: p + 1] + list(range(max(first, 0), n))
    # A counter that prices a request as the sum of its parts prices this one at what the
    # walk added up: the request need not be priced again, message by message.
    known = fixed + head_tokens + used if prices_by_parts(counter) else None
    chosen = _render(index, turns, head, system, tools, counter, known)
    while chosen.tokens > limit:
        # Only a counter that prices a request otherwise than as the sum of its parts lands
        # here: give up the oldest unpinned window turn until the request fits.
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
    index: _TurnIndex, turns: list[int], head: UserInput | None, system: str, tools: tuple, counter: Any,
    tokens: int | None = None,
) -> _Chosen:
    messages: list[Message] = [] if head is None else [head]
    starts, every, n = index.starts, index.messages, len(index.starts)
    i, last = 0, len(turns) - 1
    while i <= last:  # one slice per run of consecutive turns (the window is one run)
        if turns[last] - turns[i] == last - i:  # the rest is one run (turns ascend, distinct)
            j = last
        else:
            j = i
            while turns[j + 1] == turns[j] + 1:
                j += 1
        end = turns[j] + 1
        messages += every[starts[turns[i]] : starts[end] if end < n else len(every)]
        i = j + 1
    out = tuple(messages)
    return _Chosen(turns, out, counter.count_rendered(Rendered(system, out), tools) if tokens is None else tokens)


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
        rest = current.keep(chosen.turns)
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
