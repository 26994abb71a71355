"""ShareGPT transcripts: ``{"conversations": [{"from": ..., "value": ...}, ...]}``.

A file holds one such object, a JSON list of them, or JSON Lines with one per line; use
`load_sharegpt_all` or ``index=`` (a position or the record's ``id``).

Speakers: ``human``/``user`` start a turn; ``gpt``/``assistant``/``chatgpt``/``bard``/
``bing``/``model`` reply; ``system`` (and a record-level ``"system"`` string) form the
system prompt. The tool-calling dialect of LLaMA-Factory is read too: ``function_call``
(value: JSON ``{"name", "arguments"}`` or a list of them) is a reply that calls tools with
made-up ids ``"call<index>.<k>"``, and ``observation``/``tool``/``function`` answer them in
order. Message ids are ``"m<index>"``.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..conversation import Conversation
from ..messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from ._common import Format, Source, TurnBuilder, conversation, parse_arguments

__all__ = ["load_sharegpt", "load_sharegpt_all"]

NAME = "sharegpt"
USER = frozenset({"human", "user"})
ASSISTANT = frozenset({"gpt", "assistant", "chatgpt", "bard", "bing", "model"})
TOOL = frozenset({"observation", "tool", "function", "function_response"})


def load_sharegpt(path: Any, *, index: int | str = 0) -> Conversation:
    """Read one conversation from a ShareGPT file."""
    return FORMAT.load(path, index=index)


def load_sharegpt_all(path: Any) -> list[Conversation]:
    """Read every conversation of a ShareGPT file."""
    return FORMAT.load_all(path)


def sniff(src: Source) -> str | None:
    """``None`` when the file is ShareGPT, else why not (naming the first bad record)."""
    if isinstance(src.doc, Mapping):
        return _check(src.doc, "the top-level object")
    if isinstance(src.doc, list):
        if not src.doc:
            return "the top-level list is empty"
        for k, rec in enumerate(src.doc):
            bad = _check(rec, f"record {k}")
            if bad:
                return bad
        return None
    if src.records:
        for lineno, rec in src.records:
            bad = _check(rec, f"line {lineno}")
            if bad:
                return bad
        return None
    return src.doc_error or "not JSON"


def _check(rec: Any, where: str) -> str | None:
    if not isinstance(rec, Mapping) or not isinstance(rec.get("conversations"), list):
        return f"{where}: has no 'conversations' list"
    for j, m in enumerate(rec["conversations"]):
        if not isinstance(m, Mapping) or "from" not in m or "value" not in m:
            return f"{where} conversations[{j}]: not a {{'from', 'value'}} object"
    return None


def _entries(src: Source) -> list[tuple[Mapping[str, Any], Any]]:
    reason = sniff(src)
    if reason is not None:
        raise src.error(None, f"not a ShareGPT file: {reason}")
    if isinstance(src.doc, Mapping):
        return [(src.doc, "")]
    if isinstance(src.doc, list):
        return [(rec, f"record {k}") for k, rec in enumerate(src.doc)]
    assert src.records is not None
    return [(rec, lineno) for lineno, rec in src.records]


def _ident(rec: Mapping[str, Any], src: Source, k: int) -> str:
    return str(rec.get("id") or f"{src.path.stem}-{k}")


def _calls(value: Any, i: int) -> list[ToolCall]:
    try:
        parsed = json.loads(value) if isinstance(value, str) else value
    except json.JSONDecodeError:
        parsed = {"name": "", "arguments": {"_raw": value}}
    items = parsed if isinstance(parsed, list) else [parsed]
    calls = []
    for k, c in enumerate(items):
        c = c if isinstance(c, Mapping) else {"name": "", "arguments": {"_raw": c}}
        calls.append(ToolCall(f"call{i}.{k}", str(c.get("name", "")), parse_arguments(c.get("arguments", {}))))
    return calls


def _convert(src: Source, rec: Mapping[str, Any], where: Any, k: int) -> Conversation:
    builder = TurnBuilder()
    system: list[str] = []
    if isinstance(rec.get("system"), str) and rec["system"]:
        system.append(rec["system"])
    pending: list[str] = []
    for i, m in enumerate(rec["conversations"]):
        who = str(m["from"]).lower()
        value = m["value"]
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        mid = f"m{i}"
        if who in USER:
            builder.user(UserInput(text), mid)
        elif who in ASSISTANT:
            builder.assistant(AssistantMessage(text), mid)
        elif who == "function_call":
            calls = _calls(value, i)
            pending.extend(c.id for c in calls)
            builder.assistant(AssistantMessage("", tuple(calls)), mid)
        elif who in TOOL:
            call_id = pending.pop(0) if pending else ""
            builder.results(ToolResults((ToolResult(call_id, text),)), mid)
        elif who == "system":
            system.append(text)
        else:
            loc = where if isinstance(where, int) else f"{where} conversations[{i}]".strip()
            raise src.error(loc, f"unknown speaker {m['from']!r}; expected human, gpt, system, function_call "
                                 "or observation")
    meta = {key: value for key, value in rec.items() if key not in ("conversations", "id", "system")}
    return conversation(builder.build(), id=_ident(rec, src, k), source=src.path, format=NAME,
                        metadata=meta, system="\n\n".join(system))


FORMAT = Format(NAME, "a ShareGPT conversation file", sniff, lambda src, e, k: _convert(src, *e, k),
                items=_entries, ident=lambda src, e, k: _ident(e[0], src, k))
