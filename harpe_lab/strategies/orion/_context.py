"""`OrionContext`: an orion window run through Harpe's context lifecycle, and the events
it reports (`ContextBudget`, `StrategyWarning`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

from ...errors import StrategyError
from ...messages import Message, Usage, UserInput
from ...protocol import Compaction, ContextCompacted, EventHub, Limit, MeteredDistill
from .._lifecycle import TurnLifecycle
from ._window import SlidingWindow, SummarizeWindow, Window, _choose, _fold, _messages, _TurnIndex

__all__ = ["OrionContext", "ContextBudget", "StrategyWarning"]


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


# --- the context --------------------------------------------------------------------------


class OrionContext(TurnLifecycle):
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
        start = _messages(tuple(initial))
        super().__init__(base_system, start)
        if not isinstance(window, (SlidingWindow, SummarizeWindow)):
            raise StrategyError(f"window must be an orion SlidingWindow or SummarizeWindow, got {window!r}")
        tools = tuple(tools)
        for i, schema in enumerate(tools):
            if not isinstance(schema, Mapping):
                raise StrategyError(f"tools[{i}] must be an OpenAI tool schema (a dict), got {schema!r}")
        self.window = window
        self.tools = tools
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(window.distill, self._events) if isinstance(window, SummarizeWindow) else None
        # orion prices requests itself; the provider's report is kept only as a record
        self.last_input_tokens = 0
        self._live = _TurnIndex(window.counter, start)  # not folded into the summary
        self._summary: str | None = None
        self._head: UserInput | None = None
        # At the turn start: the live index and its length, the summary and its message. An
        # index only grows (a fold starts a new one), so its first messages stay what they
        # were: a turn start copies nothing.
        self._marked_state: tuple[_TurnIndex, int, str | None, UserInput | None] = (
            self._live, len(start), None, None
        )  # fmt: skip

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

    def _mark_turn(self) -> None:
        live = self._live
        self._marked_state = (live, len(live.messages), self._summary, self._head)

    def _added(self, message: Message) -> None:
        self._live.add(message)

    def _restored(self) -> None:
        live, live_length, self._summary, self._head = self._marked_state
        kept = self._transcript[self._marked[1]:]  # the turn's input, when it had one
        self._live = _TurnIndex(self.window.counter, live.messages[:live_length] + kept)

    def compact(self) -> Compaction:
        window = self.window
        warning = None
        folded = 0
        if isinstance(window, SummarizeWindow):
            f = _fold(window, self._distill, self._live, self._base_system, self.tools, self._summary, self._head)
            if f.index is not None:
                self._live, self._summary, self._head = f.index, f.summary, f.head
            chosen, warning, folded = f.chosen, f.warning, f.folded
        else:
            chosen = _choose(window, self._live, self._base_system, self.tools, None, "SlidingWindow")
        request = self._request(chosen.messages)
        if warning is not None:
            self._emit(StrategyWarning(warning))
        if folded:
            self._emit(ContextCompacted(folded))
        originals = len(chosen.messages) - (self._head is not None)
        pruned = len(self._transcript) - originals
        self._emit(ContextBudget(chosen.tokens, window.max_tokens, len(chosen.messages), pruned))
        return request

    def observe(self, usage: Usage) -> None:
        self.last_input_tokens = usage.input_tokens

    def _emit(self, event: object) -> None:
        self._events.emit(event)

    def __repr__(self) -> str:
        return f"OrionContext({type(self.window).__name__}, {len(self._transcript)} messages)"
