"""Journal lines and their generations (§1): every envelope read into one normal form, the
`Entry`, and the one line parser both readers use.

Generations are detected **per line** (§1.5, §1.6); see the package docstring for the table.
Flat lines (G1–G3) keep every key but ``time``/``event``/``category`` (and a G3 scope list)
as fields; G3 and G4 scope lists are reversed to outermost first, each object scope becoming
one ``key=value`` string per key; string scopes (G4b/G5) are kept as written.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterator, Mapping, Sequence

import orjson

from ..errors import JournalError, MissingJournalError
from ..messages import Message
from . import _codec
from ._codec import inexact
from ._events import GENERATIONS, SESSION_MESSAGE, TURN_PREFIX
from ._problems import SKIP, Bad, Lines, Problem, show

__all__ = [
    "Entry", "EntryReader", "read_entries", "format_time", "parse_time", "fromiso", "UTC", "turn_ids", "strict",
    "classify", "exact_fields", "open_journal", "parse_lines", "Line"
]

# --- time (§1.2) ---------------------------------------------------------------------------

UTC = timezone.utc
_EXAMPLE_TIME = '"2026-09-03T10:15:02.118204Z"'
_fromiso = datetime.fromisoformat


def format_time(epoch_seconds: float) -> str:
    """Harpe's ``Clock.toRfc3339``: RFC 3339 UTC, 6 fractional digits, ``Z`` suffix."""
    text = datetime.fromtimestamp(epoch_seconds, tz=UTC).isoformat(timespec="microseconds")
    return text.replace("+00:00", "Z")


def _iso(value: str) -> datetime:
    if value[-1:] in ("Z", "z"):
        value = value[:-1] + "+00:00"
    return _fromiso(value)


fromiso = _fromiso if sys.version_info >= (3, 11) else _iso
"""``datetime.fromisoformat``, taught the ``Z`` suffix before Python 3.11."""


def parse_time(value: Any) -> datetime:
    """A journal ``time`` as an aware UTC datetime; SessionLog epoch numbers accepted."""
    if type(value) is str:
        try:
            parsed = fromiso(value)
        except ValueError:
            raise Bad(f"'time' is not an RFC 3339 time: {value!r}; expected e.g. {_EXAMPLE_TIME}") from None
        if parsed.tzinfo is None:
            raise Bad(f"'time' {value!r} has no UTC offset; expected e.g. {_EXAMPLE_TIME} (Z = UTC)")
        return parsed if parsed.tzinfo is UTC else parsed.astimezone(UTC)
    if type(value) in (int, float):
        try:
            return datetime.fromtimestamp(value, tz=UTC)
        except (OverflowError, OSError, ValueError):
            raise Bad(f"'time' {value!r} is not a valid epoch time in seconds") from None
    if value is None:
        raise Bad(f"the record has no 'time'; every journal line needs one, e.g. {_EXAMPLE_TIME}")
    raise Bad(f"'time' must be an RFC 3339 string such as {_EXAMPLE_TIME}, got {show(value)}")


# --- scopes ---------------------------------------------------------------------------------

_TP_LEN = len(TURN_PREFIX)


def turn_ids(scopes: Sequence[str]) -> tuple[str, ...]:
    """The turn ids of the ``harpe.turn.id`` scopes among ``scopes``, in order."""
    if len(scopes) == 1:
        s = scopes[0]
        return (s[_TP_LEN:],) if s.startswith(TURN_PREFIX) else ()
    return tuple([s[_TP_LEN:] for s in scopes if s.startswith(TURN_PREFIX)])


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
            raise Bad(f"{where}holds null; expected scope strings or objects")
    return tuple(out)


# --- the normal form ------------------------------------------------------------------------


