"""Read every generation of Harpe journals, and write Harpe-compatible ones.

A *journal* is a JSONL file: one record per line (the Harpe specification,
``docs/harpe-format.md`` §1–§3, §5). This module reads all of its generations, turns the
driver's request/response brackets into `TurnRecord` s exactly as Harpe's
``Journal.records`` does, rebuilds the model history Harpe resumes from (`Journal.load`),
attributes token usage to turns (`Journal.usage`), and writes new journals in the newest
format (`JsonlLogger`, `Journal`, `TurnLog`).

Reading
-------
Generations are detected **per line** (§1.5, §1.6):

========== ====================================================================
G1         flat ``{"time", "category", <fields>}``
G2         flat ``{"time", "event", <fields>}``
G3         flat with a ``"context"`` list of values, innermost scope first
G4         ``{"time", "event", "fields", "context"}`` with object scopes, innermost first
G4b / G5   the same four keys with string scopes (``"harpe.turn.id=…"``); G4b wrote
           them innermost first, G5 outermost first — one line cannot tell them apart
SessionLog pre-Journal message lines ``{"time": <epoch float>, "role": …}``
========== ====================================================================

Every line becomes an `Entry` in one normal form: ``time`` an aware UTC ``datetime``;
``event`` the dotted name (``category`` for G1; SessionLog lines get the synthetic
``"harpe.sessionlog.message"``); ``fields`` the record's fields (for flat lines, every key
but ``time``/``event``/``category`` and a G3 scope list); ``context`` a tuple of scope
strings ``"key=value"``, **outermost first** where the generation's order is known (G3
and G4 lists are reversed, each object scope becomes one string per key). String scopes
(G4b/G5) are kept as written, because their order cannot be known from one line; the
turn logic below never depends on that order. (G3 omitted an empty context, so its lines
without scopes read as G2; `Records.generations` reports G4b instead of G5 when nested
turns show innermost-first scopes.) JSON ``null`` anywhere in the envelope or
in a field Harpe reads is treated as absent, and integral floats are accepted wherever
Harpe wrote an integer.

Turns are read exactly as Harpe's ``Journal.records`` (§3.2): positional bracket pairing,
everything outside a bracket ignored, a second request discarding the open span, a
bracket without a turn yielding nothing. Inside a bracket the turn is selected by turn
id (§3.3) with the specification's **order-agnostic** rule, which equals Harpe's for G5
and also reads G4b: among the bracket's records that carry a turn scope, take the
shortest list of turn ids (the first one of that length); a record belongs to the turn
iff its turn-id list equals it. Records of nested (subagent) turns have longer lists and
are excluded. Brackets whose records carry no turn scope at all (G1–G3) use Harpe's
legacy depth counting (§3.4). A turn without a terminator reads as interrupted, with its
messages kept (Harpe's "externally terminated turn").

Each file is read the way the Harpe version that wrote it resumed it:

* a journal with at least one ``harpe.turn.request`` is read by brackets; anything before
  its first bracket contributes nothing (Harpe ≥ 0.5);
* a journal without brackets but with ``harpe.turn.started`` records is read with the
  0.4-era fold (§3.7): every ``started`` opens a turn and an unterminated one reads as
  interrupted; its records have ``request is None``;
* a SessionLog file (§1.6) has no outcomes: every line is a message; its records start a
  turn at each user message and read as answered, so the history holds every message.

`Records.reader` says which rule was used. Usage rows (``harpe.metering.usage``, or the
older ``harpe.model`` / ``harpe.models.replied`` / ``harpe.model.replied`` events when
they carry token fields, §2.5) are attributed to the turn whose turn-id list they carry;
a record's ``usage`` holds its own model replies and ``nested_usage`` every other usage
row inside its bracket (subagents).

Bad input
---------
``errors="strict"`` (the default) raises `JournalError` naming the file, the line, the
event when known, what was expected and how to fix it. ``errors="skip"`` skips a bad line
and records it in ``problems`` (`Problem` s with line and reason). Things Harpe itself
drops by design — a fragment without a response, a response without a request, a
discarded span — are never errors; they are listed in ``notes``. A torn final line (no
trailing newline, not valid JSON: the writer died mid-write) is a `TornLineWarning` and a
note in both modes. Files are streamed line by line; only the open bracket's relevant
records are held in memory, so a line of any length and a file of any size can be read.

What is checked: every line's envelope (a JSON object; ``time``, ``event``, ``fields``
and ``context`` of the right types; a valid time) and everything `Journal.records`
decodes — the turn's messages and the usage rows inside brackets — as strictly as
Harpe's newest decoder for four-key lines (every key present with its type) and
leniently for older generations (missing keys default to ``""``/``0``/``[]``,
``success`` to true, ``media`` read as attachments). A present key of the wrong type is
an error in every generation. `Journal.check` also decodes what `records` skips (subagent
turns, records outside brackets). Lines only Python's ``json`` reads (``NaN``, integers
beyond 64 bits — orjson would silently turn those into floats) are read exactly.

Writing
-------
`JsonlLogger` appends G5 lines exactly as Python's default ``json.dumps`` writes them,
one ``os.write`` per line on an ``O_APPEND`` file (whole lines even with several threads
or processes). `Journal` writes the driver's brackets; `TurnLog` writes one turn's
messages, terminator, usage and model events inside its ``harpe.turn.id`` scope, and
nests subagent turns under a ``harpe.tools.call`` scope.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import sys
import threading
import time as _time
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence

import orjson

from .context import truncate
from .errors import JournalError, MissingJournalError
from .messages import AssistantMessage, Attachment, Message, ToolCall, ToolResult, ToolResults, Usage, UserInput

if TYPE_CHECKING:  # pandas is imported only by Journal.usage
    import pandas

__all__ = [
    "Entry",
    "TurnData",
    "TurnRecord",
    "Problem",
    "Records",
    "RecordStream",
    "EntryReader",
    "TornLineWarning",
    "read_entries",
    "encode_message",
    "decode_message",
    "Journal",
    "JsonlLogger",
    "TurnLog",
    "format_time",
    "USAGE_COLUMNS",
    "REQUEST",
    "RESPONSE",
    "MESSAGE",
    "STARTED",
    "ANSWERED",
    "INTERRUPTED",
    "FAILED",
    "USAGE",
    "TURN_SCOPE",
    "CALL_SCOPE",
]

# --- event names and scopes (§2) ----------------------------------------------------------

REQUEST = "harpe.turn.request"
RESPONSE = "harpe.turn.response"
MESSAGE = "harpe.turn.message"
STARTED = "harpe.turn.started"
ANSWERED = "harpe.turn.answered"
INTERRUPTED = "harpe.turn.interrupted"
FAILED = "harpe.turn.failed"
USAGE = "harpe.metering.usage"
MODEL_SENT = "harpe.model.sent"
MODEL_REPLIED = "harpe.model.replied"
MODEL_FAILED = "harpe.model.failed"
MODEL_RETRIED = "harpe.model.retried"
MODEL_GAVE_UP = "harpe.model.gaveUp"
SESSION_MESSAGE = "harpe.sessionlog.message"
"""Synthetic event of a SessionLog line (Harpe never wrote it; the reader names them so)."""

TURN_SCOPE = "harpe.turn.id"
CALL_SCOPE = "harpe.tools.call"
_TURN_PREFIX = TURN_SCOPE + "="
_TP_LEN = len(_TURN_PREFIX)

Outcome = Literal["answered", "interrupted", "failed"]
_OUTCOMES = ("answered", "interrupted", "failed")
_TERMINATOR_OUTCOME = {ANSWERED: "answered", INTERRUPTED: "interrupted", FAILED: "failed"}
_LEGACY_USAGE = ("harpe.model", "harpe.models.replied", MODEL_REPLIED)
_ERRORS = ("strict", "skip")
_GENERATIONS = ("G1", "G2", "G3", "G4", "G4b", "G5", "SessionLog")

# event -> kind, the one dictionary lookup the hot path makes per line
_K_REQUEST, _K_RESPONSE, _K_MESSAGE, _K_STARTED, _K_END, _K_USAGE, _K_OLD_USAGE = 1, 2, 3, 4, 5, 6, 7
_KIND = {
    REQUEST: _K_REQUEST,
    RESPONSE: _K_RESPONSE,
    MESSAGE: _K_MESSAGE,
    STARTED: _K_STARTED,
    ANSWERED: _K_END,
    INTERRUPTED: _K_END,
    FAILED: _K_END,
    USAGE: _K_USAGE,
    **{name: _K_OLD_USAGE for name in _LEGACY_USAGE},
}

_FIX = 'fix or delete the line, or read with errors="skip" to skip bad lines'
_EXAMPLE_TIME = '"2026-09-03T10:15:02.118204Z"'
_HEX16 = re.compile(r"[0-9a-f]{16}")


class TornLineWarning(UserWarning):
    """The journal's last line is incomplete (the writer stopped mid-line); it was ignored."""


