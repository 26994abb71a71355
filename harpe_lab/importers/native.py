"""harpe_lab's own lossless conversation file: everything a `Conversation` holds — turns with
ids, outcomes and usage, probes, recorded compactions, metadata — in one JSON document.

A Harpe journal cannot carry probes or message ids, so the bundled datasets that need them
are stored this way. Messages use the Harpe journal's field encoding (specification §2.3),
with ``"pinned": true`` only when set::

    {"format": "harpe_lab.conversation", "version": 1, "id": ..., "source": ..., "system": ...,
     "metadata": {...},
     "turns": [{"ids": [...], "input": {"role": "user", "text": ..., "attachments": []},
                "messages": [...], "outcome": "answered", "error": "", "usage": [...],
                "metadata": {...}}, ...],
     "probes": [{"id", "asked_at", "question", "answer", "evidence", "category"}, ...],
     "compactions": [{"turn", "summary", "pre_tokens", "trigger", "message"}, ...]}

`save_conversation` writes one turn per line so the file diffs well.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from ..conversation import Conversation, Probe, RecordedCompaction, Turn
from ..messages import AssistantMessage, Attachment, Message, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ._common import Format, Source, freeze, get

__all__ = ["save_conversation", "load_conversation", "conversation_to_dict", "conversation_from_dict", "FORMAT_TAG"]

NAME = "harpe_lab"
FORMAT_TAG = "harpe_lab.conversation"
VERSION = 1


def plain(value: Any) -> Any:
    """``value`` with mappings as dicts and tuples as lists, ready for ``json.dumps``."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def _attachment(a: Attachment) -> dict[str, Any]:
    return {"name": a.name, "size": a.size, "mime": a.mime, "path": a.path}


def message_to_dict(m: Message) -> dict[str, Any]:
    """A message in the Harpe journal's encoding (``pinned`` only when true)."""
    if isinstance(m, UserInput):
        d: dict[str, Any] = {"role": "user", "text": m.text, "attachments": [_attachment(a) for a in m.attachments]}
    elif isinstance(m, AssistantMessage):
        d = {"role": "assistant", "text": m.text,
             "calls": [{"id": c.id, "name": c.name, "input": plain(c.input)} for c in m.calls]}
    elif isinstance(m, ToolResults):
        d = {"role": "tool_results", "results": [
            {"id": r.id, "content": r.content, "attachments": [_attachment(a) for a in r.attachments],
             "success": r.success}
            for r in m.results
        ]}
    else:
        raise TypeError(f"not a harpe_lab message: {m!r}")
    if m.pinned:
        d["pinned"] = True
    return d


def _usage_dict(u: Usage) -> dict[str, Any]:
    return {"input_tokens": u.input_tokens, "output_tokens": u.output_tokens, "cache_read_tokens": u.cache_read_tokens,
            "cache_write_tokens": u.cache_write_tokens, "provider": u.provider, "model": u.model}


def turn_to_dict(t: Turn) -> dict[str, Any]:
    d: dict[str, Any] = {
        "ids": list(t.ids),
        "input": message_to_dict(t.input),
        "messages": [message_to_dict(m) for m in t.messages],
        "outcome": t.outcome,
    }
    if t.error:
        d["error"] = t.error
    if t.usage:
        d["usage"] = [_usage_dict(u) for u in t.usage]
    if t.metadata:
        d["metadata"] = plain(t.metadata)
    return d


def conversation_to_dict(c: Conversation) -> dict[str, Any]:
    """The whole conversation as plain JSON-ready data."""
    return {
        "format": FORMAT_TAG,
        "version": VERSION,
        "id": c.id,
        "source": c.source,
        "system": c.system,
        "metadata": plain(c.metadata),
        "turns": [turn_to_dict(t) for t in c.turns],
        "probes": [
            {"id": p.id, "asked_at": p.asked_at, "question": p.question, "answer": p.answer,
             "evidence": list(p.evidence), "category": p.category}
            for p in c.probes
        ],
        "compactions": [
            {"turn": k.turn, "summary": k.summary, "pre_tokens": k.pre_tokens, "trigger": k.trigger,
             "message": k.message}
            for k in c.compactions
        ],
    }


