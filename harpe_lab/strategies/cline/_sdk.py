"""The SDK's two configurations (`BasicCompaction`, `AgenticCompaction`) and the context that
runs them (`ClineContext`). Together because each configuration builds the context and the
context dispatches on the configuration."""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import is_
from typing import Any, Callable, Mapping, Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, Rendered, ToolResults, UserInput
from ...protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from .._lifecycle import TurnLifecycle
from .._validate import check_int
from ._measures import (
    CHARS_PER_TOKEN,
    DEFAULT_MAX_INPUT,
    LONG_CONVERSATION_TARGET_RATIO,
    MANUAL_TARGET_RATIO,
    PRESERVE_RECENT_TOKENS,
    SUMMARY_SYSTEM,
    TARGET_RATIO,
    TRIGGER_RATIO,
    _SIZES,
    _SUMMARY,
    _estimate_chars,
    _js_len,
    _message_chars,
    _pairs,
    _request_frame_chars,
)
from ._projection import _project
from ._basic import _basic, _basic_after, settled_until
from ._agentic import (
    _Summary,
    _cut_index,
    _ensure_files_section,
    _file_op_sets,
    _file_ops,
    _serialize,
    _sorted_ops,
    summary_message,
    summary_request,
)

__all__ = ["ClineCompacted", "BasicCompaction", "AgenticCompaction", "ClineContext"]

# --- configuration -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ClineCompacted:
    """Event: Cline's estimate of the request was ``tokens`` (>= ``trigger``; any, for a
    manual compaction), so ``strategy`` (``"basic"`` or ``"agentic"``) rewrote ``before``
    messages into ``after``, aiming at ``target`` tokens of messages. ``fallback``: the
    agentic summarizer failed and basic ran instead, as Cline does."""

    strategy: str
    tokens: int
    trigger: float
    target: int
    before: int
    after: int
    fallback: bool = False


@dataclass(frozen=True, kw_only=True)
class _SDKCompaction:
    max_input: int = DEFAULT_MAX_INPUT
    """Cline's ``maxInput``: the model's max input tokens (at most its context window), or 90%
    of the window when only that is known; 128,000 when neither is."""
    trigger: int | None = None
    """The request estimate at which Cline compacts; ``None``: ``0.9 × max_input``, as Cline
    (which has no setting for it)."""
    max_output: int | None = None
    """The model's reported max output tokens; ``None``: not reported. Below ``max_input``,
    a conversation of 5 exchanges or more is compacted to half of ``max_input``."""

    def __post_init__(self) -> None:
        check_int("max_input", self.max_input, 1)
        if self.trigger is not None:
            check_int("trigger", self.trigger, 1)
            if self.trigger > self.max_input:
                raise StrategyError(f"trigger must be at most max_input ({self.max_input:,}), got {self.trigger:,}; "
                                    "raise max_input")
        if self.max_output is not None:
            check_int("max_output", self.max_output, 1)

    @property
    def trigger_tokens(self) -> float:
        """The request estimate at which Cline compacts (``0.9 × max_input`` by default)."""
        return self.max_input * TRIGGER_RATIO if self.trigger is None else float(self.trigger)

    def request_target(self, messages: Sequence[Message]) -> float:
        """``resolveAutoRequestTargetTokens``: the request size an automatic compaction aims at."""
        trigger = self.trigger_tokens
        # the model's limits first: counting the exchanges walks the whole history
        long = (self.max_output is not None and self.max_output < self.max_input and _pairs(messages) >= 5)
        target = math.floor(self.max_input * LONG_CONVERSATION_TARGET_RATIO) if long \
            else math.floor(trigger * TARGET_RATIO)
        return max(1, min(target, self.max_input, max(1, trigger - 1)))


