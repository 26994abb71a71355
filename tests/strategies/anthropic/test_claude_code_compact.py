"""Claude Code's auto-compact (harpe_lab.strategies.anthropic.claude_code), and its check against the
compactions Claude Code really made.

What "replaying a recorded session up to and through its compaction" means here: the
importer keeps every message Claude Code wrote and turns the ``compact_boundary`` and its
summary into a `RecordedCompaction` (turn, position in the turn, ``preTokens``, summary
text), not into messages. So the replayed conversation is the original history, and until
the strategy fires every request is exactly what Claude Code sent before its compaction
(less the system prompt and tool schemas, which the counter's calibration absorbs). The
model call at which the strategy's first compaction takes effect is compared with the one
Claude Code made right after its ``compact_boundary``. After that the two diverge (the
recorded summary is replayed through `RecordedDistiller`, but the files Claude Code
re-attaches are not in the recording), so only the first compaction is compared.

The counter is fitted per session (`harpe_lab.calibrate`) to the input tokens that session
recorded before its compaction: pooled over the three sessions, the fit is off by 7–10% per
request (cl100k against Claude's tokenizer, on differently shaped sessions), which is ±12,000
tokens at 167,000 — several model calls of drift, a test of the fit rather than of the
strategy.
"""

from __future__ import annotations

import pickle
import warnings

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, Rendered, Usage, UserInput
from harpe_lab.presets import PRESETS, make_strategy
from harpe_lab.protocol import ContextCompacted, DeclaresLimit, DistillCall, HoldsSummary, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.anthropic.claude_code import (
    AUTOCOMPACT_BUFFER,
    CONTEXT_WINDOW,
    CONTINUATION_HEAD,
    CONTINUATION_TAIL,
    SUMMARY_OUTPUT_RESERVE,
    AutoCompact,
    AutoCompacted,
    continuation,
)
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.summarize import ExtractiveDistiller, RecordedDistiller
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations, real_params

COUNTER = BytesCounter()


def rough(message) -> int:
    """Claude Code's estimate of a message written out independently: characters / 4."""
    if isinstance(message, UserInput):
        chars = len(message.text)
    else:
        chars = sum(len(r.content) for r in message.results)
    return round(chars / 4)


class Distiller:
    """A distiller that records what it was asked."""

    def __init__(self, reply: str | None = "the summary") -> None:
        self.reply = reply
        self.requests: list[Rendered] = []

    def __call__(self, rendered: Rendered) -> str | None:
        self.requests.append(rendered)
        return self.reply


def _context(threshold: int, distill=None, events=None):
    config = AutoCompact(context_window=threshold + 10, reserve=10)
    return config.context(SYSTEM, distill=distill or Distiller(), on_event=events)


def _round(ctx, usage: Usage, call_id: str, content: str):
    """One model call's reply (with its reported usage) and its tool result, then compact."""
    ctx.observe(usage)
    ctx.append(reply("", call(call_id)))
    ctx.append(results((call_id, content)))
    return ctx.compact()


class TestValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"context_window": 0}, "context_window must be an int >= 1, got 0"),
        ({"context_window": 2.5}, "context_window must be an int >= 1, got 2.5"),
        ({"reserve": -1}, "reserve must be an int >= 0, got -1"),
        ({"reserve": True}, "reserve must be an int >= 0, got True"),
        ({"context_window": 1000, "reserve": 1000}, "reserve must be below context_window .1,000., got 1,000"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            AutoCompact(**kwargs)

    def test_defaults_are_claude_codes(self):
        config = AutoCompact()
        assert (CONTEXT_WINDOW, SUMMARY_OUTPUT_RESERVE, AUTOCOMPACT_BUFFER) == (200_000, 20_000, 13_000)
        assert config.context_window == 200_000 and config.reserve == 33_000
        assert config.threshold == 167_000

    def test_keyword_only_frozen_and_picklable(self):
        with pytest.raises(TypeError):
            AutoCompact(100_000)  # type: ignore[misc]
        config = AutoCompact(context_window=100_000, reserve=5_000)
        with pytest.raises(AttributeError):
            config.reserve = 1  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(config)) == config

    def test_the_context_needs_a_distiller_and_a_system_prompt(self):
        with pytest.raises(StrategyError, match="distill must be a callable"):
            AutoCompact().context(SYSTEM, distill=None)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="base_system must be a str"):
            AutoCompact().context(None, distill=Distiller())  # type: ignore[arg-type]

    def test_the_threshold_is_declared_as_a_high_water_mark(self):
        ctx = AutoCompact().context(SYSTEM, distill=Distiller())
        assert isinstance(ctx, DeclaresLimit) and ctx.limit == Limit(tokens=167_000, kind="high_water")
        assert isinstance(ctx, HoldsSummary) and ctx.base_system == SYSTEM and ctx.summary == ""