class _Bad(Exception):
    """A line is malformed; ``reason`` says what was expected. Located by the caller."""

    def __init__(self, reason: str, event: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.event = event


class _Inexact(_Bad):
    """A number orjson could not read exactly; the line is re-read with ``json``."""


_EXACT_LIMIT = 2.0 ** 63


def _inexact(value: Any) -> bool:
    """Whether ``value`` holds a float orjson may have made from an integer literal outside
    the 64-bit range (it does so silently); ``json`` then re-reads the line exactly."""
    t = type(value)
    if t is float:
        return not -_EXACT_LIMIT < value < _EXACT_LIMIT
    if t is dict:
        for v in value.values():
            if type(v) in _CONTAINERS and _inexact(v):
                return True
    elif t is list:
        for v in value:
            if type(v) in _CONTAINERS and _inexact(v):
                return True
    return False


_CONTAINERS = frozenset((dict, list, float))


def _calls_inexact(calls: tuple[ToolCall, ...]) -> bool:
    for c in calls:
        if _inexact(c.input):
            return True
    return False


def _exact_fields(raw: bytes) -> Mapping[str, Any]:
    """A line's fields re-read with Python's ``json`` (exact integers of any size)."""
    return _classify(json.loads(raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw))[2]


def _show(value: Any) -> str:
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _strict(generation: str) -> bool:
    """Four-key lines are decoded as strictly as Harpe's newest decoder; older ones leniently."""
    return generation == "G5" or generation == "G4"


def _check_errors(errors: str) -> None:
    if errors not in _ERRORS:
        raise ValueError(f"errors must be one of {_ERRORS}, but {errors!r} was passed")


# --- time (§1.2) ---------------------------------------------------------------------------

_UTC = timezone.utc
_fromiso = datetime.fromisoformat
_ISO_TAKES_Z = sys.version_info >= (3, 11)


def format_time(epoch_seconds: float) -> str:
    """Harpe's ``Clock.toRfc3339``: RFC 3339 UTC, 6 fractional digits, ``Z`` suffix."""
    text = datetime.fromtimestamp(epoch_seconds, tz=_UTC).isoformat(timespec="microseconds")
    return text.replace("+00:00", "Z")


def _iso(value: str) -> datetime:
    if not _ISO_TAKES_Z and value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    return _fromiso(value)


def _parse_time(value: Any) -> datetime:
    """A journal ``time`` as an aware UTC datetime; SessionLog epoch numbers accepted."""
    if type(value) is str:
        try:
            parsed = _iso(value)
        except ValueError:
            raise _Bad(f"'time' is not an RFC 3339 time: {value!r}; expected e.g. {_EXAMPLE_TIME}") from None
        if parsed.tzinfo is None:
            raise _Bad(f"'time' {value!r} has no UTC offset; expected e.g. {_EXAMPLE_TIME} (Z = UTC)")
        return parsed if parsed.tzinfo is _UTC else parsed.astimezone(_UTC)
    if type(value) in (int, float):
        try:
            return datetime.fromtimestamp(value, tz=_UTC)
        except (OverflowError, OSError, ValueError):
            raise _Bad(f"'time' {value!r} is not a valid epoch time in seconds") from None
    if value is None:
        raise _Bad(f"the record has no 'time'; every journal line needs one, e.g. {_EXAMPLE_TIME}")
    raise _Bad(f"'time' must be an RFC 3339 string such as {_EXAMPLE_TIME}, got {_show(value)}")


# --- public records ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Entry:
    """One journal line in the normal form every generation is read into.

    ``context`` holds scope strings ``"key=value"``, outermost first where the
    generation's order is known (see the module docstring); ``line`` is the 1-based line
    number (0 for entries built in memory); ``generation`` is ``"G1"``, ``"G2"``,
    ``"G3"``, ``"G4"``, ``"G5"`` (string scopes: G4b lines read the same) or
    ``"SessionLog"``.
    """

    time: datetime
    event: str
    fields: Mapping[str, Any] = field(default_factory=dict)
    context: tuple[str, ...] = ()
    line: int = 0
    generation: str = "G5"

    def __post_init__(self) -> None:
        if not isinstance(self.time, datetime) or self.time.tzinfo is None:
            raise TypeError(f"Entry.time must be an aware datetime (UTC), got {self.time!r}")
        if self.time.tzinfo is not _UTC:
            object.__setattr__(self, "time", self.time.astimezone(_UTC))
        if not isinstance(self.event, str):
            raise TypeError(f"Entry.event must be a str, got {_show(self.event)}")
        if not isinstance(self.fields, Mapping):
            raise TypeError(f"Entry.fields must be a mapping, got {_show(self.fields)}")
        if not isinstance(self.fields, MappingProxyType):
            # a read-only view; a dict the reader just decoded is wrapped, not copied
            fields = self.fields if type(self.fields) is dict else dict(self.fields)
            object.__setattr__(self, "fields", MappingProxyType(fields))
        if not isinstance(self.context, tuple):
            object.__setattr__(self, "context", tuple(self.context))
        for scope in self.context:
            if not isinstance(scope, str):
                raise TypeError(f"Entry.context holds scope strings, got {_show(scope)}")

    @property
    def turns(self) -> tuple[str, ...]:
        """The turn ids of the record's ``harpe.turn.id`` scopes, in ``context`` order."""
        return _turn_ids(self.context)

    @property
    def depth(self) -> int:
        """Turn depth: how many turn scopes the record carries (0 outside any turn)."""
        return len(self.turns)

    @property
    def timestamp(self) -> float:
        """``time`` as float epoch seconds (Harpe's in-memory ``Entry.time``)."""
        return self.time.timestamp()

    def to_dict(self) -> dict[str, Any]:
        """The G5 envelope this entry would be written as."""
        return {
            "time": format_time(self.timestamp),
            "event": self.event,
            "fields": dict(self.fields),
            "context": list(self.context),
        }

    def message(self) -> Message:
        """Decode ``fields`` as a Harpe message (§2.3), strictly for four-key lines.

        Raises `JournalError` when the fields are not a valid message."""
        try:
            return _message(self.fields, _strict(self.generation))
        except _Bad as bad:
            raise JournalError(bad.reason, line=self.line or None, event=self.event) from None


@dataclass(frozen=True, kw_only=True)
class TurnData:
    """What one turn produced (Harpe's ``TurnData``): the user's input, the messages kept,
    the outcome and, for a failed turn, the error detail (``""`` when none was given)."""

    input: UserInput
    messages: tuple[Message, ...] = ()
    """Assistant replies and tool results, in order. Empty for failed turns and for turns
    ended by an ``interrupted`` record; kept for a turn that has no terminator."""
    outcome: Outcome = "answered"
    error: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.input, UserInput):
            raise TypeError(f"TurnData.input must be a UserInput, got {_show(self.input)}")
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        for m in self.messages:
            if not isinstance(m, (AssistantMessage, ToolResults)):
                raise TypeError(f"TurnData.messages holds assistant replies and tool results, got {_show(m)}")
        if self.outcome not in _OUTCOMES:
            raise ValueError(f"outcome must be one of {_OUTCOMES}, but {self.outcome!r} was passed")
        if not isinstance(self.error, str):
            raise TypeError(f"TurnData.error must be a str, got {_show(self.error)}")
        if self.error and self.outcome != "failed":
            raise ValueError(f"only a failed turn has an error, but outcome {self.outcome!r} has {self.error!r}")
        if self.messages and self.outcome == "failed":
            raise ValueError("a failed turn keeps no messages (Harpe drops them); pass messages=()")


@dataclass(frozen=True, kw_only=True)
class TurnRecord:
    """One bracketed turn (Harpe's ``TurnRecord``) plus what harpe_lab reads around it.

    ``request`` and ``response`` are the driver's payloads (any JSON value; ``""`` when
    absent; ``None`` for turns read without brackets). ``usage`` has one `Usage` per model
    reply of this turn, in order; ``nested_usage`` every other usage row inside the
    bracket (subagent turns). ``turn_id`` is the turn's ``harpe.turn.id`` (``""`` for
    legacy generations); ``terminated`` is false when the turn had no terminator (it then
    reads as interrupted with its messages kept); ``lines`` are the request and response
    line numbers (for unbracketed turns: the first and last line of the turn).
    """

    request: Any
    response: Any
    data: TurnData
    usage: tuple[Usage, ...] = ()
    nested_usage: tuple[Usage, ...] = ()
    turn_id: str = ""
    terminated: bool = True
    lines: tuple[int, int] = (0, 0)
    started: datetime | None = None
    ended: datetime | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.data, TurnData):
            raise TypeError(f"TurnRecord.data must be a TurnData, got {_show(self.data)}")
        for name in ("usage", "nested_usage"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))

    @property
    def outcome(self) -> Outcome:
        """Shortcut for ``data.outcome``."""
        return self.data.outcome


