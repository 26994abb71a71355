"""Claude Code's auto-compact: above a threshold, the whole history becomes one summary message.

Sources read (Claude Code 2.1.x, the version that wrote the recordings is 2.1.39):

* the threshold — ``services/compact/autoCompact.ts`` as quoted and explained in
  "Harness engineering from Claude Code", chapter 9 (zhanghandong.github.io/
  harness-engineering-from-cc-to-ai-coding/en/part3/ch09.html) and in
  anthropics/claude-code issues #12004 (``nx1 = 13000``, "Auto-compact threshold = Available
  - 13000") and #31806 (``getAutoCompactThreshold``: ``effectiveWindow - 13000``, ~83.5% of
  200k): the *effective window* is the model's context window less what is reserved for the
  summary's own output, ``min(the model's max output tokens, MAX_OUTPUT_TOKENS_FOR_SUMMARY =
  20_000)``; the threshold is that less ``AUTOCOMPACT_BUFFER_TOKENS = 13_000``. For a
  200,000-token window: 200,000 - 20,000 - 13,000 = **167,000**. Auto-compact fires when the
  count reaches it (``>=``). ``CLAUDE_AUTOCOMPACT_PCT_OVERRIDE`` can only lower it (#31806)
  and is not modelled.
* the count — ``tokenCountWithEstimation`` (the same chapter; manavgup.github.io/shipai
  deep-dive 06): the usage the API reported for the last reply (its whole input, cache reads
  and writes included, plus its output tokens) and a rough estimate, 4 characters a token,
  of every message added since. Checked before every model call: at a turn's start (the
  new input counted, and folded into the summary with the rest) and between tool rounds, so
  it compacts mid-turn.
* the result — the recordings themselves (``compact_boundary`` records with
  ``compactMetadata: {"trigger": "auto", "preTokens": ...}``, then an ``isCompactSummary``
  user message): the model call that follows carries that one user message, "This session
  is being continued from a previous conversation that ran out of context. The summary below
  covers the earlier portion of the conversation." then the summary, then a request to go on
  with the last task without asking the user anything (`CONTINUATION_HEAD`,
  `CONTINUATION_TAIL`), and then whatever the agent does next. The system prompt and tools
  are sent unchanged.

Checked against three real sessions (``docs/strategies.md``, "Claude Code auto-compact,
checked"; ``tests/strategies/anthropic/test_claude_code_compact.py``): driven with the usage
Claude Code recorded, the first compaction happens at the recorded model call with the recorded
``preTokens``; replayed with a counter calibrated on each session, within one call of it.

* a failed compaction — ``services/compact/compact.ts`` (``compactConversation``) and
  ``autoCompact.ts`` (``autoCompactIfNeeded``), read in the source restored from Claude Code
  2.1.88's published source map (Jayleonc/claude-code-source-code @83fba929): a summary
  response without text throws ``"Failed to generate conversation summary - response did
  not contain valid text content"``, one that begins with Claude Code's API error prefix
  (``startsWithApiErrorPrefix``: ``"API Error"``, or ``"Please run /login · API Error"``)
  throws it, and ``autoCompactIfNeeded`` catches whatever ``compactConversation`` throws,
  logs it and returns ``wasCompacted: false``: the history is kept as it was and the next
  check (the next model call) tries again. After ``MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3``
  failures in a row it stops trying: the count lives in the query loop's state, which
  starts afresh with every user turn, and a success resets it (`AutoCompact.max_failures`).
  Here a distiller that raises (anything but `StrategyError`, the lab's own misuse error),
  returns ``None`` or ``""``, or writes a text with that prefix is such a failure, reported
  as `AutoCompactFailed`. Claude Code checks nothing else: any other text, an error message
  in other words or a summary longer than the history, becomes the summary.

Not modelled: the files, plan and todo list Claude Code re-attaches after a compaction (up
to five recently read files; the recordings do not hold them); the transcript-path
sentence Claude Code adds to the summary (it names a file on the recording machine);
microcompaction of old tool results; the compaction request's own retries (on "prompt is
too long" it drops the oldest rounds and asks again). The summary comes from the distiller
given (Harpe's distill request, with `COMPACT_SYSTEM`); a text that already begins with
`CONTINUATION_HEAD` — one of Claude Code's own, through ``RecordedDistiller`` — is sent as
it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ..._text import CHARS_PER_TOKEN, message_chars
from ...errors import StrategyError
from ...messages import AssistantMessage, Message, Rendered, Usage, UserInput
from ...protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from .._lifecycle import Summarizes, TurnLifecycle
from ..harpe import distill_request
from .._validate import check_int
from .._preset import Factory, Knob, Preset, make_distiller

__all__ = [
    "AutoCompact",
    "AutoCompactContext",
    "AutoCompacted",
    "AutoCompactFailed",
    "CONTEXT_WINDOW",
    "SUMMARY_OUTPUT_RESERVE",
    "AUTOCOMPACT_BUFFER",
    "MAX_CONSECUTIVE_FAILURES",
    "API_ERROR_PREFIXES",
    "CONTINUATION_HEAD",
    "CONTINUATION_TAIL",
    "COMPACT_SYSTEM",
    "continuation",
    "PRESETS",
]

CONTEXT_WINDOW = 200_000
"""The context window Claude Code assumes for Claude models (the recordings' Opus 4.6)."""
SUMMARY_OUTPUT_RESERVE = 20_000
"""``MAX_OUTPUT_TOKENS_FOR_SUMMARY``: kept free for the summary's output (Claude Code takes
the smaller of this and the model's max output tokens)."""
AUTOCOMPACT_BUFFER = 13_000
"""``AUTOCOMPACT_BUFFER_TOKENS``: the margin below the effective window."""
MAX_CONSECUTIVE_FAILURES = 3
"""``MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES``: failed compactions in a row, in one user turn,
after which Claude Code stops trying until the next turn."""
API_ERROR_PREFIXES = ("API Error", "Please run /login · API Error")
"""What a summary Claude Code refuses begins with (``startsWithApiErrorPrefix``): the text its
API layer writes in place of a reply when a call fails."""

CONTINUATION_HEAD = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The summary below covers the earlier portion of the conversation."
)
"""How Claude Code's summary message begins (as recorded by Claude Code 2.1.39)."""
CONTINUATION_TAIL = (
    "Please continue the conversation from where we left off without asking the user any further "
    "questions. Continue with the last task that you were asked to work on."
)
"""How it ends (as recorded)."""

