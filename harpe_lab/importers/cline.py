"""Cline SDK sessions (``~/.cline/data/sessions/<session id>/<session id>.messages.json``).

The Cline SDK (``@cline/core``, its ``docs/messages-contract-v1.md``) writes one JSON
document per session: ``{"version": 1, "agent", "sessionId", "messages": [...],
"system_prompt"}``. Each message is ``{"id", "role": "user"|"assistant", "content": [blocks],
"ts", "modelInfo", "metrics", "metadata"}`` with Anthropic-shaped blocks (``text``,
``thinking``, ``tool_use``, ``tool_result``, ``image``) plus ``file`` blocks (a file the user
attached, ``{"path", "content"}``). The files Cline writes after a compaction
(``<session id>.compaction.json``) have the same shape and load the same way. How they
become a `Conversation`:

* **Turns.** A user message with anything but tool results starts a turn (Cline's own
  ``isTurnStartMessage``); its text blocks are joined by blank lines and each ``file`` block
  is rendered as the SDK sends it, ``<file_content path="...">\\n...\\n</file_content>``.
  User messages in a row with no reply between them form one input; the other ids are in
  the turn's ``metadata["merged_inputs"]``. ``tool_result`` blocks become `ToolResults`
  (``is_error`` → a failed result).
* **Replies.** One `AssistantMessage` per assistant message (text blocks joined, ``tool_use``
  blocks as calls). Thinking is not message text; a turn's ``metadata["thinking"]`` keeps it.
  Blocks of any other type are not message text either: they are counted by type in
  ``metadata["unknown_blocks"]``.
* **Usage and cost.** ``metrics`` becomes the reply's `Usage`: ``inputTokens`` is already the
  whole prompt (the SDK normalises it so; cache reads and writes are parts of it),
  ``cacheReadTokens`` / ``cacheWriteTokens`` the cache parts, the model ``modelInfo.id``
  and the provider ``modelInfo.provider``. The SDK stamps each model call's own metrics on
  its message; files where only the last message of a run carries (the run's) metrics give
  ``metadata["usage_incomplete"]`` as `TurnBuilder` does. A turn's ``metadata["cost_usd"]``
  has one entry per reply, the cost Cline recorded (``None`` when it recorded none), and
  ``metadata["request_times"]`` one per reply: the ``ts`` of the message the call answered,
  in seconds since the epoch (``None`` when that message has no ``ts``). The conversation's
  ``metadata["recorded_cost_usd"]`` is the sum.
* **Compactions.** A message whose ``metadata.kind`` is ``"compaction_summary"`` (the agentic
  mode's "Context summary:" user message) is kept as input text — it is what the model
  reads — and also gives a `RecordedCompaction` (``summary``, ``pre_tokens`` =
  ``tokensBefore``, trigger ``"agentic"``). A message whose ``metadata.kind`` is
  ``"compaction"`` (the basic mode's mark on the first kept prompt) gives one with the
  ``reason`` as trigger and no summary (the basic mode writes its notices into the kept
  prompts themselves); ``messagesRemoved`` and ``usageBefore`` go to
  ``metadata["compaction"]``. Both sit at the start of the turn holding that message.
* **The manifest.** When ``<stem>.json`` lies beside ``<stem>.messages.json`` (Cline's
  session manifest), its ``cwd``, ``model``, ``provider``, ``started_at``, ``ended_at``,
  ``status`` and title are added to the metadata.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..conversation import Conversation, RecordedCompaction
from ..messages import AssistantMessage, Attachment, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ._common import Format, Source, TurnBuilder, conversation, text_of

__all__ = ["load_cline"]

NAME = "cline"
_ROLES = ("user", "assistant")
_INPUT_BLOCKS = frozenset({"text", "image", "document"})
_MANIFEST_KEYS = ("cwd", "model", "provider", "started_at", "ended_at", "status", "source")


def load_cline(path: Any) -> Conversation:
    """Read a Cline SDK ``*.messages.json`` session (or a ``*.compaction.json`` file)."""
    return FORMAT.load(path)


def sniff(src: Source) -> str | None:
    """``None`` when the file is a Cline SDK session, else why not."""
    doc = src.doc
    if doc is None:
        return "a JSON Lines file, not one JSON document"
    if not isinstance(doc, Mapping):
        return "not a JSON object with 'sessionId' and 'messages'"
    if not isinstance(doc.get("sessionId"), str):
        return "the top-level object has no 'sessionId' string"
    if not isinstance(doc.get("messages"), list):
        return "the top-level object has no 'messages' list"
    if "version" not in doc and "agent" not in doc:
        return "the top-level object has no 'version' or 'agent'"
    for k, m in enumerate(doc["messages"]):
        if not isinstance(m, Mapping):
            return f"messages[{k}]: not an object"
    return None  # the messages themselves are checked while reading, with errors naming them


def _seconds(ms: Any) -> float | None:
    """Cline's ``ts`` (epoch milliseconds) in seconds since the epoch."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)):
        return None
    return ms / 1000


