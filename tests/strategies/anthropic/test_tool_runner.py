"""The Anthropic SDK tool runner's compaction (``harpe_lab.strategies.anthropic.tool_runner``),
replayed natively."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import Usage, UserInput
from harpe_lab.presets import PRESETS
from harpe_lab.protocol import ContextCompacted, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.anthropic import tool_runner
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations
from tests.strategies._agents import (COUNTER, PROPERTY, REAL, Distiller, _after_clean_history, _bundled_replays,
                                      _events, _previous_usage, _real_conversation, _replay, _request_text)


class TestAnthropicSdkCompaction:
    def test_bad_values_and_defaults(self):
        with pytest.raises(StrategyError, match="threshold must be an int >= 1, got 0"):
            tool_runner.ToolRunnerCompaction(threshold=0)
        c = tool_runner.ToolRunnerCompaction()
        assert c.threshold == 100_000 and pickle.loads(pickle.dumps(c)) == c
        assert c.context(SYSTEM, distill=Distiller()).limit == Limit(tokens=100_000, kind="high_water")
        preset = PRESETS["anthropic-sdk-compaction"]
        assert preset.family == "anthropic" and preset.build(system=SYSTEM, high_water=6_000)().limit.tokens == 6_000
        assert tool_runner.summary_message("x") == "<summary>\nx\n</summary>"
        assert tool_runner.summary_message("<summary>y</summary>") == "<summary>y</summary>"
        assert tool_runner.summary_message("as said in <summary>") == "<summary>\nas said in <summary>\n</summary>"

    def test_the_response_that_crosses_is_discarded_and_the_rest_summarized(self):
        events: list = []
        distill = Distiller("done so far")
        ctx = tool_runner.ToolRunnerCompaction(threshold=1_000).context(SYSTEM, distill=distill, on_event=events.append)
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
        assert distill.requests[0].system == tool_runner.SUMMARY_PROMPT
        assert events == [tool_runner.RunnerCompacted(1_000, 1_000, 2), ContextCompacted(5)]
        # at a turn's start the new input follows the summary; the answer that crossed goes
        ctx.observe(Usage(input_tokens=2_000))
        ctx.append(reply("answer"))
        ctx.commit_turn()
        new = user("next")
        ctx.begin_turn(new)
        out = ctx.compact()
        assert out.rendered.messages[1:] == (new,) and out.rendered.messages[1] is new
        assert events[-2] == tool_runner.RunnerCompacted(2_000, 1_000, 1)

    @PROPERTY
    @given(conversations(), st.integers(20, 2_000))
    def test_generated_conversations(self, convo, threshold):
        config = tool_runner.ToolRunnerCompaction(threshold=threshold)
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
        assert rp.rendered(first).messages == (UserInput(tool_runner.summary_message(rp.summary(first))),)
