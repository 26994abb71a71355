"""Scale-out: one `harpe_lab.sweep.sweep` on 1 and 2 worker processes, and on dask.

The same sweep — several generated conversations × three strategies × two budgets — runs
with ``workers=1`` and ``workers=2`` (its own fork pool: the counter is warmed once and
inherited), on ``ProcessPoolExecutor(1)`` and ``(2)`` (the pools are started inside the
timed region, as a user's sweep would; the sweep is long enough that start-up is
negligible) and on a ``dask.distributed`` ``LocalCluster`` of 2 single-threaded worker
processes through ``client.get_executor()`` (the cluster is started once, untimed, and
warmed up). Every run must return the same table. Goal: 2 workers ≥ 1.8× faster than 1.

The factories are module-level functions, so a plain process pool can pickle them.

    .venv/bin/python -m benchmarks.scale [--reps 5] [--quick] [--no-dask]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import Goal, Row, format_table, interleaved, log  # noqa: E402

__all__ = ["run", "conversations", "STRATEGIES", "GRID", "sliding", "chain", "summarizing", "burn", "main"]

SCALE_GOAL = Goal(">=", 1.8)
SYSTEM = "You are a careful operations assistant. Answer briefly and use tools to check facts."
GRID = {"budget": [4_000, 8_000]}


def sliding(budget: int) -> Any:
    """orion SlidingWindow (it prices messages with its own counter)."""
    from harpe_lab.strategies.orion import OrionContext, SlidingWindow
    from harpe_lab.tokens import TiktokenCounter

    return OrionContext(SYSTEM, SlidingWindow(budget, counter=TiktokenCounter(), reserve_tokens=budget // 10))


def chain(budget: int) -> Any:
    """laser Chain(LastN(40), TokenBudget(budget))."""
    from harpe_lab.strategies.laser import Chain, LastN, PolicyContext, TokenBudget

    return PolicyContext(SYSTEM, Chain([LastN(40), TokenBudget(budget)]))


def summarizing(budget: int) -> Any:
    """Harpe's SummarizingContext with the offline ExtractiveDistiller."""
    from harpe_lab.strategies.harpe import SummarizingContext
    from harpe_lab.summarize import ExtractiveDistiller

    return SummarizingContext(SYSTEM, high_water_tokens=budget, low_water_chars=2 * budget,
                              distill=ExtractiveDistiller(max_chars=max(400, budget)))  # fmt: skip


STRATEGIES: dict[str, Callable[..., Any]] = {"sliding": sliding, "chain": chain, "summarizing": summarizing}


def conversations(count: int, turns: int) -> list[Any]:
    """``count`` generated conversations of ``turns`` turns (seeds 11, 12, ...)."""
    from harpe_lab.datasets import synthesize

    return [synthesize(turns, seed=11 + k).with_(id=f"scale-{k}") for k in range(count)]


def _sweep(convs: list[Any], executor: Any, workers: int | None = None) -> Any:
    from harpe_lab.sweep import sweep
    from harpe_lab.tokens import TiktokenCounter

    return sweep(convs, STRATEGIES, GRID, counter=TiktokenCounter(), executor=executor, workers=workers,
                 progress=False)


def burn(n: int) -> int:
    """Pure-Python CPU work with nothing to share: what 2 processes can gain at best."""
    x = 0
    for i in range(n):
        x ^= i * i
    return x


def _burn(workers: int, n: int) -> Callable[[], Any]:
    def go() -> Any:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return list(pool.map(burn, [n] * 4))

    return go


def _warm(conversation: Any) -> None:
    """Load what a session that built these strategies has loaded already — the BPE file,
    the strategy modules, pandas' first frame — before any pool forks, so each worker does
    not pay for it again (pool start-up is not what this benchmark measures)."""
    from harpe_lab.replay import replay
    from harpe_lab.tokens import TiktokenCounter

    short = conversation.with_(turns=conversation.turns[:3])
    for factory in STRATEGIES.values():
        replay(short, lambda: factory(GRID["budget"][0]), counter=TiktokenCounter()).totals()


