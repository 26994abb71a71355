"""OpenCode's context management: the summary that keeps a recent tail, and the pruning of
old tool outputs (`SessionCompaction`).

Sources read: sst/opencode (now anomalyco/opencode), ``packages/opencode/src/session/``:
``compaction.ts`` at commit 3df4a25506fb5ef55e4a02142708448c07fa754a, ``overflow.ts`` at
31e22f65, ``prompt.ts`` at fe072387, and ``util/token.ts`` (``Token.estimate``, quoted in
several write-ups of the same tree; the file is not in the index read):

* the trigger — ``overflow.ts``: before each model call of the prompt loop (``prompt.ts``),
  the last finished assistant message's ``tokens.total`` (input, output and cache) is
  compared with ``usable = context − maxOutputTokens − reserved`` (or ``limit.input −
  reserved`` for a model that declares an input limit), ``reserved = min(20_000,
  maxOutputTokens)`` unless ``compaction.reserved`` is set, ``maxOutputTokens`` the model's
  output limit capped at 32,000. At or above it, the loop adds a compaction request; a
  summary message never triggers one itself.
* the tail — ``select``: the newest whole user turns (a turn starts at each user message)
  whose estimated tokens fit ``preserve_recent_tokens = clamp(floor(0.25 × usable), 2_000,
  15_000)``; the turn that does not fit is split (``splitTurn``): its longest suffix, without
  its user message, that fits what is left. When nothing fits, or everything does (the tail
  would start at the first message), the whole history is summarized. Sizes are
  ``Token.estimate`` (``round(characters / 4)``) of the ``JSON.stringify`` of the model
  messages.
* the summary — the head (without the previous compaction's request and summary, whose
  text is passed as the previous summary) serialized with each tool result cut to 2,000
  characters (``"\\n[truncated]"``), answered by the ``compaction`` agent with no tools.
* the result — ``filterCompacted`` (``message-v2.ts``) sends, from then on, the compaction
  request (a user message rendered "What did we do so far?"), the summary (an assistant
  message), the tail, and — after an automatic compaction — the synthetic user message
  "Continue if you have next steps, or stop and ask for clarification if you are unsure how
  to proceed.", then whatever follows.
* pruning — ``prune``, run when the prompt loop ends (the user turn is answered), when
  ``compaction.prune`` is set: newest first, skipping the last two user turns and stopping at
  a summary or at an output already pruned, completed tool outputs (not errors, not the
  ``skill`` tool) are added up; past ``PRUNE_PROTECT = 40_000`` tokens they are prunable,
  and they are all pruned when they come to more than ``PRUNE_MINIMUM = 20_000``. A pruned
  output is sent as "[Old tool result content cleared]", without its attachments.

Mapped onto harpe_lab's messages: a `UserInput` is a user message (the compaction request
and the continuation are ones too); an `AssistantMessage` with its `ToolResults` is one
OpenCode assistant message (its tool parts hold call and output), so a turn is never split
between a call and its results (OpenCode cannot split one there either); a failed result is
an errored tool part. Sizes are those formulas over the OpenAI-style JSON of each message.

Not modelled: ``compaction.tail_turns``; the compaction's own overflow (``"stop"``) and the
media-stripping replay after a provider overflow; plugins. At the commit read
``compaction.prune`` is off unless configured; `SessionCompaction.prune` is on by default
here, as the lab's ``opencode`` is prune plus summary (the preset's ``prune`` knob turns it
off). The summary comes from the distiller given, asked with Harpe's distill request and our
own words for the compaction agent's prompt.
"""

from __future__ import annotations

import json
import math
from bisect import bisect_left
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Sequence

from .._text import hidden_chars
from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResult, ToolResults, Usage, UserInput, deferred
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from ._lifecycle import Summarizes, TurnLifecycle
from .harpe import distill_request
from ._validate import check_int
from ._preset import Factory, Knob, Preset, make_distiller

