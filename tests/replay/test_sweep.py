"""Sweeps over strategies and budgets, inline, on a process pool and on dask; calibration."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import pytest

from harpe_lab import ApproxCounter, AssistantMessage, FullContext, StrategyError, SummarizingContext, Usage, UserInput
from harpe_lab import WindowedContext
from harpe_lab.calibrate import CalibrationWarning, calibrate
from harpe_lab.conversation import Conversation, RecordedCompaction, Turn
from harpe_lab.replay import replay
from harpe_lab.sweep import PerConversation, PerStrategy, grid_points, sweep

COUNTER = ApproxCounter()


def make_conversation(n: int, cid: str = "c") -> Conversation:
    return Conversation(
        tuple(Turn(UserInput(f"question {k} " + "q" * (k % 7) * 10), (AssistantMessage("answer " + "a" * 120),))
              for k in range(n)),
        id=cid,
    )


def windowed(max_chars: int) -> WindowedContext:
    return WindowedContext("sys", max_chars=max_chars)


def summarizing(high_water: int, low_water: int) -> SummarizingContext:
    return SummarizingContext("sys", high_water_tokens=high_water, low_water_chars=low_water, distill=_distill)


def _distill(rendered):
    return "summary"


STRATEGIES = {"windowed": windowed, "summarizing": summarizing, "full": functools.partial(FullContext, "sys")}
GRID = {"max_chars": [200, 800], "high_water": [150, 400], "low_water": [300]}


class TestGrid:
    def test_product_and_explicit_points(self):
        assert grid_points({"a": [1, 2], "b": [3]}) == [{"a": 1, "b": 3}, {"a": 2, "b": 3}]
        assert grid_points([{"a": 1}, {"a": 5}]) == [{"a": 1}, {"a": 5}]
        assert grid_points(None) == [{}]

    def test_bad_grid(self):
        with pytest.raises(StrategyError, match=r"grid\['a'\] must be a sequence"):
            grid_points({"a": 3})


class TestSweep:
    def test_rows_match_single_replays(self):
        convs = [make_conversation(12, "a"), make_conversation(20, "b")]
        frame = sweep(convs, STRATEGIES, GRID, counter=COUNTER, executor=None, progress=False)
        assert len(frame) == 2 * 3 * 4
        row = frame[(frame.conversation == "b") & (frame.strategy == "windowed") & (frame.max_chars == 200)].iloc[0]
        single = replay(convs[1], lambda: windowed(200), counter=COUNTER).totals()
        assert row["input_tokens_sum"] == single["input_tokens_sum"]
        assert row["messages_dropped_max"] == single["messages_dropped_max"]
        # factories only receive the parameters they name
        full = frame[frame.strategy == "full"]
        assert full["input_tokens_sum"].nunique() == 2

    def test_pool_inline_and_dask_agree(self):
        from concurrent.futures import ThreadPoolExecutor

        convs = [make_conversation(15, "a"), make_conversation(9, "b")]
        pooled = sweep(convs, STRATEGIES, GRID, counter=COUNTER, progress=False)  # fork pool (2 cores)
        with ThreadPoolExecutor(2) as ex:
            threaded = sweep(convs, STRATEGIES, GRID, counter=COUNTER, executor=ex, progress=False)
        assert pooled.equals(threaded)
        distributed = pytest.importorskip("distributed")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            on_dask = sweep(convs, {**STRATEGIES, "lambda": lambda max_chars: windowed(max_chars)}, GRID,
                            counter=COUNTER, executor=client.get_executor(), progress=False)
            # the client itself, as with Client("tcp://scheduler:8786"): the same rows
            by_client = sweep(convs, STRATEGIES, GRID, counter=COUNTER, executor=client, progress=False)
        assert on_dask[on_dask.strategy != "lambda"].reset_index(drop=True).equals(pooled)
        assert by_client.equals(pooled)

    def test_a_plain_process_pool_works_with_module_level_factories(self):
        from concurrent.futures import ProcessPoolExecutor

        convs = [make_conversation(8, "a")]
        inline = sweep(convs, STRATEGIES, GRID, counter=COUNTER, executor=None, progress=False)
        with ProcessPoolExecutor(2) as pool:
            pooled = sweep(convs, STRATEGIES, GRID, counter=COUNTER, executor=pool, progress=False)
        assert pooled.equals(inline)

    def test_conversations_pickle(self):
        import pickle

        conv = make_conversation(3).with_(metadata={"format": "x", "nested": {"a": [1, 2]}})
        again = pickle.loads(pickle.dumps(conv))
        assert again == conv and again.metadata["nested"] == {"a": [1, 2]}
        assert again.turns[0].ids == conv.turns[0].ids

    def test_lambda_factories_on_the_default_pool(self):
        frame = sweep(make_conversation(5), {"w": lambda max_chars: windowed(max_chars)}, {"max_chars": [100, 300]},
                      counter=COUNTER, progress=False)
        assert frame["max_chars"].tolist() == [100, 300]

    def test_workers_size_the_default_pool(self):
        convs = [make_conversation(10, "a"), make_conversation(6, "b")]
        one = sweep(convs, STRATEGIES, GRID, counter=COUNTER, workers=1, progress=False)
        two = sweep(convs, STRATEGIES, GRID, counter=COUNTER, workers=2, progress=False)
        assert one.equals(two)
        with pytest.raises(StrategyError, match="workers must be an int >= 1, got 0"):
            sweep(convs, STRATEGIES, GRID, counter=COUNTER, workers=0)

    def test_the_work_each_process_did_is_reported(self):
        import os
        import socket

        here = f"{socket.gethostname()}:{os.getpid()}"
        convs = [make_conversation(10 + k, f"c{k}") for k in range(8)]
        one = sweep(convs, STRATEGIES, GRID, counter=COUNTER, workers=1, progress=False)
        assert list(one.attrs["cpu_seconds"]) == [here] and one.attrs["cpu_seconds"][here] > 0
        two = sweep(convs, STRATEGIES, GRID, counter=COUNTER, workers=2, progress=False)
        assert two.equals(one)
        assert 1 <= len(two.attrs["cpu_seconds"]) <= 2 and here not in two.attrs["cpu_seconds"]


@dataclass(frozen=True)
class Prepared:
    counter: object
    pricing: object
    made_in: int


class CountingPrepare:
    """A `prepare` that pickles, and counts its calls in the process that runs it."""

    calls: dict[str, int] = {}

    def __call__(self, conversation):
        import os

        CountingPrepare.calls[conversation.id] = CountingPrepare.calls.get(conversation.id, 0) + 1
        return Prepared(ApproxCounter(chars_per_token=3 + len(conversation.id)), None, os.getpid())


class TestPrepare:
    """`prepare` gives each conversation its counter and prices where its replays run."""

    def expected(self, convs, strategies=STRATEGIES, grid=GRID):
        counters = PerConversation({c.id: ApproxCounter(chars_per_token=3 + len(c.id)) for c in convs})
        return sweep(convs, strategies, grid, counter=counters, workers=1, progress=False)

    def test_inline_once_per_conversation_even_when_its_replays_are_split(self):
        convs = [make_conversation(12, "a"), make_conversation(20, "bb")]
        CountingPrepare.calls.clear()
        frame = sweep(convs, STRATEGIES, GRID, prepare=CountingPrepare(), workers=1, progress=False)
        assert frame.equals(self.expected(convs))
        assert CountingPrepare.calls == {"a": 1, "bb": 1}  # 4 chunks for 2 conversations: halves share it
        assert list(frame.attrs["prepared"]) == ["a", "bb"]

    def test_in_the_workers_on_every_pool(self):
        import os
        from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

        convs = [make_conversation(k + 6, "c" * (k + 1)) for k in range(6)]
        expected = self.expected(convs)
        forked = sweep(convs, STRATEGIES, GRID, prepare=CountingPrepare(), workers=2, progress=False)
        assert forked.equals(expected)
        assert {p.made_in for p in forked.attrs["prepared"].values()} - {os.getpid()}, "not made in the workers"
        with ThreadPoolExecutor(2) as ex:
            assert sweep(convs, STRATEGIES, GRID, prepare=CountingPrepare(), executor=ex, progress=False).equals(expected)
        with ProcessPoolExecutor(2) as pool:
            assert sweep(convs, STRATEGIES, GRID, prepare=CountingPrepare(), executor=pool, progress=False).equals(expected)

    def test_a_counter_or_a_prepare_not_both(self):
        with pytest.raises(StrategyError, match="needs a counter= or a prepare="):
            sweep(make_conversation(3), STRATEGIES, GRID, progress=False)
        with pytest.raises(StrategyError, match="takes one of them"):
            sweep(make_conversation(3), STRATEGIES, GRID, counter=COUNTER, prepare=CountingPrepare(), progress=False)


class TestPerStrategyGrid:
    def test_each_strategy_its_own_points(self):
        convs = [make_conversation(10, "a")]
        two = {"windowed": windowed, "full": STRATEGIES["full"]}
        frame = sweep(convs, two, PerStrategy({"windowed": {"max_chars": [200, 800]}}), counter=COUNTER, workers=1,
                      progress=False)
        assert frame["strategy"].tolist() == ["windowed", "windowed", "full"]  # full once, with no grid point
        assert frame["max_chars"].tolist()[:2] == [200, 800] and frame["max_chars"][2:].isna().all()
        with pytest.raises(StrategyError, match=r"grid names strategies the sweep does not have: \['windowd'\]"):
            sweep(convs, STRATEGIES, PerStrategy({"windowd": {"max_chars": [1]}}), counter=COUNTER, progress=False)


class TestChunks:
    """How a sweep's replays are handed to the workers (`harpe_lab.sweep._chunks`)."""

    @staticmethod
    def plan(sizes, strategies, points, workers):
        from harpe_lab.sweep import _chunks

        tasks = [(ci, s, {"p": p}) for ci in range(len(sizes)) for s in strategies for p in range(points)]
        return tasks, _chunks(sizes, tasks, workers)

    def test_a_conversations_replays_stay_together_when_there_are_enough(self):
        tasks, chunks = self.plan([10] * 8, "abc", 2, workers=2)
        assert sorted(k for c in chunks for k in c) == list(range(len(tasks)))
        assert len(chunks) == 8 and all(len({tasks[k][0] for k in c}) == 1 for c in chunks)

    def test_few_conversations_are_split_so_every_worker_has_work_until_the_end(self):
        tasks, chunks = self.plan([100], "abc", 4, workers=2)
        assert sorted(k for c in chunks for k in c) == list(range(12))
        assert len(chunks) >= 8

    def test_the_largest_go_first(self):
        tasks, chunks = self.plan([5, 50, 20, 30, 1, 8, 9, 10], "ab", 1, workers=2)
        assert [tasks[c[0]][0] for c in chunks][:4] == [1, 3, 2, 7]

    def test_errors(self):
        with pytest.raises(StrategyError, match="at least one strategy"):
            sweep(make_conversation(2), {}, None, counter=COUNTER)
        with pytest.raises(StrategyError, match="must be a callable"):
            sweep(make_conversation(2), {"x": 3}, None, counter=COUNTER)
        with pytest.raises(StrategyError, match="executor must be a concurrent.futures.Executor or a distributed.Client"):
            sweep(make_conversation(2), STRATEGIES, GRID, counter=COUNTER, executor="tcp://host:8786")