@dataclass(frozen=True, kw_only=True)
class Problem:
    """Something found while reading: a bad line (in ``problems``) or a record Harpe drops
    by design (in ``notes``). ``line`` is 1-based, ``None`` when about the whole file."""

    line: int | None
    reason: str
    event: str | None = None

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line is not None else "file"
        about = f" ({self.event})" if self.event else ""
        return f"{where}{about}: {self.reason}"


class Records(list):
    """The list of `TurnRecord` s `Journal.records` returns, with what the reader found.

    ``problems``: bad lines skipped (only with ``errors="skip"``; strict reading raises
    instead). ``notes``: records Harpe drops by design (fragments, orphan responses,
    discarded spans) and tolerated oddities (a torn last line, a byte-order mark).
    ``generations``: the envelope generations seen. ``reader``: ``"brackets"``,
    ``"fold"``, ``"sessionlog"`` or ``"none"`` (see the module docstring). `history`
    gives the messages Harpe resumes from.
    """

    problems: tuple[Problem, ...]
    notes: tuple[Problem, ...]
    generations: tuple[str, ...]
    reader: str
    path: str | None

    def __init__(self, records: Iterable[TurnRecord] = (), *, problems: Sequence[Problem] = (),
                 notes: Sequence[Problem] = (), generations: Sequence[str] = (), reader: str = "none",
                 path: str | None = None, prefix: Sequence[Message] = ()) -> None:
        super().__init__(records)
        self.problems = tuple(problems)
        self.notes = tuple(notes)
        self.generations = tuple(generations)
        self.reader = reader
        self.path = path
        self._prefix = tuple(prefix)

    def history(self) -> list[Message]:
        """Harpe's resumed history before the cap (§3.5): every turn's user input, plus the
        messages of answered turns. For a SessionLog, every message of the file."""
        messages: list[Message] = list(self._prefix)
        for record in self:
            messages.append(record.data.input)
            if record.data.outcome == "answered" or self.reader == "sessionlog":
                messages.extend(record.data.messages)
        return messages


# --- message codec (§2.3) ------------------------------------------------------------------

# The reader builds millions of message objects. A frozen dataclass's __init__ sets each
# field through object.__setattr__ (about 1.1 µs for a ToolResult, against 0.4 µs to fill
# its __dict__ at once), so the decoders fill __dict__ directly with values they already
# validated and converted (tuples, not lists) — the exact state __init__ would produce.
# `_fast_builders` checks at import that the classes still have exactly these fields and
# a __dict__; if not, the plain constructors are used.

_new = object.__new__
_set = object.__setattr__


def _fast_builders() -> bool:
    import dataclasses

    expected = {
        UserInput: ("text", "attachments", "pinned"), ToolCall: ("id", "name", "input"),
        AssistantMessage: ("text", "calls", "pinned"), ToolResult: ("id", "content", "attachments", "success"),
        ToolResults: ("results", "pinned"),
        Usage: ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "provider", "model"),
    }
    try:
        for cls, names in expected.items():
            if tuple(f.name for f in dataclasses.fields(cls)) != names or hasattr(cls, "__slots__"):
                return False
        probe = _new(ToolResult)
        _set(probe, "__dict__", {"id": "a", "content": "b", "attachments": (), "success": True})
        return probe == ToolResult("a", "b", (), True) and hash(probe) == hash(ToolResult("a", "b", (), True))
    except Exception:  # any surprise: keep the constructors
        return False


if _fast_builders():
    def _user(text: str, attachments: tuple) -> UserInput:
        o = _new(UserInput)
        _set(o, "__dict__", {"text": text, "attachments": attachments, "pinned": False})
        return o

    def _tool_call(id: str, name: str, input: Any) -> ToolCall:
        o = _new(ToolCall)
        _set(o, "__dict__", {"id": id, "name": name, "input": input})
        return o

    def _assistant(text: str, calls: tuple) -> AssistantMessage:
        o = _new(AssistantMessage)
        _set(o, "__dict__", {"text": text, "calls": calls, "pinned": False})
        return o

    def _tool_result(id: str, content: str, attachments: tuple, success: bool) -> ToolResult:
        o = _new(ToolResult)
        _set(o, "__dict__", {"id": id, "content": content, "attachments": attachments, "success": success})
        return o

    def _tool_results(results: tuple) -> ToolResults:
        o = _new(ToolResults)
        _set(o, "__dict__", {"results": results, "pinned": False})
        return o

    def _usage(i: int, o_: int, r: int, w: int, provider: str, model: str) -> Usage:
        o = _new(Usage)
        _set(o, "__dict__", {"input_tokens": i, "output_tokens": o_, "cache_read_tokens": r,
                             "cache_write_tokens": w, "provider": provider, "model": model})
        return o
else:  # pragma: no cover - only if harpe_lab.messages changes shape
    _user, _tool_call, _assistant, _tool_result, _tool_results, _usage = (
        UserInput, ToolCall, AssistantMessage, ToolResult, ToolResults, Usage)


def _attachment_dict(a: Attachment) -> dict[str, Any]:
    return {"name": a.name, "size": a.size, "mime": a.mime, "path": a.path}


def encode_message(message: Message) -> dict[str, Any]:
    """The ``harpe.turn.message`` fields for a message (§2.3). Tool-call inputs must be
    JSON objects (Harpe's decoder rejects anything else)."""
    if isinstance(message, UserInput):
        return {"role": "user", "text": message.text,
                "attachments": [_attachment_dict(a) for a in message.attachments]}
    if isinstance(message, AssistantMessage):
        calls = []
        for c in message.calls:
            if not isinstance(c.input, Mapping):
                raise JournalError(
                    f"tool call {c.id!r} ({c.name}) has input {_show(c.input)}; Harpe journals hold "
                    "call inputs as JSON objects — wrap the value, e.g. {\"value\": ...}"
                )
            calls.append({"id": c.id, "name": c.name, "input": dict(c.input)})
        return {"role": "assistant", "text": message.text, "calls": calls}
    if isinstance(message, ToolResults):
        return {"role": "tool_results", "results": [
            {"id": r.id, "content": r.content, "attachments": [_attachment_dict(a) for a in r.attachments],
             "success": r.success}
            for r in message.results
        ]}
    raise TypeError(f"not a harpe_lab message: {message!r}")


def _get(d: Mapping[str, Any], key: str, kind: type, strict: bool, default: Any, where: str) -> Any:
    value = d.get(key)
    if value is None:
        if strict:
            raise _Bad(f"{where}'{key}' is missing; expected {_KIND_NAMES[kind]}")
        return default
    if kind is int:
        if type(value) is float and value.is_integer():
            if -2.0 ** 53 < value < 2.0 ** 53:  # exactly an integer
                return int(value)
            raise _Inexact(f"{where}'{key}' must be an integer, got {_show(value)}")
        if type(value) is not int:
            raise _Bad(f"{where}'{key}' must be an integer, got {_show(value)}")
        return value
    if type(value) is not kind:
        raise _Bad(f"{where}'{key}' must be {_KIND_NAMES[kind]}, got {_show(value)}")
    return value


_KIND_NAMES = {str: "a string", int: "an integer", bool: "a boolean", list: "a list", dict: "an object"}


def _attachments(items: list, strict: bool, where: str) -> tuple[Attachment, ...]:
    out = []
    for i, a in enumerate(items):
        at = f"{where}attachment {i}: "
        if type(a) is not dict:
            raise _Bad(f"{at}expected an object {{name, size, mime, path}}, got {_show(a)}")
        out.append(Attachment(
            _get(a, "name", str, strict, "", at),
            _get(a, "size", int, strict, 0, at),
            _get(a, "mime", str, strict, "", at),
            # ≤0.4 attachments say {inline: bool} instead of a path
            _get(a, "path", str, strict and "inline" not in a, "", at),
        ))
    return tuple(out)


def decode_message(fields: Mapping[str, Any], *, strict: bool = True) -> Message:
    """Decode ``harpe.turn.message`` fields (§2.3) into a `UserInput`, `AssistantMessage`
    or `ToolResults`.

    ``strict`` (Harpe's newest decoder): every key must be present with its type and the
    role must be ``user``, ``assistant`` or ``tool_results``. Lenient (older decoders):
    missing keys default to ``""``/``0``/``[]``, ``success`` to true, ``media`` is read as
    ``attachments``, and any other role is read as tool results. A present key of the
    wrong type is rejected either way: `JournalError` says which key was wrong.
    """
    try:
        return _message(fields, strict)
    except _Bad as bad:
        raise JournalError(bad.reason) from None


