"""Sweeps: replay many conversations under many strategies and parameters at once.

    frame = sweep(
        [conversation],
        {"summarizing": lambda high_water, low_water: SummarizingContext(
            "", high_water_tokens=high_water, low_water_chars=low_water, distill=ExtractiveDistiller(2000))},
        {"high_water": [4000, 8000], "low_water": [8000, 16000]},
        counter=TiktokenCounter(),
    )

Each factory receives the grid parameters its signature names (all of them if it takes
``**kwargs``) and returns a fresh context. One row per (conversation, strategy,
parameters) with the replay's totals (`harpe_lab.replay.Replay.totals`).

By default a pool of ``workers`` processes (one per core) runs the replays; it is started
with ``fork`` so factories may be lambdas defined in a notebook, and the counter is warmed
on every message first, so the workers inherit its caches and no message is tokenized
twice. Any ``concurrent.futures.Executor`` works too — a ``dask.distributed`` client's
``get_executor()`` unchanged (its pickler handles lambdas; a plain process pool needs
picklable, module-level factories). There each worker process keeps one warm copy of the
counter across its tasks.
"""

from __future__ import annotations

import inspect
import itertools
import multiprocessing
import os
import pickle
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any, Callable, Iterable, Mapping, Sequence

from .conversation import Conversation
from .errors import StrategyError
from .replay import replay

__all__ = ["sweep", "grid_points"]

_JOBS: tuple | None = None  # what forked workers read instead of unpickling factories
_WARM: dict[Any, Any] = {}  # in an executor's worker: the first copy of each counter it was sent


def grid_points(grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | None) -> list[dict[str, Any]]:
    """Expand a grid: a mapping of name → values gives the cartesian product; a sequence
    of mappings is taken as the explicit list of points."""
    if grid is None:
        return [{}]
    if isinstance(grid, Mapping):
        for k, v in grid.items():
            if isinstance(v, (str, bytes)) or not isinstance(v, Iterable):
                raise StrategyError(f"grid[{k!r}] must be a sequence of values, but {v!r} was passed")
        keys = list(grid)
        return [dict(zip(keys, values)) for values in itertools.product(*(list(grid[k]) for k in keys))]
    points = [dict(p) for p in grid]
    if not points:
        raise StrategyError("grid is an empty list of points; pass at least one mapping")
    return points


def _accepted(factory: Callable[..., Any], params: Mapping[str, Any]) -> dict[str, Any]:
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return dict(params)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values()):
        return dict(params)
    return {k: v for k, v in params.items() if k in sig.parameters}


def _run(conversation: Conversation, name: str, factory: Callable[..., Any], params: dict[str, Any],
         counter: Any, tools: tuple, pricing: Any) -> dict[str, Any]:
    # counters pickle without their caches: reuse this process's warm copy of an equal one
    try:
        counter = _WARM.setdefault(counter, counter)
    except TypeError:  # an unhashable counter of the user's: use it as sent
        pass
    kwargs = _accepted(factory, params)
    result = replay(conversation, lambda: factory(**kwargs), counter=counter, tools=tools, pricing=pricing, name=name)
    return {"conversation": conversation.id, "strategy": name, **params, **result.totals()}


def _run_forked(k: int) -> dict[str, Any]:
    assert _JOBS is not None
    conversations, strategies, tasks, counter, tools, pricing = _JOBS
    ci, name, params = tasks[k]
    return _run(conversations[ci], name, strategies[name], params, counter, tools, pricing)


def sweep(
    conversations: Conversation | Iterable[Conversation],
    strategies: Mapping[str, Callable[..., Any]],
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | None = None,
    *,
    counter: Any,
    executor: Executor | None = None,
    workers: int | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
    pricing: Any = None,
    progress: bool = True,
) -> Any:
    """Replay every conversation under every strategy at every grid point; return one row
    per replay: ``conversation, strategy``, the grid parameters, then the totals.

    ``workers`` sizes the default process pool (default: the number of cores; 1 runs the
    replays in this process); it cannot be combined with ``executor``."""
    import pandas as pd
    from tqdm.auto import tqdm

    global _JOBS
    convs = [conversations] if isinstance(conversations, Conversation) else list(conversations)
    if not convs:
        raise StrategyError("sweep needs at least one conversation")
    if not strategies:
        raise StrategyError("sweep needs at least one strategy: a mapping of name -> context factory")
    for name, factory in strategies.items():
        if not callable(factory):
            raise StrategyError(f"strategies[{name!r}] must be a callable returning a context, got {factory!r}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise StrategyError(f"workers must be an int >= 1, got {workers!r}")
    if workers is not None and executor is not None:
        raise StrategyError("pass workers= or executor=, not both: an executor sizes its own pool")
    points = grid_points(grid)
    tasks = [(ci, name, p) for ci in range(len(convs)) for name in strategies for p in points]
    tools = tuple(tools)
    bar = tqdm(total=len(tasks), desc="sweep", unit="replay", disable=not progress)
    rows: list[dict[str, Any] | None] = [None] * len(tasks)
    try:
        n = min(workers or os.cpu_count() or 1, len(tasks))
        if executor is None and n > 1 and "fork" in multiprocessing.get_all_start_methods():
            for c in convs:  # tokenize once here; the forked workers inherit the caches
                for m in c.messages():
                    counter.count_message(m)
            _JOBS = (convs, dict(strategies), tasks, counter, tools, pricing)
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                futures = {pool.submit(_run_forked, k): k for k in range(len(tasks))}
                for future in _as_completed(futures):
                    rows[futures[future]] = future.result()
                    bar.update()
        elif executor is None:
            for k, (ci, name, p) in enumerate(tasks):
                rows[k] = _run(convs[ci], name, strategies[name], p, counter, tools, pricing)
                bar.update()
        else:
            futures = {
                executor.submit(_run, convs[ci], name, strategies[name], p, counter, tools, pricing): k
                for k, (ci, name, p) in enumerate(tasks)
            }
            for future in _as_completed(futures):
                k = futures[future]
                try:
                    rows[k] = future.result()
                except (pickle.PicklingError, AttributeError) as exc:
                    if "pickle" not in str(exc).lower():
                        raise
                    raise StrategyError(
                        f"strategy {tasks[k][1]!r} could not be sent to the executor ({exc}); with a plain "
                        "process pool use module-level functions or functools.partial, or pass executor=None"
                    ) from exc
                bar.update()
    finally:
        _JOBS = None
        bar.close()
    return pd.DataFrame(rows)


def _as_completed(futures: Mapping[Any, int]) -> Iterable[Any]:
    from concurrent.futures import as_completed

    try:
        return as_completed(futures)
    except TypeError:  # futures of an executor concurrent.futures does not know
        return list(futures)
