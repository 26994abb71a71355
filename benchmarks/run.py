"""Run every harpe_lab benchmark and write the results table.

    .venv/bin/python -m benchmarks.run            # the whole run (`make bench`), ~10 minutes on 2 cores
    .venv/bin/python -m benchmarks.run --quick    # a fast pass, ~2 minutes
    .venv/bin/python -m benchmarks.run --sections floor,langchain

Sections (``--sections``, comma-separated; all by default):

==========  ==============================================================================
floor       every preset of `harpe_lab.presets.PRESETS` replaying ~1M tokens / counting
            once what it prices; N against 2N turns (`benchmarks.replay`); at budget 8,000,
            and again at their own knobs for the presets whose knobs differ
langchain   LangChain ``trim_messages`` at every request / harpe_lab's SlidingWindow
            replay (`benchmarks.langchain_compare`)
journal     ``Journal.stream`` over a large journal / bare orjson (and / ``json``), with
            the journal benchmark's generator and subprocess timer (`benchmarks.journal`)
scale       one sweep (over 20 s on one core) on 1 worker / on 2, and / on dask's
            LocalCluster of 2 workers (`benchmarks.scale`)
dashboard   the Explorer's redraw after a slider change at 1,000 requests, in ms
            (`benchmarks/widgets.py`, run as a subprocess and its report read)
cache       cache-aware cost against the usage real Claude Code sessions recorded (median
            cache-read error, total cost error), and every preset's cost with and without
            prompt caching, a table after the results (`benchmarks.cache_cost`)
peers       each native strategy / the peer adapter running its project's own code, same
            requests checked (`benchmarks.peers`)
sessions    ``harpe-lab sessions`` over 1 GB of generated sessions: MB/s on one core and the
            process's peak memory; ``compare`` of ten sessions under every preset against
            tokenizing them once, and on 2 workers against 1 (`benchmarks.sessions`)
==========  ==============================================================================

Before each section the runner waits (at most 30 s) for the 1-minute load average to fall to
the usable cores — what the previous section left behind fades in seconds — and records it.
If it is still above the cores, the machine is busy with something else: the section is run
again, up to ``--reruns`` (2) more times, and the run with the lowest load is kept; the load
before every run goes into RESULTS.md, so figures from two runs can be compared knowingly.

The table goes to stdout and, with the date and the machine, to ``benchmarks/RESULTS.md``
(``--out``). Progress goes to stderr. A section that fails is reported in the table and
its traceback on stderr; the exit status is then 1. ``--tiny`` runs everything at toy sizes
with one repetition — only to check that the benchmark code still runs (the smoke test
does); its figures mean nothing.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (  # noqa: E402
    Goal,
    Row,
    format_table,
    load_average,
    log,
    machine,
    median,
    results_markdown,
    settle,
    usable_cores,
)

__all__ = ["main", "SECTIONS", "Sizes", "journal_rows", "dashboard_rows", "parse_dashboard"]

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "RESULTS.md"
JOURNAL_GOAL = Goal("<=", 1.4)
DASHBOARD_GOAL = Goal("<=", 100, "ms")
RERUNS = 2  # a section measured while the load was above the cores is run again at most this often
UNTIMED = {"cache"}  # sections whose figures do not depend on the load: never run again
SETTLE_SECONDS = 30.0  # before a section, wait at most this long for the load to fall to the cores


@dataclass(frozen=True)
class Sizes:
    """How big each section's workload is, and how many repetitions it gets."""

    reps: int
    floor_tokens: int
    lc_requests: int
    lc_turns: int
    lc_long_turns: int
    journal_mb: int
    scale_conversations: int
    scale_turns: int
    dashboard_requests: int
    dashboard_moves: int
    burn: int
    slow: tuple[float, int] | None = (10.0, 3)
    peers_turns: int = 200
    sessions_mb: int = 1_000


FULL = Sizes(reps=5, floor_tokens=1_000_000, lc_requests=600, lc_turns=2_000, lc_long_turns=300, journal_mb=300,
             scale_conversations=30, scale_turns=150, dashboard_requests=1_000, dashboard_moves=40, burn=4_000_000)
QUICK = Sizes(reps=3, floor_tokens=200_000, lc_requests=150, lc_turns=400, lc_long_turns=60, journal_mb=40,
              scale_conversations=6, scale_turns=100, dashboard_requests=1_000, dashboard_moves=10, burn=1_000_000,
              peers_turns=80, sessions_mb=200)
TINY = Sizes(reps=1, floor_tokens=4_000, lc_requests=12, lc_turns=12, lc_long_turns=4, journal_mb=1,
             scale_conversations=2, scale_turns=6, dashboard_requests=20, dashboard_moves=2, burn=10_000, slow=None,
             peers_turns=6, sessions_mb=3)


