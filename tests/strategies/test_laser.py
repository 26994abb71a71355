"""Laser's policies (LastN, TokenBudget, Chain), block, assemble, fold, Memory, PolicyContext."""

from __future__ import annotations

import dataclasses
import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harpe_lab.strategies.harpe import Compaction
from harpe_lab.conversation import Conversation, Turn
from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, Rendered, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.strategies.laser import (
    After,
    Chain,
    Last,
    LastN,
    Manifest,
    Memory,
    MessagePrice,
    PolicyContext,
    TokenBudget,
    UpTo,
    Whole,
    assemble,
    block,
    fold,
    message_text,
)
from harpe_lab.tokens import ApproxCounter
from tests._support.builders import call, reply, results_for, user


def _remember(id: str, key: object, value: object) -> AssistantMessage:
    return reply("", ToolCall(id, "remember", {"key": key, "value": value}))


def _numbered(n: int) -> list[UserInput]:
    return [user(f"m{i}") for i in range(n)]


# --- validation ---------------------------------------------------------------------------


class TestValidation:
    @pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3"])
    def test_last_n(self, bad):
        with pytest.raises(StrategyError, match=f"n must be an int >= 1, got {bad!r}"):
            LastN(bad)

    @pytest.mark.parametrize("bad", [0, -100, False, 10.0, "4000"])
    def test_token_budget(self, bad):
        with pytest.raises(StrategyError, match=f"max_tokens must be an int >= 1, got {bad!r}"):
            TokenBudget(bad)

    def test_token_budget_estimator(self):
        with pytest.raises(StrategyError, match="estimator must have count.*got 'bytes'"):
            TokenBudget(10, estimator="bytes")

    def test_chain(self):
        with pytest.raises(StrategyError, match=r"at least one policy, got \[\]"):
            Chain([])
        with pytest.raises(StrategyError, match=r"policies\[1\] must be a callable policy, got 3"):
            Chain([LastN(2), 3])
        with pytest.raises(StrategyError, match="policies must be a list of policies, got 'abc'"):
            Chain("abc")  # type: ignore[arg-type]

    @pytest.mark.parametrize("bad", [-1, True, "start", None, 1.5])
    def test_checkpoints(self, bad):
        for bound in (After, UpTo):
            with pytest.raises(StrategyError, match=f"checkpoint must be .* got {bad!r}"):
                bound(bad)

    def test_fold_arguments(self):
        with pytest.raises(StrategyError, match="bound must be Last"):
            fold([], 0, lambda a, m: a, bound=5)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="fn must be callable"):
            fold([], 0, "add")  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="n must be an int >= 1, got 0"):
            Last(0)

    def test_policies_are_frozen_hashable_and_picklable(self):
        chain = Chain([LastN(20), TokenBudget(4000)])
        with pytest.raises(dataclasses.FrozenInstanceError):
            chain.policies = ()  # type: ignore[misc]
        same = Chain((LastN(20), TokenBudget(4000)))
        assert chain == same and hash(chain) == hash(same)
        budget = TokenBudget(10)
        budget([user("warm the memo")])
        assert pickle.loads(pickle.dumps(budget)) == budget


# --- policies -----------------------------------------------------------------------------


class TestLastN:
    def test_keeps_the_tail(self):
        msgs = _numbered(5)
        out = LastN(3)(msgs)
        assert out == tuple(msgs[2:]) and all(a is b for a, b in zip(out, msgs[2:]))
        assert LastN(10)(msgs) == tuple(msgs) and LastN(1)([]) == ()

    def test_drops_tool_results_whose_call_was_cut_off(self):
        msgs = [user("q"), reply("", call("a", "lookup")), results_for("a", content="r"), reply("done")]
        assert LastN(2)(msgs) == (msgs[3],)
        assert LastN(3)(msgs) == tuple(msgs[1:])

    def test_reaches_back_to_the_call_when_only_results_are_left(self):
        msgs = [user("q"), reply("", call("a", "lookup", ), call("b", "lookup")), results_for("a", "b", content="r")]
        assert LastN(1)(msgs) == tuple(msgs[1:])

    def test_twice_changes_nothing_and_input_is_untouched(self):
        msgs = [user("q"), reply("", call("a", "lookup")), results_for("a", content="r"), user("q2"), reply("x")]
        copy = list(msgs)
        for n in range(1, 7):
            once = LastN(n)(msgs)
            assert LastN(n)(once) == once
        assert msgs == copy and all(a is b for a, b in zip(msgs, copy))


