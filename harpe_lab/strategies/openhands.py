"""OpenHands' condensers, replayed natively: `AmortizedForgetting`, `ObservationMasking`,
`LLMSummarizing`.

Sources read (OpenHands V0, the ``openhands/memory/condenser`` package):

* OpenHands/OpenHands at commit 76483ad8f5f51b47b20f29acf2fa51c770a5aa67:
  ``openhands/memory/condenser/impl/amortized_forgetting_condenser.py``,
  ``observation_masking_condenser.py``, ``llm_summarizing_condenser.py``,
  ``openhands/events/serialization/event.py`` (``truncate_content``);
  ``openhands/memory/condenser/condenser.py`` (``RollingCondenser``) at 6cf28380 and
  ``openhands/memory/view.py`` (``View.from_events``) at bbc3142e;
* the defaults of ``openhands/core/config/condenser_config.py`` (All-Hands-AI/OpenHands,
  commit 068f86b1): ``max_size=100``, ``keep_first=1``, ``max_event_length=10_000``,
  ``attention_window=100`` — what a ``[condenser]`` section gets. (The classes' own
  defaults differ: ``keep_first=0`` for amortized forgetting, ``attention_window=5``.)
* OpenHands/software-agent-sdk, where the condensers moved:
  ``openhands-sdk/openhands/sdk/context/condenser/llm_summarizing_condenser.py`` (commit
  118402ab) and ``context/view/manipulation_indices.py``, ``properties/batch_atomicity.py``
  — for how a cut is kept off a tool call's pair (below).

OpenHands is not a light ``pip install`` (a runtime, a sandbox, its own LLM layer), so there
is no peer adapter checking these against its code; the hand-computed tests pin the
arithmetic instead.

**Events.** OpenHands condenses a *view*: a list of events. Mapped onto our messages, as
OpenHands records them:

* a `UserInput` is one event (a user ``MessageAction``);
* an `AssistantMessage` is one event per tool call (an action each; the text is the first
  action's thought), or one event when it calls no tool (an agent ``MessageAction``);
* a `ToolResults` is one event per result (an observation each).

So a reply with three parallel calls and their results are six events, in the SDK's order
(the actions of one response, then their observations). The view has no system-message,
recall or state-change events: our system prompt lives outside the messages. An event's
id is its index in the whole transcript's events.

**Rolling.** `AmortizedForgetting` and `LLMSummarizing` are ``RollingCondenser`` s: when
the view holds more than ``max_size`` events, a condensation forgets a run of events, and
it persists — the next views are built from what is left, so later condensations build on
the forgotten set. The request that finds the view too large is sent condensed (in
OpenHands the agent step returns the condensation and the next step sends the condensed
view; that step makes no model call, so the requests are the same). `ObservationMasking`
is not rolling: it rewrites the view at every request.

**The cut** (V0's arithmetic): ``head`` = the first ``keep_first`` events; the tail = the
last ``max_size // 2 - keep_first`` events (``- 1`` more for `LLMSummarizing`, whose
summary takes a place); everything between is forgotten. After a condensation the view
holds ``max_size // 2`` events (with the summary).

**Tool calls and their results are never split.** V0 counts events blindly and lets
``ConversationMemory._filter_unmatched_tool_calls`` drop the half of a pair whose partner
was forgotten when it builds the messages; the SDK moves the cut instead, to the next
*manipulation index* (a boundary that splits no batch of actions and no action from its
observation): the forgetting starts at the first boundary at or after ``keep_first`` and
ends at the first boundary at or after the naive end. We do as the SDK does — a unit (a
reply with calls and their results) that the head's end falls in is kept whole, one the
tail's start falls in is forgotten whole — so every request is one a provider accepts, and
the pairs the replay engine checks are kept. One more rule of ours: the newest message
(with its call) is never forgotten, even when a single unit is longer than the tail. When
nothing is left to forget, no condensation is made (the SDK's
``NoCondensationAvailableException``: the view is sent as it is).

Not modelled: condensation *requests* (an agent or user asking to condense), the SDK's
token trigger (``max_tokens``), tool-loop atomicity for thinking blocks.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, Callable, Iterable, Sequence

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResult, ToolResults, UserInput
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, MeteredDistill
from ._lifecycle import PolicyLifecycle
from .editing import EditContext, Edits
from ._validate import check_int
from ._preset import Factory, Knob, Preset, make_distiller

__all__ = [
    "AmortizedForgetting",
    "ObservationMasking",
    "LLMSummarizing",
    "CondenserContext",
    "Condensed",
    "MASKED",
    "NO_EVENTS_SUMMARIZED",
    "SUMMARIZE_SYSTEM",
    "events_in",
    "truncate_content",
    "summarize_prompt",
    "PRESETS",
]

MASKED = "<MASKED>"
"""OpenHands' placeholder for a masked observation, exactly."""
NO_EVENTS_SUMMARIZED = "No events summarized"
"""The previous summary OpenHands puts in its first summarizing request."""
_TRUNCATED = "\n[... Observation truncated due to length ...]\n"

