"""Roo Code's context management: the "fresh start" condense, and the half-window sliding
truncation it falls back to (`Condense`).

Sources read: RooCodeInc/Roo-Code at commit cb836567180a3ff1da6d082f3178b90c3bd22a70
(2026-04-14): ``src/core/context-management/index.ts`` (``manageContext``,
``truncateConversation``), ``src/core/condense/index.ts`` (``summarizeConversation``,
``getEffectiveApiHistory``, ``extractCommandBlocks``), ``src/core/condense/foldedFileContext.ts``,
``src/core/task/Task.ts`` (``attemptApiRequest``), ``packages/core/src/message-utils/
consolidateTokenUsage.ts`` (``contextTokens``) and ``packages/types`` (``ANTHROPIC_DEFAULT_MAX_TOKENS``):

* when — before every API request (a turn's first, and each one sending tool results back),
  with the history holding the message about to be sent, once a count exists:
  ``prevContextTokens = contextTokens + lastMessageTokens``, where ``contextTokens`` is the
  last request's ``tokensIn + tokensOut`` (after a condense, the condensed context's own
  count) and ``lastMessageTokens`` the provider's count of that last message.
* the trigger — ``allowedTokens = contextWindow × (1 − 0.1) − maxTokens`` (``maxTokens`` the
  model's, ``ANTHROPIC_DEFAULT_MAX_TOKENS = 8192`` when unknown); with auto-condense on
  (the default), a condense is tried when ``100 × prev / window ≥ autoCondenseContextPercent``
  (default 100, per profile 5–100) or ``prev > allowedTokens``; if it fails, or condensing is
  off, and ``prev > allowedTokens``, the sliding window truncates.
* the condense — every message since the last summary (the summary itself, and what a
  truncation hid, included) is summarized; the model then sees only one user message:
  ``"## Conversation Summary\\n" + summary``, the ``<command>`` blocks of the task's first
  message as "Active Workflows" in a ``<system-reminder>``, one ``<system-reminder>`` per file
  Roo read with its tree-sitter outline ("## File Context: path", ``start--end | line``), up
  to 50,000 characters, and the environment details. Fewer than two messages since the last
  summary, or an empty summary, is an error.
* the sliding window — of the *visible* stored messages (those no truncation hid; the ones
  hidden by a condense still count), the first is kept and the next ``floor((visible − 1) ×
  0.5)``, rounded down to even, are hidden; a user message "[Sliding window truncation: N
  messages hidden to reduce context]" marks the place. What the model sees is then the
  history from the last summary on, without hidden messages and without tool results whose
  call is gone.

Mapped onto harpe_lab's messages: a `UserInput` or a `ToolResults` is a user message, an
`AssistantMessage` an assistant message; the transcript is what the model sees. The summary
message's blocks are joined into one text. Roo counts the condensed-away messages among the
visible ones, so after a condense the sliding window first hides those (invisible already):
that count is kept, and a truncation removes from the transcript only what reaches past it.
A tool result whose call a truncation hid is dropped (Roo filters those out when a summary
exists; without one it relies on user and assistant messages alternating, which an aborted
turn breaks).

Not modelled: tree-sitter — a file's outline is drawn from the newest content a read tool
returned for it, as lines that open a definition (``def``, ``class``, ``function``,
``interface``, ``fn``, …) spanning at least 4 lines, with the line numbers a reader's output
prefixes stripped; the environment details (not in the recordings); Roo's merging of
consecutive user messages for the API (the marker stays its own message); images. The
summary comes from the distiller given, asked with Harpe's distill request and our own
words for Roo's condense prompt.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from ._lifecycle import Summarizes, TurnLifecycle
from .harpe import distill_request
from ._validate import check_counter, check_int
from ._preset import Factory, Knob, Preset, make_distiller

__all__ = [
    "CONTEXT_WINDOW",
    "MAX_TOKENS",
    "TOKEN_BUFFER_PERCENTAGE",
    "FOLDED_CHARS",
    "READ_TOOLS",
    "CONDENSE_SYSTEM",
    "summary_text",
    "command_blocks",
    "outline",
    "folded_files",
    "truncation_marker",
    "Condense",
    "CondenseContext",
    "Condensed",
    "SlidingWindowTruncated",
    "PRESETS",
]

CONTEXT_WINDOW = 200_000
"""The context window of the Claude models Roo is most run with."""
MAX_TOKENS = 8_192
"""``ANTHROPIC_DEFAULT_MAX_TOKENS``: the reply reserve when the model's is unknown."""
TOKEN_BUFFER_PERCENTAGE = 0.1
"""The share of the window kept free below ``allowedTokens``."""
FOLDED_CHARS = 50_000
"""``maxCharacters`` of the folded file context."""
READ_TOOLS = frozenset({"read_file", "Read", "read", "view"})
"""Tools whose results are file contents (Roo's own ``read_file``, and its peers in other agents' transcripts)."""
_PATH_KEYS = ("path", "file_path", "filePath", "filename")
_MIN_COMPONENT_LINES = 4  # tree-sitter's MIN_COMPONENT_LINES: shorter definitions are not listed
CONDENSE_SYSTEM = (
    "You summarize a coding agent's conversation; this is a system operation, not a user message. Do not call "
    "tools. Write the summary the agent will start afresh from: the user's requests and intent, the key technical "
    "concepts, the files and code involved, the problems solved, the pending tasks, the current work and the next "
    "step, based on what the user was doing before this request. Reply with the summary only."
)
"""The condense request's system prompt (our words for Roo's ``SUMMARY_PROMPT`` and its ``CONDENSE`` instructions)."""

