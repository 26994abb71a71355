"""Cline's context management: the SDK's compaction (`BasicCompaction`, `AgenticCompaction`)
and the VS Code extension's legacy context manager (`LegacyContextManager`).

Sources read, cline/cline at commit 21cb8d2525bcedf1f4b6890b27a74a14fe7451e4 (2026-08-22):

* ``sdk/packages/core/src/extensions/context/compaction.ts`` (``createContextCompactionPrepareTurn``)
  — when and how much. Before *every* model request (a turn's first and every one after a
  tool round) Cline estimates the whole request, ``ceil(len(JSON.stringify({systemPrompt,
  messages, tools})) / 3)`` (``@cline/shared`` ``estimateRequestInputTokens``,
  ``CHARS_PER_TOKEN = 3``), and compacts when that is ``>=`` the trigger, ``0.9 × maxInput``
  (``COMPACTION_TRIGGER_RATIO``). ``maxInput`` is the model's max input tokens (capped by its
  context window), or 90% of the window when only that is known, 128,000 when neither is
  (``compaction-shared.ts`` ``resolveEffectiveMaxInputTokens``). The target is
  ``floor(0.7 × trigger)`` (``DEFAULT_TARGET_RATIO``), or ``floor(0.5 × maxInput)`` once the
  messages hold 5 user→assistant alternations and the model reports a max output below
  ``maxInput`` (``resolveAutoRequestTargetTokens``), never above ``trigger - 1``. Both are
  translated to the messages' share by taking off the request's overhead (system prompt and
  tools: the whole request's estimate less the messages' own). A message weighs
  ``max(1, ceil(len(JSON.stringify(message)) / 3))`` (``createTokenEstimator``).
  ``/compact`` (``mode: "manual"``, what ``scripts/compact-session.ts`` runs) compacts
  regardless, to ``floor(min(message trigger, 0.5 × the messages' tokens))``.
* ``basic-compaction.ts`` (``runBasicCompaction``) — no model. Every typed user prompt is kept
  (text blocks trimmed, empty ones dropped), only the latest with its attached files and
  images; the latest turn keeps its newest messages within the target, the kept suffix
  starting at an assistant message; each older turn keeps its final assistant answer (the
  last assistant message of the turn without a tool call, if it has text) when it fits,
  newest turns first; everything else is dropped. The work dropped after a prompt becomes a
  ``<SYSTEM_NOTICE>`` text appended to it (``mergeAdjacentUserTurns``): the files read (with
  line ranges from ``read_files`` inputs), the files edited (line ranges from the numbered
  diff in the ``editor`` result), the commands run (cut at 100 characters), and, verbatim,
  whichever of the conversation's newest 3 assistant texts were dropped there
  (``PRESERVED_ASSISTANT_TEXT_COUNT``). Prompts left adjacent are merged into one, each gap
  bridged by its notice. What survives besides the prompts is frozen (``compaction:
  "preserved"``): a later compaction keeps it as it is. A budget projection
  (``budget-projection/project.ts``) is the safety valve when prompts and frozen messages
  alone exceed the trigger.
* ``agentic-compaction.ts`` (``runAgenticCompaction``) — the newest ``preserveRecentTokens``
  (20,000, capped by the message target) are kept, the cut moved back to the latest typed
  prompt and to a safe boundary (an assistant message or a typed prompt: never between a
  tool call and its result; ``findCutIndex``); the rest after the previous summary is sent to
  the model with ``buildSummaryRequest`` (the previous summary, the files read and edited,
  the conversation serialized with tool results cut to 2,000 characters) and the system
  prompt "Summarize the provided coding session into a concise continuation note with
  detailed next steps."; the reply (with a ``## Files`` section added when it has none)
  becomes one user message, ``"Context summary:\\n\\n" + summary``. An empty reply leaves the
  history as it was; a failing summarizer falls back to ``basic``.
* the legacy extension (``cline/cline@4619bb78^``,
  ``apps/vscode/src/core/context/context-management/ContextManager.ts`` and
  ``context-window-utils.ts``; ``core/prompts/responses.ts`` for the notices) — see
  `LegacyContextManager`.

Checked against Cline's own output: ``../shared/data/real/cline/`` holds a real session and
what ``compact-session.ts`` made of it; `BasicCompaction.compact_manually` produces every
message of ``basic.compaction.json``, text for text, and `AgenticCompaction` the messages
``agentic.compaction.json`` keeps (``tests/test_cline_aider.py``).

Mapped onto harpe_lab's messages: a `UserInput` is a typed prompt (its text split back into
the SDK's text blocks and ``file`` blocks, which Cline sends, and our importer renders, as
``<file_content path="…">\\n…\\n</file_content>`` joined by blank lines; its attachments are
image blocks); a `ToolResults` is a tool-result-only user message; the summary message this
module writes is the one user message that is neither. Estimates serialize each message as
the SDK stores it (``{"role", "content": [blocks]}``) in JavaScript string length; the ids,
timestamps, model info and metrics Cline also stores in each message are not known here, so
our estimates run a little lower than Cline's (about 150 characters a message).

Not modelled: Cline's compaction state projection across sessions; images' bytes (an image
counts nothing); thinking blocks (not message text here); the overflow-recovery mode (it
runs ``basic`` after the provider refused a request, which a replay never sees).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from itertools import compress
from operator import is_
from typing import Any, Callable, Iterable, Mapping, NamedTuple, Sequence

from ..errors import StrategyError
from ..messages import (AssistantMessage, Attachment, Message, Rendered, ToolResult, ToolResults, Usage, UserInput,
                        deferred)
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from ._lifecycle import TurnLifecycle
from ._validate import check_int

__all__ = [
    "DEFAULT_MAX_INPUT",
    "TRIGGER_RATIO",
    "TARGET_RATIO",
    "LONG_CONVERSATION_TARGET_RATIO",
    "PRESERVE_RECENT_TOKENS",
    "PRESERVED_ASSISTANT_TEXTS",
    "SUMMARY_SYSTEM",
    "LEGACY_TRUNCATION_NOTICE",
    "DUPLICATE_FILE_READ_NOTICE",
    "estimate_message",
    "tool_activity",
    "ToolActivity",
    "dropped_work_notice",
    "summary_request",
    "summary_message",
    "max_allowed_size",
    "ClineCompacted",
    "BasicCompaction",
    "AgenticCompaction",
    "ClineContext",
    "LegacyContextManager",
    "LegacyContext",
    "LegacyTruncated",
]

DEFAULT_MAX_INPUT = 128_000
"""``DEFAULT_MAX_INPUT_TOKENS``: the usable input when the model reports neither limit."""
TRIGGER_RATIO = 0.9
"""``COMPACTION_TRIGGER_RATIO``: compact once the request estimate reaches this share of max input."""
TARGET_RATIO = 0.7
"""``DEFAULT_TARGET_RATIO``: what a compaction aims at, as a share of the trigger."""
LONG_CONVERSATION_TARGET_RATIO = 0.5
"""The target's share of max input once a conversation is long (5 exchanges, a model max output below max input)."""
MANUAL_TARGET_RATIO = 0.5
"""``/compact``'s default: half of the messages' tokens."""
PRESERVE_RECENT_TOKENS = 20_000
"""``DEFAULT_PRESERVE_RECENT_TOKENS``: what the agentic mode keeps verbatim."""
PRESERVED_ASSISTANT_TEXTS = 3
"""``PRESERVED_ASSISTANT_TEXT_COUNT``: the newest assistant texts a dropped-work notice quotes."""
CHARS_PER_TOKEN = 3
"""``@cline/shared`` ``CHARS_PER_TOKEN``: Cline's estimate over-counts on purpose."""
COMMAND_CHARS = 100
"""``COMMAND_SUMMARY_CHAR_LIMIT``: commands are cut here in a notice."""
TOOL_RESULT_CHARS = 2_000
"""``TOOL_RESULT_CHAR_LIMIT`` (and ``FILE_CONTENT_CHAR_LIMIT``): the summarizer sees this much of each."""
MIN_SUMMARY_INPUT_TOKENS = 1_024
"""``MIN_AGENTIC_SUMMARY_INPUT_TOKENS``."""