SUMMARIZE_SYSTEM = (
    "You are maintaining a context-aware state summary for an interactive agent. You are given "
    "the previous summary and the events being forgotten. Reply with the updated summary only, in "
    "sections: USER_CONTEXT (the user's requirements and goals), TASK_TRACKING (task ids and "
    "statuses, verbatim), COMPLETED, PENDING, CURRENT_STATE; for code tasks also CODE_STATE (file "
    "paths, signatures), TESTS (failing cases, errors), CHANGES, DEPS and VERSION_CONTROL_STATUS. "
    "Keep every section concise; skip what is irrelevant to the task."
)
"""Our distill system prompt, naming the sections of OpenHands' summarizing prompt (which
OpenHands sends inside its one user message; we put the instructions here so that a
distiller reading the request does not take them for the conversation)."""


@dataclass(frozen=True)
class Condensed:
    """Event: an OpenHands condenser forgot ``forgotten_messages`` messages
    (``forgotten_events`` events); the view went from ``events_before`` to
    ``events_after`` events (a summary counted as one)."""

    forgotten_messages: int
    forgotten_events: int
    events_before: int
    events_after: int



def _events(m: Message) -> int:
    if isinstance(m, AssistantMessage):
        return max(1, len(m.calls))
    if isinstance(m, ToolResults):
        return len(m.results)
    return 1


def events_in(messages: Iterable[Message]) -> int:
    """How many OpenHands events ``messages`` are (see the module doc)."""
    return sum(map(_events, messages))


def truncate_content(content: str, max_chars: int | None) -> str:
    """OpenHands' ``truncate_content``: the middle of ``content`` cut out when it is longer
    than ``max_chars``, with ``"\\n[... Observation truncated due to length ...]\\n"`` between
    the first and the last ``max_chars // 2`` characters."""
    if max_chars is None or max_chars < 0 or len(content) <= max_chars:
        return content
    half = max_chars // 2
    return content[:half] + _TRUNCATED + (content[-half:] if half else "")


def _units(messages: Sequence[Message]) -> list[int]:
    """Start indices of the atomic units of ``messages``: a reply with tool calls and the
    results right after it are one unit; every other message is its own."""
    starts: list[int] = []
    k, n = 0, len(messages)
    while k < n:
        starts.append(k)
        m = messages[k]
        pair = isinstance(m, AssistantMessage) and m.calls and k + 1 < n and isinstance(messages[k + 1], ToolResults)
        k += 2 if pair else 1
    return starts


def _cut(view: Sequence[Message], keep_first: int, tail_events: int) -> tuple[int, int] | None:
    """Message indices ``[start, end)`` of ``view`` to forget: from the first unit boundary at
    or after ``keep_first`` events to the first at or after ``tail_events`` events from the
    end, never the newest unit; ``None`` when that leaves nothing to forget."""
    starts = _units(view)
    offsets = [0, *accumulate(map(_events, view))]
    at_starts = [offsets[s] for s in starts]  # ascending

    def boundary(event: int) -> int:
        j = bisect_left(at_starts, event)
        return starts[j] if j < len(starts) else len(view)

    start = boundary(keep_first)
    end = min(boundary(offsets[-1] - tail_events), starts[-1] if starts else 0)
    return (start, end) if end > start else None


