"""``harpe-lab sessions`` on a large folder: throughput in MB/s of session files on one core,
and the peak memory of the whole command, both measured in a fresh subprocess; and
``harpe-lab compare`` of ten real-size sessions under every preset, against tokenizing each
session once, on one worker and on two (`compare_rows`).

The folder is generated: Claude Code sessions written by `generate` (our own text, the shape
of the real recordings: a user record, then assistant records with usage, tool results of a
few kB, and one compaction boundary per session), about 10 MB each. The timed run is
``python -m harpe_lab sessions FOLDER --format csv`` with its output discarded; the
process's own wall time (imports excluded) and its peak resident memory (``VmHWM``, the
process's own: ``ru_maxrss`` survives fork and exec, so it reported the runner's peak after
the floor section) are reported. The goals: at least 50 MB/s, and under 500 MB of memory for 1 GB of sessions.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import Goal, Row, log, median  # noqa: E402

__all__ = ["generate", "run"]

THROUGHPUT_GOAL = Goal(">=", 50, "MB/s")
MEMORY_GOAL = Goal("<=", 500, "MB")
SESSION_MB = 10

_CHILD = r"""
import resource, sys, time
t0 = time.perf_counter()
from harpe_lab.sessions import Skipped, scan_sessions
import harpe_lab.models, pandas
t1 = time.perf_counter()
rows = skipped = calls = 0
for item in scan_sessions([sys.argv[1]], progress=False):
    if isinstance(item, Skipped):
        skipped += 1
    else:
        rows += 1
        calls += item.calls
t2 = time.perf_counter()
# VmHWM is this process's own high-water mark; Linux keeps ru_maxrss across fork and exec, so
# that would be the parent's peak when the parent (the benchmark runner) was larger
try:
    with open("/proc/self/status") as f:
        peak = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
