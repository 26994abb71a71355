"""Native against peer: each strategy we reimplement, timed beside the project's own code.

harpe_lab reimplements other projects' context strategies natively (`harpe_lab.strategies`)
and keeps an adapter that runs each project's own code through the same lifecycle
(`harpe_lab.peers`) for the differential tests. This benchmark replays the same
conversations under both sides of every pair in `PAIRS` and reports the ratio of median wall
times — how much faster the native twin is (no goal: the peers carry conversion costs a
real user of that project would not pay, so the ratio is what a *replay* gains, not a claim
about the project).

Every timed run is checked, untimed, against its twin: both must send the same request, message
for message, at every model call — the very property the differential tests assert — so the
benchmark cannot time something different from what those tests prove equal.

A pair is one entry of `PAIRS`: a label, the import its peer needs (the pair is skipped,
and said so, when it is missing), and two functions from a counter to a fresh context::

    Pair("AutoGen BufferedChatCompletionContext(buffer_size=20)", "autogen_core",
         lambda counter: native("autogen").Buffered(buffer_size=20).context(SYSTEM),
         lambda counter: peer("autogen").buffered(SYSTEM, buffer_size=20)),

Both sides of a pair share one counter, warmed on the conversations first (untimed), so the
time is the strategy's and the engine's, not the tokenizer's.

    .venv/bin/python -m benchmarks.peers [--reps 5] [--turns 200] [--quick]
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import Row, format_table, interleaved, log, request_count  # noqa: E402

__all__ = ["Pair", "PAIRS", "peer", "conversations", "run", "main"]

SYSTEM = "You are a careful coding assistant. Use the tools to check before you answer."


def peer(name: str) -> Any:
    """``harpe_lab.peers.<name>``, imported when a pair is built (it needs its extra)."""
    return importlib.import_module(f"harpe_lab.peers.{name}")


def native(module: str) -> Any:
    """``harpe_lab.strategies.<module>``."""
    return importlib.import_module(f"harpe_lab.strategies.{module}")


@dataclass(frozen=True)
class Pair:
    """A native strategy and the peer adapter running the same strategy in its project's code."""

    label: str
    requires: str  # the peer's import name: the pair is skipped when it is not installed
    native: Callable[[Any], Any]  # counter -> a fresh context
    peer: Callable[[Any], Any]  # counter -> a fresh context

    def available(self) -> bool:
        return importlib.util.find_spec(self.requires) is not None


PAIRS: list[Pair] = [
    Pair("AutoGen BufferedChatCompletionContext(buffer_size=20)", "autogen_core",
         lambda c: native("autogen").Buffered(buffer_size=20).context(SYSTEM),
         lambda c: peer("autogen").buffered(SYSTEM, buffer_size=20)),
    Pair("AutoGen HeadAndTailChatCompletionContext(head_size=3, tail_size=20)", "autogen_core",
         lambda c: native("autogen").HeadAndTail(head_size=3, tail_size=20).context(SYSTEM),
         lambda c: peer("autogen").head_and_tail(SYSTEM, head_size=3, tail_size=20)),
    Pair("AutoGen TokenLimitedChatCompletionContext(token_limit=8000)", "autogen_core",
         lambda c: native("autogen").TokenLimited(token_limit=8000, counter=c).context(SYSTEM),
         lambda c: peer("autogen").token_limited(SYSTEM, token_limit=8000, counter=c)),
    Pair("Agents SDK ToolOutputTrimmer()", "agents",
         lambda c: native("openai.agents_sdk").ToolOutputTrimmer().context(SYSTEM),
         lambda c: peer("openai_agents").SDKTrimmer(native("openai.agents_sdk").ToolOutputTrimmer()).context(SYSTEM)),
    Pair("LangChain SummarizationMiddleware(trigger=('tokens', 8000), keep=('messages', 20))", "langchain",
         lambda c: _lc_summarization().context(SYSTEM, counter=c, distill=_brief),
         lambda c: peer("langchain").summarization(SYSTEM, _lc_summarization(), counter=c, distill=_brief)),
    Pair("LangChain ContextEditingMiddleware(ClearToolUsesEdit(trigger=8000, keep=3))", "langchain",
         lambda c: native("langchain").ClearToolUsesEdit(trigger=8000, keep=3).context(SYSTEM, counter=c),
         lambda c: peer("langchain").context_editing(SYSTEM, native("langchain").ClearToolUsesEdit(trigger=8000, keep=3),
                                                     counter=c)),
]  # fmt: skip


