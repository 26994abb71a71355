"""OpenAI chat-completions transcripts: the field's lingua franca.

Accepted shapes:

* a JSON list of message dicts (``{"role", "content", "tool_calls"?, ...}``);
* a JSON object ``{"messages": [...]}`` (other keys such as ``id`` and ``metadata`` are kept);
* a JSON list of such objects, or JSON Lines with one per line — many conversations
  (WildChat exports, fine-tuning files): use `load_openai_all` or ``index=``.

``system``/``developer`` messages form the system prompt; ``tool`` (and legacy
``function``) messages become `ToolResults`; a legacy ``function_call`` becomes a tool call
with a made-up id ``"fc<message index>"`` that the next ``function`` message answers.
Message ids are ``"m<index>"``, the message's position in the source list. An assistant
message that carries a ``usage`` dict (``prompt_tokens``, ``completion_tokens``,
``prompt_tokens_details.cached_tokens``) gives a recorded usage row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

from ..conversation import Conversation
from ..messages import AssistantMessage, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ._common import Format, Source, TurnBuilder, conversation, parse_arguments, text_of

__all__ = ["load_openai", "load_openai_all", "from_openai_messages"]

NAME = "openai"


def load_openai(path: Any, *, index: int | str = 0) -> Conversation:
    """Read one conversation from an OpenAI chat-completions file (``index``: position, or
    the conversation's ``id`` in a multi-conversation file)."""
    return FORMAT.load(path, index=index)


def load_openai_all(path: Any) -> list[Conversation]:
    """Read every conversation of an OpenAI chat-completions file."""
    return FORMAT.load_all(path)


def from_openai_messages(
    messages: Sequence[Mapping[str, Any]],
    *,
    id: str = "conversation",
    source: str = "",
    metadata: Mapping[str, Any] | None = None,
    format: str = NAME,
) -> Conversation:
    """Build a `Conversation` from OpenAI message dicts held in memory."""
    src = Source(path=Path(source or "<messages>"), text="")
    turns, system = _turns(src, messages, "messages")
    return conversation(turns, id=id, source=source, format=format, metadata=metadata, system=system)


def sniff(src: Source) -> str | None:
    """``None`` when the file is in this format, else why not (naming the first bad record)."""
    doc = src.doc
    if isinstance(doc, Mapping):
        if "messages" not in doc:
            return "the top-level object has no 'messages' list"
        return _check_messages(doc["messages"], "'messages'")
    if isinstance(doc, list):
        if not doc:
            return "the top-level list is empty"
        if isinstance(doc[0], Mapping) and "messages" in doc[0]:
            for k, item in enumerate(doc):
                if not isinstance(item, Mapping) or "messages" not in item:
                    return f"record {k}: has no 'messages' list"
                bad = _check_messages(item["messages"], f"record {k} 'messages'")
                if bad:
                    return bad
            return None
        return _check_messages(doc, "the top-level list")
    if src.records:
        for lineno, rec in src.records:
            if not isinstance(rec, Mapping) or "messages" not in rec:
                return f"line {lineno}: has no 'messages' list"
            bad = _check_messages(rec["messages"], f"line {lineno} 'messages'")
            if bad:
                return bad
        return None
    return src.doc_error or "not a JSON document"


def _check_messages(value: Any, where: str) -> str | None:
    if not isinstance(value, list) or not value:
        return f"{where} is not a non-empty list of messages"
    for k, m in enumerate(value):
        if not isinstance(m, Mapping):
            return f"{where} item {k}: not an object"
        if "role" not in m:
            return f"{where} item {k}: has no 'role' key (keys: {', '.join(list(m)[:6])})"
    return None


def _entries(src: Source) -> list[tuple[Any, str, dict[str, Any], str]]:
    """(messages, id, metadata, where) per conversation in the file."""
    reason = sniff(src)
    if reason is not None:
        raise src.error(None, f"not an OpenAI chat transcript: {reason}")
    doc = src.doc
    if isinstance(doc, Mapping):
        return [_entry(doc, src.path.stem, "")]
    if isinstance(doc, list):
        if isinstance(doc[0], Mapping) and "messages" in doc[0]:
            return [_entry(item, f"{src.path.stem}-{k}", f"record {k}") for k, item in enumerate(doc)]
        return [(doc, src.path.stem, {}, "")]
    assert src.records is not None
    return [_entry(rec, f"{src.path.stem}-{k}", lineno) for k, (lineno, rec) in enumerate(src.records)]


def _entry(obj: Mapping[str, Any], default_id: str, where: Any) -> tuple[Any, str, dict[str, Any], Any]:
    ident = obj.get("id") or obj.get("conversation_id") or default_id
    meta: dict[str, Any] = {}
    for key, value in obj.items():
        if key in ("messages", "id"):
            continue
        if key == "metadata" and isinstance(value, Mapping):
            meta.update(value)
        else:
            meta[key] = value
    return obj["messages"], str(ident), meta, where


def _convert(src: Source, messages: Any, ident: str, meta: dict[str, Any], where: Any) -> Conversation:
    turns, system = _turns(src, messages, where)
    return conversation(turns, id=ident, source=src.path, format=NAME, metadata=meta, system=system)


def _usage(raw: Any) -> Usage | None:
    if not isinstance(raw, Mapping) or "prompt_tokens" not in raw:
        return None
    details = raw.get("prompt_tokens_details") or {}
    cached = details.get("cached_tokens", 0) if isinstance(details, Mapping) else 0
    return Usage(
        input_tokens=int(raw.get("prompt_tokens") or 0),
        output_tokens=int(raw.get("completion_tokens") or 0),
        cache_read_tokens=int(cached or 0),
    )


def _turns(src: Source, messages: Sequence[Mapping[str, Any]], where: Any) -> tuple[list, str]:
    """Fold OpenAI messages into turns; returns (turns, system prompt)."""
    builder = TurnBuilder()
    system: list[str] = []
    legacy_calls: list[str] = []  # ids of unanswered legacy function_call s, in order
    prefix = f"{where} " if where not in ("", None) and not isinstance(where, int) else ""
    for i, m in enumerate(messages):
        loc: Any = where if isinstance(where, int) else f"{prefix}message {i}"
        if not isinstance(m, Mapping) or "role" not in m:
            raise src.error(loc, "not an OpenAI chat message (an object with 'role')")
        role = m["role"]
        mid = f"m{i}"
        if role in ("system", "developer"):
            text, _ = text_of(m.get("content"))
            system.append(text)
        elif role == "user":
            text, files = text_of(m.get("content"))
            builder.user(UserInput(text, files), mid)
        elif role == "assistant":
            text, _ = text_of(m.get("content"))
            calls: list[ToolCall] = []
            for c in m.get("tool_calls") or ():
                if not isinstance(c, Mapping):
                    raise src.error(loc, f"tool_calls holds a {type(c).__name__}, expected objects")
                fn = c.get("function") or {}
                calls.append(ToolCall(str(c.get("id") or ""), str(fn.get("name", "")),
                                      parse_arguments(fn.get("arguments"))))
            fc = m.get("function_call")
            if isinstance(fc, Mapping):
                call_id = f"fc{i}"
                legacy_calls.append(call_id)
                calls.append(ToolCall(call_id, str(fc.get("name", "")), parse_arguments(fc.get("arguments"))))
            builder.assistant(AssistantMessage(text, tuple(calls)), mid, _usage(m.get("usage")))
        elif role in ("tool", "function"):
            text, files = text_of(m.get("content"))
            call_id = m.get("tool_call_id")
            if not call_id:
                # legacy function results (and tools without ids) answer the calls in order
                call_id = legacy_calls.pop(0) if legacy_calls else ""
            success = not (isinstance(m.get("harpe"), Mapping) and m["harpe"].get("success") is False)
            builder.results(ToolResults((ToolResult(str(call_id), text, files, success),)), mid)
        else:
            raise src.error(loc, f"unknown role {role!r}; expected system, developer, user, assistant, tool "
                                 "or function")
    return builder.build(), "\n\n".join(system)


FORMAT = Format(NAME, "an OpenAI chat-messages file", sniff, lambda src, e, _k: _convert(src, *e), items=_entries,
                ident=lambda _src, e, _k: e[1])