__all__ = [
    "CONTEXT_WINDOW",
    "OUTPUT_TOKEN_MAX",
    "COMPACTION_BUFFER",
    "PRUNE_PROTECT",
    "PRUNE_MINIMUM",
    "PRUNE_PROTECTED_TOOLS",
    "TOOL_OUTPUT_MAX_CHARS",
    "MIN_PRESERVE_RECENT_TOKENS",
    "MAX_PRESERVE_RECENT_TOKENS",
    "COMPACTION_REQUEST",
    "CONTINUE_TEXT",
    "CLEARED",
    "COMPACTION_SYSTEM",
    "estimate",
    "SessionCompaction",
    "SessionCompactionContext",
    "Overflowed",
    "Pruned",
    "PRESETS",
]

CONTEXT_WINDOW = 200_000
"""``limit.context`` of the Claude models OpenCode is most run with."""
OUTPUT_TOKEN_MAX = 32_000
"""``OUTPUT_TOKEN_MAX``: the most output tokens OpenCode asks for (``ProviderTransform.maxOutputTokens``)."""
COMPACTION_BUFFER = 20_000
"""``COMPACTION_BUFFER``: the default ``reserved``, when the output limit is larger."""
PRUNE_PROTECT = 40_000
"""Tokens of the newest completed tool outputs never pruned."""
PRUNE_MINIMUM = 20_000
"""A prune happens only when it frees more than this."""
PRUNE_PROTECTED_TOOLS = frozenset({"skill"})
"""Tools whose outputs are never pruned."""
TOOL_OUTPUT_MAX_CHARS = 2_000
"""What the summarizer sees of each tool output."""
MIN_PRESERVE_RECENT_TOKENS = 2_000
MAX_PRESERVE_RECENT_TOKENS = 15_000
COMPACTION_REQUEST = "What did we do so far?"
"""How the compaction request (a user message with a compaction part) is sent to the model."""
CONTINUE_TEXT = "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed."
"""The synthetic user message after an automatic compaction."""
CLEARED = "[Old tool result content cleared]"
"""What a pruned output is sent as."""
COMPACTION_SYSTEM = (
    "You summarize a coding session so that it can go on from the summary and the most recent messages alone. "
    "Keep the goal and the user's instructions, what was done and found, the files and commands that matter, the "
    "decisions and their reasons, and what remains to do. Fold the current summary, when there is one, into the "
    "new one. Reply with the summary only."
)
"""The distill request's system prompt (our words for OpenCode's compaction agent prompt)."""


def estimate(text: str) -> int:
    """OpenCode's ``Token.estimate``: characters / 4, rounded half up (a sanitizer's marker
    as the text it replaced, `hidden_chars`)."""
    return math.floor(_len(text) / 4 + 0.5)


def _len(text: str) -> int:
    return len(text) + hidden_chars(text)


def _dumps(obj: object) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def _json_chars(message: Message, names: dict[str, str]) -> int:
    """Characters of ``message`` as a model message in ``JSON.stringify``."""
    if isinstance(message, UserInput):
        return _len(_dumps({"role": "user", "content": [{"type": "text", "text": message.text}]}))
    if isinstance(message, AssistantMessage):
        content: list[dict] = [{"type": "text", "text": message.text}] if message.text else []
        content += [{"type": "tool-call", "toolCallId": c.id, "toolName": c.name, "input": c.input} for c in message.calls]
        return _len(_dumps({"role": "assistant", "content": content}))
    return _len(_dumps({"role": "tool", "content": [
        {"type": "tool-result", "toolCallId": r.id, "toolName": names.get(r.id, ""),
         "output": {"type": "text", "value": r.content}} for r in message.results]}))


def _tokens(chars: int, count: int) -> int:
    """``Token.estimate(JSON.stringify(messages))`` for ``count`` messages of ``chars``
    characters in all: the array's brackets and commas included."""
    return math.floor((chars + count + 1) / 4 + 0.5) if count else 0


