"""LangChain 1.x's middleware: the native `Summarization` and `ClearToolUsesEdit`
(harpe_lab.strategies.langchain), their properties, and differential tests against
LangChain's own middleware (harpe_lab.peers.langchain) on generated, bundled and real
conversations: both send the same request at every model call and the distiller sees the
same prompts."""

from __future__ import annotations

import operator
import pickle
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, Rendered, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.presets import get_preset
from harpe_lab.protocol import DeclaresLimit, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.strategies.langchain import (
    DEFAULT_SUMMARY_PROMPT,
    SUMMARY_PREFIX,
    ClearToolUsesEdit,
    Summarization,
    buffer_xml,
    regroup,
    trim_last,
    units_of,
)
from harpe_lab.tokens import BytesCounter, TiktokenCounter, text_price
from tests._support.builders import call, reply, results, round_trip, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, check_replay, conversations, real_params

pytest.importorskip("langchain", reason="the peers extra (langchain) is not installed")
from langchain.agents.middleware import summarization as lc_summarization  # noqa: E402
from langchain_core.messages.utils import get_buffer_string, trim_messages  # noqa: E402

from harpe_lab.peers import langchain as peer  # noqa: E402

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Recorder:
    """A distiller that writes a short summary naming its call and keeps every request."""

    def __init__(self) -> None:
        self.requests: list[Rendered] = []

    def __call__(self, request: Rendered) -> str:
        self.requests.append(request)
        text = request.messages[-1].text
        return f"  summary {len(self.requests)}: {len(text)} characters, ending {text[-40:]!r}\n"


def _units(messages):
    return [u for m in messages for u in units_of(m)]


def _summarize(conversation, config: Summarization, counter=None, system: str = SYSTEM):
    """Replay under the native and the peer; assert identical requests and distill prompts;
    return (native replay, peer replay, folds, seconds native, seconds peer). A fold is a
    compacted request: the state was rewritten (summarized, or dropped when the summarizer
    saw nothing)."""
    counter = counter or BytesCounter()
    ours, theirs = Recorder(), Recorder()
    t0 = time.perf_counter()
    a = replay(conversation, lambda: config.context(system, counter=counter, distill=ours), counter=counter,
               name="native")
    t1 = time.perf_counter()
    b = replay(conversation, lambda: peer.summarization(system, config, counter=counter, distill=theirs),
               counter=counter, name="langchain")
    t2 = time.perf_counter()
    _same(a, b)
    assert ours.requests == theirs.requests, "the summarizer saw different prompts"
    return a, b, int(a.requests.compacted.sum()), t1 - t0, t2 - t1


def _clear(conversation, config: ClearToolUsesEdit, counter=None, tools=()):
    """The same for context editing; returns (native, peer, requests with a cleared result)."""
    counter = counter or BytesCounter()
    a = replay(conversation, lambda: config.context(SYSTEM, counter=counter, tools=tools), counter=counter,
               tools=tools, name="native")
    b = replay(conversation, lambda: peer.context_editing(SYSTEM, config, counter=counter, tools=tools),
               counter=counter, tools=tools, name="langchain")
    _same(a, b)
    cleared = sum(any(isinstance(m, ToolResults) and any(r.content == config.placeholder for r in m.results)
                      for m in a.rendered(i).messages) for i in range(len(a)))
    return a, b, cleared


def _same(a, b) -> None:
    assert len(a) == len(b)
    for i in range(len(a)):
        x, y = a.rendered(i), b.rendered(i)
        if x != y:
            k = next((k for k, (m, n) in enumerate(zip(x.messages, y.messages)) if m != n), None)
            where = f"message {k}: {x.messages[k]!r:.600} != {y.messages[k]!r:.600}" if k is not None else (
                f"{len(x.messages)} != {len(y.messages)} messages")
            pytest.fail(f"request {i} differs at {where}")
    fa, fb = a.requests, b.requests
    for column in ("compacted", "summarized", "distill_calls", "input_tokens", "overshoot_tokens"):
        assert fa[column].tolist() == fb[column].tolist(), column
    assert a.limit == b.limit


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

    def test_the_prompt_is_langchains_word_for_word(self):
        assert DEFAULT_SUMMARY_PROMPT == lc_summarization.DEFAULT_SUMMARY_PROMPT

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