class TestTokenBudget:
    @pytest.mark.parametrize("text", ["", "a", "abcd", "abcde", "é" * 3, "🙂", "naïve café 🙂🙂 " * 7])
    def test_estimate_is_ceil_utf8_bytes_over_4(self, text):
        assert TokenBudget(10).estimate(user(text)) == math.ceil(len(text.encode("utf-8")) / 4)
        assert TokenBudget(10).estimate(reply(text)) == math.ceil(len(text.encode("utf-8")) / 4)

    def test_the_estimated_text_of_calls_and_results(self):
        asked = reply("Checking.", call("a", "lookup", q="é"), call("b", "fetch"))
        assert message_text(asked) == 'Checking.\nlookup({"q": "é"})\nfetch({})'
        assert message_text(reply("", call("a", "lookup"))) == "lookup({})"
        assert message_text(results_for("a", "b", content="data")) == "data\ndata"
        assert TokenBudget(10).estimate(asked) == math.ceil(len(message_text(asked).encode()) / 4)

    def test_another_estimator(self):
        assert TokenBudget(10, estimator=ApproxCounter(2)).estimate(user("abcde")) == 3

    def test_stops_at_the_first_message_that_does_not_fit(self):
        msgs = [user("a" * 4), user("b" * 40), user("c" * 8), user("d" * 8)]  # 1, 10, 2, 2
        assert TokenBudget(4)(msgs) == tuple(msgs[2:])
        assert TokenBudget(14)(msgs) == tuple(msgs[1:])
        assert TokenBudget(15)(msgs) == tuple(msgs)

    def test_always_keeps_the_newest_message(self):
        msgs = [user("small"), user("x" * 400)]
        assert TokenBudget(1)(msgs) == (msgs[1],)

    def test_twice_changes_nothing(self):
        msgs = [user("q" * 30), reply("", call("a", "lookup")), results_for("a", content="z" * 50), reply("w" * 20)]
        for budget in (1, 5, 10, 20, 40, 100):
            once = TokenBudget(budget)(msgs)
            assert TokenBudget(budget)(once) == once


class TestChain:
    def _conversation(self):
        """30 plain messages: m0..m17 of 1000 bytes (250 tokens), m18 of 2001 bytes (501),
        m19 of 500 'é' (1000 bytes, 250), m20..m29 of 1200 bytes (300)."""
        msgs = [user(f"{i:02d}" + "a" * 998) for i in range(18)]
        msgs.append(reply("18" + "b" * 1999))
        msgs.append(user("é" * 500))
        msgs.extend(reply(f"{i:02d}" + "c" * 1198) for i in range(20, 30))
        return msgs

    def test_last_20_within_4000_tokens(self):
        msgs = self._conversation()
        # LastN(20) keeps m10..m29. Newest first: 10 x 300 = 3000, + 250 (m19) = 3250,
        # + 501 (m18) = 3751, + 250 (m17) = 4001 > 4000: the tail starts at m18.
        out = Chain([LastN(20), TokenBudget(4000)])(msgs)
        assert out == tuple(msgs[18:]) and len(out) == 12
        assert sum(TokenBudget(1).estimate(m) for m in out) == 3751

    def test_a_tail_never_starts_with_orphan_results(self):
        msgs = self._conversation()
        msgs[17] = reply("17" + "a" * 998, call("x", "lookup"))
        msgs[18] = ToolResults((ToolResult("x", "18" + "b" * 1999),))  # still 501 tokens
        out = Chain([LastN(20), TokenBudget(4000)])(msgs)
        assert out == tuple(msgs[19:])

    def test_order_matters(self):
        msgs = _numbered(10)
        assert Chain([LastN(5), LastN(3)])(msgs) == Chain([LastN(3), LastN(5)])(msgs) == tuple(msgs[7:])
        assert Chain([lambda ms: ms[::2], LastN(2)])(msgs) == (msgs[6], msgs[8])


