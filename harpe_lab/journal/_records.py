"""What the readers return — `TurnData`, `TurnRecord`, `Records` — and the records a reader
holds while a bracket is open (`Item`), with the one way to decode them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from ..messages import AssistantMessage, Message, ToolResults, Usage, UserInput
from . import _codec
from ._envelope import exact_fields
from ._events import OUTCOMES, TERMINATOR_OUTCOME, Kind, Outcome
from ._problems import Bad, Inexact, Lines, Problem, show

__all__ = [
    "TurnData", "TurnRecord", "Records", "Item", "decode", "decode_usage", "outcome", "usages", "metered",
    "UsageRows", "BARE", "turn_data"
]


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
            raise TypeError(f"TurnData.input must be a UserInput, got {show(self.input)}")
        if not isinstance(self.messages, tuple):
            object.__setattr__(self, "messages", tuple(self.messages))
        for m in self.messages:
            if type(m) is not AssistantMessage and type(m) is not ToolResults \
                    and not isinstance(m, (AssistantMessage, ToolResults)):
                raise TypeError(f"TurnData.messages holds assistant replies and tool results, got {show(m)}")
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, but {self.outcome!r} was passed")
        if not isinstance(self.error, str):
            raise TypeError(f"TurnData.error must be a str, got {show(self.error)}")
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
            raise TypeError(f"TurnRecord.data must be a TurnData, got {show(self.data)}")
        if type(self.usage) is not tuple:
            object.__setattr__(self, "usage", tuple(self.usage))
        if type(self.nested_usage) is not tuple:
            object.__setattr__(self, "nested_usage", tuple(self.nested_usage))

    @property
    def outcome(self) -> Outcome:
        """Shortcut for ``data.outcome``."""
        return self.data.outcome


class Records(list):
    """The list of `TurnRecord` s `Journal.records` returns, with what the reader found.

    ``problems``: bad lines skipped (only with ``errors="skip"``; strict reading raises
    instead). ``notes``: records Harpe drops by design (fragments, orphan responses,
    discarded spans) and tolerated oddities (a torn last line, a byte-order mark).
    ``generations``: the envelope generations seen. ``reader``: ``"brackets"``,
    ``"fold"``, ``"sessionlog"`` or ``"none"`` (see the package docstring). `history`
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


# --- what a reader holds ----------------------------------------------------------------------

_STARTED, _USAGE = Kind.STARTED, Kind.USAGE


class Item(NamedTuple):
    """One line the turn logic reads (a message, a terminator, a ``started``, a usage row),
    held until its bracket closes."""

    kind: int
    """Its `Kind`."""
    line: int
    event: str
    fields: Mapping[str, Any]
    turns: tuple[str, ...]
    """The turn ids of its ``harpe.turn.id`` scopes, in ``context`` order."""
    generation: str
    time: datetime
    raw: bytes | None
    """The line's bytes (``None`` for an `Entry`), to re-read a number exactly."""


def decode(item: Item, lines: Lines) -> Message | None:
    """An item's message (a ``started`` line's user input), read exactly; ``None`` (and a
    problem for ``lines``) when it is malformed."""
    kind, _, event, fields, _, gen, _, raw = item
    if kind == _STARTED:
        fields = _codec.as_user(fields)
    is_strict = gen == "G5" or gen == "G4"  # `strict`, inlined: once per message read
    try:
        m = _codec.message(fields, is_strict)
        if type(m) is AssistantMessage and raw is not None and m.calls and _codec.calls_inexact(m.calls):
            m = _codec.message(_exact(item), is_strict)
        return m
    except Inexact as bad:
        if item.raw is not None:
            try:
                return _codec.message(_exact(item), is_strict)
            except Bad as again:
                bad = again
        lines.bad(item.line, bad.reason, item.event)
    except Bad as bad:
        lines.bad(item.line, bad.reason, item.event)
    return None


def decode_usage(item: Item, lines: Lines) -> Usage | None:
    """An item's usage row, read exactly; ``None`` (and a problem) when it is malformed."""
    gen = item.generation
    is_strict = gen == "G5" or gen == "G4"  # `strict`, inlined: once per usage row read
    try:
        return _codec.usage(item.event, item.fields, is_strict)
    except Inexact as bad:
        if item.raw is not None:
            try:
                return _codec.usage(item.event, exact_fields(item.raw), is_strict)
            except Bad as again:
                bad = again
        lines.bad(item.line, bad.reason, item.event)
    except Bad as bad:
        lines.bad(item.line, bad.reason, item.event)
    return None