# --- what the summarizer sees: LangChain's own functions as the oracle ------------------------------

_text = st.text(alphabet="ab <&>\"'\n✓", max_size=30)


@st.composite
def _unit_lists(draw):
    units = []
    for k in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["user", "ai", "tool"]))
        if kind == "user":
            units.append(UserInput(draw(_text)))
        elif kind == "ai":
            ids = [draw(st.sampled_from(["c", "x" * 70])) + str(k) + str(j) for j in range(draw(st.integers(0, 2)))]
            units.append(AssistantMessage(draw(_text), tuple(ToolCall(i, draw(st.sampled_from(["bash", "r&d"])),
                                                                      {"q": draw(_text)}) for i in ids)))
        else:
            units.append(ToolResults((ToolResult(f"c{k}", draw(_text)),)))
    return units


class TestWhatTheSummarizerSees:
    @settings(max_examples=150, **_SETTINGS)
    @given(_unit_lists())
    def test_the_history_is_formatted_as_get_buffer_string_xml(self, units):
        assert buffer_xml(units) == get_buffer_string([peer.to_langchain(u) for u in units], format="xml")

    @settings(max_examples=150, **_SETTINGS)
    @given(_unit_lists(), st.integers(0, 80))
    def test_trimming_is_trim_messages_last_partial_from_a_human(self, units, budget):
        counter = BytesCounter()
        conv = peer._Converter()
        lc = [conv.to(u, u) for u in units]
        count = peer._Count(counter, conv)
        theirs = trim_messages(lc, max_tokens=budget, token_counter=count, start_on="human", strategy="last",
                               allow_partial=True, include_system=True)
        ours = trim_last(units, budget, lambda us: counter.count_rendered(Rendered("", tuple(us))))
        assert ours == [conv.unit(m) for m in theirs]
        assert not ours or isinstance(ours[0], UserInput)

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


# --- differential: LangChain's own middleware -------------------------------------------------------------


