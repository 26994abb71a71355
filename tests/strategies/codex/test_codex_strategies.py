"""Codex CLI's auto-compaction and tool-output truncation (harpe_lab.strategies.codex), and the
check against the one compaction Codex really made.

The pinned cases are computed by hand from Codex's source (openai/codex @5e505ff8:
``core/src/compact.rs``, ``core/src/truncate.rs``, ``core/src/context_manager/history.rs``,
``protocol/src/openai_models.rs``); two of them are Codex's own unit tests
(``truncate_tokens_less_than_placeholder_returns_placeholder``,
``build_token_limited_compacted_history_truncates_overlong_user_messages``).

The real compaction: ``../shared/data/real/codex/`` holds six rollouts Codex 0.104.0-alpha.1
wrote; one (``rollout-2026-02-23T12-54-34-…``) compacted once, mid-turn, after a call whose
input was 209,950 tokens. Its text is redacted to ``[REDACTED_… len=N sha=…]``; the sizes are
real. Driven by hand with the usage Codex recorded, the rule fires at that call once the count
carries Codex's estimate of the encrypted reasoning the reported usage leaves out (read from the
rollout's own reasoning items); replayed as loaded, with a counter calibrated on the session
(which weighs each marker as the text it replaced), within two calls of it.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import re
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.conversation import Conversation, Turn
from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, Rendered, ToolCall, ToolResult, ToolResults, Usage, UserInput
from harpe_lab.presets import PRESETS, make_strategy
from harpe_lab.protocol import ContextCompacted, DeclaresLimit, DistillCall, HoldsSummary, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.codex import (
    AUTO_COMPACT_PERCENT,
    COMPACT_PROMPT,
    CONTEXT_WINDOW,
    EFFECTIVE_WINDOW_PERCENT,
    SUMMARY_PREFIX,
    TOOL_OUTPUT_TOKENS,
    USER_MESSAGE_TOKENS,
    Compact,
    Compacted,
    ToolOutputTruncation,
    approx_tokens,
    is_summary_message,
    kept_user_messages,
    summary_message,
    truncate_middle,
)
from harpe_lab.strategies.editing import EditContext
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, image, reply, results, round_trip, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, check_replay, conversations, real_params

COUNTER = BytesCounter()


def output_tokens(message: ToolResults) -> int:
    """Codex's estimate of tool outputs recorded after a reply, written out independently: each
    output is a ``function_call_output`` item, serialized compactly, at 4 bytes a token."""
    total = 0
    for r in message.results:
        item = {"type": "function_call_output", "call_id": r.id, "output": r.content}
        total += math.ceil(len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode()) / 4)
    return total


class Distiller:
    """A distiller that records what it was asked."""

    def __init__(self, reply: object = "the summary") -> None:
        self.reply = reply
        self.requests: list[Rendered] = []

    def __call__(self, rendered: Rendered):
        self.requests.append(rendered)
        return self.reply


def _context(limit: int, distill=None, events=None, **options):
    return Compact(token_limit=limit, **options).context(SYSTEM, distill=distill or Distiller(), on_event=events)


def _round(ctx, usage: Usage, call_id: str, content: str):
    """One model call's reply (with its reported usage) and its tool output, then the check."""
    ctx.observe(usage)
    ctx.append(reply("", call(call_id)))
    ctx.append(results((call_id, content)))
    return ctx.compact()


def _answer(ctx, usage: Usage, text: str = "done") -> None:
    ctx.observe(usage)
    ctx.append(reply(text))
    ctx.commit_turn()


class TestValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 1}, "window must be an int >= 2, got 1"),
        ({"window": 272_000.0}, "window must be an int >= 2, got 272000.0"),
        ({"token_limit": 0}, "token_limit must be an int >= 1, got 0"),
        ({"token_limit": True}, "token_limit must be an int >= 1, got True"),
        ({"token_limit": 250_000}, "token_limit must be at most 90% of window .244,800., got 250,000"),
        ({"window": 100_000, "token_limit": 90_001}, "at most 90% of window .90,000., got 90,001"),
        ({"user_tokens": -1}, "user_tokens must be an int >= 0, got -1"),
        ({"reasoning": -5}, "reasoning must be an int >= 0, got -5"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            Compact(**kwargs)

    def test_defaults_are_codexs(self):
        config = Compact()
        assert (config.window, config.token_limit, config.user_tokens, config.reasoning) == (272_000, None, 20_000, 0)
        assert (CONTEXT_WINDOW, AUTO_COMPACT_PERCENT, USER_MESSAGE_TOKENS) == (272_000, 90, 20_000)
        assert config.limit == 244_800  # (272,000 * 9) / 10
        # the window the rollouts report (model_context_window) is the effective one, not the limit's base
        assert CONTEXT_WINDOW * EFFECTIVE_WINDOW_PERCENT // 100 == 258_400
        assert Compact(token_limit=200_000).limit == 200_000 and Compact(window=1_000_000).limit == 900_000

    def test_keyword_only_frozen_and_picklable(self):
        with pytest.raises(TypeError):
            Compact(100_000)  # type: ignore[misc]
        config = Compact(window=100_000, token_limit=50_000)
        with pytest.raises(AttributeError):
            config.window = 1  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(config)) == config
        with pytest.raises(TypeError):
            ToolOutputTruncation(5)  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(ToolOutputTruncation(max_tokens=5))) == ToolOutputTruncation(max_tokens=5)

    def test_the_context_needs_a_distiller_and_a_system_prompt(self):
        with pytest.raises(StrategyError, match="distill must be a callable"):
            Compact().context(SYSTEM, distill=None)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="base_system must be a str"):
            Compact().context(None, distill=Distiller())  # type: ignore[arg-type]

    def test_the_limit_is_declared_as_a_high_water_mark(self):
        ctx = Compact().context(SYSTEM, distill=Distiller())
        assert isinstance(ctx, DeclaresLimit) and ctx.limit == Limit(tokens=244_800, kind="high_water")
        assert isinstance(ctx, HoldsSummary) and ctx.base_system == SYSTEM and ctx.summary == ""

    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"max_tokens": -1}, "max_tokens must be an int >= 0, got -1"),
        ({"max_tokens": "10000"}, "max_tokens must be an int >= 0, got '10000'"),
    ])
    def test_bad_truncation_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            ToolOutputTruncation(**kwargs)

    def test_truncate_middle_refuses_a_negative_budget(self):
        with pytest.raises(StrategyError, match="max_tokens must be an int >= 0, got -1"):
            truncate_middle("text", -1)
        with pytest.raises(StrategyError, match="budget must be an int >= 0, got -1"):
            kept_user_messages(["text"], -1)


# --- Codex's text rules, pinned ------------------------------------------------------------


class TestTruncateMiddle:
    def test_codexs_own_case(self):
        # truncate.rs: formatted_truncate_text("example output", Tokens(1)) is
        # "Total output lines: 1\n\nex…3 tokens truncated…ut"; truncate_text is its last part:
        # 14 bytes, a budget of 4: 2 head, 2 tail, ceil((14 - 4) / 4) = 3 removed
        assert truncate_middle("example output", 1) == "ex…3 tokens truncated…ut"

    def test_a_text_within_the_budget_is_unchanged(self):
        assert truncate_middle("x" * 40, 10) == "x" * 40  # exactly 4 bytes a token
        assert truncate_middle("", 0) == "" and truncate_middle("", 5) == ""
        assert truncate_middle("x" * 41, 10) == "x" * 20 + "…1 tokens truncated…" + "x" * 20

    def test_a_zero_budget_leaves_the_marker_alone(self):
        assert truncate_middle("abcdef", 0) == "…2 tokens truncated…"  # ceil(6 / 4)

    def test_cuts_fall_on_character_boundaries(self):
        # 60 bytes of "é": 6 head bytes, 6 tail bytes, ceil(48 / 4) = 12 removed
        assert truncate_middle("é" * 30, 3) == "ééé…12 tokens truncated…ééé"
        # "xé" is 3 bytes; a budget of 8: the head's 4 bytes end after "xéx", the tail's last
        # 4 bytes start inside an "é", which is dropped
        assert truncate_middle("xé" * 10, 2) == "xéx…6 tokens truncated…xé"
        assert truncate_middle("😀abc😀", 2) == "😀…1 tokens truncated…😀"

    def test_tokens_are_bytes_over_four(self):
        assert [approx_tokens(t) for t in ("", "a", "abcd", "abcde", "é", "😀😀")] == [0, 1, 1, 2, 1, 2]