class TestCalibrate:
    def test_recovers_factor_and_offset(self):
        base = make_conversation(10)
        sim = replay(base, lambda: FullContext(""), counter=COUNTER).requests["input_tokens"].tolist()
        turns = tuple(Turn(t.input, t.messages, usage=(Usage(round(1.2 * s + 900), 30, model="m"),))
                      for t, s in zip(base.turns, sim))
        conv = base.with_(turns=turns)
        cal = calibrate(conv, COUNTER)
        assert cal.factor == pytest.approx(1.2, rel=1e-3) and cal.offset == pytest.approx(900, abs=2)
        assert cal.error_before > 0.3 and cal.error_after < 0.01
        assert cal.requests == 10 and set(cal.per_model) == {"m"}
        recal = replay(conv, lambda: FullContext(""), counter=cal.counter).requests
        err = (recal["input_tokens"] - recal["recorded_input_tokens"]).abs() / recal["recorded_input_tokens"]
        assert err.max() < 0.03

    def test_stops_at_the_first_recorded_compaction(self):
        base = make_conversation(6)
        turns = tuple(Turn(t.input, t.messages, usage=(Usage(1000 + k),)) for k, t in enumerate(base.turns))
        # four points that differ by one token each are too narrow for a line: an offset-only fit, said so
        with pytest.warns(CalibrationWarning, match="fitted an offset only"):
            cal = calibrate(base.with_(turns=turns, compactions=(RecordedCompaction(turn=4, summary="s"),)), COUNTER)
        assert cal.requests == 4

    def test_needs_recorded_usage(self):
        with pytest.raises(Exception, match="records no provider input tokens"):
            calibrate(make_conversation(3), COUNTER)


class TestCalibrateOnClaudeCode:
    """Claude Code sessions record the provider's input tokens per API message: FullContext
    up to the first recorded compaction, calibrated, must land within 3% of them."""

    @pytest.mark.real_data
    def test_calibrated_error_under_three_percent(self, real_data):
        from harpe_lab.importers import load_any
        from harpe_lab.tokens import TiktokenCounter

        sessions = [load_any(p) for p in sorted((real_data / "claude_code").glob("*.jsonl"))]
        compacted = [c for c in sessions if c.compactions]
        if not compacted:
            pytest.skip("no Claude Code session with a recorded compaction")
        for conv in compacted:
            cal = calibrate(conv, TiktokenCounter("cl100k_base"))
            assert cal.requests >= 10, conv.id
            assert cal.error_before > 0.1  # the raw count misses Claude Code's system prompt and tools
            assert cal.error_after < 0.03, (conv.id, cal.error_after)
            # requests after the compaction are excluded: the provider no longer saw the full history
            last = cal.frame["turn"].max()
            assert last <= conv.compactions[0].turn