@dataclass(frozen=True)
class Overflowed:
    """Event: the last reply reported ``tokens`` (>= ``usable``), so the history was compacted,
    keeping ``kept`` messages as the tail."""

    tokens: int
    usable: int
    kept: int


@dataclass(frozen=True)
class Pruned:
    """Event: a prune cleared ``outputs`` tool outputs, ``tokens`` by OpenCode's estimate."""

    outputs: int
    tokens: int


@dataclass(frozen=True, kw_only=True)
class SessionCompaction:
    """OpenCode's context management: summarize all but a recent tail once the last reply
    reports ``usable`` tokens, and prune old tool outputs at the end of every user turn."""

    window: int = CONTEXT_WINDOW
    """The model's ``limit.context``, in tokens."""
    max_output: int = OUTPUT_TOKEN_MAX
    """``maxOutputTokens``: the model's output limit, capped at 32,000 by OpenCode."""
    reserved: int | None = None
    """``compaction.reserved``; ``None``: ``min(20,000, max_output)``."""
    preserve_recent: int | None = None
    """``compaction.preserve_recent_tokens``; ``None``: ``clamp(floor(0.25 × usable), 2,000, 15,000)``."""
    prune: bool = True
    """``compaction.prune``: prune old tool outputs when a user turn ends (OpenCode's default: off)."""
    prune_protect: int = PRUNE_PROTECT
    """Tokens of the newest completed outputs never pruned."""
    prune_minimum: int = PRUNE_MINIMUM
    """A prune must free more than this."""
    protected_tools: frozenset[str] = field(default=PRUNE_PROTECTED_TOOLS)
    """Tools whose outputs are never pruned."""
    tool_output_chars: int = TOOL_OUTPUT_MAX_CHARS
    """What the summarizer sees of each tool output, in characters."""

    def __post_init__(self) -> None:
        check_int("window", self.window, 1)
        check_int("max_output", self.max_output, 0)
        if self.reserved is not None:
            check_int("reserved", self.reserved, 0)
        if self.preserve_recent is not None:
            check_int("preserve_recent", self.preserve_recent, 0)
        if not isinstance(self.prune, bool):
            raise StrategyError(f"prune must be a bool, got {self.prune!r}")
        check_int("prune_protect", self.prune_protect, 0)
        check_int("prune_minimum", self.prune_minimum, 0)
        check_int("tool_output_chars", self.tool_output_chars, 0)
        names = self.protected_tools
        if isinstance(names, str) or not isinstance(names, Iterable) or not all(isinstance(n, str) for n in names):
            raise StrategyError(f"protected_tools must be an iterable of tool names (str), got {names!r}")
        object.__setattr__(self, "protected_tools", frozenset(names))
        if self.usable < 1:
            raise StrategyError(
                f"window ({self.window:,}) must be larger than max_output ({self.max_output:,}) plus reserved "
                f"({self.reserved_tokens:,}): nothing would be usable"
            )

    @property
    def reserved_tokens(self) -> int:
        """What is kept free below the window besides the output."""
        return min(COMPACTION_BUFFER, self.max_output) if self.reserved is None else self.reserved

    @property
    def usable(self) -> int:
        """The reported tokens at which OpenCode compacts."""
        return max(0, self.window - self.max_output - self.reserved_tokens)

    @property
    def preserve_recent_tokens(self) -> int:
        """The tail's budget, in OpenCode's estimated tokens."""
        if self.preserve_recent is not None:
            return self.preserve_recent
        return min(MAX_PRESERVE_RECENT_TOKENS, max(MIN_PRESERVE_RECENT_TOKENS, math.floor(self.usable * 0.25)))

    def context(self, base_system: str, *, distill: Distill,
                on_event: Callable[[object], None] | None = None) -> "SessionCompactionContext":
        """A fresh lifecycle context with this configuration. Build one per replay, with its
        own distiller: a distiller may keep state across calls."""
        return SessionCompactionContext(base_system, self, distill=distill, on_event=on_event)