@st.composite
def _transcripts(draw):
    msgs = []
    for t in range(draw(st.integers(0, 6))):
        msgs.append(user(f"u{t} " + "u" * draw(st.integers(0, 40))))
        for r in range(draw(st.integers(0, 3))):
            ids = [f"t{t}r{r}c{k}" for k in range(draw(st.integers(1, 2)))]
            msgs.append(reply("r" * draw(st.integers(0, 20)), *[call(i, "lookup") for i in ids]))
            msgs.append(results_for(*ids, content="c" * draw(st.integers(0, 60))))
        if draw(st.booleans()):
            msgs.append(reply(f"final {t}"))
    return msgs


_policies = st.one_of(
    st.builds(LastN, st.integers(1, 12)),
    st.builds(TokenBudget, st.integers(1, 80)),
    st.builds(lambda n, b: Chain([LastN(n), TokenBudget(b)]), st.integers(1, 12), st.integers(1, 80)),
)


class TestProperties:
    @settings(max_examples=300, deadline=None)
    @given(_transcripts(), _policies)
    def test_a_policy_keeps_a_valid_tail_and_is_idempotent(self, msgs, policy):
        copy = list(msgs)
        out = policy(msgs)
        assert msgs == copy
        assert out == tuple(msgs[len(msgs) - len(out) :]), "a tail of the input"
        if msgs:
            assert out and out[-1] is msgs[-1], "the newest message is always kept"
        for k, m in enumerate(out):
            if isinstance(m, ToolResults):
                assert k > 0 and isinstance(out[k - 1], AssistantMessage)
                assert [c.id for c in out[k - 1].calls] == [r.id for r in m.results]
        assert policy(out) == out
        # within the limits, except the one documented case: a tail of only tool results
        # reaches back to the call they answer
        grew_back = len(out) >= 2 and isinstance(out[0], AssistantMessage) and all(
            isinstance(m, ToolResults) for m in out[1:]
        )
        steps = policy.policies if isinstance(policy, Chain) else (policy,)
        for step in steps:
            if isinstance(step, LastN):
                assert len(out) <= step.n or grew_back
            else:
                assert sum(step.estimate(m) for m in out) <= step.max_tokens or len(out) == 1 or grew_back


# --- block and assemble -------------------------------------------------------------------


class TestBlock:
    def test_joins_the_text_of_the_last_messages(self):
        msgs = [user("first"), reply("second", call("a", "lookup", q=1)), results_for("a", content="third"),
                user("fourth")]
        assert block(msgs) == 'first\nsecond\nlookup({"q": 1})\nthird\nfourth'
        assert block(msgs, n=1) == "fourth"

    def test_within_a_token_budget(self):
        msgs = [user("a" * 40), user("b" * 8), user("c" * 8)]
        assert block(msgs, token_budget=4) == "b" * 8 + "\n" + "c" * 8

    def test_validation(self):
        with pytest.raises(StrategyError, match="n must be an int >= 1, got 0"):
            block([], n=0)


class TestAssemble:
    def test_records_what_the_model_received(self):
        msgs = [user("a" * 8), reply("", call("x", "lookup")), results_for("x", content="b" * 4), reply("c" * 12)]
        out, manifest = assemble(msgs, LastN(3), ids=["0.0", "0.1", "0.2", "0.3"])
        assert out == tuple(msgs[1:])
        assert manifest == Manifest(
            kept=(1, 2, 3), dropped=(0,), estimated_tokens=3 + 1 + 3,
            kept_ids=("0.1", "0.2", "0.3"), dropped_ids=("0.0",), policy="LastN(n=3)",
        )  # fmt: skip
        assert manifest.to_dict()["kept_ids"] == ["0.1", "0.2", "0.3"]

    def test_with_a_conversation(self):
        conv = Conversation((Turn(user("q1"), (reply("a1"),)), Turn(user("q2"), (reply("a2"),))))
        _, manifest = assemble(conv.messages(), LastN(2), ids=conv.message_ids())
        assert manifest.kept_ids == ("1.0", "1.1") and manifest.dropped_ids == ("0.0", "0.1")

    def test_a_policy_must_return_a_subsequence(self):
        msgs = _numbered(3)
        with pytest.raises(StrategyError, match="not one of its inputs, or out of order"):
            assemble(msgs, lambda ms: [user("m2")])  # equal but not the same message
        with pytest.raises(StrategyError, match="out of order"):
            assemble(msgs, lambda ms: [ms[2], ms[0]])
        with pytest.raises(StrategyError, match="returned no messages for 3; a request cannot be empty"):
            assemble(msgs, lambda ms: [])

    def test_ids_must_name_every_message(self):
        with pytest.raises(StrategyError, match="3 messages but 2 ids"):
            assemble(_numbered(3), LastN(1), ids=["a", "b"])