@dataclass(frozen=True, kw_only=True)
class BasicCompaction(_SDKCompaction):
    """The Cline SDK's ``basic`` compaction (no model): every typed prompt kept, older turns'
    final answers, the latest turn's newest messages, and a notice of the dropped work."""

    def context(self, base_system: str, *, tools: Sequence[Mapping[str, Any]] = (),
                on_event: Callable[[object], None] | None = None) -> "ClineContext":
        """A fresh lifecycle context; ``tools`` are the schemas Cline would send (they count
        in its estimate of the request)."""
        return ClineContext(base_system, self, tools=tools, on_event=on_event)

    def compact_manually(self, messages: Sequence[Message], *, system: str = "",
                         tools: Sequence[Mapping[str, Any]] = (),
                         ratio: float = MANUAL_TARGET_RATIO) -> tuple[Message, ...] | None:
        """What Cline's ``/compact`` (``mode: "manual"``; ``scripts/compact-session.ts``) makes
        of ``messages`` — a history this strategy did not write, so nothing in it is frozen —
        or None when it would change nothing."""
        ctx = self.context(system, tools=tools)
        return ctx._manual(list(messages), ratio)


@dataclass(frozen=True, kw_only=True)
class AgenticCompaction(_SDKCompaction):
    """The Cline SDK's ``agentic`` compaction (its default): the newest
    ``preserve_recent_tokens`` verbatim, the rest summarized with the previous summary."""

    preserve_recent_tokens: int = PRESERVE_RECENT_TOKENS
    """Tokens (Cline's estimate) kept verbatim at the end; capped by the message target.
    ``scripts/compact-session.ts`` runs with 0 unless told."""

    def __post_init__(self) -> None:
        super().__post_init__()
        check_int("preserve_recent_tokens", self.preserve_recent_tokens, 0)

    def context(self, base_system: str, *, distill: Distill, tools: Sequence[Mapping[str, Any]] = (),
                on_event: Callable[[object], None] | None = None) -> "ClineContext":
        """A fresh lifecycle context with its own distiller (build one per replay)."""
        return ClineContext(base_system, self, tools=tools, distill=distill, on_event=on_event)

    def compact_manually(self, messages: Sequence[Message], *, distill: Distill, system: str = "",
                         tools: Sequence[Mapping[str, Any]] = (),
                         ratio: float = MANUAL_TARGET_RATIO) -> tuple[Message, ...] | None:
        """What Cline's ``/compact`` makes of ``messages`` with ``distill`` as its summarizer,
        or None when it would change nothing."""
        ctx = self.context(system, tools=tools, distill=distill)
        return ctx._manual(list(messages), ratio)


# --- the lifecycle ---------------------------------------------------------------------------


