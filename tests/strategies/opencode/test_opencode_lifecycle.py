"""OpenCode's `SessionCompactionContext` on the one turn lifecycle (`TurnLifecycle`): what it
adds lives in the hooks — the prune at a turn start, the tool names it learns, the compaction
state an abort puts back — and its requests keep the lifecycle's promise (`Compaction.edits`)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.messages import AssistantMessage, Rendered, ToolResults, Usage, UserInput
from harpe_lab.strategies import opencode
from harpe_lab.strategies._lifecycle import TurnLifecycle
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_the_promise, conversations


class _Distiller:
    """Answers ``summary 1``, ``summary 2`` … and records what it was asked."""

    def __init__(self) -> None:
        self.requests: list[Rendered] = []

    def __call__(self, rendered: Rendered) -> str:
        self.requests.append(rendered)
        return f"summary {len(self.requests)}"


def _context(usable: int = 1_000, events=None, **config) -> opencode.SessionCompactionContext:
    c = opencode.SessionCompaction(window=usable + 100, max_output=100, reserved=0, **config)
    return c.context(SYSTEM, distill=_Distiller(), on_event=events)


def _answered(ctx, text: str, answer: str, usage: int = 10) -> None:
    ctx.begin_turn(user(text))
    ctx.compact()
    ctx.observe(Usage(input_tokens=usage))
    ctx.append(reply(answer))
    ctx.commit_turn()


class TestOneLifecycle:
    def test_it_comes_from_the_one_base_and_keeps_only_its_hooks(self):
        cls = opencode.SessionCompactionContext
        assert issubclass(cls, TurnLifecycle)
        own = set(vars(cls))
        assert not own & {"begin_turn", "append", "abort_turn", "transcript", "base_system"}
        # its one addition to a commit: the prompt loop ended, so the next turn starts with a prune
        assert {"_mark_turn", "_added", "_restored", "commit_turn"} <= own

    def test_an_abort_after_a_compaction_puts_the_summary_and_the_usage_back(self):
        ctx = _context(1_000, preserve_recent=0)
        _answered(ctx, "one", "a", usage=1_000)
        ctx.begin_turn(user("two"))
        assert ctx.compact().compacted and ctx.summary == "summary 1"  # "one" reported 1,000
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))
        before = ctx.transcript
        assert not ctx.compact().compacted
        ctx.observe(Usage(input_tokens=1_000))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out")))
        assert ctx.compact().compacted and ctx.summary == "summary 2"  # mid-turn
        ctx.abort_turn()
        assert ctx.transcript == before and ctx.summary == "summary 1"
        ctx.begin_turn(user("four"))
        after = ctx.compact()
        # the 1,000 reported in the aborted turn went with it: no compaction, only no promise
        assert after.edits is None and after.compacted and after.rendered.messages == (*before, user("four"))
        assert ctx.summary == "summary 1" and len(ctx.distill.requests) == 2
        ctx.observe(Usage(input_tokens=1_000))
        ctx.append(reply("d"))
        assert ctx.compact().compacted and ctx.summary == "summary 3"
        # the first compaction's request and summary, put back by the abort, are hidden from
        # the summarizer again: its summary comes as the previous summary
        text = ctx.distill.requests[-1].messages[0].text
        assert text.startswith("Current summary:\n\nsummary 1\n\n") and opencode.COMPACTION_REQUEST not in text

    def test_a_prune_at_a_turn_start_outlives_that_turns_abort(self):
        events: list = []
        ctx = opencode.SessionCompaction(window=10**9, prune_protect=10, prune_minimum=10).context(
            SYSTEM, distill=_Distiller(), on_event=events.append)
        ctx.begin_turn(user("read"))
        ctx.compact()
        ctx.append(reply("", call("c1", "read")))
        ctx.append(results(("c1", "o" * 400)))  # 100 tokens
        ctx.compact()
        ctx.append(reply("done"))
        ctx.commit_turn()
        _answered(ctx, "two", "b")  # the first turn is still one of the last two
        _answered(ctx, "three", "c")
        ctx.begin_turn(user("four"))  # "three" was answered: c1 is pruned now
        assert events == [opencode.Pruned(1, 100)]
        pruned = ctx.compact()
        assert pruned.compacted and pruned.edits == (2,)
        ctx.append(reply("d"))
        ctx.abort_turn()
        kept = ctx.transcript
        assert kept[2].results[0].content == opencode.CLEARED and kept[-1] == user("four")
        ctx.begin_turn(user("five"))  # the aborted turn was not answered: no prune
        assert len(events) == 1
        again = ctx.compact()
        assert again.edits is None and again.compacted and again.rendered.messages == (*kept, user("five"))
        ctx.append(reply("e"))
        assert ctx.compact().edits == ()


@st.composite
def _runs(draw):
    """A generated conversation, each turn's usage, and where an unanswered turn is cut off."""
    convo = draw(conversations(max_turns=6, max_rounds=4))
    usable = draw(st.integers(40, 1_500))
    plan = []
    for turn in convo.turns:
        usages = [draw(st.integers(0, usable + usable // 4)) for _ in turn.messages]  # a fifth at or over
        cut = None if turn.outcome == "answered" else draw(st.integers(0, len(turn.messages)))
        plan.append((turn, usages, cut))
    return usable, plan


class TestProperties:
    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_runs())
    def test_requests_keep_the_promise_and_aborts_restore_the_turn_start(self, run):
        usable, plan = run
        ctx = _context(usable, prune_protect=5, prune_minimum=5)
        previous: tuple = ()
        since: list = []
        aborted = False

        def compact() -> None:
            nonlocal previous, since, aborted
            c = ctx.compact()
            assert_the_promise(c, previous, since, aborted)
            assert c.edits is not None or c.compacted
            previous, since, aborted = c.rendered.messages, [], False

        for turn, usages, cut in plan:
            ctx.begin_turn(turn.input)
            since.append(turn.input)
            start, summary = ctx.transcript, ctx.summary
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
                assert ctx.transcript == start and ctx.summary == summary
                since, aborted = [], True
        last = UserInput("last")
        ctx.begin_turn(last)
        since.append(last)
        compact()