def _message(fields: Mapping[str, Any], strict: bool) -> Message:
    """Decode a message; `_Bad` when malformed. The fast paths take the common complete,
    well-typed shapes (where strict and lenient agree); anything else, including every
    error, goes through `_message_checked`."""
    try:
        role = fields["role"]
        if role == "tool_results":
            results = fields["results"]
            if type(results) is list:
                out = []
                for r in results:  # a non-object raises TypeError: the checked path says why
                    rid, content, atts, ok = r["id"], r["content"], r["attachments"], r["success"]
                    if (type(rid) is not str or type(content) is not str or type(ok) is not bool
                            or type(atts) is not list or atts):
                        break
                    out.append(_tool_result(rid, content, (), ok))
                else:
                    return _tool_results(tuple(out))
        elif role == "assistant":
            text, calls = fields["text"], fields["calls"]
            if type(text) is str and type(calls) is list:
                out = []
                for c in calls:
                    cid, name, payload = c["id"], c["name"], c["input"]
                    if type(cid) is not str or type(name) is not str or type(payload) is not dict:
                        break
                    out.append(_tool_call(cid, name, payload))
                else:
                    return _assistant(text, tuple(out))
        elif role == "user":
            text, atts = fields["text"], fields["attachments"]
            if type(text) is str and type(atts) is list and not atts:
                return _user(text, ())
    except (KeyError, TypeError):
        pass
    return _message_checked(fields, strict)


def _message_checked(fields: Mapping[str, Any], strict: bool) -> Message:
    role = fields.get("role")
    if role is None and strict:
        raise _Bad("'role' is missing; expected \"user\", \"assistant\" or \"tool_results\"")
    if role is not None and type(role) is not str:
        raise _Bad(f"'role' must be a string, got {_show(role)}")
    if role == "user" or (role is None and "results" not in fields and "calls" not in fields):
        return UserInput(_get(fields, "text", str, strict, "", ""),
                         _attachments(_get(fields, "attachments", list, strict, [], ""), strict, ""))
    if role == "assistant" or (role is None and "calls" in fields):
        calls = []
        for i, c in enumerate(_get(fields, "calls", list, strict, [], "")):
            at = f"call {i}: "
            if type(c) is not dict:
                raise _Bad(f"{at}expected an object {{id, name, input}}, got {_show(c)}")
            if strict:
                payload = _get(c, "input", dict, True, None, at)
            else:
                payload = c.get("input")
                payload = {} if payload is None else payload
            calls.append(ToolCall(_get(c, "id", str, strict, "", at), _get(c, "name", str, strict, "", at), payload))
        return AssistantMessage(_get(fields, "text", str, strict, "", ""), tuple(calls))
    if strict and role != "tool_results":
        raise _Bad(f"'role' is {role!r}; expected \"user\", \"assistant\" or \"tool_results\"")
    results = []
    for i, r in enumerate(_get(fields, "results", list, strict, [], "")):
        at = f"result {i}: "
        if type(r) is not dict:
            raise _Bad(f"{at}expected an object {{id, content, attachments, success}}, got {_show(r)}")
        if strict:
            attachments = _get(r, "attachments", list, True, None, at)
        else:
            attachments = r.get("attachments")
            if attachments is None:
                attachments = _get(r, "media", list, False, [], at)
            elif type(attachments) is not list:
                raise _Bad(f"{at}'attachments' must be a list, got {_show(attachments)}")
        results.append(ToolResult(
            _get(r, "id", str, strict, "", at),
            _get(r, "content", str, strict, "", at),
            _attachments(attachments, strict, at),
            _get(r, "success", bool, strict, True, at),
        ))
    return ToolResults(tuple(results))


def _decode_usage(event: str, fields: Mapping[str, Any], strict: bool) -> Usage:
    """A usage row: ``harpe.metering.usage`` is strict in four-key journals (Harpe's
    ``Usage.decode``); older token-carrying events are lenient."""
    try:
        i, o, r, w, provider, model = (fields["inputTokens"], fields["outputTokens"], fields["cacheReadTokens"],
                                       fields["cacheWriteTokens"], fields["provider"], fields["model"])
        if (type(i) is int and type(o) is int and type(r) is int and type(w) is int and type(provider) is str
                and type(model) is str):
            return _usage(i, o, r, w, provider, model)
    except KeyError:
        pass
    strict = strict and event == USAGE
    return Usage(
        input_tokens=_get(fields, "inputTokens", int, strict, 0, ""),
        output_tokens=_get(fields, "outputTokens", int, strict, 0, ""),
        cache_read_tokens=_get(fields, "cacheReadTokens", int, strict, 0, ""),
        cache_write_tokens=_get(fields, "cacheWriteTokens", int, strict, 0, ""),
        provider=_get(fields, "provider", str, strict, "", ""),
        model=_get(fields, "model", str, strict, "", ""),
    )


def _carries_tokens(fields: Mapping[str, Any]) -> bool:
    return fields.get("inputTokens") is not None or fields.get("outputTokens") is not None


def _payload(fields: Mapping[str, Any]) -> Any:
    data = fields.get("data")
    return "" if data is None else data


def _error_detail(fields: Mapping[str, Any]) -> str:
    detail = fields.get("error")
    if detail is None:
        return ""
    if type(detail) is not str:
        raise _Bad(f"'error' must be a string, got {_show(detail)}")
    return detail


# --- envelopes (§1.3–§1.6) -----------------------------------------------------------------


def _turn_ids(scopes: Sequence[str]) -> tuple[str, ...]:
    if len(scopes) == 1:
        s = scopes[0]
        return (s[_TP_LEN:],) if s.startswith(_TURN_PREFIX) else ()
    return tuple([s[_TP_LEN:] for s in scopes if s.startswith(_TURN_PREFIX)])


def _scope_value(value: Any) -> str:
    return value if type(value) is str else json.dumps(value)


def _object_scopes(items: list, where: str) -> tuple[str, ...]:
    """G3/G4 scope lists: innermost first, each element a map (or, in G3, any value).
    Returned outermost first, one ``key=value`` string per map entry."""
    out: list[str] = []
    for item in reversed(items):
        if type(item) is dict:
            out.extend(f"{k}={_scope_value(v)}" for k, v in item.items() if v is not None)
        elif type(item) is str:
            out.append(item)
        elif item is not None:
            out.append(_scope_value(item))
        else:
            raise _Bad(f"{where}holds null; expected scope strings or objects")
    return tuple(out)


def _classify(obj: Any) -> tuple[str, str, dict, tuple[str, ...] | list, Any]:
    """(generation, event, fields, context, raw time) of any journal line, or `_Bad`.

    ``context`` is a list as written for string scopes and a normalised tuple otherwise."""
    if type(obj) is not dict:
        raise _Bad(f"expected a JSON object per line, got {_show(obj)}")
    t = obj.get("time")
    event = obj.get("event")
    fields = obj.get("fields")
    if "fields" in obj and event is not None and (fields is None or type(fields) is dict or
                                                   set(obj) <= {"time", "event", "fields", "context"}):
        # four-key envelope (G4, G4b, G5)
        if type(event) is not str:
            raise _Bad(f"'event' must be a string, got {_show(event)}")
        if fields is None:
            fields = {}
        elif type(fields) is not dict:
            raise _Bad(f"'fields' must be an object, got {_show(fields)}", event)
        ctx = obj.get("context")
        if ctx is None:
            return "G5", event, fields, (), t
        if type(ctx) is not list:
            raise _Bad(f"'context' must be a list of scope strings, got {_show(ctx)}", event)
        if all(type(s) is str for s in ctx):
            return "G5", event, fields, ctx, t
        if all(type(s) is dict for s in ctx):
            return "G4", event, fields, _object_scopes(ctx, "'context' "), t
        raise _Bad(f"'context' must hold only scope strings (G5) or only objects (G4), got {_show(ctx)}", event)
    if event is not None or obj.get("category") is not None:
        gen = "G2"
        if event is None:
            gen, event = "G1", obj["category"]
        if type(event) is not str:
            raise _Bad(f"'{'category' if gen == 'G1' else 'event'}' must be a string, got {_show(event)}")
        ctx = obj.get("context")
        scopes: tuple[str, ...] = ()
        skip = ("time", "event", "category")
        if type(ctx) is list:
            gen = "G3" if gen == "G2" else gen
            scopes = _object_scopes(ctx, "'context' ")
            skip = ("time", "event", "category", "context")
        flat = {k: v for k, v in obj.items() if k not in skip and v is not None}
        return gen, event, flat, scopes, t
    if obj.get("role") is not None:
        return "SessionLog", SESSION_MESSAGE, {k: v for k, v in obj.items() if k != "time" and v is not None}, (), t
    if t is None:
        raise _Bad("not a journal record: no 'time', 'event' or 'role'; expected "
                   '{"time": ..., "event": ..., "fields": {...}, "context": [...]}')
    raise _Bad("the record has no 'event' (nor a legacy 'category'); every journal record names its event")


def _open(path: Any) -> Any:
    p = Path(os.fspath(path))
    try:
        return open(p, "rb")
    except FileNotFoundError:
        raise MissingJournalError(
            "no journal here. To start a new session instead, write one with "
            f"JsonlLogger({str(p)!r}) (or `harpe-lab chat {p} --model ...`, which creates it); "
            "otherwise check the path",
            path=p,
        ) from None
    except IsADirectoryError:
        raise JournalError("is a directory; expected a journal file (.jsonl)", path=p) from None


_SKIP = object()