_COMMAND = re.compile(r"<command[^>]*>[\s\S]*?</command>")
_LINE_NUMBER = re.compile(r"^\s*\d+(?:→|\t| \| )")
_DEFINITION = re.compile(
    r"^(?P<indent>\s*)(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:public\s+|private\s+|protected\s+)?"
    r"(?:static\s+)?(?:abstract\s+)?(?:async\s+)?"
    r"(?:def|class|function|interface|type|enum|struct|impl|fn|func|trait|module|defmodule|defp?|object)\b"
)


def summary_text(summary: str, commands: str = "", files: Sequence[str] = ()) -> str:
    """The text of Roo's summary message: ``## Conversation Summary`` and the summary, the
    active workflows (``commands``) in a ``<system-reminder>``, then each folded file section."""
    blocks = [f"## Conversation Summary\n{summary}"]
    if commands:
        blocks.append("<system-reminder>\n## Active Workflows\nThe following directives must be maintained across "
                      f"all future condensings:\n{commands}\n</system-reminder>")
    blocks.extend(s for s in files if s.strip())
    return "\n\n".join(blocks)


def command_blocks(text: str) -> str:
    """Roo's ``extractCommandBlocks``: every ``<command …>…</command>`` of ``text``, one per line."""
    return "\n".join(_COMMAND.findall(text))


def outline(content: str) -> str:
    """A folded file: ``start--end | line`` for each line that opens a definition spanning at
    least 4 lines (up to the next definition at the same or a shallower indent). Our stand-in
    for tree-sitter's definitions; "" when there is none."""
    lines = [_LINE_NUMBER.sub("", line, count=1) for line in content.split("\n")]
    opens = [(k, len(m.group("indent").expandtabs(4))) for k, line in enumerate(lines)
             if (m := _DEFINITION.match(line)) is not None]
    out = []
    for n, (k, indent) in enumerate(opens):
        end = next((j - 1 for j, d in opens[n + 1:] if d <= indent), len(lines) - 1)
        while end > k and not lines[end].strip():
            end -= 1
        if end - k + 1 >= _MIN_COMPONENT_LINES:
            out.append(f"{k + 1}--{end + 1} | {lines[k]}")
    return "\n".join(out) + ("\n" if out else "")