class SessionCompactionContext(TurnLifecycle, Summarizes):
    """OpenCode's compaction and pruning in Harpe's lifecycle.

    Every request sends the transcript: the history as ``filterCompacted`` shows it (after a
    compaction: the request, the summary, the tail, the continuation, then what followed). At
    each `compact` the last observed usage (input plus output) is checked against ``usable``;
    at or above it the history becomes that, with the head summarized. After an answered turn
    old outputs are pruned (when the next turn begins, so that the prune is reported with the
    request that carries it, in place: `Compaction.edits`). Reports
    `Overflowed` and `ContextCompacted` per compaction, `Pruned` per prune, and, through
    `MeteredDistill`, `DistillCall`.
    """

    def __init__(self, base_system: str, config: SessionCompaction, *, distill: Distill,
                 on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, SessionCompaction):
            raise StrategyError(f"config must be a SessionCompaction, got {config!r}")
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self.config = config
        self._names: dict[str, str] = {}
        self._reported: int | None = None  # the last finished reply's tokens (None: a summary's)
        self._asked: UserInput | None = None  # the current compaction request and summary, hidden
        self._summary_message: AssistantMessage | None = None  # from the next summarizer
        self._summary = ""
        self._pruned: set[int] = set()  # the messages a prune replaced since the last request
        self._scan: _PruneScan | None = None
        self._marked_state: tuple = (None, None, None, "")
        self._answered = False  # a turn was answered since the last prune

    @property
    def limit(self) -> Limit:
        """``usable``, as a reactive high-water mark (the reply that reaches it has been sent)."""
        return Limit(tokens=self.config.usable, kind="high_water")

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        if self._answered and self.config.prune:
            # the last prompt loop ended with an answer: OpenCode pruned then. Done now, so
            # that it is reported with the request that first carries it, and before the
            # turn is marked, so that an abort of this turn does not undo it
            self._prune()
        self._answered = False
        self._marked_state = (self._reported, self._asked, self._summary_message, self._summary)

    def _added(self, message: Message) -> None:
        if isinstance(message, AssistantMessage):
            names = self._names
            if self._scan is not None and any(names.get(c.id, c.name) != c.name for c in message.calls):
                self._scan = None  # a call id used again for another tool: outputs scanned may change side
            names.update((c.id, c.name) for c in message.calls)

    def _restored(self) -> None:
        self._reported, self._asked, self._summary_message, self._summary = self._marked_state

    def observe(self, usage: Usage) -> None:
        self._reported = usage.input_tokens + usage.output_tokens

    def commit_turn(self) -> None:
        super().commit_turn()
        self._answered = True  # the prompt loop ended: OpenCode prunes (at the next turn's start, here)

    def compact(self) -> Compaction:
        count = self._reported
        compacted = count is not None and count >= self.config.usable and self._compact(count)
        pruned, self._pruned = tuple(sorted(self._pruned)), set()
        # a compaction or an abort replaced the list; a prune changed it in place
        edits = None if compacted or self._aborted else pruned
        return self._send(deferred(self._base_system, self._transcript), edits is None or bool(edits), edits)

    def _tail_start(self, history: Sequence[Message]) -> int:
        """``select``: where the kept tail starts in ``history`` (0: no tail, all summarized)."""
        budget = self.config.preserve_recent_tokens
        starts = [k for k, m in enumerate(history) if isinstance(m, UserInput)]
        # characters of history[k:], filled from the end as far back as the walk looks: a
        # compaction costs the tail it examines, and a turn is split in one pass
        after = [0] * (len(history) + 1)
        known = len(history)

        def size(lo: int, hi: int) -> int:
            nonlocal known
            while known > lo:
                known -= 1
                after[known] = after[known + 1] + _json_chars(history[known], self._names)
            return _tokens(after[lo] - after[hi], hi - lo)

        total, keep = 0, 0
        for n in range(len(starts) - 1, -1, -1):
            start, end = starts[n], (starts[n + 1] if n + 1 < len(starts) else len(history))
            turn = size(start, end)
            if total + turn <= budget:
                total += turn
                keep = start
                continue
            remaining = budget - total
            if remaining > 0:
                # splitTurn: the turn's longest suffix that fits, never starting on tool
                # results (their call sits in the same OpenCode message)
                for s in range(start + 1, end):
                    if not isinstance(history[s], ToolResults) and size(s, end) <= remaining:
                        keep = s
                        break
            break
        return keep

    def _compact(self, count: int) -> bool:
        hidden = (self._asked, self._summary_message)
        history = [m for m in self._transcript if not any(m is h for h in hidden if h is not None)]
        if not history:
            return False
        keep = self._tail_start(history)
        head, tail = (history, []) if keep == 0 else (history[:keep], history[keep:])
        clip = self.config.tool_output_chars

        def clipped(m: Message) -> Message:
            if not isinstance(m, ToolResults) or all(len(r.content) <= clip for r in m.results):
                return m
            return ToolResults(tuple(ToolResult(r.id, r.content if len(r.content) <= clip else
                                                r.content[:clip] + "\n[truncated]", r.attachments, r.success)
                                     for r in m.results), m.pinned)

        request = Rendered(COMPACTION_SYSTEM, (UserInput(distill_request([clipped(m) for m in head], self._summary)),))
        text = self._distill(request)
        if text is None:
            return False
        if not isinstance(text, str):
            raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
        self._asked, self._summary_message = UserInput(COMPACTION_REQUEST), AssistantMessage(text)
        self._summary = text
        self._transcript = [self._asked, self._summary_message, *tail, UserInput(CONTINUE_TEXT)]
        self._reported = None  # the summary is the last finished message: it never triggers one
        self._events.emit(Overflowed(count, self.config.usable, len(tail)))
        self._events.emit(ContextCompacted(len(head)))
        return True

    def _prune(self) -> None:
        """``prune``: newest first, past the last two user turns and back to a summary or an
        output pruned before, the outputs past the newest ``prune_protect`` tokens, when they
        come to more than ``prune_minimum``. That walk's region is found in the running sums
        of `_PruneScan` (OpenCode walks it at every turn: at its own window that is every
        output of the last ~60,000 tokens, each time)."""
        c = self.config
        s = self._scanned()
        users = s.users
        if len(users) < 2:
            return  # the walk never leaves the last two user turns
        u2 = users[-2]
        b = bisect_left(s.at, u2)  # the outputs before the second newest user message
        # (the walk also stops at the summary message; but that is second, after the compaction
        # request, and no output comes before it)
        a = s.pruned_upto
        k = bisect_left(s.cleared, b) - 1  # the newest output recorded as cleared, before b
        if k >= 0:
            a = max(a, s.cleared[k] + 1)
        if a >= b:
            return
        cum = s.cum
        # newest first, an output is pruned once the outputs from it to b come to more than
        # prune_protect: those before the first place where the running sum reaches this
        cut = bisect_left(cum, cum[b] - c.prune_protect, a, b)
        freed = cum[cut] - cum[a]
        if freed <= c.prune_minimum:
            return
        by_message: dict[int, set[int]] = {}
        for i, j in zip(s.at[a:cut], s.result[a:cut]):
            by_message.setdefault(i, set()).add(j)
        t = list(self._transcript)  # earlier requests read the old list: the edit goes into a copy
        for i, js in by_message.items():
            m = t[i]
            t[i] = ToolResults(tuple(ToolResult(r.id, CLEARED, (), r.success) if j in js else r
                                     for j, r in enumerate(m.results)), m.pinned)  # type: ignore[union-attr]
        self._transcript = s.of = t
        s.pruned_upto = cut
        self._pruned.update(by_message)
        self._events.emit(Pruned(cut - a, freed))

    def _scanned(self) -> "_PruneScan":
        """The scan of the transcript, brought up to date: the list only grows until a
        compaction or an abort replaces it, and then it is scanned again."""
        t = self._transcript
        s = self._scan
        if s is None or s.of is not t:
            s = self._scan = _PruneScan(t)
        if s.seen == len(t):
            return s
        names, protected = self._names, self.config.protected_tools
        users, at, result, cum, cleared = s.users, s.at, s.result, s.cum, s.cleared
        total = cum[-1]
        for i in range(s.seen, len(t)):
            m = t[i]
            if isinstance(m, ToolResults):
                for j, r in enumerate(m.results):
                    if not r.success or names.get(r.id) in protected:
                        continue  # never pruned, and never where the walk stops
                    if r.content == CLEARED and not r.attachments:
                        cleared.append(len(at))
                    at.append(i)
                    result.append(j)
                    total += estimate(r.content)
                    cum.append(total)
            elif isinstance(m, UserInput):
                users.append(i)
        s.seen = len(t)
        return s

    def __repr__(self) -> str:
        return f"SessionCompactionContext(usable={self.config.usable:,}, {len(self._transcript)} messages)"


