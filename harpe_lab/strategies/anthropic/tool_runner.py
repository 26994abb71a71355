"""The Anthropic SDK tool runner's compaction (`ToolRunnerCompaction`): client-side, what a
developer gets by flipping one option of the SDK's tool runner.

Source read: anthropics/anthropic-sdk-python at commit 009b035305e0724ce108ebd796935f91711fc6e1
(2026-08-07), ``src/anthropic/lib/tools/_beta_compaction_control.py`` and ``_beta_runner.py``
(``_check_and_compact``, ``__run__``); the TypeScript SDK's ``src/lib/tools/CompactionControl.ts``
(0.81.0) has the same numbers. After every response the runner adds up its usage —
``input_tokens + cache_creation_input_tokens + cache_read_input_tokens + output_tokens`` — and
at or above ``context_token_threshold`` (``DEFAULT_THRESHOLD = 100_000``) it sends the messages
*as they were before that response* plus the summary prompt (`SUMMARY_PROMPT`) and replaces
every message with one user message holding the answer. The response that crossed the
threshold is discarded: its tool calls are never run, and the model is asked again from the
summary alone.

Mapped onto harpe_lab's lifecycle: the runner's check after a response is made at the next
`compact` — after the tool round, or at the next turn's start for a final answer — with the
usage observed for that response (the replay's, input and output). A compaction there folds
every message before the response; the response and its tool results are dropped (the replay
has them recorded; the SDK never ran them), a new turn's input follows the summary.

Not modelled: the SDK's separate summary ``model`` (a distiller stands in for it), its removal
of tool-use blocks from a trailing assistant message the caller passed, server-side compaction
(``compact_20260112``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from ...errors import StrategyError
from ...messages import AssistantMessage, Rendered, Usage, UserInput
from ...protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from .._lifecycle import Summarizes, TurnLifecycle
from ..harpe import distill_request
from .._validate import check_base, check_int
from .._preset import Factory, Knob, Preset, make_distiller

__all__ = [
    "DEFAULT_THRESHOLD",
    "SUMMARY_PROMPT",
    "summary_message",
    "ToolRunnerCompaction",
    "ToolRunnerCompactionContext",
    "RunnerCompacted",
    "PRESETS",
]

DEFAULT_THRESHOLD = 100_000
"""``DEFAULT_THRESHOLD`` of the SDK's ``CompactionControl``: tokens of the last response's usage."""
SUMMARY_PROMPT = """You have been working on the task described above but have not yet completed it. Write a continuation summary that will allow you (or another instance of yourself) to resume work efficiently in a future context window where the conversation history will be replaced with this summary. Your summary should be structured, concise, and actionable. Include:
1. Task Overview
The user's core request and success criteria
Any clarifications or constraints they specified
2. Current State
What has been completed so far
Files created, modified, or analyzed (with paths if relevant)
Key outputs or artifacts produced
3. Important Discoveries
Technical constraints or requirements uncovered
Decisions made and their rationale
Errors encountered and how they were resolved
What approaches were tried that didn't work (and why)
4. Next Steps
Specific actions needed to complete the task
Any blockers or open questions to resolve
Priority order if multiple steps remain
5. Context to Preserve
User preferences or style requirements
Domain-specific details that aren't obvious
Any promises made to the user
Be concise but complete—err on the side of including information that would prevent duplicate work or repeated mistakes. Write in a way that enables immediate resumption of the task.
Wrap your summary in <summary></summary> tags."""
"""The SDK's ``DEFAULT_SUMMARY_PROMPT`` (MIT), the distill request's system prompt here."""


def summary_message(summary: str) -> str:
    """The text of the user message the runner keeps: the model's answer, which the prompt
    asks to wrap in ``<summary>`` tags; a summary that does not begin with one is wrapped here."""
    return summary if summary.lstrip().startswith("<summary>") else f"<summary>\n{summary}\n</summary>"


@dataclass(frozen=True)
class RunnerCompacted:
    """Event: the response before had used ``tokens`` (>= ``threshold``); the history was
    summarized and ``discarded`` messages (that response and its tool results) dropped unseen."""

    tokens: int
    threshold: int
    discarded: int


@dataclass(frozen=True, kw_only=True)
class ToolRunnerCompaction:
    """The Anthropic SDK tool runner's ``compaction_control``: once a response has used
    ``threshold`` tokens, the whole history becomes one summary message."""

    threshold: int = DEFAULT_THRESHOLD
    """``context_token_threshold``: the response's input (cache included) plus output tokens."""

    def __post_init__(self) -> None:
        check_int("threshold", self.threshold, 1)

    def context(self, base_system: str, *, distill: Distill,
                on_event: Callable[[object], None] | None = None) -> "ToolRunnerCompactionContext":
        """A fresh lifecycle context with this configuration. Build one per replay, with its
        own distiller: a distiller may keep state across calls."""
        return ToolRunnerCompactionContext(base_system, self, distill=distill, on_event=on_event)