# --- fold and its bounds ------------------------------------------------------------------


def _texts(acc: list[str], m) -> list[str]:
    return acc + [m.text]


class TestFold:
    msgs = [user("a"), user("CHECK 1"), user("b"), user("CHECK 2"), user("c")]

    @staticmethod
    def _is_check(m) -> bool:
        return m.text.startswith("CHECK")

    def test_whole_is_the_default(self):
        assert fold(self.msgs, [], _texts) == ["a", "CHECK 1", "b", "CHECK 2", "c"]
        assert fold(self.msgs, [], _texts, bound=Whole()) == fold(self.msgs, [], _texts)

    def test_last(self):
        assert fold(self.msgs, [], _texts, bound=Last(2)) == ["CHECK 2", "c"]
        assert fold(self.msgs, [], _texts, bound=Last(99)) == fold(self.msgs, [], _texts)

    def test_after_the_latest_checkpoint(self):
        assert fold(self.msgs, [], _texts, bound=After(self._is_check)) == ["c"]
        assert fold(self.msgs, [], _texts, bound=After(1)) == ["b", "CHECK 2", "c"]
        assert fold(self.msgs, [], _texts, bound=After(lambda m: False)) == fold(self.msgs, [], _texts)

    def test_up_to_the_latest_checkpoint(self):
        assert fold(self.msgs, [], _texts, bound=UpTo(self._is_check)) == ["a", "CHECK 1", "b", "CHECK 2"]
        assert fold(self.msgs, [], _texts, bound=UpTo(0)) == ["a"]
        assert fold(self.msgs, [], _texts, bound=UpTo(lambda m: False)) == []

    def test_an_index_past_the_end(self):
        with pytest.raises(StrategyError, match="checkpoint index 5 is past the end of 5 messages"):
            fold(self.msgs, [], _texts, bound=After(5))

    def test_the_messages_are_not_changed(self):
        msgs = list(self.msgs)
        fold(msgs, 0, lambda n, m: n + 1, bound=Last(3))
        assert msgs == self.msgs


# --- memory -------------------------------------------------------------------------------


