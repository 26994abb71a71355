"""Shared benchmark helpers: side-by-side timing, goals, result rows, the machine, the table.

Every figure the runner reports is a *ratio of two medians measured in the same run*:
the cases of one comparison are timed interleaved (rep 1 of every case, then rep 2, ...),
so drift in machine load — other processes on a shared 2-core box — hits both sides
alike. Work a case needs before it can be timed (a fresh counter, a context factory, a
message list) is built by its *prepare* function, outside the timed region.
"""

from __future__ import annotations

import datetime as _dt
import gc
import os
import pickle
import platform
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

__all__ = [
    "Goal",
    "Row",
    "Timings",
    "interleaved",
    "median",
    "machine",
    "format_table",
    "results_markdown",
    "conversation_of_tokens",
    "conversation_with_requests",
    "conversation_tokens",
    "request_count",
    "log",
    "usable_cores",
    "load_average",
    "settle",
    "forked",
]


def log(message: str) -> None:
    """Progress to stderr (the table goes to stdout)."""
    print(message, file=sys.stderr, flush=True)


# --- goals and rows -----------------------------------------------------------------------


@dataclass(frozen=True)
class Goal:
    """A target for a measured value: ``value <= limit`` (``op="<="``) or ``>=``."""

    op: str
    limit: float
    unit: str = "×"

    def __post_init__(self) -> None:
        if self.op not in ("<=", ">="):
            raise ValueError(f"op must be one of ['<=', '>='], but {self.op!r} was passed")

    def met(self, value: float) -> bool:
        return value <= self.limit if self.op == "<=" else value >= self.limit

    def __str__(self) -> str:
        sign = "≤" if self.op == "<=" else "≥"
        return f"{sign} {self.limit:g}{self.unit if self.unit == '×' else ' ' + self.unit}"


@dataclass(frozen=True)
class Row:
    """One line of the results table.

    ``value`` is a ratio of medians (``unit="×"``) or, for the dashboard only, an
    absolute median in milliseconds; ``detail`` names what was divided by what, with the
    absolute medians, so a reader can check the arithmetic.
    """

    section: str
    what: str
    value: float
    unit: str = "×"
    goal: Goal | None = None
    detail: str = ""
    reps: int = 0

    @property
    def verdict(self) -> str:
        if self.goal is None:
            return ""
        if self.value != self.value:  # NaN: the measurement could not be made
            return "MISS"
        return "PASS" if self.goal.met(self.value) else "MISS"

    def shown(self) -> str:
        if self.value != self.value:
            return "n/a"
        if self.unit == "×":
            return f"{self.value:.2f}×" if self.value < 100 else f"{self.value:.0f}×"
        return f"{self.value:.1f} {self.unit}"


# --- timing -------------------------------------------------------------------------------


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


@dataclass
class Timings:
    """Seconds per case, one entry per repetition."""

    seconds: dict[str, list[float]] = field(default_factory=dict)

    def median(self, name: str) -> float:
        return median(self.seconds[name])

    def ratio(self, num: str, den: str) -> float:
        """median(num) / median(den)."""
        return self.median(num) / self.median(den)

    def paired(self, num: str, den: str) -> float:
        """The median of num / den over the repetitions both ran: for cases run next to
        each other, so a drift in the machine's speed cancels within each pair."""
        return median([a / b for a, b in zip(self.seconds[num], self.seconds[den])])

    def reps(self, name: str) -> int:
        return len(self.seconds[name])


def interleaved(
    cases: Mapping[str, Callable[[], Callable[[], Any]]],
    reps: int,
    *,
    check: Callable[[str, Any], None] | None = None,
    slow: tuple[float, int] | None = None,
    progress: str = "",
    clock: Callable[[], float] = time.process_time,
) -> Timings:
    """Time each case ``reps`` times, interleaved: for every rep, every case once.

    A case is a *prepare* function returning the zero-argument callable to time; prepare
    runs untimed, right before its run, so caches built there are fresh every rep.
    ``check(name, result)`` sees each run's return value (untimed). ``slow=(seconds,
    fewer)``: a case whose first run took longer than ``seconds`` is run only ``fewer``
    times in all (`Timings.reps` says how many), so one pathological case cannot take the
    whole run's time.

    ``clock`` is the CPU time of this process by default: the comparisons here are
    single-process and CPU-bound, and on a shared machine wall time mostly measures the
    neighbours. Pass ``time.perf_counter`` where wall time is the point (parallel runs,
    user-facing latency).
    """
    if reps < 1:
        raise ValueError(f"reps must be >= 1, got {reps}")
    out = Timings({name: [] for name in cases})
    limit: dict[str, int] = {}
    for rep in range(reps):
        started_round = time.perf_counter()
        for name, prepare in cases.items():
            if rep >= limit.get(name, reps):
                continue
            run = prepare()
            gc.collect()
            started = clock()
            result = run()
            elapsed = clock() - started
            out.seconds[name].append(elapsed)
            if check is not None:
                check(name, result)
            del result, run
            if rep == 0 and slow is not None and elapsed > slow[0]:
                limit[name] = max(1, min(reps, slow[1]))
        if progress:
            log(f"  {progress}: rep {rep + 1}/{reps} in {time.perf_counter() - started_round:.1f} s")
    return out