class TestTrigger:
    def test_the_count_is_the_last_usage_plus_the_new_messages_at_four_characters_a_token(self):
        ctx = _context(1000)
        ctx.begin_turn(user("x" * 40))
        assert ctx.tokens == 10  # no usage yet: everything estimated
        assert not ctx.compact().compacted
        # 990 reported (input and output), then a result of 16 characters: 994, below
        assert not _round(ctx, Usage(input_tokens=980, output_tokens=10), "a", "y" * 16).compacted
        assert ctx.tokens == 994
        # 995 reported, then 20 characters: exactly 1,000 — Claude Code compacts at >=
        assert _round(ctx, Usage(input_tokens=985, output_tokens=10), "b", "z" * 20).compacted

    def test_a_turns_first_call_is_checked_with_the_new_input(self):
        ctx = _context(1000)
        ctx.begin_turn(user("task"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=990, output_tokens=5))
        ctx.append(reply("done"))
        ctx.commit_turn()
        ctx.begin_turn(user("n" * 20))  # 995 + 5
        first = ctx.compact()
        assert first.compacted and first.rendered.messages == (UserInput(continuation("the summary")),)

    def test_the_whole_history_mid_turn_too_becomes_one_summary_message(self):
        distill = Distiller()
        events: list = []
        ctx = _context(100, distill, events.append)
        ctx.begin_turn(user("fix the bug"))
        ctx.compact()
        out = _round(ctx, Usage(input_tokens=200), "a", "error: line 3")
        assert out.compacted and out.rendered.system == SYSTEM
        (summary,) = out.rendered.messages
        assert summary.text == f"{CONTINUATION_HEAD}\n\nthe summary\n\n{CONTINUATION_TAIL}"
        assert ctx.summary == "the summary"
        # the distiller saw everything, the current turn's tool result included
        (request,) = distill.requests
        assert "fix the bug" in request.messages[0].text and "error: line 3" in request.messages[0].text
        assert [type(e) for e in events] == [AutoCompacted, ContextCompacted]
        assert events[0] == AutoCompacted(pre_tokens=203, threshold=100) and events[1].dropped_messages == 3
        # and the agent goes on: the next request is the summary, then what follows
        ctx.observe(Usage(input_tokens=40))
        ctx.append(reply("", call("b")))
        ctx.append(results(("b", "ok")))
        after = ctx.compact()
        assert not after.compacted and after.rendered.messages[0] is summary and len(after.rendered.messages) == 3

    def test_right_after_a_compaction_nothing_is_folded_again(self):
        ctx = _context(1, Distiller("a summary far longer than one token"))
        ctx.begin_turn(user("go on, please"))
        assert ctx.compact().compacted
        again = ctx.compact()
        assert ctx.tokens >= 1 and not again.compacted  # only the summary is left to fold

    def test_a_distiller_saying_not_now_leaves_everything(self):
        ctx = _context(10, Distiller(None))
        ctx.begin_turn(user("x" * 100))
        out = ctx.compact()
        assert not out.compacted and out.rendered.messages == (user("x" * 100),) and ctx.summary == ""

    def test_a_recorded_claude_code_summary_is_sent_as_it_is(self):
        recorded = f"{CONTINUATION_HEAD}\n\nAnalysis: ...\n\n{CONTINUATION_TAIL}"
        assert continuation(recorded) == recorded
        ctx = _context(1, RecordedDistiller([recorded]))
        ctx.begin_turn(user("go on, please"))
        assert ctx.compact().rendered.messages == (UserInput(recorded),)

    def test_an_aborted_turn_takes_back_its_compaction(self):
        ctx = _context(100)
        ctx.begin_turn(user("first"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=50))
        ctx.append(reply("answer"))
        ctx.commit_turn()
        ctx.begin_turn(user("second"))
        ctx.compact()
        assert _round(ctx, Usage(input_tokens=500), "a", "out").compacted
        ctx.abort_turn()
        assert ctx.transcript == (user("first"), reply("answer"), user("second")) and ctx.summary == ""
        assert ctx.tokens == 50 + rough(user("second"))


