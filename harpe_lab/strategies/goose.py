"""Goose's context management: auto-compaction above a fraction of the window, and the
per-tool-pair summaries that replace old tool calls one line each (`ContextManagement`).

Sources read: block/goose ``crates/goose/src/context_mgmt/mod.rs`` at commit
331a842972378d642bb39bd800a8514b25ae3a70, and ``crates/goose/src/agents/agent.rs`` of the
same tree (``reply``, ``reply_internal``); the session's token fields as
``update_session_metrics`` sets them; ``DEFAULT_CONTEXT_LIMIT = 128_000`` from the model
configuration:

* auto-compaction — ``check_if_compaction_needed``, called once per user message, after it
  is added and before the agent loop starts: the session's ``total_tokens`` (the last
  call's input plus output; after a compaction, the summary's output) over the model's
  ``context_limit`` must be *above* ``GOOSE_AUTO_COMPACT_THRESHOLD`` (default
  ``DEFAULT_COMPACTION_THRESHOLD = 0.8``; 0 or 1 and beyond disable it).
* what it makes — ``compact_messages``: every agent-visible message is summarized (the
  ``compaction.md`` prompt, by the fast model); the agent then sees the summary (a user
  message), an assistant message telling it to go on ("Your context was compacted…",
  ``CONVERSATION_CONTINUATION_TEXT`` when the newest user text message is the last message,
  ``TOOL_LOOP_CONTINUATION_TEXT`` otherwise) and that newest user text message again, its
  text only. The originals stay for the user, invisible to the agent.
* tool-pair summaries — ``maybe_summarize_tool_pairs``, spawned at every model call of the
  agent loop on the conversation as that call sends it, and applied after the call's reply
  and tool results: when the visible tool calls, less the current turn's
  (``protect_last_n``), are more than ``cutoff = clamp(floor(context_limit × threshold) /
  10_000, 10, 500)`` (``compute_tool_call_cutoff``), the oldest ``min(excess, max(cutoff / 5,
  3))`` (``batch_size``) are each summarized by the fast model into one user message starting
  "[Historical tool call summary]"; the call's request and response messages become
  agent-invisible, and the summaries are appended after the messages that call added.

Mapped onto harpe_lab's messages: the transcript is what the agent sees. A reply with
several tool calls is one Goose message holding them all, so hiding it for one summarized
call hides every call in it; Goose then drops the other calls' orphaned responses
(``fix_conversation``): here their whole round goes, and only the summarized calls get a
line. The summaries are decided when a request is sent (from what it sends, with the
current turn's calls protected) and made when it is answered — at the next `compact`, or,
after a final answer, when the next turn begins — so the distill calls and the fold land on
the same request, the one that first carries the summaries.

Not modelled: the estimate Goose uses before any usage is recorded (no compaction before
the first reply here); the retries that drop 10, 20, 50 and 100% of the tool responses,
middle out, when the summarizer's own request overflows; compaction after the provider
reports a context-length error mid-loop. Summaries come from the distillers given (one for
the compaction, one — by default the same — for the pairs), asked with Harpe's distill
request and our own words for Goose's prompts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from ._lifecycle import Summarizes, TurnLifecycle
from .harpe import distill_request
from ._validate import check_int
from ._preset import Factory, Knob, Preset, make_distiller

__all__ = [
    "CONTEXT_LIMIT",
    "COMPACTION_THRESHOLD",
    "CONVERSATION_CONTINUATION_TEXT",
    "TOOL_LOOP_CONTINUATION_TEXT",
    "PAIR_SUMMARY_PREFIX",
    "COMPACTION_SYSTEM",
    "PAIR_SYSTEM",
    "tool_call_cutoff",
    "ContextManagement",
    "ContextManagementContext",
    "ThresholdCompacted",
    "ToolPairsSummarized",
    "PRESETS",
]

CONTEXT_LIMIT = 128_000
"""``DEFAULT_CONTEXT_LIMIT``: the context limit Goose assumes for a model it does not know."""
COMPACTION_THRESHOLD = 0.8
"""``DEFAULT_COMPACTION_THRESHOLD``, the default of ``GOOSE_AUTO_COMPACT_THRESHOLD``."""
CONVERSATION_CONTINUATION_TEXT = (
    "Your context was compacted. The previous message contains a summary of the conversation so far.\n"
    "Do not mention that you read a summary or that conversation summarization occurred.\n"
    "Just continue the conversation naturally based on the summarized context."
)
TOOL_LOOP_CONTINUATION_TEXT = (
    "Your context was compacted. The previous message contains a summary of the conversation so far.\n"
    "Do not mention that you read a summary or that conversation summarization occurred.\n"
    "Continue calling tools as necessary to complete the task."
)
PAIR_SUMMARY_PREFIX = "[Historical tool call summary]"
"""How every tool-pair summary begins."""
COMPACTION_SYSTEM = (
    "You summarize a conversation between a user and an AI agent so that the agent can continue from the summary "
    "alone. Keep the user's requests and constraints, what was done and found, the files, commands and results "
    "that matter, and what is still to do. Reply with the summary only."
)
"""The compaction request's system prompt (our words for Goose's ``compaction.md``)."""
PAIR_SYSTEM = (
    "Summarize one tool call and its response in a single line that says what was asked and what came back, "
    f"starting with \"{PAIR_SUMMARY_PREFIX}\"."
)
"""A tool-pair summary's system prompt (our words for Goose's)."""


def _tokens_at(fraction: float, window: int) -> float:
    # to a millionth of a token, so a fraction given as tokens / window lands on those tokens
    return round(fraction * window, 6)


def tool_call_cutoff(window: int, threshold: float | None) -> int:
    """Goose's ``compute_tool_call_cutoff``: ``window × threshold`` (just ``window`` without a
    threshold in (0, 1)), rounded down, over 10,000, clamped to [10, 500]."""
    effective = math.floor(_tokens_at(threshold, window)) if threshold is not None and 0 < threshold < 1 else window
    return min(500, max(10, effective // 10_000))


@dataclass(frozen=True)
class ThresholdCompacted:
    """Event: the last call reported ``tokens`` (more than ``threshold``), so the whole
    visible conversation was summarized at a turn's start."""

    tokens: int
    threshold: int


