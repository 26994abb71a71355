"""Gemini CLI's tool-output masking (``context/toolOutputMaskingService.ts``): a protected
window of the newest tool output, and batches of older outputs replaced by previews in
``<tool_output_masked>`` tags."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Iterable

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, ToolResult, ToolResults, deferred
from ...protocol import Compaction, EventHub
from .._lifecycle import TurnLifecycle
from .._validate import check_int
from ._measures import _quoted, _response_tokens, _utf16
from ._shared import OUTPUT_DIR, _check_context, _drain_edits, _history_end, _safe

PROTECT_TOKENS = 50_000
"""``DEFAULT_TOOL_PROTECTION_THRESHOLD``: the newest tool-output tokens never masked."""
MIN_PRUNABLE_TOKENS = 30_000
"""``DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD``: masking waits until this much can be masked."""
EXEMPT_TOOLS = frozenset({"activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"})
"""Tools whose outputs are never masked (``EXEMPT_TOOLS``)."""
SHELL_TOOL = "run_shell_command"
"""``SHELL_TOOL_NAME``: its outputs get a sectioned preview."""
_MASK_TAG = "tool_output_masked"
_SHELL_SECTIONS = re.compile(r"^(Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.MULTILINE)


# --- masking -----------------------------------------------------------------------------------


def _simple_preview(content: str) -> str:
    lines = content.split("\n")
    if len(lines) <= 20:
        return content
    head, tail = lines[:10], lines[-10:]
    return "\n".join(head) + f"\n\n... [{len(lines) - 20} lines omitted] ...\n\n" + "\n".join(tail)


def _shell_preview(output: str) -> str:
    parts = _SHELL_SECTIONS.split(output)
    if len(parts) < 3:
        return _simple_preview(output)
    out = [_simple_preview(parts[0].strip())] if parts[0].strip() else []
    for i in range(1, len(parts), 2):
        name, section = parts[i], (parts[i + 1] if i + 1 < len(parts) else "").strip()
        # other sections (Error, Exit Code, ...) are short and tell what happened: kept whole
        out.append(f"Output: {_simple_preview(section)}" if name == "Output" else f"{name}: {section}")
    return "\n".join(out)


def masked_output(content: str, tool: str, path: str) -> str:
    """The stand-in Gemini's masking writes for an output: a preview and the saved file's path
    in ``<tool_output_masked>`` tags. The shell tool's preview is its output's sections, the
    Output one cut to 10 head and 10 tail lines; any other tool's is the pretty-printed
    response (``{"output": …}``) cut to 250 head and 250 tail characters."""
    if tool == SHELL_TOOL:
        preview = _shell_preview(content)
    elif len(content) > 500:
        # over 500 units whatever its escapes: only its ends are shown, and JSON escapes each
        # character alone, so the ends are escaped alone (a long output is not copied whole)
        head = ('{\n  "output": ' + _quoted(content[:250]))[:250]
        tail = (_quoted(content[-250:]) + "\n}")[-250:]
        preview = f"{head}\n... [TRUNCATED] ...\n{tail}"
    else:
        saved = '{\n  "output": ' + _quoted(content) + "\n}"  # JSON.stringify(response, null, 2)
        preview = f"{saved[:250]}\n... [TRUNCATED] ...\n{saved[-250:]}" if _utf16(saved) > 500 else saved
    return f"<{_MASK_TAG}>\n{preview}\n\nOutput too large. Full output available at: {path}\n</{_MASK_TAG}>"


_MASK_OPEN = f"<{_MASK_TAG}"


def _is_masked(content: str) -> bool:
    return _MASK_OPEN in content


@dataclass(frozen=True)
class OutputsMasked:
    """Event: ``masked`` tool outputs were masked, saving ``tokens_saved`` of the
    ``prunable_tokens`` that made the batch (Gemini's estimates)."""

    masked: int
    tokens_saved: int
    prunable_tokens: int


@dataclass(frozen=True, kw_only=True)
class ToolOutputMasking:
    """Gemini CLI's tool-output masking: keep the newest ``protect`` tokens of tool output, and
    once at least ``min_prunable`` tokens lie beyond them, mask all of those at once."""

    protect: int = PROTECT_TOKENS
    """``protectionThresholdTokens``: the newest tool-output tokens never masked."""
    min_prunable: int = MIN_PRUNABLE_TOKENS
    """``minPrunableThresholdTokens``: the batch a masking waits for."""
    protect_latest_turn: bool = True
    """``protectLatestTurn``: the history's last message is never looked at."""
    exempt_tools: frozenset[str] = field(default=EXEMPT_TOOLS)
    """Tools whose outputs are never masked."""
    output_dir: str = OUTPUT_DIR
    """The directory a masked output's stand-in names."""

    def __post_init__(self) -> None:
        check_int("protect", self.protect, 0)
        check_int("min_prunable", self.min_prunable, 0)
        if not isinstance(self.protect_latest_turn, bool):
            raise StrategyError(f"protect_latest_turn must be a bool, got {self.protect_latest_turn!r}")
        names = self.exempt_tools
        if isinstance(names, str) or not isinstance(names, Iterable):
            raise StrategyError(f"exempt_tools must be an iterable of tool names, got {names!r}")
        object.__setattr__(self, "exempt_tools", frozenset(names))
        bad = [n for n in self.exempt_tools if not isinstance(n, str)]
        if bad:
            raise StrategyError(f"exempt_tools must hold tool names (str), got {bad[0]!r}")
        if not isinstance(self.output_dir, str):
            raise StrategyError(f"output_dir must be a str, got {self.output_dir!r}")

    def context(self, base_system: str, *, on_event: Callable[[object], None] | None = None
                ) -> "ToolOutputMaskingContext":
        """A fresh lifecycle context with this configuration."""
        return ToolOutputMaskingContext(base_system, self, on_event=on_event)


class ToolOutputMaskingContext(TurnLifecycle):
    """Gemini CLI's tool-output masking in Harpe's lifecycle.

    The transcript holds what Gemini's history holds: masked outputs stay masked. At each
    `compact` the outputs that entered the scanned history since are added to the running
    window (newest-first sums are kept as a suffix of the unmasked outputs, so a request costs
    what it added), and a batch is masked when the prunable ones reach ``min_prunable``: the
    request then carries the stand-ins in place (`Compaction.edits`). Reports `OutputsMasked`.
    """

    def __init__(self, base_system: str, config: ToolOutputMasking, *,
                 on_event: Callable[[object], None] | None = None) -> None:
        _check_context(base_system, config, ToolOutputMasking)
        super().__init__(base_system)
        self._events = EventHub(on_event)
        self.config = config
        self._names: dict[str, str] = {}
        self._edits: set[int] | None = set()
        self._reset()

    def _reset(self) -> None:
        # unmasked, non-exempt outputs of the scanned history, oldest first:
        # [message index, result index, tokens]; _entries[_boundary:] are protected
        self._entries: list[list[int]] = []
        self._boundary = 0
        self._protected = 0  # their tokens
        self._prunable = 0  # tokens of _entries[:_boundary], and of the outputs too small to mask
        self._stuck = 0  # of them, the outputs too small to mask
        self._scanned = 0  # transcript[:_scanned] has been looked at

    @property
    def prunable_tokens(self) -> int:
        """The tokens a masking would take now, as Gemini estimates them."""
        return self._prunable

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _added(self, message: Message) -> None:
        if isinstance(message, AssistantMessage):
            names = self._names
            for c in message.calls:
                names[c.id] = c.name

    def _restored(self) -> None:
        self._edits = None
        self._reset()  # rebuilt from the restored transcript at the next scan (masked outputs skip themselves)

    def _scan(self) -> None:
        """Add the outputs that joined the scanned history: all of it but the request's own
        message and, with ``protect_latest_turn``, the history's last message."""
        c = self.config
        t = self._transcript
        limit = _history_end(t) - (1 if c.protect_latest_turn else 0)
        if limit > self._scanned:
            names, exempt, entries, protected = self._names, c.exempt_tools, self._entries, self._protected
            for i in range(self._scanned, limit):
                m = t[i]
                if not isinstance(m, ToolResults):
                    continue
                for j, r in enumerate(m.results):
                    name = names.get(r.id, "")
                    if name in exempt or _is_masked(r.content):
                        continue
                    tokens = math.floor(_response_tokens(name, r.content))
                    entries.append([i, j, tokens])
                    protected += tokens
            self._protected = protected
            self._scanned = limit
        # the window is the longest run of newest outputs within `protect`; the output that
        # crosses it, and every older one, is prunable
        while self._protected > c.protect:
            tokens = self._entries[self._boundary][2]
            self._protected -= tokens
            self._prunable += tokens
            self._boundary += 1

    def _mask(self) -> bool:
        c = self.config
        prunable = self._prunable
        by_message: dict[int, dict[int, ToolResult]] = {}
        saved = 0
        for i, j, tokens in self._entries[: self._boundary]:
            r = self._transcript[i].results[j]  # type: ignore[union-attr]
            name = self._names.get(r.id, "") or "unknown_tool"
            path = f"{c.output_dir}/{_safe(name)}_{_safe(r.id)}.txt"
            text = masked_output(r.content, name, path)
            savings = tokens - math.floor(_response_tokens(name, text))
            if savings > 0:
                by_message.setdefault(i, {})[j] = ToolResult(r.id, text, r.attachments, r.success)
                saved += savings
            else:
                # its stand-in would be no smaller: Gemini leaves it, and it stays prunable (it
                # counts in every later batch) though it will never be masked, so it leaves the
                # candidates and keeps only its tokens
                self._stuck += tokens
        self._entries = self._entries[self._boundary:]
        self._boundary = 0
        self._prunable = self._stuck
        if not by_message:
            return False
        t = list(self._transcript)  # earlier requests read the old list: the edit goes into a copy
        for i, cut in by_message.items():
            m = t[i]
            t[i] = ToolResults(tuple(cut.get(j, r) for j, r in enumerate(m.results)), m.pinned)  # type: ignore[union-attr]
        self._transcript = t
        if self._edits is not None:
            self._edits.update(by_message)
        self._events.emit(OutputsMasked(sum(map(len, by_message.values())), saved, prunable))
        return True

    def compact(self) -> Compaction:
        self._scan()
        if self._prunable >= self.config.min_prunable and self._boundary:
            self._mask()
        self._edits, edits = _drain_edits(self._edits)
        return self._send(deferred(self._base_system, self._transcript), edits is None or bool(edits), edits)

    def __repr__(self) -> str:
        return f"ToolOutputMaskingContext(protect={self.config.protect:,}, {len(self._transcript)} messages)"