SUMMARY_SYSTEM = "Summarize the provided coding session into a concise continuation note with detailed next steps."
"""The agentic summarizer's system prompt (``generateSummary``)."""

LEGACY_TRUNCATION_NOTICE = (
    "[NOTE] Some previous conversation history with the user has been removed to maintain optimal context window "
    "length. The initial user task has been retained for continuity, while intermediate conversation history has "
    "been removed. Keep this in mind as you continue assisting the user. Pay special attention to the user's "
    "latest messages."
)
"""``formatResponse.contextTruncationNotice()``: what the first assistant message's text becomes."""
DUPLICATE_FILE_READ_NOTICE = (
    "[[NOTE] This file read has been removed to save space in the context window. Refer to the latest file read "
    "for the most up to date version of this file.]"
)
"""``formatResponse.duplicateFileReadNotice()``."""

_PRESERVED = 1  # survived a basic compaction: frozen
_SUMMARY = 2  # the agentic summary message (not a typed prompt)


# --- the SDK's message shape and Cline's estimate -------------------------------------------


def _js_len(text: str) -> int:
    """JavaScript's ``length``: UTF-16 code units."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _json(value: Any) -> str:
    # JSON.stringify: compact, non-ASCII left as it is
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_FILE_OPEN = re.compile(r'<file_content path="([^"]*)">\n')
_FILE_CLOSE = "\n</file_content>"


def _blocks(text: str) -> list[tuple[str, ...]]:
    """A typed prompt's text as the SDK's content blocks: ``("text", t)`` and ``("file", path,
    content)``. A file block is ``formatFileContentBlock``'s rendering standing alone between
    blank lines (as the SDK sends it and our importer joins blocks); the text between is one
    text block (several text blocks joined by blank lines cannot be told apart)."""
    return list(_parsed(text))


_PARSED: dict[str, tuple[tuple[str, ...], ...]] = {}  # text -> its blocks
_MEMO_MAX = 1 << 17


def _parsed(text: str) -> tuple[tuple[str, ...], ...]:
    """`_blocks`, memoized by the text: every compaction reads every kept prompt again."""
    hit = _PARSED.get(text)
    if hit is None:
        hit = tuple(_parse_blocks(text))
        if len(_PARSED) >= _MEMO_MAX:
            _PARSED.clear()
        _PARSED[text] = hit
    return hit


def _parse_blocks(text: str) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    pos = 0  # where the next text starts
    scan = 0
    while True:
        m = _FILE_OPEN.search(text, scan)
        if m is None:
            break
        start = m.start()
        if start != 0 and text[start - 2:start] != "\n\n":
            scan = m.end()
            continue
        # the block ends at the first closing tag followed by a blank line or the end
        end = -1
        look = m.end() - 1  # the content may be empty: "\n" then the closing tag
        while True:
            close = text.find(_FILE_CLOSE, look)
            if close < 0:
                break
            after = close + len(_FILE_CLOSE)
            if after == len(text) or text.startswith("\n\n", after):
                end = after
                break
            look = close + 1
        if end < 0:
            scan = m.end()
            continue
        before = text[pos:start - 2] if start else ""
        if before:
            out.append(("text", before))
        content_start = m.end()
        content = text[content_start:end - len(_FILE_CLOSE)] if end - len(_FILE_CLOSE) >= content_start else ""
        out.append(("file", m.group(1), content))
        pos = end + 2
        scan = end
    rest = text[pos:]
    if rest:
        out.append(("text", rest))
    return out


def _join(blocks: Iterable[tuple[str, ...]]) -> str:
    """The blocks back as one text, as our importer joins them."""
    parts = []
    for b in blocks:
        if b[0] == "text":
            if b[1]:
                parts.append(b[1])
        else:
            parts.append(f'<file_content path="{b[1]}">\n{b[2]}\n</file_content>')
    return "\n\n".join(parts)


def _user_json(blocks: Sequence[tuple[str, ...]], attachments: Sequence[Attachment]) -> list[dict]:
    content: list[dict] = []
    for b in blocks:
        if b[0] == "text":
            content.append({"type": "text", "text": b[1]})
        else:
            content.append({"type": "file", "path": b[1], "content": b[2]})
    content.extend({"type": "image", "mediaType": a.mime} for a in attachments)
    return content


def _message_json(message: Message) -> dict:
    """``message`` in the SDK's stored shape (``MessageWithMetadata`` without its metadata)."""
    if isinstance(message, UserInput):
        return {"role": "user", "content": _user_json(_parsed(message.text), message.attachments)}
    if isinstance(message, AssistantMessage):
        content: list[dict] = [{"type": "text", "text": message.text}] if message.text else []
        content.extend({"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in message.calls)
        return {"role": "assistant", "content": content}
    if isinstance(message, ToolResults):
        blocks = []
        for r in message.results:
            block: dict = {"type": "tool_result", "tool_use_id": r.id, "content": r.content}
            if not r.success:
                block["is_error"] = True
            blocks.append(block)
        return {"role": "user", "content": blocks}
    raise TypeError(f"not a harpe_lab message: {message!r}")


_SIZES: dict[int, tuple[Message, int]] = {}  # id(message) -> (message, its JSON's length)
_SIZES_MAX = 1 << 17
_USER_SIZES: dict[tuple[str, tuple[str, ...]], int] = {}  # (text, attachments' types) -> a prompt's JSON length


def _message_chars(message: Message) -> int:
    """The length of ``message``'s stored JSON, memoized: a compaction weighs every message
    of the history again (the message is held, so its id stays its own). A prompt is also
    memoized by its content, which is all its JSON holds: basic compaction rebuilds the
    kept prompts (a new object, the same text) at every compaction."""
    hit = _SIZES.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    if type(message) is UserInput:
        n = _user_chars(message.text, tuple(a.mime for a in message.attachments))
    else:
        n = _js_len(_json(_message_json(message)))
    if len(_SIZES) >= _SIZES_MAX:
        _SIZES.clear()
    _SIZES[id(message)] = (message, n)
    return n


def _user_chars(text: str, mimes: tuple[str, ...]) -> int:
    """The JSON length of a prompt of ``text`` with attachments of these types."""
    key = (text, mimes)
    n = _USER_SIZES.get(key)
    if n is None:
        content = _user_json(_parsed(text), ())
        content.extend({"type": "image", "mediaType": mime} for mime in mimes)
        n = _js_len(_json({"role": "user", "content": content}))
        if len(_USER_SIZES) >= _SIZES_MAX:
            _USER_SIZES.clear()
        _USER_SIZES[key] = n
    return n


def _estimate_chars(chars: int) -> int:
    """``estimateTokens``: at least 1, 3 characters a token, rounded up."""
    return max(1, -(-chars // CHARS_PER_TOKEN))


def estimate_message(message: Message) -> int:
    """Cline's estimate of one message: its stored JSON at 3 characters a token, rounded up."""
    return _estimate_chars(_message_chars(message))


def _request_frame_chars(system: str, tools: Sequence[Mapping[str, Any]]) -> int:
    """Characters of ``JSON.stringify({systemPrompt, messages: [], tools})`` less the ``[]``."""
    return _js_len(_json({"systemPrompt": system, "messages": [], "tools": list(tools)})) - 2


def _is_typed(message: Message, mark: int) -> bool:
    """``isTurnStartMessage``: a user message that is neither tool results nor a summary."""
    return isinstance(message, UserInput) and not mark & _SUMMARY


def _pairs(messages: Sequence[Message]) -> int:
    """``countUserAssistantPairs``: user→assistant alternations (tool results are user messages)."""
    pairs, pending = 0, False
    for m in messages:
        if isinstance(m, AssistantMessage):
            if pending:
                pairs += 1
                pending = False
        else:
            pending = True
    return pairs


# --- what the dropped work was ---------------------------------------------------------------


@dataclass(frozen=True)
class ToolActivity:
    """``ToolActivitySummary``: files read and edited (with line ranges) and commands run, in
    the order first seen."""

    read_files: tuple[str, ...] = ()
    edited_files: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.read_files or self.edited_files or self.commands)


def _is_mapping(value: Any) -> bool:
    # a dict first: isinstance against typing's Mapping goes through the ABC machinery
    return type(value) is dict or isinstance(value, Mapping)


def _collect_paths(value: Any) -> list[str]:
    """``collectPaths``: the paths in a tool input."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [p for item in value for p in _collect_paths(item)]
    if _is_mapping(value):
        paths: list[str] = []
        for key in ("path", "file_path", "target_file", "new_file_path", "old_file_path"):
            paths.extend(_collect_paths(value.get(key)))
        if isinstance(value.get("files"), list):
            for item in value["files"]:
                if _is_mapping(item):
                    paths.extend(_collect_paths(item.get("path")))
        if isinstance(value.get("file_paths"), list):
            paths.extend(_collect_paths(value["file_paths"]))
        return paths
    return []


def _js_number(value: Any) -> str | None:
    """A JSON number as JavaScript writes it in a template (``462``, ``1.5``); None when not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _push(entries: list[str], value: str) -> None:
    value = value.strip()
    if value and value not in entries:
        entries.append(value)


_DIFF_LINE = re.compile(r"(?:^|\n|\\n)[-+](\d+): ")


def _diff_range(content: str) -> tuple[int, int] | None:
    """``extractDiffLineRange``: the lowest and highest line numbered in an editor result's
    diff (``-467: …`` / ``+467: …``), read from its JSON ``result`` when it has one."""
    text = content
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    if _is_mapping(parsed) and isinstance(parsed.get("result"), str):
        text = parsed["result"]
    lines = [int(m.group(1)) for m in _DIFF_LINE.finditer(text)]
    return (min(lines), max(lines)) if lines else None


def tool_activity(messages: Iterable[Message]) -> ToolActivity:
    """``summarizeToolActivity``: what Cline's tools did in ``messages``. ``read_files``
    inputs give the reads (``path:start-end`` when both lines are given), ``editor`` and
    ``apply_patch`` calls the edits (with the range of the numbered diff in their result,
    when the result is among ``messages``), ``run_commands`` the commands. Other tools'
    calls are not Cline's and add nothing."""
    reads: list[str] = []
    edits: list[str] = []
    commands: list[str] = []
    editing: dict[str, str] = {}
    for m in messages:
        if isinstance(m, AssistantMessage):
            for c in m.calls:
                data = c.input if _is_mapping(c.input) else {}
                if c.name == "read_files":
                    if isinstance(data.get("files"), list):
                        for f in data["files"]:
                            if _is_mapping(f):
                                path = f.get("path").strip() if isinstance(f.get("path"), str) else ""
                                if not path:
                                    continue
                                start, end = _js_number(f.get("start_line")), _js_number(f.get("end_line"))
                                _push(reads, f"{path}:{start}-{end}" if start is not None and end is not None
                                      else path)
                    else:
                        for p in _collect_paths(data):
                            _push(reads, p)
                elif c.name in ("editor", "apply_patch"):
                    paths = _collect_paths(data)
                    if paths:
                        editing[c.id] = paths[0]
                elif c.name == "run_commands":
                    for command in data.get("commands") if isinstance(data.get("commands"), list) else []:
                        if isinstance(command, str) and command.strip():
                            command = command.strip()
                            _push(commands, command if len(command) <= COMMAND_CHARS
                                  else command[:COMMAND_CHARS] + "...")
        elif isinstance(m, ToolResults):
            for r in m.results:
                path = editing.pop(r.id, None)
                if path is None:
                    continue
                lines = _diff_range(r.content)
                _push(edits, f"{path}:{lines[0]}-{lines[1]}" if lines else path)
    for path in editing.values():  # an edit whose result fell outside still counts
        _push(edits, path)
    return ToolActivity(tuple(reads), tuple(edits), tuple(commands))


def dropped_work_notice(activity: ToolActivity, responses: Sequence[str] = ()) -> str:
    """``buildDroppedWorkSummaryBlock``: the notice that stands for dropped work."""
    body = "\n\n".join([
        "Files read:\n" + "\n".join(activity.read_files),
        "Files edited:\n" + "\n".join(activity.edited_files),
        "Commands ran:\n" + "\n".join(activity.commands),
    ])
    said = f"\n\nYour recent responses:\n{chr(10).join(_sep(responses))}" if responses else ""
    return ("<SYSTEM_NOTICE>\nEarlier context was compacted. Summary of your actions after the request above:\n"
            f"{body}{said}</SYSTEM_NOTICE>")


def _sep(responses: Sequence[str]) -> list[str]:
    # responses.join("\n---\n"), split so that the f-string above stays readable
    out: list[str] = []
    for k, r in enumerate(responses):
        out.append(r if k == len(responses) - 1 else r + "\n---")
    return out


def _assistant_text(message: Message) -> str:
    """``assistantTextContent``: an assistant message's text, trimmed ("" when none)."""
    return message.text.strip() if isinstance(message, AssistantMessage) else ""


# --- the budget projection (the safety valve) ------------------------------------------------


def _truncate_text(text: str, limit: int) -> str:
    """``project.ts`` ``truncateText``."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    if limit <= 16:
        return text[: max(1, limit)]
    estimate = f"\n...[truncated {len(text) - limit} chars]"
    keep = max(1, limit - len(estimate))
    return f"{text[:keep]}\n...[truncated {len(text) - keep} chars]"


def _truncate_message(message: Message, limit: int) -> Message:
    """``truncateMessageText``: every text block (file contents and tool results too), in
    order, cut to what is left of ``limit`` characters."""
    left = limit

    def cut(text: str) -> str:
        nonlocal left
        if left <= 0:
            return ""
        out = _truncate_text(text, left)
        left -= len(out)
        return out

    if isinstance(message, UserInput):
        blocks = [("text", cut(b[1])) if b[0] == "text" else ("file", b[1], cut(b[2])) for b in _blocks(message.text)]
        return UserInput(_join(blocks), message.attachments, message.pinned)
    if isinstance(message, AssistantMessage):
        return AssistantMessage(cut(message.text), message.calls, message.pinned) if message.text else message
    assert isinstance(message, ToolResults)
    return ToolResults(tuple(ToolResult(r.id, cut(r.content), r.attachments, r.success) for r in message.results),
                       message.pinned)


def _tool_ids(message: Message) -> set[str]:
    if isinstance(message, AssistantMessage):
        return {c.id for c in message.calls}
    if isinstance(message, ToolResults):
        return {r.id for r in message.results}
    return set()


def _protected_tail(messages: Sequence[Message]) -> int:
    """``findProtectedTailStartIndex``: the last message with a call no result answers."""
    answered = {r.id for m in messages if isinstance(m, ToolResults) for r in m.results}
    for k in range(len(messages) - 1, -1, -1):
        m = messages[k]
        if isinstance(m, AssistantMessage) and any(c.id not in answered for c in m.calls):
            return k
    return len(messages)


def _latest_user(messages: Sequence[Message]) -> int:
    """``findLatestTypedUserMessageIndex`` (the projection's: any user message but tool results)."""
    for k in range(len(messages) - 1, -1, -1):
        if isinstance(messages[k], UserInput):
            return k
    return -1


def _first_user(messages: Sequence[Message]) -> int:
    for k, m in enumerate(messages):
        if isinstance(m, UserInput):
            return k
    return -1


def _has_text(message: Message) -> bool:
    """``hasTruncatableText``: a text, file or tool-result block."""
    if isinstance(message, UserInput):
        return bool(_blocks(message.text))
    if isinstance(message, AssistantMessage):
        return bool(message.text)
    return bool(message.results)


def _any_image(messages: Iterable[Message]) -> bool:
    """Whether any of ``messages`` carries an image (most carry no attachment at all)."""
    for m in messages:
        if isinstance(m, UserInput):
            if m.attachments and any(a.mime.startswith("image/") for a in m.attachments):
                return True
        elif isinstance(m, ToolResults):
            for r in m.results:
                if r.attachments and any(a.mime.startswith("image/") for a in r.attachments):
                    return True
    return False


def _project(messages: list[Message], origin: list[int], target: int,
             estimates: Sequence[int] | None = None) -> tuple[list[Message], list[int], bool]:
    """``buildBudgetProjection`` with the compaction policies (``basic_compaction_projection``
    and ``agentic_summary``): images outside the live tail dropped, then, while over
    ``target``, texts cut from the newest message back and whole messages (with their tool
    pairs) dropped from the oldest, never the first or latest user message or the live tail.
    Returns the messages, the original index of each, and whether the target was met.
    ``estimates``: `estimate_message` of each message, when the caller has them."""
    if target <= 0:
        return list(messages), list(origin), False
    messages, origin = list(messages), list(origin)
    ests = list(map(estimate_message, messages)) if estimates is None else list(estimates)
    if _any_image(messages):
        latest = _latest_user(messages)
        tail = _protected_tail(messages)
        kept_m: list[Message] = []
        kept_o: list[int] = []
        kept_e: list[int] = []
        for k, (m, o, e) in enumerate(zip(messages, origin, ests)):
            protected = k == latest or k >= tail
            if not protected and isinstance(m, UserInput) and any(a.mime.startswith("image/") for a in m.attachments):
                m = UserInput(m.text, tuple(a for a in m.attachments if not a.mime.startswith("image/")), m.pinned)
                if not _parsed(m.text) and not m.attachments:
                    continue  # nothing left: the message goes
                e = estimate_message(m)
            elif not protected and isinstance(m, ToolResults) and any(a.mime.startswith("image/")
                                                                      for r in m.results for a in r.attachments):
                m = ToolResults(tuple(ToolResult(r.id, r.content, tuple(a for a in r.attachments
                                                                         if not a.mime.startswith("image/")),
                                                 r.success)
                                      for r in m.results), m.pinned)
                e = estimate_message(m)
            kept_m.append(m)
            kept_o.append(o)
            kept_e.append(e)
        messages, origin, ests = kept_m, kept_o, kept_e
    total = sum(ests)
    if total <= target:
        return messages, origin, True
    # cutting texts keeps every message's kind and tool ids: the latest user message and the
    # live tail stay where they are, and the total moves by what each cut saved
    latest = _latest_user(messages)
    tail = _protected_tail(messages)
    k = len(messages) - 1
    while k >= 0 and total > target:
        if k != latest and k < tail and _has_text(messages[k]):
            m = messages[k]
            size = _message_chars(m)
            per_token = max(1.0, size / max(1, ests[k]))
            limit = max(16, math.floor(target * per_token / max(1, len(messages))))
            messages[k] = _truncate_message(m, limit)
            e = estimate_message(messages[k])
            total += e - ests[k]
            ests[k] = e
        k -= 1
    k = 0
    ids = [_tool_ids(m) for m in messages]
    first, latest, tail = _first_user(messages), _latest_user(messages), _protected_tail(messages)
    while k < len(messages) and total > target:
        if k in (first, latest):
            k += 1
            continue
        closure = {k}
        queue = [k]
        while queue:  # the messages a tool id links to this one, transitively
            j = queue.pop()
            linked = ids[j]
            if not linked:
                continue
            for other, theirs in enumerate(ids):
                if other not in closure and linked & theirs:
                    closure.add(other)
                    queue.append(other)
        if first in closure or latest in closure or max(closure) >= tail:
            k += 1
            continue
        keep = [j not in closure for j in range(len(messages))]
        messages = list(compress(messages, keep))
        origin = list(compress(origin, keep))
        ids = list(compress(ids, keep))
        total -= sum(ests[j] for j in closure)
        ests = list(compress(ests, keep))
        first, latest, tail = _first_user(messages), _latest_user(messages), _protected_tail(messages)
    return messages, origin, total <= target


# --- basic compaction ------------------------------------------------------------------------


_SANITIZED: dict[str, tuple[str, bool]] = {}  # text -> (its sanitized text, whether any block is left)
_TEXT_ONLY: dict[str, str] = {}  # text -> its text blocks alone


def _sanitized(text: str) -> tuple[str, bool]:
    hit = _SANITIZED.get(text)
    if hit is None:
        blocks = [b for b in ((("text", b[1].strip()) if b[0] == "text" else b) for b in _parsed(text))
                  if b[0] != "text" or b[1]]
        hit = (_join(blocks), bool(blocks))
        if len(_SANITIZED) >= _MEMO_MAX:
            _SANITIZED.clear()
        _SANITIZED[text] = hit
    return hit


def _text_only(text: str) -> str:
    hit = _TEXT_ONLY.get(text)
    if hit is None:
        hit = _join([b for b in _parsed(text) if b[0] == "text"])
        if len(_TEXT_ONLY) >= _MEMO_MAX:
            _TEXT_ONLY.clear()
        _TEXT_ONLY[text] = hit
    return hit


def _sanitize_typed(message: UserInput) -> UserInput | None:
    """``sanitizeTypedUserMessage``: text blocks trimmed, empty ones dropped; None when
    nothing is left. (The text's part is memoized by the text: every compaction sanitizes
    every prompt again; a changed prompt is a new message each time, as it was.)"""
    text, left = _sanitized(message.text)
    if not left and not message.attachments:
        return None
    return message if text == message.text else UserInput(text, message.attachments, message.pinned)


def _without_attachments(message: UserInput) -> UserInput:
    """``userContentBlocks(message, false)``: file and image blocks dropped."""
    text = _text_only(message.text)
    if text == message.text and not message.attachments:
        return message
    return UserInput(text, (), message.pinned)


def _without_attachments_chars(message: UserInput) -> int:
    """`_message_chars` of ``_without_attachments(message)``, without building it: a text
    block's JSON holds only its text."""
    text = _text_only(message.text)
    if text == message.text and not message.attachments:
        return _message_chars(message)
    return _user_chars(text, ())


def _with_notice(message: UserInput, notice: str) -> UserInput:
    return UserInput(f"{message.text}\n\n{notice}" if message.text else notice, message.attachments, message.pinned)


def _merge(messages: list[Message], origin: list[int], original: Sequence[Message],
           original_marks: Sequence[int]) -> tuple[list[Message], list[int]]:
    """``mergeAdjacentUserTurns``: prompts left adjacent become one, each gap bridged by the
    notice of the work dropped there; the work dropped after a prompt is noticed on it.
    Returns the messages and the original index of the first message each stands for."""
    preserved: set[int] = set()  # the conversation's newest assistant texts
    for k in range(len(original) - 1, -1, -1):
        if len(preserved) >= PRESERVED_ASSISTANT_TEXTS:
            break
        if _assistant_text(original[k]):
            preserved.add(k)

    newest = sorted(preserved)

    def responses(start: int, end: int) -> list[str]:
        return [_assistant_text(original[k]) for k in newest if start <= k < end]

    n = len(messages)
    typed = [isinstance(m, UserInput) and not original_marks[o] & _SUMMARY for m, o in zip(messages, origin)]
    latest = next((k for k in range(n - 1, -1, -1) if typed[k]), -1)
    out: list[Message] = []
    out_origin: list[int] = []
    prompts: list[tuple[int, int]] = []  # each prompt's place in out, and the last original index it stands for
    k = 0
    while k < n:
        try:
            at = typed.index(True, k)
        except ValueError:
            at = n
        if at > k:  # what is not a typed prompt is carried as it is
            out += messages[k:at]
            out_origin += origin[k:at]
            k = at
            if k == n:
                break
        end = k
        while end + 1 < n and typed[end + 1]:
            end += 1
        message = messages[k]
        if end > k:
            text_parts: list[str] = []
            attachments: tuple = ()
            for member in range(k, end + 1):
                if member > k and origin[member] > origin[member - 1] + 1:
                    gap = original[origin[member - 1] + 1:origin[member]]
                    activity, said = tool_activity(gap), responses(origin[member - 1] + 1, origin[member])
                    if activity or said:
                        text_parts.append(dropped_work_notice(activity, said))
                m = messages[member]
                assert isinstance(m, UserInput)
                if member != latest:
                    m = _without_attachments(m)
                else:
                    attachments = m.attachments
                if m.text:
                    text_parts.append(m.text)
            first = messages[k]
            message = UserInput("\n\n".join(text_parts), attachments, first.pinned)
        elif k != latest:
            message = _without_attachments(message)  # type: ignore[arg-type]
        prompts.append((len(out), origin[end]))
        out.append(message)
        out_origin.append(origin[k])
        k = end + 1
    for e, last in prompts:
        gap_end = out_origin[e + 1] if e + 1 < len(out_origin) else len(original)
        if gap_end <= last + 1:
            continue
        gap = original[last + 1:gap_end]
        activity, said = tool_activity(gap), responses(last + 1, gap_end)
        if not activity and not said:
            continue
        out[e] = _with_notice(out[e], dropped_work_notice(activity, said))  # type: ignore[arg-type]
    return out, out_origin


def _basic(original: Sequence[Message], marks: Sequence[int], *, target: int, trigger: int,
           ests: Sequence[int] | None = None) -> tuple[list[Message], list[int]] | None:
    """``runBasicCompaction`` over ``original`` (with their marks): the new messages and
    their marks, or None when Cline would leave the history as it is. ``ests``: each
    message's `estimate_message`, when the caller keeps them."""
    n = len(original)
    if n < 2:
        return None
    est = list(map(estimate_message, original)) if ests is None else ests
    total_target = max(1, min(target, trigger))
    typed_at = [k for k, (m, mark) in enumerate(zip(original, marks))
                if isinstance(m, UserInput) and not mark & _SUMMARY]  # _is_typed, inlined
    sanitized: dict[int, UserInput] = {}
    for k in typed_at:
        s = _sanitize_typed(original[k])  # type: ignore[arg-type]
        if s is not None:
            sanitized[k] = s
    if not sanitized:
        return None
    latest_typed = typed_at[-1]
    total = 0
    for k, s in sanitized.items():
        if s is original[k] and (k == latest_typed or _text_only(s.text) == s.text and not s.attachments):
            total += est[k]  # the message itself is weighed
        else:
            total += _estimate_chars(_message_chars(s) if k == latest_typed else _without_attachments_chars(s))
    is_frozen = [bool(mark & _PRESERVED) for mark in marks]
    for k in sanitized:
        is_frozen[k] = False
    total += sum(compress(est, is_frozen))
    # the latest turn: its newest messages within the target, starting at an assistant message
    start, accumulated = n, 0
    for k in range(n - 1, latest_typed, -1):
        if is_frozen[k]:
            break
        cost = est[k]
        if total + accumulated + cost > total_target:
            break
        accumulated += cost
        start = k
    while start < n and not isinstance(original[start], AssistantMessage):
        start += 1
    total += sum(est[start:])
    # older turns: each one's final answer when it fits, newest turns first
    finals: set[int] = set()
    for b in range(len(typed_at) - 2, -1, -1):
        for k in range(typed_at[b + 1] - 1, typed_at[b], -1):
            if is_frozen[k]:
                break
            m = original[k]
            if not isinstance(m, AssistantMessage) or m.calls:
                continue
            if m.text.strip():  # thinking is not message text here: nothing to strip
                cost = est[k]
                if total + cost <= total_target:
                    finals.add(k)
                    total += cost
            break
    origin = sorted({*sanitized, *compress(range(n), is_frozen), *finals, *range(start, n)})
    kept: list[Message] = [sanitized.get(k) or original[k] for k in origin]
    weights = [est[k] if m is original[k] else estimate_message(m) for k, m in zip(origin, kept)]
    # the safety valve: never trim what was kept on purpose to chase a lower target
    valve = min(max(total_target, total), max(1, trigger))
    kept, origin, _ = _project(kept, origin, valve, weights)
    merged, merged_origin = _merge(kept, origin, original, marks)
    if len(merged) == n and all(a == b for a, b in zip(merged, original)):
        return None
    # a typed prompt is processed again at every compaction; the rest is frozen
    new_marks = [0 if isinstance(m, UserInput) and not marks[o] & _SUMMARY else marks[o] | _PRESERVED
                 for m, o in zip(merged, merged_origin)]
    return merged, new_marks


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
        self._marked_state: tuple = ([], [], [], "", {})

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

    def _set(self, messages: list[Message], marks: list[int]) -> None:
        self._transcript, self._marks = messages, marks
        sizes = _SIZES.get
        # _message_chars, its memo's hit inlined: a compaction's messages are mostly weighed already
        self._chars = [hit[1] if (hit := sizes(id(m))) is not None and hit[0] is m else _message_chars(m)
                       for m in messages]
        self._total_chars = sum(self._chars)
        self._ests = [max(1, -(-c // CHARS_PER_TOKEN)) for c in self._chars]
        self._total_est = sum(self._ests)

    def _mark_turn(self) -> None:
        # the lists, not copies, as the transcript is marked: appends only extend them and a
        # compaction replaces them, so their first `_marked[1]` entries stay the turn start's
        self._marked_state = (self._marks, self._chars, self._ests, self._summary, self._summaries)

    def _added(self, message: Message) -> None:
        chars = _message_chars(message)
        self._marks.append(0)
        self._chars.append(chars)
        self._total_chars += chars
        est = _estimate_chars(chars)
        self._ests.append(est)
        self._total_est += est

    def _restored(self) -> None:
        marks, chars, ests, self._summary, self._summaries = self._marked_state
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
            result = _basic(self._transcript, self._marks, target=target, trigger=trigger, ests=self._ests)
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
        self._set(messages, marks)
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


# --- the legacy extension's context manager ------------------------------------------------------


def max_allowed_size(context_window: int) -> float:
    """``getContextWindowInfo``'s ``maxAllowedSize``: the usage at which the legacy extension
    truncates, by its window table (64k: W - 27k; 128k: W - 30k; 200k: W - 40k; any other:
    the larger of W - 40k and 80% of W)."""
    check_int("context_window", context_window, 1)
    table = {64_000: 27_000, 128_000: 30_000, 200_000: 40_000}
    if context_window in table:
        return float(context_window - table[context_window])
    return float(max(context_window - 40_000, context_window * 0.8))


@dataclass(frozen=True)
class LegacyTruncated:
    """Event: the previous request used ``tokens`` (>= ``max_allowed``). ``saved`` is the
    share of characters the duplicate-file-read notices saved (0 when there were none);
    below 30%, ``keep`` (``"half"`` or ``"quarter"``) of the rest was kept and everything
    from the third message through ``deleted_to`` (an index into the provider's alternating
    messages) is now left out."""

    tokens: int
    max_allowed: float
    saved: float
    truncated: bool
    keep: str
    deleted_to: int | None


@dataclass(frozen=True, kw_only=True)
class LegacyContextManager:
    """The Cline VS Code extension's programmatic context management (in use until 2026-06):
    once the previous request's usage reaches ``max_allowed`` (the window table's
    ``maxAllowedSize``), replace every earlier read of a file read again by a notice; when
    that saves under 30% of the characters, keep the first exchange and delete half (a
    quarter when the usage is over twice ``max_allowed``: three quarters) of the rest.

    Source: cline/cline@4619bb78^ ``apps/vscode/src/core/context/context-management/``
    ``ContextManager.ts`` (``getNewContextMessagesAndMetadata``, ``getNextTruncationRange``,
    ``getAndAlterTruncatedMessages``, the file-read optimization) and
    ``context-window-utils.ts``. The extension's messages alternate strictly (a user message
    holds the tool results and any text that follows them): here consecutive `UserInput`
    and `ToolResults` are one of its user messages, consecutive replies one assistant
    message, and its indices count those groups. Duplicate reads are recognized in Cline's own
    formats only — a tool result or text starting ``[read_file for '<path>'] Result:``,
    ``<final_file_content path="…">`` in a ``write_to_file`` / ``replace_in_file`` result,
    ``<file_content path="…">`` mentions in the first three blocks of a user message — so on
    other agents' sessions only truncation happens.
    """

    context_window: int = 128_000
    """The model's context window (``model.info.contextWindow``; 128,000 when unknown)."""
    max_allowed: int | None = None
    """The usage (input plus output tokens of the previous request) at which it acts;
    ``None``: the window table's ``maxAllowedSize``."""

    def __post_init__(self) -> None:
        check_int("context_window", self.context_window, 1)
        if self.max_allowed is not None:
            check_int("max_allowed", self.max_allowed, 1)

    @property
    def threshold(self) -> float:
        """The usage at which the extension acts."""
        return max_allowed_size(self.context_window) if self.max_allowed is None else float(self.max_allowed)

    def context(self, base_system: str, *, on_event: Callable[[object], None] | None = None) -> "LegacyContext":
        """A fresh lifecycle context with this configuration."""
        return LegacyContext(base_system, self, on_event=on_event)


_READ_HEADER = re.compile(r"^\[([^\s]+) for '([^']+)'\] Result:")
_FILE_MENTION = re.compile(r'<file_content path="([^"]*)">([\s\S]*?)</file_content>')
_FINAL_FILE = re.compile(r'(<final_file_content path="[^"]*">)[\s\S]*?(</final_file_content>)')
_MENTION, _READ, _ALTER = 4, 2, 3  # EditType.FILE_MENTION, READ_FILE_TOOL, ALTER_FILE_TOOL


def _mentions(text: str) -> tuple[tuple[str, str], ...]:
    """The ``<file_content>`` mentions in ``text``: (path, whole match) each."""
    return tuple((m.group(1), m.group(0)) for m in _FILE_MENTION.finditer(text))


class _Block(NamedTuple):
    """A text the extension can rewrite: a tool result's content or a user text. (A tuple of
    numbers: a truncation's memo keeps one per block, which the garbage collector then skips.)"""

    message: int  # index into the transcript
    result: int | None  # index into the results, None for a user text or a reply's text


class LegacyContext(TurnLifecycle):
    """`LegacyContextManager` in Harpe's lifecycle.

    The stored transcript only grows; what is sent is the first two provider messages, the
    messages after the deleted range, and the rewrites made so far (duplicate-read notices,
    the truncation notice in place of the first reply's text). After a truncation the
    results that answered deleted calls are dropped from the first message after the cut,
    and a reply whose calls lost their results gets ``"result missing"`` for each, as
    ``ensureToolResultsFollowToolUse`` does — also when that message held nothing else and
    is the last: Cline still sends it, emptied, and answers the first reply's calls in it.
    Reports `LegacyTruncated` whenever the usage reached the threshold.
    """

    def __init__(self, base_system: str, config: LegacyContextManager, *,
                 on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, LegacyContextManager):
            raise StrategyError(f"config must be a LegacyContextManager, got {config!r}")
        self._events = EventHub(on_event)
        self.config = config
        self._groups: list[list[int]] = []  # the provider's messages, as transcript indices
        self._block_memo: dict[int, tuple[int, tuple[_Block, ...]]] = {}  # group -> (its size then, `_blocks`)
        self._last_assistant = False  # the last group is replies
        self._read_memo: dict[int, tuple] = {}  # group -> (its size then, `_reads_in` with nothing replaced)
        self._deleted: int | None = None  # the deleted range is [2, _deleted]
        # group -> (edit type, {block -> [text, ...]}, mention metadata (replaced, all))
        self._updates: dict[int, tuple[int, dict[int, list[str]], tuple[list[str], list[str]] | None]] = {}
        self._noticed = False  # the truncation notice is set (on group 1, block 0)
        self._reported: int | None = None  # the previous request's usage, until acted on
        self._observed: int | None = None  # the usage reported for the last request made (None: none yet)
        self._rendering: list[Message] = []  # the last request's messages
        self._rendered_to = 0  # transcript messages the current rendering holds
        self._dirty = True  # the rendering must be rebuilt
        self._marked_state: tuple = (None, {}, False)

    @property
    def limit(self) -> Limit:
        """The threshold, as a reactive high-water mark (the request that crosses it goes out)."""
        return Limit(tokens=math.floor(self.config.threshold), kind="high_water")

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        # a rewrite replaces `_updates`, never changes it: the dict itself is the turn start's
        self._marked_state = (self._deleted, self._updates, self._noticed)

    def _added(self, message: Message) -> None:
        self._group(len(self._transcript), message)

    def _group(self, k: int, message: Message) -> None:
        """Puts transcript message ``k`` in its provider message."""
        assistant = isinstance(message, AssistantMessage)
        if self._groups and self._last_assistant == assistant:
            self._groups[-1].append(k)
        else:
            self._groups.append([k])
            self._last_assistant = assistant

    def _restored(self) -> None:
        self._deleted, self._updates, self._noticed = self._marked_state
        # the next check reads the previous request's usage: the aborted turn's last request,
        # which may have had no reply (then there is none, as a failed request records none)
        self._reported = self._observed
        self._groups = []
        self._block_memo = {}
        self._read_memo = {}
        for k, m in enumerate(self._transcript):
            self._group(k, m)
        self._dirty = True

    def observe(self, usage: Usage) -> None:
        # tokensIn + tokensOut + cacheWrites + cacheReads: Cline's tokensIn leaves the cache
        # out, ours is the whole input
        self._reported = self._observed = usage.input_tokens + usage.output_tokens

    # -- blocks --------------------------------------------------------------------------

    def _blocks(self, g: int) -> Sequence[_Block]:
        """The text blocks of provider message ``g`` a rewrite can address, in order (read
        them, never change them: they are kept until the group grows or a turn is aborted,
        as every truncation reads every provider message after the cut again)."""
        members = self._groups[g]
        hit = self._block_memo.get(g)
        if hit is not None and hit[0] == len(members):
            return hit[1]
        out: list[_Block] = []
        for k in members:
            m = self._transcript[k]
            if isinstance(m, ToolResults):
                out.extend(_Block(k, j) for j in range(len(m.results)))
            elif isinstance(m, UserInput):
                out.append(_Block(k, None))
        blocks = tuple(out)  # of tuples of numbers: the garbage collector stops tracking them
        self._block_memo[g] = (len(members), blocks)
        return blocks

    def _text(self, block: _Block) -> str:
        m = self._transcript[block.message]
        if isinstance(m, ToolResults):
            return m.results[block.result].content  # type: ignore[index]
        return m.text  # type: ignore[union-attr]

    def _start(self) -> int:
        return 2 if self._deleted is None else self._deleted + 1

    # -- the file-read optimization ------------------------------------------------------

    def _duplicates(self, start: int) -> tuple[dict[str, list[tuple]], dict[int, list[str]]]:
        """``getPossibleDuplicateFileReads``: every read of each file, from provider message
        ``start`` on, with what it would be replaced by."""
        reads: dict[str, list[tuple]] = {}
        mention_paths: dict[int, list[str]] = {}
        for g in range(start, len(self._groups)):
            if g in self._updates:
                kind, blocks, meta = self._updates[g]
                if kind != _MENTION:
                    continue
                replaced: list[str] = []
                if meta is not None:
                    if len(meta[0]) == len(meta[1]):
                        continue  # every file mentioned here is replaced already
                    replaced = meta[0]
                found, paths = self._reads_in(g, replaced)
            else:
                # a provider message no rewrite touched reads the same until it grows: every
                # truncation scans every message after the cut again
                size = len(self._groups[g])
                hit = self._read_memo.get(g)
                if hit is not None and hit[0] == size:
                    found, paths = hit[1], hit[2]
                else:
                    found, paths = self._reads_in(g, [])
                    # tuples of strings and numbers, which the garbage collector stops tracking
                    found, paths = tuple(found), None if paths is None else tuple(paths)
                    self._read_memo[g] = (size, found, paths)
            for path, read in found:
                reads.setdefault(path, []).append(read)
            if paths is not None:
                mention_paths[g] = list(paths)
        return reads, mention_paths

    def _reads_in(self, g: int, replaced: list[str]) -> tuple[list[tuple[str, tuple]], list[str] | None]:
        """The file reads provider message ``g`` holds, in order (path, what `_duplicates`
        lists for it), and the paths it mentions (None when it mentions none); ``replaced``:
        the mentions replaced already."""
        out: list[tuple[str, tuple]] = []
        mention_paths: list[str] | None = None
        # one provider message of getPossibleDuplicateFileReads' loop
        if isinstance(self._transcript[self._groups[g][0]], AssistantMessage):
            return out, None
        blocks_ = self._blocks(g)
        if not blocks_:
            return out, None
        first = self._text(blocks_[0])
        if not first:
            return out, None
        found = False
        header = _READ_HEADER.match(first)
        if header:
            tool, path = header.group(1), header.group(2)
            index = 0 if len(first) > len(header.group(0)) else 1
            if tool == "read_file":
                # the old format holds the content in the next block, the new one after the header
                text = DUPLICATE_FILE_READ_NOTICE if index == 1 \
                    else header.group(0) + "\n" + DUPLICATE_FILE_READ_NOTICE
                out.append((path, (g, _READ, "", text, index)))
                found = True
            elif tool in ("replace_in_file", "write_to_file"):
                is_result = blocks_[0].result is not None
                text = first if is_result or index == 0 else (
                    self._text(blocks_[1]) if index == 1 and len(blocks_) > 1 and blocks_[1].result is None
                    else None)
                if text:
                    if _FINAL_FILE.search(text):
                        new = _FINAL_FILE.sub(lambda m: f"{m.group(1)} {DUPLICATE_FILE_READ_NOTICE} {m.group(2)}",
                                              text, count=1)
                        out.append((path, (g, _ALTER, "", new, index)))
                    found = True
        if not found:
            for index in (0, 1, 2):
                if index >= len(blocks_):
                    break
                text = self._text(blocks_[index])
                matches = _mentions(text) if text else ()
                if not matches:
                    continue
                paths = []
                for path, whole in matches:
                    paths.append(path)
                    if path not in replaced:
                        new = f'<file_content path="{path}">{DUPLICATE_FILE_READ_NOTICE}</file_content>'
                        out.append((path, (g, _MENTION, whole, new, index)))
                mention_paths = paths
                break
        return out, mention_paths

    def _optimize(self, start: int) -> tuple[bool, set[int]]:
        """``applyFileReadContextHistoryUpdates``: every read of a file but its latest
        replaced. Returns whether anything changed and which provider messages."""
        reads, mention_paths = self._duplicates(start)
        updates = {g: (kind, {b: list(v) for b, v in blocks.items()}, meta)
                   for g, (kind, blocks, meta) in self._updates.items()}
        changed: set[int] = set()
        mentions: dict[int, list] = {}  # group -> [text, files replaced, block]
        for path, found in reads.items():
            if len(found) < 2:
                continue
            for g, kind, search, new, block in found[:-1]:
                changed.add(g)
                if kind == _MENTION:
                    if g not in mentions:
                        base, before = "", []
                        if g in updates and updates[g][1].get(block):
                            base = updates[g][1][block][-1]
                            before = list(updates[g][2][0]) if updates[g][2] else []
                        if not base:
                            blocks_ = self._blocks(g)
                            base = self._text(blocks_[block]) if block < len(blocks_) else ""
                        mentions[g] = [base, before, block]
                    if search and mentions[g][0]:
                        mentions[g][0] = mentions[g][0].replace(search, new, 1)
                        mentions[g][1].append(path)
                else:
                    entry = updates.setdefault(g, (kind, {}, None))
                    entry[1].setdefault(block, []).append(new)
        for g, (text, replaced, block) in mentions.items():
            if g not in mention_paths:
                continue
            entry = updates.setdefault(g, (_MENTION, {}, None))
            entry[1].setdefault(block, []).append(text)
            updates[g] = (entry[0], entry[1], (replaced, list(mention_paths[g])))
        if changed:
            self._updates = updates
        return bool(changed), changed

    def _saved(self, changed: set[int]) -> float:
        """``calculateContextOptimizationMetrics``: the share of characters just saved, over
        the first two provider messages and those after the deleted range."""
        total = saved = 0
        for g in [0, 1, *range(self._start(), len(self._groups))]:
            if g >= len(self._groups):
                continue
            members = self._groups[g]
            if isinstance(self._transcript[members[0]], AssistantMessage):
                for j, k in enumerate(members):
                    text = self._transcript[k].text  # type: ignore[union-attr]
                    # the truncation notice is an earlier rewrite of the first reply's text
                    total += len(LEGACY_TRUNCATION_NOTICE) if g == 1 and j == 0 and self._noticed and text \
                        else len(text)
                continue
            entry = self._updates.get(g)
            for b, block in enumerate(self._blocks(g)):
                text = self._text(block)
                if not text:
                    continue
                versions = entry[1].get(b) if entry else None
                if versions and g in changed:
                    original = len(versions[-2]) if len(versions) > 1 else len(text)
                    saved += original - len(versions[-1])
                    total += original
                elif versions:
                    total += len(versions[-1])
                else:
                    total += len(text)
        return saved / total if total else 0.0

    # -- the request ---------------------------------------------------------------------

    def compact(self) -> Compaction:
        acted = False
        reported = self._reported
        self._observed = None  # this request's usage, once observed
        if reported is not None and reported >= self.config.threshold:
            self._reported = None  # acted on: the next check waits for the next request's usage
            acted = True
            keep = "quarter" if reported / 2 > self.config.threshold else "half"
            changed, where = self._optimize(self._start())
            saved = self._saved(where) if changed else 0.0
            truncate = not changed or saved < 0.3
            if truncate:
                self._noticed = True
                self._deleted = self._next_range(keep)
            self._dirty = True
            self._events.emit(LegacyTruncated(reported, self.config.threshold, saved, truncate, keep, self._deleted))
        if self._dirty or self._needs_rebuild():
            before = self._rendering
            self._rendering = self._render()
            self._rendered_to = len(self._transcript)
            self._dirty = False
            continues = len(self._rendering) >= len(before) and all(a is b for a, b in zip(before, self._rendering))
            # an abort takes back what a turn appended: a new turn starts from the new rendering
            # anyway, so only a rewrite of what the provider holds is a compaction
            return self._send(deferred(self._base_system, self._rendering),
                              acted or (not continues and not self._aborted), None)
        # (an abort always rebuilds: what is extended here was sent after no abort)
        self._rendering.extend(self._transcript[self._rendered_to:])
        self._rendered_to = len(self._transcript)
        return self._send(deferred(self._base_system, self._rendering), False, ())

    def _needs_rebuild(self) -> bool:
        """Whether what was appended since the last request falls where the rendering
        rewrites (the first message after the cut, whose tool results are dropped)."""
        if self._deleted is None:
            return False
        cut = self._deleted + 1
        # a group's members are in transcript order: its last is its newest
        return cut < len(self._groups) and self._groups[cut][-1] >= self._rendered_to

    def _next_range(self, keep: str) -> int:
        """``getNextTruncationRange``: the new inclusive end of the deleted range."""
        n = len(self._groups)
        start = self._start()
        if keep == "half":
            remove = (n - start) // 4 * 2
        else:
            remove = math.floor((n - start) * 3 / 4 / 2) * 2
        end = start + remove - 1
        if 0 <= end < n and not isinstance(self._transcript[self._groups[end][0]], AssistantMessage):
            end -= 1
        return end

    def _render(self) -> list[Message]:
        """``getAndAlterTruncatedMessages``."""
        groups = list(range(min(2, len(self._groups)))) + list(range(self._start(), len(self._groups)))
        out: list[Message] = []
        cut = self._start() if self._start() > 2 else None
        emptied = False  # the message after the cut held only results: Cline sends it empty
        for g in groups:
            rewrites = self._updates.get(g, (0, {}, None))[1]
            members = self._groups[g]
            if isinstance(self._transcript[members[0]], AssistantMessage):
                for j, k in enumerate(members):
                    m = self._transcript[k]
                    assert isinstance(m, AssistantMessage)
                    if j == 0 and g == 1 and self._noticed and m.text:
                        m = AssistantMessage(LEGACY_TRUNCATION_NOTICE, m.calls, m.pinned)
                    out.append(m)
                continue
            blocks_ = self._blocks(g)
            texts = {(b.message, b.result): rewrites[i][-1] for i, b in enumerate(blocks_) if rewrites.get(i)}
            if g == cut:
                emptied = all(isinstance(self._transcript[k], ToolResults) for k in members)
            for k in members:
                m = self._transcript[k]
                if isinstance(m, ToolResults):
                    if g == cut:
                        continue  # the results of deleted calls are dropped with them
                    if texts and any((k, j) in texts for j in range(len(m.results))):
                        m = ToolResults(tuple(ToolResult(r.id, texts.get((k, j), r.content), r.attachments, r.success)
                                              for j, r in enumerate(m.results)), m.pinned)
                elif isinstance(m, UserInput) and (k, None) in texts:
                    m = UserInput(texts[(k, None)], m.attachments, m.pinned)
                out.append(m)
        # left out, an emptied message changes nothing when a reply follows it (the calls
        # before it are answered all the same); at the end it is where they are answered
        return _results_follow_calls(out, emptied_last=emptied and cut == len(self._groups) - 1)

    def __repr__(self) -> str:
        return f"LegacyContext(threshold={self.config.threshold:,.0f}, {len(self._transcript)} messages)"


def _results_follow_calls(messages: list[Message], *, emptied_last: bool = False) -> list[Message]:
    """``ensureToolResultsFollowToolUse``: every reply's calls answered right after it, in
    call order; a call whose result is gone gets ``"result missing"``. ``emptied_last``:
    Cline's list goes on after ``messages`` with the first user message after the cut,
    sent empty because it held only tool results (`LegacyContext._render` leaves it out):
    a final reply's calls are answered in it. A reply that is truly last is left alone, as
    Cline's loop stops before the last message."""
    out: list[Message] = []
    k = 0
    while k < len(messages):
        m = messages[k]
        out.append(m)
        k += 1
        if not isinstance(m, AssistantMessage) or not m.calls:
            continue
        ids = [c.id for c in m.calls]
        if k >= len(messages):
            if emptied_last:
                out.append(ToolResults(tuple(ToolResult(i, "result missing") for i in ids)))
            continue
        nxt = messages[k]
        if isinstance(nxt, ToolResults) and [r.id for r in nxt.results] == ids:
            continue
        have = {r.id: r for r in nxt.results} if isinstance(nxt, ToolResults) else {}
        # Cline also keeps results answering no call of this reply after these; the
        # transcript never holds such (results follow their calls), so none are kept
        out.append(ToolResults(tuple(have.get(i) or ToolResult(i, "result missing") for i in ids)))
        if isinstance(nxt, ToolResults):
            k += 1
    return out
