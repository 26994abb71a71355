"""LangChain 1.x's middleware, native: `Summarization` and `ClearToolUsesEdit`
(harpe_lab.strategies.langchain), their validation, what the summarizer sees, their properties
and presets. Nothing here needs LangChain: the comparison with LangChain's own middleware is in
test_langchain_peer.py."""

from __future__ import annotations

import operator
import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import Rendered, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.presets import get_preset
from harpe_lab.protocol import DeclaresLimit, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.strategies.langchain import (SUMMARY_PREFIX, ClearToolUsesEdit, Summarization, regroup, trim_last,
                                            units_of)
from harpe_lab.tokens import BytesCounter, TiktokenCounter, text_price
from tests._support.builders import call, reply, results, round_trip, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, check_replay, conversations
from tests.strategies.langchain._shared import _SETTINGS, Recorder, _unit_lists


def _units(messages):
    return [u for m in messages for u in units_of(m)]


# --- validation ---------------------------------------------------------------------------------


class TestValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"trigger": None}, "trigger must be a .kind, value. pair"),
        ({"trigger": ("words", 5)}, r"trigger kind must be one of \['tokens', 'messages', 'fraction'\], but 'words'"),
        ({"trigger": ("tokens", 0)}, "trigger tokens must be an int > 0, got 0"),
        ({"trigger": ("messages", 2.5)}, "trigger messages must be an int > 0, got 2.5"),
        ({"trigger": ("tokens", True)}, "trigger tokens must be a number, got True"),
        ({"trigger": {}}, "a trigger clause must name at least one"),
        ({"trigger": []}, "trigger must hold at least one clause"),
        ({"trigger": [("tokens", 10), "messages"]}, "trigger must be a .kind, value. pair"),
        ({"trigger": ("fraction", 1.5), "context_window": 1000}, "trigger fraction must be > 0 and <= 1, got 1.5"),
        ({"trigger": ("fraction", 0.5)}, "needs the model's maximum input tokens: pass context_window="),
        ({"trigger": ("tokens", 10), "keep": ("fraction", 0.2)}, "pass context_window="),
        ({"trigger": ("tokens", 10), "keep": 20}, r"keep must be a \(kind, value\) pair"),
        ({"trigger": ("tokens", 10), "keep": ("messages", 0)}, "keep messages must be an int > 0, got 0"),
        ({"trigger": ("tokens", 10), "trim_tokens_to_summarize": -1}, "trim_tokens_to_summarize must be an int >= 0"),
        ({"trigger": ("tokens", 10), "context_window": 0}, "context_window must be an int >= 1, got 0"),
        ({"trigger": ("tokens", 10), "summary_prompt": "no field"}, "must be a str with a {messages} field"),
        ({"trigger": ("tokens", 10), "summary_prompt": "{messages} {other}"}, "must format with only {messages}"),
        ({"trigger": ("tokens", 10), "reported_usage": 1}, "reported_usage must be a bool, got 1"),
    ])
    def test_bad_summarization_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            Summarization(**kwargs)

    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"trigger": -1}, "trigger must be an int >= 0, got -1"),
        ({"keep": 1.0}, "keep must be an int >= 0, got 1.0"),
        ({"clear_at_least": -3}, "clear_at_least must be an int >= 0, got -3"),
        ({"clear_tool_inputs": {"bash"}}, "clear_tool_inputs must be a bool .LangChain clears all inputs or none."),
        ({"exclude_tools": "bash"}, "exclude_tools must be an iterable of tool names, got 'bash'"),
        ({"placeholder": 1}, "placeholder must be a str, got 1"),
        ({"token_count": "approximate"}, r"token_count must be one of \['messages', 'model'\], but 'approximate'"),
    ])
    def test_bad_clearing_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            ClearToolUsesEdit(**kwargs)

    def test_keyword_only_frozen_picklable_and_langchains_defaults(self):
        with pytest.raises(TypeError):
            Summarization(("tokens", 10))  # type: ignore[misc]
        s = Summarization(trigger=[("tokens", 100), {"tokens": 50, "messages": 4}])
        assert s.trigger == ((("tokens", 100),), (("tokens", 50), ("messages", 4)))
        assert (s.keep, s.trim_tokens_to_summarize) == (("messages", 20), 4000)
        assert pickle.loads(pickle.dumps(s)) == s and Summarization(trigger=s.trigger) == s
        with pytest.raises(AttributeError):
            s.keep = ("messages", 1)  # type: ignore[misc]
        c = ClearToolUsesEdit()
        assert (c.trigger, c.clear_at_least, c.keep, c.clear_tool_inputs, c.placeholder) == (
            100_000, 0, 3, False, "[cleared]")
        assert pickle.loads(pickle.dumps(c)) == c

    def test_contexts_want_a_counter(self):
        with pytest.raises(StrategyError, match="counter must have count_rendered"):
            Summarization(trigger=("tokens", 10)).context(SYSTEM, counter=None, distill=Recorder())
        with pytest.raises(StrategyError, match="counter must have count_rendered"):
            ClearToolUsesEdit().context(SYSTEM, counter=None)

    def test_the_trigger_is_a_high_water_mark_on_the_whole_request(self):
        counter, tools = BytesCounter(), ({"type": "function", "function": {"name": "bash"}},)
        extra = counter.count_rendered(Rendered(SYSTEM, ()), tools) - counter.count_rendered(Rendered("", ()))
        ctx = Summarization(trigger=[("tokens", 900), ("fraction", 0.5), ("messages", 3)], context_window=1000
                            ).context(SYSTEM, counter=counter, distill=Recorder(), tools=tools)
        assert isinstance(ctx, DeclaresLimit) and ctx.limit == Limit(tokens=500 + extra, kind="high_water")
        assert Summarization(trigger=("messages", 3)).context(SYSTEM, counter=counter, distill=Recorder()).limit is None
        assert ClearToolUsesEdit(trigger=700).context(SYSTEM, counter=counter, tools=tools).limit == Limit(
            tokens=700 + extra, kind="high_water")
        assert ClearToolUsesEdit(trigger=700, token_count="model").context(SYSTEM, counter=counter).limit == Limit(
            tokens=700, kind="high_water")