COMPACT_SYSTEM = (
    "You write the summary a coding agent continues from after its conversation is cleared. The "
    "agent will see nothing else of the conversation. Cover, in order: what the user asked for and "
    "why, every user message, the technical concepts involved, the files read or changed (with the "
    "code that matters), errors met and how they were fixed, the problem solving so far, pending "
    "tasks, the work in progress right now, and the next step, in the user's own words where they "
    "gave one. Reply with the summary only."
)
"""The distill request's system prompt (our own words for what Claude Code's asks)."""


def continuation(summary: str) -> str:
    """The text of Claude Code's summary message carrying ``summary`` (as it is when it
    already begins with `CONTINUATION_HEAD`)."""
    if summary.startswith(CONTINUATION_HEAD):
        return summary
    return f"{CONTINUATION_HEAD}\n\n{summary}\n\n{CONTINUATION_TAIL}"



@dataclass(frozen=True)
class AutoCompacted:
    """Event: Claude Code's count was ``pre_tokens`` (>= ``threshold``), so the whole history
    was summarized — the ``preTokens`` of a recorded ``compact_boundary``."""

    pre_tokens: int
    threshold: int


@dataclass(frozen=True)
class AutoCompactFailed:
    """Event: a compaction failed and the history was kept as it was. ``reason`` is
    ``"raised"`` (the distiller raised; ``detail`` names the error), ``"none"`` (the distiller
    gave no summary), ``"empty"`` (an empty summary, which Claude Code refuses) or
    ``"api_error"`` (a summary beginning with Claude Code's API error prefix); ``failures``
    counts the failures in a row in this turn, and once it reaches ``limit`` no compaction is
    tried until the next turn (``limit`` ``None``: no such limit)."""

    reason: str
    detail: str
    failures: int
    limit: int | None


