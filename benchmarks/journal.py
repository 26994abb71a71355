"""How fast `Journal.stream` reads a large journal, next to bare line parsing.

Generates a G5 journal (default 1 GB; ``--size-mb N`` for quick runs) shaped like a
coding agent's: bracketed turns of 1–10 tool rounds, each with the engine's model and usage
events, message sizes drawn from distributions measured on real Claude Code sessions,
non-ASCII text, occasional subagent turns, retries, failed and interrupted turns. Then, each ``--reps`` times in a fresh subprocess (so peak RSS is the
reader's own), it times

* ``orjson``  — ``for line in f: orjson.loads(line)`` (the floor: parsing alone),
* ``msgspec`` — the same with ``msgspec.json.Decoder().decode`` (when installed: the other
  C decoder the reader could be built on),
* ``json``    — the same with the standard library's ``json.loads``,
* ``records`` — ``for r in Journal.stream(path): ...`` (every turn, in constant memory),
* ``objects`` — ``orjson`` parsing each line and building the message and usage objects
  the records hold, with the reader's own constructors, and nothing else (no check, no
  time, no turn): the least any reader returning those objects does in Python,
* ``envelope`` — the reader's own line parser alone (``parse_lines``: JSON, the envelope's
  checks and its time), so the table shows how ``records`` splits between reading lines and
  assembling turns,
* ``typed``   — ``msgspec`` decoding each line into a typed envelope (a ``Struct`` of
  ``time: str``, ``event: str``, ``fields: dict``, ``context: list[str]``), the envelope's
  type checks done in C: the alternative to orjson plus the Python checks of ``envelope``
  (when msgspec is installed),

and prints medians of wall and CPU time (``time.process_time``, less sensitive to other
processes on the machine), the ratios to the orjson and json baselines (goal: records ≤ 1.4×
the orjson floor) and each reader's peak RSS (goal < 300 MB). Reps are interleaved, so drift
in machine load hits every reader alike.

Before timing, the records are checked (`verify`): ``Journal.stream`` must give exactly what
the reader's general path gives — the one `Journal.usage` takes, which holds every line of a
bracket and decodes its turn at the response — compared record by record (``repr``); each
timed run must then read the same number of records.

    .venv/bin/python benchmarks/journal.py --size-mb 200 --reps 5
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("the", "file", "agent", "build", "error", "résumé", "naïve", "test", "passed", "value", "函数",
         "config", "return", "import", "λ", "data", "path", "line", "🙂", "module")

# Size distributions measured on the real Claude Code sessions in ../shared/data/real
# (537 tool results: median 238 chars, mean 2.3 kB, p90 6.8 kB; reply texts: median 82
# chars; tool inputs: median 121 bytes of JSON; almost always one call per reply).


def _chars(rng: random.Random, median: float, sigma: float, cap: int) -> int:
    return max(1, min(cap, int(rng.lognormvariate(math.log(median), sigma))))


def _text(rng: random.Random, n_chars: int) -> str:
    words = []
    size = 0
    while size < n_chars:
        w = rng.choice(WORDS)
        words.append(w)
        size += len(w) + 1
    return " ".join(words)[:n_chars]


def _tool_output(rng: random.Random) -> str:
    size = _chars(rng, 240, 2.1, 200_000)  # median 240, mean ~2.2 kB, long tail
    line = _text(rng, 60) + "\n"
    return (line * (size // len(line) + 1))[:size]


class _Writer:
    """Writes G5 lines exactly as `JsonlLogger` does, but buffered, to generate fast."""

    def __init__(self, f, start: float) -> None:
        from harpe_lab.journal import format_time

        self.f = f
        self.t = start
        self.format_time = format_time

    def log(self, event: str, fields: dict, context: list[str]) -> None:
        self.t += 0.013
        self.f.write(json.dumps({"time": self.format_time(self.t), "event": event, "fields": fields,
                                 "context": context}) + "\n")


MODEL = {"provider": "anthropic", "model": "claude-opus-4-6"}


def _turn(w: _Writer, rng: random.Random, ctx: list[str], depth: int = 0) -> None:
    tid = f"{rng.getrandbits(64):016x}"
    scope = ctx + [f"harpe.turn.id={tid}"]

    def reply() -> None:
        w.log("harpe.model.sent", MODEL, scope)
        if rng.random() < 0.02:
            w.log("harpe.model.retried", {"warning": "RateLimitError: 429", "attempt": 1, "retryInSeconds": 1.0},
                  scope)
        w.log("harpe.model.replied", MODEL, scope)
        w.log("harpe.metering.usage", {**MODEL, "inputTokens": rng.randint(1000, 150000),
                                       "outputTokens": rng.randint(10, 2000), "cacheReadTokens": rng.randint(0, 100000),
                                       "cacheWriteTokens": 0}, scope)

    w.log("harpe.turn.message", {"role": "user", "text": _text(rng, _chars(rng, 120, 1.2, 5000)),
                                 "attachments": []}, scope)
    for _ in range(rng.randint(1, 10) if depth == 0 else rng.randint(1, 3)):
        reply()
        n_calls = 1 if rng.random() < 0.8 else rng.choice((2, 3))
        calls = [{"id": f"toolu_{rng.getrandbits(64):016x}", "name": rng.choice(("read", "bash", "edit", "grep")),
                  "input": {"path": "/src/" + _text(rng, 20).replace(" ", "/"),
                            "command": _text(rng, _chars(rng, 60, 1.3, 4000)), "limit": rng.randint(1, 500)}}
                 for _ in range(n_calls)]
        w.log("harpe.turn.message", {"role": "assistant", "text": _text(rng, _chars(rng, 80, 1.0, 3000)),
                                     "calls": calls}, scope)
        for c in calls:
            if depth == 0 and rng.random() < 0.02:
                _turn(w, rng, scope + [f"harpe.tools.call={c['id']}"], depth + 1)
            elif c["name"] == "bash" and rng.random() < 0.5:
                w.log("harpe.tools.runBash.ran", {"command": c["input"]["command"], "exitCode": 0,
                                                  "seconds": round(rng.random(), 3)},
                      scope + [f"harpe.tools.call={c['id']}"])
        w.log("harpe.turn.message", {"role": "tool_results", "results": [
            {"id": c["id"], "content": _tool_output(rng), "attachments": [], "success": rng.random() < 0.95}
            for c in calls]}, scope)
    roll = rng.random()
    if roll < 0.03:
        w.log("harpe.model.sent", MODEL, scope)
        w.log("harpe.model.gaveUp", {"error": "APIError: overloaded", "retries": 4}, scope)
        w.log("harpe.turn.failed", {"error": "APIError: overloaded"}, scope)
    elif roll < 0.05:
        w.log("harpe.turn.interrupted", {}, scope)
    else:
        reply()
        w.log("harpe.turn.message", {"role": "assistant", "text": _text(rng, _chars(rng, 200, 1.0, 8000)),
                                     "calls": []}, scope)
        w.log("harpe.turn.answered", {}, scope)


def generate(path: Path, size_mb: int, seed: int = 7) -> int:
    """Write a journal of about ``size_mb`` MB; return the number of bracketed turns."""
    rng = random.Random(seed)
    target = size_mb * 1_000_000
    turns = 0
    with open(path, "w", encoding="ascii", buffering=1 << 20) as f:
        w = _Writer(f, 1_788_000_000.0)
        while f.tell() < target:
            w.log("harpe.turn.request", {"data": {"text": _text(rng, 40)}}, [])
            _turn(w, rng, [])
            w.log("harpe.turn.response", {"data": "turnEnd"}, [])
            turns += 1
    return turns


_RUN = r"""
import resource, sys, time
path, mode = sys.argv[1], sys.argv[2]
import orjson, json
if mode == "records":
    from harpe_lab.journal import Journal
