"""Observation masking: SWE-agent's LastNObservations, as harpe_lab.strategies.swe_agent."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.conversation import Conversation, Turn
from harpe_lab.errors import StrategyError
from harpe_lab.messages import ToolResult, ToolResults
from harpe_lab.replay import replay
from harpe_lab.strategies.editing import EditContext
from harpe_lab.strategies.swe_agent import COMPLEXITY_TRAP_N, LastNObservations, elided
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, image, reply, results, round_trip, user
from tests._support.editing import SYSTEM, assert_an_edit, assert_pairs_by_ids, check_replay, conversations, real_params


def _session(rounds: int, *, lines: int = 3) -> list:
    """A task, then ``rounds`` tool rounds whose outputs have ``lines`` lines."""
    msgs = [user("fix the bug")]
    for k in range(rounds):
        msgs += round_trip(f"c{k}", "\n".join(f"out {k}.{j}" for j in range(lines)))
    return msgs


def _masked(out) -> list[int]:
    """Indices of the tool rounds whose results were elided."""
    return [k for k, m in enumerate(r for r in out if isinstance(r, ToolResults))
            if m.results[0].content.startswith("Old environment output")]


class TestValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"n": 0}, "n must be an int >= 1, got 0"),
        ({"n": -3}, "n must be an int >= 1, got -3"),
        ({"n": 2.5}, "n must be an int >= 1, got 2.5"),
        ({"n": True}, "n must be an int >= 1, got True"),
        ({"n": 5, "polling": 0}, "polling must be an int >= 1, got 0"),
        ({"n": 5, "polling": "2"}, "polling must be an int >= 1, got '2'"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message.replace("(", r"\(").replace(")", r"\)")):
            LastNObservations(**kwargs)

    def test_keyword_only_frozen_and_picklable(self):
        with pytest.raises(TypeError):
            LastNObservations(5)  # type: ignore[misc]
        policy = LastNObservations(n=5, polling=2)
        with pytest.raises(AttributeError):
            policy.n = 3  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(policy)) == policy

    def test_the_complexity_trap_window_is_ten(self):
        assert COMPLEXITY_TRAP_N == 10
        assert LastNObservations.complexity_trap() == LastNObservations(n=10)
        assert LastNObservations.complexity_trap(polling=4) == LastNObservations(n=10, polling=4)


class TestPlaceholder:
    def test_swe_agents_exact_text(self):
        r = elided(ToolResult("c1", "a\nb\nc"))
        assert r == ToolResult("c1", "Old environment output: (3 lines omitted)")

    def test_line_count_is_pythons_splitlines(self):
        assert elided(ToolResult("c", "")).content == "Old environment output: (0 lines omitted)"
        assert elided(ToolResult("c", "one\n")).content == "Old environment output: (1 lines omitted)"
        assert elided(ToolResult("c", "a\r\nb\rc\n\n")).content == "Old environment output: (4 lines omitted)"

    def test_images_are_counted_and_dropped(self):
        r = elided(ToolResult("c", "x", (image("a.png"), image("b.png"))))
        assert r.content == "Old environment output: (1 lines omitted) (2 images omitted)"
        assert r.attachments == ()

    def test_id_and_failure_are_kept(self):
        assert elided(ToolResult("c9", "boom", (), False)) == ToolResult(
            "c9", "Old environment output: (1 lines omitted)", (), False)

    def test_every_result_of_a_round_gets_its_own_count(self):
        msgs = [user("t"), reply("", call("a"), call("b")), results(("a", "1\n2"), ("b", "x")),
                *round_trip("c", "y")]
        out = LastNObservations(n=1)(msgs)
        assert [r.content for r in out[2].results] == [
            "Old environment output: (2 lines omitted)", "Old environment output: (1 lines omitted)"]


class TestWindow:
    def test_keeps_the_last_n_observations(self):
        msgs = _session(6)
        assert _masked(LastNObservations(n=2)(msgs)) == [0, 1, 2, 3]
        assert _masked(LastNObservations(n=6)(msgs)) == []
        assert _masked(LastNObservations(n=100)(msgs)) == []

    def test_the_task_counts_as_the_first_observation_and_is_never_elided(self):
        # SWE-agent: observations = [instance template, o1..om]; it elides [1 : k - n]
        msgs = _session(3)
        out = LastNObservations(n=1)(msgs)
        assert out[0] is msgs[0]
        assert _masked(out) == [0, 1]

    def test_without_a_leading_task_the_first_tool_observation_is_kept(self):
        msgs = _session(4)[1:]  # a fragment: it starts at a reply
        assert _masked(LastNObservations(n=1)(msgs)) == [1, 2]

    def test_later_user_inputs_are_neither_observations_nor_elided(self):
        msgs = _session(2) + [reply("done"), user("next")] + round_trip("d", "z")
        out = LastNObservations(n=1)(msgs)
        assert _masked(out) == [0, 1]
        assert out[6] is msgs[6]

    def test_only_tool_results_change_and_the_input_is_not_mutated(self):
        msgs = _session(5)
        copy = list(msgs)
        out = LastNObservations(n=2)(msgs)
        assert msgs == copy
        assert_an_edit(msgs, out)
        assert all(o is m for o, m in zip(out, msgs) if not isinstance(m, ToolResults))
        assert out[-1] is msgs[-1]

    def test_elided_rounds_are_new_objects(self):
        msgs = _session(4)
        out = LastNObservations(n=1)(msgs)
        assert out[2] is not msgs[2] and out[2].results[0].id == "c0"


class TestPolling:
    def test_swe_agents_arithmetic(self):
        # k observations (the task included); elided: [1 : (k // polling) * polling - n]
        policy = LastNObservations(n=2, polling=3)
        masked = {rounds: _masked(policy(_session(rounds))) for rounds in range(1, 10)}
        assert masked == {
            1: [], 2: [],                  # k = 2 -> cut 0; k = 3 -> cut 1
            3: [], 4: [],                  # k = 4, 5 -> cut 1
            5: [0, 1, 2], 6: [0, 1, 2], 7: [0, 1, 2],   # k = 6, 7, 8 -> cut 4
            8: [0, 1, 2, 3, 4, 5], 9: [0, 1, 2, 3, 4, 5],  # k = 9, 10 -> cut 7
        }

    def test_between_n_and_n_plus_polling_minus_one_are_kept(self):
        for rounds in range(3, 30):
            policy = LastNObservations(n=3, polling=4)
            kept = rounds - len(_masked(policy(_session(rounds))))
            assert 3 <= kept <= 3 + 4 - 1 or kept == rounds

    def test_the_prefix_changes_once_every_polling_steps(self):
        convo = datasets.load("coding_agent")
        for polling in (1, 4):
            r = replay(convo, lambda: LastNObservations(n=2, polling=polling).context(SYSTEM),
                       counter=BytesCounter())
            within = r.requests[r.requests.step > 0]
            if polling == 1:
                many = int(within.compacted.sum())
            else:
                assert 0 < int(within.compacted.sum()) < many


class TestIdempotence:
    @pytest.mark.parametrize("policy", [LastNObservations(n=1), LastNObservations(n=2, polling=3),
                                        LastNObservations(n=10)])
    def test_applying_twice_changes_nothing(self, policy):
        msgs = _session(15, lines=5)
        once = policy(msgs)
        assert policy(once) == once

    def test_a_placeholder_is_not_elided_again(self):
        msgs = [user("t"), *round_trip("a", "Old environment output: (7 lines omitted)"), *round_trip("b", "x")]
        out = LastNObservations(n=1)(msgs)
        assert out[2] is msgs[2]


class TestInTheEngine:
    def test_stand_ins_are_stable_objects(self):
        ctx = LastNObservations(n=1).context(SYSTEM)
        msgs = _session(3)
        ctx.begin_turn(msgs[0])
        ctx.compact()
        for m in msgs[1:]:
            ctx.append(m)
        first = ctx.compact()
        ctx.append(reply("more"))
        second = ctx.compact()
        assert not second.compacted
        assert all(a is b for a, b in zip(first.rendered.messages, second.rendered.messages))

    def test_an_edit_is_a_compaction_and_growth_is_not(self):
        ctx = LastNObservations(n=1).context(SYSTEM)
        ctx.begin_turn(user("t"))
        assert not ctx.compact().compacted  # nothing was sent before: nothing was cut
        for m in round_trip("a", "x"):
            ctx.append(m)
        assert not ctx.compact().compacted
        for m in round_trip("b", "y"):
            ctx.append(m)
        assert ctx.compact().compacted  # round a was elided

    def test_the_call_of_an_elided_round_is_sent_as_it_was(self):
        # the engine pairs a call with a stand-in for its results by their call ids
        msgs = _session(3)
        ctx = EditContext(SYSTEM, LastNObservations(n=1))
        ctx.begin_turn(msgs[0])
        for m in msgs[1:]:
            ctx.append(m)
        sent = ctx.compact().rendered.messages
        assert sent[1] is msgs[1] and sent[2] is not msgs[2]
        assert sent[-2] is msgs[-2] and sent[-1] is msgs[-1]

    def test_only_the_stand_ins_count_as_made_up(self):
        msgs = _session(6)
        conversation = Conversation((Turn(msgs[0], tuple(msgs[1:])),))
        counter = BytesCounter()
        rp = replay(conversation, lambda: EditContext(SYSTEM, LastNObservations(n=1)), counter=counter)
        i = len(rp) - 1
        originals = {id(m) for m in msgs}
        stand_ins = [m for m in rp.rendered(i).messages if id(m) not in originals]
        assert stand_ins and all(isinstance(m, ToolResults) for m in stand_ins)  # calls go as they were
        assert rp.requests["summary_tokens"].iloc[i] == sum(counter.count_message(m) for m in stand_ins)
        assert list(rp.kept(i).values()).count("dropped") == len(stand_ins)

    def test_a_policy_that_drops_a_message_is_refused(self):
        ctx = EditContext(SYSTEM, lambda ms: ms[1:])
        ctx.begin_turn(user("a"))
        ctx.append(reply("b"))
        with pytest.raises(StrategyError, match="returned 1 messages for 2"):
            ctx.compact()

    def test_a_stand_in_with_other_ids_is_refused(self):
        ctx = EditContext(SYSTEM, lambda ms: [*ms[:-1], results(("zz", "x"))])
        ctx.begin_turn(user("a"))
        for m in round_trip("a", "x"):
            ctx.append(m)
        with pytest.raises(StrategyError, match=r"call ids \['a'\].*call ids \['zz'\]"):
            ctx.compact()

    def test_the_complexity_trap_on_the_bundled_coding_agent(self):
        convo = datasets.load("coding_agent")
        policy = LastNObservations.complexity_trap()
        edited, full = check_replay(convo, lambda: policy.context(SYSTEM), policy, counter=BytesCounter())
        assert edited.requests.input_tokens.max() <= full.requests.input_tokens.max()


class TestProperties:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(1, 4), st.integers(1, 4))
    def test_replayed_requests_are_the_policy_applied_to_the_history(self, convo, n, polling):
        policy = LastNObservations(n=n, polling=polling)
        check_replay(convo, lambda: policy.context(SYSTEM), policy, counter=BytesCounter())

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(1, 6), st.integers(1, 5))
    def test_last_n_verbatim_pairs_kept_idempotent(self, convo, n, polling):
        msgs = list(convo.messages())
        policy = LastNObservations(n=n, polling=polling)
        out = policy(msgs)
        assert_an_edit(msgs, out)
        assert_pairs_by_ids(out)
        rounds = [k for k, m in enumerate(msgs) if isinstance(m, ToolResults)]
        assert all(out[k] is msgs[k] for k in rounds[-n:]), "the last n observations are verbatim"
        if msgs:
            assert out[-1] is msgs[-1]
        assert policy(out) == out

    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_bundled_conversations(self, name):
        policy = LastNObservations(n=2, polling=2)
        check_replay(datasets.load(name), lambda: policy.context(SYSTEM), policy, counter=BytesCounter())


@pytest.mark.real_data
class TestRealSessions:
    @pytest.mark.parametrize("path", real_params("claude_code/*.jsonl", 6) + real_params("swe_agent/*.traj", 3))
    def test_the_complexity_trap_on_real_sessions(self, real_data, path):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no real sessions")
        policy = LastNObservations.complexity_trap(polling=5)
        edited, full = check_replay(load_any(path), lambda: policy.context(SYSTEM), policy,
                                    counter=BytesCounter())
        rounds = sum(isinstance(m, ToolResults) for m in full.rendered(len(full) - 1).messages)
        if rounds > COMPLEXITY_TRAP_N + 5:
            assert edited.requests.input_tokens.iloc[-1] < full.requests.input_tokens.iloc[-1]
