"""The providers' own context management (``harpe_lab.strategies.providers``): the Anthropic
SDK tool runner's compaction and OpenAI Realtime's retention ratio, replayed natively."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import Rendered, ToolResults, Usage, UserInput
from harpe_lab.presets import PRESETS
from harpe_lab.protocol import ContextCompacted, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies import providers
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations
from tests.strategies._agents import (COUNTER, PROPERTY, REAL, Distiller, _after_clean_history, _bundled_replays,
                                      _events, _names, _previous_usage, _real_conversation, _replay, _request_text)


class Flat:
    """A counter that prices every message at 10 tokens and an empty request at 3."""

    def count_message(self, message) -> int:
        return 10

    def count_rendered(self, rendered, tools=()) -> int:
        return 3 + 10 * len(rendered.messages)


class TestAnthropicSdkCompaction:
    def test_bad_values_and_defaults(self):
        with pytest.raises(StrategyError, match="threshold must be an int >= 1, got 0"):
            providers.ToolRunnerCompaction(threshold=0)
        c = providers.ToolRunnerCompaction()
        assert c.threshold == 100_000 and pickle.loads(pickle.dumps(c)) == c
        assert c.context(SYSTEM, distill=Distiller()).limit == Limit(tokens=100_000, kind="high_water")
        preset = PRESETS["anthropic-sdk-compaction"]
        assert preset.family == "anthropic" and preset.build(system=SYSTEM, high_water=6_000)().limit.tokens == 6_000
        assert providers.summary_message("x") == "<summary>\nx\n</summary>"
        assert providers.summary_message("<summary>y</summary>") == "<summary>y</summary>"
        assert providers.summary_message("as said in <summary>") == "<summary>\nas said in <summary>\n</summary>"

    def test_the_response_that_crosses_is_discarded_and_the_rest_summarized(self):
        events: list = []
        distill = Distiller("done so far")
        ctx = providers.ToolRunnerCompaction(threshold=1_000).context(SYSTEM, distill=distill, on_event=events.append)
        ctx.begin_turn(user("go"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=500, output_tokens=499))  # 999
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "first output")))
        assert not ctx.compact().compacted
        ctx.observe(Usage(input_tokens=990, output_tokens=10))  # 1,000: at the threshold
        ctx.append(reply("", call("c2")))
        ctx.append(results(("c2", "second output")))
        out = ctx.compact()
        assert out.compacted and out.rendered.messages == (UserInput("<summary>\ndone so far\n</summary>"),)
        text = _request_text(distill.requests[0])
        assert "first output" in text and "second output" not in text  # never run, never seen
        assert distill.requests[0].system == providers.SUMMARY_PROMPT
        assert events == [providers.RunnerCompacted(1_000, 1_000, 2), ContextCompacted(5)]
        # at a turn's start the new input follows the summary; the answer that crossed goes
        ctx.observe(Usage(input_tokens=2_000))
        ctx.append(reply("answer"))
        ctx.commit_turn()
        new = user("next")
        ctx.begin_turn(new)
        out = ctx.compact()
        assert out.rendered.messages[1:] == (new,) and out.rendered.messages[1] is new
        assert events[-2] == providers.RunnerCompacted(2_000, 1_000, 1)

    @PROPERTY
    @given(conversations(), st.integers(20, 2_000))
    def test_generated_conversations(self, convo, threshold):
        config = providers.ToolRunnerCompaction(threshold=threshold)
        rp = replay(convo, lambda: config.context(SYSTEM, distill=ExtractiveDistiller(max_chars=300)),
                    counter=COUNTER, name="anthropic-sdk-compaction")
        frame = rp.requests
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            if _after_clean_history(convo, frame, i):
                assert bool(frame.summarized[i]) == (_previous_usage(frame, i) >= threshold), i
            if frame.summarized[i]:
                assert sent[0].text.startswith("<summary>\n")
                # mid-turn the summary alone; at a turn's start the inputs since the last reply
                # follow it (an aborted turn leaves its input)
                assert len(sent) == 1 if int(frame.step[i]) else (
                    len(sent) >= 2 and all(isinstance(m, UserInput) for m in sent[1:])
                    and rp.sent_ids(i)[-1] == rp.available_ids(i)[-1])
            else:
                assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]

    def test_bundled_datasets(self):
        _bundled_replays("anthropic-sdk-compaction")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_fires_at_a_hundred_thousand(self, real_data, path):
        conv = _real_conversation(path)
        rp = _replay(conv, "anthropic-sdk-compaction", counter=TiktokenCounter())
        frame = rp.requests
        fired = _events(rp, "RunnerCompacted")
        assert fired
        first = next(i for i in range(1, len(rp)) if _previous_usage(frame, i) >= 100_000)
        assert fired[0].request == first and fired[0].event.tokens == _previous_usage(frame, first)
        assert rp.rendered(first).messages == (UserInput(providers.summary_message(rp.summary(first))),)


class TestRetentionRatio:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"limit": 0}, "limit must be an int >= 1, got 0"),
        ({"limit": 10, "ratio": 1.5}, r"ratio must be a fraction in \[0, 1\], got 1.5"),
        ({"limit": 10, "ratio": True}, r"ratio must be a fraction in \[0, 1\], got True"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            providers.RetentionRatio(**kwargs)

    def test_defaults_and_the_preset(self):
        assert providers.RetentionRatio(limit=10).ratio == 0.8
        ctx = providers.RetentionRatio(limit=50).context(SYSTEM, counter=Flat())
        assert ctx.limit == Limit(tokens=53, kind="target")  # the messages' limit and the empty request's 3
        preset = PRESETS["retention-ratio"]
        assert preset.family == "openai-realtime" and preset.budget_knob.name == "budget"
        counter = TiktokenCounter()
        assert preset.build(system=SYSTEM, counter=counter, budget=6_000)().limit == Limit(tokens=6_000, kind="target")
        with pytest.raises(StrategyError, match="budget 5 tokens leaves no room for messages"):
            preset.build(system=SYSTEM, counter=counter, budget=5)

    @pytest.mark.parametrize(("limit", "ratio", "kept"), [
        (50, 0.8, ["a:c2", "r:c2", "a:c3", "r:c3"]),  # 70 > 50: down to 40
        (55, 0.3, ["a:c3", "r:c3"]),  # down to 16.5 would drop the newest call: it stops there, at 20
        (50, 0.75, ["a:c3", "r:c3"]),  # down to 37.5 stops on c2's result: it goes with its call
    ])
    def test_the_oldest_go_until_the_ratio_of_the_limit(self, limit, ratio, kept):
        events: list = []
        ctx = providers.RetentionRatio(limit=limit, ratio=ratio).context(SYSTEM, counter=Flat(),
                                                                          on_event=events.append)
        ctx.begin_turn(user("task"))
        outs = [ctx.compact()]
        for k in (1, 2, 3):
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "o")))
            outs.append(ctx.compact())
        assert not any(o.compacted for o in outs[:3])
        assert outs[3].compacted and _names(outs[3].rendered.messages) == kept
        assert events == [providers.Truncated(7 - len(kept), 70, 10 * len(kept))]
        # dropped stays dropped: the next request extends this one
        ctx.append(reply("done"))
        ctx.commit_turn()
        ctx.begin_turn(user("more"))
        nxt = ctx.compact()
        assert nxt.rendered.messages[: len(kept)] == outs[3].rendered.messages[: len(kept)] or nxt.compacted

    def test_the_newest_message_and_its_call_stay_even_alone_over_the_limit(self):
        ctx = providers.RetentionRatio(limit=5).context(SYSTEM, counter=Flat())
        ctx.begin_turn(user("task"))
        assert _names(ctx.compact().rendered.messages) == ["task"]
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "o")))
        assert _names(ctx.compact().rendered.messages) == ["a:c1", "r:c1"]

    @PROPERTY
    @given(conversations(), st.integers(10, 2_000), st.integers(0, 100))
    def test_generated_conversations(self, convo, limit, percent):
        config = providers.RetentionRatio(limit=limit, ratio=percent / 100)
        rp = replay(convo, lambda: config.context(SYSTEM, counter=COUNTER), counter=COUNTER, name="retention-ratio")
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            ids, available = rp.sent_ids(i), rp.available_ids(i)
            assert len(ids) == len(sent) and ids == available[len(available) - len(ids):]  # the newest, verbatim
            tokens = sum(COUNTER.count_message(m) for m in sent)
            newest_unit = 2 if isinstance(sent[-1], ToolResults) else 1
            assert tokens <= limit or len(sent) == newest_unit, i

    def test_bundled_datasets(self):
        _bundled_replays("retention-ratio")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_truncates_at_the_limit(self, real_data, path):
        conv = _real_conversation(path)
        counter = TiktokenCounter()
        rp = _replay(conv, "retention-ratio", counter=counter, budget=60_000)
        full = replay(conv, lambda: FullContext(conv.system), counter=counter)
        cuts = _events(rp, "Truncated")
        limit = rp.limit.tokens - (counter.count_rendered(Rendered(conv.system, ())))
        assert cuts and rp.limit.tokens == 60_000
        first = next(i for i in range(len(full)) if full.requests.input_tokens[i] > 60_000)
        assert cuts[0].request == first
        for e in cuts:
            assert e.event.tokens_before > limit and e.event.tokens_after <= 0.8 * limit
        assert (rp.requests.input_tokens <= 60_000).all()
