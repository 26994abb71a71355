"""SessionLog files (§1.6), Harpe's pre-Journal message log: no brackets, no outcomes,
one message per line. A turn starts at each user message and reads as answered."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from ..messages import Message, UserInput
from ._events import Kind
from ._problems import Lines
from ._records import Item, TurnData, TurnRecord, decode

__all__ = ["SessionLog"]


@dataclass(slots=True)
class _Turn:
    user: UserInput
    first: int
    last: int
    started: datetime
    ended: datetime
    messages: list[Message] = field(default_factory=list)


class SessionLog:
    """Collects a SessionLog's messages (`add`), then reads them as turns (`records`)."""

    def __init__(self, lines: Lines) -> None:
        self.lines = lines
        self.messages: list[tuple[int, datetime, Message]] = []

    def __len__(self) -> int:
        return len(self.messages)

    @property
    def first_line(self) -> int:
        return self.messages[0][0]

    def add(self, item: Item) -> None:
        """Take a SessionLog line (its fields are the message)."""
        m = decode(item._replace(kind=Kind.MESSAGE), self.lines)
        if m is not None:
            self.messages.append((item.line, item.time, m))

    def records(self) -> tuple[list[TurnRecord], tuple[Message, ...]]:
        """The turns, and the messages before the first user message (they belong to no
        turn; the history keeps them)."""
        records: list[TurnRecord] = []
        prefix: list[Message] = []
        turn: _Turn | None = None
        for line, t, m in self.messages:
            if isinstance(m, UserInput):
                if turn is not None:
                    records.append(_record(turn))
                turn = _Turn(user=m, first=line, last=line, started=t, ended=t)
            elif turn is None:
                prefix.append(m)
            else:
                turn.messages.append(m)
                turn.last, turn.ended = line, t
        if turn is not None:
            records.append(_record(turn))
        if prefix:
            self.lines.note(self.first_line, f"{len(prefix)} SessionLog message(s) before the first user "
                                             "message belong to no turn (they are kept in the history)")
        return records, tuple(prefix)


def _record(turn: _Turn) -> TurnRecord:
    return TurnRecord(request=None, response=None,
                      data=TurnData(input=turn.user, messages=tuple(turn.messages), outcome="answered"),
                      lines=(turn.first, turn.last), started=turn.started, ended=turn.ended)