class TestMemory:
    def test_the_latest_successful_value_wins(self):
        msgs = [
            user("I live in Lyon"),
            _remember("c1", "city", "Lyon"),
            results_for("c1", content="r"),
            user("I moved to Oslo"),
            _remember("c2", "city", "Oslo"),
            results_for("c2", content="r"),
        ]
        memory = Memory.from_messages(msgs)
        assert memory.recall("city") == "Oslo" and len(memory) == 1 and "city" in memory

    def test_failed_and_unanswered_calls_record_nothing(self):
        msgs = [
            _remember("c1", "city", "Lyon"), results_for("c1", content="r"),
            _remember("c2", "city", "Paris"), results_for("c2", success=False, content="r"),
            _remember("c3", "pet", "cat"),
        ]  # fmt: skip
        memory = Memory.from_messages(msgs)
        assert dict(memory.facts) == {"city": "Lyon"} and dict(memory.pending) == {"c3": ("pet", "cat")}

    def test_malformed_calls_are_listed(self):
        msgs = [_remember("c1", "", 1), reply("", ToolCall("c2", "remember", ["city"])),
                results_for("c1", "c2", content="r")]
        memory = Memory.from_messages(msgs)
        assert memory.skipped == ("c1", "c2") and len(memory) == 0

    def test_other_tools_and_a_custom_tool_name(self):
        msgs = [reply("", ToolCall("c1", "note", {"key": "k", "value": 1}), call("c2", "lookup")),
                results_for("c1", "c2", content="r")]
        assert len(Memory.from_messages(msgs)) == 0
        assert Memory.from_messages(msgs, tool="note").recall("k") == 1

    def test_bounds(self):
        msgs = [_remember("c1", "city", "Lyon"), results_for("c1", content="r"), _remember("c2", "city", "Oslo"),
                results_for("c2", content="r")]
        assert Memory.from_messages(msgs, bound=UpTo(1)).recall("city") == "Lyon"
        assert Memory.from_messages(msgs, bound=Last(2)).recall("city") == "Oslo"
        assert fold(msgs, Memory(), Memory.step, bound=Whole()) == Memory.from_messages(msgs)

    def test_recall_and_remember(self):
        memory = Memory().remember("lang", "fr")
        assert memory.recall("lang") == "fr" and memory.recall("tz", None) is None
        with pytest.raises(KeyError, match="nothing remembered for 'tz'; known keys: 'lang'"):
            memory.recall("tz")
        with pytest.raises(StrategyError, match="key must be a non-empty string, got 3"):
            memory.remember(3, "x")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            memory.facts["lang"] = "en"  # type: ignore[index]
        assert len(Memory()) == 0, "remember returns a new memory"

    def test_from_conversation(self):
        conv = Conversation(
            (
                Turn(user("remember my city"),
                     (_remember("c1", "city", "Lyon"), results_for("c1", content="r"), reply("ok"))),
                Turn(user("what is it?"), (reply("Lyon"),)),
            )
        )
        assert Memory.from_conversation(conv).recall("city") == "Lyon"
        with pytest.raises(StrategyError, match="takes a Conversation, got list"):
            Memory.from_conversation([])


# --- PolicyContext ------------------------------------------------------------------------


class TestPolicyContext:
    def test_compacted_exactly_when_the_window_moves(self):
        ctx = PolicyContext("sys", LastN(3))
        ctx.begin_turn(u := user("q"))
        assert ctx.compact() == Compaction(Rendered("sys", (u,)), False)
        ctx.append(r1 := reply("", call("a", "lookup")))
        ctx.append(t1 := results_for("a", content="r"))
        assert ctx.compact() == Compaction(Rendered("sys", (u, r1, t1)), False)
        ctx.append(r2 := reply("", call("b", "lookup")))
        ctx.append(t2 := results_for("b", content="r"))
        # the last three start with t1, whose call is cut off: the window starts at r2
        assert ctx.compact() == Compaction(Rendered("sys", (r2, t2)), True)
        ctx.append(r3 := reply("", call("c", "lookup")))
        ctx.append(t3 := results_for("c", content="r"))
        assert ctx.compact() == Compaction(Rendered("sys", (r3, t3)), True)
        ctx.append(reply("done"))
        ctx.commit_turn()
        ctx.begin_turn(v := user("next"))
        assert ctx.compact().rendered.messages[-1] is v

    def test_abort_keeps_the_transcript_before_the_turn_plus_its_input(self):
        ctx = PolicyContext("", LastN(50), initial=[h := user("old")])
        ctx.begin_turn(u := user("q"))
        ctx.append(reply("", call("a", "lookup")))
        ctx.compact()
        ctx.abort_turn()
        assert ctx.transcript == (h, u) and isinstance(ctx.transcript, tuple)

    def test_manifest_of_the_last_request(self):
        ctx = PolicyContext("", LastN(2), initial=_numbered(3))
        ctx.begin_turn(user("abcdefgh"))
        ctx.compact()
        manifest = ctx.manifest(ids=["a", "b", "c", "d"])
        assert manifest.kept == (2, 3) and manifest.dropped_ids == ("a", "b") and manifest.estimated_tokens == 1 + 2

    def test_a_policy_must_keep_the_newest_message(self):
        ctx = PolicyContext("", lambda ms: ms[:1])
        ctx.begin_turn(user("a"))
        ctx.compact()
        ctx.append(reply("b"))
        with pytest.raises(StrategyError, match="dropped the newest message"):
            ctx.compact()

    def test_validation(self):
        with pytest.raises(StrategyError, match="policy must be callable.*got 3"):
            PolicyContext("", 3)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="base_system must be a str"):
            PolicyContext(None, LastN(1))  # type: ignore[arg-type]


