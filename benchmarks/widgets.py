"""How long the Explorer takes to redraw after a slider move, on a 1,000-request replay.

    .venv/bin/python benchmarks/widgets.py [--requests 1000] [--moves 40]

Prints the median and 90th percentile of three timings, each from the moment a
control's ``.value`` is set until every view (plot PNG, count, summary, gauge, request
view) holds the new state — what a person waits for after letting go of a slider:

* ``high water, new value``  — the replay is computed, then drawn
* ``high water, seen value`` — the replay comes from the cache, only drawn
* ``request step``           — only the cursor, gauge and request view change

The goal is a median of at most 100 ms. A new value costs one replay first, and a replay
of the summarizing preset spends most of its time in the distiller and in truncation
(``--profile`` prints where).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import matplotlib

matplotlib.use("Agg")

from harpe_lab.datasets import synthesize  # noqa: E402
from harpe_lab.widgets import Explorer  # noqa: E402


def conversation_with(requests: int):
    """A synthetic conversation with about ``requests`` model calls."""
    turns = max(3, requests // 2)
    while True:
        c = synthesize(turns, seed=1, tool_rate=0.5, result_chars=800)
        n = sum(1 + sum(1 for m in t.messages if m.role == "tool_results") for t in c.turns)
        if n >= requests:
            return c
        turns = int(turns * requests / n) + 1


def timed(set_value, values) -> list[float]:
    out = []
    for v in values:
        started = time.perf_counter()
        set_value(v)
        out.append(time.perf_counter() - started)
    return out


def report(label: str, seconds: list[float]) -> float:
    ms = sorted(s * 1000 for s in seconds)
    median = statistics.median(ms)
    p90 = ms[int(0.9 * (len(ms) - 1))]
    print(f"{label:<24} median {median:7.1f} ms   p90 {p90:7.1f} ms   ({len(ms)} moves)")
    return median


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--moves", type=int, default=40)
    parser.add_argument("--profile", action="store_true", help="profile the new-value redraws")
    args = parser.parse_args(argv)

    conversation = conversation_with(args.requests)
    started = time.perf_counter()
    e = Explorer(conversation, datasets=False)
    print(f"{conversation!r}: Explorer built in {time.perf_counter() - started:.2f} s; "
          f"{len(e.replay)} requests")  # fmt: skip
    lo, hi = e.high_water.min, e.high_water.max
    span = hi - lo
    values = [lo + span // 8 + k * (span // 2) // args.moves for k in range(args.moves)]

    def set_high(v: int) -> None:
        e.high_water.value = v

    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
    cold = report("high water, new value", timed(set_high, values))
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(int(os.environ.get("PROFILE_ROWS", "12")))
    warm = report("high water, seen value", timed(set_high, values))
    steps = [(k * 37) % len(e.replay) for k in range(args.moves)]
    report("request step", timed(lambda v: setattr(e.step, "value", v), steps))
    if e.last_error is not None:
        print(f"a redraw failed: {e.last_error!r}", file=sys.stderr)
        return 1
    goal = 100.0
    for label, value in (("new value", cold), ("seen value", warm)):
        print(f"goal: median <= {goal:.0f} ms, {label}: {'met' if value <= goal else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