# --- sections written by other benchmarks -------------------------------------------------


def journal_rows(size_mb: int, reps: int) -> list[Row]:
    """``Journal.stream`` against bare ``orjson`` and ``json`` line parsing, with
    `benchmarks.journal`'s generator and timer (each read in a fresh subprocess, wall time
    measured inside it, imports excluded), interleaved rep by rep."""
    from benchmarks import journal

    modes = ["orjson", "records", "objects", "envelope", "json"]
    if importlib.util.find_spec("msgspec") is not None:
        modes.append("typed")
    seconds: dict[str, list[float]] = {m: [] for m in modes}
    items: dict[str, set[int]] = {m: set() for m in modes}
    with tempfile.TemporaryDirectory(prefix="harpe-bench-") as tmp:
        path = Path(tmp) / "journal.jsonl"
        started = time.perf_counter()
        turns = journal.generate(path, size_mb)
        size = path.stat().st_size
        with open(path, "rb") as f:
            lines = sum(1 for _ in f)
        log(f"journal: generated {size / 1e6:.0f} MB ({turns} turns) in {time.perf_counter() - started:.1f} s")
        log(f"journal: Journal.stream reads the {journal.verify(path)} records the general path reads")
        for rep in range(reps):
            for mode in modes:
                elapsed, n, _rss = journal._run(path, mode)
                seconds[mode].append(elapsed)
                items[mode].add(n)
            log(f"  journal: rep {rep + 1}/{reps}")
    for mode, seen in items.items():
        if len(seen) != 1:
            raise AssertionError(f"journal: {mode} read a different number of items across runs: {sorted(seen)}")
    med = {m: median(v) for m, v in seconds.items()}
    where = f"{size / 1e6:.0f} MB, {lines:,} lines, {turns} turns, wall time in a subprocess"
    detail = f"{med['records']:.2f} s / {{:.2f}} s; {where}"
    rows = [
        Row("3 journal", "Journal.stream / bare orjson line parsing", med["records"] / med["orjson"],
            goal=JOURNAL_GOAL, reps=reps, detail=detail.format(med["orjson"])),
        Row("3 journal", "Journal.stream / standard json line parsing", med["records"] / med["json"],
            reps=reps, detail=detail.format(med["json"])),
        # where the reader's time goes: reading lines (JSON, envelope, time) against assembling turns
        Row("3 journal", "the reader's line parser alone (parse_lines) / bare orjson", med["envelope"] / med["orjson"],
            reps=reps, detail=(f"{med['envelope']:.2f} s / {med['orjson']:.2f} s: the envelope's checks and time; "
                               f"assembling turns adds the other {med['records'] - med['envelope']:.2f} s; {where}")),
        Row("3 journal", "building the records' objects, nothing else (no check, no turn) / bare orjson",
            med["objects"] / med["orjson"], reps=reps,
            detail=(f"{med['objects']:.2f} s / {med['orjson']:.2f} s: each line parsed and its message or usage "
                    f"objects built with the reader's own constructors; the least any reader returning them does "
                    f"in Python; the checks and the turns add the other {med['records'] - med['objects']:.2f} s; "
                    f"{where}")),
    ]
    if "typed" in med:
        rows.append(Row(
            "3 journal", "msgspec typed envelope (checks in C) / bare orjson", med["typed"] / med["orjson"],
            reps=reps, detail=(f"{med['typed']:.2f} s / {med['orjson']:.2f} s: decoding alone, before the time and "
                               f"the line's own Python; parse_lines does all of it in {med['envelope']:.2f} s; {where}"),
        ))  # fmt: skip
    return rows