@dataclass(frozen=True, kw_only=True)
class AutoCompact:
    """Claude Code's auto-compact configuration: compact once the count reaches
    ``context_window - reserve`` tokens (167,000 by default).

    ``reserve`` is what Claude Code holds back: `SUMMARY_OUTPUT_RESERVE` (20,000) for the
    summary's output plus `AUTOCOMPACT_BUFFER` (13,000).
    """

    context_window: int = CONTEXT_WINDOW
    """The model's context window, in tokens."""
    reserve: int = SUMMARY_OUTPUT_RESERVE + AUTOCOMPACT_BUFFER
    """Tokens below the window where compaction fires."""
    max_failures: int | None = MAX_CONSECUTIVE_FAILURES
    """Failed compactions in a row, in one turn, after which no compaction is tried until the
    next turn (``None``: try at every check, as Claude Code did before this circuit breaker
    came, in March 2026)."""

    def __post_init__(self) -> None:
        check_int("context_window", self.context_window, 1)
        check_int("reserve", self.reserve, 0)
        if self.max_failures is not None:
            check_int("max_failures", self.max_failures, 1)
        if self.reserve >= self.context_window:
            raise StrategyError(
                f"reserve must be below context_window ({self.context_window:,}), got {self.reserve:,}: "
                "the threshold would be 0 or less"
            )

    @property
    def threshold(self) -> int:
        """The count at which Claude Code compacts."""
        return self.context_window - self.reserve

    def context(self, base_system: str, *, distill: Distill,
                on_event: Callable[[object], None] | None = None) -> "AutoCompactContext":
        """A fresh lifecycle context with this configuration. Build one per replay, with its
        own distiller: a distiller may keep state across calls."""
        return AutoCompactContext(base_system, self, distill=distill, on_event=on_event)


def _rough(message: Message) -> int:
    # Claude Code's rough estimate: characters / 4, rounded
    return round(message_chars(message) / CHARS_PER_TOKEN)