# --- replays ---------------------------------------------------------------------------------


def _replay(conversation, threshold: int, distill=None):
    events: list = []
    factory = lambda: _context(threshold, distill or ExtractiveDistiller(max_chars=400))  # noqa: E731
    rp = replay(conversation, factory, counter=COUNTER, name="claude-code", on_event=events.append)
    return rp, events


def _check(conversation, threshold: int) -> tuple:
    """Replay under the strategy and under the full history, and check what Claude Code
    promises at every request. Returns both replays."""
    rp, events = _replay(conversation, threshold)
    full = replay(conversation, lambda: FullContext(SYSTEM), counter=COUNTER, name="full")
    assert len(rp) == len(full)
    frame = rp.requests
    compacted_at = set(frame.request[frame.summarized])
    assert {e.request for e in events if e.kind == "ContextCompacted"} == compacted_at
    for e in events:
        if e.kind == "AutoCompacted":  # only at or above the threshold
            assert e.event.pre_tokens >= threshold == e.event.threshold
    for i in range(len(rp)):
        sent = rp.rendered(i).messages
        assert_pairs_by_ids(sent)
        ids, available = rp.sent_ids(i), rp.available_ids(i)
        if i in compacted_at:
            # the request after a compaction is the summary message alone
            assert sent == (UserInput(continuation(rp.summary(i))),) and ids == []
        elif rp.summary(i):
            # then the summary and every original message since, the newest included
            assert sent[0] == UserInput(continuation(rp.summary(i)))
            assert len(ids) == len(sent) - 1 and ids == available[len(available) - len(ids):]
        else:
            assert sent == full.rendered(i).messages  # until it fires, everything is sent
        # the count Claude Code checks before request i, rebuilt from the frame: the usage
        # reported for the previous call and the messages appended after its reply
        turn, step, prev = int(frame.turn[i]), int(frame.step[i]), i - 1
        if i == 0:
            count = rough(conversation.turns[0].input)
        elif step > 0:
            count = int(frame.input_tokens[prev] + frame.output_tokens[prev]) + rough(full.rendered(i).messages[-1])
        else:
            before = conversation.turns[turn - 1]
            if before.outcome != "answered" or not before.messages or before.messages[-1].role != "assistant":
                continue  # an aborted turn rolls the count back to its start: not rebuilt here
            count = int(frame.input_tokens[prev] + frame.output_tokens[prev]) + rough(conversation.turns[turn].input)
        assert (i in compacted_at) == (count >= threshold), f"request {i}: count {count}, threshold {threshold}"
    return rp, full


class TestProperties:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(50, 3000))
    def test_compacts_exactly_when_claude_codes_count_reaches_the_threshold(self, convo, threshold):
        _check(convo, threshold)


class TestBundledDatasets:
    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_the_preset_compacts_the_bundled_conversations(self, name):
        convo = datasets.load(name)
        full = replay(convo, lambda: FullContext(convo.system), counter=COUNTER)
        threshold = int(full.requests.input_tokens.max() * 0.5)
        rp = replay(convo, make_strategy("claude-code", budget=threshold, system=convo.system), counter=COUNTER)
        frame = rp.requests
        assert rp.limit == Limit(tokens=threshold, kind="high_water")
        assert frame.summarized.any() and frame.input_tokens.max() < full.requests.input_tokens.max()
        assert (frame.overshoot_tokens == (frame.input_tokens - threshold).clip(lower=0)).all()
        assert frame.distill_calls.sum() == frame.summarized.sum()
        distills = [e.event for e in rp.events if isinstance(e.event, DistillCall)]
        assert all(d.request.system.startswith("You write the summary") for d in distills)
        _check(convo, threshold)

    def test_the_preset_defaults_to_claude_codes_threshold(self):
        preset = PRESETS["claude-code"]
        assert preset.family == "anthropic" and preset.limit_kind == "high_water"
        assert preset.budget_knob.name == "high_water"
        ctx = preset.build(system=SYSTEM)()
        assert ctx.limit.tokens == 167_000
        assert preset.build(system=SYSTEM, context_window=1_000_000)().limit.tokens == 967_000
        with pytest.raises(StrategyError, match="high_water must be below context_window"):
            preset.build(system=SYSTEM, high_water=200_000)