if mode == "objects":
    from harpe_lab.journal._codec import common, common_usage
    from harpe_lab.journal._events import MESSAGE, USAGE
if mode == "envelope":
    from harpe_lab.journal._envelope import parse_lines
    from harpe_lab.journal._problems import Lines
if mode in ("msgspec", "typed"):
    import msgspec

    class Envelope(msgspec.Struct):
        time: str
        event: str
        fields: dict
        context: list[str]

    decode = msgspec.json.Decoder(Envelope if mode == "typed" else None).decode
t0 = time.perf_counter()  # imports excluded: they are paid once, not per megabyte
c0 = time.process_time()
n = 0
# the floors read with the journal reader's 1 MB buffer, so the ratio measures the reader's own work
if mode == "orjson":
    with open(path, "rb", buffering=1 << 20) as f:
        for line in f:
            orjson.loads(line)
            n += 1
elif mode in ("msgspec", "typed"):
    with open(path, "rb", buffering=1 << 20) as f:
        for line in f:
            decode(line)
            n += 1
elif mode == "json":
    with open(path, "rb", buffering=1 << 20) as f:
        for line in f:
            json.loads(line)
            n += 1
elif mode == "objects":
    # the least a reader returning these records does: the message and usage objects built
    # (the reader's own constructors), no check, no time, no turn; each dropped at once
    with open(path, "rb", buffering=1 << 20) as f:
        for line in f:
            record = orjson.loads(line)
            event = record["event"]
            if event == MESSAGE:
                common(record["fields"])
                n += 1
            elif event == USAGE:
                common_usage(record["fields"])
                n += 1
elif mode == "envelope":
    for _ in parse_lines(path, Lines(path, "strict"), set()):
        n += 1
else:
    for record in Journal.stream(path):
        n += 1