def _lc_summarization() -> Any:
    return native("langchain").Summarization(trigger=("tokens", 8000), keep=("messages", 20))


def _brief(request: Any) -> str:
    """A distiller that costs nothing, so the pair times the middleware, not a summarizer."""
    return f"{len(request.messages[-1].text)} characters summarized"


def conversations(turns: int) -> list[Any]:
    """The conversations every pair replays: a generated tool-using session of ``turns``
    turns with long tool results (so trimmers have work) and the bundled coding agent."""
    from harpe_lab.datasets import load, synthesize

    return [synthesize(turns, seed=21, tool_rate=0.5, result_chars=2_000).with_(id=f"synth-{turns}"),
            load("coding_agent")]  # fmt: skip


def _replay_all(convs: list[Any], make: Callable[[Any], Any], counter: Any) -> list[Any]:
    from harpe_lab.replay import replay

    return [replay(c, lambda: make(counter), counter=counter) for c in convs]


def _requests(replays: list[Any]) -> list[Any]:
    return [r.rendered(i) for r in replays for i in range(len(r))]


def run(*, reps: int = 5, turns: int = 200, pairs: list[Pair] | None = None,
        slow: tuple[float, int] | None = None) -> list[Row]:
    """Time every available pair on the same conversations; one row each (and one saying
    which pairs were skipped)."""
    from harpe_lab.tokens import TiktokenCounter

    convs = conversations(turns)
    requests = sum(request_count(c) for c in convs)
    rows: list[Row] = []
    skipped = []
    for pair in PAIRS if pairs is None else pairs:
        if not pair.available():
            skipped.append(pair)
            log(f"peers: {pair.label} skipped: {pair.requires} is not installed")
            continue
        counter = TiktokenCounter()
        for c in convs:  # warm once: both sides then find every message counted
            for m in c.messages():
                counter.count_message(m)
        reference: list[Any] = []
        changed: list[int] = []

        def check(side: str, replays: list[Any], reference: list[Any] = reference, pair: Pair = pair,
                  changed: list[int] = changed) -> None:  # fmt: skip
            got = _requests(replays)
            if not reference:
                reference.append((side, got))
                changed.append(sum(int(r.requests["compacted"].sum()) for r in replays))
            elif got != reference[0][1]:
                raise AssertionError(f"peers: {pair.label}: the {side} sent other requests than the "
                                     f"{reference[0][0]} did")  # fmt: skip

        cases = {side: (lambda make=make: (lambda: _replay_all(convs, make, counter)))
                 for side, make in (("native", pair.native), ("peer", pair.peer))}  # fmt: skip
        timings = interleaved(cases, reps, check=check, slow=slow, progress=f"peers {pair.label}",
                              clock=time.perf_counter)  # fmt: skip
        n, p = timings.median("native"), timings.median("peer")
        rows.append(Row("7 peers", f"{pair.label}: peer / native", p / n, reps=timings.reps("peer"),
                        detail=f"native {'faster' if p >= n else 'slower'} by {max(p / n, n / p):.1f}×: {p:.3f} s / "
                               f"{n:.3f} s wall per replay of "
                               f"{len(convs)} conversations ({requests} requests, {changed[0]} of them compacted); "
                               "same request at every call"))  # fmt: skip
    if skipped:
        rows.append(Row("7 peers", "pairs skipped (extra not installed)", float(len(skipped)), unit="pairs",
                        detail="; ".join(f"{p.label} needs {p.requires}" for p in skipped)))  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="a 100-turn conversation, 3 reps")
    args = parser.parse_args(argv)
    rows = run(reps=3, turns=100) if args.quick else run(reps=args.reps, turns=args.turns)
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