def save_conversation(conversation: Conversation, path: Any) -> Path:
    """Write ``conversation`` to ``path`` (parent folders created); returns the path."""
    d = conversation_to_dict(conversation)
    turns = d.pop("turns")
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    head = ",\n".join(f"{json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in d.items())
    body = ",\n".join(json.dumps(t, ensure_ascii=False) for t in turns)
    p.write_text("{\n" + head + ',\n"turns": [\n' + body + "\n]\n}\n", encoding="utf-8")
    return p


def load_conversation(path: Any) -> Conversation:
    """Read a file `save_conversation` wrote."""
    return FORMAT.load(path)


def sniff(src: Source) -> str | None:
    """``None`` when the file is a harpe_lab conversation file, else why not."""
    doc = src.doc
    if doc is None:
        return "a JSON Lines file, not one JSON document"
    if not isinstance(doc, Mapping):
        return "not a JSON object"
    if doc.get("format") != FORMAT_TAG:
        return f"'format' is {doc.get('format')!r}, not {FORMAT_TAG!r}"
    return None


def _attachments(items: Any, src: Source, where: str) -> tuple[Attachment, ...]:
    if not isinstance(items, list):
        raise src.error(where, f"'attachments' must be a list, got {type(items).__name__}")
    out = []
    for a in items:
        if not isinstance(a, Mapping):
            raise src.error(where, "an attachment must be an object {name, size, mime, path}")
        out.append(Attachment(get(a, "name", str, src, where), get(a, "size", int, src, where),
                              get(a, "mime", str, src, where, ""), get(a, "path", str, src, where, "")))
    return tuple(out)


def message_from_dict(d: Any, src: Source, where: str) -> Message:
    """Decode one message written by `message_to_dict`, strictly."""
    if not isinstance(d, Mapping):
        raise src.error(where, f"a message must be an object, got {type(d).__name__}")
    role = d.get("role")
    pinned = bool(d.get("pinned", False))
    if role == "user":
        return UserInput(get(d, "text", str, src, where), _attachments(d.get("attachments", []), src, where), pinned)
    if role == "assistant":
        calls = []
        for c in get(d, "calls", list, src, where, []):
            if not isinstance(c, Mapping):
                raise src.error(where, "a call must be an object {id, name, input}")
            calls.append(ToolCall(get(c, "id", str, src, where), get(c, "name", str, src, where), c.get("input", {})))
        return AssistantMessage(get(d, "text", str, src, where), tuple(calls), pinned)
    if role == "tool_results":
        results = []
        for r in get(d, "results", list, src, where):
            if not isinstance(r, Mapping):
                raise src.error(where, "a result must be an object {id, content, attachments, success}")
            results.append(ToolResult(get(r, "id", str, src, where), get(r, "content", str, src, where),
                                      _attachments(r.get("attachments", []), src, where),
                                      get(r, "success", bool, src, where, True)))
        return ToolResults(tuple(results), pinned)
    raise src.error(where, f"unknown role {role!r}; expected user, assistant or tool_results")


def conversation_from_dict(d: Mapping[str, Any], src: Source | None = None) -> Conversation:
    """Rebuild a `Conversation` from `conversation_to_dict` data."""
    src = src or Source(Path("<dict>"), "")
    version = d.get("version", VERSION)
    if version != VERSION:
        raise src.error(None, f"version {version!r} is not supported (this harpe_lab reads version {VERSION})")
    turns = []
    for t, td in enumerate(get(d, "turns", list, src, None)):
        where = f"turns[{t}]"
        if not isinstance(td, Mapping):
            raise src.error(where, "a turn must be an object")
        first = message_from_dict(td.get("input"), src, where + " input")
        if not isinstance(first, UserInput):
            raise src.error(where, "a turn's input must be a user message")
        messages = tuple(message_from_dict(m, src, f"{where} messages[{j}]")
                         for j, m in enumerate(get(td, "messages", list, src, where, [])))
        usage = tuple(
            Usage(get(u, "input_tokens", int, src, where), get(u, "output_tokens", int, src, where, 0),
                  get(u, "cache_read_tokens", int, src, where, 0), get(u, "cache_write_tokens", int, src, where, 0),
                  get(u, "provider", str, src, where, ""), get(u, "model", str, src, where, ""))
            for u in get(td, "usage", list, src, where, [])
        )
        try:
            turns.append(Turn(first, messages, get(td, "outcome", str, src, where, "answered"),
                              get(td, "error", str, src, where, ""), usage,
                              tuple(get(td, "ids", list, src, where, [])),
                              {k: freeze(v) for k, v in get(td, "metadata", dict, src, where, {}).items()}))
        except (TypeError, ValueError) as e:
            raise src.error(where, str(e)) from None
    probes = []
    for k, p in enumerate(get(d, "probes", list, src, None, [])):
        where = f"probes[{k}]"
        probes.append(Probe(get(p, "id", str, src, where), get(p, "asked_at", int, src, where),
                            get(p, "question", str, src, where), get(p, "answer", str, src, where),
                            tuple(get(p, "evidence", list, src, where, [])), get(p, "category", str, src, where, "")))
    compactions = []
    for k, c in enumerate(get(d, "compactions", list, src, None, [])):
        where = f"compactions[{k}]"
        compactions.append(RecordedCompaction(get(c, "turn", int, src, where), get(c, "summary", str, src, where, ""),
                                              get(c, "pre_tokens", int, src, where, None),
                                              get(c, "trigger", str, src, where, ""),
                                              get(c, "message", int, src, where, None)))
    meta = dict(get(d, "metadata", dict, src, None, {}))
    stored = meta.get("format")
    if stored and stored != NAME:
        meta.setdefault("source_format", stored)  # what the conversation was first imported from
    meta["format"] = NAME
    meta = {k: freeze(v) for k, v in meta.items()}
    try:
        return Conversation(turns=tuple(turns), id=get(d, "id", str, src, None, "conversation"),
                            source=get(d, "source", str, src, None, ""), metadata=meta, probes=tuple(probes),
                            compactions=tuple(compactions), system=get(d, "system", str, src, None, ""))
    except (TypeError, ValueError) as e:
        raise src.error(None, str(e)) from None


FORMAT = Format(NAME, "a harpe_lab conversation file", sniff, lambda src, _item, _k: conversation_from_dict(src.doc, src))
