"""Scale-out: one `harpe_lab.sweep.sweep` on 1 and 2 worker processes, and on dask.

The same sweep — many generated conversations × three strategies × two budgets, over 20 s
of replaying on one core — runs with ``workers=1`` (in this process) and ``workers=2`` (its
own fork pool, started inside the timed region as a user's sweep would), interleaved. Then
a ``dask.distributed`` ``LocalCluster`` of 2 single-threaded worker processes is started
(untimed, and warmed up: imports, the BPE file) and the sweep runs on it — the client
passed to ``sweep`` as the executor, the code a user runs against a real cluster's
scheduler address — interleaved with ``workers=1`` again, so both sides of that ratio ran
with the cluster up. Every run must return the same table. Goals: 2 workers ≥ 1.8× one
worker; dask with 2 workers ≥ 1.6× one worker.

Every timed run starts cold: harpe_lab's process-wide memos (an offline distiller's
per-text extraction, the warm counter a worker keeps) are cleared in this process and on
the dask workers first, so no repetition is helped by the one before.

On a shared machine the wall-time ratios measure the neighbours too; two more figures help
read them: a pure-CPU burn on 1 and 2 processes, timed beside the sweeps (the parallelism
the machine offered meanwhile), and an *idle-machine estimate* of the 2-worker ratio from CPU
time, which the neighbours barely touch — the CPU seconds each worker spent replaying
(``frame.attrs["cpu_seconds"]``, so the imbalance between them counts) and this process's
own CPU during the run (the serial part: forking, handing out chunks, collecting rows):
``T1 / max(slowest worker + parent, (all workers + parent) / 2)``.

The factories are module-level functions, so a plain process pool could pickle them too.

    .venv/bin/python -m benchmarks.scale [--reps 3] [--quick] [--no-dask]
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import Goal, Row, format_table, interleaved, log, median  # noqa: E402

__all__ = ["run", "conversations", "STRATEGIES", "GRID", "sliding", "chain", "summarizing", "burn", "forget", "main"]

SCALE_GOAL = Goal(">=", 1.8)
DASK_GOAL = Goal(">=", 1.6)
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


def forget() -> None:
    """Clear harpe_lab's process-wide memos (every ``functools`` cache of its loaded
    modules, and the warm counter a sweep worker keeps) so the next sweep starts cold. The
    loaded BPE file stays: every worker process loads it once, and a pool forked from this
    process inherits it just as the one-worker run uses this process's copy."""
    import importlib

    sweeps = importlib.import_module("harpe_lab.sweep")  # the package re-exports the function under that name
    for name, module in list(sys.modules.items()):
        if module is None or not (name == "harpe_lab" or name.startswith("harpe_lab.")):
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
                value.cache_clear()
    sweeps._WARM.clear()


def _sweep(convs: list[Any], executor: Any, workers: int | None = None) -> tuple[Any, float]:
    """The sweep's table and this process's CPU seconds during it (threads included)."""
    from harpe_lab.sweep import sweep
    from harpe_lab.tokens import TiktokenCounter

    started = time.process_time()
    frame = sweep(convs, STRATEGIES, GRID, counter=TiktokenCounter(), executor=executor, workers=workers,
                  progress=False)  # fmt: skip
    return frame, time.process_time() - started


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
    forget()


def _cold(make: Callable[[], Callable[[], Any]], client: Any = None) -> Callable[[], Callable[[], Any]]:
    """A case's prepare step: forget the memos (here and on the dask workers), then build."""

    def prepare() -> Callable[[], Any]:
        forget()
        if client is not None:
            client.run(forget)
        return make()

    return prepare


def _estimate(one_cpu: float, cpu: dict[str, float], parent_cpu: float, cores: int = 2) -> tuple[float, str]:
    """The idle-machine ratio T1 / max(slowest worker + parent, (workers + parent) / cores)
    from a sweep's ``frame.attrs["cpu_seconds"]`` (the parent's CPU counted as serial: it
    is spent forking and collecting while the workers wait or are done), and a detail
    saying what went into it."""
    per = sorted(cpu.values())
    if not per:
        return float("nan"), "no CPU seconds recorded"
    work = sum(per)
    wall = max(per[-1] + parent_cpu, (work + parent_cpu) / cores)
    detail = (f"workers' CPU {' + '.join(f'{s:.2f}' for s in per)} s (work ×{work / one_cpu:.2f} of one worker's "
              f"{one_cpu:.2f} s), parent {parent_cpu:.2f} s ({parent_cpu / one_cpu:.1%} serial)")  # fmt: skip
    return one_cpu / wall, detail