def parse_dashboard(text: str) -> dict[str, float]:
    """The medians (ms) in `benchmarks/widgets.py`'s report: lines such as
    ``high water, new value    median   104.8 ms   p90 ...``."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"^(\S.*?)\s+median\s+([0-9.]+)\s*ms\b", line)
        if m:
            out[m.group(1).strip()] = float(m.group(2))
    return out


def dashboard_rows(requests: int, moves: int) -> list[Row]:
    """Run `benchmarks/widgets.py` in a subprocess and turn its medians into rows."""
    cmd = [sys.executable, str(HERE / "widgets.py"), "--requests", str(requests), "--moves", str(moves)]
    log(f"dashboard: {' '.join(cmd[1:])}")
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=HERE.parent)
    medians = parse_dashboard(done.stdout)
    if done.returncode != 0 or not medians:
        raise RuntimeError(
            f"benchmarks/widgets.py exited with {done.returncode} and reported {len(medians)} timings:\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    built = re.search(r"(\d+) requests", done.stdout)
    size = f"{built.group(1)} requests" if built else f"~{requests} requests"
    alone = re.search(r"^new value, replay alone: ([0-9.]+) ms.*?(?:the offline distiller ([0-9.]+) ms of it)?$",
                      done.stdout, re.M)  # fmt: skip
    split = {}
    if alone:
        distiller = f" (the offline distiller {alone.group(2)} ms of it)" if alone.group(2) else ""
        split["high water, new value"] = f"; the replay alone {alone.group(1)} ms{distiller}, drawing the rest"
    return [
        Row("5 dashboard", f"Explorer redraw: {label}", ms, unit="ms", goal=DASHBOARD_GOAL,
            detail=f"median of {moves} moves, {size}, wall time{split.get(label, '')}")
        for label, ms in medians.items()
    ]  # fmt: skip


# --- the runner ---------------------------------------------------------------------------


def _floor(s: Sizes) -> list[Row]:
    from benchmarks import replay

    slow = {"slow_seconds": s.slow[0] if s.slow else float("inf"), "slow_reps": s.slow[1] if s.slow else s.reps}
    rows = replay.run(tokens=s.floor_tokens, reps=s.reps, budget=replay.BUDGET, **slow)
    # the presets that fold elsewhere at their own knobs (the agents' at their windows), as users run them
    own = replay.own_knobs_differ()
    return rows + (replay.run(tokens=s.floor_tokens, reps=s.reps, budget=None, strategies=own, **slow) if own else [])


def _langchain(s: Sizes) -> list[Row]:
    try:
        from benchmarks import langchain_compare
    except ImportError as error:
        raise RuntimeError(f"{error}; install the benchmark extra: .venv/bin/pip install -e '.[bench]'") from error
    return langchain_compare.run(reps=s.reps, requests=s.lc_requests, turns=s.lc_turns, long_turns=s.lc_long_turns,
                                 slow=s.slow)  # fmt: skip


def _scale(s: Sizes, dask: bool) -> list[Row]:
    from benchmarks import scale

    # over 20 s a sweep on one worker: three repetitions are enough, five would take ten minutes
    return scale.run(reps=min(s.reps, 3), count=s.scale_conversations, turns=s.scale_turns, dask=dask,
                     burn_n=s.burn)  # fmt: skip


def _cache(tiny: bool, extras: list[str]) -> list[Row]:
    from benchmarks import cache_cost

    rows, table = cache_cost.run(tiny=tiny)
    extras.append(table)
    return rows


def load_markdown(loads: list[tuple[str, list[float], int]], cores: int, reruns: int) -> str:
    """The RESULTS.md list of the 1-minute load average before each run of each section (a
    list, not a table: the results table's rows are found by their section's name)."""
    lines = [
        "## Machine load per section",
        "",
        f"The 1-minute load average before each run. A section is run again (up to {reruns} more "
        f"{'time' if reruns == 1 else 'times'}, `--reruns`) when it was above the {cores} usable cores, and the "
        "quietest run is kept.",
        "",
    ]
    for section, before, kept in loads:
        shown = ", ".join("n/a" if b != b else f"{b:.2f}" for b in before)
        busy = "; busy" if before[kept] > cores else ""
        lines.append(f"- **{section}**: {shown} (run {kept + 1} of {len(before)} kept{busy})")
    return "\n".join(lines) + "\n"


def _peers(s: Sizes) -> list[Row]:
    from benchmarks import peers

    return peers.run(reps=s.reps, turns=s.peers_turns, slow=s.slow)


def _sessions(s: Sizes) -> list[Row]:
    from benchmarks import sessions

    small = s.sessions_mb < 100  # --tiny: toy sizes, only to see the code run
    return sessions.run(total_mb=s.sessions_mb, reps=min(s.reps, 3)) + sessions.compare_rows(
        sessions=2 if small else 10, session_mb=0.2 if small else 3.0, reps=1 if small else min(s.reps, 2))


SECTIONS: dict[str, str] = {
    "floor": "1 floor",
    "langchain": "2 LangChain",
    "journal": "3 journal",
    "scale": "4 scale-out",
    "dashboard": "5 dashboard",
    "cache": "6 cache cost",
    "peers": "7 peers",
    "sessions": "8 sessions",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.split("\n\n")[0])
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="smaller workloads and 3 repetitions (~2 minutes)")
    size.add_argument("--tiny", action="store_true", help="toy sizes, 1 repetition: checks the code runs, nothing else")
    parser.add_argument("--sections", default=",".join(SECTIONS), help=f"comma-separated, from {', '.join(SECTIONS)}")
    parser.add_argument("--reps", type=int, default=None, help="repetitions per measurement (default 5; --quick 3)")
    parser.add_argument("--no-dask", action="store_true", help="skip the dask LocalCluster run")
    parser.add_argument("--out", type=Path, default=RESULTS, help=f"where to write the table (default {RESULTS})")
    parser.add_argument("--reruns", type=int, default=None,
                        help=f"times a section is run again when the load before it was above the usable cores "
                             f"(default {RERUNS}; 0 with --tiny)")  # fmt: skip
    args = parser.parse_args(argv)
    wanted = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown or not wanted:
        parser.error(f"--sections must be among {', '.join(SECTIONS)}, but {args.sections!r} was passed")
    sizes = TINY if args.tiny else QUICK if args.quick else FULL
    if args.reps is not None:
        if args.reps < 1:
            parser.error(f"--reps must be >= 1, got {args.reps}")
        sizes = replace(sizes, reps=args.reps)
    if args.reruns is not None and args.reruns < 0:
        parser.error(f"--reruns must be >= 0, got {args.reruns}")

    info = machine()
    info["mode"] = "tiny (smoke test; figures meaningless)" if args.tiny else "quick" if args.quick else "full"
    info["timing"] = ("CPU time of the benchmark process for sections 1–2 (side-by-side, single-process work); "
                      "wall time for 3–5")  # fmt: skip
    runners: dict[str, Callable[[], list[Row]]] = {
        "floor": lambda: _floor(sizes),
        "langchain": lambda: _langchain(sizes),
        "journal": lambda: journal_rows(sizes.journal_mb, sizes.reps),
        "scale": lambda: _scale(sizes, dask=not args.no_dask),
        "dashboard": lambda: dashboard_rows(sizes.dashboard_requests, sizes.dashboard_moves),
        "cache": lambda: _cache(args.tiny, extras),
        "peers": lambda: _peers(sizes),
        "sessions": lambda: _sessions(sizes),
    }
    extras: list[str] = []  # Markdown sections after the table
    rows: list[Row] = []
    notes: list[str] = []
    failed = False
    started = time.perf_counter()
    cores = usable_cores()
    reruns = args.reruns if args.reruns is not None else 0 if args.tiny else RERUNS
    loads: list[tuple[str, list[float], int]] = []  # section, load before each run, the run kept
    for name in wanted:
        runs: list[tuple[float, list[Row], list[str]]] = []  # load before, rows, Markdown extras
        for attempt in range(1 + reruns):
            # the previous section's own load fades in seconds; the neighbours' does not
            load = load_average() if args.tiny else settle(cores, SETTLE_SECONDS)
            t0 = time.perf_counter()
            log(f"== {SECTIONS[name]}" + (f" (run {attempt + 1})" if attempt else "") + f", load {load:.2f}")
            mark = len(extras)
            try:
                got = runners[name]()
                ok = True
            except Exception as error:  # reported in the table and on stderr, and the run fails
                failed, ok = True, False
                traceback.print_exc()
                got = [Row(SECTIONS[name], "section failed", float("nan"), goal=Goal(">=", 0),
                           detail=f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}")]
            runs.append((load, got, extras[mark:]))
            del extras[mark:]
            log(f"   {SECTIONS[name]} took {time.perf_counter() - t0:.0f} s")
            if not ok or not load > cores or name in UNTIMED:
                break
            if attempt < reruns:
                log(f"   the machine was busy (load {load:.2f} > {cores} usable cores): running it again")
        kept = min(range(len(runs)), key=lambda k: runs[k][0])  # the quietest
        rows += runs[kept][1]
        extras += runs[kept][2]
        loads.append((SECTIONS[name], [r[0] for r in runs], kept))
    extras.insert(0, load_markdown(loads, cores, reruns))
    busy = [section for section, before, kept in loads if before[kept] > cores]
    if busy:
        notes.append(f"Measured on a busy machine (load above the {cores} usable cores before every run): "
                     f"{', '.join(busy)}; compare these figures with care.")  # fmt: skip
    total = time.perf_counter() - started
    info["duration"] = f"{total / 60:.1f} min"
    slow = sorted({r.what.split(":")[0].split(" / ")[0] for r in rows if r.reps and r.reps < sizes.reps})
    if slow:
        notes.append(f"Measured fewer than {sizes.reps} times because one run took over {sizes.slow[0]:g} s "
                     f"(CPU): {', '.join(slow)}.")  # fmt: skip
    table = format_table(rows)
    print(table)
    args.out.write_text(results_markdown(rows, info, notes) + "".join(f"\n{x}" for x in extras), encoding="utf-8")
    log(f"wrote {args.out} ({total / 60:.1f} min)")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
