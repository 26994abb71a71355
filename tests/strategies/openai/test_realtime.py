"""OpenAI Realtime's retention-ratio truncation (``harpe_lab.strategies.openai.realtime``),
replayed natively."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import Rendered, ToolResults
from harpe_lab.presets import PRESETS
from harpe_lab.protocol import Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.openai import realtime
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, conversations
from tests.strategies._agents import (COUNTER, PROPERTY, REAL, _bundled_replays, _events, _names, _real_conversation,
                                      _replay)


class Flat:
    """A counter that prices every message at 10 tokens and an empty request at 3."""

    def count_message(self, message) -> int:
        return 10

    def count_rendered(self, rendered, tools=()) -> int:
        return 3 + 10 * len(rendered.messages)


class TestRetentionRatio:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"limit": 0}, "limit must be an int >= 1, got 0"),
        ({"limit": 10, "ratio": 1.5}, r"ratio must be a fraction in \[0, 1\], got 1.5"),
        ({"limit": 10, "ratio": True}, r"ratio must be a fraction in \[0, 1\], got True"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            realtime.RetentionRatio(**kwargs)

    def test_defaults_and_the_preset(self):
        assert realtime.RetentionRatio(limit=10).ratio == 0.8
        ctx = realtime.RetentionRatio(limit=50).context(SYSTEM, counter=Flat())
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
        ctx = realtime.RetentionRatio(limit=limit, ratio=ratio).context(SYSTEM, counter=Flat(),
                                                                          on_event=events.append)
        ctx.begin_turn(user("task"))
        outs = [ctx.compact()]
        for k in (1, 2, 3):
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "o")))
            outs.append(ctx.compact())
        assert not any(o.compacted for o in outs[:3])
        assert outs[3].compacted and _names(outs[3].rendered.messages) == kept
        assert events == [realtime.Truncated(7 - len(kept), 70, 10 * len(kept))]
        # dropped stays dropped: the next request extends this one
        ctx.append(reply("done"))
        ctx.commit_turn()
        ctx.begin_turn(user("more"))
        nxt = ctx.compact()
        assert nxt.rendered.messages[: len(kept)] == outs[3].rendered.messages[: len(kept)] or nxt.compacted

    def test_the_newest_message_and_its_call_stay_even_alone_over_the_limit(self):
        ctx = realtime.RetentionRatio(limit=5).context(SYSTEM, counter=Flat())
        ctx.begin_turn(user("task"))
        assert _names(ctx.compact().rendered.messages) == ["task"]
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "o")))
        assert _names(ctx.compact().rendered.messages) == ["a:c1", "r:c1"]

    @PROPERTY
    @given(conversations(), st.integers(10, 2_000), st.integers(0, 100))
    def test_generated_conversations(self, convo, limit, percent):
        config = realtime.RetentionRatio(limit=limit, ratio=percent / 100)
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