def _number(raw: Mapping[str, Any], key: str, src: Source, where: str) -> int:
    value = raw.get(key, 0)
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise src.error(where, f"metrics {key!r} must be a number, got {value!r}")
    return int(value)


def _file_text(block: Mapping[str, Any]) -> str:
    return f'<file_content path="{block.get("path", "")}">\n{block.get("content", "")}\n</file_content>'



def _result_parts(content: Any) -> Any:
    """A tool result's content with Cline's batched results — ``read_files`` and
    ``run_commands`` give a list of ``{query, result, success}`` objects, no ``type`` — as
    text parts: the query (the file and lines, or the command) then its result."""
    if not isinstance(content, list):
        return content
    return [{"type": "text", "text": f"{p.get('query', '')}\n{p['result']}".strip()}
            if isinstance(p, Mapping) and "type" not in p and "result" in p else p for p in content]

class _Reader:
    def __init__(self, src: Source) -> None:
        self.src = src
        self.builder = TurnBuilder()
        self.input_open = False  # the current turn has an input and no reply yet
        self.before: Any = None  # the ts of the message before the current one
        self.compactions: list[RecordedCompaction] = []
        self.compaction_meta: list[dict[str, Any]] = []
        self.models: list[str] = []
        self.cost = 0.0
        self.unknown_blocks: dict[str, int] = {}

    def read(self) -> Conversation:
        doc = self.src.doc
        for k, m in enumerate(doc["messages"]):
            where = f"messages[{k}]"
            if m.get("role") not in _ROLES:
                raise self.src.error(where, f"role {m.get('role')!r}; expected 'user' or 'assistant'")
            if not isinstance(m.get("content"), (list, str)):
                kind = type(m.get("content")).__name__
                raise self.src.error(where, f"'content' must be a list of blocks, got {kind}")
            mid = str(m.get("id") or f"m{k}")
            if m["role"] == "assistant":
                self.assistant(m, mid, where)
            else:
                self.user(m, mid, where)
            self.before = m.get("ts")
        meta: dict[str, Any] = {
            "session_id": doc["sessionId"],
            "agent": str(doc.get("agent", "")),
            "version": doc.get("version"),
            "models": self.models,
            "recorded_cost_usd": round(self.cost, 10),
        }
        if doc.get("updated_at"):
            meta["updated_at"] = str(doc["updated_at"])
        if self.compaction_meta:
            meta["compaction"] = self.compaction_meta
        if self.unknown_blocks:
            meta["unknown_blocks"] = self.unknown_blocks
        meta.update(self.manifest())
        system = doc.get("system_prompt")
        return conversation(self.builder.build(), id=doc["sessionId"], source=self.src.path, format=NAME,
                            metadata=meta, compactions=self.compactions,
                            system=system if isinstance(system, str) else "")

    def blocks(self, m: Mapping[str, Any], where: str) -> list[Mapping[str, Any]]:
        content = m["content"]
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        for j, block in enumerate(content):
            if not isinstance(block, Mapping) or not isinstance(block.get("type"), str):
                raise self.src.error(f"{where} content[{j}]", "a content block must be an object with a 'type'")
        return content

    def unknown(self, kind: str) -> None:
        self.unknown_blocks[kind] = self.unknown_blocks.get(kind, 0) + 1

    # -- user messages ------------------------------------------------------------------

    def user(self, m: Mapping[str, Any], mid: str, where: str) -> None:
        results: list[ToolResult] = []
        texts: list[str] = []
        files: list[Attachment] = []
        for j, block in enumerate(self.blocks(m, where)):
            kind = block["type"]
            if kind == "tool_result":
                if not isinstance(block.get("tool_use_id"), str):
                    raise self.src.error(f"{where} content[{j}]", "a tool_result block has no 'tool_use_id' string")
                text, attached = text_of(_result_parts(block.get("content")))
                failed = block.get("is_error") is True
                results.append(ToolResult(block["tool_use_id"], text, attached, success=not failed))
            elif kind == "file":
                texts.append(_file_text(block))
            elif kind in _INPUT_BLOCKS:
                text, attached = text_of([block])
                if text:
                    texts.append(text)
                files.extend(attached)
            else:
                self.unknown(kind)
        if results:
            self.builder.results(ToolResults(tuple(results)), mid if not (texts or files) else f"{mid}:results")
            self.input_open = False
        if not (texts or files) and results:
            return
        self.start_or_merge(UserInput("\n\n".join(texts), tuple(files)), mid)
        self.compaction(m)

    def start_or_merge(self, message: UserInput, mid: str) -> None:
        turn = self.builder.current
        if self.input_open and turn is not None:
            prev = turn.input
            joined = f"{prev.text}\n\n{message.text}" if prev.text and message.text else prev.text or message.text
            turn.input = UserInput(joined, prev.attachments + message.attachments)
            turn.metadata.setdefault("merged_inputs", []).append(mid)
            return
        self.builder.user(message, mid)
        self.input_open = True

    def compaction(self, m: Mapping[str, Any]) -> None:
        info = m.get("metadata")
        if not isinstance(info, Mapping) or info.get("kind") not in ("compaction", "compaction_summary"):
            return
        turn = len(self.builder) - 1
        if info["kind"] == "compaction_summary":
            before = info.get("tokensBefore")
            pre = int(before) if isinstance(before, (int, float)) and not isinstance(before, bool) and before else None
            self.compactions.append(RecordedCompaction(turn=turn, summary=str(info.get("summary") or ""),
                                                       pre_tokens=pre, trigger="agentic"))
            self.compaction_meta.append({"kind": "agentic", "turn": turn, "message_id": str(m.get("id", "")),
                                         "details": info.get("details") or {}})
        else:
            self.compactions.append(RecordedCompaction(turn=turn, trigger=str(info.get("reason") or "basic")))
            self.compaction_meta.append({"kind": "basic", "turn": turn, "message_id": str(m.get("id", "")),
                                         "messages_removed": info.get("messagesRemoved"),
                                         "usage_before": info.get("usageBefore") or {}})

    # -- assistant messages -------------------------------------------------------------

    def assistant(self, m: Mapping[str, Any], mid: str, where: str) -> None:
        texts: list[str] = []
        calls: list[ToolCall] = []
        thinking: list[str] = []
        for j, block in enumerate(self.blocks(m, where)):
            kind = block["type"]
            if kind == "text":
                texts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                    raise self.src.error(f"{where} content[{j}]", "a tool_use block needs 'id' and 'name' strings")
                calls.append(ToolCall(block["id"], block["name"], block.get("input", {})))
            elif kind in ("thinking", "redacted_thinking"):
                if block.get("thinking"):
                    thinking.append(str(block["thinking"]))
            else:
                self.unknown(kind)
        info = m.get("modelInfo") if isinstance(m.get("modelInfo"), Mapping) else {}
        model = str(info.get("id") or "")
        if model and model not in self.models:
            self.models.append(model)
        usage, cost = self.metrics(m.get("metrics"), model, str(info.get("provider") or ""), where)
        self.builder.assistant(AssistantMessage("".join(texts), tuple(calls)), mid, usage)
        self.input_open = False
        turn = self.builder.current
        assert turn is not None
        turn.metadata.setdefault("request_times", []).append(_seconds(self.before))
        turn.metadata.setdefault("cost_usd", []).append(cost)
        if thinking:
            turn.metadata.setdefault("thinking", []).extend(thinking)

    def metrics(self, raw: Any, model: str, provider: str, where: str) -> tuple[Usage | None, float | None]:
        if raw is None:
            return None, None
        if not isinstance(raw, Mapping):
            raise self.src.error(where, f"'metrics' must be an object, got {type(raw).__name__}")
        usage = Usage(
            input_tokens=_number(raw, "inputTokens", self.src, where),
            output_tokens=_number(raw, "outputTokens", self.src, where),
            cache_read_tokens=_number(raw, "cacheReadTokens", self.src, where),
            cache_write_tokens=_number(raw, "cacheWriteTokens", self.src, where),
            provider=provider,
            model=model,
        )
        cost = raw.get("cost")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            self.cost += cost
            return usage, float(cost)
        return usage, None

    # -- the session manifest -----------------------------------------------------------

    def manifest(self) -> dict[str, Any]:
        path = self.src.path
        if not path.name.endswith(".messages.json"):
            return {}
        beside = path.with_name(path.name[: -len(".messages.json")] + ".json")
        if not beside.is_file():
            return {}
        try:
            raw = json.loads(beside.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            return {"manifest": str(beside), "manifest_problem": f"not readable as JSON ({e})"}
        if not isinstance(raw, Mapping):
            return {"manifest": str(beside), "manifest_problem": "not a JSON object"}
        out: dict[str, Any] = {"manifest": str(beside)}
        out.update({k: raw[k] for k in _MANIFEST_KEYS if isinstance(raw.get(k), str)})
        extra = raw.get("metadata")
        if isinstance(extra, Mapping) and isinstance(extra.get("title"), str):
            out["title"] = extra["title"]
        return out


FORMAT = Format(NAME, "a Cline session", sniff, lambda src, _item, _k: _Reader(src).read())