def test_without_the_extra_the_import_error_says_what_to_install():
    code = ("import sys; sys.modules['langchain'] = None\n"
            "try:\n    import harpe_lab.peers.langchain\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'harpe_lab[peers]'" in out


_BUNDLED = {
    # (summarization configs, clearing configs): each folds / clears several times
    "coding_agent": ([Summarization(trigger=("tokens", 3000), keep=("messages", 6), trim_tokens_to_summarize=500),
                      Summarization(trigger=[("messages", 30), {"tokens": 2000, "messages": 10}],
                                    keep=("tokens", 1500))],
                     [ClearToolUsesEdit(trigger=2000, keep=2, clear_at_least=300, clear_tool_inputs=True),
                      ClearToolUsesEdit(trigger=2000, keep=1, token_count="model")]),
    "research_assistant": ([Summarization(trigger=("fraction", 0.5), keep=("fraction", 0.2), context_window=3000),
                            Summarization(trigger=("messages", 12), keep=("messages", 4))],
                           [ClearToolUsesEdit(trigger=1200, keep=3)]),
    "support_chat": ([Summarization(trigger=("tokens", 1500), keep=("tokens", 500), trim_tokens_to_summarize=None),
                      Summarization(trigger=("messages", 20), keep=("messages", 5))],
                     [ClearToolUsesEdit(trigger=1500, keep=2, exclude_tools={"lookup_order"})]),
}


class TestDifferential:
    @pytest.mark.parametrize("name", sorted(_BUNDLED))
    def test_bundled_summarization(self, name):
        for config in _BUNDLED[name][0]:
            a, _, folds, _, _ = _summarize(datasets.load(name), config)
            assert folds >= 3, (config, folds)
            assert a.requests.summarized.sum() >= 1

    @pytest.mark.parametrize("name", sorted(_BUNDLED))
    def test_bundled_clearing(self, name):
        tools = ({"type": "function", "function": {"name": "bash", "parameters": {}}},)
        for config in _BUNDLED[name][1]:
            _, _, cleared = _clear(datasets.load(name), config, tools=tools)
            assert cleared >= 3, (config, cleared)

    def test_reported_usage_folds_earlier_and_again_as_langchain_does(self):
        # the replay reports the whole request (a long system prompt included) and the reply:
        # LangChain's check of the newest reply's usage fires before its own count does, and
        # again after a fold while the kept reply still reports more than the trigger
        convo, system = datasets.load("coding_agent"), "Follow the house rules. " * 400
        config = Summarization(trigger=("tokens", 4000), keep=("messages", 6))
        _, _, plain, _, _ = _summarize(convo, config, system=system)
        a, _, reported, _, _ = _summarize(convo, Summarization(trigger=("tokens", 4000), keep=("messages", 6),
                                                               reported_usage=True), system=system)
        assert reported > plain >= 3
        folds = a.requests.compacted.tolist()
        assert any(x and y for x, y in zip(folds, folds[1:])), "no fold right after a fold"

    @settings(max_examples=25, **_SETTINGS)
    @given(conversations(), st.sampled_from([("messages", 6), ("tokens", 150), ("fraction", 0.3)]),
           st.sampled_from([("messages", 2), ("tokens", 60), ("fraction", 0.1)]), st.sampled_from([None, 0, 40]))
    def test_generated_summarization(self, convo, trigger, keep, trim):
        _summarize(convo, Summarization(trigger=trigger, keep=keep, trim_tokens_to_summarize=trim,
                                        context_window=500, reported_usage=trim == 0))

    @settings(max_examples=25, **_SETTINGS)
    @given(conversations(), st.integers(0, 300), st.integers(0, 3), st.integers(0, 60), st.booleans(),
           st.sampled_from(["messages", "model"]))
    def test_generated_clearing(self, convo, trigger, keep, least, inputs, count):
        _clear(convo, ClearToolUsesEdit(trigger=trigger, keep=keep, clear_at_least=least, clear_tool_inputs=inputs,
                                        exclude_tools={"read"}, token_count=count))


_REAL = [p for p in real_params("claude_code/*.jsonl", 8) if p.values[0] is None or p.values[0].stat().st_size > 1_000_000]


@pytest.mark.real_data
class TestDifferentialOnRealSessions:
    @pytest.mark.parametrize("path", _REAL)
    def test_claude_code_sessions(self, real_data, path):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no long Claude Code session")
        convo = load_any(path)
        for config in (Summarization(trigger=("tokens", 30_000), keep=("messages", 20)),
                       Summarization(trigger=("tokens", 20_000), keep=("tokens", 6000), trim_tokens_to_summarize=2000)):
            *_, folds, _, _ = _summarize(convo, config)
            assert folds >= 3, (path.name, config, folds)
        # without trimming the summarizer sees every fold
        a, *_ = _summarize(convo, Summarization(trigger=("tokens", 30_000), keep=("messages", 30),
                                                trim_tokens_to_summarize=None))
        assert a.requests.distill_calls.sum() >= 3 and a.requests.summarized.sum() >= 3
        _, _, cleared = _clear(convo, ClearToolUsesEdit(trigger=20_000, keep=3, clear_at_least=2000))
        assert cleared >= 3

    def test_tool_heavy_session(self, real_data):
        from harpe_lab.importers import load_any

        path = real_data / "claude_code" / "tool_heavy.jsonl"
        if not path.is_file():
            pytest.skip("no tool_heavy.jsonl")
        convo = load_any(path)
        *_, folds, _, _ = _summarize(convo, Summarization(trigger=("messages", 4), keep=("messages", 2)))
        assert folds >= 2
        _, _, cleared = _clear(convo, ClearToolUsesEdit(trigger=100, keep=1))
        assert cleared >= 2


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