class AutoCompactContext(TurnLifecycle, Summarizes):
    """Claude Code's auto-compact in Harpe's lifecycle.

    Every request sends the whole transcript; the transcript is the history since the last
    compaction, which starts with the summary message. At each `compact` (a turn's start,
    and after every tool round) the count is the last observed usage (input plus output
    tokens) plus `_rough` of every message appended after that reply; at or above the
    threshold, the whole transcript — the current turn's messages too — is handed to the
    distiller and replaced by one `UserInput` holding `continuation` of its reply. A failed
    compaction (the distiller raises, returns ``None`` or ``""``, or writes Claude Code's API
    error text) leaves everything as it was and reports `AutoCompactFailed`; after
    ``config.max_failures`` of them in a row, none is tried until the next turn. Each
    compaction reports `AutoCompacted`, `ContextCompacted` and, through `MeteredDistill`,
    `DistillCall`.
    """

    def __init__(self, base_system: str, config: AutoCompact, *, distill: Distill,
                 on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, AutoCompact):
            raise StrategyError(f"config must be an AutoCompact, got {config!r}")
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self.config = config
        self._reported: int | None = None  # the last reply's input + output tokens
        self._after = 0  # rough tokens of the messages appended after that reply
        self._summary = ""
        self._fresh = False  # nothing appended since the last compaction
        self._marked_state: tuple = (None, 0, "", False)
        self._failures = 0  # failed compactions in a row in this turn (Claude Code's circuit breaker)

    @property
    def limit(self) -> Limit:
        """The threshold, as a reactive high-water mark (the request that crosses it goes out)."""
        return Limit(tokens=self.config.threshold, kind="high_water")

    @property
    def transcript(self) -> tuple[Message, ...]:
        """What the next request carries: the summary message, then everything since (a copy)."""
        return tuple(self._transcript)

    @property
    def tokens(self) -> int:
        """Claude Code's count now: the last reported usage plus the rough size of what came
        after it (everything, roughly, before any usage was reported)."""
        if self._reported is None:
            return sum(_rough(m) for m in self._transcript)
        return self._reported + self._after

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_state = (self._reported, self._after, self._summary, self._fresh)
        self._failures = 0  # the query loop's tracking starts afresh with each user turn

    def _added(self, message: Message) -> None:
        if isinstance(message, AssistantMessage):
            self._after = 0  # its tokens are the reported output tokens
        else:
            self._after += _rough(message)
        self._fresh = False

    def _restored(self) -> None:
        self._reported, self._after, self._summary, self._fresh = self._marked_state
        for kept in self._transcript[self._marked[1]:]:  # the turn's input, counted again
            self._added(kept)

    def observe(self, usage: Usage) -> None:
        self._reported = usage.input_tokens + usage.output_tokens
        self._after = 0

    def compact(self) -> Compaction:
        count = self.tokens
        # right after a compaction nothing is left to fold but the summary itself; after too
        # many failures in a row Claude Code's circuit breaker skips the attempt
        limit = self.config.max_failures
        compacted = (count >= self.config.threshold and not self._fresh
                     and (limit is None or self._failures < limit) and self._compact(count))
        return self._whole(compacted, self._base_system)

    def _compact(self, count: int) -> bool:
        folded = self._transcript
        request = Rendered(COMPACT_SYSTEM, (UserInput(distill_request(folded, "")),))
        try:
            text = self._distill(request)
        except StrategyError:
            raise  # the lab's own misuse error (a distiller told to raise when it runs out, ...)
        except Exception as error:  # autoCompactIfNeeded catches whatever compactConversation throws
            return self._failed("raised", f"{type(error).__name__}: {error}")
        if text is None:
            return self._failed("none", "the distiller gave no summary")
        if not isinstance(text, str):
            raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
        if not text:
            return self._failed("empty", "Failed to generate conversation summary - response did not contain valid "
                                         "text content")
        if text.startswith(API_ERROR_PREFIXES):
            return self._failed("api_error", text[:200])
        self._failures = 0
        self._summary = text
        message = UserInput(continuation(text))
        self._transcript = [message]
        self._fresh = True
        # no usage is known for the new history: Claude Code estimates it until the next reply
        self._reported, self._after = None, 0
        self._events.emit(AutoCompacted(count, self.config.threshold))
        self._events.emit(ContextCompacted(len(folded)))
        return True

    def _failed(self, reason: str, detail: str) -> bool:
        """A failed compaction: the history stays as it was; Claude Code logs it and counts it."""
        self._failures += 1
        self._events.emit(AutoCompactFailed(reason, detail, self._failures, self.config.max_failures))
        return False

    def __repr__(self) -> str:
        return f"AutoCompactContext(threshold={self.config.threshold:,}, {len(self._transcript)} messages)"


# --- presets ------------------------------------------------------------------------------


def _claude_code(*, system: str, distill: Distill | None, high_water: int | None, context_window: int,
                 **_: Any) -> Factory:
    if high_water is None:
        config = AutoCompact(context_window=context_window)
    elif high_water >= context_window:
        raise StrategyError(f"high_water must be below context_window ({context_window:,}), got {high_water:,}; "
                            "raise context_window")
    else:
        config = AutoCompact(context_window=context_window, reserve=context_window - high_water)
    # the offline default writes at most 16,000 characters, the size of Claude Code's recorded summaries
    make = make_distiller(distill, min(16_000, config.threshold))
    return lambda: config.context(system, distill=make())


PRESETS: tuple[Preset, ...] = (
    Preset(name="claude-code", family="anthropic",
           source="Claude Code 2.1 `services/compact/autoCompact.ts`, as public write-ups quote it; checked on "
                  "three recorded compactions",
           description="Claude Code's auto-compact: at the threshold, the whole history (mid-turn too) becomes one "
                       "summary message",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="the threshold: Claude Code's count (last reported input and output, plus new messages "
                            "at 4 characters a token) at which it compacts; default: context_window - 33,000 "
                            "(20,000 for the summary's output, 13,000 buffer)"),
                  Knob(name="context_window", unit="tokens", default=200_000, minimum=33_001,
                       help="the model's context window (200,000 for Claude models); a property of the model, "
                            "not of the conversation")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_claude_code,
           note="reactive: the request that crosses the threshold goes out; the next one is the summary message "
                "alone, so the whole cached prefix is lost at each compaction"),
)
