"""What the model providers ship themselves, outside any agent: the Anthropic SDK tool
runner's compaction (`ToolRunnerCompaction`, client-side) and OpenAI Realtime's
retention-ratio truncation (`RetentionRatio`, server-side).

The family is "the provider's own SDK or API" rather than "API-side": the Anthropic one runs
in the client library, not on the server. Both are what a developer gets by flipping one
option of the provider's own tooling, which is why they sit together.

Sources read:

* anthropics/anthropic-sdk-python at commit 009b035305e0724ce108ebd796935f91711fc6e1
  (2026-08-07), ``src/anthropic/lib/tools/_beta_compaction_control.py`` and
  ``_beta_runner.py`` (``_check_and_compact``, ``__run__``); the TypeScript SDK's
  ``src/lib/tools/CompactionControl.ts`` (0.81.0) has the same numbers. After every response
  the runner adds up its usage — ``input_tokens + cache_creation_input_tokens +
  cache_read_input_tokens + output_tokens`` — and at or above ``context_token_threshold``
  (``DEFAULT_THRESHOLD = 100_000``) it sends the messages *as they were before that response*
  plus the summary prompt (`SUMMARY_PROMPT`) and replaces every message with one user
  message holding the answer. The response that crossed the threshold is discarded: its
  tool calls are never run, and the model is asked again from the summary alone.
* OpenAI's Realtime API reference and the "Managing costs" guide (platform.openai.com,
  ``session.truncation`` of type ``retention_ratio``): when the conversation's tokens after
  the instructions exceed ``token_limits.post_instructions`` (by default the model's input
  limit), the oldest messages are dropped until only ``retention_ratio`` of that limit is
  used — "to amortize truncations and improve cache rates". What is dropped stays dropped.

Mapped onto harpe_lab's lifecycle: the runner's check after a response is made at the next
`compact` — after the tool round, or at the next turn's start for a final answer — with the
usage observed for that response (the replay's, input and output). A compaction there folds
every message before the response; the response and its tool results are dropped (the
replay has them recorded; the SDK never ran them), a new turn's input follows the summary.
Realtime's truncation drops whole messages (a reply with its tool results as one, since no
provider takes results without their call), counted by the counter given; the newest message
and its call are always kept.

Not modelled: the SDK's separate summary ``model`` (a distiller stands in for it), its
removal of tool-use blocks from a trailing assistant message the caller passed, server-side
compaction (``compact_20260112``); Realtime's audio tokens and its ``token_limits`` on the
instructions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from ._lifecycle import TurnLifecycle
from .harpe import distill_request
from ._validate import check_counter, check_int

__all__ = [
    "DEFAULT_THRESHOLD",
    "SUMMARY_PROMPT",
    "RETENTION_RATIO",
    "summary_message",
    "ToolRunnerCompaction",
    "ToolRunnerCompactionContext",
    "RunnerCompacted",
    "RetentionRatio",
    "RetentionRatioContext",
    "Truncated",
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
RETENTION_RATIO = 0.8
"""The ``retention_ratio`` OpenAI's documentation shows."""


def summary_message(summary: str) -> str:
    """The text of the user message the runner keeps: the model's answer, which the prompt
    asks to wrap in ``<summary>`` tags; a summary that does not begin with one is wrapped here."""
    return summary if summary.lstrip().startswith("<summary>") else f"<summary>\n{summary}\n</summary>"


def _check_base(base_system: object, config: object, kind: type) -> None:
    if not isinstance(base_system, str):
        raise StrategyError(f"base_system must be a str, got {type(base_system).__name__}")
    if not isinstance(config, kind):
        raise StrategyError(f"config must be a {kind.__name__}, got {config!r}")


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


class ToolRunnerCompactionContext(TurnLifecycle):
    """The SDK tool runner's compaction in Harpe's lifecycle.

    Every request sends the transcript. At each `compact` the last observed usage (input plus
    output) is compared with the threshold; at or above it, everything before the last reply
    goes to the distiller, and the transcript becomes the summary message followed by the
    turn's input when the check is at a turn's start. Reports `RunnerCompacted`,
    `ContextCompacted` and, through `MeteredDistill`, `DistillCall`.
    """

    def __init__(self, base_system: str, config: ToolRunnerCompaction, *, distill: Distill,
                 on_event: Callable[[object], None] | None = None) -> None:
        _check_base(base_system, config, ToolRunnerCompaction)
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

    @property
    def summary(self) -> str:
        """The last summary ("" before the first compaction)."""
        return self._summary

    @property
    def distill(self) -> Distill:
        """The distiller this context calls."""
        return self._distill.distill

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