def strict(generation: str) -> bool:
    """Four-key lines are decoded as strictly as Harpe's newest decoder; older ones leniently."""
    return generation == "G5" or generation == "G4"


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
        if self.time.tzinfo is not UTC:
            object.__setattr__(self, "time", self.time.astimezone(UTC))
        if not isinstance(self.event, str):
            raise TypeError(f"Entry.event must be a str, got {show(self.event)}")
        if not isinstance(self.fields, Mapping):
            raise TypeError(f"Entry.fields must be a mapping, got {show(self.fields)}")
        if not isinstance(self.fields, MappingProxyType):
            # a read-only view; a dict the reader just decoded is wrapped, not copied
            fields = self.fields if type(self.fields) is dict else dict(self.fields)
            object.__setattr__(self, "fields", MappingProxyType(fields))
        if not isinstance(self.context, tuple):
            object.__setattr__(self, "context", tuple(self.context))
        for scope in self.context:
            if not isinstance(scope, str):
                raise TypeError(f"Entry.context holds scope strings, got {show(scope)}")

    @property
    def turns(self) -> tuple[str, ...]:
        """The turn ids of the record's ``harpe.turn.id`` scopes, in ``context`` order."""
        return turn_ids(self.context)

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
            return _codec.message(self.fields, strict(self.generation))
        except Bad as bad:
            raise JournalError(bad.reason, line=self.line or None, event=self.event) from None


def classify(obj: Any) -> tuple[str, str, dict, tuple[str, ...] | list, Any]:
    """(generation, event, fields, context, raw time) of any journal line, or `Bad`.

    ``context`` is a list as written for string scopes and a normalised tuple otherwise."""
    if type(obj) is not dict:
        raise Bad(f"expected a JSON object per line, got {show(obj)}")
    t = obj.get("time")
    event = obj.get("event")
    fields = obj.get("fields")
    if "fields" in obj and event is not None and (fields is None or type(fields) is dict or
                                                   set(obj) <= {"time", "event", "fields", "context"}):
        # four-key envelope (G4, G4b, G5)
        if type(event) is not str:
            raise Bad(f"'event' must be a string, got {show(event)}")
        if fields is None:
            fields = {}
        elif type(fields) is not dict:
            raise Bad(f"'fields' must be an object, got {show(fields)}", event)
        ctx = obj.get("context")
        if ctx is None:
            return "G5", event, fields, (), t
        if type(ctx) is not list:
            raise Bad(f"'context' must be a list of scope strings, got {show(ctx)}", event)
        if all(type(s) is str for s in ctx):
            return "G5", event, fields, ctx, t
        if all(type(s) is dict for s in ctx):
            return "G4", event, fields, _object_scopes(ctx, "'context' "), t
        raise Bad(f"'context' must hold only scope strings (G5) or only objects (G4), got {show(ctx)}", event)
    if event is not None or obj.get("category") is not None:
        gen = "G2"
        if event is None:
            gen, event = "G1", obj["category"]
        if type(event) is not str:
            raise Bad(f"'{'category' if gen == 'G1' else 'event'}' must be a string, got {show(event)}")
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
        raise Bad("not a journal record: no 'time', 'event' or 'role'; expected "
                  '{"time": ..., "event": ..., "fields": {...}, "context": [...]}')
    raise Bad("the record has no 'event' (nor a legacy 'category'); every journal record names its event")


def _exact(raw: bytes) -> Any:
    return json.loads(raw[3:] if raw.startswith(b"\xef\xbb\xbf") else raw)


def exact_fields(raw: bytes) -> Mapping[str, Any]:
    """A line's fields re-read with Python's ``json`` (exact integers of any size)."""
    return classify(_exact(raw))[2]


# --- reading lines --------------------------------------------------------------------------


_BUFFER = 1 << 20


def open_journal(path: Any) -> Any:
    """``path`` opened for binary reading, or `MissingJournalError` / `JournalError`."""
    p = Path(os.fspath(path))
    try:
        # a 1 MB buffer: the default 8 kB costs a read() call every few lines, a tenth of
        # the time it takes to parse them (any line length still works)
        return open(p, "rb", buffering=_BUFFER)
    except FileNotFoundError:
        raise MissingJournalError(
            "no journal here. To start a new session instead, write one with "
            f"JsonlLogger({str(p)!r}) (or `harpe-lab chat {p} --model ...`, which creates it); "
            "otherwise check the path",
            path=p,
        ) from None
    except IsADirectoryError:
        raise JournalError("is a directory; expected a journal file (.jsonl)", path=p) from None


