"""Aider's history summarization (harpe_lab.strategies.aider): configuration, the arithmetic
pinned by hand from its source, and the properties every replay keeps."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import UserInput
from harpe_lab.replay import replay
from harpe_lab.strategies.aider import (
    SUMMARIZE_PROMPT,
    SUMMARY_PREFIX,
    Aider,
    AiderSummarized,
    aider_messages,
    chat_summary,
    history_budget,
)
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations
from tests.strategies._agents import COUNTER, PROPERTY, Distiller


# === Aider ======================================================================================


class TestAiderValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"history_tokens": 0}, "history_tokens must be an int >= 1, got 0"),
        ({"history_tokens": 2.0}, "history_tokens must be an int >= 1, got 2.0"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            Aider(**kwargs)

    def test_keyword_only_frozen_picklable_and_checked(self):
        with pytest.raises(TypeError):
            Aider(1000)  # type: ignore[misc]
        with pytest.raises(AttributeError):
            Aider().window = 5  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(Aider(window=5))) == Aider(window=5)
        with pytest.raises(StrategyError, match="counter must have count_rendered"):
            Aider().context(SYSTEM, counter=None, distill=Distiller())
        with pytest.raises(StrategyError, match="summarizer must be callable"):
            Aider().context(SYSTEM, counter=COUNTER, distill=Distiller(), summarizer=3)  # type: ignore[arg-type]

    def test_the_budget_is_clamped_window_over_16(self):
        assert history_budget(128_000) == 8_000 and Aider().budget == 8_000
        assert history_budget(200_000) == 8_192  # capped
        assert history_budget(8_000) == 1_024 and history_budget(0) == 1_024  # floored
        assert history_budget(20_001) == 1_250.0625  # a float, as Aider computes it
        assert Aider(window=200_000, history_tokens=300).budget == 300


def _dicts(sizes: list[int]) -> tuple[list[dict], dict[int, int]]:
    """Alternating user / assistant messages and a weight for each (by identity)."""
    msgs = [{"role": "user" if k % 2 == 0 else "assistant", "content": f"m{k}"} for k in range(len(sizes))]
    return msgs, {id(m): s for m, s in zip(msgs, sizes)}


class _Weights:
    """count / count_chat / send for chat_summary, with fixed weights; a summary weighs ``summary``."""

    def __init__(self, weights: dict[int, int], summary: int = 5) -> None:
        self.weights, self.summary, self.sent = weights, summary, []

    def count(self, m):
        return self.weights.get(id(m), self.summary)

    def count_chat(self, ms):
        return sum(self.count(m) for m in ms)

    def send(self, messages):
        self.sent.append(messages)
        return f"S{len(self.sent)}"


class TestAiderSummary:
    def test_under_the_budget_nothing_changes(self):
        msgs, weights = _dicts([10] * 10)
        w = _Weights(weights)
        assert chat_summary(msgs, max_tokens=100, window=10_000, count=w.count, count_chat=w.count_chat,
                            send=w.send) is msgs and not w.sent

    def test_the_split_keeps_a_tail_under_half_the_budget_after_a_reply(self):
        msgs, weights = _dicts([10] * 12)  # 120 > 100; half is 50
        w = _Weights(weights)
        out = chat_summary(msgs, max_tokens=100, window=10_000, count=w.count, count_chat=w.count_chat, send=w.send)
        # from the end: 10, 20, 30, 40 < 50, then 50 is not: the tail is the last 4; the head
        # (8 messages) ends on a reply
        assert out[0] == {"role": "user", "content": SUMMARY_PREFIX + "S1"} and out[1:] == msgs[8:]
        assert all(a is b for a, b in zip(out[1:], msgs[8:]))  # the very dicts
        ((system, asked),) = w.sent
        assert system == {"role": "system", "content": SUMMARIZE_PROMPT}
        assert asked["content"] == "".join(f"# {'USER' if k % 2 == 0 else 'ASSISTANT'}\nm{k}\n" for k in range(8))

    def test_the_split_moves_back_to_end_the_head_on_a_reply(self):
        # 11 messages, half of 90 is 45: from the end 10, 20, 30, 40 fit, so the split is at
        # m7; m6 is a user message, so the head ends at m5 (a reply) and the tail is m6..m10
        msgs, weights = _dicts([10] * 11)
        w = _Weights(weights)
        out = chat_summary(msgs, max_tokens=90, window=10_000, count=w.count, count_chat=w.count_chat, send=w.send)
        assert out[1:-1] == msgs[6:] and out[-1] == {"role": "assistant", "content": "Ok."}  # m10 is a user message
        assert w.sent[0][1]["content"].count("# ") == 6
        # a split at the 4th message or before summarizes everything
        short, weights = _dicts([10] * 7)
        w2 = _Weights(weights)
        out2 = chat_summary(short, max_tokens=60, window=10_000, count=w2.count, count_chat=w2.count_chat,
                            send=w2.send)
        assert out2 == [{"role": "user", "content": SUMMARY_PREFIX + "S1"}, {"role": "assistant", "content": "Ok."}]

    def test_the_head_is_cut_to_the_summarizers_window(self):
        msgs, weights = _dicts([300] * 10 + [1] * 2)
        w = _Weights(weights)
        out = chat_summary(msgs, max_tokens=1_000, window=1_500, count=w.count, count_chat=w.count_chat, send=w.send)
        # the tail (under 500) is m9..m11, moved back to m8 (after the reply m7); of the head
        # m0..m7, 1,500 - 512 = 988 tokens read 3 messages of 300: m3..m7 are lost
        assert w.sent[0][1]["content"] == "# USER\nm0\n# ASSISTANT\nm1\n# USER\nm2\n"
        assert out == [{"role": "user", "content": SUMMARY_PREFIX + "S1"}, *msgs[8:]]

    def test_recursion_when_summary_and_tail_do_not_fit(self):
        msgs, weights = _dicts([10] * 12)
        w = _Weights(weights, summary=70)  # 70 + 40 >= 100: one level deeper
        out = chat_summary(msgs, max_tokens=100, window=10_000, count=w.count, count_chat=w.count_chat, send=w.send)
        # depth 1: [S1, m8..m11]: the tail is found again right after S1, a split at 1: all
        # summarized. The recursion cannot pass depth 1 with fixed weights.
        assert len(w.sent) == 2 and w.sent[1][1]["content"].startswith("# USER\n" + SUMMARY_PREFIX + "S1\n# USER\nm8")
        assert out == [{"role": "user", "content": SUMMARY_PREFIX + "S2"}, {"role": "assistant", "content": "Ok."}]
        # summary and tail must weigh strictly less than the budget: 60 + 40 recurses, 59 + 40 not
        for weight, sends in ((60, 2), (59, 1)):
            msgs, weights = _dicts([10] * 12)
            w = _Weights(weights, summary=weight)
            chat_summary(msgs, max_tokens=100, window=10_000, count=w.count, count_chat=w.count_chat, send=w.send)
            assert len(w.sent) == sends

    def test_past_depth_three_everything_is_summarized(self):
        from harpe_lab.strategies.aider import _summarize_real

        msgs, weights = _dicts([10] * 12)
        w = _Weights(weights)
        args = (100, 10_000, w.count, w.count_chat, w.send)
        _summarize_real(msgs, 3, *args)  # depth 3 still splits
        assert w.sent[-1][1]["content"].count("# ") == 8
        _summarize_real(msgs, 4, *args)  # depth 4: everything
        assert w.sent[-1][1]["content"].count("# ") == 12
        # and at depth > 0 a history within the budget is summarized anyway
        small, sw = _dicts([1] * 3)
        w3 = _Weights(sw)
        _summarize_real(small, 1, 100, 10_000, w3.count, w3.count_chat, w3.send)
        assert len(w3.sent) == 1

    def test_a_failed_summary_raises_as_aiders_does(self):
        msgs, weights = _dicts([10] * 12)
        w = _Weights(weights)
        with pytest.raises(ValueError, match="summarizer unexpectedly failed for all models"):
            chat_summary(msgs, max_tokens=100, window=10_000, count=w.count, count_chat=w.count_chat,
                         send=lambda m: None)

    def test_aider_messages(self):
        msgs = [user("q"), reply("look", call("c1", "bash", cmd="ls ✓")), results(("c1", "a\nb")), reply("done"),
                results(("zz", "stray"))]
        units = aider_messages(msgs)
        assert [d for d, _ in units] == [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": 'look\n\n[bash] {"cmd": "ls ✓"}\n\n[result] a\nb'},
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "[result] stray"},
        ]
        assert units[1][1] == (msgs[1], msgs[2]) and units[1][1][1] is msgs[2]


class TestAiderLifecycle:
    def _ctx(self, budget: int, distill=None, events=None):
        counter = TiktokenCounter("cl100k_base")
        return Aider(history_tokens=budget).context(SYSTEM, counter=counter, distill=distill or Distiller("sum"),
                                                    on_event=events)

    def test_the_summary_lands_one_turn_late(self):
        events: list = []
        distill = Distiller("sum")
        ctx = self._ctx(60, distill, events.append)
        turns = [(user(f"question {k} " + "w " * 8), reply(f"answer {k} " + "v " * 8)) for k in range(4)]
        sent = []
        for k, (q, a) in enumerate(turns):
            ctx.begin_turn(q)
            sent.append(ctx.compact())
            ctx.append(a)
            ctx.commit_turn()
            # the history is weighed after the turn: what the next turn's first request carries
            if k == 1:
                assert ctx.history_tokens > 60 and len(distill.requests) == 1  # summarized now, in the background
        # turn 1 pushed the history over the budget and went out whole; turn 2 carries the summary
        assert not sent[1].compacted and sent[1].rendered.messages[:2] == turns[0]
        assert sent[2].compacted
        assert sent[2].rendered.messages[0] == UserInput(SUMMARY_PREFIX + "sum") and ctx.summary == "sum"
        assert sent[2].rendered.messages[-1] is turns[2][0]
        landed = [e for e in events if isinstance(e, AiderSummarized)]
        assert landed and landed[0].tokens > 60 and landed[0].budget == 60 and not landed[0].failed

    def test_the_current_turn_is_never_summarized(self):
        ctx = self._ctx(10)
        ctx.begin_turn(user("go"))
        ctx.compact()
        for k in range(30):
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "output " * 20)))
            out = ctx.compact()
            assert not out.compacted and len(out.rendered.messages) == 1 + 2 * (k + 1)

    def test_a_failed_summary_empties_the_history_as_in_aider(self):
        events: list = []
        ctx = self._ctx(30, Distiller(None), events.append)
        firsts = []
        for k in range(2):
            ctx.begin_turn(user(f"q{k} " + "w " * 20))
            firsts.append(ctx.compact())
            ctx.append(reply("a " * 20))
            ctx.commit_turn()  # each turn alone is over 30 tokens
        ctx.begin_turn(user("next"))
        out = ctx.compact()
        assert out.compacted and out.rendered.messages == (user("next"),)
        assert firsts[1].compacted and firsts[1].rendered.messages == (user("q1 " + "w " * 20),)
        assert [e.failed for e in events if isinstance(e, AiderSummarized)] == [True, True]

    def test_an_aborted_turn_keeps_the_summary_that_landed(self):
        events: list = []
        ctx = self._ctx(60, Distiller("sum"), events.append)
        for k in range(3):
            ctx.begin_turn(user(f"question {k} " + "w " * 8))
            ctx.compact()
            ctx.append(reply(f"answer {k} " + "v " * 8))
            ctx.commit_turn()
        ctx.begin_turn(user("next"))
        assert ctx.compact().compacted  # the summary of the finished turns lands
        landed = len([e for e in events if isinstance(e, AiderSummarized)])
        ctx.append(reply("", call("c")))
        ctx.abort_turn()
        ctx.begin_turn(user("again"))
        out = ctx.compact()
        # it stays: the aborted turn never joined the history it summarized; it lands once
        assert not out.compacted and out.rendered.messages[0] == UserInput(SUMMARY_PREFIX + "sum")
        assert out.rendered.messages[-2:] == (user("next"), user("again"))
        assert len([e for e in events if isinstance(e, AiderSummarized)]) == landed

    def test_an_aborted_turns_input_waits_in_the_current_exchange(self):
        ctx = self._ctx(10_000)
        ctx.begin_turn(user("a"))
        ctx.compact()
        ctx.append(reply("b"))
        ctx.abort_turn()
        ctx.begin_turn(user("c"))
        assert ctx.compact().rendered.messages == (user("a"), user("c"))

    @PROPERTY
    @given(conversations(), st.integers(50, 1_500))
    def test_properties(self, convo, budget):
        counter = TiktokenCounter("cl100k_base")
        config = Aider(history_tokens=budget)
        rp = replay(convo, lambda: config.context(SYSTEM, counter=counter, distill=Distiller("s")), counter=COUNTER)
        full = replay(convo, lambda: FullContext(SYSTEM), counter=COUNTER)
        frame = rp.requests
        for i in range(len(rp)):
            sent, history = rp.rendered(i).messages, full.rendered(i).messages
            assert_pairs_by_ids(sent)
            # the current turn is sent whole and last, the very messages recorded
            turn = convo.turns[int(frame.turn[i])]
            start = next(k for k, m in enumerate(history) if m is turn.input)
            assert len(sent) >= len(history) - start
            assert all(a is b for a, b in zip(sent[len(sent) - (len(history) - start):], history[start:]))
            # and what comes before it is the history as it was, or a summary and what it kept
            if not frame.summarized[: i + 1].any():
                assert sent == history