class _PruneScan:
    """The outputs a prune may weigh in one transcript list, in order: each one's message
    (``at``) and place in it (``result``), the running sum of their estimates (``cum[k]``:
    the first k), which of them were cleared when recorded, and every user message's place."""

    __slots__ = ("of", "seen", "users", "at", "result", "cum", "cleared", "pruned_upto")

    def __init__(self, of: list[Message]) -> None:
        self.of = of
        self.seen = 0
        self.users: list[int] = []
        self.at: list[int] = []
        self.result: list[int] = []
        self.cum: list[int] = [0]
        self.cleared: list[int] = []
        self.pruned_upto = 0  # the outputs up to the newest one pruned


# --- presets ------------------------------------------------------------------------------


def _opencode(*, system: str, distill: Distill | None, high_water: int | None, window: int, max_output: int,
              prune: int, **_: Any) -> Factory:
    room = window - max_output
    if room < 1:
        raise StrategyError(f"window ({window:,}) must be larger than max_output ({max_output:,}): OpenCode reserves "
                            "the output below the window; raise window")
    if high_water is not None and high_water > room:
        raise StrategyError(f"high_water must be at most window - max_output ({room:,}), got {high_water:,}: OpenCode "
                            "reserves the output below the window; raise window")
    reserved = None if high_water is None else room - high_water  # OpenCode's compaction.reserved
    config = SessionCompaction(window=window, max_output=max_output, reserved=reserved, prune=bool(prune))
    make = make_distiller(distill, min(8_000, config.usable))
    return lambda: config.context(system, distill=make())


