"""Codex CLI sessions (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``).

Each line is ``{"timestamp", "type", "payload"}``: ``session_meta`` (id, cwd, version),
``response_item`` (an OpenAI Responses API item: ``message``, ``reasoning``,
``function_call``/``custom_tool_call``/``local_shell_call`` and their ``*_output``),
``event_msg`` (UI events; ``token_count`` carries the usage of the last model response),
``turn_context`` (the model in use) and ``compacted`` (a compaction and its summary).
Older rollouts have no envelope: a first line ``{"id", "timestamp", "instructions"}``, then
bare response items and ``{"record_type": "state"}`` lines. Both are read.

Mapping: user ``message`` items start turns (items in a row with no reply in between —
the environment context and the request — form one input); ``developer``/``system``
messages form the system prompt; consecutive assistant items (text and tool calls) form
one `AssistantMessage`, their outputs one `ToolResults`. ``reasoning`` items are not
message text (their summaries go to the turn's ``metadata["reasoning"]``). Each
``token_count`` event gives the preceding reply its usage row (``input_tokens`` already
counts the cached part). Ids are ``"l<line>"`` of the item's line. A ``compacted`` record
is placed after the messages its turn held (Codex compacts between model calls), with the
last call's input as its size; ``model_context_window`` (``task_started``, ``token_count``)
becomes ``metadata["context_window"]``: the window Codex shows, its *effective* window, 95% of
the model's (``effective_context_window_percent`` of every gpt-5.x-codex model in Codex's
``models.json``), so the model's own, that window ÷ 0.95, is ``metadata["model_window"]``.
Written from Codex CLI's rollout format (0.2x–0.4x) and tested on hand-written fixtures.
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from ..conversation import Conversation, RecordedCompaction
from ..messages import AssistantMessage, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ._common import Format, Source, TurnBuilder, conversation, parse_arguments, text_of

__all__ = ["load_codex"]

NAME = "codex"
_ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})
_EFFECTIVE_PERCENT = 95  # the model_context_window a rollout states, in % of the model's window


def load_codex(path: Any) -> Conversation:
    """Read a Codex CLI rollout file."""
    return FORMAT.load(path)


def sniff(src: Source) -> str | None:
    """``None`` when the file is a Codex CLI rollout, else why not."""
    if src.records is None:
        return src.records_error or "not JSON Lines"
    lineno, first = src.records[0]
    if not isinstance(first, Mapping):
        return f"line {lineno}: not a JSON object"
    if first.get("type") in _ENVELOPE_TYPES and isinstance(first.get("payload"), Mapping):
        for lineno, rec in src.records:
            if not isinstance(rec, Mapping) or "type" not in rec or "payload" not in rec:
                return f"line {lineno}: not a {{'timestamp', 'type', 'payload'}} record"
        return None
    if "id" in first and "timestamp" in first and "instructions" in first:
        for lineno, rec in src.records[1:]:
            if not isinstance(rec, Mapping) or ("type" not in rec and "record_type" not in rec):
                return f"line {lineno}: not a response item (no 'type')"
        return None
    return (f"line {lineno}: neither a {{'type', 'payload'}} record nor a session header "
            "{'id', 'timestamp', 'instructions'}")


def _output_text(raw: Any) -> tuple[str, bool]:
    """A tool output's text and success. Codex stores shell output as a JSON string
    ``{"output": ..., "metadata": {"exit_code": ...}}``."""
    if isinstance(raw, Mapping):
        text, _ = text_of(raw.get("content") if "content" in raw else raw.get("output", ""))
        return text, raw.get("success", True) is not False
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except json.JSONDecodeError:
            return raw, True
        if isinstance(parsed, Mapping) and "output" in parsed:
            meta = parsed.get("metadata") if isinstance(parsed.get("metadata"), Mapping) else {}
            code = meta.get("exit_code", 0)
            return str(parsed["output"]), code in (0, None)
        return raw, True
    text, _ = text_of(raw)
    return text, True


class _State:
    def __init__(self) -> None:
        self.builder = TurnBuilder()
        self.texts: list[str] = []
        self.calls: list[ToolCall] = []
        self.reply_id = ""
        self.results: list[ToolResult] = []
        self.results_id = ""
        self.usage: dict[str, Usage] = {}
        self.replies: list[str] = []
        self.input_open = False

    def flush_reply(self) -> None:
        if self.reply_id:
            self.builder.assistant(AssistantMessage("".join(self.texts), tuple(self.calls)), self.reply_id)
            self.replies.append(self.reply_id)
            self.texts, self.calls, self.reply_id = [], [], ""
            self.input_open = False

    def flush_results(self) -> None:
        if self.results:
            self.builder.results(ToolResults(tuple(self.results)), self.results_id)
            self.results, self.results_id = [], ""

    def flush(self) -> None:
        self.flush_reply()
        self.flush_results()


def _read(src: Source) -> Conversation:
    assert src.records is not None
    st = _State()
    system: list[str] = []
    meta: dict[str, Any] = {}
    models: list[str] = []
    compactions: list[RecordedCompaction] = []
    last_total: Any = None
    last_input: int | None = None  # the last call's input tokens: the size a compaction starts from
    records = src.records
    enveloped = isinstance(records[0][1], Mapping) and "payload" in records[0][1]
    for lineno, rec in records:
        if enveloped:
            kind, payload = rec.get("type"), rec.get("payload")
            if not isinstance(payload, Mapping):
                raise src.error(lineno, f"'payload' must be an object, got {type(payload).__name__}")
        else:
            if lineno == records[0][0]:
                meta.update({"session_id": str(rec.get("id", "")), "started": str(rec.get("timestamp", ""))})
                if rec.get("instructions"):
                    system.append(str(rec["instructions"]))
                continue
            if rec.get("record_type"):
                continue
            kind, payload = "response_item", rec
        if kind == "session_meta":
            meta.update({"session_id": str(payload.get("id", "")), "cwd": str(payload.get("cwd", "")),
                         "version": str(payload.get("cli_version", "")), "started": str(payload.get("timestamp", ""))})
            if payload.get("instructions"):
                system.append(str(payload["instructions"]))
        elif kind == "turn_context":
            model = payload.get("model")
            if model and model not in models:
                models.append(str(model))
        elif kind == "compacted":
            st.flush()
            st.input_open = False
            # Codex compacts inline, between a turn's model calls: after the messages held so far
            turn = st.builder.current
            held = 1 + len(turn.messages) if turn is not None and turn.messages else None
            compactions.append(RecordedCompaction(turn=max(len(st.builder) - 1, 0), message=held,
                                                  summary=str(payload.get("message", "")),
                                                  pre_tokens=last_input))
        elif kind == "event_msg":
            window = payload.get("model_context_window")
            if isinstance(payload.get("info"), Mapping):
                window = payload["info"].get("model_context_window") or window
            if isinstance(window, int) and window > 0:
                meta["context_window"] = window
                meta["model_window"] = -(-window * 100 // _EFFECTIVE_PERCENT)
            if payload.get("type") == "token_count" and isinstance(payload.get("info"), Mapping):
                info = payload["info"]
                last = info.get("last_token_usage")
                total = info.get("total_token_usage")
                if isinstance(last, Mapping) and total != last_total:
                    last_total = total
                    st.flush_reply()
                    last_input = int(last.get("input_tokens") or 0) or last_input
                    if st.replies:
                        usage = Usage(
                            input_tokens=int(last.get("input_tokens") or 0),
                            output_tokens=int(last.get("output_tokens") or 0),
                            cache_read_tokens=int(last.get("cached_input_tokens") or 0),
                            provider="openai", model=models[-1] if models else "",
                        )
                        st.usage.setdefault(st.replies[-1], usage)
        elif kind == "response_item":
            _item(src, st, payload, lineno, system)
    st.flush()
    builder = st.builder
    # usage rows are attached per reply id now that every reply is known
    for turn in builder._turns:
        ids = [i for m, i in zip(turn.messages, turn.ids) if isinstance(m, AssistantMessage)]
        turn.usage = [st.usage.get(i) for i in ids]
    if models:
        meta["models"] = models
    return conversation(builder.build(), id=meta.get("session_id") or src.path.stem, source=src.path, format=NAME,
                        metadata=meta, compactions=compactions, system="\n\n".join(system))


def _item(src: Source, st: _State, item: Mapping[str, Any], lineno: int, system: list[str]) -> None:
    kind = item.get("type")
    mid = f"l{lineno}"
    if kind == "message":
        role = item.get("role")
        text, files = text_of(item.get("content"))
        if role == "user":
            st.flush()
            turn = st.builder.current
            if st.input_open and turn is not None:
                turn.input = UserInput(f"{turn.input.text}\n\n{text}" if turn.input.text else text,
                                       turn.input.attachments + files)
                turn.metadata.setdefault("merged_inputs", []).append(mid)
            else:
                st.builder.user(UserInput(text, files), mid)
                st.input_open = True
        elif role in ("developer", "system"):
            system.append(text)
        elif role == "assistant":
            st.flush_results()
            if not st.reply_id:
                st.reply_id = mid
            st.texts.append(text)
        else:
            raise src.error(lineno, f"unknown message role {role!r}; expected user, assistant, developer or system")
    elif kind in _CALLS:
        st.flush_results()
        if not st.reply_id:
            st.reply_id = mid
        call_id = str(item.get("call_id") or item.get("id") or mid)
        if kind == "function_call":
            args = parse_arguments(item.get("arguments"))
        elif kind == "custom_tool_call":
            args = {"input": item.get("input", "")}
        else:
            args = dict(item.get("action") or {})
        st.calls.append(ToolCall(call_id, str(item.get("name") or kind), args))
    elif kind in _OUTPUTS:
        st.flush_reply()
        text, ok = _output_text(item.get("output"))
        if not st.results:
            st.results_id = mid
        st.results.append(ToolResult(str(item.get("call_id", "")), text, success=ok))
    elif kind == "reasoning":
        summary = item.get("summary") or []
        texts = [s.get("text", "") for s in summary if isinstance(s, Mapping) and s.get("text")]
        if texts:
            turn = st.builder.current
            if turn is not None:
                turn.metadata.setdefault("reasoning", []).extend(texts)


FORMAT = Format(NAME, "a Codex CLI rollout", sniff, lambda src, _item, _k: _read(src))
