"""The numbers a user sees mean one thing and do not depend on how they were produced.

Each class pins one way the first version's numbers could not be trusted: overshoot only
against a high water, state shared across replays, a message object reused in two places,
a preset that ignored its counter, two resume caps that disagreed, and an engine that set
attributes on strategies and guessed at others."""

from __future__ import annotations

import random
import warnings
from concurrent.futures import ThreadPoolExecutor

import pytest

from harpe_lab import datasets
from harpe_lab.strategies.harpe import FullContext, WindowedContext
from harpe_lab.conversation import Conversation
from harpe_lab.errors import HarpeLabError, StrategyError
from harpe_lab.importers import load_harpe, to_journal
from harpe_lab.journal import Journal
from harpe_lab.messages import AssistantMessage, Rendered, ToolResults, UserInput
from harpe_lab.presets import PRESETS, get_preset, make_strategy
from harpe_lab.protocol import Compaction, ContextCompacted, Limit
from harpe_lab.replay import RequestIndexError, replay
from harpe_lab.summarize import RecordedDistiller
from harpe_lab.sweep import sweep
from harpe_lab.tokens import BytesCounter, TiktokenCounter
from tests._support.builders import call, reply, results, turn
from tests._support.data import ROOT

COUNTER = TiktokenCounter("cl100k_base")


def _peak(conversation: Conversation) -> int:
    full = replay(conversation, make_strategy("full", system=conversation.system), counter=COUNTER)
    return int(full.requests["input_tokens"].max())


class TestOvershootAgainstEveryDeclaredLimit:
    def test_windowed_overshoot_is_measured_against_its_budget(self):
        c = datasets.load("coding_agent")
        rp = replay(c, make_strategy("windowed", budget=8000, system=c.system), counter=COUNTER)
        f = rp.requests
        assert rp.limit == Limit(tokens=8000, kind="target")
        # the first version reported 0 overshoots although the largest request was 20,187 tokens
        assert f["input_tokens"].max() > 8000
        assert (f["overshoot_tokens"] == (f["input_tokens"] - 8000).clip(lower=0)).all()
        assert rp.totals()["overshoots"] == int((f["input_tokens"] > 8000).sum()) > 0

    @pytest.mark.parametrize("name", [p.name for p in PRESETS.values() if p.limit_kind is not None])
    def test_every_preset_with_a_limit_declares_it(self, name):
        c = datasets.load("support_chat")
        rp = replay(c, make_strategy(name, budget=6000, counter=COUNTER, system=c.system), counter=COUNTER)
        assert rp.limit is not None and rp.limit.kind == PRESETS[name].limit_kind and rp.limit.tokens == 6000
        over = (rp.requests["input_tokens"] - 6000).clip(lower=0)
        assert rp.requests["overshoot_tokens"].tolist() == over.tolist()

    def test_a_hard_budget_is_never_overshot(self):
        c = datasets.load("support_chat")
        rp = replay(c, make_strategy("sliding", budget=6000, counter=COUNTER, system=c.system), counter=COUNTER)
        assert rp.requests["input_tokens"].max() <= 6000 and rp.totals()["overshoots"] == 0


