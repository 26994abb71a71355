"""`Journal`: Harpe's driver view of a journal — write the request/response brackets, and
read turns, history and usage back."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .._text import truncate
from ..messages import Message
from ._events import REQUEST, RESPONSE, USAGE
from ._problems import show
from ._records import Records
from ._stream import RecordStream
from ._writer import JsonlLogger, TurnLog

if TYPE_CHECKING:  # pandas is imported only by Journal.usage
    import pandas

__all__ = ["Journal", "USAGE_COLUMNS"]


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
            raise TypeError(f"Journal writes through a JsonlLogger, got {show(logger)}")
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