class TestKeptUserMessages:
    def test_codexs_own_case(self):
        # compact.rs: a 1,000-byte message with 16 tokens left keeps 32 bytes at each end
        big = "word " * 200
        (kept,) = kept_user_messages([big], 16)
        assert kept == big[:32] + "…234 tokens truncated…" + big[-32:]

    def test_the_newest_first_and_the_one_that_crosses_is_cut(self):
        texts = ["a" * 40, "b" * 40, "c" * 40]  # 10 tokens each
        assert kept_user_messages(texts, 25) == ["a" * 10 + "…5 tokens truncated…" + "a" * 10, "b" * 40, "c" * 40]

    def test_the_walk_stops_when_nothing_is_left(self):
        texts = ["a" * 40, "b" * 40, "c" * 40]
        assert kept_user_messages(texts, 20) == ["b" * 40, "c" * 40]
        assert kept_user_messages(texts, 0) == []
        assert kept_user_messages([], 100) == []

    def test_messages_over_twenty_thousand_tokens(self):
        # 7,500 + 15,000 + 2,000 tokens: the newest two whole (17,000), the oldest cut to the
        # 3,000 left: 6,000 bytes at each end, ceil((30,000 - 12,000) / 4) removed
        oldest, middle, newest = "o" * 30_000, "m" * 60_000, "n" * 8_000
        kept = kept_user_messages([oldest, middle, newest])
        assert kept == ["o" * 6_000 + "…4500 tokens truncated…" + "o" * 6_000, middle, newest]
        # one message over the whole budget alone: 40,000 bytes at each end, ceil(20,000 / 4) removed
        (only,) = kept_user_messages(["z" * 100_000])
        assert only == "z" * 40_000 + "…5000 tokens truncated…" + "z" * 40_000


class TestSummaryMessage:
    def test_the_exact_prefix(self):
        # templates/compact/summary_prefix.md, which has no final newline
        assert SUMMARY_PREFIX == (
            "Another language model started to solve this problem and produced a summary of its thinking "
            "process. You also have access to the state of the tools that were used by that language model. "
            "Use this to build on the work that has already been done and avoid duplicating work. Here is the "
            "summary produced by the other language model, use the information in this summary to assist with "
            "your own analysis:"
        )
        assert summary_message("S") == SUMMARY_PREFIX + "\nS"
        assert is_summary_message(summary_message("")) and not is_summary_message(SUMMARY_PREFIX)
        assert COMPACT_PROMPT.startswith("You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary")


# --- the lifecycle ----------------------------------------------------------------------------


class TestCount:
    def test_the_count_is_the_last_usage_plus_the_outputs_since_at_four_bytes_a_token(self):
        ctx = _context(1000)
        ctx.begin_turn(user("x" * 400))
        assert ctx.tokens == 0  # the turn's message is not in the pre-turn check
        assert not ctx.compact().compacted
        # 980 reported (input and output), then an output of 3 characters: its item
        # {"type":"function_call_output","call_id":"a","output":"yyy"} is 60 bytes, 15 tokens
        assert not _round(ctx, Usage(input_tokens=970, output_tokens=10), "a", "y" * 3).compacted
        assert ctx.tokens == 980 + 15
        # 940 reported, then 183 characters: 240 bytes, 60 tokens, exactly 1,000 — Codex compacts at >=
        assert _round(ctx, Usage(input_tokens=930, output_tokens=10), "b", "z" * 183).compacted

    def test_reasoning_counts_for_each_reply_before_the_newest_user_message(self):
        ctx = _context(10_000, reasoning=100)
        ctx.begin_turn(user("first"))
        ctx.compact()
        _round(ctx, Usage(input_tokens=50), "a", "")
        _answer(ctx, Usage(input_tokens=60, output_tokens=5))
        # the current turn's replies do not count yet
        assert ctx.tokens == 65
        ctx.begin_turn(user("second"))
        assert ctx.tokens == 65  # the pre-turn check: still the first turn's
        ctx.compact()
        assert ctx.tokens == 65 + 200 + math.ceil(len('{"type":"message","role":"user","content":'
                                                      '[{"type":"input_text","text":"second"}]}') / 4)
        ctx.observe(Usage(input_tokens=100, output_tokens=1))
        assert ctx.tokens == 101 + 200  # two replies before "second"


