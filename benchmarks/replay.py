"""The replay floor: every preset against the time to tokenize, once, what it must price.

A replay has to price every text it sends at least once, so its floor is counting each
distinct text once with the same encoding. This benchmark replays a generated conversation
of about a million tokens (`harpe_lab.datasets.synthesize`) under every preset of
`harpe_lab.presets.PRESETS` (a preset added there joins with no change here) and divides
by that floor, both with a fresh `TiktokenCounter` each repetition, so the counter's
caches are cold on both sides:

* **floor** — ``counter.count_message(m)`` for every distinct message, then each text the
  preset itself writes or weighs (stand-ins, notices, previews, summaries, a fold's prompt,
  the JSON of a message that Aider weighs) as its reference replay asked the counter for it
  (`_timed_counter` records them). A preset that writes nothing has the conversation's
  floor. Goal: replay ≤ 1.3×. It is measured right before each replay, and a row is the
  median of those pairs' ratios; the ratio to the conversation's messages alone is shown
  beside;
* **scaling** — the same preset on N and 2N turns, run one after the other (goal: ≤ 2.2×,
  i.e. linear), the median of the pairs' ratios.

Each preset is measured in its own child, forked once the conversation is built
(`benchmarks.common.forked`), so none is timed in a heap the ones before it grew. The bare
tiktoken time (``encode_ordinary`` over the conversation's distinct texts, no counter) is
shown beside the floor for reference. Every timed replay's request frame is
checked, untimed, against a reference replay of the same preset run before the timings: a
benchmark that changed a number would fail, not report a ratio.

``--budget`` sets every preset's budget knob: 8,000 by default, where most presets fold
often, and the agents' presets whose trigger follows their window fold at many requests
(Codex's keeps 20,000 tokens of user messages, more than such a window holds, so it folds
before most requests). ``--budget defaults`` leaves each preset at its own knobs, as its
agent runs it (Codex's window 272,000, Cline's 128,000).

The presets that call a distiller are measured against the goal with a constant-time
distiller (a fixed summary and its usage, as an on-disk-cached `LLMDistiller` returns on a
re-run): the floor is about the replay machinery, and a distiller is a model stand-in
plugged into it. Their cost with the offline `ExtractiveDistiller`, what notebooks use
offline, is reported beside (goal: ≤ 3× the floor).

For every preset that misses a goal, a **remains** row says what is left once counting is
paid: the same replay with the counter's caches already full (the engine's and the
strategy's own Python); how much of that the engine alone costs (the preset's requests,
recorded once, played back to the engine with no strategy work: `_Recorder`, `_Playback`),
so the rest is the strategy's; its N-to-2N ratio, the part of it the cyclic garbage
collector takes, and the four functions with the most own time in a cProfile of it. The row
also says how long the cold replay spends tokenizing text the strategy wrote — stand-ins,
placeholders, summaries, a fold's prompt — which its floor counts once (`_own_text`).

    .venv/bin/python -m benchmarks.replay [--tokens 1000000] [--reps 5] [--quick] [--strategies full,chain]
        [--budget 8000|defaults]
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from functools import partial
from itertools import compress
from operator import is_not
from pathlib import Path
from typing import Any, Callable, Sequence

if __package__ in (None, ""):  # run as a script: make `benchmarks` importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import (  # noqa: E402
    Goal,
    Row,
    conversation_of_tokens,
    conversation_tokens,
    format_table,
    forked,
    interleaved,
    log,
    median,
    request_count,
)

__all__ = ["run", "preset_names", "label", "own_knobs_differ", "BUDGET", "main"]

LABELS = {
    "full": "FullContext",
    "windowed": "WindowedContext",
    "turn": "TurnContext",
    "summarizing": "SummarizingContext",
    "sliding": "orion SlidingWindow",
    "summarize-window": "orion SummarizeWindow",
    "chain": "laser Chain(LastN(100), TokenBudget)",
}
"""Names the results have always used; any other preset is shown as ``family name``."""
FIXED_SUMMARY = "The user and the agent worked through the task; decisions and facts so far: " + "x" * 900


def preset_names() -> tuple[str, ...]:
    """Every preset in `harpe_lab.presets.PRESETS`, in its order."""
    from harpe_lab.presets import PRESETS

    return tuple(PRESETS)


def _distills(name: str) -> bool:
    from harpe_lab.presets import PRESETS

    return "distill" in PRESETS[name].needs


def label(name: str) -> str:
    """The preset's name in the table (``(cached distiller)`` when it calls one)."""
    from harpe_lab.presets import PRESETS

    family = PRESETS[name].family
    text = LABELS.get(name) or (name if name.startswith(family) else f"{family} {name}")
    return text + (" (cached distiller)" if _distills(name) else "")


