"""How a reader reports what it found: bad lines (`problems`, or `JournalError` when
strict), things Harpe drops by design (`notes`), a torn last line (`TornLineWarning`)."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import JournalError

__all__ = [
    "TornLineWarning", "Problem", "Bad", "Inexact", "Lines", "show", "check_errors", "ERRORS", "FIX", "SKIP"
]

ERRORS = ("strict", "skip")
FIX = 'fix or delete the line, or read with errors="skip" to skip bad lines'
SKIP = object()
"""What `Lines.slow_decode` returns for a line that holds no record."""


class TornLineWarning(UserWarning):
    """The journal's last line is incomplete (the writer stopped mid-line); it was ignored."""


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


class Bad(Exception):
    """A line is malformed; ``reason`` says what was expected. Located by the caller."""

    def __init__(self, reason: str, event: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.event = event


class Inexact(Bad):
    """A number orjson could not read exactly; the line is re-read with ``json``."""


def show(value: Any) -> str:
    """A value's type and a short repr, for error messages."""
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def check_errors(errors: str) -> None:
    if errors not in ERRORS:
        raise ValueError(f"errors must be one of {ERRORS}, but {errors!r} was passed")


class Lines:
    """The line-level bookkeeping of a reader: problems, notes, torn tail, byte-order mark."""

    def __init__(self, path: Any, errors: str) -> None:
        check_errors(errors)
        self.path = None if path is None else str(path)
        self.errors = errors
        self.problems: list[Problem] = []
        self.notes: list[Problem] = []
        self._bad_lines: set[int | None] = set()

    def bad(self, line: int | None, reason: str, event: str | None = None) -> None:
        if self.errors == "strict":
            raise JournalError(f"{reason}; {FIX}", path=self.path, line=line, event=event)
        if line is None or line not in self._bad_lines:  # check mode may decode a line twice
            self._bad_lines.add(line)
            self.problems.append(Problem(line=line, reason=reason, event=event))

    def note(self, line: int | None, reason: str, event: str | None = None) -> None:
        self.notes.append(Problem(line=line, reason=reason, event=event))

    def slow_decode(self, lineno: int, raw: bytes, exc: Exception) -> Any:
        """A line orjson refused: a BOM, a blank line, JSON only Python's ``json`` reads
        (``NaN``, integers beyond 64 bits, lone surrogates — all things Harpe's
        ``json.dumps`` can write), or a bad line. Returns the value or `SKIP`."""
        if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
            raw = self.strip_bom(raw)
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError as again:
                exc = again
        if not raw.strip():
            return SKIP
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):
            pass
        self.undecodable(lineno, raw, exc)
        return SKIP

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