class TestCompaction:
    def test_mid_turn_the_history_becomes_the_user_messages_and_the_summary(self):
        distill = Distiller()
        events: list = []
        ctx = _context(100, distill, events.append)
        ctx.begin_turn(user("fix the bug"))
        ctx.compact()
        _answer(ctx, Usage(input_tokens=20), "which bug?")
        shot = UserInput("the one in the screenshot", (image(),))
        ctx.begin_turn(shot)
        ctx.compact()
        out = _round(ctx, Usage(input_tokens=200), "a", "error: line 3")
        assert out.compacted and out.rendered.system == SYSTEM
        first, second, summary = out.rendered.messages
        assert first is ctx.transcript[0]  # kept whole: the original message
        assert first == user("fix the bug")
        assert second == UserInput("the one in the screenshot")  # its image dropped, as Codex keeps text only
        assert summary == UserInput(SUMMARY_PREFIX + "\nthe summary") and ctx.summary == "the summary"
        # the distiller saw everything: Codex's prompt as its system prompt, the history as Harpe's excerpt
        (request,) = distill.requests
        assert request.system == COMPACT_PROMPT
        assert "fix the bug" in request.messages[0].text and "error: line 3" in request.messages[0].text
        compacted = next(e for e in events if isinstance(e, Compacted))
        assert compacted == Compacted(tokens=200 + output_tokens(results(("a", "error: line 3"))), limit=100,
                                      phase="mid_turn")
        # every message but the first left the request: the screenshot's went too, for a text-only one
        assert [type(e) for e in events] == [Compacted, ContextCompacted] and events[1].dropped_messages == 4
        # and the agent goes on: the next request is what was kept, then what follows
        ctx.observe(Usage(input_tokens=40))
        ctx.append(reply("", call("b")))
        ctx.append(results(("b", "ok")))
        after = ctx.compact()
        assert not after.compacted and after.rendered.messages[:3] == (first, second, summary)
        assert len(after.rendered.messages) == 5

    def test_before_a_turn_its_message_is_left_out_and_follows_the_summary(self):
        distill = Distiller()
        events: list = []
        ctx = _context(100, distill, events.append)
        ctx.begin_turn(user("task one"))
        ctx.compact()
        _answer(ctx, Usage(input_tokens=95, output_tokens=5))
        new = user("task two")
        ctx.begin_turn(new)
        out = ctx.compact()
        assert out.compacted
        assert out.rendered.messages == (user("task one"), UserInput(summary_message("the summary")), new)
        assert out.rendered.messages[-1] is new
        assert "task two" not in distill.requests[0].messages[0].text
        assert events[0] == Compacted(tokens=100, limit=100, phase="pre_turn")

    def test_a_second_compaction_keeps_no_earlier_summary_and_folds_it(self):
        distill = Distiller()
        ctx = _context(100, distill)
        ctx.begin_turn(user("task"))
        ctx.compact()
        assert _round(ctx, Usage(input_tokens=200), "a", "out").compacted
        distill.reply = "the second summary"
        assert _round(ctx, Usage(input_tokens=200), "b", "out").compacted
        assert ctx.transcript == (user("task"), UserInput(summary_message("the second summary")))
        assert distill.requests[1].messages[0].text.startswith("Current summary:\n\nthe summary\n\n")

    def test_assistant_and_tool_content_is_dropped_and_user_messages_are_cut_to_the_budget(self):
        ctx = _context(100, user_tokens=12)
        ctx.begin_turn(user("o" * 40))
        ctx.compact()
        _answer(ctx, Usage(input_tokens=10), "a long answer")
        ctx.begin_turn(user("n" * 32))
        ctx.compact()
        out = _round(ctx, Usage(input_tokens=500), "a", "x" * 1000)
        kept = out.rendered.messages
        assert all(isinstance(m, UserInput) for m in kept)
        # 8 tokens for the newest, the 4 left for the oldest: 8 bytes at each end, ceil(24 / 4) removed
        assert [m.text for m in kept[:-1]] == ["o" * 8 + "…6 tokens truncated…" + "o" * 8, "n" * 32]

    def test_right_after_a_compaction_nothing_is_folded_again(self):
        ctx = _context(1, Distiller("a summary far longer than one token"))
        ctx.begin_turn(user("go on"))
        ctx.compact()
        _answer(ctx, Usage(input_tokens=10))
        ctx.begin_turn(user("and again"))
        assert ctx.compact().compacted
        again = ctx.compact()
        assert ctx.tokens >= 1 and not again.compacted

    def test_a_first_message_alone_is_never_compacted(self):
        ctx = _context(1, reasoning=0)
        ctx.begin_turn(user("x" * 10_000))
        assert not ctx.compact().compacted

    def test_a_distiller_saying_not_now_leaves_everything(self):
        ctx = _context(10, Distiller(None))
        ctx.begin_turn(user("task"))
        ctx.compact()
        out = _round(ctx, Usage(input_tokens=100), "a", "out")
        assert not out.compacted and len(out.rendered.messages) == 3 and ctx.summary == ""

    def test_a_distiller_must_return_text(self):
        ctx = _context(10, Distiller(42))
        ctx.begin_turn(user("task"))
        ctx.compact()
        with pytest.raises(StrategyError, match="distill must return a str or None, got int"):
            _round(ctx, Usage(input_tokens=100), "a", "out")

    def test_an_aborted_turn_takes_back_its_compaction(self):
        ctx = _context(100)
        ctx.begin_turn(user("first"))
        ctx.compact()
        _answer(ctx, Usage(input_tokens=50))
        ctx.begin_turn(user("second"))
        ctx.compact()
        assert _round(ctx, Usage(input_tokens=500), "a", "out").compacted
        ctx.abort_turn()
        assert ctx.transcript == (user("first"), reply("done"), user("second")) and ctx.summary == ""
        assert ctx.tokens == 50 + math.ceil(len('{"type":"message","role":"user","content":'
                                                '[{"type":"input_text","text":"second"}]}') / 4)
        assert ctx.compact().edits is None  # the aborted turn's messages are gone: no promise


