"""OpenHands' condensers (harpe_lab.strategies.openhands): the exact arithmetic of each cut,
the placeholder and summary texts, the pairs kept, and replays that show them firing."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import ToolResult, ToolResults, UserInput
from harpe_lab.presets import make_strategy
from harpe_lab.replay import replay
from harpe_lab.strategies.openhands import (
    MASKED,
    NO_EVENTS_SUMMARIZED,
    SUMMARIZE_SYSTEM,
    AmortizedForgetting,
    Condensed,
    LLMSummarizing,
    ObservationMasking,
    events_in,
    summarize_prompt,
    truncate_content,
)
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, image, reply, results, round_trip, tool_session, user
from tests._support.editing import (SYSTEM, assert_an_edit, assert_pairs_by_ids, check_replay, conversations, drive,
                                    real_params, round_numbers)

_SLOW = settings(max_examples=25, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Scripted:
    """A distiller (the test seam) that answers "S1", "S2", ... and keeps its requests."""

    def __init__(self, replies=None) -> None:
        self.requests: list = []
        self.replies = replies

    def __call__(self, rendered):
        self.requests.append(rendered)
        if self.replies is not None:
            return self.replies[len(self.requests) - 1]
        return f"S{len(self.requests)}"


class TestValidation:
    @pytest.mark.parametrize(("cls", "kwargs", "message"), [
        (AmortizedForgetting, {"max_size": 0}, "max_size must be an int >= 1, got 0"),
        (AmortizedForgetting, {"keep_first": -1}, "keep_first must be an int >= 0, got -1"),
        (AmortizedForgetting, {"max_size": 10, "keep_first": 5},
         r"keep_first \(5\) must be less than max_size // 2 \(5\) for max_size 10"),
        (AmortizedForgetting, {"max_size": 1, "keep_first": 0}, r"keep_first \(0\) must be less than"),
        (AmortizedForgetting, {"max_size": 2.0}, "max_size must be an int >= 1, got 2.0"),
        (LLMSummarizing, {"max_size": 10, "keep_first": 4},
         r"keep_first \(4\) must be less than max_size // 2 - 1 \(4\) for max_size 10"),
        (LLMSummarizing, {"max_event_length": -1}, "max_event_length must be an int >= 0, got -1"),
        (ObservationMasking, {"attention_window": 0}, "attention_window must be an int >= 1, got 0"),
        (ObservationMasking, {"attention_window": True}, "attention_window must be an int >= 1, got True"),
    ])
    def test_bad_values_are_shown(self, cls, kwargs, message):
        if cls is ObservationMasking or "attention_window" in kwargs:
            kwargs = {"attention_window": 5, **kwargs}
        with pytest.raises(StrategyError, match=message):
            cls(**kwargs)

    def test_openhands_config_defaults(self):
        assert AmortizedForgetting() == AmortizedForgetting(max_size=100, keep_first=1)
        assert LLMSummarizing() == LLMSummarizing(max_size=100, keep_first=1, max_event_length=10_000)
        assert make_strategy("openhands-masking")().policy == ObservationMasking(attention_window=100)

    @pytest.mark.parametrize("policy", [AmortizedForgetting(max_size=8, keep_first=2), LLMSummarizing(),
                                        ObservationMasking(attention_window=3)])
    def test_keyword_only_frozen_and_picklable(self, policy):
        with pytest.raises(TypeError):
            type(policy)(8)  # type: ignore[misc]
        with pytest.raises(AttributeError):
            policy.max_size = 3  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(policy)) == policy

    def test_summarizing_needs_a_distiller_and_forgetting_takes_none(self):
        with pytest.raises(StrategyError, match="LLMSummarizing needs distill="):
            LLMSummarizing().context(SYSTEM, distill=None)  # type: ignore[arg-type]
        from harpe_lab.strategies.openhands import CondenserContext

        with pytest.raises(StrategyError, match="takes no distill"):
            CondenserContext(SYSTEM, AmortizedForgetting(), distill=Scripted())


class TestEvents:
    def test_openhands_events_per_message(self):
        assert events_in([user("t")]) == 1
        assert events_in([reply("just text")]) == 1
        assert events_in([reply("", call("a"), call("b"), call("c"))]) == 3  # an action per call
        assert events_in([results(("a", "1"), ("b", "2"), ("c", "3"))]) == 3  # an observation per result
        assert events_in(tool_session(5)) == 11

    def test_truncate_content_is_openhands_middle_cut(self):
        marker = "\n[... Observation truncated due to length ...]\n"
        assert truncate_content("abcdefghij", 4) == "ab" + marker + "ij"
        assert truncate_content("abcdefghij", 5) == "ab" + marker + "ij"
        assert truncate_content("abcdefghij", 10) == "abcdefghij"
        assert truncate_content("abcdefghij", None) == "abcdefghij"
        assert truncate_content("abcdefghij", -1) == "abcdefghij"
        assert truncate_content("abc", 0) == marker


class TestAmortizedArithmetic:
    def test_at_max_size_nothing_is_forgotten(self):
        msgs = [*tool_session(4), reply("done")]  # 10 events
        assert AmortizedForgetting(max_size=10, keep_first=1)(msgs) == tuple(msgs)

    def test_keeps_keep_first_and_the_last_half_minus_keep_first(self):
        # 11 events > 10: head = 1 event (the task), tail = 10 // 2 - 1 = 4 events = rounds 4, 5
        msgs = tool_session(5)
        out = AmortizedForgetting(max_size=10, keep_first=1)(msgs)
        assert out == (msgs[0], *msgs[7:])
        assert events_in(out) == 10 // 2

    def test_a_pair_the_tail_starts_in_is_forgotten_whole(self):
        # 12 events: the naive tail (4 events) starts at round 4's results; round 4 goes too
        msgs = [*tool_session(5), reply("done")]
        out = AmortizedForgetting(max_size=10, keep_first=1)(msgs)
        assert out == (msgs[0], *msgs[9:])
        assert_pairs_by_ids(out)

    def test_a_pair_the_head_ends_in_is_kept_whole(self):
        # keep_first = 2 ends in round 1's results: the head keeps round 1
        msgs = tool_session(6)  # 13 events; tail = 12 // 2 - 2 = 4 events
        out = AmortizedForgetting(max_size=12, keep_first=2)(msgs)
        assert out == (*msgs[:3], *msgs[9:])

    def test_parallel_calls_are_one_unit_of_many_events(self):
        msgs = [user("t"), reply("", call("a"), call("b"), call("c")), results(("a", "1"), ("b", "2"), ("c", "3")),
                *round_trip("d", "4")]  # 1 + 6 + 2 = 9 events
        out = AmortizedForgetting(max_size=8, keep_first=1)(msgs)  # tail = 3 events: inside the big unit
        assert out == (msgs[0], *msgs[3:])

    def test_the_newest_unit_is_never_forgotten(self):
        msgs = [user("t"), *round_trip("a", "1"), reply("", *(call(f"p{j}") for j in range(6))),
                results(*((f"p{j}", "x") for j in range(6)))]  # 15 events, the last unit 12
        out = AmortizedForgetting(max_size=6, keep_first=0)(msgs)  # tail = 3 events
        assert out == tuple(msgs[3:])
        assert out[-1] is msgs[-1]

    def test_keep_first_zero_can_forget_the_task(self):
        msgs = tool_session(5)
        assert AmortizedForgetting(max_size=10, keep_first=0)(msgs) == tuple(msgs[7:])

    def test_rolling_builds_on_what_was_forgotten(self):
        ctx = AmortizedForgetting(max_size=10, keep_first=1).context(SYSTEM)
        seen: list = []
        ctx.subscribe(seen.append)
        sent = drive(ctx, tool_session(10))
        # 1 + 2r events: condensed at r = 5 (11 events) to the task and rounds 4, 5; then it
        # grows from there and is condensed again at r = 8 (rounds 4..8 = 11 events)
        assert [round_numbers(s) for s in sent] == [
            [], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4], [4, 5], [4, 5, 6], [4, 5, 6, 7], [7, 8], [7, 8, 9],
            [7, 8, 9, 10],
        ]
        assert all(s[0].text == "fix the bug" for s in sent)
        assert [e for e in seen if isinstance(e, Condensed)] == [Condensed(6, 6, 11, 5), Condensed(6, 6, 11, 5)]
        assert not any(type(e).__name__ == "ContextCompacted" for e in seen)  # no summary, nothing summarized

    def test_growth_is_not_a_compaction_and_a_condensation_is(self):
        ctx = AmortizedForgetting(max_size=10, keep_first=1).context(SYSTEM)
        msgs = tool_session(5)
        ctx.begin_turn(msgs[0])
        flags = [ctx.compact().compacted]
        for k in range(1, len(msgs), 2):
            ctx.append(msgs[k])
            ctx.append(msgs[k + 1])
            flags.append(ctx.compact().compacted)
        assert flags == [False, False, False, False, False, True]


class TestSummarizingArithmetic:
    def _run(self, rounds: int, **kw):
        distill = Scripted()
        ctx = LLMSummarizing(max_size=10, keep_first=1, **kw).context(SYSTEM, distill=distill)
        seen: list = []
        ctx.subscribe(seen.append)
        return drive(ctx, tool_session(rounds)), distill, seen

    def test_summary_after_the_head_and_the_previous_summary_folded_in(self):
        sent, distill, seen = self._run(9)
        # tail = 10 // 2 - 1 - 1 = 3 events. r = 5 (11 events): the naive tail starts at round
        # 4's results, so rounds 1-4 are summarized -> [task, S1, round 5] (4 events). Then
        # 4 + 2k events with the summary: r = 9 makes 12 > 10 -> rounds 5-8 into S2.
        assert [round_numbers(s) for s in sent] == [[], [1], [1, 2], [1, 2, 3], [1, 2, 3, 4], [5], [5, 6], [5, 6, 7],
                                              [5, 6, 7, 8], [9]]
        assert sent[5][1] == UserInput("S1") and sent[8][1] is sent[5][1]  # one stable summary message
        assert sent[9][:2] == (UserInput("fix the bug"), UserInput("S2"))
        assert [type(e).__name__ for e in seen if type(e).__name__ in ("Condensed", "ContextCompacted")] == [
            "Condensed", "ContextCompacted", "Condensed", "ContextCompacted"]
        assert [e.dropped_messages for e in seen if type(e).__name__ == "ContextCompacted"] == [8, 8]
        assert [e for e in seen if isinstance(e, Condensed)] == [Condensed(8, 8, 11, 4), Condensed(8, 8, 12, 4)]

    def test_the_distill_requests(self):
        _, distill, _ = self._run(9)
        first, second = distill.requests
        assert first.system == SUMMARIZE_SYSTEM and len(first.messages) == 1
        text = first.messages[0].text
        assert text.startswith(f"<PREVIOUS SUMMARY>\n{NO_EVENTS_SUMMARIZED}\n</PREVIOUS SUMMARY>\n\n\n<EVENT id=1>\n")
        assert text.endswith("</EVENT>\nNow summarize the events using the rules above.")
        # event ids are the transcript's: the task is 0, round k is 2k - 1 (action), 2k (observation)
        assert [int(x.split(">")[0]) for x in text.split("<EVENT id=")[1:]] == list(range(1, 9))
        assert "<EVENT id=2>\nOBSERVATION (ok):\nout 1\n</EVENT>" in text
        again = second.messages[0].text
        assert again.startswith("<PREVIOUS SUMMARY>\nS1\n</PREVIOUS SUMMARY>")
        assert [int(x.split(">")[0]) for x in again.split("<EVENT id=")[1:]] == list(range(9, 17))

    def test_summarize_prompt_text(self):
        prompt = summarize_prompt("prev", [(3, "ACTION bash:\n{}"), (4, "0123456789")], 6)
        assert prompt == (
            "<PREVIOUS SUMMARY>\nprev\n</PREVIOUS SUMMARY>\n\n\n"
            "<EVENT id=3>\nACT\n[... Observation truncated due to length ...]\n\n{}\n</EVENT>\n"
            "<EVENT id=4>\n012\n[... Observation truncated due to length ...]\n789\n</EVENT>\n"
            "Now summarize the events using the rules above."
        )

    def test_each_event_is_cut_to_max_event_length(self):
        msgs = [user("t"), *round_trip("c1", "x" * 500)] + [m for k in range(2, 7) for m in round_trip(f"c{k}", "y")]
        distill = Scripted()
        drive(LLMSummarizing(max_size=10, keep_first=1, max_event_length=40).context(SYSTEM, distill=distill), msgs)
        text = distill.requests[0].messages[0].text
        assert "x" * 500 not in text and "[... Observation truncated due to length ...]" in text

    def test_a_distiller_that_declines_leaves_the_view_and_is_asked_again(self):
        distill = Scripted([None, "later"])
        ctx = LLMSummarizing(max_size=10, keep_first=1).context(SYSTEM, distill=distill)
        sent = drive(ctx, tool_session(6))
        assert round_numbers(sent[5]) == [1, 2, 3, 4, 5]  # declined: sent as it is
        # 13 events: the naive tail (3 events) starts at round 5's results, so only round 6 is kept
        assert sent[6][1] == UserInput("later") and round_numbers(sent[6]) == [6]
        assert len(distill.requests) == 2

    def test_an_aborted_turn_undoes_its_condensation(self):
        distill = Scripted()
        ctx = LLMSummarizing(max_size=10, keep_first=1).context(SYSTEM, distill=distill)
        msgs = tool_session(4)
        drive(ctx, msgs)
        ctx.commit_turn()
        ctx.begin_turn(user("again"))
        for m in round_trip("c5", "z"):
            ctx.append(m)
        assert ctx.compact().rendered.messages[1] == UserInput("S1")
        ctx.abort_turn()
        assert ctx.summary_message is None
        assert ctx.render() == (*msgs, user("again"))  # the turn's input stays, its round and fold go
        ctx.begin_turn(user("third"))  # 11 events: condensed again, from scratch
        ctx.compact()
        assert distill.requests[1].messages[0].text.startswith(f"<PREVIOUS SUMMARY>\n{NO_EVENTS_SUMMARIZED}\n")


class TestObservationMasking:
    def test_openhands_arithmetic(self):
        # events: task 0, c1 1, o1 2, c2 3, o2 4, c3 5, o3 6; masked: i < 7 - window
        msgs = tool_session(3)
        masked = {w: [k for k, m in enumerate(ObservationMasking(attention_window=w)(msgs))
                      if isinstance(m, ToolResults) and m.results[0].content == MASKED] for w in range(1, 8)}
        assert masked == {1: [2, 4], 2: [2, 4], 3: [2], 4: [2], 5: [], 6: [], 7: []}

    def test_the_exact_placeholder_keeps_id_and_success(self):
        msgs = [user("t"), reply("", call("a")), ToolResults((ToolResult("a", "boom", (image(),), False),)),
                *round_trip("b", "y")]
        out = ObservationMasking(attention_window=1)(msgs)
        assert out[2] == ToolResults((ToolResult("a", "<MASKED>", (), False),))
        assert MASKED == "<MASKED>"

    def test_a_round_can_be_masked_in_part(self):
        msgs = [user("t"), reply("", call("a"), call("b")), results(("a", "1"), ("b", "2"))]  # events 0..4
        out = ObservationMasking(attention_window=1)(msgs)
        assert [r.content for r in out[2].results] == [MASKED, "2"]

    def test_user_inputs_and_replies_are_never_masked(self):
        msgs = [*tool_session(3), reply("done"), user("next"), *round_trip("d", "z")]
        out = ObservationMasking(attention_window=1)(msgs)
        assert_an_edit(msgs, out)
        assert all(o is m for o, m in zip(out, msgs) if not isinstance(m, ToolResults))
        assert out[-1] is msgs[-1]

    def test_bundled_coding_agent_masks_at_every_request(self):
        policy = ObservationMasking(attention_window=20)
        edited, full = check_replay(datasets.load("coding_agent"), lambda: policy.context(SYSTEM), policy,
                                    counter=BytesCounter())
        assert edited.requests.input_tokens.iloc[-1] < full.requests.input_tokens.iloc[-1]


def _condensations(rp) -> list:
    return [e for e in rp.events if e.kind == "Condensed"]


class TestReplays:
    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_amortized_forgetting_fires_on_bundled_conversations(self, name):
        condenser = AmortizedForgetting(max_size=20, keep_first=1)
        rp = replay(datasets.load(name), lambda: condenser.context(SYSTEM), counter=BytesCounter())
        assert _condensations(rp)
        for ev in _condensations(rp):
            c = ev.event
            assert c.events_after == c.events_before - c.forgotten_events
            assert events_in(rp.rendered(ev.request).messages) == c.events_after
        for i in range(len(rp)):
            assert condenser.cut(rp.rendered(i).messages) is None
            assert_pairs_by_ids(rp.rendered(i).messages)

    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_llm_summarizing_fires_on_bundled_conversations(self, name):
        from harpe_lab.summarize import ExtractiveDistiller

        condenser = LLMSummarizing(max_size=20, keep_first=1)
        rp = replay(datasets.load(name), lambda: condenser.context(SYSTEM, distill=ExtractiveDistiller()),
                    counter=BytesCounter())
        folds = _condensations(rp)
        assert folds and int(rp.requests.summarized.sum()) >= 1
        assert int(rp.requests.distill_calls.sum()) == len(folds)
        for k, ev in enumerate(folds):
            sent = rp.rendered(ev.request).messages
            assert events_in(sent) == ev.event.events_after
            assert isinstance(sent[1], UserInput) and sent[1].text  # the summary, right after the task
            # the first summary adds an event; later ones replace the previous summary
            assert ev.event.events_after == ev.event.events_before - ev.event.forgotten_events + (k == 0)
        for i in range(len(rp)):
            assert_pairs_by_ids(rp.rendered(i).messages)

    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_observation_masking_on_bundled_conversations(self, name):
        policy = ObservationMasking(attention_window=6)
        check_replay(datasets.load(name), lambda: policy.context(SYSTEM), policy, counter=BytesCounter())


class TestProperties:
    @_SLOW
    @given(conversations(max_turns=4, max_rounds=8), st.integers(6, 30), st.integers(0, 3))
    def test_amortized_requests_are_condensed_valid_and_end_with_the_newest(self, convo, max_size, keep_first):
        keep_first = min(keep_first, max_size // 2 - 1)
        condenser = AmortizedForgetting(max_size=max_size, keep_first=keep_first)
        rp = replay(convo, lambda: condenser.context(SYSTEM), counter=BytesCounter())
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]
            assert condenser.cut(sent) is None

    @_SLOW
    @given(conversations(max_turns=4, max_rounds=8), st.integers(6, 30), st.integers(0, 2))
    def test_summarizing_requests_are_condensed_valid_and_end_with_the_newest(self, convo, max_size, keep_first):
        keep_first = min(keep_first, max_size // 2 - 2)
        condenser = LLMSummarizing(max_size=max_size, keep_first=keep_first)
        contexts = []

        def make():
            contexts.append(condenser.context(SYSTEM, distill=Scripted()))
            return contexts[-1]

        rp = replay(convo, make, counter=BytesCounter())
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]
            made_up = [m for m in sent if isinstance(m, UserInput) and m.text.startswith("S") and m.text[1:].isdigit()]
            assert len(made_up) <= 1
            originals = [m for m in sent if not any(m is s for s in made_up)]
            assert condenser.cut(originals, summary=bool(made_up)) is None

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(1, 12))
    def test_masking_is_an_edit_keeps_the_window_and_is_idempotent(self, convo, window):
        msgs = list(convo.messages())
        policy = ObservationMasking(attention_window=window)
        out = policy(msgs)
        assert_an_edit(msgs, out)
        assert_pairs_by_ids(out)
        if msgs:  # the last event is in every window: the newest message's last part is verbatim
            last = msgs[-1]
            assert out[-1].results[-1] is last.results[-1] if isinstance(last, ToolResults) else out[-1] is last
        assert policy(out) == out

    @_SLOW
    @given(conversations(max_turns=3), st.integers(1, 8))
    def test_masking_replays_are_the_policy_applied_to_the_history(self, convo, window):
        policy = ObservationMasking(attention_window=window)
        # a small window masks the older results of the newest round too (its last one stays,
        # see above): the newest message may be a stand-in
        check_replay(convo, lambda: policy.context(SYSTEM), policy, counter=BytesCounter(), newest=False)


_REAL = "claude_code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl"


@pytest.mark.real_data
class TestRealSessions:
    @pytest.mark.parametrize("path", real_params(_REAL, 1) + real_params("claude_code/258c7280*.jsonl", 1))
    @pytest.mark.parametrize("preset", ["openhands-amortized", "openhands-summarizing"])
    def test_the_rolling_condensers_fire_at_openhands_defaults(self, real_data, path, preset):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no real sessions")
        convo = load_any(path)
        counter = BytesCounter()
        rp = replay(convo, make_strategy(preset), counter=counter)
        events = events_in(convo.messages())
        folds = _condensations(rp)
        if events <= 100:
            assert not folds
            return
        assert folds
        for ev in folds:
            assert ev.event.events_before > 100
            assert ev.event.events_after <= 100 // 2
            assert events_in(rp.rendered(ev.request).messages) == ev.event.events_after
        for i in range(len(rp)):
            assert_pairs_by_ids(rp.rendered(i).messages)
        full = replay(convo, make_strategy("full"), counter=counter)
        assert rp.requests.input_tokens.iloc[-1] < full.requests.input_tokens.iloc[-1]
        if preset == "openhands-summarizing":
            assert int(rp.requests.summarized.sum()) == len(folds)

    @pytest.mark.parametrize("path", real_params(_REAL, 1))
    def test_masking_at_openhands_default(self, real_data, path):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no real sessions")
        policy = ObservationMasking(attention_window=100)
        edited, full = check_replay(load_any(path), lambda: policy.context(SYSTEM), policy, counter=BytesCounter())
        last = edited.rendered(len(edited) - 1).messages
        assert sum(r.content == MASKED for m in last if isinstance(m, ToolResults) for r in m.results) > 0
        assert edited.requests.input_tokens.max() < full.requests.input_tokens.max()