Line = tuple  # (line number, generation, event, fields, context, time, raw bytes)


def parse_lines(path: Any, lines: Lines, generations: set[str], *, exact: bool = False) -> Iterator[Line]:
    """Every record of a journal file, its envelope checked, in file order: ``(line,
    generation, event, fields, context, time, raw)`` with ``time`` an aware UTC datetime
    and ``raw`` the line's bytes (to re-read it exactly when a number needs it). Bad lines
    go to ``lines`` (which raises when strict) and are skipped; blank lines are skipped.

    ``generations`` is told each generation seen. ``exact``: re-read at once, with
    Python's ``json``, a line holding a number orjson may have read inexactly (otherwise
    the turn logic re-reads only what it decodes).
    """
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    dict_, list_, str_ = dict, list, str
    utc = UTC
    g5 = False
    with open_journal(path) as f:
        for lineno, raw in enumerate(f, 1):
            try:
                obj = loads(raw)
            except decode_error as exc:
                obj = lines.slow_decode(lineno, raw, exc)
                if obj is SKIP:
                    continue
            if exact and inexact(obj):
                obj = _exact(raw)
            # the common case, a well-formed G5 line, checked in place; anything else is
            # classified (and its errors worded) by `classify`
            if type(obj) is dict_ and len(obj) == 4:
                try:
                    t, event, fields, ctx = obj["time"], obj["event"], obj["fields"], obj["context"]
                except KeyError:
                    t = None
                if type(t) is str_ and type(event) is str_ and type(fields) is dict_ and type(ctx) is list_:
                    for s in ctx:
                        if type(s) is not str_:
                            break
                    else:
                        try:
                            when = fromiso(t)
                            if when.tzinfo is not utc:
                                when = parse_time(t)
                        except (ValueError, Bad):
                            try:
                                when = parse_time(t)  # says what is wrong with it
                            except Bad as bad:
                                lines.bad(lineno, bad.reason, event)
                                continue
                        if not g5:
                            generations.add("G5")
                            g5 = True
                        yield lineno, "G5", event, fields, ctx, when, raw
                        continue
            try:
                gen, event, fields, ctx, t = classify(obj)
                when = parse_time(t)
            except Bad as bad:
                lines.bad(lineno, bad.reason, bad.event)
                continue
            generations.add(gen)
            yield lineno, gen, event, fields, ctx, when, raw


class EntryReader:
    """Iterator over a journal's `Entry` s (what `read_entries` returns). After (or during)
    iteration, ``problems``, ``notes`` and ``generations`` say what was found."""

    def __init__(self, path: Any, errors: str = "strict") -> None:
        self._lines = Lines(path, errors)
        self._seen: set[str] = set()
        self._iter = self._read(path)

    @property
    def generations(self) -> tuple[str, ...]:
        """The envelope generations of the lines read so far."""
        return tuple(g for g in GENERATIONS if g in self._seen)

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
        for lineno, gen, event, fields, ctx, when, _ in parse_lines(path, self._lines, self._seen, exact=True):
            yield Entry(when, event, fields, tuple(ctx), lineno, gen)


def read_entries(path: Any, *, errors: str = "strict") -> EntryReader:
    """Stream a journal's lines as `Entry` s, one at a time, in file order.

    Every generation is read (see the package docstring); blank lines are skipped. With
    ``errors="strict"`` a bad line raises `JournalError` (path, line, what was expected);
    with ``errors="skip"`` it is skipped and listed in the reader's ``problems``. A torn
    last line warns (`TornLineWarning`) and is listed in ``notes``. A missing file raises
    `MissingJournalError`.
    """
    return EntryReader(path, errors)