PRESETS: tuple[Preset, ...] = (
    Preset(name="opencode", family="opencode",
           source="OpenCode (`sst/opencode` @3df4a255) `packages/opencode/src/session/compaction.ts`, "
                  "`packages/opencode/src/session/overflow.ts`, `packages/opencode/src/session/prompt.ts`",
           description="OpenCode's compaction: at usable tokens, all but a recent tail (a quarter of usable, 2,000 to "
                       "15,000 tokens) is summarized; at each turn's end, tool outputs past the newest 40,000 tokens "
                       "are cleared when more than 20,000 can go",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="usable: the last reply's reported tokens at which OpenCode compacts; default: window - "
                            "max_output - min(20,000, max_output)"),
                  Knob(name="window", unit="tokens", default=200_000, minimum=2,
                       help="the model's context limit; a property of the model, not of the conversation"),
                  Knob(name="max_output", unit="tokens", default=32_000, minimum=0,
                       help="the model's output limit, capped at 32,000 by OpenCode"),
                  Knob(name="prune", unit="on/off", default=1, minimum=0, maximum=1,
                       help="compaction.prune: clear old tool outputs at each turn's end (1; OpenCode's own default "
                            "is off)")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_opencode,
           note="reactive: the reply that reaches usable has been sent; the tail's budget follows usable, so a low "
                "high_water keeps only 2,000 tokens; pruning edits old results in place, once per turn"),
)