class _Lines:
    """Shared line-level bookkeeping of both readers: problems, notes, torn tail, BOM."""

    def __init__(self, path: Any, errors: str) -> None:
        _check_errors(errors)
        self.path = None if path is None else str(path)
        self.errors = errors
        self.problems: list[Problem] = []
        self.notes: list[Problem] = []
        self._bad_lines: set[int | None] = set()

    def bad(self, line: int | None, reason: str, event: str | None = None) -> None:
        if self.errors == "strict":
            raise JournalError(f"{reason}; {_FIX}", path=self.path, line=line, event=event)
        if line is None or line not in self._bad_lines:  # check mode may decode a line twice
            self._bad_lines.add(line)
            self.problems.append(Problem(line=line, reason=reason, event=event))

    def note(self, line: int | None, reason: str, event: str | None = None) -> None:
        self.notes.append(Problem(line=line, reason=reason, event=event))

    def slow_decode(self, lineno: int, raw: bytes, exc: Exception) -> Any:
        """A line orjson refused: a BOM, a blank line, JSON only Python's ``json`` reads
        (``NaN``, integers beyond 64 bits, lone surrogates — all things Harpe's
        ``json.dumps`` can write), or a bad line. Returns the value or `_SKIP`."""
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = self.strip_bom(raw)
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError as again:
                exc = again
        if not raw.strip():
            return _SKIP
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            pass
        self.undecodable(lineno, raw, exc)
        return _SKIP

    def undecodable(self, lineno: int, raw: bytes, exc: Exception) -> None:
        if not raw.endswith(b"\n"):
            reason = ("the last line is incomplete (no newline, not valid JSON: the writer stopped "
                      "mid-line); it was ignored")
            self.note(lineno, reason)
            warnings.warn(f"{self.path}:{lineno}: {reason}", TornLineWarning, stacklevel=4)
            return
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as err:
            self.bad(lineno, f"the line is not UTF-8 (byte {err.start}: {raw[err.start:err.start + 1]!r}); "
                             "journals are UTF-8 JSON")
            return
        self.bad(lineno, f"the line is not valid JSON ({exc}); expected one JSON object per line")

    def strip_bom(self, raw: bytes) -> bytes:
        if raw.startswith(b"\xef\xbb\xbf"):
            self.note(1, "a UTF-8 byte-order mark starts the file; it was ignored (Harpe never writes one)")
            return raw[3:]
        return raw


class EntryReader:
    """Iterator over a journal's `Entry` s (what `read_entries` returns). After (or during)
    iteration, ``problems``, ``notes`` and ``generations`` say what was found."""

    def __init__(self, path: Any, errors: str = "strict") -> None:
        self._lines = _Lines(path, errors)
        self._seen: set[str] = set()
        self._iter = self._read(path)

    @property
    def generations(self) -> tuple[str, ...]:
        """The envelope generations of the lines read so far."""
        return tuple(g for g in _GENERATIONS if g in self._seen)

    @property
    def problems(self) -> tuple[Problem, ...]:
        return tuple(self._lines.problems)

    @property
    def notes(self) -> tuple[Problem, ...]:
        return tuple(self._lines.notes)

    def __iter__(self) -> "EntryReader":
        return self

    def __next__(self) -> Entry:
        return next(self._iter)

    def _read(self, path: Any) -> Iterator[Entry]:
        lines = self._lines
        loads = orjson.loads
        with _open(path) as f:
            for lineno, raw in enumerate(f, 1):
                try:
                    obj = loads(raw)
                except orjson.JSONDecodeError as exc:
                    obj = lines.slow_decode(lineno, raw, exc)
                    if obj is _SKIP:
                        continue
                if _inexact(obj):
                    obj = json.loads(raw[3:] if lineno == 1 and raw.startswith(b"\xef\xbb\xbf") else raw)
                try:
                    gen, event, fields, ctx, t = _classify(obj)
                    when = _parse_time(t)
                except _Bad as bad:
                    lines.bad(lineno, bad.reason, bad.event)
                    continue
                self._seen.add(gen)
                yield Entry(when, event, fields, tuple(ctx), lineno, gen)


def read_entries(path: Any, *, errors: str = "strict") -> EntryReader:
    """Stream a journal's lines as `Entry` s, one at a time, in file order.

    Every generation is read (see the module docstring); blank lines are skipped. With
    ``errors="strict"`` a bad line raises `JournalError` (path, line, what was expected);
    with ``errors="skip"`` it is skipped and listed in the reader's ``problems``. A torn
    last line warns (`TornLineWarning`) and is listed in ``notes``. A missing file raises
    `MissingJournalError`.
    """
    return EntryReader(path, errors)


# --- turn assembly (§3) --------------------------------------------------------------------

_NO_TURN = 1 << 30

# A span item is (kind, line, event, fields, turns, generation, raw time, raw line or None).


