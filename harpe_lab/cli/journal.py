"""``harpe-lab journal inspect|check``: what a Harpe journal holds, and what is wrong with it."""

from __future__ import annotations

import argparse

from ..journal import Journal

__all__ = ["cli_inspect", "cli_check"]

_OUTCOMES = ("answered", "interrupted", "failed")


def _clip(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def cli_inspect(args: argparse.Namespace) -> int:
    """``harpe-lab journal inspect PATH``: the turns with outcome, message count and usage.
    Bad lines are skipped and counted (run ``check`` to list them)."""
    records = Journal.records(args.path, errors="skip")
    gens = ", ".join(records.generations) or "-"
    print(f"{records.path}: {len(records)} turns · generation {gens} · read by {records.reader}")
    if records:
        print(f"{'#':>4}  {'outcome':<12} {'msgs':>4} {'replies':>7} {'input':>9} {'output':>8} "
              f"{'cache r':>9} {'cache w':>8}  input")
    totals = [0, 0, 0, 0, 0, 0]
    outcomes = {o: 0 for o in _OUTCOMES}
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
        extra += f"  [+{len(r.nested_usage)} subagent replies, {nested} tokens]" if r.nested_usage else ""
        print(f"{i:>4}  {outcome:<12} {len(r.data.messages):>4} {row[0]:>7} {row[1]:>9} {row[2]:>8} "
              f"{row[3]:>9} {row[4]:>8}  {_clip(r.data.input.text, 50)}{extra}")
    print(f"total: {outcomes['answered']} answered, {outcomes['interrupted']} interrupted, "
          f"{outcomes['failed']} failed; {totals[0]} messages; {totals[1]} replies; tokens in {totals[2]}, "
          f"out {totals[3]}, cache read {totals[4]}, cache write {totals[5]}")
    if any(not r.terminated for r in records):
        print("* no terminator: the turn was cut off (read as interrupted, messages kept)")
    for note in records.notes:
        print(f"note: {note}")
    if records.problems:
        print(f"{len(records.problems)} bad line(s) skipped; run `harpe-lab journal check {args.path}` to list them")
    return 0


def cli_check(args: argparse.Namespace) -> int:
    """``harpe-lab journal check PATH``: list every bad line; exit 1 when there is any."""
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
