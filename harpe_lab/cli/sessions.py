"""``harpe-lab sessions [PATH ...]``: every session under PATH (or this machine's agents'
standard locations), one row each, with its recorded compactions; files that are not
readable sessions are listed on stderr as skipped, and the rest go on."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from . import UsageError
from ._table import plain, render, share, tokens, usd

__all__ = ["cli_sessions"]


def _k(n: Any) -> str:
    return "?" if n is None else f"{n / 1000:,.1f}k"


def _compactions(row: Any) -> str:
    """``auto after 102 calls: 167.1k→34.0k (84%)`` per compaction."""
    out = []
    for c in row.compactions:
        share_ = "" if math.isnan(c.share_of_window) else f" ({c.share_of_window:.0%})"
        trigger = f"{c.trigger} " if c.trigger else ""
        calls = f"{c.at_call:,} call{'' if c.at_call == 1 else 's'}"
        out.append(f"{trigger}after {calls}: {_k(c.tokens_before)}→{_k(c.tokens_after)}{share_}")
    return "; ".join(out) or "-"


def _name(path: str, roots: list[Path]) -> str:
    p = Path(path)
    for root in roots:
        if root.is_dir():
            try:
                return str(p.relative_to(root))
            except ValueError:
                continue
    return p.name if not roots else str(p)


def _summary(rows: list[Any], skipped: int) -> str:
    agents: dict[str, int] = {}
    for r in rows:
        agents[r.agent] = agents.get(r.agent, 0) + 1
    calls = sum(r.calls for r in rows)
    cached = math.fsum(r.cost_usd_cached for r in rows if not math.isnan(r.cost_usd_cached))
    plain_cost = math.fsum(r.cost_usd for r in rows if not math.isnan(r.cost_usd))
    kinds = ", ".join(f"{n:,} {a}" for a, n in sorted(agents.items(), key=lambda kv: -kv[1]))
    compactions = sum(len(r.compactions) for r in rows)
    skip = f"; {skipped:,} skipped (listed on stderr)" if skipped else ""
    def n(count: int, what: str) -> str:
        return f"{count:,} {what}{'' if count == 1 else 's'}"

    return (f"{n(len(rows), 'session')} ({kinds or 'none'}): {n(calls, 'model call')}, recorded cost ${cached:,.2f} "
            f"with caching (${plain_cost:,.2f} without), {n(compactions, 'compaction')}{skip}")


def cli_sessions(args: argparse.Namespace) -> int:
    """List the sessions under ``args.paths`` (or the standard locations)."""
    from ..sessions import Skipped, scan_sessions, sessions_frame

    missing = [p for p in args.paths if not (Path(p).expanduser().exists() or Path(p).expanduser().is_symlink())]
    if missing:
        from ..errors import HarpeLabError

        raise HarpeLabError(f"{missing[0]}: no such file or folder — check the path")
    rows, skipped = [], []
    for item in scan_sessions(args.paths, subagents=args.subagents):
        if isinstance(item, Skipped):
            skipped.append(item)
            print(f"skipped {item.path}: {item.reason}", file=sys.stderr)
        else:
            rows.append(item)
    if not rows and not skipped and not args.paths:
        raise UsageError("no sessions found in the standard locations (~/.claude/projects, ~/.codex/sessions, ...); "
                         "give a PATH to a session file or folder")
    frame = sessions_frame(rows)
    if args.format == "csv":
        frame.to_csv(sys.stdout, index=False)
    elif args.format == "json":
        doc = {"sessions": json.loads(frame.to_json(orient="records")),
               "compactions": frame.attrs["compactions"],
               "skipped": [{"path": s.path, "reason": s.reason} for s in skipped],
               "summary": _summary(rows, len(skipped))}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        roots = [Path(p).expanduser() for p in args.paths]
        headers = ["session", "agent", "version", "model", "window", "calls", "peak input", "cost cached", "cost",
                   "cache hits", "compactions (when: tokens before→after, share of window)"]
        table = [[_name(r.path, roots), r.agent, r.version or "-", r.model or "-", tokens(r.window), plain(r.calls),
                  tokens(r.peak_input_tokens), usd(r.cost_usd_cached), usd(r.cost_usd), share(r.cache_hit_share),
                  _compactions(r)] for r in rows]
        print(render(headers, table, left=(0, 1, 2, 3, 10)))
        for r in rows:
            if r.note:
                print(f"note: {_name(r.path, roots)}: {r.note}")
        print()
        print(_summary(rows, len(skipped)))
    if args.plot:
        from ..plots import plot_sessions

        plot_sessions(frame, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 1 if args.strict and skipped else 0