# --- what the summarizer sees -------------------------------------------------------------------------


class TestWhatTheSummarizerSees:
    @settings(max_examples=150, **_SETTINGS)
    @given(_unit_lists(), st.integers(0, 80))
    def test_trimming_with_a_text_price_chooses_the_same(self, units, budget):
        # the cut unit's candidate texts priced apart (line by line for tiktoken), not as messages
        for counter in (BytesCounter(), TiktokenCounter()):
            def count(us):
                return counter.count_rendered(Rendered("", tuple(us)))

            assert trim_last(units, budget, count, count_text=text_price(counter)) == trim_last(units, budget, count)

    def test_a_fold_with_no_user_message_left_after_trimming_calls_no_one(self):
        # an agent turn longer than the trim: LangChain summarizes without its model
        msgs = [user("task"), *[m for k in range(12) for m in round_trip(f"c{k}", "x" * 400)], reply("done")]
        recorder = Recorder()
        ctx = Summarization(trigger=("messages", 10), keep=("messages", 2), trim_tokens_to_summarize=300).context(
            SYSTEM, counter=BytesCounter(), distill=recorder)
        ctx.begin_turn(msgs[0])
        for m in msgs[1:]:
            ctx.append(m)
        events = []
        ctx.subscribe(events.append)
        sent = ctx.compact().rendered.messages
        assert recorder.requests == [] and events == []  # dropped, not summarized
        assert sent[0] == UserInput(SUMMARY_PREFIX + "Previous conversation was too long to summarize.")
        assert sent[1:] == tuple(msgs[-3:])


# --- native behaviour --------------------------------------------------------------------------------