# --- observation masking ------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ObservationMasking(Edits):
    """OpenHands' ``ObservationMaskingCondenser``: every observation outside the last
    ``attention_window`` events of the view has its content replaced by ``"<MASKED>"``, at
    every request (``i < len(view) - attention_window``, ``i`` the event's index).

    A frozen edit policy (see `harpe_lab.strategies.editing`), defined by its editor. Each
    tool result is an observation, so a round can be masked in part (its older results).
    Deviation: OpenHands
    swaps the observation for an ``AgentCondensationObservation('<MASKED>')``, which V0
    renders as a *user* message while the action's tool call, left without its result, is
    never sent; we keep the call and put ``"<MASKED>"`` in its result (same id, same
    success flag, attachments dropped), so the request stays a valid one. User inputs are
    not observations and are never masked.
    """

    attention_window: int
    """Events (not tool rounds) at the end of the view whose observations are kept."""

    def __post_init__(self) -> None:
        check_int("attention_window", self.attention_window, 1)

    def incremental(self) -> "_Masker":
        """This policy's editor (`harpe_lab.strategies.editing`): over a growing history, a
        request at a time; ``policy(messages)`` is a fresh one fed ``messages`` once."""
        return _Masker(self.attention_window)

    def context(self, base_system: str) -> EditContext:
        """A fresh lifecycle context that sends this policy applied to the whole transcript."""
        return EditContext(base_system, self)


def _masked(r: ToolResult) -> bool:
    return r.content == MASKED and not r.attachments


class _Masker:
    """`ObservationMasking` over messages that only grow. The cut is ``window`` events from
    the end of the view; a decision is how many leading results of a `ToolResults` are
    before it (those not already masked become ``"<MASKED>"``). The cut only moves forward,
    so each call looks at the new messages and at the results messages it reached since the
    last."""

    def __init__(self, window: int) -> None:
        self.window = window
        self.events = 0
        self.rounds: list[tuple[int, int, int]] = []  # (message index, first event, results)
        self.first = 0  # rounds before it are wholly before the cut (decided for good)
        self.decided: dict[int, int] = {}  # message index -> leading results before the cut

    def extend(self, messages: Sequence[Message], start: int) -> list[tuple[int, object]]:
        at = self.events
        rounds = self.rounds
        for k in range(start, len(messages)):
            m = messages[k]
            if isinstance(m, ToolResults):
                rounds.append((k, at, len(m.results)))
            at += _events(m)
        self.events = at
        cutoff = at - self.window
        changes: list[tuple[int, object]] = []
        r = self.first
        while r < len(rounds):
            k, first, n = rounds[r]
            if first >= cutoff:
                break
            cut = min(n, cutoff - first)
            if self.decided.get(k) != cut:
                self.decided[k] = cut
                m = messages[k]
                results = m.results  # type: ignore[union-attr]
                edits = any(not _masked(results[j]) for j in range(cut))
                changes.append((k, cut if edits else None))
            if cut == n:
                self.first = r + 1
            r += 1
        return changes

    def build(self, message: Message, decision: object) -> Message:
        m = message
        assert isinstance(m, ToolResults) and isinstance(decision, int)
        return ToolResults(tuple(
            r if j >= decision or _masked(r) else ToolResult(r.id, MASKED, (), r.success)
            for j, r in enumerate(m.results)
        ), m.pinned)


# --- rolling condensers ---------------------------------------------------------------------


def _check_sizes(max_size: object, keep_first: object, room: int) -> None:
    check_int("max_size", max_size, 1)
    check_int("keep_first", keep_first, 0)
    bound = max_size // 2 - room  # type: ignore[operator]
    if keep_first >= bound:  # type: ignore[operator]
        limit = "max_size // 2" if room == 0 else f"max_size // 2 - {room}"
        raise StrategyError(
            f"keep_first ({keep_first}) must be less than {limit} ({bound}) for max_size {max_size}: "
            "the tail needs at least one event"
        )


@dataclass(frozen=True, kw_only=True)
class AmortizedForgetting:
    """OpenHands' ``AmortizedForgettingCondenser``: when the view holds more than
    ``max_size`` events, keep the first ``keep_first`` and the last
    ``max_size // 2 - keep_first`` events and forget the rest, for good.

    OpenHands refuses ``keep_first >= max_size // 2``; so do we. The cut is moved off tool
    pairs as the module doc says. No summary, no distiller: the forgotten messages are
    gone (`Condensed` events report each condensation; no `ContextCompacted`).
    """

    max_size: int = 100
    """Events in the view above which it is condensed."""
    keep_first: int = 1
    """Events at the start of the view always kept (the task)."""

    def __post_init__(self) -> None:
        _check_sizes(self.max_size, self.keep_first, 0)

    @property
    def tail_events(self) -> int:
        """Events kept from the end at a condensation: ``max_size // 2 - keep_first``."""
        return self.max_size // 2 - self.keep_first

    def cut(self, view: Sequence[Message]) -> tuple[int, int] | None:
        """``[start, end)``: the messages of ``view`` to forget now (``None``: none)."""
        if events_in(view) <= self.max_size:
            return None
        return _cut(view, self.keep_first, self.tail_events)

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        """``messages`` as one view condensed once (what a first condensation sends)."""
        seq = tuple(messages)
        c = self.cut(seq)
        return seq if c is None else (*seq[: c[0]], *seq[c[1] :])

    def context(self, base_system: str, *, on_event: Callable[[object], None] | None = None) -> "CondenserContext":
        """A fresh rolling context for a replay."""
        return CondenserContext(base_system, self, on_event=on_event)