elapsed = time.perf_counter() - t0
cpu = time.process_time() - c0
print(elapsed, n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, cpu)
"""


def _run(path: Path, mode: str) -> tuple[float, int, float]:
    """Wall seconds, items read and peak RSS (MB) of one timed read in a fresh process."""
    elapsed, n, rss, _cpu = _run_cpu(path, mode)
    return elapsed, n, rss


def _run_cpu(path: Path, mode: str) -> tuple[float, int, float, float]:
    """`_run`, and the CPU seconds of the read."""
    out = subprocess.run([sys.executable, "-c", _RUN, str(path), mode], check=True, capture_output=True, text=True)
    elapsed, n, rss, cpu = out.stdout.split()
    return float(elapsed), int(n), float(rss), float(cpu)


_VERIFY = r"""
import sys
from harpe_lab.journal import Journal, RecordStream
path = sys.argv[1]
fast = Journal.stream(path)
general = RecordStream(path, usage_rows=[])  # Journal.usage's path: every record decoded at its response
n = 0
for a in fast:
    b = next(general)
    if repr(a) != repr(b):
        sys.exit(f"record {n} differs: lines {a.lines} vs {b.lines}")
    n += 1
if next(general, None) is not None:
    sys.exit(f"Journal.stream stopped after {n} records; the general path reads more")
seen = lambda s: repr((s.problems, s.notes, s.generations, s.reader, s.prefix))
if seen(fast) != seen(general):
    sys.exit("problems, notes, generations or reader differ")
print(n)
"""


def verify(path: Path) -> int:
    """Check that ``Journal.stream`` reads ``path`` exactly as the reader's general path
    does (see the module docstring); the number of records. Raises `AssertionError`."""
    out = subprocess.run([sys.executable, "-c", _VERIFY, str(path)], capture_output=True, text=True)
    if out.returncode != 0:
        raise AssertionError(f"Journal.stream differs from the general path: {out.stderr.strip()[-500:]}")
    return int(out.stdout)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mb", type=int, default=1000, help="journal size in MB (default 1000)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions per reader (median reported; default 5)")
    parser.add_argument("--modes", default=None,
                        help="readers to time (comma-separated; default orjson,records,objects,envelope,msgspec,typed,"
                             "json, msgspec and typed only when msgspec is installed)")
    parser.add_argument("--keep", default=None, help="write (or reuse) the journal at this path")
    args = parser.parse_args(argv)
    if args.keep:
        path = Path(args.keep)
        cleanup = False
    else:
        path = Path(tempfile.mkdtemp(prefix="harpe-bench-")) / "journal.jsonl"
        cleanup = True
    try:
        if not path.exists():
            t0 = time.perf_counter()
            turns = generate(path, args.size_mb)
            print(f"generated {path} ({path.stat().st_size / 1e6:.0f} MB, {turns} turns) "
                  f"in {time.perf_counter() - t0:.1f} s")
        with open(path, "rb") as f:
            lines = sum(1 for _ in f)
        size = path.stat().st_size
        print(f"{size / 1e6:.0f} MB, {lines} lines (mean {size / lines:.0f} bytes), {args.reps} reps each")
        modes = args.modes.split(",") if args.modes else ["orjson", "records", "objects", "envelope", "msgspec",
                                                          "typed", "json"]
        if not args.modes and importlib.util.find_spec("msgspec") is None:
            modes = [m for m in modes if m not in ("msgspec", "typed")]
        if "records" in modes:
            print(f"verified: Journal.stream reads the {verify(path)} records the general path reads")
        results: dict[str, list[tuple[float, int, float, float]]] = {m: [] for m in modes}
        for _ in range(args.reps):  # interleaved, so drift in machine load hits every reader alike
            for mode in results:
                results[mode].append(_run_cpu(path, mode))
        for mode, rs in results.items():
            if len({r[1] for r in rs}) != 1:
                raise AssertionError(f"{mode} read a different number of items across runs: {[r[1] for r in rs]}")
        medians = {m: statistics.median(r[0] for r in rs) for m, rs in results.items()}
        cpus = {m: statistics.median(r[3] for r in rs) for m, rs in results.items()}
        for mode, rs in results.items():
            rss = max(r[2] for r in rs)
            line = f"{mode:>8}: wall {medians[mode]:6.2f} s  ({size / 1e6 / medians[mode]:5.0f} MB/s)  " \
                   f"cpu {cpus[mode]:6.2f} s  peak RSS {rss:5.0f} MB  items {rs[0][1]}"
            if mode != "orjson" and "orjson" in medians:
                line += f"  × orjson {medians[mode] / medians['orjson']:.2f} (cpu {cpus[mode] / cpus['orjson']:.2f})"
            if mode != "json" and "json" in medians:
                line += f"  × json {medians[mode] / medians['json']:.2f}"
            print(line)
        if "records" in medians and "orjson" in medians:
            ratio = medians["records"] / medians["orjson"]
            rss = max(r[2] for r in results["records"])
            print(f"goal records ≤ 1.4× orjson: {'met' if ratio <= 1.4 else 'MISSED'} ({ratio:.2f}× wall, "
                  f"{cpus['records'] / cpus['orjson']:.2f}× cpu); "
                  f"goal peak RSS < 300 MB: {'met' if rss < 300 else 'MISSED'} ({rss:.0f} MB)")
    finally:
        if cleanup:
            path.unlink(missing_ok=True)
            path.parent.rmdir()
    return 0


if __name__ == "__main__":
    sys.exit(main())
