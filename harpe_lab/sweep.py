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
parameters) with the replay's totals (`harpe_lab.replay.Replay.totals`), in the same order
and with the same values whatever runs them.

**How the work is split.** The replays are grouped by conversation into *chunks*, and a
chunk is what a worker is given: a conversation's replays then share one process, where
its messages are counted once and an offline distiller's per-text memo is reused, and the
conversation travels once per chunk rather than once per replay. When there are fewer than
four conversations per worker, the largest chunks are halved until there are enough to
keep every worker busy. Chunks are handed out largest first (characters × replays), so the
ones still running at the end are small ones.

**The default pool.** ``workers`` processes (one per usable core) started with ``fork``:
the workers inherit the conversations, factories and counter, so nothing is pickled on the
way in (factories may be lambdas defined in a notebook) and only the rows come back.
``workers=1`` replays in this process.

**Any executor.** A ``concurrent.futures.Executor`` works too: a ``ProcessPoolExecutor``
(which pickles, so factories must be module-level functions or ``functools.partial``), or a
``dask.distributed`` client. Each worker process keeps one warm copy of the counter across
the chunks it runs.

**On a dask cluster**, when one machine is not enough, pass the client itself (or its
``get_executor()``)::

    from distributed import Client

    # `dask scheduler` prints the address; on each machine: dask worker ADDRESS --nworkers -1 --nthreads 1
    client = Client("tcp://scheduler-host:8786")
    frame = sweep(conversations, strategies, grid, counter=TiktokenCounter(), executor=client)

