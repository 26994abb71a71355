"""`RecordStream`: a journal's turns one at a time, from a path or from `Entry` objects —
both through the one `Assembler.run`."""

from __future__ import annotations

import os
from typing import Any, Iterable, Iterator

from ..messages import Message
from ._brackets import Assembler
from ._envelope import Entry, EntryReader, Line, parse_lines
from ._problems import Lines, Problem, check_errors, show
from ._records import TurnRecord, UsageRows

__all__ = ["RecordStream"]


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
        check_errors(errors)
        is_path = isinstance(source, (str, os.PathLike))
        self._upstream = source._lines if isinstance(source, EntryReader) else None
        path = source if is_path else self._upstream.path if self._upstream else None
        self._lines = Lines(path, errors)
        rows = None if usage_rows is None else UsageRows(self._lines, usage_rows)  # Journal.usage's table
        self._asm = Assembler(self._lines, validate_all=validate_all, rows=rows)
        self._seen: set[str] = set()
        self.reader = "none"
        self.prefix: tuple[Message, ...] = ()
        lines = parse_lines(source, self._lines, self._seen) if is_path else self._from_entries(source)
        self._iter = self._run(lines)

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

    def _run(self, lines: Iterator[Line]) -> Iterator[TurnRecord]:
        yield from self._asm.run(lines)
        tail, self.reader, self.prefix = self._asm.finish()
        yield from tail

    def _from_entries(self, entries: Iterable[Entry]) -> Iterator[Line]:
        seen = self._seen
        for i, e in enumerate(entries, 1):
            if not isinstance(e, Entry):
                raise TypeError(f"Journal.records reads a path or Entry objects, got {show(e)} at position {i}")
            seen.add(e.generation)
            yield e.line or i, e.generation, e.event, e.fields, e.context, e.time, None
