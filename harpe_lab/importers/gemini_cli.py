"""Gemini CLI session recordings (``~/.gemini/tmp/<project>/chats/session-*.jsonl``).

Written from Gemini CLI's recording types (``packages/core/src/services/chatRecordingTypes.ts``
and ``chatRecordingService.ts``). Since April 2026 the recording is JSON Lines: a first line
with the session's metadata (``sessionId``, ``projectHash``, ``startTime``, ``kind``), then
one line per write — a message record (``{"id", "timestamp", "type", "content", ...}``; a
message written again under the same id replaces the earlier version where it first
appeared), ``{"$set": {...}}`` (metadata; with ``messages``, a checkpoint of the whole
history) and ``{"$rewindTo": id}`` (the user rewound to before that message). Earlier
versions rewrote one JSON document, ``session-*.json``: the metadata with a ``messages`` list.
Both are read. How they become a `Conversation`:

* **Messages.** ``type: "user"`` messages start turns (their text parts joined by blank lines,
  ``inlineData`` / ``fileData`` parts as attachments); users messages in a row with no reply
  between them form one input (``metadata["merged_inputs"]``). ``type: "gemini"`` messages
  are replies: text parts are the text (``thought`` parts and the ``thoughts`` list go to the
  turn's ``metadata["thinking"]``), ``functionCall`` parts — or, in older records, the
  ``toolCalls`` list — the calls. ``info``, ``error`` and ``warning`` messages are the CLI's own
  notices, never sent to the model: they are counted in ``metadata["ui_messages"]``.
* **Tool results.** A user message made only of ``functionResponse`` parts (newer CLIs record
  what they send back) is the `ToolResults` of the reply before it; otherwise the results
  come from that reply's ``toolCalls[].result``. ``response.error`` or a tool status other
  than ``success`` makes a failed result.
* **Usage.** A reply's ``tokens`` (``input`` = ``promptTokenCount``, ``output``, ``cached``,
  ``thoughts``, ``tool``, ``total``) is its `Usage`: ``input_tokens`` = ``input + tool``
  (``input`` already counts the cached part), ``output_tokens`` = ``output + thoughts`` (both
  are billed as output), ``cache_read_tokens`` = ``cached``, so the row adds up to ``total``;
  the model is the message's ``model``. A turn's ``metadata["request_times"]`` has one entry
  per reply: the timestamp, in seconds since the epoch, of the last record before it.
* **Checkpoints, rewinds, compressions.** The importer keeps the history as it was sent, not
  Gemini CLI's latest view of it. A checkpoint that rewrites the history (chat compression,
  whose new history holds a ``<state_snapshot>`` user message, or truncation) becomes a
  `RecordedCompaction` at that point (the snapshot as its summary, trigger ``"compress"``
  or ``"truncate"``) and its rewritten messages are not added again. A checkpoint that drops
  the newest messages (a cancelled request rolled back) and a ``$rewindTo`` remove them, as
  Gemini CLI does: they are counted in ``metadata["rewound_messages"]``. A checkpoint that
  only rewrites content (tool-output masking) is not applied: the messages stay as first
  recorded, the input a replay needs; new messages in a checkpoint are added.

Ids are the records' own message ids; results taken from ``toolCalls`` get
``"<reply id>:results"``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Mapping

from ..conversation import Conversation, RecordedCompaction
from ..messages import AssistantMessage, Attachment, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ._common import Format, Source, TurnBuilder, conversation

__all__ = ["load_gemini_cli"]

NAME = "gemini_cli"
_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
_SNAPSHOT = "<state_snapshot>"


def load_gemini_cli(path: Any) -> Conversation:
    """Read a Gemini CLI session recording (``session-*.jsonl``, or an older ``session-*.json``)."""
    return FORMAT.load(path)


def _is_metadata(rec: Any) -> bool:
    return (isinstance(rec, Mapping) and isinstance(rec.get("sessionId"), str)
            and isinstance(rec.get("projectHash"), str))


def _kind(rec: Any) -> str | None:
    """``metadata``, ``message``, ``set`` or ``rewind``; ``None`` for anything else."""
    if not isinstance(rec, Mapping):
        return None
    if isinstance(rec.get("$rewindTo"), str):
        return "rewind"
    if isinstance(rec.get("$set"), Mapping):
        return "set"
    if isinstance(rec.get("id"), str):
        return "message"
    return "metadata" if _is_metadata(rec) else None


def sniff(src: Source) -> str | None:
    """``None`` when the file is a Gemini CLI session recording, else why not."""
    if _is_metadata(src.doc) and isinstance(src.doc.get("messages"), list):
        return None  # an older one-document session (or one JSON Lines record holding all of it)
    if src.records is None:
        return "not a session document with 'sessionId', 'projectHash' and 'messages', nor JSON Lines"
    if not any(_is_metadata(rec) for _, rec in src.records):
        return "no record with the session's 'sessionId' and 'projectHash'"
    for lineno, rec in src.records:
        if _kind(rec) is None:
            return f"line {lineno}: not a message (no 'id'), '$set', '$rewindTo' or metadata record"
    return None


def _seconds(stamp: Any) -> float | None:
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _parts(content: Any) -> list[Mapping[str, Any]]:
    """A ``PartListUnion`` (a string, a part, or a list of both) as a list of parts."""
    if content is None:
        return []
    items = content if isinstance(content, list) else [content]
    return [{"text": p} if isinstance(p, str) else p for p in items if isinstance(p, (str, Mapping))]


def _attachment(part: Mapping[str, Any], k: int) -> Attachment | None:
    inline, linked = part.get("inlineData"), part.get("fileData")
    if isinstance(inline, Mapping):
        mime = str(inline.get("mimeType") or "application/octet-stream")
        data = inline.get("data")
        return Attachment(f"inline-{k}.{mime.rsplit('/', 1)[-1]}", len(data) * 3 // 4 if isinstance(data, str) else 0,
                          mime, "")
    if isinstance(linked, Mapping):
        uri = str(linked.get("fileUri") or "")
        return Attachment(uri.rsplit("/", 1)[-1] or f"file-{k}", 0, str(linked.get("mimeType") or ""), uri)
    return None


def _response(part: Mapping[str, Any], fallback_id: str, ok: bool = True) -> ToolResult:
    fr = part["functionResponse"]
    response = fr.get("response") if isinstance(fr, Mapping) else None
    if isinstance(response, Mapping) and isinstance(response.get("output"), str) and len(response) == 1:
        text = response["output"]
    elif isinstance(response, Mapping) and "error" in response and len(response) == 1:
        text, ok = str(response["error"]), False
    else:
        text = json.dumps(response, ensure_ascii=False, default=str)
    ident = fr.get("id") if isinstance(fr, Mapping) else None
    return ToolResult(str(ident or fallback_id), text, success=ok)


class _Reader:
    def __init__(self, src: Source) -> None:
        self.src = src
        self.records: dict[str, tuple[Any, Mapping[str, Any]]] = {}  # id -> (where, latest record)
        self.timeline: list[str | RecordedCompaction] = []  # message ids as sent, and compaction points
        self.view: list[str] = []  # Gemini CLI's own current list of message ids
        self.ghosts: set[str] = set()  # ids of messages a compression wrote (not part of the history sent)
        self.meta: dict[str, Any] = {}
        self.rewound = 0
        self.checkpoints = 0

    # -- records to a timeline ----------------------------------------------------------

    def read(self) -> Conversation:
        src = self.src
        if src.records is not None and not (len(src.records) == 1 and _is_metadata(src.doc)):
            for lineno, rec in src.records:
                self.record(rec, lineno)
        else:
            self.record(src.doc, None)
        return self.build()

    def record(self, rec: Any, where: Any) -> None:
        kind = _kind(rec)
        if kind == "message":
            self.message(rec, where)
        elif kind == "rewind":
            self.rewind(rec["$rewindTo"])
        elif kind == "set":
            update = dict(rec["$set"])
            messages = update.pop("messages", None)
            self.meta.update(update)
            if isinstance(messages, list):
                self.checkpoint(messages, where)
        elif kind == "metadata":
            self.meta.update({k: v for k, v in rec.items() if k != "messages"})
            for k, m in enumerate(rec.get("messages") or ()):
                self.message(m, f"messages[{k}]" if where is None else where)
        else:
            raise self.src.error(where, "not a message (no 'id'), '$set', '$rewindTo' or metadata record")

    def message(self, m: Any, where: Any) -> None:
        if not isinstance(m, Mapping) or not isinstance(m.get("id"), str):
            raise self.src.error(where, "a message record must be an object with an 'id' string")
        if m.get("type") not in _TYPES:
            raise self.src.error(where, f"message {m['id']!r} has type {m.get('type')!r}; expected one of "
                                        f"{', '.join(sorted(_TYPES))}")
        ident = m["id"]
        seen = ident in self.records
        self.records[ident] = (where, m)
        if ident in self.ghosts or seen and ident in self.view:
            return
        self.view.append(ident)
        self.timeline.append(ident)

    def rewind(self, ident: str) -> None:
        cut = self.view.index(ident) if ident in self.view else 0
        self.remove(set(self.view[cut:]))
        self.view = self.view[:cut]

    def remove(self, gone: set[str]) -> None:
        """Take rolled-back messages out of the timeline, with everything after them."""
        at = [k for k, e in enumerate(self.timeline) if isinstance(e, str) and e in gone]
        if at:
            self.rewound += sum(1 for e in self.timeline[at[0]:] if isinstance(e, str))
            self.timeline = self.timeline[:at[0]]

    def checkpoint(self, messages: list[Any], where: Any) -> None:
        """A ``$set.messages`` checkpoint: Gemini CLI's whole history, as it now stands."""
        self.checkpoints += 1
        for m in messages:
            if not isinstance(m, Mapping) or not isinstance(m.get("id"), str):
                raise self.src.error(where, "a checkpoint's 'messages' must be message records with 'id' strings")
        ids = [m["id"] for m in messages]
        listed = set(ids)
        # the CLI's notices (info, error, warning) are not part of the history it checkpoints
        dropped = [i for i in self.view if i not in listed and self.records[i][1]["type"] in ("user", "gemini")]
        if not dropped:  # content rewrites (masking) are not applied; new messages are added
            known = set(self.view)
            for m in messages:
                if m["id"] not in known and m["id"] not in self.ghosts:
                    self.message(m, where)
            self.view = ids
            return
        # setHistory records a history it is handed without ids message by message just
        # before the checkpoint: those records are copies of messages already here.
        position = {i: k for k, i in enumerate(self.view)}
        last = max(position[i] for i in dropped)
        copies = [i for i in self.view[last + 1:] if i in listed]
        copied = set(copies)
        old = [i for i in self.view if i not in copied and self.records[i][1]["type"] in ("user", "gemini")]
        added = [m for m in messages if m["id"] not in position]
        if not copies and not added and dropped == old[len(old) - len(dropped):]:
            self.remove(set(dropped))  # a cancelled request rolled back
            self.view = ids
            return
        self.timeline = [e for e in self.timeline if not (isinstance(e, str) and e in copied)]
        self.ghosts.update(copies)
        self.ghosts.update(m["id"] for m in added)
        for m in added:
            self.records[m["id"]] = (where, m)
        rewritten = [self.records[i][1] for i in copies] + added
        snapshot = next((m for m in rewritten if m.get("type") == "user" and _SNAPSHOT in self.text(m)), None)
        if snapshot is not None or len(ids) != len(old):
            self.timeline.append(RecordedCompaction(turn=-1, summary=self.text(snapshot) if snapshot else "",
                                                    trigger="compress" if snapshot else "truncate"))
        self.view = ids

    @staticmethod
    def text(m: Mapping[str, Any]) -> str:
        return "\n\n".join(str(p["text"]) for p in _parts(m.get("content")) if "text" in p and not p.get("thought"))

    # -- the timeline to turns ----------------------------------------------------------

    def build(self) -> Conversation:
        self.builder = TurnBuilder()
        self.input_open = False
        self.pending: tuple[str, list[ToolResult]] | None = None  # results from a reply's toolCalls
        self.last_time: float | None = None
        self.models: list[str] = []
        self.ui: dict[str, int] = {}
        compactions: list[RecordedCompaction] = []
        waiting: list[RecordedCompaction] = []  # compactions placed once the next message is known
        for entry in self.timeline:
            if isinstance(entry, RecordedCompaction):
                self.flush_pending()
                self.input_open = False
                waiting.append(entry)
                continue
            where, m = self.records[entry]
            if waiting and m["type"] in ("user", "gemini"):
                turns, turn = len(self.builder), self.builder.current
                starts = m["type"] == "user" and not all(
                    isinstance(p.get("functionResponse"), Mapping) for p in _parts(m.get("content")) or [{}])
                for w in waiting:  # at the start of the turn the next input opens, else where the turn stands
                    at = (turns, None) if starts or turn is None else (turns - 1, 1 + len(turn.messages))
                    compactions.append(RecordedCompaction(turn=at[0], summary=w.summary, trigger=w.trigger,
                                                          message=at[1]))
                waiting = []
            if m["type"] == "gemini":
                self.flush_pending()
                self.reply(m, where)
                continue
            if m["type"] == "user":
                self.user(m, where)
            else:
                self.ui[m["type"]] = self.ui.get(m["type"], 0) + 1
            self.stamp(m)
        self.flush_pending()
        turn = self.builder.current
        compactions.extend(RecordedCompaction(turn=max(len(self.builder) - 1, 0), summary=w.summary, trigger=w.trigger,
                                              message=None if turn is None else 1 + len(turn.messages))
                           for w in waiting)
        meta: dict[str, Any] = {"session_id": str(self.meta.get("sessionId", "")),
                                "project_hash": str(self.meta.get("projectHash", "")),
                                "started": str(self.meta.get("startTime", "")),
                                "last_updated": str(self.meta.get("lastUpdated", "")),
                                "kind": str(self.meta.get("kind") or "main"), "models": self.models}
        for key in ("summary", "directories"):
            if self.meta.get(key):
                meta[key] = self.meta[key]
        if self.ui:
            meta["ui_messages"] = self.ui
        if self.rewound:
            meta["rewound_messages"] = self.rewound
        if self.checkpoints:
            meta["checkpoints"] = self.checkpoints
        return conversation(self.builder.build(), id=meta["session_id"] or self.src.path.stem, source=self.src.path,
                            format=NAME, metadata=meta, compactions=compactions)

    def flush_pending(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None and pending[1]:
            self.builder.results(ToolResults(tuple(pending[1])), pending[0])

    def user(self, m: Mapping[str, Any], where: Any) -> None:
        parts = _parts(m.get("content"))
        answers = [p for p in parts if isinstance(p.get("functionResponse"), Mapping)]
        if answers:
            self.pending = None  # what was sent back replaces the copy in the reply's toolCalls
            self.builder.results(ToolResults(tuple(_response(p, f"{m['id']}:{k}") for k, p in enumerate(answers))),
                                 m["id"] if len(answers) == len(parts) else f"{m['id']}:results")
            self.input_open = False
            if len(answers) == len(parts):
                return
        self.flush_pending()
        texts = [str(p["text"]) for p in parts if "text" in p and not p.get("thought")]
        files = tuple(a for k, p in enumerate(parts) if (a := _attachment(p, k)) is not None)
        text = "\n\n".join(texts)
        turn = self.builder.current
        if self.input_open and turn is not None:
            prev = turn.input
            turn.input = UserInput(f"{prev.text}\n\n{text}" if prev.text and text else prev.text or text,
                                   prev.attachments + files)
            turn.metadata.setdefault("merged_inputs", []).append(m["id"])
            return
        self.builder.user(UserInput(text, files), m["id"])
        self.input_open = True

    def reply(self, m: Mapping[str, Any], where: Any) -> None:
        parts = _parts(m.get("content"))
        texts = [str(p["text"]) for p in parts if "text" in p and not p.get("thought")]
        thinking = [str(p["text"]) for p in parts if "text" in p and p.get("thought")]
        for t in m.get("thoughts") or ():
            if isinstance(t, Mapping):
                thinking.append(f"{t.get('subject', '')}: {t.get('description', '')}".strip(": "))
        records = [c for c in m.get("toolCalls") or () if isinstance(c, Mapping)]
        calls = [ToolCall(str(fc.get("id") or f"{m['id']}:call{k}"), str(fc.get("name", "")), fc.get("args") or {})
                 for k, p in enumerate(parts) if isinstance(fc := p.get("functionCall"), Mapping)]
        if not calls:
            for k, c in enumerate(records):
                if not isinstance(c.get("name"), str):
                    raise self.src.error(where, f"message {m['id']!r}: toolCalls[{k}] has no 'name' string")
                calls.append(ToolCall(str(c.get("id") or f"{m['id']}:call{k}"), c["name"], c.get("args") or {}))
        model = str(m.get("model") or "")
        if model and model not in self.models:
            self.models.append(model)
        self.builder.assistant(AssistantMessage("".join(texts), tuple(calls)), m["id"], self.usage(m, model, where))
        self.input_open = False
        turn = self.builder.current
        assert turn is not None
        turn.metadata.setdefault("request_times", []).append(self.last_time)
        self.stamp(m)
        if thinking:
            turn.metadata.setdefault("thinking", []).extend(thinking)
        results: list[ToolResult] = []
        for k, c in enumerate(records):
            ok = c.get("status", "success") == "success"
            call_id = str(c.get("id") or f"{m['id']}:call{k}")
            answer = [p for p in _parts(c.get("result")) if isinstance(p.get("functionResponse"), Mapping)]
            if answer:
                results.append(_response(answer[0], call_id, ok))
            elif c.get("result") is not None:
                text = "\n\n".join(str(p["text"]) for p in _parts(c["result"]) if "text" in p)
                results.append(ToolResult(call_id, text, success=ok))
            self.stamp(c)
        self.pending = (f"{m['id']}:results", results)

    def stamp(self, record: Mapping[str, Any]) -> None:
        """Note ``record``'s timestamp as the time of the last thing written."""
        stamp = _seconds(record.get("timestamp"))
        self.last_time = stamp if stamp is not None else self.last_time

    def usage(self, m: Mapping[str, Any], model: str, where: Any) -> Usage | None:
        tokens = m.get("tokens")
        if tokens is None:
            return None
        if not isinstance(tokens, Mapping):
            raise self.src.error(where, f"message {m['id']!r}: 'tokens' must be an object, got {tokens!r}")
        n = {}
        for key in ("input", "output", "cached", "thoughts", "tool"):
            value = tokens.get(key) or 0
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise self.src.error(where, f"message {m['id']!r}: tokens {key!r} must be a number, got {value!r}")
            n[key] = int(value)
        return Usage(input_tokens=n["input"] + n["tool"], output_tokens=n["output"] + n["thoughts"],
                     cache_read_tokens=n["cached"], provider="gemini", model=model)


FORMAT = Format(NAME, "a Gemini CLI session", sniff, lambda src, _item, _k: _Reader(src).read())