The workers need the same harpe_lab installed, and for a `TiktokenCounter` the BPE file
(litellm's wheel ships it, or point ``TIKTOKEN_CACHE_DIR`` at it: nothing is downloaded);
each worker loads it once. Factories travel with cloudpickle, so notebook lambdas work,
but whatever they import must be importable on the workers. ``LocalCluster(n_workers=2,
threads_per_worker=1)`` runs the same code on this machine. A replay is pure-Python work
that holds the GIL: give dask workers one thread each and more processes.

``frame.attrs["cpu_seconds"]`` holds the CPU seconds each process spent replaying (by
``host:pid``): how evenly the work was spread.
"""

from __future__ import annotations

import inspect
import itertools
import multiprocessing
import os
import pickle
import socket
import time
from concurrent.futures import Executor, ProcessPoolExecutor
from typing import Any, Callable, Iterable, Mapping, Sequence

from ._text import message_chars
from .conversation import Conversation
from .errors import StrategyError
from .replay import replay

__all__ = ["sweep", "grid_points", "PerConversation", "PerStrategy"]

_CHUNKS_PER_WORKER = 4  # fewer chunks than this and the last one to finish leaves workers idle
_JOBS: tuple | None = None  # what forked workers read instead of unpickling anything
_WARM: dict[Any, Any] = {}  # in an executor's worker: the first copy of each counter it was sent
_PREPARED: dict[int, tuple[Conversation, Any]] = {}  # during a sweep, in each process: what `prepare` made

Task = tuple[str, Callable[..., Any], dict[str, Any]]  # strategy name, factory, grid point


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


def _chunks(sizes: Sequence[int], tasks: Sequence[tuple[int, str, dict[str, Any]]], workers: int) -> list[list[int]]:
    """Task indices grouped by conversation, the largest groups halved until there are
    `_CHUNKS_PER_WORKER` per worker (or single tasks), ordered largest first."""
    groups: dict[int, list[int]] = {}
    for k, (ci, _, _) in enumerate(tasks):
        groups.setdefault(ci, []).append(k)
    chunks = list(groups.values())
    while len(chunks) < _CHUNKS_PER_WORKER * workers:
        biggest = max(chunks, key=len)
        if len(biggest) == 1:
            break
        chunks.remove(biggest)
        half = len(biggest) // 2
        chunks += [biggest[:half], biggest[half:]]
    # stable: equal chunks keep the conversations' order
    return sorted(chunks, key=lambda chunk: -len(chunk) * sizes[tasks[chunk[0]][0]])


def _per(value: Any, conversation: Conversation) -> Any:
    """``value``, or its entry for ``conversation`` when it is a `PerConversation`."""
    return value[conversation.id] if isinstance(value, PerConversation) else value


def _replay_chunk(conversation: Conversation, chunk: Sequence[Task], counter: Any, tools: tuple,
                  pricing: Any, extra: Callable[[Any, dict[str, Any]], Mapping[str, Any]] | None = None,
                  prepare: Callable[[Conversation], Any] | None = None, memo: bool = True,
                  ) -> tuple[list[dict[str, Any]], str, float, Any]:  # fmt: skip
    """The rows of one chunk, this process's name, the CPU seconds this thread spent
    (thread time: a dask worker runs its own threads beside the task) and what ``prepare``
    made of the conversation (``None`` without it), which then gives the counter and prices.
    ``memo``: keep what ``prepare`` made for the next chunk of the conversation in this
    process (not in an executor's long-lived workers, which are sent a copy every time)."""
    started = time.thread_time()
    prepared = None
    if prepare is not None:
        prepared = _prepared(prepare, conversation) if memo else prepare(conversation)
        counter, pricing = prepared.counter, prepared.pricing
    else:
        counter, pricing = _per(counter, conversation), _per(pricing, conversation)
    rows = []
    for name, factory, params in chunk:
        kwargs = _accepted(factory, params)
        kwargs.update(_given(factory, conversation=conversation, counter=counter))
        try:
            result = replay(conversation, lambda: factory(**kwargs), counter=counter, tools=tools, pricing=pricing,
                            name=name)  # fmt: skip
        except StrategyError as err:
            if extra is None:
                raise
            # with `extra` (a report of several sessions), one refusal is a row, not the end of the run:
            # a budget too small for the session, a knob value it cannot take
            rows.append({"conversation": conversation.id, "strategy": name, **params, "refused": " ".join(str(err).split())})
            continue
        row = {"conversation": conversation.id, "strategy": name, **params, **result.totals()}
        if extra is not None:
            row.update(extra(result, params))
        rows.append(row)
    return rows, f"{socket.gethostname()}:{os.getpid()}", time.thread_time() - started, prepared


def _prepared(prepare: Callable[[Conversation], Any], conversation: Conversation) -> Any:
    """What ``prepare`` made of ``conversation`` in this process during this sweep."""
    hit = _PREPARED.get(id(conversation))
    if hit is None or hit[0] is not conversation:
        hit = _PREPARED[id(conversation)] = (conversation, prepare(conversation))
    return hit[1]


def _given(factory: Callable[..., Any], **available: Any) -> dict[str, Any]:
    """What the engine hands a factory that names it: the conversation and its counter."""
    try:
        names = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return {}
    return {k: v for k, v in available.items() if k in names}


class PerConversation(dict):
    """A counter or a pricing per conversation id, for `sweep`'s ``counter`` and ``pricing``
    (e.g. a counter calibrated on each session)."""


class PerStrategy(dict):
    """A grid per strategy name, for `sweep`'s ``grid`` (a strategy not in it runs once,
    with no grid parameters)."""


def _run_sent(conversation: Conversation, chunk: Sequence[Task], counter: Any, tools: tuple, pricing: Any,
              origin: int, extra: Any = None, prepare: Any = None) -> tuple[list[dict[str, Any]], str, float, Any]:  # fmt: skip
    counter = _per(counter, conversation)
    if os.getpid() != origin and prepare is None:
        # counters pickle without their caches: reuse this worker's warm copy of an equal one
        try:
            counter = _WARM.setdefault(counter, counter)
        except TypeError:  # an unhashable counter of the user's: use it as sent
            pass
    return _replay_chunk(conversation, chunk, counter, tools, pricing, extra, prepare, memo=os.getpid() == origin)


def _run_forked(c: int) -> tuple[list[dict[str, Any]], str, float, Any]:
    assert _JOBS is not None
    conversations, strategies, tasks, chunks, counter, tools, pricing, extra, prepare = _JOBS
    chunk = [tasks[k] for k in chunks[c]]
    return _replay_chunk(conversations[chunk[0][0]], [(name, strategies[name], p) for _, name, p in chunk], counter,
                         tools, pricing, extra, prepare)  # fmt: skip


def _usable_cores() -> int:
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def sweep(
    conversations: Conversation | Iterable[Conversation],
    strategies: Mapping[str, Callable[..., Any]],
    grid: Mapping[str, Sequence[Any]] | Sequence[Mapping[str, Any]] | None = None,
    *,
    counter: Any = None,
    executor: Any = None,
    workers: int | None = None,
    tools: Sequence[Mapping[str, Any]] = (),
    pricing: Any = None,
    progress: bool = True,
    extra: Callable[[Any, dict[str, Any]], Mapping[str, Any]] | None = None,
    prepare: Callable[[Conversation], Any] | None = None,
) -> Any:
    """Replay every conversation under every strategy at every grid point; return one row
    per replay: ``conversation, strategy``, the grid parameters, then the totals.

    ``workers`` sizes the default process pool (default: the usable cores; 1 replays in
    this process); it cannot be combined with ``executor``, which is a
    ``concurrent.futures.Executor`` or a ``distributed.Client`` (see the module
    documentation for running on a dask cluster).

    ``counter`` and ``pricing`` may be a `PerConversation` mapping of conversation id to a
    counter or a pricing (a counter calibrated on each session, each priced by its models); a
    factory that names ``conversation`` or ``counter`` in its signature is given the
    conversation being replayed and its counter (a preset built per session). ``extra``, a
    function of the `Replay` and its grid point, adds its columns to each row, computed where
    the replay ran; with it, a strategy that refuses the session (`StrategyError`: a budget
    that cannot hold what it must keep) gives a row whose ``refused`` says why instead of
    stopping the sweep.

    ``grid`` may be a `PerStrategy` mapping of strategy name to its own grid. ``prepare``,
    instead of ``counter`` and ``pricing``, is a function of a conversation returning what
    has its ``counter`` and ``pricing`` (a `harpe_lab.measure.Measure`, say): it runs where
    the conversation's replays run, once per process, so its work (calibrating a counter on
    the session) is spread over the workers too and the counter it makes is warm where it is
    used; what it made of each conversation is in ``frame.attrs["prepared"]`` (by id). With
    an executor it must pickle (a module-level class or function)."""
    import pandas as pd
    from tqdm.auto import tqdm

    convs = [conversations] if isinstance(conversations, Conversation) else list(conversations)
    executor = _checked(convs, strategies, workers, executor, counter, prepare)
    points = _points(grid, strategies)
    tasks = [(ci, name, p) for ci in range(len(convs)) for name in strategies for p in points[name]]
    sizes = [sum(map(message_chars, c.messages())) for c in convs]  # a replay's cost grows with its text
    tools = tuple(tools)
    n = 1 if executor is None and workers == 1 else workers or _usable_cores()
    chunks = _chunks(sizes, tasks, n)
    bar = tqdm(total=len(tasks), desc="sweep", unit="replay", disable=not progress)
    rows: list[dict[str, Any] | None] = [None] * len(tasks)
    cpu: dict[str, float] = {}
    prepared: dict[str, Any] = {}

    def collect(c: int, done: tuple[list[dict[str, Any]], str, float, Any]) -> None:
        chunk_rows, process, seconds, made = done
        for k, row in zip(chunks[c], chunk_rows):
            rows[k] = row
        cpu[process] = cpu.get(process, 0.0) + seconds
        if made is not None:
            prepared.setdefault(convs[tasks[chunks[c][0]][0]].id, made)
        bar.update(len(chunk_rows))

    try:
        _run_all(executor, min(n, len(chunks)), convs, strategies, tasks, chunks,
                 (counter, tools, pricing, extra, prepare), collect)
    finally:
        bar.close()
    frame = pd.DataFrame(rows)
    frame.attrs["cpu_seconds"] = cpu
    if prepare is not None:
        frame.attrs["prepared"] = {c.id: prepared[c.id] for c in convs if c.id in prepared}
    return frame


def _points(grid: Any, strategies: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each strategy's grid points: its own for a `PerStrategy` grid, else the grid's."""
    if not isinstance(grid, PerStrategy):
        common = grid_points(grid)
        return {name: common for name in strategies}
    unknown = sorted(set(grid) - set(strategies))
    if unknown:
        raise StrategyError(f"grid names strategies the sweep does not have: {unknown}; it has {list(strategies)}")
    return {name: grid_points(grid.get(name)) for name in strategies}


def _checked(convs: list[Conversation], strategies: Mapping[str, Callable[..., Any]], workers: int | None,
             executor: Any, counter: Any, prepare: Any) -> Any:  # fmt: skip
    """`sweep`'s arguments checked before anything runs; returns the executor to submit to
    (a dask client's, made impure)."""
    if not convs:
        raise StrategyError("sweep needs at least one conversation")
    if (counter is None) == (prepare is None):
        raise StrategyError("sweep needs a counter= or a prepare= (a function of a conversation giving its counter "
                            "and pricing), and takes one of them")
    if not strategies:
        raise StrategyError("sweep needs at least one strategy: a mapping of name -> context factory")
    for name, factory in strategies.items():
        if not callable(factory):
            raise StrategyError(f"strategies[{name!r}] must be a callable returning a context, got {factory!r}")
    if workers is not None and (not isinstance(workers, int) or workers < 1):
        raise StrategyError(f"workers must be an int >= 1, got {workers!r}")
    if workers is not None and executor is not None:
        raise StrategyError("pass workers= or executor=, not both: an executor sizes its own pool")
    if executor is not None and not isinstance(executor, Executor):
        if not callable(getattr(executor, "get_executor", None)):
            raise StrategyError(f"executor must be a concurrent.futures.Executor or a distributed.Client, "
                                f"but {executor!r} was passed")  # fmt: skip
        # impure: dask would otherwise hash every argument (a whole conversation) to name the task
        executor = executor.get_executor(pure=False)
    return executor


def _run_all(executor: Any, n: int, convs: list[Conversation], strategies: Mapping[str, Callable[..., Any]],
             tasks: list[tuple[int, str, Any]], chunks: list[list[int]], shared: tuple[Any, Any, Any, Any, Any],
             collect: Callable[[int, Any], None]) -> None:  # fmt: skip
    """Every chunk run, and collected: on ``n`` forked processes, in this one, or on ``executor``."""
    global _JOBS
    counter, tools, pricing, extra, prepare = shared
    _PREPARED.clear()
    try:
        if executor is None and n > 1 and "fork" in multiprocessing.get_all_start_methods():
            _JOBS = (convs, dict(strategies), tasks, chunks, counter, tools, pricing, extra, prepare)
            with ProcessPoolExecutor(n, mp_context=multiprocessing.get_context("fork")) as pool:
                futures = {pool.submit(_run_forked, c): c for c in range(len(chunks))}
                for future in _as_completed(futures):
                    collect(futures[future], future.result())
        elif executor is None:
            for c, chunk in enumerate(chunks):
                sent = [(tasks[k][1], strategies[tasks[k][1]], tasks[k][2]) for k in chunk]
                collect(c, _replay_chunk(convs[tasks[chunk[0]][0]], sent, counter, tools, pricing, extra, prepare))
        else:
            _run_on(executor, convs, strategies, tasks, chunks, shared, collect)
    finally:
        _JOBS = None
        _PREPARED.clear()


def _run_on(executor: Any, convs: list[Conversation], strategies: Mapping[str, Callable[..., Any]],
            tasks: list[tuple[int, str, Any]], chunks: list[list[int]], shared: tuple[Any, Any, Any, Any, Any],
            collect: Callable[[int, Any], None]) -> None:  # fmt: skip
    """Each chunk submitted to a given executor (the strategies pickled with it), collected
    as it completes; a strategy that cannot be pickled is named, with how to fix it."""
    counter, tools, pricing, extra, prepare = shared
    origin = os.getpid()
    futures = {}
    for c, chunk in enumerate(chunks):
        sent = [(tasks[k][1], strategies[tasks[k][1]], tasks[k][2]) for k in chunk]
        futures[executor.submit(_run_sent, convs[tasks[chunk[0]][0]], sent, counter, tools, pricing,
                                origin, extra, prepare)] = c  # fmt: skip
    for future in _as_completed(futures):
        c = futures[future]
        try:
            done = future.result()
        except (pickle.PicklingError, AttributeError) as exc:
            if "pickle" not in str(exc).lower():
                raise
            names = sorted({tasks[k][1] for k in chunks[c]})
            raise StrategyError(
                f"strategy {' or '.join(map(repr, names))} could not be sent to the executor ({exc}); with "
                "a plain process pool use module-level functions or functools.partial, or pass executor=None"
            ) from exc
        collect(c, done)


def _as_completed(futures: Mapping[Any, int]) -> Iterable[Any]:
    from concurrent.futures import as_completed

    try:
        return as_completed(futures)
    except TypeError:  # futures of an executor concurrent.futures does not know
        return list(futures)
