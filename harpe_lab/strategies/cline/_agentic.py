"""Agentic compaction's pieces (``agentic-compaction.ts``): where to cut, which files were read
and edited, and the summary request and message the model's reply becomes."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from ...messages import AssistantMessage, Message, UserInput
from ._measures import TOOL_RESULT_CHARS, _MEMO_MAX, _is_typed, _json, _parsed, estimate_message
from ._notice import _collect_paths, _is_mapping

__all__ = ["summary_request", "summary_message"]

# --- agentic compaction ----------------------------------------------------------------------


def _safe_cut(message: Message, mark: int) -> bool:
    """``isSafeCutBoundary``: an assistant message or a typed prompt."""
    return isinstance(message, AssistantMessage) or _is_typed(message, mark)


def _cut_index(messages: Sequence[Message], marks: Sequence[int], preserve: int,
               ests: Sequence[int] | None = None) -> int:
    """``findCutIndex``: where the verbatim tail starts. ``ests``: each message's
    `estimate_message`, when the caller keeps them."""
    total, candidate = 0, len(messages)
    for k in range(len(messages) - 1, -1, -1):
        total += estimate_message(messages[k]) if ests is None else ests[k]
        candidate = k
        if total >= preserve:
            break
    if candidate <= 0:
        return 0
    last_typed = next((k for k in range(len(messages) - 1, -1, -1) if _is_typed(messages[k], marks[k])), 0)
    cut = min(candidate, last_typed) if last_typed > 0 else candidate
    while cut > 0 and not _safe_cut(messages[cut], marks[cut]):
        cut -= 1
    return cut


def _locale_key(path: str) -> tuple:
    # ``localeCompare``'s order, near enough for paths: case folded first, then as written
    return path.casefold(), path


def _merge_unique(base: Iterable[str], more: Iterable[str]) -> list[str]:
    """``mergeUnique``: the union, trimmed, sorted as ``localeCompare`` sorts."""
    seen = dict.fromkeys(base)
    for v in more:
        v = v.strip()
        if v:
            seen[v] = None
    return sorted(seen, key=_locale_key)


def _file_ops(messages: Sequence[Message], summaries: Mapping[int, "_Summary"]) -> tuple[list[str], list[str]]:
    """``extractFileOps``: files read (attached files and ``read_files``) and modified
    (``editor``, ``apply_patch``); an earlier summary message (in ``summaries``, by identity)
    brings the lists it was written with. (``mergeUnique`` after each message is the sorted
    union of every message's paths, trimmed: each message's are found once, by identity.)"""
    return _sorted_ops(*_file_op_sets(messages, summaries))


def _sorted_ops(read: set[str], modified: set[str]) -> tuple[list[str], list[str]]:
    read.discard("")
    modified.discard("")
    return sorted(read, key=_locale_key), sorted(modified, key=_locale_key)


def _file_op_sets(messages: Iterable[Message], summaries: Mapping[int, "_Summary"]) -> tuple[set[str], set[str]]:
    """`_file_ops` as sets (a union: a list's parts can be found apart and joined)."""
    read: set[str] = set()
    modified: set[str] = set()
    for m in messages:
        earlier = summaries.get(id(m)) if summaries else None
        if earlier is not None and earlier.message is m:
            read.update(v.strip() for v in earlier.read)
            modified.update(v.strip() for v in earlier.modified)
            continue
        r, w = _message_file_ops(m)
        if r:
            read |= r
        if w:
            modified |= w
    return read, modified


_FILE_OPS: dict[int, tuple[Message, tuple[frozenset[str], frozenset[str]]]] = {}
_NOTHING: frozenset[str] = frozenset()


def _message_file_ops(message: Message) -> tuple[frozenset[str], frozenset[str]]:
    """One message's paths read and modified, trimmed, memoized by identity: each compaction
    reads the whole history before its cut again."""
    hit = _FILE_OPS.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    read: set[str] = set()
    modified: set[str] = set()
    if isinstance(message, UserInput):
        read.update(b[1].strip() for b in _parsed(message.text) if b[0] == "file")
    elif isinstance(message, AssistantMessage):
        for c in message.calls:
            if c.name == "read_files":
                read.update(p.strip() for p in _collect_paths(c.input))
            elif c.name in ("editor", "apply_patch"):
                modified.update(p.strip() for p in _collect_paths(c.input))
    out = (frozenset(read) if read else _NOTHING, frozenset(modified) if modified else _NOTHING)
    if len(_FILE_OPS) >= _MEMO_MAX:
        _FILE_OPS.clear()
    _FILE_OPS[id(message)] = (message, out)
    return out


@dataclass(frozen=True)
class _Summary:
    """An agentic summary message and its metadata (``summary``, ``details``)."""

    message: UserInput
    text: str
    read: tuple[str, ...]
    modified: tuple[str, ...]


def _cut_text(text: str, limit: int) -> str:
    """``compaction-shared.ts`` ``truncateText``."""
    return text if len(text) <= limit else f"{text[:limit]}\n...[truncated {len(text) - limit} chars]"


def _serialize(message: Message) -> str:
    """``serializeMessage``: one message as the summarizer reads it."""
    lines: list[str] = []
    if isinstance(message, UserInput):
        for b in _parsed(message.text):
            if b[0] == "text":
                lines.append(f"[User]: {b[1]}")
            else:
                lines.append(f"[User file {b[1]}]: {_cut_text(b[2], TOOL_RESULT_CHARS)}")
        lines.extend(f"[User image]: {a.mime}" for a in message.attachments)
    elif isinstance(message, AssistantMessage):
        if message.text:
            lines.append(f"[Bot]: {message.text}")
        for c in message.calls:
            data = c.input if _is_mapping(c.input) else {}
            args = ", ".join(f"{key}={_json(value)}" for key, value in data.items())
            lines.append(f"[Bot tool calls]: {c.name}({args})")
    else:
        for r in message.results:
            lines.append(f"[Tool result]: {_cut_text(r.content, TOOL_RESULT_CHARS)}")
    return "\n".join(lines)


def summary_request(conversation: str, read: Sequence[str], edited: Sequence[str], previous: str = "") -> str:
    """``buildSummaryRequest``: what the agentic summarizer is asked."""
    parts = [
        "Summarize this session for continuation. Be concise and factual.\n\n"
        "## Goal\nOne sentence: what is being built or fixed.\n\n"
        "## State\n- Done: completed steps\n- In Progress: current work\n- Blocked: blockers or open questions\n\n"
        "## Highlights\nKey technical choices or notable findings (omit if none).\n\n"
        "## Next\nImmediate next steps.\n\n"
        f"## Files\nRead: {', '.join(read) or 'none'}\nEdited: {', '.join(edited) or 'none'}"
    ]
    if previous.strip():
        parts.append(f"Previous summary:\n{previous.strip()}")
    parts.append(f"Conversation:\n{conversation or '(empty)'}")
    return "\n\n".join(parts)


_FILES_SECTION = re.compile(r"^## Files$", re.I | re.M)


def _ensure_files_section(summary: str, read: Sequence[str], modified: Sequence[str]) -> str:
    """``ensureFilesSection``: a summary without ``## Files`` gets Cline's own."""
    if _FILES_SECTION.search(summary):
        return summary.strip()
    r = "\n".join(f"- {p}" for p in read) or "- none"
    m = "\n".join(f"- {p}" for p in modified) or "- none"
    return f"{summary.strip()}\n\n## Files\nRead:\n{r}\nModified:\n{m}".strip()


def summary_message(summary: str) -> str:
    """``buildSummaryMessage``: the text of the user message carrying ``summary``."""
    return f"Context summary:\n\n{summary}"