@dataclass(frozen=True, kw_only=True)
class LLMSummarizing:
    """OpenHands' ``LLMSummarizingCondenser``: when the view holds more than ``max_size``
    events, the events between the first ``keep_first`` and the last
    ``max_size // 2 - keep_first - 1`` are summarized into one summary event placed right
    after the head; the previous summary is part of what is summarized (it is replaced).

    The summary is a user message carrying the distiller's reply as it is (OpenHands'
    ``AgentCondensationObservation``, which it renders as a user message). The distill
    request (`summarize_prompt`) holds the previous summary (``"No events summarized"``
    the first time) and every forgotten event, each cut to ``max_event_length`` characters
    by OpenHands' ``truncate_content``. A distiller returning ``None`` means "not this
    time": the view is sent uncondensed and the next request tries again.

    OpenHands checks ``keep_first < max_size // 2``; with ``keep_first = max_size // 2 - 1``
    its tail is empty and it fails on an empty slice, so, like the SDK, we ask for
    ``keep_first < max_size // 2 - 1``.
    """

    max_size: int = 100
    """Events in the view above which it is condensed (the summary counts as one)."""
    keep_first: int = 1
    """Events at the start of the view always kept (the task)."""
    max_event_length: int = 10_000
    """Characters of each event (and of the previous summary) in the distill request."""

    def __post_init__(self) -> None:
        _check_sizes(self.max_size, self.keep_first, 1)
        check_int("max_event_length", self.max_event_length, 0)

    @property
    def tail_events(self) -> int:
        """Events kept from the end at a condensation: ``max_size // 2 - keep_first - 1``."""
        return self.max_size // 2 - self.keep_first - 1

    def cut(self, view: Sequence[Message], *, summary: bool = False) -> tuple[int, int] | None:
        """``[start, end)``: the messages of ``view`` (without the summary; ``summary``:
        whether one is in the view) to summarize now (``None``: none)."""
        if events_in(view) + summary <= self.max_size:
            return None
        return _cut(view, self.keep_first, self.tail_events)

    def context(self, base_system: str, *, distill: Distill,
                on_event: Callable[[object], None] | None = None) -> "CondenserContext":
        """A fresh rolling context for a replay; build ``distill`` fresh for it too."""
        return CondenserContext(base_system, self, distill=distill, on_event=on_event)


def _event_texts(m: Message) -> list[str]:
    """The events of ``m`` as text, one string each (our rendering of OpenHands' ``str(event)``)."""
    if isinstance(m, UserInput):
        return [f"USER MESSAGE:\n{m.text}"]
    if isinstance(m, AssistantMessage):
        if not m.calls:
            return [f"AGENT MESSAGE:\n{m.text}"]
        out = []
        for j, c in enumerate(m.calls):
            thought = f"THOUGHT: {m.text}\n" if j == 0 and m.text else ""
            out.append(f"{thought}ACTION {c.name}:\n{json.dumps(c.input, ensure_ascii=False, default=str)}")
        return out
    return [f"OBSERVATION ({'ok' if r.success else 'error'}):\n{r.content}" for r in m.results]


def summarize_prompt(previous: str, forgotten: Sequence[tuple[int, str]], max_event_length: int) -> str:
    """The user message of the distill request, shaped as OpenHands' (its instructions are
    in `SUMMARIZE_SYSTEM`): the previous summary and each forgotten ``(event id, text)``,
    each cut by `truncate_content`."""
    parts = [f"<PREVIOUS SUMMARY>\n{truncate_content(previous, max_event_length)}\n</PREVIOUS SUMMARY>\n\n\n"]
    parts += [f"<EVENT id={i}>\n{truncate_content(text, max_event_length)}\n</EVENT>\n" for i, text in forgotten]
    parts.append("Now summarize the events using the rules above.")
    return "".join(parts)