def folded_files(files: Sequence[tuple[str, str]], max_chars: int = FOLDED_CHARS) -> list[str]:
    """``generateFoldedFileContext`` over ``(path, content)`` pairs, most recently read first:
    one ``<system-reminder>`` per file with an outline, up to ``max_chars`` in all (the file
    that crosses it cut to fit when at least 200 characters are left)."""
    return _folded(files, max_chars, lambda _path, content: outline(content))


def _folded(files: Iterable[tuple[str, str]], max_chars: int, outline_of: Callable[[str, str], str]) -> list[str]:
    # `folded_files` with each outline drawn by `outline_of(path, content)`: a context
    # memoizes them, since every condense folds every file read so far
    sections: list[str] = []
    used = 0
    for path, content in files:
        definitions = outline_of(path, content)
        if not definitions:
            continue  # tree-sitter finds nothing to fold: the file is skipped
        section = f"<system-reminder>\n## File Context: {path}\n{definitions}\n</system-reminder>"
        if used + len(section) > max_chars:
            remaining = max_chars - used
            if remaining >= 200:
                cut = definitions[: remaining - 100] + "\n... (truncated)"
                sections.append(f"<system-reminder>\n## File Context: {path}\n{cut}\n</system-reminder>")
            break
        sections.append(section)
        used += len(section)
    return sections


def truncation_marker(hidden: int) -> str:
    """The text of the user message Roo puts where a sliding truncation hid ``hidden`` messages."""
    return f"[Sliding window truncation: {hidden} messages hidden to reduce context]"


@dataclass(frozen=True)
class Condensed:
    """Event: at ``prev_tokens`` the history was condensed into one summary message, after
    which Roo counts ``new_tokens`` (system prompt, summary and tools)."""

    prev_tokens: int
    new_tokens: int


@dataclass(frozen=True)
class SlidingWindowTruncated:
    """Event: at ``prev_tokens`` (above the allowed tokens) the sliding window hid ``hidden``
    visible messages, ``removed`` of which were still in the transcript."""

    prev_tokens: int
    hidden: int
    removed: int


@dataclass(frozen=True, kw_only=True)
class Condense:
    """Roo Code's context management: condense everything into one summary message at
    ``0.9 × window − max_tokens`` (or ``percent`` of the window), falling back to hiding half
    the messages."""

    window: int = CONTEXT_WINDOW
    """The model's ``contextWindow``, in tokens."""
    max_tokens: int = MAX_TOKENS
    """The model's ``maxTokens``, reserved for the reply (``ANTHROPIC_DEFAULT_MAX_TOKENS``)."""
    percent: int = 100
    """``autoCondenseContextPercent``: condense at this percentage of the window (5 to 100)."""
    condense: bool = True
    """``autoCondenseContext``: off, only the sliding window acts."""
    read_tools: frozenset[str] = field(default=READ_TOOLS)
    """Tools whose results are the files whose outlines a summary carries."""
    folded_chars: int = FOLDED_CHARS
    """The most characters of folded file context."""

    def __post_init__(self) -> None:
        check_int("window", self.window, 1)
        check_int("max_tokens", self.max_tokens, 0)
        check_int("percent", self.percent, 5)
        if self.percent > 100:
            raise StrategyError(f"percent must be at most 100, got {self.percent!r}")
        if not isinstance(self.condense, bool):
            raise StrategyError(f"condense must be a bool, got {self.condense!r}")
        names = self.read_tools
        if isinstance(names, str) or not isinstance(names, Iterable) or not all(isinstance(n, str) for n in names):
            raise StrategyError(f"read_tools must be an iterable of tool names (str), got {names!r}")
        object.__setattr__(self, "read_tools", frozenset(names))
        check_int("folded_chars", self.folded_chars, 0)
        if self.allowed < 1:
            raise StrategyError(f"max_tokens ({self.max_tokens:,}) leaves no allowed tokens below 90% of the window "
                                f"({self.window:,}); lower it")

    @property
    def allowed(self) -> float:
        """``allowedTokens``: ``window × 0.9 − max_tokens`` (to a millionth of a token)."""
        return round(self.window * (1 - TOKEN_BUFFER_PERCENTAGE), 6) - self.max_tokens

    @property
    def high_water(self) -> int:
        """The most tokens a request's count can reach before Roo acts on it."""
        return math.floor(self.allowed)

    def context(self, base_system: str, *, counter: Any, distill: Distill, tools: Sequence[Mapping[str, Any]] = (),
                on_event: Callable[[object], None] | None = None) -> "CondenseContext":
        """A fresh lifecycle context with this configuration: ``counter`` is the provider's
        count of the last message (and of the condensed context, with ``tools``)."""
        return CondenseContext(base_system, self, counter=counter, distill=distill, tools=tools, on_event=on_event)