def _pool(workers: int, convs: list[Any]) -> Callable[[], Any]:
    def go() -> Any:
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            return _sweep(convs, pool)

    return go


def run(*, reps: int = 5, count: int = 3, turns: int = 300, dask: bool = True, burn_n: int = 2_000_000) -> list[Row]:
    """Time the sweep on 1 and 2 processes, on sweep's default pool and on dask; return
    table rows. A pure-CPU burn on 1 and 2 processes, timed alongside, shows how much
    parallelism the machine actually offered (on a shared machine, often less than 2×)."""

    convs = conversations(count, turns)
    _warm(convs[0])
    tasks = count * len(STRATEGIES) * len(GRID["budget"])
    log(f"scale-out: {tasks} replays ({count} conversations of {turns} turns × {len(STRATEGIES)} strategies × "
        f"{len(GRID['budget'])} budgets)")  # fmt: skip
    cases: dict[str, Any] = {
        "1 worker": lambda: (lambda: _sweep(convs, None, workers=1)),
        "2 workers": lambda: (lambda: _sweep(convs, None, workers=2)),
        "1 process": lambda: _pool(1, convs),
        "2 processes": lambda: _pool(2, convs),
        "burn 1": lambda: _burn(1, burn_n),
        "burn 2": lambda: _burn(2, burn_n),
    }
    client = cluster = None
    if dask:
        from dask.distributed import Client, LocalCluster

        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
        client = Client(cluster)
        _sweep(convs[:1], client.get_executor())  # warm-up: imports and BPE loading in the workers
        cases["dask 2 workers"] = lambda: (lambda: _sweep(convs, client.get_executor()))
    reference: list[Any] = []

    def check(name: str, frame: Any) -> None:
        if name.startswith("burn"):
            return
        table = frame.sort_values(["conversation", "strategy", "budget"]).reset_index(drop=True)
        if not reference:
            reference.append(table)
        elif not table.equals(reference[0]):
            raise AssertionError(f"scale-out: the sweep on {name} returned a different table")

    try:
        timings = interleaved(cases, reps, check=check, progress="scale-out", clock=time.perf_counter)
    finally:
        if client is not None:
            client.close()
            cluster.close()
    one, two = timings.median("1 worker"), timings.median("2 workers")
    p1, p2 = timings.median("1 process"), timings.median("2 processes")
    rows = [Row(
        "4 scale-out", "sweep(workers=1) / sweep(workers=2) (its own fork pool)", one / two,
        goal=SCALE_GOAL, reps=timings.reps("2 workers"),
        detail=f"{one:.2f} s / {two:.2f} s; {tasks} replays; counter warmed once, inherited by the workers",
    ), Row(
        "4 scale-out", "sweep on ProcessPoolExecutor(1) / ProcessPoolExecutor(2)", p1 / p2,
        reps=timings.reps("2 processes"),
        detail=f"{p1:.2f} s / {p2:.2f} s; each worker process tokenizes what it is sent",
    )]  # fmt: skip
    b1, b2 = timings.median("burn 1"), timings.median("burn 2")
    rows.append(Row(
        "4 scale-out", "machine check: pure-CPU burn on 1 / on 2 processes", b1 / b2, reps=timings.reps("burn 2"),
        detail=f"{b1:.2f} s / {b2:.2f} s; the parallelism the machine offered while the sweeps ran",
    ))  # fmt: skip
    if dask:
        d = timings.median("dask 2 workers")
        rows.append(Row(
            "4 scale-out", "sweep(workers=1) / sweep on dask LocalCluster (2 workers)", one / d, reps=timings.reps("dask 2 workers"),
            detail=f"{one:.2f} s / {d:.2f} s; cluster started and warmed up untimed",
        ))  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="a small sweep, 3 reps")
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        rows = run(reps=3, count=2, turns=150, dask=not args.no_dask, burn_n=500_000)
    else:
        rows = run(reps=args.reps, dask=not args.no_dask)
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    # Run through the package so the factories pickle as benchmarks.scale.*, not __main__.*
    from benchmarks.scale import main as _main

    raise SystemExit(_main())