def _run(ctx, msgs):
    ctx.begin_turn(msgs[0])
    for m in msgs[1:]:
        ctx.append(m)
    return ctx.compact()


class TestSummarization:
    def test_the_summary_is_a_user_message_first_and_the_newest_units_follow(self):
        msgs = [user("task"), *round_trip("a", "1"), *round_trip("b", "2"), reply("done"), user("next")]
        recorder = Recorder()
        out = _run(Summarization(trigger=("messages", 6), keep=("messages", 2)).context(
            SYSTEM, counter=BytesCounter(), distill=recorder), msgs)
        assert out.compacted and out.rendered.system == SYSTEM
        assert out.rendered.messages[1:] == (msgs[-2], msgs[-1])
        summary = out.rendered.messages[0]
        # the distiller's reply, stripped, after LangChain's prefix
        assert isinstance(summary, UserInput) and summary.text.startswith(SUMMARY_PREFIX + "summary 1:")
        assert summary.text == summary.text.rstrip()
        (request,) = recorder.requests
        assert request.system == "" and len(request.messages) == 1
        assert "<message type=\"human\">task</message>" in request.messages[0].text

    def test_a_cut_on_a_tool_result_moves_back_to_its_call(self):
        msgs = [user("task"), reply("", call("a"), call("b")), results(("a", "1"), ("b", "2")), reply("done")]
        # keep 2 units would start at the result of "b": the cut moves back to the reply
        out = _run(Summarization(trigger=("messages", 3), keep=("messages", 2)).context(
            SYSTEM, counter=BytesCounter(), distill=Recorder()), msgs)
        assert out.rendered.messages[1:] == tuple(msgs[1:])

    def test_parallel_results_count_one_by_one(self):
        msgs = [user("task"), reply("", call("a"), call("b"), call("c")), results(("a", "1"), ("b", "2"), ("c", "3"))]
        ctx = Summarization(trigger=("messages", 5), keep=("messages", 1)).context(
            SYSTEM, counter=BytesCounter(), distill=Recorder())
        out = _run(ctx, msgs)
        assert len(ctx.state) == 1 + 4 and out.rendered.messages[1:] == tuple(msgs[1:])

    def test_below_the_trigger_nothing_changes_and_the_state_persists(self):
        ctx = Summarization(trigger=("messages", 4), keep=("messages", 1)).context(
            SYSTEM, counter=BytesCounter(), distill=Recorder())
        first = _run(ctx, [user("a"), reply("b"), user("c")])
        assert not first.compacted and len(first.rendered.messages) == 3
        ctx.append(reply("d"))
        out = ctx.compact()  # 4 units: fold, keep the newest
        assert out.compacted and out.rendered.messages[1:] == (reply("d"),)
        ctx.append(user("e"))
        later = ctx.compact()  # 3 units, summary included: the fold stays
        assert not later.compacted and later.rendered.messages[0] is out.rendered.messages[0]

    def test_an_aborted_turn_restores_the_state_before_it(self):
        ctx = Summarization(trigger=("messages", 3), keep=("messages", 1)).context(
            SYSTEM, counter=BytesCounter(), distill=Recorder())
        _run(ctx, [user("a"), reply("b")])
        ctx.commit_turn()
        before = ctx.state
        ctx.begin_turn(user("c"))
        ctx.append(reply("d"))
        ctx.compact()
        ctx.abort_turn()
        assert ctx.state == (*before, user("c"))

    def test_an_aborted_turn_takes_back_a_fold_made_in_it(self):
        ctx = Summarization(trigger=("messages", 3), keep=("messages", 1)).context(
            SYSTEM, counter=BytesCounter(), distill=Recorder())
        _run(ctx, [user("a"), reply("b")])
        ctx.commit_turn()
        before = ctx.state
        ctx.begin_turn(c := user("c"))
        ctx.append(reply("d"))
        assert ctx.compact().compacted and ctx.folds == 1  # the fold replaced the state
        ctx.abort_turn()
        assert ctx.state == (*before, c) and all(map(operator.is_, ctx.state, (*before, c)))
        assert ctx.transcript == (user("a"), reply("b"), c)

    def test_keep_tokens_keeps_the_newest_units_that_fit(self):
        counter = BytesCounter()
        msgs = [user("task"), *[m for k in range(6) for m in round_trip(f"c{k}", "x" * 200)], reply("ok")]
        ctx = Summarization(trigger=("tokens", 100), keep=("tokens", 130)).context(
            SYSTEM, counter=counter, distill=Recorder())
        kept = _run(ctx, msgs).rendered.messages[1:]
        # the newest units within 130 tokens end at the result of c4; the cut moves back to
        # its call, which puts the kept part above 130
        assert counter.count_rendered(Rendered("", tuple(msgs[-4:]))) <= 130
        assert kept == tuple(msgs[-5:])
        assert counter.count_rendered(Rendered("", kept)) > 130

    @settings(max_examples=40, **_SETTINGS)
    @given(conversations(), st.integers(8, 30), st.integers(1, 4))
    def test_requests_keep_pairs_the_newest_message_and_a_suffix(self, convo, trigger, keep):
        counter = BytesCounter()
        config = Summarization(trigger=("messages", trigger), keep=("messages", keep))
        folded = replay(convo, lambda: config.context(SYSTEM, counter=counter, distill=Recorder()), counter=counter)
        full = replay(convo, lambda: FullContext(SYSTEM), counter=counter)
        for i in range(len(full)):
            sent, history = folded.rendered(i).messages, full.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert folded.sent_ids(i)[-1] == folded.available_ids(i)[-1]
            # under the trigger, or just folded: the summary, keep units, and what the cut moved
            # back over to reach the call of a round (its call and up to 2 earlier results)
            assert len(_units(sent)) <= max(trigger - 1, 1 + keep + 3)
            if isinstance(sent[0], UserInput) and sent[0].text.startswith(SUMMARY_PREFIX):
                rest = sent[1:]
                assert not any(isinstance(m, UserInput) and m.text.startswith(SUMMARY_PREFIX) for m in rest)
                assert rest == history[len(history) - len(rest):], f"request {i} is not summary + a suffix"
            else:
                assert sent == history


