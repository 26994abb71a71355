"""Writing Harpe-compatible journals: `JsonlLogger` appends G5 lines exactly as Python's
default ``json.dumps`` writes them, one ``os.write`` per line on an ``O_APPEND`` file (whole
lines even with several threads or processes); `TurnLog` writes one turn's messages,
terminator, usage and model events inside its ``harpe.turn.id`` scope, and nests subagent
turns under a ``harpe.tools.call`` scope."""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import threading
import time as _time
from pathlib import Path
from typing import Any, Callable, Mapping

from ..errors import JournalError
from ..messages import AssistantMessage, Message, ToolResults, Usage, UserInput
from ._codec import encode_message
from ._envelope import format_time
from ._events import (ANSWERED, CALL_SCOPE, FAILED, INTERRUPTED, MESSAGE, MODEL_FAILED, MODEL_GAVE_UP,
                      MODEL_REPLIED, MODEL_RETRIED, MODEL_SENT, TURN_PREFIX, USAGE, Outcome)
from ._problems import show

__all__ = ["JsonlLogger", "TurnLog"]

_HEX16 = re.compile(r"[0-9a-f]{16}")


def _check_value(value: Any, where: str) -> None:
    """Harpe's Value has no null and no NaN; keys are strings."""
    t = type(value)
    if t is str or t is int or t is bool:
        return
    if t is float:
        if not math.isfinite(value):
            raise JournalError(f"{where} is {value!r}; JSON (and Harpe's Value) has no NaN or infinity")
        return
    if t is dict:
        for k, v in value.items():
            if type(k) is not str:
                raise JournalError(f"{where} has a non-string key {k!r}; Harpe maps have string keys")
            _check_value(v, f"{where}[{k!r}]")
        return
    if t is list or t is tuple:
        for i, v in enumerate(value):
            _check_value(v, f"{where}[{i}]")
        return
    if value is None:
        raise JournalError(f"{where} is None; Harpe's Value has no null — omit the field instead")
    if isinstance(value, (str, int, float, dict, list, tuple)):  # subclasses (e.g. enums)
        return
    raise JournalError(f"{where} is {show(value)}; a journal value is a str, int, float, bool, list or dict")


class _Sink:
    """The shared file of a logger and its scoped children: one lock, one O_APPEND fd."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.fd: int | None = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None

    def __del__(self) -> None:  # the last logger sharing the file is gone
        if getattr(self, "fd", None) is not None:
            os.close(self.fd)


class JsonlLogger:
    """Append G5 journal records to ``path`` (Harpe's ``JsonlLogger``).

    Each record is one line, ``json.dumps({"time", "event", "fields", "context"}) + "\\n"``
    with Python's default ``json.dumps`` (``", "``/``": "`` separators, non-ASCII
    ``\\u``-escaped), ``time`` in RFC 3339 UTC with microseconds and ``Z``, ``context``
    outermost scope first. The parent directory is created; the file is opened for
    appending and every record is written with a single ``os.write`` under a lock, so it
    reaches the file immediately (no buffering), threads never interleave, and processes
    appending to the same file produce only whole lines.

    `with_context` returns a logger that writes to the same file inside one more scope.
    ``clock`` (epoch seconds) is for tests. Use as a context manager or call `close`.
    """

    def __init__(self, path: Any, *, clock: Callable[[], float] | None = None) -> None:
        self.path = Path(os.fspath(path))
        self.context: tuple[str, ...] = ()
        self._clock = clock or _time.time
        try:
            self._sink = _Sink(self.path)
        except IsADirectoryError:
            raise JournalError("is a directory; a journal is a file", path=self.path) from None

    def with_context(self, *scopes: str) -> "JsonlLogger":
        """A logger on the same file whose records carry ``scopes`` inside this one's
        (``"key=id"`` strings, e.g. ``"app.session=42"``)."""
        for scope in scopes:
            if not isinstance(scope, str) or "=" not in scope:
                raise ValueError(f"a scope is a 'key=id' string, but {scope!r} was passed")
        child = object.__new__(JsonlLogger)
        child.path = self.path
        child.context = self.context + tuple(scopes)
        child._clock = self._clock
        child._sink = self._sink
        return child

    def log(self, event: str, fields: Mapping[str, Any] | None = None) -> None:
        """Append one record. ``fields`` values are Harpe Values (str, int, float, bool,
        lists and string-keyed dicts of them); ``None`` is rejected."""
        if not isinstance(event, str) or not event:
            raise ValueError(f"event must be a non-empty dotted name, but {event!r} was passed")
        body = {} if fields is None else dict(fields)
        _check_value(body, f"fields of {event}")
        sink = self._sink
        with sink.lock:
            if sink.fd is None:
                raise JournalError("the logger is closed; open a new JsonlLogger to append", path=self.path)
            record = {"time": format_time(self._clock()), "event": event, "fields": body,
                      "context": list(self.context)}
            data = (json.dumps(record) + "\n").encode("utf-8")
            view = memoryview(data)
            while view:
                written = os.write(sink.fd, view)
                view = view[written:]

    def info(self, event: str, message: str) -> None:
        """Harpe's ``Logger.info``: a diagnostic record ``{"info": message}``."""
        self.log(event, {"info": message})

    def warn(self, event: str, message: str) -> None:
        """A diagnostic record ``{"warning": message}``."""
        self.log(event, {"warning": message})

    def error(self, event: str, message: str) -> None:
        """A diagnostic record ``{"error": message}``."""
        self.log(event, {"error": message})

    def close(self) -> None:
        """Close the file (for this logger and every logger made by `with_context`)."""
        self._sink.close()

    @property
    def closed(self) -> bool:
        return self._sink.fd is None

    def __enter__(self) -> "JsonlLogger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"JsonlLogger({str(self.path)!r}, context={list(self.context)!r})"


