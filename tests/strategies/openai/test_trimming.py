"""Tool output trimming: the OpenAI Agents SDK's ToolOutputTrimmer, as
harpe_lab.strategies.openai.agents_sdk (grouped as the SDK's own tests are)."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import ToolResult, ToolResults
from harpe_lab.strategies.openai.agents_sdk import ToolOutputTrimmer, trimmed_text
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, image, reply, results, round_trip, user
from tests._support.editing import SYSTEM, assert_an_edit, assert_pairs_by_ids, check_replay, conversations

BIG = "x" * 1000


def _two_turns(content: str = BIG, name: str = "search") -> list:
    """An old turn with one tool output, then two recent user messages."""
    return [user("q1"), *round_trip("c1", content, name), reply("a1"), user("q2"), reply("a2"), user("q3")]


class TestValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"recent_turns": 0}, "recent_turns must be an int >= 1, got 0"),
        ({"max_output_chars": 0}, "max_output_chars must be an int >= 1, got 0"),
        ({"preview_chars": -1}, "preview_chars must be an int >= 0, got -1"),
        ({"recent_turns": 1.5}, "recent_turns must be an int >= 1, got 1.5"),
        ({"trimmable_tools": b"search"}, "trimmable_tools must be a tool name, an iterable of names or None, got b'search'"),
        ({"trimmable_tools": 3}, "trimmable_tools must be a tool name, an iterable of names or None, got 3"),
        ({"trimmable_tools": ["a", 3]}, "trimmable_tools must hold tool names .str., got 3"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            ToolOutputTrimmer(**kwargs)

    def test_defaults_are_the_sdks(self):
        t = ToolOutputTrimmer()
        assert (t.recent_turns, t.max_output_chars, t.preview_chars, t.trimmable_tools) == (2, 500, 200, None)

    def test_tool_names_become_a_frozenset(self):
        assert ToolOutputTrimmer(trimmable_tools="search").trimmable_tools == frozenset({"search"})
        assert ToolOutputTrimmer(trimmable_tools=["a", "b", "a"]).trimmable_tools == frozenset({"a", "b"})

    def test_keyword_only_frozen_and_picklable(self):
        with pytest.raises(TypeError):
            ToolOutputTrimmer(2)  # type: ignore[misc]
        t = ToolOutputTrimmer(trimmable_tools=["a"])
        with pytest.raises(AttributeError):
            t.recent_turns = 3  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(t)) == t


class TestTrimmedText:
    def test_the_sdks_exact_text(self):
        assert trimmed_text("abcdefgh", "search", 3) == "[Trimmed: search output — 8 chars → 3 char preview]\nabc..."

    def test_an_unknown_tool(self):
        assert trimmed_text("abcdefgh", "", 2).startswith("[Trimmed: unknown_tool output — 8 chars")

    def test_a_trimmed_output_in_place(self):
        out = ToolOutputTrimmer()(_two_turns())
        r = out[2].results[0]
        assert r == ToolResult("c1", f"[Trimmed: search output — 1000 chars → 200 char preview]\n{'x' * 200}...")

    def test_characters_are_code_points(self):
        out = ToolOutputTrimmer(max_output_chars=5, preview_chars=2)(_two_turns("✓" * 100))
        assert out[2].results[0].content == "[Trimmed: search output — 100 chars → 2 char preview]\n✓✓..."

    def test_attachments_and_failure_are_kept(self):
        msgs = _two_turns()
        msgs[2] = ToolResults((ToolResult("c1", BIG, (image(),), False),))
        r = ToolOutputTrimmer()(msgs)[2].results[0]
        assert r.attachments == (image(),) and r.success is False and r.content.startswith("[Trimmed: ")


class TestRecentBoundary:
    def test_the_last_recent_turns_user_messages_are_never_trimmed(self):
        msgs = [user("q1"), *round_trip("c1", BIG), user("q2"), *round_trip("c2", BIG), user("q3"),
                *round_trip("c3", BIG)]
        out = ToolOutputTrimmer(recent_turns=2)(msgs)
        assert out[2] is not msgs[2] and out[5] is msgs[5] and out[8] is msgs[8]
        out = ToolOutputTrimmer(recent_turns=1)(msgs)
        assert out[2] is not msgs[2] and out[5] is not msgs[5] and out[8] is msgs[8]

    def test_fewer_user_messages_than_recent_turns_trims_nothing(self):
        msgs = [user("q1"), *round_trip("c1", BIG), *round_trip("c2", BIG)]
        assert ToolOutputTrimmer(recent_turns=2)(msgs) == tuple(msgs)

    def test_a_boundary_at_the_first_message_trims_nothing(self):
        msgs = [user("q1"), *round_trip("c1", BIG), user("q2"), *round_trip("c2", BIG)]
        out = ToolOutputTrimmer(recent_turns=2)(msgs)
        assert all(o is m for o, m in zip(out, msgs))

    def test_inside_one_long_agent_turn_nothing_is_trimmed(self):
        msgs = [user("q")] + [m for k in range(30) for m in round_trip(f"c{k}", BIG)]
        assert ToolOutputTrimmer(recent_turns=1)(msgs) == tuple(msgs)


class TestThreshold:
    def test_outputs_at_the_limit_are_kept(self):
        out = ToolOutputTrimmer(max_output_chars=1000)(_two_turns())
        assert out[2].results[0].content == BIG

    def test_a_replacement_not_shorter_is_not_made(self):
        content = "y" * 60
        out = ToolOutputTrimmer(max_output_chars=10, preview_chars=50)(_two_turns(content))
        assert out[2].results[0].content == content


class TestTrimmableTools:
    def test_only_the_named_tools(self):
        msgs = [user("q1"), reply("", call("a", "search"), call("b", "bash")), results(("a", BIG), ("b", BIG)),
                user("q2"), user("q3")]
        out = ToolOutputTrimmer(trimmable_tools={"search"})(msgs)
        assert out[2].results[0].content.startswith("[Trimmed: search") and out[2].results[1].content == BIG

    def test_an_output_without_its_call_is_not_trimmable(self):
        msgs = [user("q0"), results(("lost", BIG)), user("q1"), user("q2")]
        assert ToolOutputTrimmer(trimmable_tools={"search", ""})(msgs)[1] is msgs[1]
        assert ToolOutputTrimmer()(msgs)[1].results[0].content.startswith("[Trimmed: unknown_tool output")


class TestImmutabilityAndIdempotence:
    def test_the_input_is_not_mutated(self):
        msgs = _two_turns()
        copy = list(msgs)
        out = ToolOutputTrimmer()(msgs)
        assert msgs == copy and out != tuple(msgs)

    def test_applying_twice_changes_nothing(self):
        t = ToolOutputTrimmer()
        once = t(_two_turns())
        assert t(once) == once

    def test_like_the_sdk_a_preview_longer_than_the_limit_is_trimmed_again(self):
        t = ToolOutputTrimmer(max_output_chars=100, preview_chars=95)
        once = t(_two_turns())
        assert t(once) != once


class TestProperties:
    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(1, 3), st.integers(1, 300), st.integers(0, 200),
           st.none() | st.frozensets(st.sampled_from(["bash", "read", "grep", "edit"])))
    def test_pairs_kept_newest_kept_recent_untouched(self, convo, recent, limit, preview, tools):
        msgs = convo.messages()
        t = ToolOutputTrimmer(recent_turns=recent, max_output_chars=limit, preview_chars=preview, trimmable_tools=tools)
        out = t(msgs)
        assert_an_edit(msgs, out)
        assert_pairs_by_ids(out)
        assert all(o is m for o, m in zip(out[t.boundary(msgs):], msgs[t.boundary(msgs):]))
        for o, m in zip(out, msgs):
            if isinstance(m, ToolResults):
                for a, b in zip(o.results, m.results):
                    assert a is b or (len(b.content) > limit and len(a.content) < len(b.content))
        if preview + 80 <= limit:  # the trimmed text fits the limit: a second pass keeps it
            assert t(out) == out

    @settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(1, 3), st.integers(1, 300), st.integers(0, 100))
    def test_replayed_requests_are_the_policy_applied_to_the_history(self, convo, recent, limit, preview):
        t = ToolOutputTrimmer(recent_turns=recent, max_output_chars=limit, preview_chars=preview)
        check_replay(convo, lambda: t.context(SYSTEM), t, counter=BytesCounter())

    def test_a_call_id_reused_by_a_later_call_renames_the_trimmed_outputs(self):
        # the names are the whole request's, the last call of an id winning: a later call
        # reusing an id already trimmed changes that output's stand-in (and with
        # trimmable_tools, whether it is trimmed at all)
        from harpe_lab.conversation import Conversation, Turn

        long = "x" * 120
        turns = (
            Turn(user("one"), (reply("", call("c1", "read")), results(("c1", long)), reply("done")), "answered"),
            Turn(user("two"), (reply("ok"),), "answered"),
            Turn(user("three"), (reply("", call("c1", "bash")), results(("c1", long)), reply("done")), "answered"),
            Turn(user("four"), (reply("ok"),), "answered"),
        )
        convo = Conversation(turns, id="reused-ids")
        for tools in (None, {"bash"}, {"read"}):
            t = ToolOutputTrimmer(recent_turns=1, max_output_chars=50, preview_chars=10, trimmable_tools=tools)
            edited, _ = check_replay(convo, lambda: t.context(SYSTEM), t, counter=BytesCounter())
            first = edited.rendered(-1).messages[2].results[0].content
            assert first.startswith("[Trimmed: bash output") if tools != {"read"} else first == long

    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_bundled_conversations(self, name):
        t = ToolOutputTrimmer(recent_turns=1, max_output_chars=200, preview_chars=50)
        edited, full = check_replay(datasets.load(name), lambda: t.context(SYSTEM), t, counter=BytesCounter())
        assert edited.requests.input_tokens.sum() < full.requests.input_tokens.sum(), "it trimmed something"