class TestClearToolUsesEdit:
    @staticmethod
    def _length(units) -> int:
        return sum(len(r.content) for m in units if isinstance(m, ToolResults) for r in m.results)

    def _session(self, rounds: int, size: int = 100, name: str = "bash") -> list:
        return [user("task"), *[m for k in range(rounds) for m in round_trip(f"c{k}", str(k) * size, name)]]

    def _cleared(self, out) -> list[str]:
        return [r.id for m in out if isinstance(m, ToolResults) for r in m.results if r.content == "[cleared]"]

    def test_at_or_below_the_trigger_nothing_changes(self):
        msgs = self._session(5)
        assert ClearToolUsesEdit(trigger=500, keep=1)(msgs, tokens=self._length) == tuple(msgs)

    def test_clear_at_least_stops_clearing_once_enough_is_freed(self):
        msgs = self._session(5)  # each clearing frees 100 - 9 = 91 "tokens"
        out = ClearToolUsesEdit(trigger=0, keep=1, clear_at_least=150)(msgs, tokens=self._length)
        assert self._cleared(out) == ["c0", "c1"]

    def test_freeing_less_than_clear_at_least_still_sends_the_clearing(self):
        # where Anthropic's documented clear_tool_uses sends nothing cleared
        msgs = self._session(3)
        out = ClearToolUsesEdit(trigger=0, keep=1, clear_at_least=10_000)(msgs, tokens=self._length)
        assert self._cleared(out) == ["c0", "c1"]

    def test_only_results_whose_call_is_in_the_nearest_reply_are_cleared(self):
        msgs = [user("t"), reply("", call("a")), reply("thinking"), results(("a", "1" * 50)), *round_trip("b", "2")]
        assert self._cleared(ClearToolUsesEdit(trigger=0, keep=1)(msgs, tokens=self._length)) == []

    def test_parallel_results_are_cleared_one_by_one_and_inputs_with_them(self):
        msgs = [user("t"), reply("", call("a", q=1), call("b", q=2)), results(("a", "1" * 50), ("b", "2" * 50))]
        out = ClearToolUsesEdit(trigger=0, keep=1, clear_tool_inputs=True)(msgs, tokens=self._length)
        assert self._cleared(out) == ["a"] and out[2].results[1] is msgs[2].results[1]
        assert out[1].calls == (ToolCall("a", "bash", {}), msgs[1].calls[1])

    def test_excluded_tools_count_among_the_kept(self):
        msgs = [user("t"), *round_trip("a", "1", "memory"), *round_trip("b", "2"), *round_trip("c", "3", "memory")]
        out = ClearToolUsesEdit(trigger=0, keep=1, exclude_tools={"memory"})(msgs, tokens=self._length)
        assert self._cleared(out) == ["b"]

    @settings(max_examples=25, **_SETTINGS)
    @given(conversations(), st.integers(0, 300), st.integers(0, 4), st.integers(0, 60), st.booleans(),
           st.frozensets(st.sampled_from(["bash", "read"]), max_size=1), st.sampled_from(["messages", "model"]))
    def test_replayed_requests_are_the_edit_applied_to_the_history(self, convo, trigger, keep, least, inputs,
                                                                  exclude, count):
        counter = BytesCounter()
        edit = ClearToolUsesEdit(trigger=trigger, keep=keep, clear_at_least=least, clear_tool_inputs=inputs,
                                 exclude_tools=exclude, token_count=count)
        price = edit.price(SYSTEM, counter=counter)
        edited, full = check_replay(convo, lambda: edit.context(SYSTEM, counter=counter),
                                    lambda msgs: edit(msgs, tokens=price), counter=counter,
                                    newest=keep >= 3)  # keep counts results: a round of up to 3 may be partly cleared
        for i in range(len(full)):
            history, sent = full.rendered(i).messages, edited.rendered(i).messages
            if price(_units(history)) <= trigger:
                assert sent == history
            # the newest keep results are verbatim
            newest = [r for m in history if isinstance(m, ToolResults) for r in m.results][::-1][:keep]
            kept = {id(r) for m in sent if isinstance(m, ToolResults) for r in m.results}
            assert all(id(r) in kept for r in newest)