class CondenserContext(PolicyLifecycle):
    """A rolling OpenHands condenser through Harpe's lifecycle.

    It stores the whole transcript and what has been forgotten: one run
    ``transcript[start:resume]`` (the head never changes, so successive condensations grow
    one run), and, for `LLMSummarizing`, the summary message that stands in its place. Each
    request is the view: ``transcript[:start] + [summary] + transcript[resume:]``, condensed
    first when it is too large. `abort_turn` also undoes a condensation made during the
    aborted turn, as Harpe's `SummarizingContext` restores its summary.
    """

    def __init__(self, base_system: str, condenser: AmortizedForgetting | LLMSummarizing, *,
                 distill: Distill | None = None, on_event: Callable[[object], None] | None = None) -> None:
        if not isinstance(condenser, (AmortizedForgetting, LLMSummarizing)):
            raise StrategyError(f"condenser must be AmortizedForgetting or LLMSummarizing, got {condenser!r}")
        summarizes = isinstance(condenser, LLMSummarizing)
        if summarizes and distill is None:
            raise StrategyError(
                "LLMSummarizing needs distill=: a callable Rendered -> str | None, e.g. "
                "harpe_lab.summarize.ExtractiveDistiller()"
            )
        if not summarizes and distill is not None:
            raise StrategyError("AmortizedForgetting summarizes nothing: it takes no distill")
        super().__init__(base_system, condenser.cut)
        self.condenser = condenser
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events) if summarizes else None
        self._forgot = (0, 0)  # transcript[start:resume] is forgotten
        self._summary: UserInput | None = None
        self._marked_state = (self._forgot, self._summary)
        # the events of the view without the summary, kept as messages come: most requests
        # need no condensation, and this says so without walking the view
        self._view_events = events_in(self._transcript)
        self._before: tuple[list[Message], int, int] = (self._transcript, 0, 0)  # see `_event_ids`

    @property
    def distill(self) -> Distill | None:
        """The distiller this context calls (``None`` for amortized forgetting)."""
        return None if self._distill is None else self._distill.distill

    @property
    def summary_message(self) -> UserInput | None:
        """The summary event in the view (``None`` before the first summarizing condensation)."""
        return self._summary

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_state = (self._forgot, self._summary)

    def _added(self, message: Message) -> None:
        self._view_events += _events(message)

    def _restored(self) -> None:
        self._forgot, self._summary = self._marked_state
        self._view_events = events_in(self._originals())

    def _originals(self) -> list[Message]:
        start, resume = self._forgot
        t = self._transcript
        return t[:start] + t[resume:]

    def _event_ids(self, lo: int, hi: int) -> list[tuple[int, str]]:
        """(event id, text) of the events of ``transcript[lo:hi]``."""
        t = self._transcript
        # the events before lo, counted on from the last call's: the transcript list only
        # grows (an abort replaces it) and each condensation starts at or after the last
        seen, at, before = self._before
        first = before + events_in(t[at:lo]) if seen is t and at <= lo else events_in(t[:lo])
        self._before = (t, lo, first)
        out = []
        for m in self._transcript[lo:hi]:
            for text in _event_texts(m):
                out.append((first + len(out), text))
        return out

    def _condense(self) -> None:
        c = self.condenser
        before = self._view_events + (self._summary is not None)
        if before <= c.max_size:
            return  # what `cut` checks first
        start, resume = self._forgot
        view = self._originals()
        cut = _cut(view, c.keep_first, c.tail_events)
        if cut is None:
            return
        lo, hi = cut
        # view index -> transcript index: the view is transcript[:start] + transcript[resume:]
        to_t = (lambda k: k if k < start else k - start + resume) if resume > start else (lambda k: k)
        t_lo, t_hi = to_t(lo), to_t(hi - 1) + 1
        summary = self._summary
        if isinstance(c, LLMSummarizing):
            assert self._distill is not None
            previous = NO_EVENTS_SUMMARIZED if summary is None else summary.text
            # what the view held between head and tail: the forgotten originals (the previous
            # summary sat before them and is folded in through <PREVIOUS SUMMARY>)
            spans = [(t_lo, t_hi)] if resume <= start or t_lo >= resume else [(t_lo, start), (resume, t_hi)]
            forgotten = [e for a, b in spans for e in self._event_ids(a, b)]
            prompt = summarize_prompt(previous, forgotten, c.max_event_length)
            text = self._distill(Rendered(SUMMARIZE_SYSTEM, (UserInput(prompt),)))
            if text is None:
                return
            if not isinstance(text, str):
                raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
            summary = UserInput(text)
        new_start = t_lo if resume <= start else min(start, t_lo)
        self._forgot = (new_start, t_hi)
        self._summary = summary
        dropped = hi - lo
        # the view loses exactly view[lo:hi]: the head before lo never moves past the
        # forgotten run's start, so the new run joins the old one
        forgotten = events_in(view[lo:hi])
        self._view_events -= forgotten
        after = self._view_events + (summary is not None)
        self._events.emit(Condensed(dropped, forgotten, before, after))
        if summary is not None:
            self._events.emit(ContextCompacted(dropped))

    def render(self) -> tuple[Message, ...]:
        """The view as it stands (no condensation)."""
        view = self._originals()
        if self._summary is not None:
            view.insert(self._forgot[0], self._summary)
        return tuple(view)

    def compact(self) -> Compaction:
        self._condense()
        return self._request(self.render())

    def __repr__(self) -> str:
        return f"CondenserContext({self.condenser!r}, {len(self._transcript)} messages)"