class ClineContext(TurnLifecycle):
    """The Cline SDK's compaction in Harpe's lifecycle.

    Every request sends the history (the messages since the last compaction's output, which
    replaced what it compacted: `transcript`). At every `compact` Cline's estimate of the
    whole request is compared with the trigger (its own estimate: the reported usage plays no
    part); at or above it the configured compaction runs on the whole history, the current
    turn included. A compaction that changes nothing (or an agentic one whose summarizer
    returns nothing) leaves the request as it is; the next request checks again. Reports
    `ClineCompacted` at every compaction; an agentic one also reports `ContextCompacted` (the
    messages not carried verbatim) and its summarizer call as a `DistillCall`.
    """

    def __init__(self, base_system: str, config: BasicCompaction | AgenticCompaction, *,
                 tools: Sequence[Mapping[str, Any]] = (), distill: Distill | None = None,
                 on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, (BasicCompaction, AgenticCompaction)):
            raise StrategyError(f"config must be a BasicCompaction or an AgenticCompaction, got {config!r}")
        self._events = EventHub(on_event)
        self._distill = None if distill is None and isinstance(config, BasicCompaction) \
            else MeteredDistill(distill, self._events)  # type: ignore[arg-type]
        self.config = config
        self.tools = tuple(tools)
        self._frame_chars = _request_frame_chars(base_system, self.tools)
        # beside each message of the transcript: its marks, JSON length and Cline's estimate
        self._marks: list[int] = []
        self._chars: list[int] = []  # JSON length of each message
        self._total_chars = 0
        self._ests: list[int] = []  # Cline's estimate of each message
        self._total_est = 0
        self._summary = ""
        self._summaries: dict[int, _Summary] = {}  # the summary message in the history, by identity
        # the place before which the history is a basic compaction's settled output, which the
        # next one carries as it is (`settled_until`; 0: none, and always for the agentic mode)
        self._settled = 0
        self._marked_state: tuple = ([], [], [], "", {}, 0)

    @property
    def limit(self) -> Limit:
        """The trigger, as a target: Cline compacts before sending, by its own estimate."""
        return Limit(tokens=math.floor(self.config.trigger_tokens), kind="target")

    @property
    def summary(self) -> str:
        """The last agentic summary ("" before the first, and always for the basic mode)."""
        return self._summary

    @property
    def tokens(self) -> int:
        """Cline's estimate of the next request: ``ceil(JSON characters / 3)``."""
        n = len(self._transcript)
        return _estimate_chars(self._frame_chars + self._total_chars + max(0, n - 1))

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _set(self, messages: list[Message], marks: list[int], carried: int = 0) -> None:
        """The history is now ``messages``; its first ``carried`` are the old one's, as they were."""
        self._transcript, self._marks = messages, marks
        sizes = _SIZES.get
        # _message_chars, its memo's hit inlined: a compaction's messages are mostly weighed already
        chars = [hit[1] if (hit := sizes(id(m))) is not None and hit[0] is m else _message_chars(m)
                 for m in messages[carried:]]
        self._chars = self._chars[:carried] + chars
        self._total_chars = sum(self._chars)
        self._ests = self._ests[:carried] + [max(1, -(-c // CHARS_PER_TOKEN)) for c in chars]
        self._total_est = sum(self._ests)

    def _mark_turn(self) -> None:
        # the lists, not copies, as the transcript is marked: appends only extend them and a
        # compaction replaces them, so their first `_marked[1]` entries stay the turn start's
        self._marked_state = (self._marks, self._chars, self._ests, self._summary, self._summaries, self._settled)

    def _added(self, message: Message) -> None:
        chars = _message_chars(message)
        self._marks.append(0)
        self._chars.append(chars)
        self._total_chars += chars
        est = _estimate_chars(chars)
        self._ests.append(est)
        self._total_est += est

    def _restored(self) -> None:
        marks, chars, ests, self._summary, self._summaries, self._settled = self._marked_state
        length = self._marked[1]
        self._marks, self._chars, self._ests = marks[:length], chars[:length], ests[:length]
        self._total_chars = sum(self._chars)
        self._total_est = sum(self._ests)
        for kept in self._transcript[length:]:  # the turn's input, weighed again
            self._added(kept)

    def _budget(self, tokens: int) -> tuple[int, int, int]:
        """(the messages' estimate, the message trigger, the request overhead)."""
        messages = self._total_est
        overhead = max(0, tokens - messages)
        trigger = max(1, math.floor(self.config.trigger_tokens - overhead))
        return messages, trigger, overhead

    def compact(self) -> Compaction:
        tokens = self.tokens
        compacted = False
        if tokens >= self.config.trigger_tokens:
            _, trigger, overhead = self._budget(tokens)
            target = max(1, math.floor(self.config.request_target(self._transcript) - overhead))
            compacted = self._run(tokens, target, trigger)
        return self._whole(compacted, self._base_system)

    def _manual(self, messages: list[Message], ratio: float) -> tuple[Message, ...] | None:
        if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not math.isfinite(ratio):
            raise StrategyError(f"ratio must be a number, got {ratio!r}")
        for k, m in enumerate(messages):
            if not isinstance(m, (UserInput, AssistantMessage, ToolResults)):
                raise TypeError(f"messages[{k}] is not a harpe_lab message: {m!r}")
        self._settled = 0
        self._set(messages, [0] * len(messages))
        tokens = self.tokens
        total, trigger, _ = self._budget(tokens)
        # resolveManualMessageTargetTokens: the ratio is held between 0.05 and 0.95
        target = max(1, math.floor(min(trigger, total * min(0.95, max(0.05, ratio)))))
        return tuple(self._transcript) if self._run(tokens, target, trigger) else None

    def _run(self, tokens: int, target: int, trigger: int) -> bool:
        before = len(self._transcript)
        fallback = False
        result: tuple[list[Message], list[int]] | None
        carried = 0  # the leading messages the compaction carried as they were
        strategy = "basic"
        written: _Summary | None = None
        if isinstance(self.config, AgenticCompaction):
            try:
                result, written = self._agentic(target)
                strategy = "agentic"
            except _SummarizerFailed:
                # Cline falls back to the deterministic basic compaction when the summary fails
                result = _basic(self._transcript, self._marks, target=target, trigger=trigger, ests=self._ests)
                fallback = True
        else:
            result, carried = _basic_after(self._transcript, self._marks, self._settled, target=target,
                                           trigger=trigger, ests=self._ests)
        if result is None:
            return False
        messages, marks = result
        verbatim = 0
        if written is not None:
            old = {id(m) for m in self._transcript}
            verbatim = sum(id(m) in old for m in messages)
            self._summaries = {id(written.message): written}
            self._summary = written.text
        elif self._summaries:
            kept = {id(m) for m in messages}
            self._summaries = {k: v for k, v in self._summaries.items() if k in kept}
        self._set(messages, marks, carried)
        self._settled = settled_until(messages, marks, carried) if strategy == "basic" and not fallback else 0
        self._events.emit(ClineCompacted(strategy, tokens, self.config.trigger_tokens, target, before,
                                         len(messages), fallback))
        if written is not None:
            # a summary was written: what left the request is summarized. Basic compaction's
            # notices are rule-written, not a summary (no distill call): a compaction only
            self._events.emit(ContextCompacted(before - verbatim))
        return True

    def _agentic(self, target: int) -> tuple[tuple[list[Message], list[int]] | None, "_Summary | None"]:
        config = self.config
        assert isinstance(config, AgenticCompaction) and self._distill is not None
        messages, marks = self._transcript, self._marks
        if len(messages) < 2:
            return None, None
        cut = _cut_index(messages, marks, min(config.preserve_recent_tokens, target), self._ests)
        if cut <= 0 or cut >= len(messages):
            return None, None
        head = messages[:cut]
        latest = next((k for k in range(cut - 1, -1, -1) if marks[k] & _SUMMARY), -1)
        earlier = self._summaries.get(id(head[latest])) if latest >= 0 else None
        previous = earlier.text if earlier is not None and earlier.message is head[latest] else ""
        fold = head[latest + 1:]
        if not fold:
            return None, None
        summaries = self._summaries
        fold_ops = None  # the fold's file operations, when no summary is among its messages
        if not any((e := summaries.get(id(m))) is not None and e.message is m for m in fold):
            fold_ops = _file_op_sets(fold, {})
            before = _file_op_sets(head[:latest + 1], summaries)
            pre_read, pre_modified = _sorted_ops(before[0] | fold_ops[0], before[1] | fold_ops[1])
        else:
            pre_read, pre_modified = _file_ops(head, summaries)
        # the summarizer is the active model (no separate one is configured): its input
        # limit is the same max input
        overhead = _estimate_chars(_js_len(summary_request("", pre_read, pre_modified, previous)))
        room = config.max_input - overhead
        if room <= 0:
            return None, None
        projected, _, ok = _project(list(fold), list(range(len(fold))), room,
                                    self._ests[latest + 1:cut])
        if not ok:
            return None, None
        if fold_ops is not None and len(projected) == len(fold) and all(map(is_, projected, fold)):
            read, modified = _sorted_ops(set(fold_ops[0]), set(fold_ops[1]))
        else:
            read, modified = _file_ops(projected, {})
        conversation = "\n\n".join(_serialize(m) for m in projected).strip()
        request = Rendered(SUMMARY_SYSTEM, (UserInput(summary_request(conversation, read, modified, previous)),))
        try:
            reply = self._distill(request)
        except Exception as exc:  # noqa: BLE001 - Cline catches any summarizer failure
            raise _SummarizerFailed from exc
        if reply is not None and not isinstance(reply, str):
            raise StrategyError(f"distill must return a str or None, got {type(reply).__name__}")
        if not reply or not reply.strip():
            return None, None  # no summary text: the history stays as it was
        summary = _ensure_files_section(reply.strip(), read, modified)
        message = UserInput(summary_message(summary))
        written = _Summary(message, summary, tuple(read), tuple(modified))
        return ([message, *messages[cut:]], [_SUMMARY, *marks[cut:]]), written

    def __repr__(self) -> str:
        kind = "agentic" if isinstance(self.config, AgenticCompaction) else "basic"
        return f"ClineContext({kind}, trigger={self.config.trigger_tokens:,.0f}, {len(self._transcript)} messages)"


class _SummarizerFailed(Exception):
    """The agentic summarizer raised: Cline falls back to basic compaction."""