class TestRegroup:
    def test_untouched_rounds_come_back_as_the_same_object(self):
        m = results(("a", "1"), ("b", "2"))
        assert regroup([(u, m) for u in units_of(m)])[0] is m
        changed = [(units_of(m)[0], m), (ToolResults((ToolResult("b", "x"),)), m)]
        assert regroup(changed) == (ToolResults((m.results[0], ToolResult("b", "x"))),)


# --- without the peers extra ---------------------------------------------------------------------------------


def test_without_the_extra_the_import_error_says_what_to_install():
    code = ("import sys; sys.modules['langchain'] = None\n"
            "try:\n    import harpe_lab.peers.langchain\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'harpe_lab[peers]'" in out


# --- presets -----------------------------------------------------------------------------------------------


class TestPresets:
    def test_the_presets_build_fresh_native_strategies_that_replay(self):
        convo, counter = datasets.load("coding_agent"), BytesCounter()
        for name, knobs in (("langchain-summarization", {"high_water": 3000, "keep": 6}),
                            ("langchain-clearing", {"high_water": 2000, "keep": 2})):
            preset = get_preset(name)
            assert preset.family == "langchain" and preset.limit_kind == "high_water"
            make = preset.build(counter=counter, system=SYSTEM, **knobs)
            assert make() is not make()
            frame = replay(convo, make, counter=counter).requests
            assert frame.compacted.sum() >= 3
