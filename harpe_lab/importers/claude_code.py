"""Claude Code session files (``~/.claude/projects/<project>/<session id>.jsonl``).

Claude Code writes one JSON record per line: ``user`` and ``assistant`` records carrying an
Anthropic API ``message``, plus bookkeeping (``progress``, ``system``, ``queue-operation``,
``file-history-snapshot``, ``summary``). How they become a `Conversation`:

* **One assistant message per API message id.** Claude Code writes one record per content
  block (text, thinking, tool_use), all sharing ``message.id`` and each repeating the
  message's ``usage``; tool results may already be written between two blocks of the same
  message. The blocks of one id are joined into one `AssistantMessage` (texts concatenated,
  tool_use blocks as calls) followed by one `ToolResults` with that message's results, and
  the usage is counted **once per id** (from its last record, which carries the final
  ``output_tokens``). ``input_tokens`` of a row is the whole prompt: Anthropic's
  ``input_tokens + cache_creation_input_tokens + cache_read_input_tokens``.
* **Turns.** A user record with text (a string, or text/image blocks) starts a turn. Records
  in a row with no reply in between (a slash command, its caveat and its output) form one
  input, joined by blank lines; their other ids are in the turn's
  ``metadata["merged_inputs"]``. Ids: the record ``uuid`` for inputs and results, the API
  ``message.id`` for replies.
* **Interruptions.** ``[Request interrupted by user…]`` markers are not inputs: they set the
  turn's ``metadata["interrupted"]``. The outcome stays ``"answered"`` because Claude Code
  keeps an interrupted turn's messages in its context (Harpe would drop them).
* **Thinking** blocks are not sent back to the model in later turns, so they are not message
  text; a turn's ``metadata["thinking"]`` keeps any non-empty thinking text.
* **Compactions.** A ``compact_boundary`` system record and the ``isCompactSummary`` user
  message after it become one `RecordedCompaction` (``summary``, ``pre_tokens``,
  ``trigger``), never a user turn. Its ``turn`` is the turn in progress when it happened
  (Claude Code compacts mid-turn, between tool rounds) and its ``message`` the number of
  that turn's messages before it (input included); ``metadata["compaction_boundaries"]``
  lists the boundary records' uuids.
* **Subagents.** Sidechain records inside a main session (older Claude Code) are skipped
  and counted in ``metadata["sidechain_records"]``. Subagent files in
  ``<session id>/subagents/agent-<id>.jsonl`` are listed in ``metadata["subagents"]`` with
  the ``tool_use_id`` of the Task call that ran them (``kind`` ``"compaction"`` for
  ``acompact`` agents). A subagent file can itself be loaded with `load_claude_code`.
* Tool calls whose result was never written get a failed placeholder result (counted in
  the turn's ``metadata["missing_tool_results"]``) so every call stays paired.
* **Times, for the prompt cache.** A turn's ``metadata["request_times"]`` has one entry per
  reply: when its request went out, in seconds since the epoch — the timestamp of the last
  record written before the reply's first record (the user input or tool result it
  answers), ``None`` when there is none. The conversation's ``metadata["cache_ttl"]`` is
  the TTL, in seconds, of the cache entries the session wrote (300 or 3600: Claude Code
  reports ``ephemeral_5m_input_tokens`` / ``ephemeral_1h_input_tokens``), when reported: of
  a session that wrote both, the one most replies wrote, and ``metadata["cache_ttl_replies"]``
  counts the replies that wrote each (``{"300": n, "3600": m}``), as every call is priced
  with the one TTL.
* **Cache resets.** When a background task's ``<task-notification>`` comes in as a prompt of
  its own (a user record, after the turn ended or the user interrupted; one that arrives
  mid-turn is queued and never written as a user record), the next request read only the
  system prompt and tools from the cache in 3 of the 4 such requests of the recorded
  sessions (Claude Code 2.1.39; the fourth read everything), and no other request within
  the TTL fell short. The same after ``/mcp`` (the MCP servers reconnected: their tools,
  sent after the built-in ones, are sent anew; the one recorded case read only the built-in
  part, 18,014 tokens, and wrote the rest). A turn's ``metadata["cache_resets"]`` lists the indices (as in
  ``request_times``) of those requests; the replay prices their messages as written again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Mapping

from ..conversation import Conversation, RecordedCompaction
from ..messages import AssistantMessage, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ._common import Format, Source, TurnBuilder, conversation, text_of

__all__ = ["load_claude_code", "claude_code_subagents"]

NAME = "claude_code"
RECORD_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "progress", "queue-operation", "file-history-snapshot",
     "attachment", "custom-title", "tag", "x-error"}
)
_INTERRUPT = "[Request interrupted by user"
_NOTIFICATION = "<task-notification>"
_MCP = "<command-name>/mcp</command-name>"


def load_claude_code(path: Any) -> Conversation:
    """Read a Claude Code session (or subagent) JSONL file."""
    return FORMAT.load(path)


def sniff(src: Source) -> str | None:
    """``None`` when the file is a Claude Code session, else why not."""
    if src.records is None:
        return src.records_error or "not JSON Lines"
    found = False
    for lineno, rec in src.records:
        if not isinstance(rec, Mapping) or not isinstance(rec.get("type"), str):
            return f"line {lineno}: a record with no 'type' string"
        if rec["type"] in ("user", "assistant"):
            if not isinstance(rec.get("message"), Mapping):
                return f"line {lineno}: a {rec['type']} record with no 'message' object"
            if "uuid" not in rec and "sessionId" not in rec:
                return f"line {lineno}: a {rec['type']} record with no 'uuid' or 'sessionId'"
            found = True
    if not found:
        return "no user or assistant record"
    return None


def claude_code_subagents(path: Any) -> list[Path]:
    """The subagent files Claude Code wrote for the session at ``path``
    (``<session id>/subagents/agent-*.jsonl`` beside it), sorted by name."""
    p = Path(path)
    folder = p.parent / p.stem / "subagents"
    return sorted(folder.glob("agent-*.jsonl")) if folder.is_dir() else []


def _seconds(stamp: Any) -> float | None:
    """An ISO timestamp (``2026-02-11T20:36:47.925Z``) in seconds since the epoch."""
    if not isinstance(stamp, str) or not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _usage(raw: Any, model: str) -> Usage | None:
    if not isinstance(raw, Mapping):
        return None
    fresh = int(raw.get("input_tokens") or 0)
    write = int(raw.get("cache_creation_input_tokens") or 0)
    read = int(raw.get("cache_read_input_tokens") or 0)
    return Usage(
        input_tokens=fresh + write + read,
        output_tokens=int(raw.get("output_tokens") or 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
        provider="anthropic",
        model=model,
    )


@dataclass
class _Round:
    """One API message and the results of its tool calls."""

    id: str
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    results: list[ToolResult] = field(default_factory=list)
    results_id: str = ""
    usage: Usage | None = None
    thinking: list[str] = field(default_factory=list)
    sent: float | None = None
    reset: bool = False  # its request went out with the cached messages invalidated
    ttls: tuple[bool, bool] = (False, False)  # it wrote 5-minute / 1-hour cache entries


class _Reader:
    def __init__(self, src: Source) -> None:
        self.src = src
        self.builder = TurnBuilder()
        self.round: _Round | None = None
        self.used_ids: set[str] = set()
        self.compactions: list[RecordedCompaction] = []
        self.boundaries: list[str] = []
        self.boundary: Mapping[str, Any] | None = None
        self.input_open = False  # the current turn has an input and no reply yet
        self.meta: dict[str, Any] = {}
        self.models: list[str] = []
        self.agent_links: dict[str, str] = {}  # agentId -> tool_use_id
        self.task_inputs: dict[str, Any] = {}  # tool_use_id -> Task input
        self.before: Any = None  # the timestamp of the record before the current one
        self.ttl_writes = {300: 0, 3600: 0}  # replies that wrote 5-minute / 1-hour cache entries
        self.notified = False  # a background task's notification came in as a prompt since the last reply

    # -- rounds -------------------------------------------------------------------------

    def flush(self) -> None:
        r, self.round = self.round, None
        if r is None:
            return
        self.builder.assistant(AssistantMessage("".join(r.texts), tuple(r.calls)), r.id, r.usage)
        turn = self.builder.current
        assert turn is not None
        times = turn.metadata.setdefault("request_times", [])
        times.append(r.sent)
        if r.reset:
            turn.metadata.setdefault("cache_resets", []).append(len(times) - 1)
        self.ttl_writes[300] += r.ttls[0]
        self.ttl_writes[3600] += r.ttls[1]
        if r.results:
            self.builder.results(ToolResults(tuple(r.results)), r.results_id)
        if r.thinking:
            turn = self.builder.current
            assert turn is not None
            turn.metadata.setdefault("thinking", []).extend(r.thinking)
        self.input_open = False

    def assistant(self, rec: Mapping[str, Any], lineno: int) -> None:
        msg = rec["message"]
        mid = str(msg.get("id") or rec.get("uuid") or f"line{lineno}")
        model = str(msg.get("model", ""))
        if model and model not in self.models:
            self.models.append(model)
        if self.round is None or self.round.id != mid:
            self.flush()
            rid = mid
            if rid in self.used_ids:  # an id seen again after another reply: keep ids unique
                n = 2
                while f"{mid}#{n}" in self.used_ids:
                    n += 1
                rid = f"{mid}#{n}"
            self.used_ids.add(rid)
            self.round = _Round(rid, sent=_seconds(self.before) or _seconds(rec.get("timestamp")),
                                reset=self.notified)
            self.notified = False
        r = self.round
        if "usage" in msg:
            r.usage = _usage(msg.get("usage"), model)
            split = msg["usage"].get("cache_creation") if isinstance(msg["usage"], Mapping) else None
            if isinstance(split, Mapping):
                r.ttls = (bool(split.get("ephemeral_5m_input_tokens")), bool(split.get("ephemeral_1h_input_tokens")))
        content = msg.get("content")
        if isinstance(content, str):
            r.texts.append(content)
            return
        if not isinstance(content, list):
            raise self.src.error(
                lineno, f"assistant message content must be a list or string, got {type(content).__name__}")
        for block in content:
            if not isinstance(block, Mapping):
                raise self.src.error(lineno, f"assistant content holds a {type(block).__name__}, expected objects")
            kind = block.get("type")
            if kind == "text":
                r.texts.append(str(block.get("text", "")))
            elif kind == "tool_use":
                call = ToolCall(str(block.get("id", "")), str(block.get("name", "")), block.get("input", {}))
                r.calls.append(call)
                if call.name in ("Task", "Agent"):
                    self.task_inputs[call.id] = call.input
            elif kind in ("thinking", "redacted_thinking"):
                text = str(block.get("thinking", ""))
                if text:
                    r.thinking.append(text)

    # -- user records -------------------------------------------------------------------

    def user(self, rec: Mapping[str, Any], lineno: int) -> None:
        content = rec["message"].get("content")
        uuid = str(rec.get("uuid") or f"line{lineno}")
        if rec.get("isCompactSummary"):
            text, _ = text_of(content)
            self.compaction(summary=text)
            return
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise self.src.error(lineno, f"user message content must be a list or string, got {type(content).__name__}")
        inputs: list[Any] = []
        for block in blocks:
            if not isinstance(block, Mapping):
                raise self.src.error(lineno, f"user content holds a {type(block).__name__}, expected objects")
            if block.get("type") == "tool_result":
                self.result(block, uuid, rec)
            else:
                inputs.append(block)
        if not inputs:
            return
        text, files = text_of(inputs)
        if text.startswith(_NOTIFICATION) or text.startswith(_MCP):
            self.notified = True
        if text.startswith(_INTERRUPT) and not files:
            self.flush()
            turn = self.builder.current
            if turn is not None:
                turn.metadata["interrupted"] = True
            return
        self.flush()
        turn = self.builder.current
        if self.input_open and turn is not None and not turn.metadata.get("synthetic_input"):
            prev = turn.input
            joined = f"{prev.text}\n\n{text}" if prev.text and text else prev.text or text
            turn.input = UserInput(joined, prev.attachments + files)
            turn.metadata.setdefault("merged_inputs", []).append(uuid)
            return
        meta: dict[str, Any] = {}
        if rec.get("timestamp"):
            meta["timestamp"] = rec["timestamp"]
        if rec.get("isMeta"):
            meta["meta_input"] = True
        self.builder.user(UserInput(text, files), uuid, **meta)
        self.input_open = True

    def result(self, block: Mapping[str, Any], uuid: str, rec: Mapping[str, Any]) -> None:
        text, files = text_of(block.get("content"))
        result = ToolResult(str(block.get("tool_use_id", "")), text, files, success=not block.get("is_error", False))
        extra = rec.get("toolUseResult")
        if isinstance(extra, Mapping) and extra.get("agentId"):
            self.agent_links[str(extra["agentId"])] = result.id
        if self.round is None:
            # a result with no reply before it (e.g. right after a compaction): keep it
            self.builder.results(ToolResults((result,)), uuid)
            self.input_open = False
            return
        if not self.round.results:
            self.round.results_id = uuid
        self.round.results.append(result)

    # -- compactions --------------------------------------------------------------------

    def compaction(self, summary: str) -> None:
        self.flush()
        self.input_open = False  # an input after a compaction is a new turn, not a continuation
        b = self.boundary or {}
        self.boundary = None
        meta = b.get("compactMetadata") if isinstance(b.get("compactMetadata"), Mapping) else {}
        turn = self.builder.current
        index = max(len(self.builder) - 1, 0)
        self.compactions.append(
            RecordedCompaction(
                turn=index,
                summary=summary,
                pre_tokens=int(meta["preTokens"]) if isinstance(meta.get("preTokens"), (int, float)) else None,
                trigger=str(meta.get("trigger", "")),
                message=(1 + len(turn.messages)) if turn is not None else 0,
            )
        )
        self.boundaries.append(str(b.get("uuid", "")))

    # -- driver -------------------------------------------------------------------------

    def read(self) -> Conversation:
        src = self.src
        assert src.records is not None
        main = any(
            isinstance(rec, Mapping) and rec.get("type") in ("user", "assistant") and rec.get("isSidechain") is False
            for _, rec in src.records
        )
        skipped = 0
        first: Mapping[str, Any] | None = None
        last_time = ""
        for lineno, rec in src.records:
            kind = rec.get("type")
            if kind in ("user", "assistant") and main and rec.get("isSidechain"):
                skipped += 1
                continue
            if kind in ("user", "assistant", "system") and first is None:
                first = rec
            if isinstance(rec.get("timestamp"), str):
                self.before, last_time = last_time, rec["timestamp"]
            if kind == "assistant":
                if not isinstance(rec.get("message"), Mapping):
                    raise src.error(lineno, "an assistant record with no 'message' object")
                self.assistant(rec, lineno)
            elif kind == "user":
                if not isinstance(rec.get("message"), Mapping):
                    raise src.error(lineno, "a user record with no 'message' object")
                self.user(rec, lineno)
            elif kind == "system" and rec.get("subtype") == "compact_boundary":
                if self.boundary is not None:  # a boundary whose summary was never written
                    self.compaction(summary="")
                self.flush()
                self.boundary = rec
            elif kind == "progress":
                data = rec.get("data")
                if isinstance(data, Mapping) and data.get("agentId") and rec.get("parentToolUseID"):
                    self.agent_links.setdefault(str(data["agentId"]), str(rec["parentToolUseID"]))
        self.flush()
        if self.boundary is not None:
            self.compaction(summary="")
        first = first or {}
        ident = str(first.get("agentId") or first.get("sessionId") or src.path.stem) if not main else str(
            first.get("sessionId") or src.path.stem
        )
        meta: dict[str, Any] = {
            "session_id": str(first.get("sessionId", "")),
            "cwd": str(first.get("cwd", "")),
            "version": str(first.get("version", "")),
            "git_branch": str(first.get("gitBranch", "")),
            "models": list(self.models),
            "started": str(first.get("timestamp", "")),
            "ended": last_time,
            "sidechain": not main,
        }
        if first.get("agentId"):
            meta["agent_id"] = str(first["agentId"])
        if skipped:
            meta["sidechain_records"] = skipped
        if self.boundaries:
            meta["compaction_boundaries"] = self.boundaries
        if any(self.ttl_writes.values()):
            meta["cache_ttl"] = max(self.ttl_writes, key=self.ttl_writes.__getitem__)
        if all(self.ttl_writes.values()):  # both kinds: every call is priced with the first
            meta["cache_ttl_replies"] = {str(ttl): n for ttl, n in self.ttl_writes.items()}
        subagents = []
        for p in claude_code_subagents(src.path):
            agent_id = p.stem[len("agent-"):]
            tool_use_id = self.agent_links.get(agent_id, "")
            task = self.task_inputs.get(tool_use_id) or {}
            subagents.append({
                "agent_id": agent_id,
                "path": str(p),
                "kind": "compaction" if agent_id.startswith("acompact") else "task",
                "tool_use_id": tool_use_id,
                "subagent_type": str(task.get("subagent_type", "")) if isinstance(task, Mapping) else "",
                "size": p.stat().st_size,
            })
        if subagents:
            meta["subagents"] = subagents
        return conversation(self.builder.build(), id=ident, source=src.path, format=NAME, metadata=meta,
                            compactions=self.compactions)


FORMAT = Format(NAME, "a Claude Code session", sniff, lambda src, _item, _k: _Reader(src).read())