def forked(work: Callable[[], Any]) -> Any:
    """``work()`` run in a forked child, its result returned (pickled back through a pipe),
    its exception raised again here with the child's traceback.

    The child starts from this process's memory as it is now (a conversation built once is
    shared) and leaves nothing behind: a case measured after others is not measured in a
    heap they grew and fragmented, and its peak memory is its own. POSIX only.
    """
    import traceback

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        code = 0
        try:
            try:
                payload = pickle.dumps(("ok", work()))
            except BaseException as e:  # noqa: BLE001 - handed to the parent, which raises it
                where = traceback.format_exc()
                try:
                    payload = pickle.dumps(("error", (e, where)))
                except Exception:  # noqa: BLE001 - an exception that cannot be pickled goes as text
                    payload = pickle.dumps(("error", (RuntimeError(f"{type(e).__name__}: {e}"), where)))
            with os.fdopen(write, "wb") as out:
                out.write(payload)
        except BaseException:  # noqa: BLE001 - nothing left to report it to but the exit code
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as source:
        payload = source.read()
    _, status = os.waitpid(pid, 0)
    if not payload:
        raise RuntimeError(f"the forked child died without a result (wait status {status})")
    kind, value = pickle.loads(payload)
    if kind == "error":
        error, where = value
        raise error from RuntimeError(f"in the forked child:\n{where}")
    return value


# --- the machine --------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown cpu"


def usable_cores() -> int:
    """The cores this process may run on (its affinity mask, else every core)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def load_average() -> float:
    """The 1-minute load average (NaN where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (OSError, AttributeError):
        return float("nan")


def settle(limit: float, wait: float, step: float = 5.0) -> float:
    """Wait while the 1-minute load average is above ``limit``, at most ``wait`` seconds,
    and return it: a section that just kept both cores busy leaves a load above 2 behind
    it for a few seconds, which is the benchmark's own and not a busy machine."""
    deadline = time.monotonic() + wait
    load = load_average()
    while load > limit and time.monotonic() < deadline:
        time.sleep(min(step, max(0.0, deadline - time.monotonic())))
        load = load_average()
    return load


def machine() -> dict[str, str]:
    """Date, CPU model, cores, Python, platform and load average, for the results header."""
    try:
        load = "{:.2f} {:.2f} {:.2f}".format(*os.getloadavg())
    except OSError:
        load = "n/a"
    cores = os.cpu_count() or 1
    usable = usable_cores()
    return {
        "date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu_model(),
        "cores": f"{cores} ({usable} usable)",
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "platform": platform.platform(terse=True),
        "load average (1, 5, 15 min) at start": load,
    }


# --- the table ----------------------------------------------------------------------------


def format_table(rows: Sequence[Row]) -> str:
    """A Markdown table: section, measurement, value, goal, verdict, detail."""
    head = ["Section", "Measurement", "Value", "Goal", "", "Detail (medians)"]
    body = [
        [r.section, r.what, r.shown(), str(r.goal) if r.goal else "—", r.verdict,
         r.detail + (f"; {r.reps} reps" if r.reps else "")]
        for r in rows
    ]  # fmt: skip
    widths = [max(len(h), *(len(b[i]) for b in body)) if body else len(h) for i, h in enumerate(head)]

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    out = [line(head), "| " + " | ".join("-" * w for w in widths) + " |"]
    out.extend(line(b) for b in body)
    return "\n".join(out)


def results_markdown(rows: Sequence[Row], info: Mapping[str, str], notes: Sequence[str] = ()) -> str:
    """The whole RESULTS.md text."""
    passed = sum(r.verdict == "PASS" for r in rows)
    goals = sum(r.goal is not None for r in rows)
    parts = [
        "# harpe_lab benchmark results",
        "",
        "Written by `python -m benchmarks.run` (see `benchmarks/README.md`). Every value is a",
        "ratio of medians measured side by side in this run, except the dashboard's milliseconds.",
        "",
        *[f"- **{k}**: {v}" for k, v in info.items()],
        "",
        f"Goals met: {passed} of {goals}.",
        "",
        format_table(rows),
        "",
    ]
    if notes:
        parts += ["## Notes", "", *[f"- {n}" for n in notes], ""]
    return "\n".join(parts)


# --- conversations ------------------------------------------------------------------------


def conversation_tokens(conversation: Any, counter: Any) -> int:
    """Tokens of every distinct message of ``conversation``, overheads included."""
    return sum(counter.count_message(m) for m in conversation.messages())


def request_count(conversation: Any) -> int:
    """Model calls a replay of ``conversation`` makes: one per turn plus one per tool round
    (every turn of `harpe_lab.datasets.synthesize` ends with a reply)."""
    return sum(1 + sum(1 for m in t.messages if m.role == "tool_results") for t in conversation.turns)


def conversation_of_tokens(tokens: int, *, counter: Any, seed: int = 1, **options: Any) -> Any:
    """A `synthesize` d conversation of about ``tokens`` tokens (within a few percent)."""
    from harpe_lab.datasets import synthesize

    probe = 200
    sample = synthesize(probe, seed=seed, **options)
    per_turn = conversation_tokens(sample, counter) / probe
    turns = max(3, round(tokens / per_turn))
    conversation = synthesize(turns, seed=seed, **options)
    got = conversation_tokens(conversation, counter)
    if abs(got - tokens) > 0.05 * tokens:  # one correction step is always enough here
        turns = max(3, round(turns * tokens / got))
        conversation = synthesize(turns, seed=seed, **options)
    return conversation


def conversation_with_requests(requests: int, *, seed: int = 1, **options: Any) -> Any:
    """A `synthesize` d conversation whose replay makes about ``requests`` model calls.

    The turns are found by bisection; the count is only nearly monotone in the turns (each
    length draws its own random plan), so the result can be a few calls off: callers
    report `request_count` of what they got.
    """
    from harpe_lab.datasets import synthesize

    lo, hi = 3, max(4, requests)
    while lo < hi:
        mid = (lo + hi) // 2
        if request_count(synthesize(mid, seed=seed, **options)) < requests:
            lo = mid + 1
        else:
            hi = mid
    return synthesize(lo, seed=seed, **options)