# --- the real compactions --------------------------------------------------------------------

REAL = real_params("claude_code/*-*-*-*-*.jsonl", 6)


def _recorded_request(conversation, frame) -> int:
    """The model call Claude Code made right after its first compaction."""
    c = min(conversation.compactions, key=lambda c: (c.turn, c.message or 0))
    turn = conversation.turns[c.turn]
    step = sum(isinstance(m, AssistantMessage) for m in turn.messages[: c.message - 1])
    return int(frame.request[(frame.turn == c.turn) & (frame.step == step)].iloc[0])


@pytest.mark.real_data
class TestRealCompactions:
    @pytest.mark.parametrize("path", REAL)
    def test_the_first_compaction_is_at_claude_codes_model_call(self, real_data, path):
        from harpe_lab.calibrate import calibrate
        from harpe_lab.importers import load_any
        from harpe_lab.tokens import TiktokenCounter

        if path is None:
            pytest.skip("no real Claude Code sessions")
        conv = load_any(path)
        auto = [c for c in conv.compactions if c.trigger == "auto"]
        if not auto:
            pytest.skip(f"{path.name} recorded no auto-compaction")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            counter = calibrate(conv, TiktokenCounter("cl100k_base")).counter
        events: list = []
        rp = replay(conv, make_strategy("claude-code", system=conv.system, distill=RecordedDistiller(conv)),
                    counter=counter, on_event=events.append)
        frame = rp.requests
        recorded = _recorded_request(conv, frame)
        ours = int(frame.request[frame.summarized].iloc[0])
        assert abs(ours - recorded) <= 2, f"compacted before request {ours}, Claude Code before {recorded}"
        # the count it compacted at is Claude Code's preTokens, within the counter's error
        first = next(e.event for e in events if e.kind == "AutoCompacted")
        assert first.threshold == 167_000 and first.pre_tokens >= 167_000
        assert abs(first.pre_tokens - auto[0].pre_tokens) <= 0.03 * auto[0].pre_tokens
        # and the request after it is Claude Code's own summary message
        assert rp.rendered(ours).messages == (UserInput(auto[0].summary),)

    @pytest.mark.parametrize("path", REAL)
    def test_on_claude_codes_own_usage_the_rule_fires_at_its_call_with_its_count(self, real_data, path):
        """No counter: the context is driven by hand with the usage Claude Code recorded."""
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no real Claude Code sessions")
        conv = load_any(path)
        auto = [c for c in conv.compactions if c.trigger == "auto"]
        if not auto:
            pytest.skip(f"{path.name} recorded no auto-compaction")
        recorded = auto[0]
        events: list = []
        ctx = AutoCompact().context(conv.system, distill=RecordedDistiller(conv), on_event=events.append)
        fired = None
        for t, turn in enumerate(conv.turns[: recorded.turn + 1]):
            ctx.begin_turn(turn.input)
            if ctx.compact().compacted:
                fired = (t, 0)
                break
            replies = 0
            for k, m in enumerate(turn.messages):
                if isinstance(m, AssistantMessage):
                    if replies < len(turn.usage):
                        ctx.observe(turn.usage[replies])
                    replies += 1
                ctx.append(m)
                ends_round = k + 1 < len(turn.messages) and isinstance(turn.messages[k + 1], AssistantMessage)
                if not isinstance(m, AssistantMessage) and ends_round and ctx.compact().compacted:
                    fired = (t, replies)
                    break
            if fired:
                break
            ctx.commit_turn()
        turn = conv.turns[recorded.turn]
        expected = (recorded.turn, sum(isinstance(m, AssistantMessage) for m in turn.messages[: recorded.message - 1]))
        assert fired == expected
        first = next(e for e in events if isinstance(e, AutoCompacted))
        # to the token but for rounding; one session recorded its last reply's output as 1 token
        assert abs(first.pre_tokens - recorded.pre_tokens) <= 0.02 * recorded.pre_tokens