# --- presets ------------------------------------------------------------------------------


def _events_knobs() -> tuple[Knob, Knob]:
    return (Knob(name="max_size", unit="events", default=100, minimum=2,
                 help="condense when the view holds more events than this (a user message, each tool call, "
                      "each tool result is one); it then holds max_size // 2"),
            Knob(name="keep_first", unit="events", default=1, minimum=0,
                 help="the first events always kept (the task); below max_size // 2"))


def _openhands_amortized(*, system: str, max_size: int, keep_first: int, **_: Any) -> Factory:
    condenser = AmortizedForgetting(max_size=max_size, keep_first=keep_first)
    return lambda: condenser.context(system)


def _openhands_masking(*, system: str, attention_window: int, **_: Any) -> Factory:
    policy = ObservationMasking(attention_window=attention_window)
    return lambda: policy.context(system)


def _openhands_summarizing(*, system: str, distill: Distill | None, max_size: int, keep_first: int,
                           max_event_length: int, **_: Any) -> Factory:
    condenser = LLMSummarizing(max_size=max_size, keep_first=keep_first, max_event_length=max_event_length)
    make = make_distiller(distill, 4_000)
    return lambda: condenser.context(system, distill=make())


PRESETS: tuple[Preset, ...] = (
    Preset(name="openhands-amortized", family="openhands",
           source='OpenHands `openhands/memory/condenser/impl/amortized_forgetting_condenser.py`',
           description="OpenHands' AmortizedForgettingCondenser: above max_size events, forget all but the first "
                       "keep_first and the newest, down to max_size // 2",
           knobs=_events_knobs(), _make=_openhands_amortized,
           note="counts events, not tokens: no limit is declared; rolling: what is forgotten stays forgotten"),
    Preset(name="openhands-masking", family="openhands",
           source='OpenHands `openhands/memory/condenser/impl/observation_masking_condenser.py`',
           description="OpenHands' ObservationMaskingCondenser: tool results outside the last attention_window "
                       "events replaced by \"<MASKED>\"",
           knobs=(Knob(name="attention_window", unit="events", default=100, minimum=1,
                       help="the newest events whose tool results are kept (OpenHands' config default: 100)"),),
           _make=_openhands_masking, note="counts events, not tokens: no limit is declared; the cached prefix "
                                          "breaks at every request once results are masked"),
    Preset(name="openhands-summarizing", family="openhands",
           source='OpenHands `openhands/memory/condenser/impl/llm_summarizing_condenser.py`',
           description="OpenHands' LLMSummarizingCondenser: above max_size events, the middle (and the previous "
                       "summary) folded into one summary after the first keep_first events",
           knobs=(*_events_knobs(),
                  Knob(name="max_event_length", unit="characters", default=10_000, minimum=0,
                       help="each event is cut to this many characters in the summarizer's request")),
           needs=frozenset({"distill"}), _make=_openhands_summarizing,
           note="counts events, not tokens: no limit is declared; keep_first must be below max_size // 2 - 1"),
)