def run(*, reps: int = 3, count: int = 30, turns: int = 150, dask: bool = True, burn_n: int = 4_000_000) -> list[Row]:
    """Time the sweep on 1 and 2 processes, then on dask (beside one worker again, with
    the cluster up); return table rows, with the figures that say what an idle machine
    would show."""

    convs = conversations(count, turns)
    _warm(convs[0])
    tasks = count * len(STRATEGIES) * len(GRID["budget"])
    log(f"scale-out: {tasks} replays ({count} conversations of {turns} turns × {len(STRATEGIES)} strategies × "
        f"{len(GRID['budget'])} budgets)")  # fmt: skip
    one_worker = _cold(lambda: functools.partial(_sweep, convs, None, 1))
    reference: list[Any] = []
    seen: dict[str, list[tuple[Any, float]]] = {}

    def check(name: str, result: Any) -> None:
        if name.startswith("burn"):
            return
        frame, parent_cpu = result
        seen.setdefault(name, []).append((frame.attrs.get("cpu_seconds", {}), parent_cpu))
        table = frame.sort_values(["conversation", "strategy", "budget"]).reset_index(drop=True)
        if not reference:
            reference.append(table)
        elif not table.equals(reference[0]):
            raise AssertionError(f"scale-out: the sweep on {name} returned a different table")

    # first without dask: an idle LocalCluster's scheduler (in this process) and workers
    # take a few percent of a core between them, which would slow every other case
    timings = interleaved({
        "1 worker": one_worker,
        "2 workers": _cold(lambda: functools.partial(_sweep, convs, None, 2)),
        "burn 1": lambda: _burn(1, burn_n),
        "burn 2": lambda: _burn(2, burn_n),
    }, reps, check=check, progress="scale-out", clock=time.perf_counter)  # fmt: skip
    one = timings.median("1 worker")
    one_cpu = median([sum(cpu.values()) for cpu, _ in seen["1 worker"]])
    b1, b2 = timings.median("burn 1"), timings.median("burn 2")
    rows = []

    def ratio(base: float, t: float, what: str, goal: Goal | None, reps: int, how: str) -> None:
        rows.append(Row("4 scale-out", what, base / t, goal=goal, reps=reps,
                        detail=f"{base:.2f} s / {t:.2f} s wall; {tasks} replays; {how}"))  # fmt: skip

    ratio(one, timings.median("2 workers"), "sweep(workers=1) / sweep(workers=2) (its own fork pool)", SCALE_GOAL,
          timings.reps("2 workers"), "conversations, factories and counter inherited by the forked workers")
    if dask:
        import dask.distributed

        with dask.distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=None) as cluster, dask.distributed.Client(cluster) as client:
            _sweep(convs[:2], client)  # warm-up: imports and BPE loading in the workers
            beside = interleaved({"1 worker": one_worker,
                                  "dask 2": _cold(lambda: functools.partial(_sweep, convs, client), client)},
                                 reps, check=check, progress="scale-out on dask", clock=time.perf_counter)  # fmt: skip
        dask_cpu = sorted(seen["dask 2"], key=lambda run: sum(run[0].values()))[len(seen["dask 2"]) // 2][0]
        ratio(beside.median("1 worker"), beside.median("dask 2"),
              "sweep(workers=1) / sweep(executor=Client(LocalCluster(2 workers)))", DASK_GOAL, beside.reps("dask 2"),
              "one worker timed beside dask, with the cluster up; each chunk's conversation pickled once; "
              "cluster started and warmed up untimed; the dask workers' CPU "
              f"{' + '.join(f'{x:.2f}' for x in sorted(dask_cpu.values()))} s")  # fmt: skip
    estimates = [_estimate(one_cpu, cpu, parent_cpu) for cpu, parent_cpu in seen["2 workers"]]
    middle = sorted(estimates, key=lambda e: e[0])[len(estimates) // 2]
    rows.append(Row("4 scale-out", "idle-machine estimate of sweep(workers=1) / sweep(workers=2), from CPU time",
                    middle[0], reps=len(estimates), detail=middle[1]))  # fmt: skip
    rows.append(Row(
        "4 scale-out", "machine check: pure-CPU burn on 1 / on 2 processes", b1 / b2, reps=timings.reps("burn 2"),
        detail=f"{b1:.2f} s / {b2:.2f} s; the parallelism the machine offered while the sweeps ran",
    ))  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="a small sweep, 3 reps")
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args(argv)
    if args.quick:
        rows = run(reps=3, count=6, turns=100, dask=not args.no_dask, burn_n=1_000_000)
    else:
        rows = run(reps=args.reps, dask=not args.no_dask)
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    # Run through the package so the factories pickle as benchmarks.scale.*, not __main__.*
    from benchmarks.scale import main as _main

    raise SystemExit(_main())