class _CachedDistiller:
    """What an `LLMDistiller` does on a re-run from its disk cache: a stored summary and the
    stored usage (so the engine need not count the request itself)."""

    def __init__(self) -> None:
        from harpe_lab.messages import Usage

        self.last_usage = Usage(input_tokens=4_000, output_tokens=250)

    def __call__(self, rendered: Any) -> str:
        return FIXED_SUMMARY


BUDGET = 8_000
"""Every preset's budget knob unless told otherwise."""


def own_knobs_differ(budget: int = BUDGET) -> tuple[str, ...]:
    """The presets whose own knobs are not ``budget``: a budget knob with another default
    (the agents' presets, whose trigger follows their window, have none)."""
    from harpe_lab.presets import PRESETS

    return tuple(name for name, p in PRESETS.items() if p.budget_knob is not None and p.budget_knob.default != budget)


FLOOR_GOAL = Goal("<=", 1.3)
SCALING_GOAL = Goal("<=", 2.2)
EXTRACTIVE_GOAL = Goal("<=", 3.0)


def _texts(conversation: Any) -> list[str]:
    """The distinct texts a counter encodes for the conversation's messages."""
    from harpe_lab.messages import AssistantMessage, ToolResults, UserInput

    seen: dict[str, None] = {}
    for m in conversation.messages():
        if isinstance(m, UserInput):
            seen[m.text] = None
        elif isinstance(m, AssistantMessage):
            seen[m.text] = None
            for call in m.calls:
                seen[call.name] = None
                seen[json.dumps(call.input, ensure_ascii=False)] = None
        elif isinstance(m, ToolResults):
            for r in m.results:
                seen[r.content] = None
    return list(seen)


