"""The numbers Cline's SDK works with (trigger, target, chars per token, the notices) and its
request estimate: each message serialized as the SDK stores it, in JavaScript string length.
Apart because every other part of the package weighs messages with these."""

from __future__ import annotations

import json
import re
from typing import Any, Iterable, Mapping, Sequence

from ..._text import hidden_chars
from ...messages import AssistantMessage, Attachment, Message, ToolResults, UserInput

__all__ = ["DEFAULT_MAX_INPUT", "TRIGGER_RATIO", "TARGET_RATIO", "LONG_CONVERSATION_TARGET_RATIO", "PRESERVE_RECENT_TOKENS", "PRESERVED_ASSISTANT_TEXTS", "SUMMARY_SYSTEM", "LEGACY_TRUNCATION_NOTICE", "DUPLICATE_FILE_READ_NOTICE", "estimate_message"]

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
    """JavaScript's ``length``: UTF-16 code units (of the texts a sanitizer's markers replaced
    too, `hidden_chars`: every JSON length here is taken through this)."""
    if text.isascii():
        return len(text) + hidden_chars(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2 + hidden_chars(text)


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