class CondenseContext(TurnLifecycle, Summarizes):
    """Roo Code's context management in Harpe's lifecycle.

    The transcript is what the model sees; besides it the context keeps the messages since
    the last summary that a truncation hid (the summarizer sees them), the number of visible
    messages a condense hid (they count in the next truncation), and the newest content each
    file was read with. At every `compact` the count is checked as the module docstring says.
    Reports `Condensed` (with `ContextCompacted`) and `SlidingWindowTruncated`, and, through
    `MeteredDistill`, `DistillCall`.
    """

    def __init__(self, base_system: str, config: Condense, *, counter: Any, distill: Distill,
                 tools: Sequence[Mapping[str, Any]] = (), on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, Condense):
            raise StrategyError(f"config must be a Condense, got {config!r}")
        check_counter(counter)
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self.config = config
        self.counter = counter
        self.tools = tuple(tools)
        # the configuration's numbers, read at every request: taken once
        self._allowed = config.allowed
        self._window, self._percent, self._condenses = config.window, config.percent, config.condense
        self._read_tools = config.read_tools
        self._outlines: dict[str, tuple[str, str]] = {}  # path -> (content, its outline), for the condenses to come
        self._unsummarized: list[Message] = []  # every message since the last summary, hidden ones too
        self._shadow = 0  # visible messages that only a condense hid
        self._markers: set[int] = set()  # ids of the truncation markers in the transcript
        self._summary_message: UserInput | None = None
        self._summary = ""
        self._context_tokens = 0  # contextTokens: 0 until a count exists
        self._first: UserInput | None = None  # the task's first message: its <command> blocks
        self._reading: dict[str, str] = {}  # call id -> path, for read calls
        self._reads: dict[str, str] = {}  # path -> newest content, in the order last read
        # `_reads` is also the turn's mark: copied before its first change in the turn, not at
        # every turn's start (a long session reads many files, and most turns read none)
        self._reads_marked = False
        self._marked_state: tuple = ([], 0, 0, set(), None, "", 0, self._reads)
        self._changed = False  # something already sent was removed or replaced since the last request

    @property
    def limit(self) -> Limit:
        """``allowedTokens``, as a reactive high-water mark on Roo's count before each request."""
        return Limit(tokens=self.config.high_water, kind="high_water")

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_state = (self._unsummarized, len(self._unsummarized), self._shadow, set(self._markers),
                              self._summary_message, self._summary, self._context_tokens, self._reads)
        self._reads_marked = True

    def _added(self, message: Message) -> None:
        if isinstance(message, AssistantMessage):
            read_tools = self._read_tools
            for call in message.calls:
                if call.name in read_tools:
                    path = self._path(call.name, call.input)
                    if path is not None:
                        self._reading[call.id] = path
        elif isinstance(message, ToolResults):
            reading = self._reading
            if reading:  # results of no read call leave the reads as they are
                for r in message.results:
                    path = reading.pop(r.id, None)
                    if path is not None and r.success:
                        if self._reads_marked:
                            self._reads, self._reads_marked = dict(self._reads), False
                        self._reads.pop(path, None)  # re-inserted: the dict's order is the order last read
                        self._reads[path] = r.content
        elif isinstance(message, UserInput):
            if self._first is None:
                self._first = message
        self._unsummarized.append(message)

    def _path(self, tool: str, arguments: object) -> str | None:
        if tool not in self.config.read_tools or not isinstance(arguments, dict):
            return None
        return next((v for k in _PATH_KEYS if isinstance(v := arguments.get(k), str) and v), None)

    def observe(self, usage: Usage) -> None:
        self._context_tokens = usage.input_tokens + usage.output_tokens

    def compact(self) -> Compaction:
        t = self._transcript
        if self._context_tokens and t:  # Task.ts manages context only once a count exists
            prev = self._context_tokens + int(self.counter.count_message(t[-1]))
            condensed = False
            if self._condenses and (100 * prev / self._window >= self._percent or prev > self._allowed):
                condensed = self._condense(prev)
            if not condensed and prev > self._allowed:
                self._truncate(prev)
        changed, self._changed = self._changed, False
        return self._whole(changed, self._base_system)

    def _condense(self, prev: int) -> bool:
        since = self._unsummarized
        has_summary = self._summary_message is not None and since and since[0] is self._summary_message
        if len(since) <= 1 or (has_summary and len(since) <= 2):
            return False  # "not enough messages" / "condensed recently": an error, then the fallback
        text = self._distill(Rendered(CONDENSE_SYSTEM, (UserInput(distill_request(since, "")),)))
        if text is None:
            return False
        if not isinstance(text, str):
            raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
        if not text.strip():
            return False  # an empty summary is an error
        files = _folded(reversed(self._reads.items()), self.config.folded_chars, self._outline)
        message = UserInput(summary_text(text.strip(), command_blocks(self._first.text) if self._first else "", files))
        dropped = len(self._transcript)
        # every visible message gets a condense parent: still counted by the sliding window
        self._shadow += sum(id(m) not in self._markers for m in self._transcript)
        self._transcript = [message]
        self._unsummarized = [message]
        self._markers = set()
        self._summary_message, self._summary = message, text.strip()
        self._context_tokens = int(self.counter.count_rendered(Rendered(self.base_system, (message,)), self.tools))
        self._changed = True
        self._events.emit(Condensed(prev, self._context_tokens))
        self._events.emit(ContextCompacted(dropped))
        return True

    def _outline(self, path: str, content: str) -> str:
        # an outline is a function of the content alone; kept per path, so that a file read
        # again replaces its old one
        hit = self._outlines.get(path)
        if hit is not None and (hit[0] is content or hit[0] == content):
            return hit[1]
        text = outline(content)
        self._outlines[path] = (content, text)
        return text

    def _truncate(self, prev: int) -> None:
        t = self._transcript
        plain = [k for k, m in enumerate(t) if id(m) not in self._markers]  # the transcript's visible messages
        shadow = self._shadow
        visible = shadow + len(plain)
        hide = math.floor((visible - 1) * 0.5)
        hide -= hide % 2
        if hide <= 0:
            return
        # the visible messages are the condensed-away ones (`shadow` of them), then the
        # transcript's; the first is kept and the next `hide` are hidden: plain[j] is visible
        # message shadow + j
        first = 0 if shadow else 1
        gone = {plain[j] for j in range(first, min(hide - shadow, len(plain) - 1) + 1)}
        if shadow:
            self._shadow = shadow - min(hide, shadow - 1)
        after = hide + 1 - shadow  # the first visible message kept, in plain
        at = plain[after] if 0 <= after < len(plain) else None
        # the marker goes right before it; when that is among the condensed-away messages or
        # is the summary, it lies before the summary and is never sent
        shown = at is not None and t[at] is not self._summary_message
        marker = UserInput(truncation_marker(hide))
        out: list[Message] = []
        for k, m in enumerate(t):
            if shown and k == at:
                out.append(marker)
            if k not in gone:
                out.append(m)
        if shown:
            self._markers.add(id(marker))
            since = self._unsummarized
            where = next((k for k, m in enumerate(since) if m is t[at]), len(since))  # type: ignore[index]
            self._unsummarized = since[:where] + [marker] + since[where:]  # a new list: the turn's mark reads the old
        # a tool result whose call was hidden is dropped: no provider takes it alone
        cleaned: list[Message] = []
        for m in out:
            if isinstance(m, ToolResults):
                before = next((p for p in reversed(cleaned) if id(p) not in self._markers), None)
                if not (isinstance(before, AssistantMessage) and [c.id for c in before.calls] == [r.id for r in m.results]):
                    continue
            cleaned.append(m)
        removed = len(t) + shown - len(cleaned)
        if removed or shown:
            self._changed = True
            self._transcript = cleaned
        self._events.emit(SlidingWindowTruncated(prev, hide, removed))

    def _restored(self) -> None:
        (since, since_length, self._shadow, self._markers, self._summary_message, self._summary,
         self._context_tokens, self._reads) = self._marked_state
        # the turn's input, kept: it is among the messages since the last summary too
        self._unsummarized = since[:since_length] + self._transcript[self._marked[1]:]
        self._changed = True

    def __repr__(self) -> str:
        return f"CondenseContext(allowed={self.config.high_water:,}, {len(self._transcript)} messages)"