# --- replays ---------------------------------------------------------------------------------


def _check(conversation, limit: int, user_tokens: int = USER_MESSAGE_TOKENS):
    """Replay under the strategy and under the full history, and check what Codex promises at
    every request. Returns both replays."""
    events: list = []
    config = Compact(token_limit=limit, user_tokens=user_tokens)
    rp = replay(conversation, lambda: config.context(SYSTEM, distill=ExtractiveDistiller(max_chars=400)),
                counter=COUNTER, name="codex", on_event=events.append)
    full = replay(conversation, lambda: FullContext(SYSTEM), counter=COUNTER, name="full")
    assert len(rp) == len(full)
    frame = rp.requests
    compacted_at = set(frame.request[frame.summarized])
    assert {e.request for e in events if e.kind == "ContextCompacted"} == compacted_at
    assert (frame.overshoot_tokens == (frame.input_tokens - limit).clip(lower=0)).all()
    for e in events:
        if e.kind == "Compacted":
            assert e.event.tokens >= limit == e.event.limit
    for i in range(len(rp)):
        sent = rp.rendered(i).messages
        assert sent, f"request {i} is empty"
        assert_pairs_by_ids(sent)
        ids, available = rp.sent_ids(i), rp.available_ids(i)
        turn, step = int(frame.turn[i]), int(frame.step[i])
        if i in compacted_at:
            # the users' messages Codex keeps, then the summary, then (before a turn) the turn's own
            # message; no assistant or tool content
            pre_turn = step == 0
            assert all(isinstance(m, UserInput) for m in sent)
            assert sent[-2 if pre_turn else -1] == UserInput(summary_message(rp.summary(i)))
            if pre_turn:
                assert ids[-1] == available[-1]  # the turn's own message, the original
            # what the strategy held: the previous request and the reply and outputs after it (an
            # aborted turn in between restores an older history: not rebuilt here)
            if not pre_turn or conversation.turns[turn - 1].outcome == "answered":
                held = [m.text for m in rp.rendered(i - 1).messages
                        if isinstance(m, UserInput) and not is_summary_message(m.text)]
                kept = kept_user_messages(held, user_tokens)
                assert [m.text for m in sent] == kept + [summary_message(rp.summary(i))] + (
                    [conversation.turns[turn].input.text] if pre_turn else [])
        elif not rp.summary(i):
            assert sent == full.rendered(i).messages  # until it fires, everything is sent
        else:
            assert ids[-1] == available[-1]  # after it, the newest message is always there
        # the count Codex checks before request i, rebuilt from the frame: the previous call's
        # usage and the outputs recorded after its reply
        prev = i - 1
        if i == 0:
            assert i not in compacted_at
            continue
        if step > 0:
            reported = int(frame.input_tokens[prev] + frame.output_tokens[prev])
            count = reported + output_tokens(full.rendered(i).messages[-1])
        else:
            before = conversation.turns[turn - 1]
            if before.outcome != "answered" or not before.messages or before.messages[-1].role != "assistant":
                continue  # an aborted turn rolls the count back to its start: not rebuilt here
            count = int(frame.input_tokens[prev] + frame.output_tokens[prev])
        assert (i in compacted_at) == (count >= limit), f"request {i}: count {count}, limit {limit}"
    return rp, full


class TestProperties:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(50, 3000), st.sampled_from([0, 3, 40, USER_MESSAGE_TOKENS]))
    def test_compacts_exactly_when_codexs_count_reaches_the_limit(self, convo, limit, user_tokens):
        _check(convo, limit, user_tokens)


class TestBundledDatasets:
    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_the_preset_compacts_the_bundled_conversations(self, name):
        convo = datasets.load(name)
        full = replay(convo, lambda: FullContext(convo.system), counter=COUNTER)
        limit = int(full.requests.input_tokens.max() * 0.5)
        rp = replay(convo, make_strategy("codex", budget=limit, system=convo.system), counter=COUNTER)
        frame = rp.requests
        assert rp.limit == Limit(tokens=limit, kind="high_water")
        assert frame.summarized.any() and frame.input_tokens.max() < full.requests.input_tokens.max()
        assert frame.distill_calls.sum() == frame.summarized.sum()
        distills = [e.event for e in rp.events if isinstance(e.event, DistillCall)]
        assert distills and all(d.request.system == COMPACT_PROMPT for d in distills)
        _check(convo, limit)


    def test_both_phases_happen_on_the_bundled_conversations(self):
        # so that the checks above are not vacuous: compactions before a turn and inside one
        phases = set()
        for name in datasets.list_datasets():
            convo = datasets.load(name)
            full = replay(convo, lambda: FullContext(convo.system), counter=COUNTER)
            limit = int(full.requests.input_tokens.max() * 0.5)
            rp = replay(convo, make_strategy("codex", budget=limit, system=convo.system), counter=COUNTER)
            phases |= {e.event.phase for e in rp.events if e.kind == "Compacted"}
        assert phases == {"pre_turn", "mid_turn"}


