"""AutoGen's model contexts, native (harpe_lab.strategies.autogen): validation, each policy by
hand, and properties. Nothing here needs autogen-core: the comparison with its own code is in
test_autogen_peer.py."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, Rendered, ToolResults, UserInput
from harpe_lab.protocol import DeclaresLimit, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.autogen import Buffered, HeadAndTail, ModelContext, TokenLimited, pair_up, skipped_text
from harpe_lab.tokens import ApproxCounter
from tests._support.builders import call, reply, results_for, round_trip, user
from tests.strategies.autogen._shared import COUNTER, _conversations, _logged


def _is_call(m) -> bool:
    return isinstance(m, AssistantMessage) and bool(m.calls)


def _autogen_token_limited(policy: TokenLimited, messages: list) -> tuple:
    """AutoGen 0.7.5's loop, literally: pop index len // 2 while the count is over the
    limit, then drop a leading tool-results message."""
    msgs = list(messages)
    while policy.count(msgs) > policy.token_limit and msgs:
        msgs.pop(len(msgs) // 2)
    if msgs and isinstance(msgs[0], ToolResults):
        msgs = msgs[1:]
    return tuple(msgs)


# --- validation ---------------------------------------------------------------------------


class TestValidation:
    @pytest.mark.parametrize("bad", [0, -1, True, 2.5, "3", None])
    def test_buffer_size(self, bad):
        with pytest.raises(StrategyError, match=f"buffer_size must be an int >= 1, got {bad!r}"):
            Buffered(buffer_size=bad)

    @pytest.mark.parametrize("field", ["head_size", "tail_size"])
    @pytest.mark.parametrize("bad", [0, -3, False, 1.0])
    def test_head_and_tail(self, field, bad):
        knobs = {"head_size": 2, "tail_size": 2, field: bad}
        with pytest.raises(StrategyError, match=f"{field} must be an int >= 1, got {bad!r}"):
            HeadAndTail(**knobs)

    @pytest.mark.parametrize("bad", [0, -100, True, 10.0, "4000"])
    def test_token_limit(self, bad):
        with pytest.raises(StrategyError, match=f"token_limit must be an int >= 1, got {bad!r}"):
            TokenLimited(token_limit=bad, counter=COUNTER)

    def test_counter_and_tools(self):
        with pytest.raises(StrategyError, match="counter must be a harpe_lab token counter.*got 'cl100k_base'"):
            TokenLimited(token_limit=10, counter="cl100k_base")
        with pytest.raises(StrategyError, match="tools must be a sequence of OpenAI tool schemas, got 'search'"):
            TokenLimited(token_limit=10, counter=COUNTER, tools="search")

    def test_keyword_only_and_frozen(self):
        with pytest.raises(TypeError):
            Buffered(3)  # type: ignore[misc]
        policy = HeadAndTail(head_size=1, tail_size=2)
        with pytest.raises(dataclasses.FrozenInstanceError):
            policy.head_size = 5  # type: ignore[misc]
        assert TokenLimited(token_limit=5, counter=COUNTER, tools=[{"type": "function", "function": {}}]).tools == (
            {"type": "function", "function": {}},
        )

    def test_within_a_budget_too_small_for_the_system_prompt(self):
        with pytest.raises(StrategyError, match="budget 5 tokens leaves no room for messages.*raise the budget"):
            TokenLimited.within(5, counter=COUNTER, system="a long system prompt " * 5)
        with pytest.raises(StrategyError, match="budget must be an int >= 1, got 0"):
            TokenLimited.within(0, counter=COUNTER)

    def test_model_context(self):
        with pytest.raises(StrategyError, match="limit must be a harpe_lab.protocol.Limit or None, got 100"):
            ModelContext("", Buffered(buffer_size=2), limit=100)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="policy must be callable"):
            ModelContext("", 3)  # type: ignore[arg-type]


# --- each policy, by hand -----------------------------------------------------------------


class TestBuffered:
    def test_the_last_n_messages(self):
        msgs = [user(f"m{i}") for i in range(6)]
        assert Buffered(buffer_size=4)(msgs) == tuple(msgs[2:])
        assert Buffered(buffer_size=10)(msgs) == tuple(msgs)

    def test_a_window_starting_with_results_drops_them(self):
        msgs = [user(), *round_trip("a", "r", "lookup", input={}), user("next")]
        assert Buffered(buffer_size=2).select(msgs) == (msgs[3],)
        assert Buffered(buffer_size=2)(msgs) == (msgs[3],)

    def test_one_message_of_results_is_sent_with_its_call(self):
        msgs = [user(), *round_trip("a", "r", "lookup", input={})]
        assert Buffered(buffer_size=1).select(msgs) == ()  # AutoGen sends nothing
        assert Buffered(buffer_size=1)(msgs) == tuple(msgs[1:])  # we send the pair

    def test_does_not_change_its_input_and_applying_twice_changes_nothing(self):
        msgs = [user(), *round_trip("a", "r", "lookup", input={}), *round_trip("b", "r", "lookup", input={}), user("u")]
        copy = list(msgs)
        once = Buffered(buffer_size=3)(msgs)
        assert msgs == copy and Buffered(buffer_size=3)(once) == once


class TestHeadAndTail:
    def test_autogens_placeholder_and_count(self):
        msgs = [user(f"m{i}") for i in range(10)]
        out = HeadAndTail(head_size=2, tail_size=3)(msgs)
        assert out[:2] == tuple(msgs[:2]) and out[3:] == tuple(msgs[7:])
        assert out[2] == UserInput("Skipped 5 messages.") == UserInput(skipped_text(5))

    def test_all_messages_when_head_and_tail_cover_them(self):
        msgs = [user(f"m{i}") for i in range(5)]
        assert HeadAndTail(head_size=2, tail_size=3)(msgs) == tuple(msgs)

    def test_a_head_ending_in_a_call_loses_it_and_the_count_does_not_say_so(self):
        msgs = [user(), *round_trip("a", "r", "lookup", input={}), user("x"), user("y"),
                *round_trip("b", "r", "lookup", input={})]
        # head = [user, call a] -> the call is dropped; tail = [call b, results b]
        out = HeadAndTail(head_size=2, tail_size=2)(msgs)
        assert out == (msgs[0], UserInput("Skipped 3 messages."), *msgs[5:])

    def test_a_tail_starting_with_results_loses_them(self):
        msgs = [user(), user("x"), *round_trip("a", "r", "lookup", input={}), user("y")]
        out = HeadAndTail(head_size=1, tail_size=2)(msgs)
        assert out == (msgs[0], UserInput("Skipped 2 messages."), msgs[4])

    def test_a_one_message_tail_of_results_is_sent_with_its_call(self):
        msgs = [user(), user("x"), user("y"), *round_trip("a", "r", "lookup", input={})]
        policy = HeadAndTail(head_size=1, tail_size=1)
        assert policy.select(msgs) == (msgs[0], UserInput("Skipped 3 messages."))  # AutoGen ends with the placeholder
        assert policy(msgs) == (msgs[0], UserInput("Skipped 3 messages."), *msgs[3:])

    def test_the_placeholder_is_a_new_message_every_time(self):
        msgs = [user(f"m{i}") for i in range(6)]
        policy = HeadAndTail(head_size=1, tail_size=1)
        a, b = policy(msgs)[1], policy(msgs)[1]
        assert a == b and a is not b and all(a is not m for m in msgs)


class TestTokenLimited:
    def test_pops_from_the_middle(self):
        msgs = [user(f"message {i}") for i in range(9)]
        limit = TokenLimited(token_limit=1, counter=COUNTER).count(msgs[:6])  # room for six
        policy = TokenLimited(token_limit=limit, counter=COUNTER)
        out = policy(msgs)
        # 9 left: pop index 4 (m4); 8 left: index 4 (m5); 7 left: index 3 (m3)
        assert out == (*msgs[:3], *msgs[6:])
        assert out == _autogen_token_limited(policy, msgs)

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.tuples(st.sampled_from("urc"), st.integers(0, 40)), max_size=40), st.integers(1, 400))
    def test_where_the_pops_stop_is_autogens_pop_loop(self, shape, limit):
        # select finds where AutoGen's pops stop from running sums; its loop pops one by one
        msgs: list = []
        for k, (kind, size) in enumerate(shape):
            if kind == "c":
                msgs += round_trip(f"c{k}", content="w " * size, name="lookup", input={})
            else:
                msgs.append((user if kind == "u" else reply)("w " * size))
        policy = TokenLimited(token_limit=limit, counter=COUNTER)
        assert policy.select(msgs) == _autogen_token_limited(policy, msgs)
        ctx = policy.context()  # the lifecycle's running sums give the same requests
        ctx.begin_turn(user("go"))
        for m in msgs:
            ctx.append(m)
        history = [user("go"), *msgs]
        assert ctx.compact().rendered.messages == pair_up(_autogen_token_limited(policy, history), history)

    def test_counts_with_our_counter_and_the_tools(self):
        tools = ({"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}},)
        msgs = [user("a" * 50), user("b" * 50)]
        policy = TokenLimited(token_limit=100, counter=COUNTER, tools=tools)
        assert policy.count(msgs) == COUNTER.count_rendered(Rendered("", tuple(msgs)), tools)
        assert policy.system_tokens("be brief") == COUNTER.count_system("be brief")

    def test_a_split_pair_is_dropped_on_both_sides(self):
        msgs = [user("first"), *round_trip("a", "x" * 40, "lookup", input={}),
                *round_trip("b", "y" * 40, "lookup", input={}), user("last")]
        limit = COUNTER.count_rendered(Rendered("", (msgs[0], msgs[1], msgs[4], msgs[5])))
        policy = TokenLimited(token_limit=limit, counter=COUNTER)
        # AutoGen pops results a (index 2), then call b (index 3): [first, call a, results b, last]
        assert policy.select(msgs) == (msgs[0], msgs[1], msgs[4], msgs[5])
        assert policy(msgs) == (msgs[0], msgs[5])

    def test_the_newest_message_is_put_back(self):
        msgs = [user("first " * 30), user("newest " * 30)]
        policy = TokenLimited(token_limit=20, counter=COUNTER)
        assert policy.select(msgs) == ()  # AutoGen pops the newest, then the first
        assert policy(msgs) == (msgs[1],)
        pair = [user("first " * 30), *round_trip("a", "result " * 30, "lookup", input={})]
        assert policy(pair) == tuple(pair[1:])
        roomier = TokenLimited(token_limit=40, counter=COUNTER)  # the first fits alone
        assert roomier.select(msgs) == (msgs[0],)
        assert roomier(msgs) == tuple(msgs), "put back after what AutoGen kept, over the limit"
        assert roomier.count(msgs) > 40

    def test_within_a_budget_declares_it(self):
        policy = TokenLimited.within(500, counter=COUNTER, system="be brief")
        assert policy.token_limit == 500 - COUNTER.count_system("be brief")
        assert policy.context("be brief").limit == Limit(tokens=500, kind="target")


class TestPairUp:
    def test_keeps_a_valid_request(self):
        msgs = [user(), *round_trip("a", "r", "lookup", input={}), user("u")]
        assert pair_up(msgs, msgs) == tuple(msgs)

    def test_drops_orphans_and_puts_the_newest_back(self):
        msgs = [user(), *round_trip("a", "r", "lookup", input={}), *round_trip("b", "r", "lookup", input={})]
        assert pair_up([msgs[0], msgs[2], msgs[3]], msgs) == (msgs[0], msgs[3], msgs[4])
        assert pair_up([msgs[0], msgs[1]], msgs) == (msgs[0], msgs[3], msgs[4])

    def test_made_up_messages_pass(self):
        msgs = [user(), user("x")]
        note = UserInput("Skipped 1 messages.")
        assert pair_up([msgs[0], note, msgs[1]], msgs) == (msgs[0], note, msgs[1])

    def test_idempotent(self):
        msgs = [user(), *round_trip("a", "r", "lookup", input={}), *round_trip("b", "r", "lookup", input={})]
        once = pair_up([msgs[2], msgs[3]], msgs)
        assert pair_up(once, msgs) == once

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from("urc"), max_size=30), st.integers(0, 30), st.integers(0, 30), st.booleans(),
           st.lists(st.integers(0, 29), max_size=6))
    def test_pairing_by_runs_is_pairing_by_scanning(self, kinds, head, tail, note, picks):
        """The selections the policies make (a head, a placeholder, a tail) are paired from
        the runs' edges alone; any other is paired by scanning the transcript. Both must
        agree."""
        from harpe_lab.strategies.autogen import _pair_up_scanning

        msgs = []
        for k, kind in enumerate(kinds):
            if kind == "c" and msgs and _is_call(msgs[-1]):
                kind = "u"
            msgs += [reply("", call(f"x{k}", "lookup"))] if kind == "c" else [user(f"m{k}")]
            if kind == "c" and k % 3:
                msgs.append(results_for(f"x{k}", content="r"))
        head = min(head, len(msgs))
        tail = min(tail, len(msgs) - head)
        made_up = [UserInput("Skipped some messages.")] if note else []
        for selection in ([*msgs[:head], *made_up, *msgs[len(msgs) - tail :]],
                          [msgs[p] for p in sorted(set(picks)) if p < len(msgs)]):
            assert pair_up(selection, msgs) == _pair_up_scanning(tuple(selection), msgs)


class TestModelContext:
    def test_compacted_only_when_the_window_moves(self):
        ctx = Buffered(buffer_size=3).context("sys")
        ctx.begin_turn(user("q"))
        first = ctx.compact()
        assert first.rendered.system == "sys" and not first.compacted
        a, r = round_trip("a", "r", "lookup", input={})
        ctx.append(a)
        ctx.append(r)
        assert not ctx.compact().compacted  # [q, a, r]: the previous request plus two
        a2, r2 = round_trip("b", "r", "lookup", input={})
        ctx.append(a2)
        ctx.append(r2)
        assert ctx.compact().compacted  # the window moved

    def test_abort_keeps_the_user_input(self):
        ctx = Buffered(buffer_size=10).context()
        ctx.begin_turn(user("q1"))
        ctx.compact()
        ctx.append(reply("a1"))
        ctx.commit_turn()
        q2 = user("q2")
        ctx.begin_turn(q2)
        ctx.append(reply("lost"))
        ctx.abort_turn()
        assert [m.text for m in ctx.transcript] == ["q1", "a1", "q2"]

    def test_declares_a_limit_only_with_tokens(self):
        assert Buffered(buffer_size=2).context().limit is None
        assert HeadAndTail(head_size=1, tail_size=1).context().limit is None
        ctx = TokenLimited(token_limit=100, counter=COUNTER).context("sys")
        assert isinstance(ctx, DeclaresLimit)
        assert ctx.limit == Limit(tokens=100 + COUNTER.count_system("sys"), kind="target")


# --- properties, through the replay engine ------------------------------------------------

_policies = st.one_of(
    st.builds(lambda n: Buffered(buffer_size=n), st.integers(1, 10)),
    st.builds(lambda h, t: HeadAndTail(head_size=h, tail_size=t), st.integers(1, 5), st.integers(1, 6)),
    st.builds(lambda n: TokenLimited(token_limit=n, counter=ApproxCounter()), st.integers(1, 200)),
)


class TestProperties:
    @settings(max_examples=200, deadline=None)
    @given(_conversations(), _policies)
    def test_valid_requests_with_the_newest_message_within_the_limits(self, conv, policy):
        log: list = []
        counter = ApproxCounter()
        r = replay(conv, _logged(policy, log, "system"), counter=counter)  # the engine checks pairs and emptiness
        assert len(log) == len(r)
        for i in range(len(r)):
            sent = r.rendered(i).messages
            transcript = log[i]
            assert sent and sent[-1] is transcript[-1], "the newest message is sent"
            assert r.sent_ids(i)[-1] == r.available_ids(i)[-1]
            for k, m in enumerate(sent):
                if isinstance(m, ToolResults):
                    assert k and [c.id for c in sent[k - 1].calls] == [x.id for x in m.results]
                if isinstance(m, AssistantMessage) and m.calls:
                    assert k + 1 < len(sent) and isinstance(sent[k + 1], ToolResults)
            raw = policy.select(transcript)
            put_back = not raw or raw[-1] is not transcript[-1] or (
                isinstance(transcript[-1], ToolResults) and (len(raw) < 2 or raw[-2] is not transcript[-2])
            )
            if not put_back and not isinstance(policy, HeadAndTail):
                assert policy(sent) == sent, "applying it to its own request changes nothing"
            if isinstance(policy, Buffered):
                assert len(sent) <= policy.buffer_size or (put_back and len(sent) <= 2)
            elif isinstance(policy, HeadAndTail):
                assert len(sent) <= policy.head_size + policy.tail_size + 1 + put_back
            else:
                over = r.requests["overshoot_tokens"].iloc[i]
                assert over == 0 or put_back, "over the limit only when AutoGen lost the newest message"

    @settings(max_examples=200, deadline=None)
    @given(_conversations(), st.integers(1, 300))
    def test_token_limited_is_autogens_loop(self, conv, limit):
        policy = TokenLimited(token_limit=limit, counter=ApproxCounter())
        msgs = list(conv.messages())
        for k in range(1, len(msgs) + 1):
            assert policy.select(msgs[:k]) == _autogen_token_limited(policy, msgs[:k])