class TurnLog:
    """Write one turn (Harpe's ``TurnLog``) inside its ``harpe.turn.id=<16 hex>`` scope.

    Lifecycle, as ``Agent.ask`` writes it: `user` once, first; then `assistant` and
    `tool_results` messages; then exactly one terminator (`answered`, `interrupted`,
    `failed`). Usage and model events (`usage`, `model_sent`, `model_replied`,
    `model_failed`, `model_retried`, `model_gave_up`) may be written at any time. A
    subagent's turn run inside a tool call is `nested` under ``harpe.tools.call=ID``.
    Misuse (a message before the user input or after the terminator, two terminators)
    raises `JournalError`.
    """

    def __init__(self, logger: JsonlLogger, turn_id: str | None = None) -> None:
        if not isinstance(logger, JsonlLogger):
            raise TypeError(f"TurnLog writes through a JsonlLogger, got {show(logger)}")
        if turn_id is None:
            turn_id = secrets.token_hex(8)
        if not isinstance(turn_id, str) or not _HEX16.fullmatch(turn_id):
            raise ValueError(f"turn_id must be 16 lowercase hex digits (secrets.token_hex(8)), got {turn_id!r}")
        self.id = turn_id
        self.logger = logger.with_context(f"{TURN_PREFIX}{turn_id}")
        self.outcome: Outcome | None = None
        self._has_user = False

    # -- messages and terminators ------------------------------------------------------------

    def _check_open(self, what: str) -> None:
        if self.outcome is not None:
            raise JournalError(f"turn {self.id} already ended ({self.outcome}); cannot write {what}")

    def user(self, input: UserInput) -> None:
        """The turn's user input (written once, first)."""
        if not isinstance(input, UserInput):
            raise TypeError(f"user() takes a UserInput, got {show(input)}")
        self._check_open("a user message")
        if self._has_user:
            raise JournalError(f"turn {self.id} already has its user message; a turn has one input")
        self.logger.log(MESSAGE, encode_message(input))
        self._has_user = True

    def _produced(self, message: Message, kind: type, what: str) -> None:
        if not isinstance(message, kind):
            raise TypeError(f"{what}() takes a {kind.__name__}, got {show(message)}")
        self._check_open(f"a {what} message")
        if not self._has_user:
            raise JournalError(f"turn {self.id}: write the user message first (user()), then {what}")
        self.logger.log(MESSAGE, encode_message(message))

    def assistant(self, message: AssistantMessage) -> None:
        """A model reply: its text exactly as returned and its tool calls."""
        self._produced(message, AssistantMessage, "assistant")

    def tool_results(self, message: ToolResults) -> None:
        """All results of one tool round, in call order."""
        self._produced(message, ToolResults, "tool_results")

    def message(self, message: Message) -> None:
        """Write any message: `user`, `assistant` or `tool_results` by its type."""
        if isinstance(message, UserInput):
            self.user(message)
        elif isinstance(message, AssistantMessage):
            self.assistant(message)
        else:
            self.tool_results(message)

    def _end(self, outcome: Outcome, event: str, fields: dict[str, Any]) -> None:
        self._check_open(f"{outcome}")
        if not self._has_user:
            raise JournalError(f"turn {self.id}: write the user message first (user()), then end the turn")
        self.logger.log(event, fields)
        self.outcome = outcome

    def answered(self) -> None:
        """End the turn: the model answered (``harpe.turn.answered``)."""
        self._end("answered", ANSWERED, {})

    def interrupted(self) -> None:
        """End the turn: cancelled (``harpe.turn.interrupted``; readers drop its messages)."""
        self._end("interrupted", INTERRUPTED, {})

    def failed(self, error: str = "") -> None:
        """End the turn: gave up (``harpe.turn.failed {"error": detail}``, ``""`` when none)."""
        if not isinstance(error, str):
            raise TypeError(f"failed() takes an error detail string, got {show(error)}")
        self._end("failed", FAILED, {"error": error})

    @property
    def ended(self) -> bool:
        return self.outcome is not None

    # -- usage and model events (§2.5) -------------------------------------------------------

    def usage(self, usage: Usage) -> None:
        """``harpe.metering.usage`` for one model reply (write it right after
        `model_replied`, before the reply's `assistant` message)."""
        if not isinstance(usage, Usage):
            raise TypeError(f"usage() takes a Usage, got {show(usage)}")
        self.logger.log(USAGE, {
            "provider": usage.provider, "model": usage.model, "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens, "cacheReadTokens": usage.cache_read_tokens,
            "cacheWriteTokens": usage.cache_write_tokens,
        })

    def model_sent(self, provider: str, model: str) -> None:
        """``harpe.model.sent`` before each attempt."""
        self.logger.log(MODEL_SENT, {"provider": provider, "model": model})

    def model_replied(self, provider: str, model: str) -> None:
        """``harpe.model.replied`` when a reply arrived."""
        self.logger.log(MODEL_REPLIED, {"provider": provider, "model": model})

    def model_failed(self, error: str, *, provider: str, model: str, retryable: bool) -> None:
        """``harpe.model.failed``: an attempt failed (``error`` = the detail)."""
        self.logger.log(MODEL_FAILED, {"error": error, "provider": provider, "model": model,
                                       "retryable": bool(retryable)})

    def model_retried(self, warning: str, *, attempt: int, retry_in_seconds: float) -> None:
        """``harpe.model.retried``: a transient failure; retrying after a delay."""
        self.logger.log(MODEL_RETRIED, {"warning": warning, "attempt": int(attempt),
                                        "retryInSeconds": float(retry_in_seconds)})

    def model_gave_up(self, error: str, *, retries: int) -> None:
        """``harpe.model.gaveUp``: no more attempts (``retries`` 0 for a fatal error)."""
        self.logger.log(MODEL_GAVE_UP, {"error": error, "retries": int(retries)})

    # -- nesting ---------------------------------------------------------------------------

    def tool_logger(self, call_id: str) -> JsonlLogger:
        """A logger inside this turn's ``harpe.tools.call=<call_id>`` scope, for what a
        tool handler logs."""
        if not isinstance(call_id, str) or not call_id:
            raise ValueError(f"call_id must be the provider's tool-call id, but {call_id!r} was passed")
        return self.logger.with_context(f"{CALL_SCOPE}={call_id}")

    def nested(self, call_id: str, turn_id: str | None = None) -> "TurnLog":
        """A subagent's turn run inside tool call ``call_id`` of this turn."""
        return TurnLog(self.tool_logger(call_id), turn_id)

    def __repr__(self) -> str:
        return f"TurnLog({self.id}, {self.outcome or 'open'})"