# --- tool output truncation ------------------------------------------------------------------


class TestToolOutputTruncation:
    def test_the_budget_is_the_policy_times_codexs_allowance(self):
        assert TOOL_OUTPUT_TOKENS == 10_000
        assert ToolOutputTruncation().budget == 12_000  # 48,000 bytes
        assert ToolOutputTruncation(max_tokens=7).budget == 9  # ceil(8.4)

    def test_an_output_over_48000_bytes_keeps_its_halves(self):
        policy = ToolOutputTruncation()
        at_budget, over = "a" * 48_000, "h" * 24_000 + "mid" + "t" * 24_000
        out = policy([user("go"), *round_trip("c1", at_budget), *round_trip("c2", over)])
        assert out[2].results[0].content == at_budget
        assert out[4].results[0].content == "h" * 24_000 + "…1 tokens truncated…" + "t" * 24_000

    def test_ids_success_and_attachments_are_kept_and_nothing_else_changes(self):
        policy = ToolOutputTruncation(max_tokens=1)  # a budget of 2 tokens: 8 bytes
        shot = image()
        msgs = [user("go"), reply("look", call("c1"), call("c2")),
                ToolResults((ToolResult("c1", "0123456789abcdef", (shot,), False), ToolResult("c2", "short"))),
                reply("done")]
        out = policy(msgs)
        assert out[0] is msgs[0] and out[1] is msgs[1] and out[3] is msgs[3]
        cut, kept = out[2].results
        assert cut == ToolResult("c1", "0123…2 tokens truncated…cdef", (shot,), False)
        assert kept is msgs[2].results[1]
        assert policy(msgs[:2]) == tuple(msgs[:2])

    def test_the_newest_output_is_sent_cut_and_the_prefix_survives(self):
        turns = (user("go"), *round_trip("c1", "x" * 100), *round_trip("c2", "y" * 100))
        convo = Conversation((Turn(turns[0], tuple(turns[1:]) + (reply("done"),)),), id="t")
        policy = ToolOutputTruncation(max_tokens=5)  # 6 tokens, 24 bytes
        rp = replay(convo, lambda: policy.context(SYSTEM), counter=COUNTER)
        assert rp.rendered(1).messages[-1].results[0].content == "x" * 12 + "…19 tokens truncated…" + "x" * 12
        assert not rp.requests.compacted.any()

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(0, 60))
    def test_every_request_is_the_policy_applied_to_the_history(self, convo, max_tokens):
        policy = ToolOutputTruncation(max_tokens=max_tokens)
        edited, full = check_replay(convo, lambda: policy.context(SYSTEM), policy, counter=COUNTER, newest=False)
        # nothing already sent is ever changed: only an aborted turn, taken back, breaks the prefix
        frame = edited.requests
        for i in frame.request[frame.compacted]:
            assert frame.step[i] == 0 and convo.turns[int(frame.turn[i]) - 1].outcome != "answered"
        for i in range(len(full)):
            history, sent = full.rendered(i).messages, edited.rendered(i).messages
            assert type(sent[-1]) is type(history[-1])  # the newest message, cut or not
            for m, o in zip(history, sent):
                if isinstance(m, ToolResults):
                    for r, c in zip(m.results, o.results):
                        assert c.content == truncate_middle(r.content, policy.budget)

    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_the_bundled_conversations(self, name):
        convo = datasets.load(name)
        policy = ToolOutputTruncation(max_tokens=50)
        check_replay(convo, lambda: policy.context(SYSTEM), policy, counter=COUNTER, newest=False)


# --- the presets -----------------------------------------------------------------------------