@st.composite
def _lifecycles(draw):
    """A PolicyContext's life: turns of rounds, some aborted, each step a compact."""
    turns = []
    for t in range(draw(st.integers(1, 7))):
        steps = []
        for r in range(draw(st.integers(0, 3))):
            ids = [f"t{t}r{r}c{k}" for k in range(draw(st.integers(1, 2)))]
            steps.append((reply("r" * draw(st.integers(0, 30)), *[call(i, "lookup") for i in ids]),
                          results_for(*ids, content="c" * draw(st.integers(0, 90)))))
        turns.append((user(f"u{t} " + "u" * draw(st.integers(0, 50))), steps, draw(st.booleans()),
                      draw(st.integers(0, 4)) == 0))
    return turns


class _Negative:
    """An estimator pricing some messages below zero: the bisection cannot take it."""

    def count(self, text: str) -> int:
        return -60 if "cc" in text else len(text)


_tail_policies = st.one_of(
    _policies,
    st.builds(lambda n, b: Chain([TokenBudget(b), LastN(n), TokenBudget(b // 2 + 1)]), st.integers(1, 12),
              st.integers(1, 120)),
    st.builds(lambda b: TokenBudget(b, estimator=MessagePrice(ApproxCounter())), st.integers(1, 200)),
    st.builds(lambda n: Chain([LastN(n), TokenBudget(40, estimator=_Negative())]), st.integers(1, 12)),
)


class TestTailWindow:
    """PolicyContext finds where a chain of LastN and TokenBudget starts without running it
    (running sums of the estimates); what it sends must be what the chain itself selects."""

    @settings(max_examples=300, deadline=None)
    @given(_lifecycles(), _tail_policies)
    def test_every_request_is_the_one_the_policy_selects(self, turns, policy):
        fast = PolicyContext("sys", policy)
        plain = PolicyContext("sys", lambda ms: policy(ms))  # not a chain it knows: run as it is
        for user, rounds, finishes, aborted in turns:
            for ctx in (fast, plain):
                ctx.begin_turn(user)
            assert fast.compact() == plain.compact()
            for asked, answered in rounds:
                for ctx in (fast, plain):
                    ctx.append(asked)
                    ctx.append(answered)
                a, b = fast.compact(), plain.compact()
                assert a == b and a.rendered.messages == policy(fast.transcript)
                assert a.edits == b.edits, "the same promise to the engine"
            if aborted:
                for ctx in (fast, plain):
                    ctx.abort_turn()
                continue
            if finishes:
                for ctx in (fast, plain):
                    ctx.append(reply("done"))
            for ctx in (fast, plain):
                ctx.commit_turn()
            assert fast.manifest() == dataclasses.replace(plain.manifest(), policy=repr(policy))


class TestInTheReplayEngine:
    def test_a_chain_replays_with_valid_requests(self):
        from harpe_lab.conversation import Conversation, Turn
        from harpe_lab.replay import replay
        from harpe_lab.tokens import BytesCounter

        turns = []
        for t in range(25):
            messages = []
            for r in range(t % 4):
                cid = f"c{t}-{r}"
                messages += [reply("", call(cid, "lookup")), results_for(cid, content="z" * (30 * r + 10))]
            messages.append(reply(f"answer {t}"))
            turns.append(Turn(user(f"question {t}"), tuple(messages), "failed" if t == 9 else "answered"))
        conversation = Conversation(tuple(turns))
        policy = Chain([LastN(6), TokenBudget(60)])
        result = replay(conversation, lambda: PolicyContext("sys", policy), counter=BytesCounter())
        frame = result.requests
        assert len(result) >= sum(t % 4 + 1 for t in range(25) if t != 9)
        assert frame.messages_sent.max() <= 6 and frame.compacted.any()
        for i in range(len(result)):
            assert result.rendered(i).messages == policy(result.rendered(i).messages)