class TestFreshStatePerReplay:
    def test_one_factory_gives_the_same_replay_twice(self):
        c = datasets.load("support_chat")
        factory = make_strategy("summarizing", budget=3000, system=c.system,
                                distill=RecordedDistiller(["first summary", "second", "third"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            a = replay(c, factory, counter=COUNTER)
            b = replay(c, factory, counter=COUNTER)
        # the first version gave 3 summaries, then 0: the distiller's position was shared
        assert a.totals()["summaries"] == 3
        assert a.requests.equals(b.requests)

    @pytest.mark.slow
    def test_sweep_frames_do_not_depend_on_order_or_executor(self):
        from concurrent.futures import ProcessPoolExecutor

        convs = [datasets.load("support_chat"), datasets.load("research_assistant")]
        grid = [{"high_water": h} for h in (2500, 4000, 6000)]
        key = ["conversation", "strategy", "high_water"]

        def run(points, **kw):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                frame = sweep(convs, SWEPT, points, counter=COUNTER, progress=False, **kw)
            return frame.sort_values(key).reset_index(drop=True)

        inline = run(grid, workers=1)
        shuffled = list(grid)
        random.Random(7).shuffle(shuffled)
        assert inline["summaries"].sum() > 0  # the recorded distiller really ran
        assert run(list(reversed(grid)), workers=1).equals(inline)
        assert run(shuffled, workers=2).equals(inline)
        with ThreadPoolExecutor(2) as pool:
            assert run(shuffled, executor=pool).equals(inline)
        with ProcessPoolExecutor(2) as pool:
            assert run(grid, executor=pool).equals(inline)
        distributed = pytest.importorskip("distributed")
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as cluster, distributed.Client(cluster) as client:
            assert run(shuffled, executor=client.get_executor()).equals(inline)


# module-level, so a plain process pool can pickle them; one distiller shared by every replay
_RECORDED = RecordedDistiller(["a summary", "another"])


def _summarizing(high_water):
    return make_strategy("summarizing", budget=high_water, distill=_RECORDED)()


def _sliding(high_water):
    return make_strategy("sliding", budget=high_water + 1000, counter=COUNTER)()


def _chain(high_water):
    return make_strategy("chain", budget=high_water, counter=COUNTER)()


SWEPT = {"summarizing": _summarizing, "sliding": _sliding, "chain": _chain}


class TestReusedMessageObjects:
    """The provider session is told apart by the conversation's message ids, so a message
    object that appears twice is two messages."""

    def test_a_reply_object_reused_in_two_turns(self):
        ok = AssistantMessage("ok")
        c = Conversation((turn("one", ok), turn("two", ok), turn("three", AssistantMessage("done"))))
        rp = replay(c, lambda: FullContext(""), counter=COUNTER)
        assert rp.sent_ids(2) == ["0.0", "0.1", "1.0", "1.1", "2.0"]
        assert set(rp.kept(2).values()) == {"sent"}
        assert rp.requests["messages_dropped"].tolist() == [0, 0, 0]
        assert not rp.requests["compacted"].any()

    def test_a_turn_object_reused(self):
        t = turn("again", reply("", call("c1", "read", path="c1")), results(("c1", "x" * 50)), AssistantMessage("fine"))
        c = Conversation((t, t, t))
        rp = replay(c, lambda: WindowedContext("", max_chars=10), counter=COUNTER)
        # each turn start keeps only the newest turn; its call and results stay paired
        last = rp.turn_requests(2)[0]
        assert rp.sent_ids(last) == ["2.0"]
        kept = rp.kept(last)
        assert [k for k, v in kept.items() if v == "sent"] == ["2.0"]
        assert sum(v == "dropped" for v in kept.values()) == 8
        assert len(rp.sent_ids(len(rp) - 1)) == len(set(rp.sent_ids(len(rp) - 1)))

    def test_a_round_object_reused_within_a_turn(self):
        asked, answered = reply("", call("c1", "read", path="c1")), results(("c1", "x" * 50))
        c = Conversation((turn("twice", asked, answered, asked, answered, AssistantMessage("done")),))
        rp = replay(c, lambda: FullContext(""), counter=COUNTER)
        assert rp.sent_ids(len(rp) - 1) == ["0.0", "0.1", "0.2", "0.3", "0.4"]
        assert rp.requests["messages_sent"].tolist() == [1, 3, 5]
        assert not rp.requests["compacted"].any()

    def test_equal_messages_in_a_row(self):
        c = Conversation((turn("same", AssistantMessage("ok")), turn("same", AssistantMessage("ok"))))
        rp = replay(c, lambda: FullContext(""), counter=COUNTER)
        assert rp.sent_ids(1) == ["0.0", "0.1", "1.0"]
        assert rp.requests["messages_sent"].tolist() == [1, 3]


class TestPresetsMeanTheSameBudget:
    def test_chain_prices_with_the_replays_counter(self):
        c = datasets.load("coding_agent")
        rp = replay(c, make_strategy("chain", budget=5300, counter=COUNTER, system=c.system), counter=COUNTER)
        f = rp.requests
        # within the budget, with chat overhead, except where the newest round alone is larger
        # (TokenBudget keeps the newest message, and a result keeps the call it answers)
        over = f.index[f["input_tokens"] > 5300]
        assert 0 < len(over) < len(f)
        for i in over:
            sent = rp.rendered(i).messages
            assert len(sent) == 1 or (len(sent) == 2 and isinstance(sent[1], ToolResults))
        with_bytes = replay(c, make_strategy("chain", budget=5300, counter=BytesCounter(), system=c.system),
                            counter=COUNTER)
        assert not with_bytes.requests["messages_sent"].equals(f["messages_sent"])  # the counter is used

    def test_a_preset_says_when_another_knob_binds(self):
        note = get_preset("chain").note
        assert "budget binds only when the last n messages" in note
        assert get_preset("chain").knob("n").default == 100  # the knob that note names

    def test_budget_sets_each_presets_own_knob(self):
        c = datasets.load("support_chat")
        rp = replay(c, make_strategy("summarizing", budget=4000, system=c.system), counter=COUNTER)
        assert rp.limit == Limit(tokens=4000, kind="high_water")

    def test_integral_floats_are_accepted_and_others_refused(self):
        make_strategy("windowed", budget=8000.0)
        with pytest.raises(StrategyError, match="budget must be a whole number, got 8000.5"):
            make_strategy("windowed", budget=8000.5)
        with pytest.raises(StrategyError, match=r"budget must be >= 1, got -3"):
            make_strategy("sliding", budget=-3, counter=COUNTER)
        with pytest.raises(StrategyError, match="has no knob 'high_water'; its knobs: \\['budget', 'reserve'\\]"):
            make_strategy("sliding", counter=COUNTER, high_water=10)

    def test_scaling_knobs_range_over_the_conversation(self):
        knob = get_preset("sliding").budget_knob
        assert knob.range_for(170_000) == (1, 187_000)
        assert get_preset("chain").knob("n").range_for(170_000) == (1, 1000)

    @pytest.mark.parametrize("name", list(PRESETS))
    @pytest.mark.parametrize("dataset", datasets.list_datasets())
    def test_every_preset_replays_every_dataset(self, name, dataset):
        c = datasets.load(dataset)
        budget = max(2000, _peak(c) // 2)
        rp = replay(c, make_strategy(name, budget=budget, counter=COUNTER, system=c.system), counter=COUNTER,
                    name=name)
        t, f = rp.totals(), rp.requests
        assert t["compactions"] == int(f["compacted"].sum()) and t["summaries"] == int(f["summarized"].sum())
        assert not f["compacted"].iloc[0]  # the first request extends nothing
        assert (f["summarized"] <= (f["distill_calls"] > 0)).all()  # a summary needs a distill call


class TestResumeCaps:
    def test_load_harpe_caps_like_journal_load(self, tmp_path):
        long = "x" * 400
        c = Conversation((
            turn("first", AssistantMessage("short")),
            turn("second", AssistantMessage(long), outcome="interrupted"),
            turn("third", AssistantMessage("brief")),
        ))  # fmt: skip
        path = to_journal(c, tmp_path / "j.jsonl")
        history = Journal.load(path, max_chars=100)
        capped = load_harpe(path, max_chars=100)
        # the interrupted turn's reply is not in Harpe's resumed history, so all three fit
        assert [m.text for m in history if isinstance(m, UserInput)] == ["first", "second", "third"]
        assert [t.input.text for t in capped.turns] == ["first", "second", "third"]


class _SlotsOnly:
    """A user's strategy: the lifecycle and nothing else, with no room for extra attributes."""

    __slots__ = ("_messages",)

    def __init__(self) -> None:
        self._messages: list = []

    def begin_turn(self, input):
        self._messages.append(input)

    def append(self, message):
        self._messages.append(message)

    def compact(self):
        return Compaction(Rendered("", tuple(self._messages[-3:])), False)

    def observe(self, usage):
        pass

    def commit_turn(self):
        pass

    def abort_turn(self):
        pass


class _SlotsWithCapabilities(_SlotsOnly):
    __slots__ = ("_sinks",)

    def __init__(self) -> None:
        super().__init__()
        self._sinks: list = []

    @property
    def limit(self) -> Limit:
        return Limit(tokens=20, kind="target")

    def subscribe(self, sink) -> None:
        self._sinks.append(sink)

    def compact(self):
        if len(self._messages) > 3:
            for sink in self._sinks:
                sink(ContextCompacted(len(self._messages) - 3))
        return super().compact()


class TestTheEngineOnlyUsesTheProtocol:
    def _conversation(self) -> Conversation:
        return Conversation(tuple(turn(f"question {k}", AssistantMessage(f"answer {k} " * 5)) for k in range(4)))

    def test_a_lifecycle_only_strategy_replays_with_the_optional_columns_empty(self):
        rp = replay(self._conversation(), _SlotsOnly, counter=COUNTER)
        f = rp.requests
        assert rp.limit is None and len(rp) == 4
        assert f["overshoot_tokens"].eq(0).all() and f["summary_tokens"].eq(0).all()
        assert f["distill_calls"].eq(0).all() and not f["summarized"].any()
        assert f["compacted"].tolist() == [False, False, True, True]  # the window of 3 slid

    def test_declared_capabilities_are_used(self):
        rp = replay(self._conversation(), _SlotsWithCapabilities, counter=COUNTER)
        f = rp.requests
        assert rp.limit == Limit(tokens=20, kind="target")
        assert (f["overshoot_tokens"] == (f["input_tokens"] - 20).clip(lower=0)).all()
        assert f["summarized"].tolist() == [False, False, True, True]
        assert rp.kept(3)["0.0"] == "summarized"

    def test_a_limit_that_is_not_a_limit_is_refused(self):
        class Bad(_SlotsOnly):
            __slots__ = ()
            limit = 5000

        with pytest.raises(StrategyError, match="Bad.limit must be a harpe_lab.protocol.Limit or None, got 5000"):
            replay(self._conversation(), Bad, counter=COUNTER)

    def test_a_broken_budget_promise_raises(self):
        class Promises(_SlotsOnly):
            __slots__ = ()
            limit = Limit(tokens=10, kind="budget")

        with pytest.raises(StrategyError, match="promised at most 10 tokens but sent"):
            replay(self._conversation(), Promises, counter=COUNTER)


class TestRequestIndices:
    def test_out_of_range_names_the_range(self):
        c = datasets.load("research_assistant")
        rp = replay(c, lambda: FullContext(""), counter=COUNTER, name="full")
        with pytest.raises(RequestIndexError, match=rf"request 9999 is out of range: full on .* made {len(rp)} requests"):
            rp.kept(9999)
        with pytest.raises(IndexError):  # still an IndexError for code that expects one
            rp.rendered(len(rp))
        assert issubclass(RequestIndexError, HarpeLabError)
        assert rp.rendered(-1) is rp.rendered(len(rp) - 1)

    def test_the_frame_cannot_be_changed_through_the_result(self):
        rp = replay(datasets.load("research_assistant"), lambda: FullContext(""), counter=COUNTER)
        frame = rp.requests
        frame.loc[0, "input_tokens"] = -1
        assert rp.requests.loc[0, "input_tokens"] > 0 and rp.events == tuple(rp.events)


def test_the_strategies_page_lists_every_preset():
    from pathlib import Path

    page = (ROOT / "docs" / "strategies.md").read_text()
    table = page.split("## The presets")[1].split("\n## ")[0]
    rows = {line.split("|")[1].strip().strip("`"): line for line in table.splitlines() if line.startswith("| `")}
    assert set(rows) == set(PRESETS)
    for name, line in rows.items():  # the last column is the registry's source, word for word
        assert PRESETS[name].source and line.split("|")[-2].strip() == PRESETS[name].source, name
