"""The 0.4-era fold (§3.7), for journals without brackets: every ``harpe.turn.started``
opens a turn, a terminator ends it, and an unterminated one reads as interrupted."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..messages import Message, UserInput
from . import _codec
from ._events import Kind
from ._problems import Lines
from ._records import Item, TurnRecord, UsageRows, decode, metered, outcome, usages

__all__ = ["Fold"]


@dataclass(slots=True)
class _Open:
    """The turn being folded."""

    user: UserInput
    first: int
    """Its ``started`` line."""
    started: datetime
    last: int
    """Its last line so far."""
    messages: list[Message] = field(default_factory=list)
    usage: list[Item] = field(default_factory=list)


class Fold:
    """Folds the turn records read before any bracket into `TurnRecord` s (``request is
    None``). A bracketed journal drops them (`drop`)."""

    def __init__(self, lines: Lines, rows: UsageRows | None) -> None:
        self.lines = lines
        self.rows = rows
        self.records: list[TurnRecord] = []
        self.turn: _Open | None = None

    def feed(self, item: Item) -> None:
        """Take a line whose event the turn logic reads (``item.kind`` is not OTHER)."""
        kind, turn = item.kind, self.turn
        if kind == Kind.STARTED:
            if turn is not None:
                self._close(None, turn.last)
            m = decode(item, self.lines)
            if isinstance(m, UserInput):
                self.turn = _Open(user=m, first=item.line, started=item.time, last=item.line)
        elif kind == Kind.MESSAGE or kind == Kind.END:
            if turn is None:
                return
            turn.last = item.line
            if kind == Kind.END:
                self._close(item, item.line)
                return
            m = decode(item, self.lines)
            if m is not None and not isinstance(m, UserInput):
                turn.messages.append(m)
        elif turn is not None and (kind == Kind.USAGE or _codec.carries_tokens(item.fields)):
            turn.usage.append(item)

    def _close(self, end: Item | None, last: int) -> None:
        turn = self.turn
        assert turn is not None
        self.turn = None
        metering = metered(turn.usage)
        if self.rows is not None:
            self.rows.add(turn.usage, len(self.records), True, metering)
        self.records.append(TurnRecord(
            request=None, response=None, data=outcome(turn.user, turn.messages, end, self.lines),
            usage=usages(turn.usage, metering, self.lines), terminated=end is not None, lines=(turn.first, last),
            started=turn.started, ended=end.time if end else None,
        ))

    def finish(self) -> list[TurnRecord]:
        """End of input: close the open turn (it reads as interrupted); the records."""
        if self.turn is not None:
            self._close(None, self.turn.last)
        return self.records

    def drop(self) -> int:
        """Forget everything folded (the first bracket was read); how many turns that was."""
        dropped = len(self.records) + (self.turn is not None)
        if self.rows is not None:
            self.rows.forget_records()  # only folded turns have rows with a record so far
            if self.turn is not None:
                self.rows.add(self.turn.usage, None, False)
        self.records, self.turn = [], None
        return dropped