def run(
    *,
    tokens: int = 1_000_000,
    reps: int = 5,
    budget: int | None = BUDGET,
    strategies: Sequence[str] | None = None,
    slow_seconds: float = 10.0,
    slow_reps: int = 3,
) -> list[Row]:
    """Measure every preset (or ``strategies``, preset names) against the floor and N
    against 2N turns; return table rows. ``budget`` None: each preset at its own knobs.

    A preset whose first replay of the large conversation takes longer than
    ``slow_seconds`` is repeated ``slow_reps`` times instead of ``reps`` (its row says so),
    so one quadratic strategy cannot take the whole run's time. Raises `AssertionError`
    when a timed replay's frame differs from its preset's reference replay.
    """
    from harpe_lab.datasets import synthesize
    from harpe_lab.tokens import TiktokenCounter

    names = preset_names()
    strategies = names if strategies is None else tuple(strategies)
    unknown = [s for s in strategies if s not in names]
    if unknown:
        raise ValueError(f"strategies must be among {list(names)}, but {unknown!r} was passed")
    warm = TiktokenCounter()
    encoding = warm.encoding  # loading the BPE file is paid once, outside every timing
    big = conversation_of_tokens(tokens, counter=warm, seed=1)
    small = synthesize(len(big.turns) // 2, seed=1)
    big_tokens, small_tokens = conversation_tokens(big, warm), conversation_tokens(small, warm)
    messages = big.messages()
    texts = _texts(big)
    at = "each preset's own knobs" if budget is None else f"budget {budget:,}"
    log(f"replay floor: {len(big.turns)} turns, {len(messages)} messages, {big_tokens:,} tokens, "
        f"{request_count(big)} requests; N = {len(small.turns)} turns ({small_tokens:,} tokens); {at}")

    # Each preset is measured in a child forked from here, so the conversation is built once
    # and no preset is timed in a heap the ones before it grew: in one process the runner
    # reached 7 GB and the floor runs took 0.26–0.46 s against 0.22–0.25 s in a fresh one.
    rows: list[Row] = []
    for name in strategies:
        log(f"  {name}")
        rows += forked(partial(_rows, big, small, (big_tokens, small_tokens), texts, encoding, budget, name, reps,
                                slow_seconds, slow_reps))
    kinds = ("floor", "extractive", "scaling", "remains")

    def kind(row: Row) -> int:
        if row.section == "1 floor":
            return kinds.index("extractive" if "(ExtractiveDistiller)" in row.what else "floor")
        return kinds.index(row.section.split()[-1])

    return sorted(rows, key=kind)  # stable: the presets stay in their order within each kind


def _rows(big: Any, small: Any, tokens: tuple[int, int], texts: Sequence[str], encoding: Any, budget: int | None,
          name: str, reps: int, slow_seconds: float, slow_reps: int) -> list[Row]:
    """One preset's rows: its floor, extractive and scaling rows, and its remains where it
    misses a goal."""
    from harpe_lab.messages import Rendered
    from harpe_lab.presets import make_strategy
    from harpe_lab.replay import replay
    from harpe_lab.tokens import TiktokenCounter

    big_tokens, small_tokens = tokens
    messages = big.messages()

    # the time each floor run spent on the conversation's messages, before the preset's own texts
    conversation_part: dict[str, list[float]] = {}

    def floor(case: str, own: Sequence[tuple[bool, str]]) -> Callable[[], Any]:
        """The floor's preparation: the conversation's messages, then ``own`` (``(by lines,
        text)``, as a reference replay counted them), each counted once."""
        parts = conversation_part.setdefault(case, [])

        def prepare() -> Any:
            counter = TiktokenCounter()
            system = Rendered(big.system)
            count, count_lines = counter.count, counter.count_lines

            def go() -> int:
                started = time.process_time()  # the clock `interleaved` times with
                n = counter.count_rendered(system) + sum(map(counter.count_message, messages))
                parts.append(time.process_time() - started)
                for by_lines, text in own:
                    n += count_lines(text) if by_lines else count(text)
                return n

            return go

        return prepare

    def bare() -> Any:
        encode = encoding.encode_ordinary
        return lambda: sum(len(encode(t)) for t in texts)

    def replaying(conversation: Any, extractive: bool = False, given: Any = None) -> Any:
        def prepare() -> Any:
            counter = TiktokenCounter() if given is None else given
            # None: the preset's own offline distiller (ExtractiveDistiller)
            distill = _CachedDistiller() if _distills(name) and not extractive else None
            factory = make_strategy(name, budget=budget, counter=counter, system=conversation.system,
                                    distill=distill)
            return lambda: replay(conversation, factory, counter=counter, name=name)

        return prepare

    # The reference frames: each case replayed once, untimed, before any timing, with a
    # counter that has counted the conversation and records every other text it is asked for.
    reference: dict[str, Any] = {}
    own: dict[str, list[tuple[bool, str]]] = {}

    def referred(case: str, conversation: Any, extractive: bool = False) -> Any:
        counter = _timed_counter()
        counter.count_rendered(Rendered(conversation.system))
        counter.count_messages(conversation.messages())
        counter.recording = True
        reference[case] = replaying(conversation, extractive, counter)()().requests
        own[case] = counter.recorded
        return replaying(conversation, extractive)

    # Each timed replay of the large conversation runs right after a floor run of its own,
    # and its row is the median of those pairs' ratios: one floor median shared by every row
    # let a lucky or unlucky stretch of the machine move them all together.
    distills = _distills(name)
    cases: dict[str, Any] = {"tiktoken": bare}
    for case, conversation, extractive in (("2N", big, False), ("N", small, False),
                                           *((("extractive/2N", big, True),) if distills else ())):
        replaying_it = referred(case, conversation, extractive)
        if conversation is big:
            cases[f"floor|{case}"] = floor(case, own[case])
        cases[case] = replaying_it

    def check(case: str, result: Any) -> None:
        if case in reference and not result.requests.equals(reference[case]):
            raise AssertionError(f"{name} {case}: a timed replay's request frame differs from the reference replay's")

    timings = interleaved(cases, reps, check=check, slow=(slow_seconds, slow_reps), progress=f"replay floor, {name}")
    bare_s = timings.median("tiktoken")

    def beside(case: str) -> str:
        texts = own[case]
        alone = conversation_part[case]
        written = (f"its own {len(texts):,} texts ({sum(len(t) for _, t in texts) / 1000:,.0f}k characters) "
                   f"after the conversation's messages" if texts else "the conversation's messages alone")
        return (f"median of the ratios to a floor run right before each replay; medians {timings.median(case):.3f} s "
                f"/ {timings.median(f'floor|{case}'):.3f} s, the floor counting {written}; to the messages' part of "
                f"each floor run, {median([r / c for r, c in zip(timings.seconds[case], alone)]):.2f}× "
                f"({median(alone):.3f} s; bare tiktoken {bare_s:.3f} s)")

    knobs = ", its own knobs" if budget is None else ""
    what = label(name) + knobs
    what_extractive = f"{label(name).split(' (')[0]} (ExtractiveDistiller){knobs}"
    floor_row = Row(
        "1 floor", f"{what} / tokenize once (~{big_tokens / 1e6:.1f}M tokens)",
        timings.paired("2N", "floor|2N"), goal=FLOOR_GOAL, reps=timings.reps("2N"),
        detail=f"{beside('2N')}; frames checked",
    )  # fmt: skip
    t2, t1 = timings.median("2N"), timings.median("N")
    scaling_row = Row(
        "1 scaling", f"{what}: 2N / N turns ({len(big.turns)} / {len(small.turns)})",
        timings.paired("2N", "N"), goal=SCALING_GOAL, reps=min(timings.reps("2N"), timings.reps("N")),
        detail=f"median of the ratios of each 2N run to the N run after it; {t2:.3f} s / {t1:.3f} s; "
               f"tokens ×{big_tokens / small_tokens:.2f}",
    )  # fmt: skip
    rows = [floor_row]
    if distills:
        extractive_row = Row(
            "1 floor", f"{what_extractive} / tokenize once",
            timings.paired("extractive/2N", "floor|extractive/2N"), goal=EXTRACTIVE_GOAL,
            reps=timings.reps("extractive/2N"), detail=f"{beside('extractive/2N')}; the offline distiller notebooks use",
        )  # fmt: skip
        rows.append(extractive_row)
    rows.append(scaling_row)
    if "MISS" in (floor_row.verdict, scaling_row.verdict):
        rows.append(_remains(big, small, name, budget, what, t2, timings.median("floor|2N"), reps))
    if distills and extractive_row.verdict == "MISS":
        rows.append(_remains(big, small, name, budget, what_extractive, timings.median("extractive/2N"),
                             timings.median("floor|extractive/2N"), reps, extractive=True))
    return rows


class _Recorder:
    """A strategy seen by the engine as itself, recording what it hands out for `_Playback`:
    every compaction, the summary after it, and the events of each lifecycle call. A
    deferred request is recorded as what changed from the one before (the messages
    appended; for a new list, the stand-ins where it differs from the last one), so the
    record holds O(what moved) per request, not the strategy's lists: a record that held
    them would make every garbage collection during the timed playback walk them all."""

    def __init__(self, ctx: Any) -> None:
        from harpe_lab.protocol import DeclaresLimit, HoldsSummary, ReportsEvents

        self.ctx, self.calls, self.sink = ctx, 0, None
        self.limit = ctx.limit if isinstance(ctx, DeclaresLimit) else None
        self.base_system = ctx.base_system if isinstance(ctx, HoldsSummary) else None
        self.compactions: list[tuple[Any, ...]] = []
        self.events: dict[int, list[object]] = {}  # lifecycle call -> the events during it
        self._list: list[Any] | None = None  # the last deferred request's list, and its length then
        self._length = 0
        if isinstance(ctx, ReportsEvents):
            ctx.subscribe(self._event)

    def _event(self, event: object) -> None:
        self.events.setdefault(self.calls, []).append(event)
        if self.sink is not None:
            self.sink(event)

    def subscribe(self, sink: Callable[[object], None]) -> None:
        self.sink = sink

    def _call(self, method: str, *args: Any) -> Any:
        self.calls += 1
        return getattr(self.ctx, method)(*args)

    def begin_turn(self, message: Any) -> None:
        self._call("begin_turn", message)

    def append(self, message: Any) -> None:
        self._call("append", message)

    def observe(self, usage: Any) -> None:
        self._call("observe", usage)

    def commit_turn(self) -> None:
        self._call("commit_turn")

    def abort_turn(self) -> None:
        self._call("abort_turn")

    def compact(self) -> Any:
        c = self._call("compact")
        summary = getattr(self.ctx, "summary", "")
        source = vars(c.rendered).get("_source")  # a deferred request
        if source is None:
            self.compactions.append((c, summary))
            return c
        items, length = source
        if items is self._list:  # the same list, grown
            keep, places = -1, ()
            start = self._length
        else:  # a new list: the last one's first `keep` messages with stand-ins, then more
            old = self._list or []
            keep = start = min(self._length, length)
            places = tuple((p, items[p]) for p in compress(range(keep), map(is_not, items[:keep], old[:keep])))
        self._list, self._length = items, length
        self.compactions.append((c.rendered.system, c.compacted, c.edits, keep, places, items[start:length], summary))
        return c


class _Playback:
    """What a `_Recorder` saw, handed back to the engine at the same calls with no strategy
    work: a replay under it costs what the engine spends on that preset's requests. A
    deferred request is deferred again, over a list that changes as the strategy's did."""

    def __init__(self, recorder: _Recorder) -> None:
        from harpe_lab.messages import deferred
        from harpe_lab.protocol import Compaction

        self._deferred, self._compaction = deferred, Compaction
        self._compactions, self._events = recorder.compactions, recorder.events
        self.limit = recorder.limit
        self._k = self._calls = 0
        self._sink: Callable[[object], None] | None = None
        self._list: list[Any] = []
        self._summary = ""

    def subscribe(self, sink: Callable[[object], None]) -> None:
        self._sink = sink

    def _call(self) -> None:
        self._calls += 1
        for event in self._events.get(self._calls, ()):
            self._sink(event)  # type: ignore[misc]

    def begin_turn(self, message: Any) -> None:
        self._call()

    def append(self, message: Any) -> None:
        self._call()

    def observe(self, usage: Any) -> None:
        self._call()

    def commit_turn(self) -> None:
        self._call()

    def abort_turn(self) -> None:
        self._call()

    def compact(self) -> Any:
        self._call()
        record = self._compactions[self._k]
        self._k += 1
        if len(record) == 2:
            c, self._summary = record
            return c
        system, compacted, edits, keep, places, appended, self._summary = record
        if keep >= 0:
            self._list = self._list[:keep]
            for p, m in places:
                self._list[p] = m
        self._list += appended
        return self._compaction(self._deferred(system, self._list), compacted, edits)


class _PlaybackWithSummary(_Playback):
    def __init__(self, recorder: _Recorder) -> None:
        super().__init__(recorder)
        self.base_system = recorder.base_system

    @property
    def summary(self) -> str:
        return self._summary


class _RecorderWithSummary(_Recorder):
    @property
    def summary(self) -> str:
        return self.ctx.summary


def _recorder(ctx: Any) -> _Recorder:
    """A `_Recorder` of ``ctx`` that the engine sees as holding a summary exactly when
    ``ctx`` does (the frame's summary columns depend on it)."""
    from harpe_lab.protocol import HoldsSummary

    return (_RecorderWithSummary if isinstance(ctx, HoldsSummary) else _Recorder)(ctx)


def _playback(recorder: _Recorder) -> _Playback:
    return (_Playback if recorder.base_system is None else _PlaybackWithSummary)(recorder)


def _collector_seconds(run: Callable[[], Any]) -> float:
    """Wall time CPython's cyclic garbage collector spends during ``run()``: the requests a
    replay keeps are tuples of messages, which each collection of their generation walks."""
    started: list[float] = []
    spent = [0.0]

    def timer(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            spent[0] += time.perf_counter() - started.pop()

    gc.collect()
    gc.callbacks.append(timer)
    try:
        run()
    finally:
        gc.callbacks.remove(timer)
    return spent[0]


def _timed_counter() -> Any:
    """A fresh `TiktokenCounter` whose counting of texts is timed: every text its memo had
    not seen (`_encode_len` is what the memo calls on a miss), and every text counted line
    by line (`count_lines`). Once ``recording`` is set, ``recorded`` holds each distinct one
    counted since, in order, as ``(by lines, text)``."""
    from harpe_lab.tokens import TiktokenCounter

    class TimedCounter(TiktokenCounter):
        def __init__(self) -> None:
            super().__init__()
            self.seconds, self.texts, self.chars = 0.0, 0, 0
            self.recording = False
            self._seen: dict[tuple[bool, str], None] = {}

        @property
        def recorded(self) -> list[tuple[bool, str]]:
            return list(self._seen)

        def _timed(self, count: Callable[[str], int], text: str) -> int:
            if self.recording:
                self._seen[count.__name__ == "count_lines", text] = None
            started = time.perf_counter()
            try:
                return count(text)
            finally:
                self.seconds += time.perf_counter() - started
                self.texts += 1
                self.chars += len(text)

        def _encode_len(self, text: str) -> int:
            return self._timed(super()._encode_len, text)

        def count_lines(self, text: str) -> int:
            return self._timed(super().count_lines, text)

    return TimedCounter()


def _own_text(conversation: Any, go: Callable[[Any, Any], Any], reps: int) -> tuple[float, int, int]:
    """The time a replay spends tokenizing text beyond the conversation's messages — stand-ins,
    placeholders, summaries, a fold's prompt: a fresh counter first counts what the floor
    counts (the system prompt and every message), then the replay runs with it and its
    encodes are timed. Median seconds, and how many texts and characters."""
    from harpe_lab.messages import Rendered

    runs = []
    for _ in range(reps):
        counter = _timed_counter()
        counter.count_rendered(Rendered(conversation.system))
        counter.count_messages(conversation.messages())
        counter.seconds, counter.texts, counter.chars = 0.0, 0, 0
        go(conversation, counter)
        runs.append((counter.seconds, counter.texts, counter.chars))
    return sorted(runs)[len(runs) // 2]


def _remains(big: Any, small: Any, name: str, budget: int | None, what: str, cold: float, floor_s: float, reps: int,
             *, extractive: bool = False) -> Row:
    """What a preset's replay spends beyond counting: the same replay with the counter's
    caches already full (so what is timed is the engine's and the strategy's own Python),
    its N-to-2N ratio, and the functions that take most of it (cProfile, own time)."""
    import cProfile
    import pstats

    from harpe_lab.presets import make_strategy
    from harpe_lab.replay import replay
    from harpe_lab.tokens import TiktokenCounter

    counter = TiktokenCounter()

    def go(conversation: Any, counter: Any = counter) -> Any:
        distill = _CachedDistiller() if _distills(name) and not extractive else None
        factory = make_strategy(name, budget=budget, counter=counter, system=conversation.system, distill=distill)
        return replay(conversation, factory, counter=counter, name=name)

    reference = go(big).requests
    go(small)
    distill = _CachedDistiller() if _distills(name) and not extractive else None
    recorder = _recorder(make_strategy(name, budget=budget, counter=counter, system=big.system, distill=distill)())
    replay(big, lambda: recorder, counter=counter, name=name)

    def engine() -> Callable[[], Any]:
        playback = _playback(recorder)
        return lambda: replay(big, lambda: playback, counter=counter, name=name)

    def check(case: str, result: Any) -> None:
        if case != "N" and not result.requests.equals(reference):
            raise AssertionError(f"{name} {case}: a warm replay's request frame differs from the reference replay's")

    timings = interleaved({"2N": lambda: lambda: go(big), "N": lambda: lambda: go(small), "engine": engine}, reps,
                          check=check)
    warm2, warm1, engine_s = timings.median("2N"), timings.median("N"), timings.median("engine")
    collected = _collector_seconds(lambda: go(big))
    text_s, texts, chars = _own_text(big, go, min(reps, 3))
    profiler = cProfile.Profile()
    profiler.enable()
    go(big)
    profiler.disable()
    own: dict[str, float] = {}
    for (path, _line, func), (_cc, _nc, tottime, _ct, _callers) in pstats.Stats(profiler).stats.items():  # type: ignore[attr-defined]
        where = f"{Path(path).stem}.{func}" if path != "~" else func.strip("<>")
        own[where] = own.get(where, 0.0) + tottime
    total = sum(own.values()) or 1.0
    top = sorted(own.items(), key=lambda kv: -kv[1])[:4]
    requests = request_count(big)
    return Row(
        "1 remains", f"{what}: the replay with the counter's caches full", 1000 * warm2, unit="ms",
        reps=timings.reps("2N"),
        detail=(f"{1e6 * warm2 / requests:.0f} µs a request ({requests} requests), {warm2 / cold:.0%} of the cold "
                f"replay's {cold:.3f} s (floor {floor_s:.3f} s); tokenizing the text it wrote, which its floor "
                f"counts once too, {1000 * text_s:.0f} ms ({texts:,} texts, {chars / 1000:,.0f}k characters; "
                f"{text_s / floor_s:.2f} of the ratio), in the cold replay, not in this one; the engine alone "
                f"{1000 * engine_s:.0f} ms (the same requests played back to it, no strategy work), so the "
                f"strategy's own work about {1000 * max(0.0, warm2 - engine_s):.0f} ms; warm 2N / N {warm2 / warm1:.2f}; the cyclic "
                f"garbage collector {1000 * collected:.0f} ms of it; own time: "
                + ", ".join(f"{w} {t / total:.0%}" for w, t in top)),
    )  # fmt: skip


def _budget(text: str) -> int | None:
    if text == "defaults":
        return None
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of tokens or 'defaults', not {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=1_000_000, help="size of the 2N conversation")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--budget", type=_budget, default=BUDGET,
                        help="every preset's budget knob, or 'defaults' for each preset's own (default 8000)")
    parser.add_argument("--strategies", default=None, help="comma-separated preset names (default: every preset)")
    parser.add_argument("--quick", action="store_true", help="200k tokens, 3 reps")
    args = parser.parse_args(argv)
    tokens, reps = (200_000, 3) if args.quick else (args.tokens, args.reps)
    names = None if args.strategies is None else [n.strip() for n in args.strategies.split(",") if n.strip()]
    rows = run(tokens=tokens, reps=reps, budget=args.budget, strategies=names)
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