@dataclass(frozen=True)
class ToolPairsSummarized:
    """Event: ``calls`` tool calls were each replaced by a summary line; ``hidden_messages``
    messages (replies and their results) left the agent's view."""

    calls: int
    hidden_messages: int


@dataclass(frozen=True, kw_only=True)
class ContextManagement:
    """Goose's context management: compact everything when a turn starts above ``threshold``
    of ``window``, and summarize the oldest tool calls one line each past ``cutoff`` of them."""

    window: int = CONTEXT_LIMIT
    """The model's ``context_limit``, in tokens."""
    threshold: float = COMPACTION_THRESHOLD
    """``GOOSE_AUTO_COMPACT_THRESHOLD``: compact above this fraction of ``window``."""
    tool_pairs: bool = True
    """Summarize old tool pairs (Goose always does)."""
    cutoff: int | None = None
    """Visible tool calls (the current turn's aside) kept; ``None``: `tool_call_cutoff`."""
    batch: int | None = None
    """The most calls summarized at once; ``None``: ``max(cutoff // 5, 3)``."""

    def __post_init__(self) -> None:
        check_int("window", self.window, 1)
        t = self.threshold
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or not 0 < t < 1:
            raise StrategyError(f"threshold must be a fraction in (0, 1), got {t!r}: Goose turns auto-compaction "
                                "off outside it")
        if not isinstance(self.tool_pairs, bool):
            raise StrategyError(f"tool_pairs must be a bool, got {self.tool_pairs!r}")
        if self.cutoff is not None:
            check_int("cutoff", self.cutoff, 0)
        if self.batch is not None:
            check_int("batch", self.batch, 1)
        if self.threshold_tokens < 1:
            raise StrategyError(f"threshold × window must be at least 1 token, got {self.threshold} × {self.window:,}")

    @property
    def threshold_tokens(self) -> int:
        """The most a call can report without compaction at the next turn's start."""
        return math.floor(_tokens_at(self.threshold, self.window))

    @property
    def cutoff_calls(self) -> int:
        """Visible tool calls, the current turn's aside, kept before summarizing the oldest."""
        return tool_call_cutoff(self.window, self.threshold) if self.cutoff is None else self.cutoff

    @property
    def batch_size(self) -> int:
        """The most tool calls summarized after one model call."""
        return max(self.cutoff_calls // 5, 3) if self.batch is None else self.batch

    def context(self, base_system: str, *, distill: Distill, pair_distill: Distill | None = None,
                on_event: Callable[[object], None] | None = None) -> "ContextManagementContext":
        """A fresh lifecycle context with this configuration. Build one per replay, with its
        own distillers: a distiller may keep state across calls."""
        return ContextManagementContext(base_system, self, distill=distill, pair_distill=pair_distill,
                                        on_event=on_event)


def _pair_line(text: str) -> str:
    text = text.strip()
    return text if text.startswith(PAIR_SUMMARY_PREFIX) else f"{PAIR_SUMMARY_PREFIX} {text}".rstrip()


class ContextManagementContext(TurnLifecycle, Summarizes):
    """Goose's context management in Harpe's lifecycle.

    Every request sends the transcript: what the agent sees. At a turn's start, the last
    observed usage (input plus output) above the threshold compacts everything into the
    summary, the continuation message and the turn's input. At every request the oldest tool
    calls past the cutoff are chosen; they are summarized, hidden and their lines appended at
    the next `compact` or `commit_turn`. Reports `ThresholdCompacted`, `ToolPairsSummarized`,
    `ContextCompacted` for both, and, through `MeteredDistill`, `DistillCall`.
    """

    def __init__(self, base_system: str, config: ContextManagement, *, distill: Distill,
                 pair_distill: Distill | None = None, on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, ContextManagement):
            raise StrategyError(f"config must be a ContextManagement, got {config!r}")
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self._pair_distill = self._distill if pair_distill is None else MeteredDistill(pair_distill, self._events)
        self.config = config
        # the configuration's derived numbers, read at every request: computed once
        self._over = _tokens_at(config.threshold, config.window)
        self._cutoff = config.cutoff_calls
        self._batch = config.batch_size
        self._pairs = config.tool_pairs
        self._reported: int | None = None  # the last call's input + output (None: none since a compaction)
        self._calls = 0  # tool calls in the transcript
        self._call_ids: set[str] = set()  # every call id appended, to know whether one came twice
        self._unique = True  # no call id came twice: a call is found by its id from the transcript's start
        self._turn_calls = 0  # of them, the current turn's (protect_last_n)
        self._planned: list[str] = []  # call ids to summarize when the current request is answered
        # no message before this place in the transcript holds a call: the oldest calls are
        # summarized first, so a long session's transcript opens with many messages without
        # any, which Goose walks past at every plan and we need not
        self._no_calls_before = 0
        self._summary = ""
        self._starting = False  # the turn's input was added and nothing since: the compaction check
        self._opening = False  # a turn started and its input is the next message stored
        # the transcript was replaced since the last request (not only appended to): the
        # engine must compare it; Goose never puts a stand-in in place, so edits are () or None
        self._replaced = False
        self._marked_state: tuple = (None, 0, "")

    @property
    def limit(self) -> Limit:
        """The threshold, as a reactive high-water mark: a turn that starts above it compacts."""
        return Limit(tokens=self.config.threshold_tokens, kind="high_water")

    @property
    def visible_calls(self) -> int:
        """The tool calls the agent sees."""
        return self._calls

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        # the last turn's final call had a summarization running: its lines land after the
        # answer, before this input (made now, so that they are reported with the request
        # that first carries them; they belong to the turn before, which an abort of this one
        # does not undo)
        if self._planned:
            self._summarize_pairs()
        self._marked_state = (self._reported, self._calls, self._summary)
        self._turn_calls = 0
        self._opening = True

    def _added(self, message: Message) -> None:
        if isinstance(message, AssistantMessage):
            calls = len(message.calls)
            if calls:
                self._calls += calls
                self._turn_calls += calls
                if self._unique:
                    ids = self._call_ids
                    known = len(ids)
                    for call in message.calls:
                        ids.add(call.id)
                    self._unique = len(ids) == known + calls
        # the compaction check is due when the turn's input is the newest message
        self._starting, self._opening = self._opening, False

    def observe(self, usage: Usage) -> None:
        self._reported = usage.input_tokens + usage.output_tokens

    def compact(self) -> Compaction:
        if self._starting:
            count = self._reported
            if count is not None and count > self._over:
                self._compact(count)
            self._starting = False
        elif self._planned:
            self._summarize_pairs()
        if self._pairs:
            calls, cutoff = self._calls, self._cutoff
            if calls > cutoff and calls - self._turn_calls > cutoff:
                self._plan()
            elif self._planned:
                self._planned = []
        # a compaction or a summary replaces the transcript: whether one happened is whether
        # it was replaced
        replaced, self._replaced = self._replaced, False
        return self._whole(replaced, self._base_system)

    def _compact(self, count: int) -> bool:
        t = self._transcript
        text = self._distill(Rendered(COMPACTION_SYSTEM, (UserInput(distill_request(t, "")),)))
        if text is None:
            return False  # Goose reports the error and gives up on the turn; here nothing changes
        if not isinstance(text, str):
            raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
        newest = next((k for k in range(len(t) - 1, -1, -1) if isinstance(t[k], UserInput) and t[k].text), None)
        transcript: list[Message] = [
            UserInput(text),
            AssistantMessage(CONVERSATION_CONTINUATION_TEXT if newest == len(t) - 1 else TOOL_LOOP_CONTINUATION_TEXT),
        ]
        if newest is not None:
            kept = t[newest]
            # Goose re-adds its text only; the same message when that is all it holds
            transcript.append(kept if not kept.attachments else UserInput(kept.text))  # type: ignore[union-attr]
        self._transcript = transcript
        self._replaced = True
        self._no_calls_before = 0
        self._summary = text
        self._reported = None
        self._calls = self._turn_calls = 0
        self._planned = []
        self._events.emit(ThresholdCompacted(count, self.config.threshold_tokens))
        self._events.emit(ContextCompacted(len(t) - (newest is not None and transcript[-1] is t[newest])))
        return True

    def _plan(self) -> None:
        """``tool_ids_to_summarize`` on what this request sends: the oldest calls past the cutoff."""
        eligible = self._calls - self._turn_calls
        cutoff = self._cutoff
        if self._calls <= cutoff or eligible <= cutoff:
            if self._planned:
                self._planned = []
            return
        wanted = min(eligible - cutoff, self._batch)
        ids: list[str] = []
        t = self._transcript
        for k in range(self._no_calls_before, len(t)):
            m = t[k]
            if isinstance(m, AssistantMessage) and m.calls:
                if not ids:
                    self._no_calls_before = k
                ids.extend(call.id for call in m.calls[: wanted - len(ids)])
                if len(ids) == wanted:
                    break
        self._planned = ids

    def _summarize_pairs(self) -> bool:
        """Make the summaries planned at the last request and apply them: hide their rounds,
        append their lines."""
        planned, self._planned = self._planned, []
        if not planned:
            return False
        t = self._transcript
        where = self._where(t, planned)
        lines: list[UserInput] = []
        hidden: set[int] = set()
        for call_id in planned:
            k = where.get(call_id)
            if k is None or k + 1 >= len(t) or not isinstance(t[k + 1], ToolResults):
                continue
            reply, results = t[k], t[k + 1]
            answers = results.results  # type: ignore[union-attr]
            # the results of this call alone (all of them, as they are, when it is the only call)
            only = results if len(answers) == 1 and answers[0].id == call_id else ToolResults(
                tuple(r for r in answers if r.id == call_id))
            pair = [reply, only]
            text = self._pair_distill(Rendered(PAIR_SYSTEM, (UserInput(distill_request(pair, "")),)))
            if text is None:
                continue  # Goose logs the failure; that pair stays
            if not isinstance(text, str):
                raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
            lines.append(UserInput(_pair_line(text)))
            hidden.update((k, k + 1))
        if not lines:
            return False
        self._calls -= sum(len(t[k].calls) for k in hidden if isinstance(t[k], AssistantMessage))  # type: ignore[union-attr]
        kept: list[Message] = []
        start = 0
        for k in sorted(hidden):  # what lies between hidden messages, copied a run at a time
            kept += t[start:k]
            start = k + 1
        kept += t[start:]
        # the hidden messages came after the place where none held a call, so it stands
        self._transcript = kept + lines
        self._replaced = True
        self._events.emit(ToolPairsSummarized(len(lines), len(hidden)))
        self._events.emit(ContextCompacted(len(hidden)))
        return True

    def _where(self, t: list[Message], planned: list[str]) -> dict[str, int]:
        """Where in ``t`` each call of ``planned`` was made: its last place, or, with no call
        id ever repeated, its only one, found from the start (the planned calls are the oldest)."""
        if not self._unique:
            return {call.id: k for k, m in enumerate(t) if isinstance(m, AssistantMessage) for call in m.calls}
        wanted = set(planned)
        where: dict[str, int] = {}
        for k in range(self._no_calls_before, len(t)):
            m = t[k]
            if isinstance(m, AssistantMessage):
                for call in m.calls:
                    if call.id in wanted:
                        where[call.id] = k
                if len(where) == len(wanted):
                    break
        return where

    def _restored(self) -> None:
        self._reported, self._calls, self._summary = self._marked_state
        self._planned = []  # the cancelled loop aborts its summarization task
        self._replaced = True
        self._no_calls_before = 0
        self._turn_calls = 0
        self._starting = self._opening = False

    def __repr__(self) -> str:
        return f"ContextManagementContext(threshold={self.config.threshold_tokens:,}, {len(self._transcript)} messages)"


# --- presets ------------------------------------------------------------------------------


def _goose(*, system: str, distill: Distill | None, high_water: int | None, window: int, **_: Any) -> Factory:
    if high_water is not None and high_water >= window:
        raise StrategyError(f"high_water must be below window ({window:,}), got {high_water:,}: Goose's threshold is a "
                            "fraction of the window under 1; raise window")
    config = ContextManagement(window=window,
                               threshold=COMPACTION_THRESHOLD if high_water is None else high_water / window)
    make = make_distiller(distill, min(8_000, config.threshold_tokens))
    if distill is not None:  # one distiller for both, as one (stateful) summarizer would be
        return lambda: config.context(system, distill=make())
    pairs = make_distiller(None, 300)  # offline, a tool pair's summary is one short line
    return lambda: config.context(system, distill=make(), pair_distill=pairs())


PRESETS: tuple[Preset, ...] = (
    Preset(name="goose", family="goose",
           source="Goose (`block/goose` @331a8429) `crates/goose/src/context_mgmt/mod.rs`, "
                  "`crates/goose/src/agents/agent.rs`",
           description="Goose's context management: a turn that starts above 80% of the window compacts everything "
                       "into a summary and re-sends its input; past a cutoff of visible tool calls, the oldest are "
                       "replaced by one-line summaries, a batch at a time",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="the last call's reported tokens above which the next turn starts with a compaction; "
                            "default: 80% of window (GOOSE_AUTO_COMPACT_THRESHOLD); the tool-call cutoff is it / "
                            "10,000, clamped to 10 to 500, the batch a fifth of that (at least 3)"),
                  Knob(name="window", unit="tokens", default=128_000, minimum=2,
                       help="the model's context_limit (128,000 when Goose does not know the model); a property of "
                            "the model, not of the conversation")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_goose,
           note="checked only when a turn starts: a long agent turn is never compacted; the tool-pair summaries "
                "change the prefix whenever a batch lands, and their lines pile up at the end of the history"),
)
