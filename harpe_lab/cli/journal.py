"""``harpe-lab journal inspect|check``: what a Harpe journal holds, and what is wrong with it.

The file is sniffed first: a missing, empty or binary file or a folder is one clear error,
and a transcript of another kind (a Claude Code session, a SWE-agent trajectory, ...) is
named, with the command that reads it, instead of being reported as a journal of 0 turns.
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import Any

from ..errors import HarpeLabError, ImportFormatError, JournalError
from ..journal import Journal, Records, TornLineWarning
from ._table import render, tokens

__all__ = ["cli_inspect", "cli_check"]

_OUTCOMES = ("answered", "interrupted", "failed")


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


class NotAJournalError(HarpeLabError):
    """The file is readable but is not a Harpe journal."""


def sniff(path: str) -> None:
    """Raise a one-line error unless ``path`` may be a Harpe journal: missing, a folder,
    empty, binary, or a transcript of another known format (named, with the command that
    reads it). A file no format recognises is left to the journal reader, which reports
    its bad lines."""
    p = Path(path).expanduser()
    if not p.exists():
        raise JournalError("no such file; check the path (a Harpe journal is a .jsonl file)", path=path)
    if p.is_dir():
        raise JournalError("is a folder; pass one journal file (.jsonl) inside it", path=path)
    with p.open("rb") as f:
        head = f.read(64 * 1024)
    if not head.strip():
        raise JournalError("the file is empty: it holds no journal events (a Harpe journal has one JSON "
                           "event per line); nothing to inspect", path=path)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        binary = b"\0" in head or e.start < len(head) - 4  # a cut multi-byte character at the end is text
    else:
        binary = b"\0" in head
    if binary:
        raise JournalError("not text (a binary file?); a Harpe journal is UTF-8 JSON Lines", path=path)
    from ..importers import describe_format, detect_format

    try:
        fmt = detect_format(p)
    except ImportFormatError:
        return  # no known format: perhaps a journal with bad lines; the reader says which
    if fmt != "harpe":
        raise NotAJournalError(f"{path} is {describe_format(fmt)}, not a Harpe journal — use "
                               f"`harpe-lab replay {path}` to replay it")


def _read(path: str, **options: Any) -> Records:
    """Read the journal after `sniff`. The reader's torn-line warning is left out: the CLI
    prints the same diagnosis once, as a note. A file of which no line is a journal event
    is not a journal."""
    sniff(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)
        records = Journal.records(path, **options)
    if not records and (records.problems or records.notes) and not records.generations:
        raise NotAJournalError(
            f"{path}: not a Harpe journal: no line is a Harpe event ({len(records.problems)} bad line(s)); "
            f"`harpe-lab journal check {path}` lists them"
        )
    return records


def cli_inspect(args: argparse.Namespace) -> int:
    """``harpe-lab journal inspect PATH``: the turns with outcome, message count and usage.
    Bad lines are skipped and counted (run ``check`` to list them)."""
    records = _read(args.path, errors="skip")
    gens = ", ".join(records.generations) or "-"
    print(f"{records.path}: {len(records):,} turns · generation {gens} · read by {records.reader}")
    totals = [0, 0, 0, 0, 0, 0]
    outcomes = {o: 0 for o in _OUTCOMES}
    rows = []
    for i, r in enumerate(records):
        outcome = r.data.outcome if r.terminated else "interrupted*"
        outcomes[r.data.outcome] += 1
        u = r.usage
        row = [len(u), sum(x.input_tokens for x in u), sum(x.output_tokens for x in u),
               sum(x.cache_read_tokens for x in u), sum(x.cache_write_tokens for x in u)]
        nested = sum(x.input_tokens + x.output_tokens for x in r.nested_usage)
        totals[0] += len(r.data.messages)
        for j, v in enumerate(row):
            totals[j + 1] += v
        extra = f"  [error: {_clip(r.data.error, 60)}]" if r.data.error else ""
        extra += f"  [+{len(r.nested_usage)} subagent replies, {nested:,} tokens]" if r.nested_usage else ""
        rows.append([str(i), outcome, f"{len(r.data.messages):,}", *(tokens(v) for v in row),
                     _clip(r.data.input.text, 50) + extra])
    if rows:
        print(render(["#", "outcome", "msgs", "replies", "input", "output", "cache r", "cache w", "input text"], rows,
                     left=(1, 8)))
    print(f"total: {outcomes['answered']:,} answered, {outcomes['interrupted']:,} interrupted, "
          f"{outcomes['failed']:,} failed; {totals[0]:,} messages; {totals[1]:,} replies; tokens in {totals[2]:,}, "
          f"out {totals[3]:,}, cache read {totals[4]:,}, cache write {totals[5]:,}")
    if any(not r.terminated for r in records):
        print("* no terminator: the turn was cut off (read as interrupted, messages kept)")
    for note in records.notes:
        print(f"note: {note}")
    if records.problems:
        print(f"{len(records.problems)} bad line(s) skipped; run `harpe-lab journal check {args.path}` to list them")
    return 0


def cli_check(args: argparse.Namespace) -> int:
    """``harpe-lab journal check PATH``: list every bad line; exit 1 when there is any."""
    sniff(args.path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", TornLineWarning)
        records = Journal.check(args.path)
    for problem in records.problems:
        print(f"{records.path}:{problem.line}: {'(' + problem.event + ') ' if problem.event else ''}{problem.reason}")
    for note in records.notes:
        print(f"note: {note}")
    if records.problems:
        print(f"{len(records.problems)} problem(s) in {records.path}")
        return 1
    print(f"OK: {records.path}: {len(records)} turns, generation {', '.join(records.generations) or '-'}, "
          "no problems")
    return 0