except (OSError, StopIteration):
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(rows, skipped, calls, t2 - t1, peak)
"""


def _session(k: int, size: int) -> bytes:
    """One Claude Code session of about ``size`` bytes."""
    out = []
    sid = f"00000000-0000-4000-8000-{k:012d}"
    base = {"sessionId": sid, "version": "2.1.39", "cwd": "/home/user/app", "isSidechain": False,
            "userType": "external"}
    out.append({**base, "type": "user", "uuid": f"u{k}-0", "timestamp": "2026-01-01T00:00:00.000Z",
                "message": {"role": "user", "content": f"Session {k}: fix the failing tests in the app."}})
    tokens, n, total, compacted = 26_000, 0, 0, False
    while total < size:
        n += 1
        tool = f"toolu_{k}_{n}"
        usage = {"input_tokens": 3, "cache_creation_input_tokens": 900, "cache_read_input_tokens": tokens,
                 "output_tokens": 120, "cache_creation": {"ephemeral_5m_input_tokens": 900}}
        reply = {**base, "type": "assistant", "uuid": f"a{k}-{n}", "timestamp": "2026-01-01T00:01:00.000Z",
                 "message": {"id": f"msg_{k}_{n}", "role": "assistant", "model": "claude-opus-4-6", "usage": usage,
                             "content": [{"type": "text", "text": f"Reading module {n} next."},
                                         {"type": "tool_use", "id": tool, "name": "Read",
                                          "input": {"file_path": f"/home/user/app/src/module_{n}.py"}}]}}
        body = "\n".join(f"{i:>6}→    value_{n}_{i} = compute(value_{n}_{i - 1}, step={i})" for i in range(60))
        result = {**base, "type": "user", "uuid": f"r{k}-{n}", "timestamp": "2026-01-01T00:01:01.000Z",
                  "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool,
                                                           "content": body}]}}
        for rec in (reply, result):
            line = json.dumps(rec).encode() + b"\n"
            out.append(line)
            total += len(line)
        tokens += 1_000
        if tokens > 167_000 and not compacted:
            compacted = True
            out.append(json.dumps({**base, "type": "system", "subtype": "compact_boundary", "uuid": f"c{k}",
                                   "compactMetadata": {"trigger": "auto", "preTokens": tokens}}).encode() + b"\n")
            tokens = 30_000
    out[0] = json.dumps(out[0]).encode() + b"\n"
    return b"".join(out)


def generate(folder: Path, total_mb: int) -> int:
    """Write about ``total_mb`` MB of sessions into ``folder``; returns the bytes written."""
    folder.mkdir(parents=True, exist_ok=True)
    written, k = 0, 0
    size = min(SESSION_MB, max(1, total_mb)) * 1_000_000
    while written < total_mb * 1_000_000:
        data = _session(k, size)
        (folder / f"{k:05d}.jsonl").write_bytes(data)
        written += len(data)
        k += 1
    return written


def run(*, total_mb: int = 1_000, reps: int = 3) -> list[Row]:
    with tempfile.TemporaryDirectory(prefix="harpe-bench-sessions-") as tmp:
        folder = Path(tmp)
        written = generate(folder, total_mb)
        files = len(list(folder.iterdir()))
        log(f"sessions: generated {written / 1e6:.0f} MB in {files} sessions")
        seconds, peaks, seen = [], [], set()
        for rep in range(reps):
            done = subprocess.run([sys.executable, "-c", _CHILD, str(folder)], capture_output=True, text=True,
                                  check=True)
            rows, skipped, calls, elapsed, peak = done.stdout.split()
            seen.add((int(rows), int(skipped), int(calls)))
            seconds.append(float(elapsed))
            peaks.append(float(peak))
            log(f"  sessions: rep {rep + 1}/{reps}: {float(elapsed):.1f} s, {float(peak):.0f} MB")
    if len(seen) != 1 or next(iter(seen))[0] != files:
        raise AssertionError(f"sessions: each run must list every generated session once: {sorted(seen)}")
    where = f"{written / 1e6:,.0f} MB in {files} generated Claude Code sessions, one core, a fresh process"
    return [
        Row("8 sessions", "harpe-lab sessions: MB of session files read per second", written / 1e6 / median(seconds),
            unit="MB/s", goal=THROUGHPUT_GOAL, reps=reps, detail=f"median {median(seconds):.1f} s; {where}"),
        Row("8 sessions", "harpe-lab sessions: peak memory of the process", max(peaks), unit="MB",
            goal=MEMORY_GOAL, reps=reps, detail=f"largest VmHWM over the runs; {where}"),
    ]


COMPARE_GOAL = Goal("<=", 10)
SPEEDUP_GOAL = Goal(">=", 1.8)


def compare_rows(*, sessions: int = 10, session_mb: float = 3.0, budget: int = 100_000, reps: int = 1) -> list[Row]:
    """``compare`` of ``sessions`` generated real-size Claude Code sessions under every preset,
    against tokenizing each session once (a fresh counter counting every message), and on 2
    workers against 1 — wall time, in this process (the pool forks from it).

    The presets that summarize are measured with a distiller that answers from its cache (what
    an `LLMDistiller` does on a re-run), as the floor rows of `benchmarks.replay` are: the goal
    is about the replay machinery. The same run with the offline `ExtractiveDistiller`, the
    default when no model is named, is reported beside it."""
    import time

    from benchmarks.replay import _CachedDistiller
    from harpe_lab.presets import PRESETS
    from harpe_lab.study import compare_sessions, load_sessions
    from harpe_lab.tokens import TiktokenCounter

    with tempfile.TemporaryDirectory(prefix="harpe-bench-compare-") as tmp:
        paths = []
        for k in range(sessions):
            path = Path(tmp) / f"{k:03d}.jsonl"
            path.write_bytes(_session(k, int(session_mb * 1_000_000)))
            paths.append(path)
        convs = load_sessions(paths)
    floor, one, two, extractive = [], [], [], []
    # untimed: the strategies' modules imported, as in any run after the first
    compare_sessions(convs[:1], list(PRESETS), budgets=[budget], workers=1, progress=False, distill=_CachedDistiller())
    for rep in range(reps):
        started = time.perf_counter()
        for c in convs:
            counter = TiktokenCounter()
            for m in c.messages():
                counter.count_message(m)
        floor.append(time.perf_counter() - started)
        frames = []
        for workers, distill, out in ((1, _CachedDistiller(), one), (2, _CachedDistiller(), two), (1, None, extractive)):
            started = time.perf_counter()
            frames.append(compare_sessions(convs, list(PRESETS), budgets=[budget], workers=workers, progress=False,
                                           distill=distill))
            out.append(time.perf_counter() - started)
        if not frames[0].drop(columns=["counter"]).equals(frames[1].drop(columns=["counter"])):
            raise AssertionError("compare on 1 and on 2 workers gave different frames")
        log(f"  compare: rep {rep + 1}/{reps}: floor {floor[-1]:.1f} s, 1 worker {one[-1]:.1f} s, "
            f"2 workers {two[-1]:.1f} s, extractive {extractive[-1]:.1f} s")
    refused = int(frames[0]["budget_note"].str.startswith("refused").sum())
    where = (f"{sessions} generated Claude Code sessions of ~{session_mb:g} MB, {len(PRESETS)} presets at "
             f"{budget:,} tokens ({refused} replays refused), wall time")
    return [
        Row("8 sessions", "compare, every preset (cached distiller), 1 worker / tokenizing each session once",
            median(one) / median(floor), goal=COMPARE_GOAL, reps=reps,
            detail=f"{median(one):.1f} s / {median(floor):.2f} s; {where}"),
        Row("8 sessions", "compare, every preset (offline extractive distiller), 1 worker / tokenizing once",
            median(extractive) / median(floor), reps=reps,
            detail=f"{median(extractive):.1f} s / {median(floor):.2f} s; the summaries written offline for "
                   f"{sum('distill' in p.needs for p in PRESETS.values())} presets; {where}"),
        Row("8 sessions", "compare, every preset: 1 worker / 2 workers", median(one) / median(two), goal=SPEEDUP_GOAL,
            reps=reps, detail=f"{median(one):.1f} s / {median(two):.1f} s; {where}"),
    ]


if __name__ == "__main__":
    for row in run(total_mb=int(sys.argv[1]) if len(sys.argv) > 1 else 200, reps=1) + compare_rows():
        print(row.what, row.shown(), row.verdict, row.detail)
