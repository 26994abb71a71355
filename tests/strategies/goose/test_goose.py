"""Goose's context management (``harpe_lab.strategies.goose``), replayed natively: its
configuration, cases computed by hand from Goose's source, generated conversations, and one
real Claude Code session."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, Attachment, Usage, UserInput
from harpe_lab.presets import PRESETS
from harpe_lab.protocol import ContextCompacted, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies import goose
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations
from tests.strategies._agents import (COUNTER, PROPERTY, REAL, Distiller, _after_clean_history, _answered,
                                      _bundled_replays, _events, _previous_usage, _real_conversation, _replay,
                                      _request_text)


def _goose(window: int = 1_000, distill=None, pair_distill=None, events=None, **config):
    c = goose.ContextManagement(window=window, **config)
    return c.context(SYSTEM, distill=distill or Distiller(), pair_distill=pair_distill or Distiller("line"),
                     on_event=events)


def _rounds(ctx, *call_ids: str, usage: int = 10) -> list:
    """One model call per id (a reply with that call and its result), each followed by a compact."""
    out = []
    for k in call_ids:
        ctx.observe(Usage(input_tokens=usage))
        ctx.append(reply("", call(k)))
        ctx.append(results((k, f"out {k}")))
        out.append(ctx.compact())
    return out


class TestGoose:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"threshold": 0}, r"threshold must be a fraction in \(0, 1\), got 0"),
        ({"threshold": 1.0}, r"threshold must be a fraction in \(0, 1\), got 1.0"),
        ({"tool_pairs": "yes"}, "tool_pairs must be a bool, got 'yes'"),
        ({"cutoff": -1}, "cutoff must be an int >= 0, got -1"),
        ({"batch": 0}, "batch must be an int >= 1, got 0"),
        ({"window": 1, "threshold": 0.5}, "threshold × window must be at least 1 token"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            goose.ContextManagement(**kwargs)

    def test_the_cutoff_and_batch_are_gooses(self):
        # the cases of Goose's own test_compute_tool_call_cutoff_scales_with_context
        assert goose.tool_call_cutoff(128_000, None) == 12
        assert goose.tool_call_cutoff(200_000, None) == 20
        assert goose.tool_call_cutoff(1_000_000, None) == 100
        assert goose.tool_call_cutoff(50_000, None) == 10
        assert goose.tool_call_cutoff(10_000_000, None) == 500
        assert goose.tool_call_cutoff(200_000, 0.3) == 10
        assert goose.tool_call_cutoff(1_000_000, 0.5) == 50
        assert goose.tool_call_cutoff(200_000, 0.8) == 16
        c = goose.ContextManagement()
        assert (c.window, c.threshold, c.threshold_tokens, c.cutoff_calls, c.batch_size) == (128_000, 0.8, 102_400,
                                                                                                10, 3)
        assert goose.ContextManagement(window=1_000_000).batch_size == 16  # cutoff 80, a fifth
        assert goose.ContextManagement(window=200_000).batch_size == 3  # cutoff 16: max(3, 3)
        assert pickle.loads(pickle.dumps(c)) == c

    def test_the_preset(self):
        preset = PRESETS["goose"]
        assert preset.family == "goose" and preset.budget_knob.name == "high_water"
        assert preset.build(system=SYSTEM)().limit == Limit(tokens=102_400, kind="high_water")
        ctx = preset.build(system=SYSTEM, high_water=160_000, window=200_000)()
        assert ctx.limit.tokens == 160_000 and ctx.config.cutoff_calls == 16
        with pytest.raises(StrategyError, match="high_water must be below window .128,000., got 128,000"):
            preset.build(system=SYSTEM, high_water=128_000)

    def test_the_preset_gives_a_recorded_distiller_one_copy_for_both_kinds_of_summary(self):
        from harpe_lab.summarize import RecordedDistiller

        # 100,000 × 0.8 / 10,000 = 8, clamped to 10 calls kept: the 11th makes c1 go, then the turn compacts
        ctx = PRESETS["goose"].build(system=SYSTEM, distill=RecordedDistiller(["pair", "whole"]),
                                     high_water=80_000, window=100_000)()
        ctx.begin_turn(user("one"))
        ctx.compact()
        _rounds(ctx, *(f"c{k}" for k in range(1, 12)))
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("a"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        ctx.compact()  # c1 chosen
        ctx.observe(Usage(input_tokens=90_000))
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))  # c1's line lands, from the first recorded summary
        assert UserInput("[Historical tool call summary] pair") in ctx.transcript
        assert ctx.compact().rendered.messages[0] == UserInput("whole")  # and the compaction gets the second

    def test_a_turn_that_starts_above_the_threshold_compacts_everything(self):
        events: list = []
        distill = Distiller("the summary")
        ctx = _goose(1_000, distill, events=events.append, tool_pairs=False)
        _answered(ctx, "one", "a", usage=790)
        ctx.begin_turn(user("two"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=790, output_tokens=10))  # 800: not above 80%
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))
        assert not ctx.compact().compacted
        # mid-turn usage above the threshold changes nothing: Goose checks when a turn starts
        _rounds(ctx, "c1", usage=5_000)
        ctx.observe(Usage(input_tokens=790, output_tokens=11))
        ctx.append(reply("c"))
        ctx.commit_turn()
        four = user("four")
        ctx.begin_turn(four)
        out = ctx.compact()
        assert out.compacted and out.rendered.messages == (
            UserInput("the summary"), AssistantMessage(goose.CONVERSATION_CONTINUATION_TEXT), four)
        assert out.rendered.messages[-1] is four
        assert "four" in _request_text(distill.requests[0])  # everything visible, the new input too
        assert events == [goose.ThresholdCompacted(801, 800), ContextCompacted(8)]  # 9 messages, the input kept
        # an input with attachments comes back as its text only
        pic = UserInput("look", (Attachment("a.png", 1, "image/png", "/a.png"),))
        ctx.observe(Usage(input_tokens=900))
        ctx.append(reply("d"))
        ctx.commit_turn()
        ctx.begin_turn(pic)
        assert ctx.compact().rendered.messages[-1] == UserInput("look")

    def test_the_oldest_tool_calls_past_the_cutoff_become_one_line_each(self):
        events: list = []
        pairs = Distiller("read the file", "[Historical tool call summary] listed it", "ran it")
        ctx = _goose(10**9, pair_distill=pairs, events=events.append, cutoff=2, batch=2)
        ctx.begin_turn(user("one"))
        ctx.compact()
        during = _rounds(ctx, "c1", "c2", "c3", "c4", "c5")
        assert not any(o.compacted for o in during)  # the current turn's calls are protected
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("a"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        assert not ctx.compact().compacted  # 5 visible, 0 this turn: the oldest 2 chosen, summarized when answered
        first, second, third = _rounds(ctx, "c6", "c7", "c8")
        ids = lambda out: [c.id for m in out.rendered.messages if isinstance(m, AssistantMessage) for c in m.calls]  # noqa: E731
        assert ids(first) == ["c3", "c4", "c5", "c6"]
        assert first.rendered.messages[-2:] == (UserInput("[Historical tool call summary] read the file"),
                                                UserInput("[Historical tool call summary] listed it"))
        assert first.compacted and first.edits is None
        # then 4 visible, 1 this turn: 3 > 2, one more
        assert ids(second) == ["c4", "c5", "c6", "c7"]
        assert second.rendered.messages[-1] == UserInput("[Historical tool call summary] ran it")
        assert ids(third) == ["c4", "c5", "c6", "c7", "c8"] and not third.compacted  # 2 eligible: at the cutoff
        assert [e for e in events if isinstance(e, goose.ToolPairsSummarized)] == [
            goose.ToolPairsSummarized(2, 4), goose.ToolPairsSummarized(1, 2)]
        assert ctx.visible_calls == 5
        assert "out c1" in _request_text(pairs.requests[0]) and "out c2" not in _request_text(pairs.requests[0])

    def test_a_round_of_parallel_calls_goes_whole_and_a_failed_summary_keeps_its_pair(self):
        ctx = _goose(10**9, pair_distill=Distiller(None, "second"), cutoff=1, batch=1)
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("p1"), call("p2")))
        ctx.append(results(("p1", "a"), ("p2", "b")))
        ctx.compact()
        _rounds(ctx, "c3")
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("done"))
        ctx.commit_turn()
        _answered(ctx, "two", "ok")  # p1 chosen when it starts; its summary fails: the pair stays
        assert ctx.visible_calls == 3
        ctx.begin_turn(user("three"))
        ctx.compact()  # p1 chosen again
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("fine"))
        ctx.commit_turn()
        assert ctx.visible_calls == 3
        ctx.begin_turn(user("four"))  # the final answer's call: its summary lands after it, before this input
        assert ctx.visible_calls == 1  # p1's summary hid its whole round, p2 with it
        kinds = [type(m).__name__ for m in ctx.transcript]
        assert kinds == ["UserInput", "AssistantMessage", "ToolResults", "AssistantMessage", "UserInput",
                         "AssistantMessage", "UserInput", "AssistantMessage", "UserInput", "UserInput"]
        assert ctx.transcript[-2:] == (UserInput("[Historical tool call summary] second"), user("four"))

    def test_an_aborted_turn_drops_its_plan(self):
        ctx = _goose(10**9, cutoff=0, batch=5)
        ctx.begin_turn(user("one"))
        ctx.compact()
        _rounds(ctx, "c1")
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("a"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        ctx.compact()  # c1 chosen
        ctx.abort_turn()
        assert ctx.visible_calls == 1
        ctx.begin_turn(user("three"))
        out = ctx.compact()  # chosen again, not applied yet: c1's round is still sent
        assert out.rendered.messages[1] == reply("", call("c1")) and ctx.visible_calls == 1

    @PROPERTY
    @given(conversations(), st.integers(20, 2_000), st.integers(0, 4), st.integers(1, 3))
    def test_generated_conversations(self, convo, threshold, cutoff, batch):
        config = goose.ContextManagement(window=10 * threshold, threshold=0.1, cutoff=cutoff, batch=batch)
        rp = replay(convo, lambda: config.context(SYSTEM, distill=ExtractiveDistiller(max_chars=300)),
                    counter=COUNTER, name="goose")
        frame = rp.requests
        compacted = {e.request for e in _events(rp, "ThresholdCompacted")}
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert rp.available_ids(i)[-1] in rp.sent_ids(i)  # the newest message is sent
            if _after_clean_history(convo, frame, i) and int(frame.step[i]) == 0:
                assert (i in compacted) == (_previous_usage(frame, i) > threshold), i
            if i in compacted:
                assert int(frame.step[i]) == 0 and sent[1] == AssistantMessage(goose.CONVERSATION_CONTINUATION_TEXT)
        for e in _events(rp, "ToolPairsSummarized"):
            if e.request in compacted:
                continue  # the lines landed before the turn's input, then everything was compacted
            sent = rp.rendered(e.request).messages
            # appended after what the answered call added: before the input at a turn's start
            end = len(sent) - (int(frame.step[e.request]) == 0)
            lines = sent[end - e.event.calls: end]
            assert all(isinstance(m, UserInput) and m.text.startswith(goose.PAIR_SUMMARY_PREFIX) for m in lines)

    @PROPERTY
    @given(conversations(max_turns=8), st.integers(0, 4), st.integers(1, 3))
    def test_a_plan_starts_where_no_older_message_holds_a_call(self, convo, cutoff, batch):
        """The plan skips the transcript's opening without calls (`_no_calls_before`), as
        Goose's walk from the start would: the same requests with the place held at 0."""

        class FromTheStart(goose.ContextManagementContext):
            _no_calls_before = property(lambda self: 0, lambda self, value: None)

        config = goose.ContextManagement(window=100_000, cutoff=cutoff, batch=batch)
        made = {cls: replay(convo, lambda cls=cls: cls(SYSTEM, config, distill=Distiller()), counter=COUNTER,
                            name="goose") for cls in (goose.ContextManagementContext, FromTheStart)}
        ours, walked = made.values()
        assert ours.requests.equals(walked.requests)
        assert [ours.rendered(i) for i in range(len(ours))] == [walked.rendered(i) for i in range(len(walked))]

    def test_bundled_datasets(self):
        _bundled_replays("goose")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_fires_where_goose_would(self, real_data, path):
        conv = _real_conversation(path)
        rp = _replay(conv, "goose", counter=TiktokenCounter())
        frame = rp.requests
        (compaction,) = _events(rp, "ThresholdCompacted")
        turn2 = rp.turn_requests(2)[0]
        assert compaction.request == turn2 and _previous_usage(frame, turn2) > 102_400
        assert all(_previous_usage(frame, rp.turn_requests(t)[0]) <= 102_400 for t in (1,))
        # the first turn's calls become eligible when the second starts; past the cutoff of 10,
        # the oldest 3 (a batch) are summarized when that turn's first call is answered
        first_turn_calls = sum(len(m.calls) for m in conv.turns[0].messages if isinstance(m, AssistantMessage))
        pairs = _events(rp, "ToolPairsSummarized")
        assert first_turn_calls > 10 and pairs[0].request == rp.turn_requests(1)[1]
        assert pairs[0].event.calls == min(3, first_turn_calls - 10)