class ToolRunnerCompactionContext(TurnLifecycle, Summarizes):
    """The SDK tool runner's compaction in Harpe's lifecycle.

    Every request sends the transcript. At each `compact` the last observed usage (input plus
    output) is compared with the threshold; at or above it, everything before the last reply
    goes to the distiller, and the transcript becomes the summary message followed by the
    turn's input when the check is at a turn's start. Reports `RunnerCompacted`,
    `ContextCompacted` and, through `MeteredDistill`, `DistillCall`.
    """

    def __init__(self, base_system: str, config: ToolRunnerCompaction, *, distill: Distill,
                 on_event: Callable[[object], None] | None = None) -> None:
        check_base(base_system, config, ToolRunnerCompaction)
        super().__init__(base_system)
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self.config = config
        self._threshold = config.threshold  # read at every request
        self._reported: int | None = None  # the last response's usage (None: none since a compaction)
        self._summary = ""
        self._changed = False
        self._marked_state: tuple = (None, "")

    @property
    def limit(self) -> Limit:
        """The threshold, as a reactive high-water mark (the response that reaches it was sent)."""
        return Limit(tokens=self.config.threshold, kind="high_water")

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_state = (self._reported, self._summary)

    def observe(self, usage: Usage) -> None:
        self._reported = usage.input_tokens + usage.output_tokens

    def compact(self) -> Compaction:
        count = self._reported
        if count is not None and count >= self._threshold:
            self._compact(count)
        changed, self._changed = self._changed, False
        return self._whole(changed, self._base_system)

    def _compact(self, count: int) -> None:
        t = self._transcript
        last = next((k for k in range(len(t) - 1, -1, -1) if isinstance(t[k], AssistantMessage)), None)
        if last is None or last == 0:
            return  # nothing before the response to summarize
        folded = t[:last]
        text = self._distill(Rendered(SUMMARY_PROMPT, (UserInput(distill_request(folded, "")),)))
        if text is None:
            return
        if not isinstance(text, str):
            raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
        # a new turn's input is the user's, sent after the summary; the response and its
        # tool results were never acted on
        kept = [m for m in t[last + 1:] if isinstance(m, UserInput)]
        self._summary = text
        self._transcript = [UserInput(summary_message(text)), *kept]
        self._reported = None
        self._changed = True
        self._events.emit(RunnerCompacted(count, self.config.threshold, len(t) - last - len(kept)))
        self._events.emit(ContextCompacted(len(t) - len(kept)))

    def _restored(self) -> None:
        self._reported, self._summary = self._marked_state
        self._changed = True

    def __repr__(self) -> str:
        return f"ToolRunnerCompactionContext(threshold={self.config.threshold:,}, {len(self._transcript)} messages)"


# --- presets ------------------------------------------------------------------------------


def _anthropic_sdk(*, system: str, distill: Distill | None, high_water: int, **_: Any) -> Factory:
    config = ToolRunnerCompaction(threshold=high_water)
    make = make_distiller(distill, min(8_000, high_water))
    return lambda: config.context(system, distill=make())


PRESETS: tuple[Preset, ...] = (
    Preset(name="anthropic-sdk-compaction", family="anthropic",
           source="anthropic-sdk-python (`anthropics/anthropic-sdk-python` @009b0353) "
                  "`src/anthropic/lib/tools/_beta_runner.py`, `src/anthropic/lib/tools/_beta_compaction_control.py`",
           description="The Anthropic SDK tool runner's compaction_control: once a response used 100,000 tokens, the "
                       "history before it becomes one summary message and the response is discarded",
           knobs=(Knob(name="high_water", unit="tokens", default=100_000, scales=True,
                       help="context_token_threshold: the response's input (cache included) plus output tokens"),),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_anthropic_sdk,
           note="reactive; the response that crossed the threshold and its tool results are dropped unseen (the SDK "
                "never runs those calls), so the newest messages are lost at each compaction"),
)