class TestPresets:
    def test_codex_is_registered_with_codexs_defaults(self):
        preset = PRESETS["codex"]
        assert preset.family == "openai-codex" and preset.limit_kind == "high_water" and "distill" in preset.needs
        assert [k.name for k in preset.knobs] == ["high_water", "window", "user_tokens", "reasoning"]
        assert preset.budget_knob.name == "high_water"
        ctx = preset.build(system=SYSTEM)()
        assert ctx.limit.tokens == 244_800 and ctx.config == Compact()
        assert preset.build(system=SYSTEM, window=1_000_000)().limit.tokens == 900_000
        assert preset.build(system=SYSTEM, high_water=200_000, user_tokens=5, reasoning=190)().config == Compact(
            token_limit=200_000, user_tokens=5, reasoning=190)

    @pytest.mark.parametrize(("knobs", "message"), [
        ({"high_water": 250_000}, "high_water must be at most 90% of window .244,800., got 250,000: Codex takes"),
        ({"window": 1}, "window must be >= 2"),
        ({"reasoning": 5_001}, "reasoning must be >= 0 and <= 5,000, got 5001"),
        ({"user_tokens": -1}, "user_tokens must be >= 0"),
    ])
    def test_bad_knobs_are_shown(self, knobs, message):
        with pytest.raises(StrategyError, match=message):
            make_strategy("codex", system=SYSTEM, **knobs)

    def test_codex_truncation_is_registered(self):
        preset = PRESETS["codex-truncation"]
        assert preset.family == "openai-codex" and preset.limit_kind is None and not preset.needs
        assert [(k.name, k.default) for k in preset.knobs] == [("max_tokens", 10_000)]
        ctx = preset.build(system=SYSTEM, max_tokens=50)()
        assert isinstance(ctx, EditContext) and ctx.policy == ToolOutputTruncation(max_tokens=50)


# --- the real compaction ---------------------------------------------------------------------

_RED = re.compile(r"\[REDACTED_[A-Z_]+ len=(\d+) sha=[0-9a-f]+\]")
_WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau "


def _restore(text):
    """``text`` with each redaction marker replaced by plain words of the length it records."""
    if not isinstance(text, str):
        return text
    return _RED.sub(lambda m: (_WORDS * (int(m.group(1)) // len(_WORDS) + 1))[: int(m.group(1))], text)


def _restore_any(value):
    if isinstance(value, dict):
        return {k: _restore_any(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_restore_any(v) for v in value]
    return _restore(value)


def _restored_message(m):
    if isinstance(m, UserInput):
        return dataclasses.replace(m, text=_restore(m.text))
    if isinstance(m, AssistantMessage):
        return AssistantMessage(_restore(m.text), tuple(ToolCall(c.id, c.name, _restore_any(c.input)) for c in m.calls))
    return ToolResults(tuple(dataclasses.replace(r, content=_restore(r.content)) for r in m.results), m.pinned)


def _restored(conversation):
    """The conversation with its redacted texts back at their recorded sizes, so a counter can
    be fitted to the usage Codex recorded (the markers alone are all about 38 characters)."""
    turns = tuple(dataclasses.replace(t, input=_restored_message(t.input),
                                      messages=tuple(_restored_message(m) for m in t.messages))
                  for t in conversation.turns)
    return dataclasses.replace(conversation, turns=turns, system=_restore(conversation.system))


def _reasoning_estimate(path) -> tuple[int, int]:
    """From the rollout itself, up to its compaction: Codex's estimate of the encrypted reasoning
    items before the newest user message (``history.rs``: ``(3/4 · len - 650) / 4`` tokens each,
    rounded up), and how many there are."""
    items = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        if record["type"] == "compacted":
            break
        if record["type"] == "response_item":
            items.append(record["payload"])
    newest_user = max(k for k, p in enumerate(items) if p.get("type") == "message" and p.get("role") == "user")
    total = n = 0
    for p in items[:newest_user]:
        if p.get("type") == "reasoning" and p.get("encrypted_content"):
            size = int(_RED.match(p["encrypted_content"]).group(1))
            total += math.ceil(max(0, size * 3 // 4 - 650) / 4)
            n += 1
    return total, n


REAL = [p for p in real_params("codex/rollout-*.jsonl", 10)
        if p.values[0] is None or '"type":"compacted"' in p.values[0].read_text(encoding="utf-8")]


def _recorded_step(conversation) -> tuple[int, int]:
    """(turn, model call within the turn) of Codex's first call after its compaction."""
    (c,) = conversation.compactions
    turn = conversation.turns[c.turn]
    return c.turn, sum(isinstance(m, AssistantMessage) for m in turn.messages[: c.message - 1])


def _replies_before(conversation, turn: int) -> int:
    return sum(isinstance(m, AssistantMessage) for t in conversation.turns[:turn] for m in t.messages)


@pytest.mark.real_data
class TestRealCompaction:
    @pytest.fixture
    def session(self, real_data):
        from harpe_lab.importers import load_any

        path = REAL[0].values[0] if REAL else None
        if path is None:
            pytest.skip("no real Codex rollout with a compaction")
        return path, load_any(path)

    def test_the_importer_keeps_the_compaction_and_every_calls_usage(self, session):
        _, conv = session
        assert conv.metadata["context_window"] == 258_400 == CONTEXT_WINDOW * EFFECTIVE_WINDOW_PERCENT // 100
        (c,) = conv.compactions
        assert c.pre_tokens == 209_950
        for turn in conv.turns:
            assert len(turn.usage) == sum(isinstance(m, AssistantMessage) for m in turn.messages)
            assert all(u is not None and u.input_tokens > 0 for u in turn.usage)
        t, step = _recorded_step(conv)
        last = conv.turns[t].usage[step - 1]
        assert (last.input_tokens, last.output_tokens, last.cache_read_tokens) == (209_950, 2_184, 208_640)
        assert conv.turns[t].usage[step].input_tokens == 48_297

    def test_every_view_replays_it_at_the_model_s_window(self, session, capsys):
        # the rollout states Codex's effective window, 258,400; the limit is 90% of the model's 272,000
        import json

        from harpe_lab.cli import main
        from harpe_lab.recorded import model_window

        path, conv = session
        assert model_window(conv) == conv.metadata["model_window"] == CONTEXT_WINDOW
        assert main(["replay", str(path), "--strategy", "codex", "--set", "reasoning=187", "--format", "json"]) == 0
        cli = json.loads(capsys.readouterr().out)
        assert main(["compare", str(path), "--strategies", "codex", "--set", "reasoning=187", "--format", "json",
                     "--workers", "1"]) == 0
        (row,) = json.loads(capsys.readouterr().out)["sessions"]
        assert cli["window"] == CONTEXT_WINDOW and cli["replayed_compactions"][0] == row["first_compaction"]
        assert abs(row["first_compaction"] - row["recorded_first_compaction"]) <= 2

    def test_on_codexs_own_usage_the_rule_fires_at_its_call(self, session):
        """No counter: the context is driven by hand with the usage Codex recorded, plus its
        estimate of the encrypted reasoning (read from the rollout), per reply before the newest
        user message."""
        path, conv = session
        conv = _restored(conv)
        recorded = _recorded_step(conv)
        reasoning, items = _reasoning_estimate(path)
        assert (reasoning, items) == (33_320, 150)
        per_reply = round(reasoning / _replies_before(conv, recorded[0]))
        assert per_reply == 187

        def drive(config):
            events: list = []
            ctx = config.context(conv.system, distill=ExtractiveDistiller(9_000), on_event=events.append)
            for t, turn in enumerate(conv.turns[: recorded[0] + 1]):
                ctx.begin_turn(turn.input)
                if ctx.compact().compacted:
                    return (t, 0), events
                replies = 0
                for k, m in enumerate(turn.messages):
                    if isinstance(m, AssistantMessage):
                        ctx.observe(turn.usage[replies])
                        replies += 1
                    ctx.append(m)
                    ends_round = k + 1 < len(turn.messages) and isinstance(turn.messages[k + 1], AssistantMessage)
                    if not isinstance(m, AssistantMessage) and ends_round and ctx.compact().compacted:
                        return (t, replies), events
                ctx.commit_turn()
            return None, events

        fired, events = drive(Compact(reasoning=per_reply))
        assert fired == recorded
        first = next(e for e in events if isinstance(e, Compacted))
        # Codex's own count there: 209,950 + 2,184 reported, 33,320 of reasoning, 80 for the output
        assert first.limit == 244_800 and first.phase == "mid_turn"
        assert abs(first.tokens - 245_534) <= 100
        # with the reported usage alone the count stays below the limit up to that call
        assert drive(Compact())[0] is None

    def test_replayed_with_a_calibrated_counter_it_fires_within_two_calls(self, session):
        from harpe_lab.calibrate import calibrate
        from harpe_lab.tokens import TiktokenCounter

        path, conv = session  # as loaded: the counter weighs each marker as the text it replaced
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = calibrate(conv, TiktokenCounter("o200k_base"))
        assert fit.method == "linear" and fit.error_after < 0.03
        t, step = _recorded_step(conv)
        per_reply = round(_reasoning_estimate(path)[0] / _replies_before(conv, t))

        def first_compaction(**knobs):
            rp = replay(conv, make_strategy("codex", system=conv.system, **knobs), counter=fit.counter)
            frame = rp.requests
            recorded = int(frame.request[(frame.turn == t) & (frame.step == step)].iloc[0])
            ours = frame.request[frame.summarized]
            return recorded, (int(ours.iloc[0]) if len(ours) else None), frame

        recorded, ours, frame = first_compaction(reasoning=per_reply)
        assert abs(ours - recorded) <= 2, f"compacted before request {ours}, Codex before {recorded}"
        # the inline path keeps other things (user messages and a summary) than Codex's remote
        # compaction did (its answers, the images and an encrypted item: 48,297 tokens), of
        # about the same size
        after = int(frame.input_tokens[ours])
        assert 0.75 * 48_297 < after < 1.25 * 48_297
        # from the transcript's usage alone (reasoning 0), the default limit is reached much later
        _, late, _ = first_compaction()
        assert late is None or late > recorded + 2