def _exact(item: Item) -> Mapping[str, Any]:
    fields = exact_fields(item.raw)  # type: ignore[arg-type]
    return _codec.as_user(fields) if item.kind == Kind.STARTED else fields


def _bare_matches() -> bool:
    data = TurnData(input=UserInput("u"), messages=(), outcome="answered")
    values = {"input": data.input, "messages": (), "outcome": "answered", "error": ""}
    record = TurnRecord(request="q", response="r", data=data)
    fields = {"request": "q", "response": "r", "data": data, "usage": (), "nested_usage": (), "turn_id": "",
              "terminated": True, "lines": (0, 0), "started": None, "ended": None}
    try:
        return (_codec.BARE and vars(data) == values and _codec.bare(TurnData, dict(values)) == data
                and vars(record) == fields and _codec.bare(TurnRecord, dict(fields)) == record)
    except (TypeError, AttributeError):
        return False


BARE = _bare_matches()
"""Whether the readers may build `TurnData` and `TurnRecord` bare, as `_codec` builds
messages: their ``__post_init__`` checks what the readers guarantee by construction
(types, tuples, an error only for a failed turn) and costs a tenth of a record's reading."""


def turn_data(user: UserInput, messages: tuple[Message, ...], said: Outcome, error: str = "") -> TurnData:
    """A `TurnData` the reader built (see `BARE`)."""
    if BARE:
        return _codec.bare(TurnData, {"input": user, "messages": messages, "outcome": said, "error": error})
    return TurnData(input=user, messages=messages, outcome=said, error=error)


def outcome(user: UserInput, messages: list[Message], end: Item | None, lines: Lines) -> TurnData:
    """The turn's `TurnData` as its terminator ``end`` says (none: interrupted, messages kept)."""
    if end is None:
        return turn_data(user, tuple(messages), "interrupted")
    said = TERMINATOR_OUTCOME[end.event]
    if said == "answered":
        return turn_data(user, tuple(messages), "answered")
    if said == "interrupted":
        return turn_data(user, (), "interrupted")
    try:
        detail = _codec.error_detail(end.fields)
    except Bad as bad:
        lines.bad(end.line, bad.reason, end.event)
        detail = ""
    return turn_data(user, (), "failed", detail)


def usages(items: Sequence[Item | Usage], metering: bool, lines: Lines) -> tuple[Usage, ...]:
    """Decode usage items (a `Usage` among them is taken as it is). Older token events count only when the bracket has no
    ``harpe.metering.usage`` (``metering``), so no reply is counted twice."""
    out = []
    for item in items:
        if type(item) is Usage:  # decoded as it was read (`Assembler.run`)
            out.append(item)
            continue
        if metering and item.kind != _USAGE:
            continue
        u = decode_usage(item, lines)
        if u is not None:
            out.append(u)
    return tuple(out)


def metered(items: Iterable[Item]) -> bool:
    """Whether ``items`` hold a ``harpe.metering.usage`` row (older token events then do
    not count)."""
    return any(item.kind == Kind.USAGE for item in items)


class UsageRows:
    """The rows of `Journal.usage`, collected while reading: one per model reply, with the
    record it belongs to."""

    def __init__(self, lines: Lines, rows: list[dict[str, Any]]) -> None:
        self.lines = lines
        self.rows = rows

    def add(self, items: Iterable[Item], record: int | None, own: bool, metering: bool = False) -> None:
        for item in items:
            if item.kind >= Kind.USAGE and not (metering and item.kind != Kind.USAGE):
                self.row(item, record, own)

    def row(self, item: Item, record: int | None, own: bool) -> None:
        u = decode_usage(item, self.lines)
        if u is None:
            return
        turns = item.turns
        self.rows.append({
            "record": record, "own": own, "turn_id": turns[-1] if turns else "",
            "outer_turn_id": turns[0] if turns else "", "depth": len(turns), "line": item.line,
            "time": item.time, "event": item.event, "provider": u.provider, "model": u.model,
            "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens,
        })

    def forget_records(self) -> None:
        """The rows read so far belong to no record (a bracketed journal drops its fold)."""
        for row in self.rows:
            row["record"], row["own"] = None, False
