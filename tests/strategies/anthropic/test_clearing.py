"""Tool-result clearing: Anthropic's clear_tool_uses_20250919, as harpe_lab.strategies.anthropic.clearing."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import Rendered, ToolCall, ToolResult, ToolResults
from harpe_lab.protocol import DeclaresLimit, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.anthropic.clearing import DEFAULT_PLACEHOLDER, ClearToolUses, Priced
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, image, reply, results, round_trip, user
from tests._support.editing import SYSTEM, assert_an_edit, assert_pairs_by_ids, check_replay, conversations, real_params


def _length(messages) -> int:
    """A price for tests: characters of tool output."""
    return sum(len(r.content) for m in messages if isinstance(m, ToolResults) for r in m.results)


def _session(rounds: int, size: int = 100, name: str = "bash") -> list:
    msgs = [user("task")]
    for k in range(rounds):
        msgs += round_trip(f"c{k}", str(k) * size, name)
    return msgs


def _cleared(out) -> list[str]:
    return [r.id for m in out if isinstance(m, ToolResults) for r in m.results if r.content == DEFAULT_PLACEHOLDER]


class TestValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"trigger": -1}, "trigger must be an int >= 0, got -1"),
        ({"keep": -1}, "keep must be an int >= 0, got -1"),
        ({"keep": 2.0}, "keep must be an int >= 0, got 2.0"),
        ({"clear_at_least": -5}, "clear_at_least must be an int >= 0, got -5"),
        ({"exclude_tools": "web_search"}, "exclude_tools must be an iterable of tool names, got 'web_search'"),
        ({"exclude_tools": [1]}, "exclude_tools must hold tool names .str., got 1"),
        ({"clear_tool_inputs": "bash"}, "clear_tool_inputs must be an iterable of tool names, got 'bash'"),
        ({"placeholder": None}, "placeholder must be a str, got None"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            ClearToolUses(**kwargs)

    def test_defaults_are_anthropics(self):
        c = ClearToolUses()
        assert (c.trigger, c.keep, c.clear_at_least, c.exclude_tools, c.clear_tool_inputs) == (
            100_000, 3, 0, frozenset(), False)
        assert c.placeholder == DEFAULT_PLACEHOLDER == "[cleared]"

    def test_keyword_only_frozen_and_picklable(self):
        with pytest.raises(TypeError):
            ClearToolUses(100)  # type: ignore[misc]
        c = ClearToolUses(exclude_tools=["a"], clear_tool_inputs=["b"])
        assert c.exclude_tools == frozenset({"a"}) and c.clear_tool_inputs == frozenset({"b"})
        with pytest.raises(AttributeError):
            c.keep = 1  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(c)) == c

    def test_the_context_wants_a_counter(self):
        with pytest.raises(StrategyError, match="counter must have count_rendered"):
            ClearToolUses().context(SYSTEM, counter=None)

    def test_the_trigger_is_declared_as_a_high_water_mark(self):
        ctx = ClearToolUses(trigger=5000).context(SYSTEM, counter=BytesCounter())
        assert isinstance(ctx, DeclaresLimit) and ctx.limit == Limit(tokens=5000, kind="high_water")


class TestTrigger:
    def test_at_or_below_the_trigger_nothing_changes(self):
        msgs = _session(6)
        assert ClearToolUses(trigger=600, keep=1)(msgs, tokens=_length) == tuple(msgs)

    def test_above_it_all_but_the_newest_keep_are_cleared(self):
        msgs = _session(6)
        out = ClearToolUses(trigger=599, keep=2)(msgs, tokens=_length)
        assert _cleared(out) == ["c0", "c1", "c2", "c3"]
        assert out[-1] is msgs[-1] and out[-3] is msgs[-3]

    def test_the_placeholder_replaces_the_result_keeping_id_and_failure(self):
        msgs = [user("t"), reply("", call("a")), ToolResults((ToolResult("a", "x" * 50, (image(),), False),)),
                *round_trip("b", "y")]
        out = ClearToolUses(trigger=0, keep=1, placeholder="[gone]")(msgs, tokens=_length)
        assert out[2] == ToolResults((ToolResult("a", "[gone]", (), False),))

    def test_the_calls_stay_unless_inputs_are_cleared(self):
        msgs = _session(3)
        out = ClearToolUses(trigger=0, keep=1)(msgs, tokens=_length)
        assert out[1] is msgs[1]
        out = ClearToolUses(trigger=0, keep=1, clear_tool_inputs=True)(msgs, tokens=_length)
        assert out[1].calls == (ToolCall("c0", "bash", {}),) and out[1].text == msgs[1].text
        assert out[5] is msgs[5]

    def test_inputs_of_the_named_tools_only(self):
        msgs = [user("t"), *round_trip("a", "1", "bash"), *round_trip("b", "2", "read"), *round_trip("c", "3")]
        out = ClearToolUses(trigger=0, keep=1, clear_tool_inputs={"read"})(msgs, tokens=_length)
        assert out[1] is msgs[1] and out[3].calls[0].input == {}
        assert _cleared(out) == ["a", "b"]

    def test_parallel_calls_are_separate_tool_uses(self):
        msgs = [user("t"), reply("", call("a"), call("b"), call("c")), results(("a", "1"), ("b", "2"), ("c", "3"))]
        out = ClearToolUses(trigger=0, keep=1)(msgs, tokens=_length)
        assert _cleared(out) == ["a", "b"]
        assert out[-1] is not msgs[-1], "keep counts tool uses: the newest round can be partly cleared"


class TestExcludeAndClearAtLeast:
    def test_excluded_tools_are_never_cleared_and_count_among_the_kept(self):
        msgs = [user("t"), *round_trip("a", "1", "memory"), *round_trip("b", "2"), *round_trip("c", "3", "memory"),
                *round_trip("d", "4")]
        out = ClearToolUses(trigger=0, keep=1, exclude_tools={"memory"})(msgs, tokens=_length)
        assert _cleared(out) == ["b"]

    def test_an_edit_freeing_too_little_is_not_applied(self):
        msgs = _session(4, size=10)  # each cleared result frees 10 - 9 = 1 "token"
        assert _cleared(ClearToolUses(trigger=0, keep=1, clear_at_least=3)(msgs, tokens=_length)) == ["c0", "c1", "c2"]
        assert ClearToolUses(trigger=0, keep=1, clear_at_least=4)(msgs, tokens=_length) == tuple(msgs)

    def test_nothing_to_clear_is_no_edit(self):
        msgs = _session(2)
        assert ClearToolUses(trigger=0, keep=5)(msgs, tokens=_length) == tuple(msgs)


class TestIdempotence:
    @pytest.mark.parametrize("clear", [ClearToolUses(trigger=0, keep=1), ClearToolUses(trigger=300, keep=2),
                                       ClearToolUses(trigger=0, keep=0, clear_tool_inputs=True),
                                       ClearToolUses(trigger=0, keep=1, clear_at_least=150)])
    def test_applying_twice_changes_nothing(self, clear):
        once = clear(_session(6), tokens=_length)
        assert clear(once, tokens=_length) == once

    def test_the_input_is_not_mutated(self):
        msgs = _session(4)
        copy = list(msgs)
        ClearToolUses(trigger=0, keep=1)(msgs, tokens=_length)
        assert msgs == copy


class TestInTheEngine:
    def test_requests_are_priced_whole_system_and_tools_included(self):
        counter, tools = BytesCounter(), ({"type": "function", "function": {"name": "bash", "parameters": {}}},)
        ctx = ClearToolUses(trigger=0, keep=1).context(SYSTEM, counter=counter, tools=tools)
        msgs = _session(2)
        assert ctx.policy.price(msgs) == counter.count_rendered(Rendered(SYSTEM, tuple(msgs)), tools)

    def test_the_bundled_coding_agent_is_cleared_above_the_trigger(self):
        convo = datasets.load("coding_agent")
        counter = BytesCounter()
        full = replay(convo, lambda: ClearToolUses(trigger=10**9).context(SYSTEM, counter=counter),
                      counter=counter)
        trigger = int(full.requests.input_tokens.max() * 0.6)
        # a round of more than `keep` parallel calls is partly cleared, the newest one too
        # (test_parallel_calls_are_separate_tool_uses): keep the largest round whole
        widest = max(len(m.results) for m in convo.messages() if isinstance(m, ToolResults))
        clear = ClearToolUses(trigger=trigger, keep=max(3, widest))
        ctx = lambda: clear.context(SYSTEM, counter=counter)  # noqa: E731
        edited, _ = check_replay(convo, ctx, Priced(clear, ctx().policy.price), counter=counter)
        frame = edited.requests
        assert frame.input_tokens.max() < full.requests.input_tokens.max()
        assert frame.compacted.any()
        # a high-water mark, not a promise: what is kept can still be above it
        assert (frame.overshoot_tokens == (frame.input_tokens - trigger).clip(lower=0)).all()


class TestProperties:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(0, 400), st.integers(3, 6), st.integers(0, 100), st.booleans(),
           st.frozensets(st.sampled_from(["bash", "read", "grep", "edit"]), max_size=2))
    def test_replayed_requests_are_the_policy_applied_to_the_history(self, convo, trigger, keep, least, inputs, exclude):
        counter = BytesCounter()
        clear = ClearToolUses(trigger=trigger, keep=keep, clear_at_least=least, clear_tool_inputs=inputs,
                              exclude_tools=exclude)
        ctx = lambda: clear.context(SYSTEM, counter=counter)  # noqa: E731
        edited, full = check_replay(convo, ctx, Priced(clear, ctx().policy.price), counter=counter)
        frame, whole = edited.requests, full.requests
        for i in range(len(frame)):
            # edited only where the unedited request was above the trigger
            if whole.input_tokens.iloc[i] <= trigger:
                assert frame.input_tokens.iloc[i] == whole.input_tokens.iloc[i]
            assert frame.overshoot_tokens.iloc[i] == max(0, frame.input_tokens.iloc[i] - trigger)

    def test_a_call_id_reused_by_a_later_call_renames_an_excluded_use(self):
        # the names are the whole request's, the last call of an id winning: a later call
        # reusing the id of an excluded tool's use makes that use clearable (and the reverse)
        from harpe_lab.conversation import Conversation, Turn

        out = "x" * 300
        rounds = [*round_trip("c1", out, "read"), *round_trip("c2", out), *round_trip("c1", out, "bash"),
                  *round_trip("c3", out), *round_trip("c4", out)]
        convo = Conversation((Turn(user("go"), (*rounds, reply("done")), "answered"),), id="reused-ids")
        counter = BytesCounter()
        for excluded in ({"read"}, {"bash"}):
            clear = ClearToolUses(trigger=0, keep=1, exclude_tools=excluded, clear_at_least=10)
            ctx = lambda: clear.context(SYSTEM, counter=counter)  # noqa: E731
            edited, _ = check_replay(convo, ctx, Priced(clear, ctx().policy.price), counter=counter)
            first = edited.rendered(-1).messages[2].results[0].content
            assert first == (DEFAULT_PLACEHOLDER if excluded == {"read"} else out)

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(0, 6), st.booleans())
    def test_the_newest_keep_uses_are_verbatim_and_pairs_kept(self, convo, keep, inputs):
        msgs = convo.messages()
        clear = ClearToolUses(trigger=0, keep=keep, clear_tool_inputs=inputs)
        out = clear(msgs, tokens=_length)
        assert_an_edit(msgs, out)
        assert_pairs_by_ids(out)
        uses = [(i, j) for i, m in enumerate(msgs) if isinstance(m, ToolResults) for j in range(len(m.results))]
        for i, j in uses[len(uses) - keep:] if keep else []:
            assert out[i].results[j] is msgs[i].results[j]
        assert clear(out, tokens=_length) == out


@pytest.mark.real_data
class TestRealSessions:
    @pytest.mark.parametrize("path", real_params("claude_code/*.jsonl", 6) + real_params("swe_agent/*.traj", 3))
    def test_clearing_on_real_sessions(self, real_data, path):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no real sessions")
        counter = BytesCounter()
        clear = ClearToolUses(trigger=20_000, clear_at_least=2_000)
        ctx = lambda: clear.context(SYSTEM, counter=counter)  # noqa: E731
        edited, full = check_replay(load_any(path), ctx, Priced(clear, ctx().policy.price), counter=counter,
                                    newest=False)
        above = full.requests.input_tokens > 20_000
        if above.any():
            assert edited.requests.input_tokens.max() < full.requests.input_tokens.max()