class _Assembler:
    """Harpe's ``Journal.records`` as a push parser: `feed` one line at a time.

    Holds only the open bracket's relevant records (messages, terminators, ``started``
    and usage events); everything else is looked at once and dropped.
    """

    def __init__(self, lines: _Lines, *, validate_all: bool = False, usage_rows: list | None = None) -> None:
        self.L = lines
        self.validate_all = validate_all
        self.rows = usage_rows  # Journal.usage rows, or None when not collecting
        if validate_all:
            self.feed = self._feed_validating  # type: ignore[method-assign]
        self.count = 0
        self.open = False
        self.bracketed = False
        self.req: tuple[Any, int, Any] = ("", 0, None)
        self.span: list[tuple] = []
        self.min = _NO_TURN
        self.key: tuple[str, ...] = ()
        self.inner_first = False
        self.outer_first = False
        # before the first bracket: the 0.4 fold (§3.7) and SessionLog messages (§1.6)
        self.fold: list[TurnRecord] = []
        self.fold_turn: list | None = None
        self.session: list[tuple[int, Any, Message]] = []
        self.outside = 0  # turn records outside any bracket

    # -- per line --------------------------------------------------------------------------

    def feed(self, line: int, gen: str, event: str, fields: Mapping[str, Any], ctx: Any, t: Any,
             raw: bytes | None = None) -> TurnRecord | None:
        """Take one line (``raw``: its bytes, to re-read it exactly when needed); return
        the record its response line completes, if any."""
        kind = _KIND.get(event, 0)
        if kind == _K_OLD_USAGE and not _carries_tokens(fields):
            kind = 0  # a newer harpe.model.replied: provider and model only
        if self.open:
            if kind > _K_RESPONSE:  # the hot path: a record the turn logic reads
                if not ctx:
                    turns = ()
                elif len(ctx) == 1:
                    s = ctx[0]
                    turns = (s[_TP_LEN:],) if s.startswith(_TURN_PREFIX) else ()
                else:
                    turns = _turn_ids(ctx)
                if turns and len(turns) < self.min:
                    self.min = len(turns)
                    self.key = turns
                self.span.append((kind, line, event, fields, turns, gen, t, raw))
                return None
            if kind == 0:
                # only the shortest turn-id list matters, and none is shorter than 1
                if ctx and self.min != 1:
                    turns = _turn_ids(ctx)
                    if turns and len(turns) < self.min:
                        self.min = len(turns)
                        self.key = turns
                return None
        if kind == _K_REQUEST:
            self._request(line, fields, t, raw)
            return None
        if kind == _K_RESPONSE:
            return self._response(line, fields, t, raw)
        if _K_MESSAGE <= kind <= _K_END:
            self.outside += 1
        item = (kind, line, event, fields, _turn_ids(ctx) if ctx else (), gen, t, raw)
        if self.rows is not None and kind >= _K_USAGE and (self.bracketed or self.fold_turn is None):
            self._row(item, None, False)
        if not self.bracketed:
            if kind:
                self._fold_feed(item)
            elif gen == "SessionLog":
                m = self._decode((_K_MESSAGE, *item[1:]))
                if m is not None:
                    self.session.append((line, t, m))
        return None

    def _feed_validating(self, line: int, gen: str, event: str, fields: Mapping[str, Any], ctx: Any,
                         t: Any, raw: bytes | None = None) -> TurnRecord | None:
        self._validate((_KIND.get(event, 0), line, event, fields, (), gen, t, raw))
        return _Assembler.feed(self, line, gen, event, fields, ctx, t, raw)

    def _validate(self, item: tuple) -> None:
        """Decode every message and usage record (check mode), also those `records`
        never looks at (subagent turns, lines outside brackets)."""
        kind, line, event, fields = item[:4]
        if kind == _K_MESSAGE or kind == _K_STARTED:
            self._decode(item)
        elif kind == _K_USAGE or (kind == _K_OLD_USAGE and _carries_tokens(fields)):
            self._decode(item, usage=True)
        elif event == FAILED:
            try:
                _error_detail(fields)
            except _Bad as bad:
                self.L.bad(line, bad.reason, event)

    # -- brackets (§3.2) -------------------------------------------------------------------

    @staticmethod
    def _exact_payload(fields: Mapping[str, Any], raw: bytes | None) -> Any:
        payload = _payload(fields)
        if raw is not None and type(payload) in _CONTAINERS and _inexact(payload):
            payload = _payload(_exact_fields(raw))
        return payload

    def _request(self, line: int, fields: Mapping[str, Any], t: Any, raw: bytes | None = None) -> None:
        if self.open:
            self.L.note(self.req[1], f"request discarded: a second request at line {line} opened a new "
                                     "bracket before its response (Harpe drops the earlier span)", REQUEST)
            self._attribute(self.span, None, False)
        elif not self.bracketed:
            self._first_bracket(line)
        self.open = True
        self.bracketed = True
        self.req = (self._exact_payload(fields, raw), line, t)
        self.span = []
        self.min = _NO_TURN
        self.key = ()

    def _response(self, line: int, fields: Mapping[str, Any], t: Any, raw: bytes | None = None) -> TurnRecord | None:
        if not self.open:
            self.L.note(line, "response without an open request; ignored (pairing is positional)", RESPONSE)
            return None
        span, self.span = self.span, []
        self.open = False
        built = self._by_turn_id(span) if self.min != _NO_TURN else self._by_depth(span)
        if built is None:
            self.L.note(self.req[1], f"the bracket closed at line {line} holds no turn (no user message "
                                     "of its own); Harpe records nothing for it", REQUEST)
            self._attribute(span, None, False)
            return None
        data, own, other, metering, turn_id, terminated = built
        record = _turn_record(
            self.req[0], self._exact_payload(fields, raw), data, self._usages(own, metering),
            self._usages(other, metering),
            turn_id, terminated, (self.req[1], line), _time_or_none(self.req[2]), _time_or_none(t),
        )
        if self.rows is not None:
            self._attribute(own, self.count, True, metering)
            self._attribute(other, self.count, False, metering)
        self.count += 1
        return record

    def _decode(self, item: tuple, usage: bool = False) -> Any:
        """A span item's message (or `Usage`), read exactly; ``None`` (and a problem) when
        it is malformed."""
        kind, line, event, fields, _, gen, _, raw = item
        strict = gen == "G5" or gen == "G4"
        for exact in (False, True):
            try:
                if usage:
                    return _decode_usage(event, fields, strict)
                m = _message(_as_user(fields) if kind == _K_STARTED else fields, strict)
                if not exact and raw is not None and type(m) is AssistantMessage and _calls_inexact(m.calls):
                    raise _Inexact("")
                return m
            except _Inexact as bad:
                if exact or raw is None:
                    self.L.bad(line, bad.reason, event)
                    return None
                fields = _exact_fields(raw)
            except _Bad as bad:
                self.L.bad(line, bad.reason, event)
                return None
        return None  # pragma: no cover

    def _by_turn_id(self, span: list[tuple]) -> tuple | None:
        """§3.3 with the order-agnostic rule: the turn is the shortest turn-id list seen
        first; a record is the turn's own iff its turn-id list equals it."""
        key = self.key
        k = len(key)
        user: UserInput | None = None
        pending: list[Message] = []
        end: tuple | None = None
        own: list[tuple] = []
        other: list[tuple] = []
        metering = False
        for item in span:
            kind, turns = item[0], item[4]
            if kind >= _K_USAGE:
                (own if turns == key else other).append(item)
                if kind == _K_USAGE:
                    metering = True
            elif turns != key:
                if len(turns) > k:  # a nested turn's record tells the scope order
                    if turns[:k] == key:
                        self.outer_first = True
                    elif turns[-k:] == key:
                        self.inner_first = True
            elif kind == _K_END:
                if end is None:
                    end = item
            else:
                gen = item[5]
                try:
                    m = _message(item[3] if kind == _K_MESSAGE else _as_user(item[3]), gen == "G5" or gen == "G4")
                    if type(m) is AssistantMessage and m.calls and item[7] is not None and _calls_inexact(m.calls):
                        raise _Inexact("")
                except _Bad:
                    m = self._decode(item)  # re-read exactly, or report the problem
                    if m is None:
                        continue
                if type(m) is UserInput:
                    if user is None:
                        user = m  # a later user input of the same turn is dropped, as in Harpe
                else:
                    pending.append(m)
        if user is None:
            return None
        # the turn's own id is its innermost scope: last when outermost-first (G5)
        turn_id = key[0] if (k == 1 or (self.inner_first and not self.outer_first)) else key[-1]
        return self._outcome(user, pending, end), own, other, metering, turn_id, end is not None

    def _outcome(self, user: UserInput, pending: list[Message], end: tuple | None) -> TurnData:
        if end is None:
            return _turn_data(user, tuple(pending), "interrupted", "")
        outcome = _TERMINATOR_OUTCOME[end[2]]
        if outcome == "answered":
            return _turn_data(user, tuple(pending), "answered", "")
        if outcome == "interrupted":
            return _turn_data(user, (), "interrupted", "")
        try:
            detail = _error_detail(end[3])
        except _Bad as bad:
            self.L.bad(end[1], bad.reason, end[2])
            detail = ""
        return _turn_data(user, (), "failed", detail)

    def _by_depth(self, span: list[tuple]) -> tuple | None:
        """§3.4: legacy depth counting, for brackets whose records carry no turn scope.
        Only the first outermost turn counts; usage rows at depth 1 are its own."""
        data: TurnData | None = None
        depth = 0
        user: UserInput | None = None
        pending: list[Message] = []
        own: list[tuple] = []
        own_now: list[tuple] = []
        other: list[tuple] = []
        for item in span:
            kind = item[0]
            if kind == _K_STARTED:
                if data is None:
                    depth += 1
                    if depth == 1:
                        m = self._decode(item)
                        user = m if isinstance(m, UserInput) else None
                        pending = []
                        other.extend(own_now)
                        own_now = []
            elif kind == _K_MESSAGE:
                if depth == 1 and data is None:
                    m = self._decode(item)
                    if m is not None and not isinstance(m, UserInput):
                        pending.append(m)
            elif kind == _K_END:
                if depth > 0:
                    depth -= 1
                    if depth == 0 and user is not None:
                        data = self._outcome(user, pending, item)
                        own, own_now = own_now, []
                        user, pending = None, []
            elif depth == 1 and data is None:
                own_now.append(item)
            else:
                other.append(item)
        metering = any(item[0] == _K_USAGE for item in span)
        if data is not None:
            return data, own, other + own_now, metering, "", True
        if user is None:
            return None
        return _turn_data(user, tuple(pending), "interrupted", ""), own_now, other, metering, "", False

    def _usages(self, items: list[tuple], metering: bool) -> tuple[Usage, ...]:
        """Decode usage items. Older token events count only when the bracket has no
        ``harpe.metering.usage`` (``metering``), so no reply is counted twice."""
        out = []
        for item in items:
            kind, _, event, fields, _, gen = item[:6]
            if metering and kind != _K_USAGE:
                continue
            try:
                out.append(_decode_usage(event, fields, gen == "G5" or gen == "G4"))
            except _Bad:
                u = self._decode(item, usage=True)  # re-read exactly, or report the problem
                if u is not None:
                    out.append(u)
        return tuple(out)

    def _attribute(self, items: list[tuple], record: int | None, own: bool, metering: bool = False) -> None:
        """Add usage items to the `Journal.usage` table."""
        if self.rows is not None:
            for item in items:
                if item[0] >= _K_USAGE and not (metering and item[0] != _K_USAGE):
                    self._row(item, record, own)

    def _row(self, item: tuple, record: int | None, own: bool) -> None:
        _, line, event, _, turns, _, t, _ = item
        u = self._decode(item, usage=True)
        if u is None:
            return
        self.rows.append({
            "record": record, "own": own, "turn_id": turns[-1] if turns else "",
            "outer_turn_id": turns[0] if turns else "", "depth": len(turns), "line": line,
            "time": _time_or_none(t), "event": event, "provider": u.provider, "model": u.model,
            "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens,
        })

    # -- before any bracket: the 0.4 fold (§3.7) -------------------------------------------

    def _fold_feed(self, item: tuple) -> None:
        kind, line, _, fields, _, _, t, _ = item
        turn = self.fold_turn
        if kind == _K_STARTED:
            if turn is not None:
                self._fold_close(None, turn[5])
            m = self._decode(item)
            if isinstance(m, UserInput):
                self.fold_turn = [m, [], [], line, t, line]
        elif kind == _K_MESSAGE or kind == _K_END:
            if turn is None:
                return
            turn[5] = line
            if kind == _K_END:
                self._fold_close(item, line)
                return
            m = self._decode(item)
            if m is not None and not isinstance(m, UserInput):
                turn[1].append(m)
        elif turn is not None and (kind == _K_USAGE or _carries_tokens(fields)):
            turn[2].append(item)

    def _fold_close(self, end: tuple | None, last: int) -> None:
        user, pending, usage_items, first, t0, _ = self.fold_turn
        self.fold_turn = None
        metering = any(item[0] == _K_USAGE for item in usage_items)
        self._attribute(usage_items, len(self.fold), True, metering)
        self.fold.append(_turn_record(
            None, None, self._outcome(user, pending, end), self._usages(usage_items, metering), (), "",
            end is not None, (first, last), _time_or_none(t0), _time_or_none(end[6]) if end else None,
        ))

    def _first_bracket(self, line: int) -> None:
        """A bracketed journal is read by its brackets only: forget the fold."""
        dropped = len(self.fold) + (self.fold_turn is not None)
        if dropped:
            self.L.note(line, f"{dropped} unbracketed turn(s) before the first bracket contribute nothing "
                              "(Harpe reads a bracketed journal by its brackets)", REQUEST)
            self.outside = 0  # their records are counted in this note
        if self.session:
            self.L.note(self.session[0][0], f"{len(self.session)} SessionLog line(s) before the first "
                                            "bracket were ignored")
        if self.rows is not None:
            for row in self.rows:  # only fold turns have rows with a record so far
                row["record"], row["own"] = None, False
            if self.fold_turn is not None:
                self._attribute(self.fold_turn[2], None, False)
        self.fold, self.fold_turn, self.session = [], None, []

    # -- end of file -----------------------------------------------------------------------

    def finish(self) -> tuple[list[TurnRecord], str, tuple[Message, ...]]:
        """End of input: the records read without brackets (if any), the reader used, and
        a SessionLog's messages before its first user message."""
        if self.open:
            self.L.note(self.req[1], "request without a response (the session ended or crashed mid-turn); "
                                     "its turn is not read, as in Harpe", REQUEST)
            self._attribute(self.span, None, False)
            self.open, self.span = False, []
        if self.bracketed:
            if self.outside:
                self.L.note(None, f"{self.outside} turn record(s) outside any bracket (unbracketed turns: "
                                  "subagents, cron, scripts) contribute nothing, as in Harpe")
            return [], "brackets", ()
        if self.fold_turn is not None:
            self._fold_close(None, self.fold_turn[5])
        if self.fold:
            if self.session:
                self.L.note(self.session[0][0], f"{len(self.session)} SessionLog line(s) ignored: the file "
                                                "also holds turn records")
            return self.fold, "fold", ()
        if self.session:
            return self._session_records()
        if self.outside:
            self.L.note(None, "turn records but no harpe.turn.request/response brackets: Harpe reads no "
                              "history from this journal")
        return [], "none", ()

    def _session_records(self) -> tuple[list[TurnRecord], str, tuple[Message, ...]]:
        """§1.6: a SessionLog has no outcomes; a turn starts at each user message."""
        records: list[TurnRecord] = []
        prefix: list[Message] = []
        current: list | None = None

        def close() -> None:
            user, msgs, first, last, t0, t1 = current
            records.append(TurnRecord(request=None, response=None,
                                      data=TurnData(input=user, messages=tuple(msgs), outcome="answered"),
                                      lines=(first, last), started=_time_or_none(t0), ended=_time_or_none(t1)))

        for line, t, m in self.session:
            if isinstance(m, UserInput):
                if current is not None:
                    close()
                current = [m, [], line, line, t, t]
            elif current is None:
                prefix.append(m)
            else:
                current[1].append(m)
                current[3], current[5] = line, t
        if current is not None:
            close()
        if prefix:
            self.L.note(self.session[0][0], f"{len(prefix)} SessionLog message(s) before the first user "
                                            "message belong to no turn (they are kept in the history)")
        return records, "sessionlog", tuple(prefix)

    def generation_labels(self, seen: set[str]) -> tuple[str, ...]:
        """Generations seen; string-scope lines are G5 unless nested turns showed their
        scopes innermost first (G4b)."""
        labels = set(seen)
        if "G5" in labels and self.inner_first:
            if not self.outer_first:
                labels.discard("G5")
            labels.add("G4b")
        return tuple(g for g in _GENERATIONS if g in labels)


