"""Cline's contexts (harpe_lab.strategies.cline) on the one turn lifecycle: what an abort takes
back, the read-only prompt, and the legacy manager's truncation whose cut empties the last
provider message (Cline still sends it, answering the first reply's calls "result missing")."""

from __future__ import annotations

import pytest

from harpe_lab.messages import AssistantMessage, ToolResults, Usage
from harpe_lab.strategies import cline as cl
from harpe_lab.strategies._lifecycle import TurnLifecycle
from harpe_lab.strategies.cline import (LEGACY_TRUNCATION_NOTICE, AgenticCompaction, BasicCompaction,
                                        LegacyContextManager, LegacyTruncated)
from tests._support.builders import call, reply, results, user
from tests._support.data import REAL_DATA
from tests._support.editing import SYSTEM, assert_pairs_by_ids


class Distiller:
    def __call__(self, rendered) -> str:
        return "the summary"


def _contexts():
    return {
        "basic": BasicCompaction(trigger=100, max_input=100_000).context(SYSTEM),
        "agentic": AgenticCompaction(trigger=100, max_input=100_000, preserve_recent_tokens=0).context(
            SYSTEM, distill=Distiller()),
        "legacy": LegacyContextManager(max_allowed=100).context(SYSTEM),
    }


class TestOneLifecycle:
    @pytest.mark.parametrize("kind", ["basic", "agentic", "legacy"])
    def test_comes_from_the_lifecycle_with_a_read_only_prompt(self, kind):
        ctx = _contexts()[kind]
        assert isinstance(ctx, TurnLifecycle) and ctx.base_system == SYSTEM
        with pytest.raises(AttributeError):
            ctx.base_system = "other"  # type: ignore[misc]

    @pytest.mark.parametrize("kind", ["basic", "agentic", "legacy"])
    def test_an_abort_after_a_compaction_leaves_what_a_fresh_context_would_hold(self, kind):
        first = [user("a " * 100), reply("b", call("c1")), results(("c1", "out " * 50))]
        ctx = _contexts()[kind]
        ctx.begin_turn(first[0])
        ctx.compact()
        for m in first[1:]:
            ctx.append(m)
        ctx.compact()
        ctx.commit_turn()
        ctx.begin_turn(user("c"))
        ctx.observe(Usage(input_tokens=1_000))  # the legacy manager's trigger: the reported usage
        ctx.append(reply("d", call("c2")))
        ctx.append(results(("c2", "x " * 200)))
        assert ctx.compact().compacted
        ctx.abort_turn()
        assert ctx.transcript[-1] == user("c")
        # the turn starts again from the state before it: the same requests as a context that
        # never saw the aborted work (given the same usage reports)
        fresh = _contexts()[kind]
        fresh.begin_turn(first[0])
        fresh.compact()
        for m in first[1:]:
            fresh.append(m)
        fresh.compact()
        fresh.commit_turn()
        fresh.begin_turn(user("c"))
        if kind == "legacy":
            # the aborted turn's last request had no reply: no usage to act on
            assert ctx._reported is None
        else:
            assert ctx.tokens == fresh.tokens and ctx.summary == fresh.summary
        again, plain = ctx.compact(), fresh.compact()
        assert again.rendered.messages == plain.rendered.messages and again.edits is None


def _drive(config, msgs, usage: int):
    """One turn: ``usage`` reported before every reply, a request after every tool result."""
    events: list = []
    ctx = config.context(SYSTEM, on_event=events.append)
    ctx.begin_turn(msgs[0])
    sent = [ctx.compact().rendered.messages]
    for m in msgs[1:]:
        if isinstance(m, AssistantMessage):
            ctx.observe(Usage(input_tokens=usage))
        ctx.append(m)
        if isinstance(m, ToolResults):
            sent.append(ctx.compact().rendered.messages)
    return ctx, sent, events


class TestLegacyCutAtTheEnd:
    """``applyContextHistoryUpdates`` keeps the first user message after the cut, only its
    tool results filtered out; when those were all it held, it is sent empty and
    ``ensureToolResultsFollowToolUse`` answers the first reply's calls "result missing" in
    it. So a cut that empties the last provider message still ends the request on results."""

    MSGS = [user("task"), reply("first", call("c0")), results(("c0", "o")),
            reply("r1", call("c1")), results(("c1", "x"))]

    def test_the_emptied_last_message_answers_the_first_replys_calls(self):
        # usage over twice the threshold: a quarter kept. Request 1: 3 provider messages, none
        # deleted (the notice is set); request 2: 5, so [2, 3] go and the cut is the last one
        ctx, sent, events = _drive(LegacyContextManager(max_allowed=1_000), self.MSGS, 2_500)
        assert [e.deleted_to for e in events if isinstance(e, LegacyTruncated)] == [1, 3]
        assert sent[2] == (user("task"), AssistantMessage(LEGACY_TRUNCATION_NOTICE, (call("c0"),)),
                           results(("c0", "result missing")))
        assert_pairs_by_ids(sent[2])

    def test_the_next_request_extends_it(self):
        ctx, sent, _ = _drive(LegacyContextManager(max_allowed=1_000), self.MSGS, 2_500)
        ctx.append(reply("r2", call("c2")))
        ctx.append(results(("c2", "y")))
        out = ctx.compact()  # no new usage reported: no new truncation
        assert not out.compacted and out.edits == ()
        assert out.rendered.messages == (*sent[2], reply("r2", call("c2")), results(("c2", "y")))
        assert_pairs_by_ids(out.rendered.messages)

    @pytest.mark.skipif(not (REAL_DATA / "claude_code" / "tool_heavy.jsonl").exists(), reason="no real data")
    def test_the_real_session_that_stopped_on_it_replays(self):
        from harpe_lab.measure import measure
        from harpe_lab.presets import make_strategy
        from harpe_lab.replay import replay
        from harpe_lab.study import load_sessions

        (conv,) = load_sessions([REAL_DATA / "claude_code" / "tool_heavy.jsonl"])
        m = measure(conv)
        factory = make_strategy("cline-legacy", budget=8_000, counter=m.counter, system=conv.system)
        rp = replay(conv, factory, counter=m.counter, pricing=m.pricing, name="cline-legacy")
        ends = rp.rendered(2).messages[-1]
        assert isinstance(ends, ToolResults) and {r.content for r in ends.results} == {"result missing"}
        for i in range(len(rp)):
            assert_pairs_by_ids(rp.rendered(i).messages)


def test_results_follow_calls_leaves_a_final_reply_alone_unless_told():
    # Cline's loop stops at the last message: a reply there (never in a request it makes)
    # is left as it is; the emptied message after the cut is what it answers in
    msgs = [user("task"), reply("a", call("c0"))]
    assert cl._results_follow_calls(list(msgs)) == msgs
    assert cl._results_follow_calls(list(msgs), emptied_last=True) == [*msgs, results(("c0", "result missing"))]