# --- presets ------------------------------------------------------------------------------


def _roo(*, counter: Any, system: str, tools: tuple, distill: Distill | None, high_water: int | None, window: int,
         percent: int, **_: Any) -> Factory:
    most = math.floor(round(window * (1 - TOKEN_BUFFER_PERCENTAGE), 6))
    if high_water is not None and high_water > most:
        raise StrategyError(f"high_water must be at most 90% of window ({most:,}), got {high_water:,}: Roo keeps 10% "
                            "of the window free; raise window")
    # Roo's allowed tokens are 90% of the window less the reply's reserve: a lower high water
    # is a larger reserve
    max_tokens = MAX_TOKENS if high_water is None else most - high_water
    if max_tokens >= most:
        raise StrategyError(f"window {window:,} leaves nothing allowed below its 90% once {MAX_TOKENS:,} tokens are "
                            "reserved for the reply; raise window")
    config = Condense(window=window, max_tokens=max_tokens, percent=percent)
    make = make_distiller(distill, min(8_000, config.high_water))
    return lambda: config.context(system, counter=counter, distill=make(), tools=tools)


PRESETS: tuple[Preset, ...] = (
    Preset(name="roo", family="roo-code",
           source="Roo Code (`RooCodeInc/Roo-Code` @cb836567) `src/core/context-management/index.ts`, "
                  "`src/core/condense/index.ts`, `src/core/condense/foldedFileContext.ts`",
           description="Roo Code's condense: at 90% of the window less the reply's 8,192, everything becomes one "
                       "summary message with outlines of the files read; when that fails, half the messages are "
                       "hidden",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="allowedTokens: Roo's count (last reported input and output, plus the message being sent) "
                            "above which it condenses; default: 90% of window - 8,192"),
                  Knob(name="window", unit="tokens", default=200_000, minimum=2,
                       help="the model's context window; a property of the model, not of the conversation"),
                  Knob(name="percent", unit="% of the window", default=100, minimum=5, maximum=100,
                       help="autoCondenseContextPercent: also condense at this share of the window")),
           needs=frozenset({"counter", "distill"}), limit_kind="high_water", _make=_roo,
           note="reactive on the previous call's usage; a fresh start: after a condense the model sees the summary "
                "message alone; file outlines are drawn from what the read tools returned, not by tree-sitter"),
)