def _turn_data(input: UserInput, messages: tuple, outcome: str, error: str) -> TurnData:
    """A `TurnData` from values the reader already validated (see `_fast_builders`)."""
    o = _new(TurnData)
    _set(o, "__dict__", {"input": input, "messages": messages, "outcome": outcome, "error": error})
    return o


def _turn_record(request: Any, response: Any, data: TurnData, usage: tuple, nested_usage: tuple, turn_id: str,
                 terminated: bool, lines: tuple[int, int], started: datetime | None,
                 ended: datetime | None) -> TurnRecord:
    """A `TurnRecord` from values the reader already validated."""
    o = _new(TurnRecord)
    _set(o, "__dict__", {"request": request, "response": response, "data": data, "usage": usage,
                         "nested_usage": nested_usage, "turn_id": turn_id, "terminated": terminated,
                         "lines": lines, "started": started, "ended": ended})
    return o


def _as_user(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A legacy ``harpe.turn.started`` carries the user message, whatever its role says."""
    return {**fields, "role": "user"}


def _time_or_none(t: Any) -> datetime | None:
    if isinstance(t, datetime):
        return t
    try:
        return _parse_time(t)
    except _Bad:
        return None  # only reachable for lines already reported as bad


class RecordStream:
    """A one-pass iterator over a journal's `TurnRecord` s (what `Journal.stream` returns).

    Records are yielded as their response line is read, so a long journal is read in
    constant memory (only the open bracket is held). Turns read without brackets (legacy
    fold, SessionLog) are yielded at the end of the file. ``problems``, ``notes``,
    ``generations`` and ``reader`` are complete once the stream is exhausted; reading an
    `EntryReader` includes what it found.
    """

    def __init__(self, source: Any, *, errors: str = "strict", validate_all: bool = False,
                 usage_rows: list | None = None) -> None:
        _check_errors(errors)
        is_path = isinstance(source, (str, os.PathLike))
        self._upstream = source._lines if isinstance(source, EntryReader) else None
        path = source if is_path else self._upstream.path if self._upstream else None
        self._lines = _Lines(path, errors)
        self._asm = _Assembler(self._lines, validate_all=validate_all, usage_rows=usage_rows)
        self._seen: set[str] = set()
        self.reader = "none"
        self.prefix: tuple[Message, ...] = ()
        self._iter = self._run(self._from_path(source) if is_path else self._from_entries(source))

    @property
    def path(self) -> str | None:
        return self._lines.path

    @property
    def problems(self) -> tuple[Problem, ...]:
        upstream = self._upstream.problems if self._upstream else []
        return (*upstream, *self._lines.problems)

    @property
    def notes(self) -> tuple[Problem, ...]:
        upstream = self._upstream.notes if self._upstream else []
        return (*upstream, *self._lines.notes)

    @property
    def generations(self) -> tuple[str, ...]:
        return self._asm.generation_labels(self._seen)

    def __iter__(self) -> "RecordStream":
        return self

    def __next__(self) -> TurnRecord:
        return next(self._iter)

    def _run(self, records: Iterator[TurnRecord]) -> Iterator[TurnRecord]:
        yield from records
        tail, self.reader, self.prefix = self._asm.finish()
        yield from tail

    def _from_entries(self, entries: Iterable[Entry]) -> Iterator[TurnRecord]:
        feed = self._asm.feed
        seen = self._seen
        for i, e in enumerate(entries, 1):
            if not isinstance(e, Entry):
                raise TypeError(f"Journal.records reads a path or Entry objects, got {_show(e)} at position {i}")
            seen.add(e.generation)
            record = feed(e.line or i, e.generation, e.event, e.fields, e.context, e.time)
            if record is not None:
                yield record

    def _from_path(self, path: Any) -> Iterator[TurnRecord]:
        """The hot path: parse each line once, validate its envelope, hand it on.

        Well-formed G5 lines inside an open bracket never leave this loop: it is
        `_Assembler.feed`'s first branch inlined, with the open span, the shortest turn-id
        list and its length kept in locals and synced with the assembler around every
        `feed` call (the tests read every journal through both paths and compare). Check
        mode validates inside `feed`, so it sends every line there.
        """
        lines = self._lines
        asm = self._asm
        feed = asm.feed
        seen = self._seen
        loads = orjson.loads
        decode_error = orjson.JSONDecodeError
        fromiso = _fromiso if _ISO_TAKES_Z else _iso
        bad = lines.bad
        dict_, list_, str_ = dict, list, str
        kind_of = _KIND.get
        inline = not asm.validate_all
        span: list | None = None  # the open bracket's span (None: no bracket open)
        depth, key = _NO_TURN, ()
        g5 = False
        with _open(path) as f:
            for lineno, raw in enumerate(f, 1):
                try:
                    obj = loads(raw)
                except decode_error as exc:
                    obj = lines.slow_decode(lineno, raw, exc)
                    if obj is _SKIP:
                        continue
                gen = "G5"
                if type(obj) is dict_ and len(obj) == 4:
                    try:
                        t, event, fields, ctx = obj["time"], obj["event"], obj["fields"], obj["context"]
                    except KeyError:
                        gen = ""
                    if gen and type(event) is str_ and type(fields) is dict_ and type(ctx) is list_ \
                            and type(t) is str_:
                        for s in ctx:
                            if type(s) is not str_:
                                gen = ""
                                break
                    else:
                        gen = ""
                else:
                    gen = ""
                if gen:
                    try:
                        if fromiso(t).tzinfo is None:
                            raise ValueError
                    except ValueError:
                        try:
                            _parse_time(t)
                        except _Bad as b:
                            bad(lineno, b.reason, event)
                            continue
                    if not g5:
                        g5 = True
                        seen.add("G5")
                    if span is not None:
                        kind = kind_of(event, 0)
                        if kind == _K_OLD_USAGE and not _carries_tokens(fields):
                            kind = 0
                        if kind > _K_RESPONSE:
                            if not ctx:
                                turns = ()
                            elif len(ctx) == 1:
                                s = ctx[0]
                                turns = (s[_TP_LEN:],) if s.startswith(_TURN_PREFIX) else ()
                            else:
                                turns = _turn_ids(ctx)
                            if turns and len(turns) < depth:
                                depth, key = len(turns), turns
                            span.append((kind, lineno, event, fields, turns, "G5", t, raw))
                            continue
                        if kind == 0:
                            if ctx and depth != 1:
                                turns = _turn_ids(ctx)
                                if turns and len(turns) < depth:
                                    depth, key = len(turns), turns
                            continue
                else:
                    try:
                        gen, event, fields, ctx, t = _classify(obj)
                        _parse_time(t)
                    except _Bad as b:
                        bad(lineno, b.reason, b.event)
                        continue
                    seen.add(gen)
                if span is not None:
                    asm.min, asm.key = depth, key
                record = feed(lineno, gen, event, fields, ctx, t, raw)
                if inline and asm.open:
                    span, depth, key = asm.span, asm.min, asm.key
                else:
                    span = None
                if record is not None:
                    yield record


# --- Journal: the driver's view -------------------------------------------------------------


USAGE_COLUMNS = (
    "record", "own", "turn_id", "outer_turn_id", "depth", "line", "time", "event", "provider", "model",
    "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens",
)
"""Columns of `Journal.usage`: ``record`` (index into `Journal.records`, <NA> for a reply
outside any record), ``own`` (the reply belongs to that record's own turn, not a
subagent's), ``turn_id``/``outer_turn_id`` (innermost and outermost ``harpe.turn.id`` of
the row, ``""`` when none), ``depth`` (number of turn scopes), ``line``, ``time`` (UTC),
``event``, ``provider``, ``model`` and the four token counts."""


class Journal:
    """Harpe's ``harpe.transcript.Journal``: write the driver's brackets, read turns back.

    Writing: ``Journal(logger)`` then, per user turn, ``request(payload)``, the turn's
    records (a `TurnLog`, see `turn`), ``response(payload)``. Reading (static): `records`,
    `stream`, `load`, `usage`, `check`.
    """

    def __init__(self, logger: "JsonlLogger") -> None:
        if not isinstance(logger, JsonlLogger):
            raise TypeError(f"Journal writes through a JsonlLogger, got {_show(logger)}")
        self.logger = logger

    def request(self, payload: Any) -> None:
        """Open a bracket: ``harpe.turn.request {"data": payload}`` (any Value). Harpe's
        CLI uses ``{"text": <user line>}``."""
        self.logger.log(REQUEST, {"data": payload})

    def response(self, payload: Any = "turnEnd") -> None:
        """Close the bracket: ``harpe.turn.response {"data": payload}`` (Harpe's CLI writes
        the bare string ``"turnEnd"``)."""
        self.logger.log(RESPONSE, {"data": payload})

    def turn(self, turn_id: str | None = None) -> "TurnLog":
        """A `TurnLog` writing one turn through this journal's logger."""
        return TurnLog(self.logger, turn_id)

    # -- reading -------------------------------------------------------------------------

    @staticmethod
    def stream(source: Any, *, errors: str = "strict") -> RecordStream:
        """Iterate the turns of ``source`` (a path, or an iterable of `Entry`) one at a time,
        in constant memory. See `records` for the rules."""
        return RecordStream(source, errors=errors)

    @staticmethod
    def records(source: Any, *, errors: str = "strict") -> Records:
        """Harpe's ``Journal.records``: one `TurnRecord` per bracket that holds a turn.

        ``source`` is a journal path or an iterable of `Entry` (e.g. `read_entries`).
        ``errors="skip"`` skips bad lines and lists them in the result's ``problems``.
        Raises `MissingJournalError` for a missing file and `JournalError` for a bad line
        (strict). See the module docstring for the reading rules and the legacy readers.
        """
        stream = RecordStream(source, errors=errors)
        records = list(stream)
        return Records(records, problems=stream.problems, notes=stream.notes, generations=stream.generations,
                       reader=stream.reader, path=stream.path, prefix=stream.prefix)

    @staticmethod
    def check(source: Any) -> Records:
        """Read ``source`` completely, skipping bad lines, and decode every message and
        usage record (also those `records` does not look at, e.g. in subagent turns or
        outside brackets). The result's ``problems`` lists every bad line."""
        stream = RecordStream(source, errors="skip", validate_all=True)
        records = list(stream)
        return Records(records, problems=stream.problems, notes=stream.notes, generations=stream.generations,
                       reader=stream.reader, path=stream.path, prefix=stream.prefix)

    @staticmethod
    def load(path: Any, *, max_chars: int = 1_000_000, errors: str = "strict") -> list[Message]:
        """The history Harpe resumes from (§3.5): every turn's user input plus the messages
        of answered turns, then `truncate` to ``max_chars`` (whole oldest turns dropped,
        the newest always kept). A missing file raises `MissingJournalError` (start a new
        session by writing a new journal instead)."""
        if not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 0:
            raise ValueError(f"max_chars must be an int >= 0, got {max_chars!r}")
        return truncate(Journal.records(path, errors=errors).history(), max_chars)

    @staticmethod
    def usage(source: Any, *, errors: str = "strict") -> "pandas.DataFrame":
        """One row per model reply in the journal (columns: `USAGE_COLUMNS`).

        Rows come from ``harpe.metering.usage``; in a journal without any, from the older
        token-carrying events (``harpe.model``, ``harpe.models.replied``,
        ``harpe.model.replied``). Each row says which record (and whether its own turn or
        a subagent's) it belongs to."""
        import pandas as pd

        rows: list[dict[str, Any]] = []
        stream = RecordStream(source, errors=errors, usage_rows=rows)
        for _ in stream:
            pass
        if any(r["event"] == USAGE for r in rows):
            rows = [r for r in rows if r["event"] == USAGE]
        rows.sort(key=lambda r: r["line"])
        frame = pd.DataFrame(rows, columns=list(USAGE_COLUMNS))
        frame["record"] = frame["record"].astype("Int64")
        frame["own"] = frame["own"].astype(bool)
        for col in ("depth", "line", "input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens"):
            frame[col] = frame[col].astype("int64")
        frame["time"] = pd.to_datetime(frame["time"], utc=True)
        return frame


# --- writing ------------------------------------------------------------------------------


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
    raise JournalError(f"{where} is {_show(value)}; a journal value is a str, int, float, bool, list or dict")


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
            raise TypeError(f"TurnLog writes through a JsonlLogger, got {_show(logger)}")
        if turn_id is None:
            turn_id = secrets.token_hex(8)
        if not isinstance(turn_id, str) or not _HEX16.fullmatch(turn_id):
            raise ValueError(f"turn_id must be 16 lowercase hex digits (secrets.token_hex(8)), got {turn_id!r}")
        self.id = turn_id
        self.logger = logger.with_context(f"{_TURN_PREFIX}{turn_id}")
        self.outcome: Outcome | None = None
        self._has_user = False

    # -- messages and terminators ------------------------------------------------------------

    def _check_open(self, what: str) -> None:
        if self.outcome is not None:
            raise JournalError(f"turn {self.id} already ended ({self.outcome}); cannot write {what}")

    def user(self, input: UserInput) -> None:
        """The turn's user input (written once, first)."""
        if not isinstance(input, UserInput):
            raise TypeError(f"user() takes a UserInput, got {_show(input)}")
        self._check_open("a user message")
        if self._has_user:
            raise JournalError(f"turn {self.id} already has its user message; a turn has one input")
        self.logger.log(MESSAGE, encode_message(input))
        self._has_user = True

    def _produced(self, message: Message, kind: type, what: str) -> None:
        if not isinstance(message, kind):
            raise TypeError(f"{what}() takes a {kind.__name__}, got {_show(message)}")
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
            raise TypeError(f"failed() takes an error detail string, got {_show(error)}")
        self._end("failed", FAILED, {"error": error})

    @property
    def ended(self) -> bool:
        return self.outcome is not None

    # -- usage and model events (§2.5) -------------------------------------------------------

    def usage(self, usage: Usage) -> None:
        """``harpe.metering.usage`` for one model reply (write it right after
        `model_replied`, before the reply's `assistant` message)."""
        if not isinstance(usage, Usage):
            raise TypeError(f"usage() takes a Usage, got {_show(usage)}")
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
