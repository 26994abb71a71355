"""Goose's, Roo Code's and the providers' contexts on the one turn lifecycle (`TurnLifecycle`):
what each adds lives in the hooks — the state a turn start saves, what a stored message
teaches it, what an abort puts back — and their requests keep the lifecycle's promise
(`Compaction.edits`): unless compacted, the previous request followed by what was appended."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.messages import AssistantMessage, Rendered, ToolResults, Usage, UserInput
from harpe_lab.strategies import goose, roo
from harpe_lab.strategies.anthropic import tool_runner  # noqa: E402
from harpe_lab.strategies.openai import realtime
from harpe_lab.strategies._lifecycle import TurnLifecycle
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_the_promise, conversations

COUNTER = BytesCounter()


class _Distiller:
    """Answers ``summary 1``, ``summary 2`` … and records what it was asked."""

    def __init__(self) -> None:
        self.requests: list[Rendered] = []

    def __call__(self, rendered: Rendered) -> str:
        self.requests.append(rendered)
        return f"summary {len(self.requests)}"


class _Flat:
    """Every message 10 tokens, an empty request 3."""

    def count_message(self, message) -> int:
        return 10

    def count_rendered(self, rendered, tools=()) -> int:
        return 3 + 10 * len(rendered.messages)


def _goose(window: int = 1_000, **config) -> goose.ContextManagementContext:
    return goose.ContextManagement(window=window, **config).context(SYSTEM, distill=_Distiller())


def _roo(allowed: int = 100, **config) -> roo.CondenseContext:
    return roo.Condense(window=10_000, max_tokens=9_000 - allowed, **config).context(
        SYSTEM, counter=COUNTER, distill=_Distiller())


def _runner(threshold: int = 100) -> tool_runner.ToolRunnerCompactionContext:
    return tool_runner.ToolRunnerCompaction(threshold=threshold).context(SYSTEM, distill=_Distiller())


def _retention(limit: int = 35, ratio: float = 0.5) -> realtime.RetentionRatioContext:
    return realtime.RetentionRatio(limit=limit, ratio=ratio).context(SYSTEM, counter=_Flat())


CONTEXTS = {
    "goose": _goose,
    "roo": _roo,
    "anthropic-sdk-compaction": _runner,
    "retention-ratio": _retention,
}


def _answered(ctx, text: str, answer: str, usage: int = 10) -> None:
    ctx.begin_turn(user(text))
    ctx.compact()
    ctx.observe(Usage(input_tokens=usage))
    ctx.append(reply(answer))
    ctx.commit_turn()


class TestOneLifecycle:
    @pytest.mark.parametrize("cls", [goose.ContextManagementContext, roo.CondenseContext,
                                     tool_runner.ToolRunnerCompactionContext, realtime.RetentionRatioContext])
    def test_it_comes_from_the_one_base_and_keeps_only_its_hooks(self, cls):
        assert issubclass(cls, TurnLifecycle)
        own = set(vars(cls))
        assert not own & {"begin_turn", "append", "commit_turn", "abort_turn", "transcript", "base_system",
                          "_request", "_marked", "_turn_input"}
        assert {"_mark_turn", "_restored"} <= own

    @pytest.mark.parametrize("name", sorted(CONTEXTS))
    def test_base_system_is_read_only_and_every_request_starts_from_it(self, name):
        ctx = CONTEXTS[name]()
        with pytest.raises(AttributeError):
            ctx.base_system = "another"
        ctx.begin_turn(user("one"))
        assert ctx.compact().rendered.system == SYSTEM

    @pytest.mark.parametrize("name", sorted(CONTEXTS))
    def test_an_abort_before_any_turn_leaves_an_empty_transcript(self, name):
        ctx = CONTEXTS[name]()
        ctx.abort_turn()
        assert ctx.transcript == ()
        ctx.begin_turn(user("one"))
        first = ctx.compact()
        assert first.compacted and first.edits is None and first.rendered.messages == (user("one"),)


class TestGoose:
    def test_an_abort_after_a_compaction_puts_the_summary_the_usage_and_the_calls_back(self):
        ctx = _goose(window=1_000, cutoff=100)  # threshold 800 tokens
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out")))
        ctx.compact()
        ctx.observe(Usage(input_tokens=900))
        ctx.append(reply("a"))
        ctx.commit_turn()
        before, calls = ctx.transcript, ctx.visible_calls
        ctx.begin_turn(user("two"))
        assert ctx.compact().compacted and ctx.summary == "summary 1" and ctx.visible_calls == 0
        ctx.abort_turn()
        assert ctx.transcript == (*before, user("two")) and ctx.summary == "" and ctx.visible_calls == calls
        ctx.begin_turn(user("three"))  # the 900 reported before the aborted turn came back with it
        again = ctx.compact()
        assert again.compacted and again.edits is None and ctx.summary == "summary 2"
        assert again.rendered.messages[-1] == user("three")

    def test_pair_summaries_made_at_a_turn_start_outlive_that_turns_abort(self):
        ctx = _goose(window=10**9, cutoff=1, batch=1)
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out 1")))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c2")))
        ctx.append(results(("c2", "out 2")))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("a"))
        ctx.commit_turn()
        _answered(ctx, "two", "b")  # its request planned c1: the calls past the cutoff, "two"'s aside
        ctx.begin_turn(user("three"))  # the answer came: c1 is summarized now, before "three"
        summarized = ctx.transcript
        assert summarized[-2].text.startswith(goose.PAIR_SUMMARY_PREFIX) and summarized[-1] == user("three")
        assert ctx.compact().compacted
        ctx.append(reply("c"))
        ctx.abort_turn()
        assert ctx.transcript == summarized and ctx.visible_calls == 1


class TestRoo:
    def test_an_abort_after_a_condense_puts_the_history_and_the_summary_back(self):
        ctx = _roo(allowed=100)
        _answered(ctx, "one", "a")
        _answered(ctx, "two", "b")
        before = ctx.transcript
        ctx.begin_turn(user("three"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=200))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out")))
        condensed = ctx.compact()
        assert condensed.compacted and ctx.summary == "summary 1" and len(ctx.transcript) == 1
        ctx.abort_turn()
        assert ctx.transcript == (*before, user("three")) and ctx.summary == ""
        # the messages since the last summary came back too, the kept input among them: the
        # next condense summarizes all of them
        ctx.begin_turn(user("four"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=200))
        ctx.append(reply("c"))
        ctx.compact()
        asked = ctx.distill.requests[-1].messages[0].text
        assert all(w in asked for w in ("one", "two", "three", "four"))


class TestProviders:
    def test_an_abort_after_the_runners_compaction_puts_the_history_and_the_summary_back(self):
        ctx = _runner(threshold=100)
        _answered(ctx, "one", "a")
        ctx.begin_turn(user("two"))
        ctx.compact()
        before = ctx.transcript
        ctx.observe(Usage(input_tokens=150))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out")))
        assert ctx.compact().compacted and ctx.summary == "summary 1"
        ctx.abort_turn()
        assert ctx.transcript == before and ctx.summary == ""
        ctx.begin_turn(user("three"))  # the 150 went with the aborted turn: no compaction
        after = ctx.compact()
        assert after.compacted and after.edits is None and after.rendered.messages == (*before, user("three"))
        assert len(ctx.distill.requests) == 1

    def test_an_abort_after_a_truncation_puts_the_window_and_its_tokens_back(self):
        ctx = _retention(limit=35, ratio=0.5)
        _answered(ctx, "one", "a")  # 20 tokens
        before = ctx.transcript
        ctx.begin_turn(user("two"))
        ctx.compact()
        ctx.append(reply("b"))
        ctx.append(user("more"))  # 50 tokens: over 35, down to 10
        assert ctx.compact().compacted and ctx.tokens <= 20
        ctx.abort_turn()
        assert ctx.transcript == (*before, user("two")) and ctx.tokens == 30
        ctx.begin_turn(user("three"))
        after = ctx.compact()
        # 40 tokens, over 35: the oldest go until 17.5 or only the newest is left
        assert after.compacted and after.rendered.messages == (user("three"),) and ctx.tokens == 10


@st.composite
def _runs(draw):
    """A generated conversation, each assistant message's usage, and where an unanswered turn is cut off."""
    convo = draw(conversations(max_turns=6, max_rounds=4))
    plan = []
    for turn in convo.turns:
        usages = [draw(st.integers(0, 3_000)) for _ in turn.messages]
        cut = None if turn.outcome == "answered" else draw(st.integers(0, len(turn.messages)))
        plan.append((turn, usages, cut))
    return plan