# --- OpenAI Realtime ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Truncated:
    """Event: the messages came to ``tokens_before`` (over the limit); the oldest ``dropped``
    went, leaving ``tokens_after``."""

    dropped: int
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True, kw_only=True)
class RetentionRatio:
    """OpenAI Realtime's ``retention_ratio`` truncation: when the messages exceed ``limit``
    tokens, drop the oldest until at most ``ratio × limit`` remain."""

    limit: int
    """``token_limits.post_instructions``: tokens of the messages, the instructions aside."""
    ratio: float = RETENTION_RATIO
    """``retention_ratio``: the share of ``limit`` left after a truncation."""

    def __post_init__(self) -> None:
        check_int("limit", self.limit, 1)
        r = self.ratio
        if isinstance(r, bool) or not isinstance(r, (int, float)) or not math.isfinite(r) or not 0 <= r <= 1:
            raise StrategyError(f"ratio must be a fraction in [0, 1], got {r!r}")

    def context(self, base_system: str, *, counter: Any, tools: Sequence[Mapping[str, Any]] = (),
                on_event: Callable[[object], None] | None = None) -> "RetentionRatioContext":
        """A fresh lifecycle context: ``counter`` prices each message; the declared limit is
        ``limit`` plus what the system prompt and ``tools`` cost."""
        return RetentionRatioContext(base_system, self, counter=counter, tools=tools, on_event=on_event)


class RetentionRatioContext(TurnLifecycle):
    """OpenAI Realtime's retention-ratio truncation in Harpe's lifecycle.

    The request is the window: the messages from the oldest kept on. Each message is priced
    once, as it is appended, so a request costs O(1) but for the messages a truncation drops.
    Reports `Truncated`.
    """

    def __init__(self, base_system: str, config: RetentionRatio, *, counter: Any,
                 tools: Sequence[Mapping[str, Any]] = (), on_event: Callable[[object], None] | None = None) -> None:
        _check_base(base_system, config, RetentionRatio)
        check_counter(counter)
        super().__init__(base_system)
        self._events = EventHub(on_event)
        self.config = config
        self.counter = counter
        self.tools = tuple(tools)
        self._fixed = int(counter.count_rendered(Rendered(base_system, ()), self.tools))
        self._over = config.limit  # read at every request
        # the window is the transcript: the messages from the oldest kept on
        self._prices: list[int] = []  # the window's messages' tokens
        self._tokens = 0
        self._changed = False
        self._marked_state: tuple = ([], 0)

    @property
    def limit(self) -> Limit:
        """The whole request the limit allows, as a target: the newest message is sent even
        when it alone is over."""
        return Limit(tokens=self._fixed + self.config.limit, kind="target")

    @property
    def tokens(self) -> int:
        """The window's messages' tokens."""
        return self._tokens

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_state = (self._prices, self._tokens)

    def _added(self, message: Message) -> None:
        price = int(self.counter.count_message(message))
        self._prices.append(price)
        self._tokens += price

    def compact(self) -> Compaction:
        if self._tokens > self._over:
            self._truncate()
        changed, self._changed = self._changed, False
        return self._whole(changed, self._base_system)

    def _truncate(self) -> None:
        w, prices = self._transcript, self._prices
        before = self._tokens
        target = self.config.ratio * self.config.limit
        # the newest message and, for tool results, the call they answer are never dropped
        last = len(w) - 2 if len(w) >= 2 and isinstance(w[-1], ToolResults) else len(w) - 1
        start, tokens = 0, before
        while tokens > target and start < last:
            tokens -= prices[start]
            start += 1
        while start < last and isinstance(w[start], ToolResults):  # results whose call went
            tokens -= prices[start]
            start += 1
        if start == 0:
            return
        # new lists: the requests sent and the turn's mark read the old ones
        self._transcript, self._prices, self._tokens = w[start:], prices[start:], tokens
        self._changed = True
        self._events.emit(Truncated(start, before, tokens))

    def _restored(self) -> None:
        prices, self._tokens = self._marked_state
        length = self._marked[1]
        self._prices = prices[:length]
        self._changed = True
        for kept in self._transcript[length:]:  # the turn's input, priced again
            self._added(kept)

    def __repr__(self) -> str:
        return f"RetentionRatioContext(limit={self.config.limit:,}, {len(self._transcript)} messages)"
