"""The shortcuts the Aider strategy takes for speed give what the plain computations give: each
message written as ``json.dumps`` writes it, on generated text rich in what JSON escapes, and the
history's weight kept as it goes is what recomputing it each time gives."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.messages import ToolResults
from harpe_lab.replay import replay
from harpe_lab.strategies import aider
from harpe_lab.tokens import TiktokenCounter
from tests._support.editing import SYSTEM, conversations
from tests.strategies._agents import EXAMPLES, LONG, REPLAYS, TEXT


def _weighed(rp) -> list:
    """What each summary that landed says the history weighed."""
    return [(e.request, e.event) for e in rp.events if isinstance(e.event, aider.AiderSummarized)]


class TestAiderWeights:
    @EXAMPLES
    @given(st.sampled_from(["user", "assistant"]), LONG)
    def test_a_message_is_written_as_json_dumps_writes_it(self, role, content):
        message = {"role": role, "content": content}
        assert aider._json_message(message) == json.dumps(message)

    @EXAMPLES
    @given(st.dictionaries(TEXT, TEXT, max_size=4))
    def test_any_dict_of_strings(self, message):
        assert aider._json_message(message) == json.dumps(message)

    def test_other_dicts_go_to_json_dumps(self):
        for message in ({"role": "user", "content": 3}, {"role": "user", "content": None}, {1: "x"}):
            assert aider._json_message(message) == json.dumps(message)

    @REPLAYS
    @given(conversations(), st.integers(20, 400))
    def test_the_kept_weight_is_the_historys(self, convo, budget):
        counter = TiktokenCounter("cl100k_base")
        ctx = aider.Aider(history_tokens=budget).context(SYSTEM, counter=counter, distill=lambda r: "the summary")
        for turn in convo.turns:
            ctx.begin_turn(turn.input)
            ctx.compact()
            for m in turn.all_messages[1:]:
                ctx.append(m)
                if isinstance(m, ToolResults):
                    ctx.compact()
            ctx.commit_turn()
            plain = sum(int(counter.count(json.dumps(d))) for d, _ in ctx._done)
            assert ctx.history_tokens == plain

    @REPLAYS
    @given(conversations(), st.integers(20, 400))
    def test_requests_are_as_with_json_dumps(self, convo, budget):
        counter = TiktokenCounter("cl100k_base")
        config = aider.Aider(history_tokens=budget)
        make = lambda: config.context(SYSTEM, counter=counter, distill=lambda rendered: "the summary")  # noqa: E731
        fast = replay(convo, make, counter=counter)
        written = aider._json_message
        aider._json_message = json.dumps
        try:
            plain = replay(convo, make, counter=counter)
        finally:
            aider._json_message = written
        assert fast.requests.equals(plain.requests)
        assert _weighed(fast) == _weighed(plain)

    def test_a_summary_joined_as_one_string(self):
        messages = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b\n"},
                    {"role": "system", "content": "skipped"}, {"role": "user", "content": ""}]
        asked: list = []
        aider._summarize_all(messages, lambda m: asked.append(m) or "s")
        assert asked[0][1]["content"] == "# USER\na\n# ASSISTANT\nb\n# USER\n"