def _small(name: str):
    return {
        "goose": lambda: _goose(window=2_000, cutoff=2, batch=1),
        "roo": lambda: _roo(allowed=1_500),
        "anthropic-sdk-compaction": lambda: _runner(threshold=1_500),
        "retention-ratio": lambda: _retention(limit=60, ratio=0.5),
    }[name]()


class TestProperties:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from(sorted(CONTEXTS)), _runs())
    def test_requests_keep_the_promise_and_aborts_restore_the_turn_start(self, name, plan):
        ctx = _small(name)
        previous: tuple = ()
        since: list = []
        aborted = False

        def compact() -> None:
            nonlocal previous, since, aborted
            c = ctx.compact()
            assert_the_promise(c, previous, since, aborted)
            assert c.compacted if c.edits is None else c.edits == ()  # these never edit in place
            previous, since, aborted = c.rendered.messages, [], False

        for turn, usages, cut in plan:
            ctx.begin_turn(turn.input)
            since.append(turn.input)
            start = ctx.transcript
            summary = getattr(ctx, "summary", None)
            compact()
            for k, m in enumerate(turn.messages[:cut]):
                if isinstance(m, AssistantMessage):
                    ctx.observe(Usage(input_tokens=usages[k]))
                ctx.append(m)
                since.append(m)
                if isinstance(m, ToolResults):
                    compact()
            if cut is None:
                ctx.commit_turn()
            else:
                ctx.abort_turn()
                assert ctx.transcript == start and ctx.transcript[-1] is turn.input
                assert getattr(ctx, "summary", None) == summary
                since, aborted = [], True
        last = UserInput("last")
        ctx.begin_turn(last)
        since.append(last)
        compact()
