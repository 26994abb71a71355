"""orion's windows: SlidingWindow, SummarizeWindow, OrionContext, ChatML and prepare_context."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.strategies.harpe import DISTILL_SYSTEM, Compaction, ContextCompacted, distill_request, turn_groups
from harpe_lab.protocol import DistillCall
from harpe_lab.errors import BudgetError, StrategyError
from harpe_lab.messages import AssistantMessage, Rendered, ToolCall, ToolResult, ToolResults, Usage, UserInput
from harpe_lab.strategies.orion import (
    SUMMARY_PREFIX,
    ChatMLTemplate,
    ContextBudget,
    OrionContext,
    PreparedContext,
    SlidingWindow,
    StrategyWarning,
    SummarizeWindow,
    prepare_context,
    summarize_request,
    summary_message,
)
from harpe_lab.tokens import REPLY_PRIMING, BytesCounter, ScaledCounter
from tests._support.builders import call, reply, results_for, user

C = BytesCounter()
TOOLS = ({"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}},)


def _text(tokens: int, tag: str = "") -> str:
    """A text whose message costs exactly ``tokens`` with BytesCounter (3 overhead + len/4)."""
    assert tokens >= 4
    body = 4 * (tokens - 3)
    return (tag + "x" * body)[:body]


def _turns(*tokens: int, pinned: tuple[int, ...] = ()) -> list[UserInput]:
    """One single-message turn per size (distinct texts, so distinct messages)."""
    return [user(_text(n, f"t{i}-"), pinned=i in pinned) for i, n in enumerate(tokens)]


def _window(available: int, *, reserve: int = 0, system: str = "") -> SlidingWindow:
    """A window leaving exactly ``available`` tokens for messages with ``system`` and no tools."""
    fixed = C.count_rendered(Rendered(system))
    return SlidingWindow(available + fixed + reserve, counter=C, reserve_tokens=reserve)


def _summarize(available: int, distill, *, reserve: int = 0) -> SummarizeWindow:
    return SummarizeWindow(available + REPLY_PRIMING + reserve, counter=C, distill=distill, reserve_tokens=reserve)


class _Distill:
    """A scripted distiller recording its requests."""

    def __init__(self, *answers: object) -> None:
        self.answers = list(answers) or ["S"]
        self.requests: list[Rendered] = []

    def __call__(self, rendered: Rendered) -> str | None:
        self.requests.append(rendered)
        answer = self.answers[min(len(self.requests) - 1, len(self.answers) - 1)]
        if isinstance(answer, BaseException):
            raise answer
        return answer  # type: ignore[return-value]


# --- validation ---------------------------------------------------------------------------


class TestValidation:
    @pytest.mark.parametrize("bad", [0, -5, 1.5, True, "100", None])
    def test_max_tokens(self, bad):
        with pytest.raises(StrategyError, match=f"max_tokens must be an int >= 1, got {bad!r}"):
            SlidingWindow(bad, counter=C)

    @pytest.mark.parametrize("bad", [-1, 2.0, False])
    def test_reserve_tokens(self, bad):
        with pytest.raises(StrategyError, match=f"reserve_tokens must be an int >= 0, got {bad!r}"):
            SlidingWindow(5000, counter=C, reserve_tokens=bad)

    def test_reserve_must_leave_room(self):
        with pytest.raises(StrategyError, match=r"less than max_tokens \(2048\), got 2048"):
            SlidingWindow(2048, counter=C)

    @pytest.mark.parametrize("bad", [None, "bytes", 4])
    def test_counter(self, bad):
        with pytest.raises(StrategyError, match=f"counter must be a token counter.*got {bad!r}"):
            SlidingWindow(5000, counter=bad)

    def test_distill_must_be_callable(self):
        with pytest.raises(StrategyError, match="distill must be a callable.*got 'summary'"):
            SummarizeWindow(5000, counter=C, distill="summary")

    def test_counter_and_reserve_are_keyword_only(self):
        with pytest.raises(TypeError):
            SlidingWindow(5000, C)  # type: ignore[misc]

    def test_windows_are_frozen_and_hashable(self):
        w = SlidingWindow(5000, counter=C)
        with pytest.raises(dataclasses.FrozenInstanceError):
            w.max_tokens = 1  # type: ignore[misc]
        assert w == SlidingWindow(5000, counter=BytesCounter()) and hash(w) == hash(SlidingWindow(5000, counter=C))

    def test_context_arguments(self):
        w = SlidingWindow(5000, counter=C)
        with pytest.raises(StrategyError, match="base_system must be a str, got int"):
            OrionContext(3, w)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="window must be an orion SlidingWindow or SummarizeWindow, got 12"):
            OrionContext("", 12)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match=r"tools\[0\] must be an OpenAI tool schema \(a dict\), got 'lookup'"):
            OrionContext("", w, tools=["lookup"])
        with pytest.raises(TypeError, match="begin_turn takes a UserInput, got str"):
            OrionContext("", w).begin_turn("hi")  # type: ignore[arg-type]


# --- SlidingWindow selection --------------------------------------------------------------


class TestSlidingSelection:
    def test_everything_fits(self):
        msgs = _turns(10, 10, 10)
        sel = _window(30).select(msgs)
        assert sel.messages == tuple(msgs) and all(a is b for a, b in zip(sel.messages, msgs))
        assert sel.kept == (0, 1, 2) and sel.dropped == ()
        assert sel.tokens == 30 + REPLY_PRIMING

    def test_stops_at_the_first_turn_that_does_not_fit(self):
        # newest first: 10 (latest), 10 fits (20), 50 does not -> stop; the 10 before it
        # would fit but the window never skips a turn
        msgs = _turns(10, 50, 10, 10)
        sel = _window(30).select(msgs)
        assert sel.kept == (2, 3) and sel.dropped == (0, 1)

    def test_pinned_turns_survive_in_order(self):
        msgs = _turns(10, 10, 50, 10, pinned=(0,))
        assert _window(30).select(msgs).kept == (0, 3)

    def test_a_pin_on_a_reply_or_results_pins_the_whole_turn(self):
        old = [user(_text(10, "old")), reply("r", call("a", "lookup")), results_for("a", pinned=True, content="ok"),
               reply("fin")]
        msgs = old + _turns(50, 10)
        kept = _window(old_tokens(old) + 10).select(msgs).messages
        assert kept == tuple(old) + (msgs[-1],)

    def test_turns_are_kept_whole(self):
        turn = [user(_text(10, "q")), reply("", call("a", "lookup")), results_for("a", content="x" * 40), reply("ok")]
        latest = user(_text(10, "latest"))
        msgs = turn + [latest]
        # one token short of the older turn: it goes whole, never its tail alone
        assert _window(old_tokens(turn) + 10 - 1).select(msgs).messages == (latest,)
        assert _window(old_tokens(turn) + 10).select(msgs).messages == tuple(msgs)

    def test_system_prompt_tools_and_reserve_count(self):
        msgs = _turns(10, 10, 10)
        system = "s" * 40  # 3 + 10 tokens
        w = SlidingWindow(REPLY_PRIMING + 13 + 30 + 100, counter=C, reserve_tokens=100)
        assert w.select(msgs, system=system).kept == (0, 1, 2)
        assert w.select(msgs, system=system + "s" * 4).kept == (1, 2)
        roomy = SlidingWindow(5000, counter=C)
        assert roomy.select(msgs, tools=TOOLS).tokens == 30 + REPLY_PRIMING + C.count_tools(TOOLS)
        assert w.max_request_tokens == w.max_tokens - 100

    def test_a_leading_non_user_prefix_is_a_turn(self):
        msgs = [reply("orphan prefix"), *_turns(10, 10)]
        assert _window(20).select(msgs).kept == (1, 2)
        assert _window(100).select(msgs).kept == (0, 1, 2)

    def test_only_messages_are_accepted(self):
        with pytest.raises(TypeError, match="message 1 is not a harpe_lab message: {'role': 'user'"):
            _window(100)([user(_text(10, "u")), {"role": "user", "content": "hi"}])

    def test_empty_history(self):
        assert _window(10).select([]).messages == ()

    def test_calling_it_returns_the_kept_messages(self):
        msgs = _turns(10, 50, 10)
        assert _window(20)(msgs) == _window(20).select(msgs).messages

    def test_twice_changes_nothing_and_input_is_untouched(self):
        msgs = _turns(10, 10, 50, 10, 10, pinned=(1,))
        copy = list(msgs)
        w = _window(35)
        once = w(msgs)
        assert w(once) == once
        assert msgs == copy and all(a is b for a, b in zip(msgs, copy))

    def test_a_counter_that_rounds_the_whole_request_still_keeps_the_promise(self):
        # ScaledCounter rounds the request total, not each message: the window re-checks
        # the whole request and gives up turns until the counter agrees
        counter = ScaledCounter(BytesCounter(), 1.3)
        msgs = [UserInput("x" * (4 * k + 1)) for k in range(1, 30)]
        for budget in range(40, 400, 7):
            w = SlidingWindow(budget, counter=counter, reserve_tokens=0)
            try:
                sel = w.select(msgs)
            except BudgetError:
                continue
            assert counter.count_rendered(Rendered("", sel.messages)) <= budget


def old_tokens(messages) -> int:
    return sum(C.count_message(m) for m in messages)


class TestBudgetError:
    def test_pinned_and_latest_exceed_the_budget(self):
        msgs = _turns(20, 10, 15, pinned=(0,))
        with pytest.raises(BudgetError) as info:
            _window(34, reserve=100).select(msgs)
        text = str(info.value)
        assert "pinned turns (20 tokens)" in text and "latest turn (15)" in text and "need 35 tokens" in text
        assert f"max_tokens={34 + 100 + REPLY_PRIMING}" in text and "reserve_tokens=100" in text
        assert "leaves 34" in text and "Raise max_tokens" in text
        assert _window(35, reserve=100).select(msgs).kept == (0, 2)

    def test_the_latest_turn_alone_can_exceed_it(self):
        with pytest.raises(BudgetError, match=r"latest turn \(50\)"):
            _window(49)(_turns(10, 50))

    def test_a_system_prompt_larger_than_the_budget(self):
        with pytest.raises(BudgetError):
            SlidingWindow(20, counter=C, reserve_tokens=0).select([], system="s" * 200)

    def test_context_raises_and_keeps_its_state(self):
        ctx = OrionContext("", _window(30))
        ctx.begin_turn(user(_text(10, "u")))
        ctx.compact()
        ctx.append(reply("x" * 200))
        with pytest.raises(BudgetError):
            ctx.compact()
        assert len(ctx.transcript) == 2


# --- OrionContext over a SlidingWindow ----------------------------------------------------


class TestOrionContext:
    def test_compacted_only_when_the_window_slides(self):
        events: list[object] = []
        ctx = OrionContext("", _window(40), on_event=events.append)
        ctx.begin_turn(u := user(_text(10, "a")))
        first = ctx.compact()
        assert first == Compaction(Rendered("", (u,)), False)
        ctx.append(r1 := reply("", call("c1", "lookup")))
        ctx.append(t1 := results_for("c1", content="y" * 40))  # 3 + 10 tokens
        second = ctx.compact()
        assert second.compacted is False and second.rendered.messages == (u, r1, t1)
        ctx.append(reply("ok"))
        ctx.commit_turn()
        ctx.begin_turn(v := user(_text(20, "b")))
        third = ctx.compact()  # the first turn (31 tokens) no longer fits beside 20
        assert third.compacted is True and third.rendered.messages == (v,)
        budgets = [e for e in events if isinstance(e, ContextBudget)]
        assert len(budgets) == 3
        assert budgets[-1] == ContextBudget(20 + REPLY_PRIMING, ctx.window.max_tokens, 1, 4)

    def test_budget_promise_attributes(self):
        w = SlidingWindow(5000, counter=C, reserve_tokens=1000)
        ctx = OrionContext("sys", w, tools=list(TOOLS))
        assert ctx.max_request_tokens == 4000 and ctx.counter is C and ctx.tools == TOOLS
        assert ctx.summary == "" and ctx.base_system == "sys"
        assert not hasattr(ctx, "distill")

    def test_abort_keeps_the_transcript_before_the_turn_plus_its_input(self):
        ctx = OrionContext("", _window(1000))
        ctx.begin_turn(a := user(_text(10, "a")))
        ctx.append(ra := reply("answer"))
        ctx.commit_turn()
        ctx.begin_turn(b := user(_text(10, "b")))
        ctx.append(reply("", call("c", "lookup")))
        ctx.append(results_for("c", content="ok"))
        ctx.compact()
        ctx.abort_turn()
        assert ctx.transcript == (a, ra, b)
        ctx.begin_turn(c := user(_text(10, "c")))
        assert ctx.compact().rendered.messages == (a, ra, b, c)

    def test_a_request_that_goes_on_says_so(self):
        # the lifecycle's `Compaction.edits`: () when the request is the previous one plus the
        # messages appended since (the engine then compares nothing), else None
        ctx = OrionContext("", _window(1000))
        ctx.begin_turn(u := user(_text(10, "a")))
        assert ctx.compact().edits == ()  # the empty request before it, plus the input
        ctx.append(r := reply("", call("c", "lookup")))
        ctx.append(t := results_for("c", content="ok"))
        going = ctx.compact()
        assert going == Compaction(Rendered("", (u, r, t)), False) and going.edits == ()
        ctx.abort_turn()
        ctx.begin_turn(user(_text(10, "b")))
        after = ctx.compact()  # the abort took back what the last request carried
        assert after.compacted and after.edits is None

    def test_never_hands_out_its_lists(self):
        ctx = OrionContext("", _window(1000), initial=[user(_text(10, "u"))])
        assert isinstance(ctx.transcript, tuple)
        assert isinstance(ctx.compact().rendered.messages, tuple)

    def test_initial_messages_count_as_appended(self):
        history = _turns(10, 10)
        ctx = OrionContext("", _window(1000), initial=history)
        ctx.begin_turn(u := user(_text(10, "now")))
        comp = ctx.compact()
        assert comp.compacted is False and comp.rendered.messages == (*history, u)


# --- SummarizeWindow ----------------------------------------------------------------------


class TestSummarizeWindow:
    def test_no_fold_and_no_distill_while_everything_fits(self):
        d = _Distill("S")
        sel = _summarize(100, d).select(_turns(10, 10))
        assert d.requests == [] and sel.summary is None and sel.kept == (0, 1)

    def test_folds_the_dropped_turns_into_one_pinned_summary_message_first(self):
        d = _Distill("the gist")
        msgs = _turns(10, 50, 10, 10)
        sel = _summarize(40, d).select(msgs)
        head = sel.messages[0]
        assert head == UserInput(f"{SUMMARY_PREFIX}\n\nthe gist", pinned=True) == summary_message("the gist")
        assert sel.messages[1:] == (msgs[2], msgs[3]) and sel.summary == "the gist"
        assert sel.folded and sel.dropped == (0, 1)
        assert d.requests == [summarize_request(msgs[:2], None)]
        assert d.requests[0] == Rendered(DISTILL_SYSTEM, (UserInput(distill_request(msgs[:2], "")),))
        assert sel.tokens == C.count_rendered(Rendered("", sel.messages)) <= 40 + REPLY_PRIMING

    def test_the_summary_counts_against_the_budget(self):
        # 10 + 10 + 10 fit in 35, but beside the first summary (13) only 22 are left: one
        # more turn folds, with a second distill call over the first summary
        d = _Distill("first", "second")  # summary messages of 13 and 14 tokens
        msgs = _turns(10, 50, 10, 10, 10)
        sel = _summarize(35, d).select(msgs)
        assert sel.summary == "second" and sel.messages[1:] == (msgs[3], msgs[4])
        assert "Current summary:\n\nfirst" in d.requests[1].messages[0].text

    def test_an_earlier_summary_is_folded_into_the_new_one(self):
        d = _Distill("newer")
        sel = _summarize(60, d).select(_turns(10, 50, 10), summary="older")
        assert sel.summary == "newer"
        assert d.requests[0].messages[0].text.startswith("Current summary:\n\nolder\n\nNew conversation excerpt")

    @pytest.mark.parametrize(
        "answer, reason",
        [(None, "distill returned None"), (RuntimeError("rate limited"), "distill raised RuntimeError: rate limited")],
    )
    def test_a_distill_failure_falls_back_to_the_sliding_window_with_a_warning(self, answer, reason):
        msgs = _turns(10, 50, 10, 10)
        sel = _summarize(40, _Distill(answer)).select(msgs)
        assert sel.warning is not None and reason in sel.warning
        assert sel.messages == _window(40)(msgs) and sel.summary is None and not sel.folded

    def test_a_summary_too_long_to_fit_is_a_fallback_too(self):
        sel = _summarize(40, _Distill("y" * 400)).select(_turns(10, 50, 10, 10))
        assert sel.warning is not None and "too long to fit" in sel.warning and sel.summary is None

    def test_no_distill_call_when_not_even_a_summary_could_fit(self):
        d = _Distill("S")
        msgs = _turns(10, 50, 30)  # the latest 30 leaves 5 of 35: a summary message needs 12
        sel = _summarize(35, d).select(msgs)
        assert d.requests == [] and sel.messages == (msgs[2],)
        assert sel.warning is not None and "no room for a summary message" in sel.warning

    def test_a_distill_returning_a_non_string_is_a_bug(self):
        with pytest.raises(StrategyError, match="distill must return a str or None, got int"):
            _summarize(40, _Distill(42)).select(_turns(10, 50, 10, 10))

    def test_pinned_turns_are_never_folded(self):
        d = _Distill("S")
        msgs = _turns(20, 50, 10, 10, pinned=(1,))  # 90 tokens; 70 + a summary of 12 fit
        sel = _summarize(85, d).select(msgs)
        assert sel.messages[1:] == tuple(msgs[1:]) and sel.folded and sel.dropped == (0,)


class TestOrionContextSummarizing:
    def _run(self, ctx: OrionContext, turns: int, size: int = 10):
        out = []
        for t in range(turns):
            ctx.begin_turn(user(_text(size, f"turn{t}-")))
            out.append(ctx.compact())
            ctx.append(reply(f"answer {t}"))
            ctx.commit_turn()
        return out

    def test_exactly_one_summary_message_after_many_folds(self):
        events: list[object] = []
        d = _Distill(*[f"summary {k}" for k in range(40)])
        ctx = OrionContext("", _summarize(60, d), on_event=events.append)
        comps = self._run(ctx, 20)
        heads = [[m for m in c.rendered.messages if m.text.startswith(SUMMARY_PREFIX)] for c in comps]
        first = next(i for i, h in enumerate(heads) if h)
        assert first == 4  # turns of 15 tokens: the fifth request is the first over 60
        assert all(len(h) == 1 and comps[i].rendered.messages[0] is h[0] for i, h in enumerate(heads) if i >= first)
        assert ctx.summary == d.answers[len(d.requests) - 1]
        folds = [e for e in events if isinstance(e, ContextCompacted)]
        # one event per folding compaction (one fold may take several distill calls)
        assert len(folds) == sum(c.compacted for c in comps) and len(folds) <= len(d.requests)
        assert all(e.dropped_messages > 0 for e in folds)
        # every message is either still sent or was folded exactly once
        assert sum(e.dropped_messages for e in folds) + len(comps[-1].rendered.messages) - 1 == len(ctx.transcript) - 1

    def test_fold_is_a_compaction_and_emits_events(self):
        events: list[object] = []
        d = _Distill("S")  # a 12-token summary message
        ctx = OrionContext("", _summarize(40, d), on_event=events.append)
        comps = self._run(ctx, 4)  # turns of 15 tokens (10 input + 5 reply)
        assert [c.compacted for c in comps] == [False, False, False, True]
        # 10 + 15 + 15 fit; beside the summary only 28 are left, so two turns fold (two calls)
        assert [type(e).__name__ for e in events] == ["ContextBudget"] * 3 + ["ContextCompacted", "ContextBudget"]
        assert events[3] == ContextCompacted(4) and len(d.requests) == 2
        assert comps[-1].rendered.messages[1:] == ctx.transcript[-4:-1]

    def test_distill_failure_warns_and_retries_at_the_next_compaction(self):
        events: list[object] = []
        d = _Distill(None, RuntimeError("boom"), "finally")
        ctx = OrionContext("", _summarize(40, d), on_event=events.append)
        comps = self._run(ctx, 6)
        warnings = [e for e in events if isinstance(e, StrategyWarning)]
        assert [w.message.split(";")[0] for w in warnings] == [
            "SummarizeWindow: distill returned None", "SummarizeWindow: distill raised RuntimeError: boom"
        ]  # fmt: skip
        assert all(C.count_rendered(c.rendered) <= ctx.max_request_tokens for c in comps)
        assert ctx.summary == "finally"

    def test_distill_calls_reach_subscribers_only(self):
        handled, metered = [], []
        ctx = OrionContext("", _summarize(40, _Distill("S")), on_event=handled.append)
        ctx.subscribe(metered.append)
        self._run(ctx, 4)
        calls = [e for e in metered if isinstance(e, DistillCall)]
        # two turns fold with two distill calls; orion's own handler sees only orion's events
        assert len(calls) == 2 and calls[-1].reply == "S" and ctx.summary == "S"
        assert not any(isinstance(e, DistillCall) for e in handled)
        assert [e for e in metered if not isinstance(e, DistillCall)] == handled

    def test_abort_restores_the_summary_of_the_turn_start(self):
        d = _Distill("one")
        ctx = OrionContext("", _summarize(40, d))
        self._run(ctx, 4)
        assert ctx.summary == "one"
        before = ctx.transcript
        d.answers = ["two"]
        ctx.begin_turn(u := user(_text(10, "aborted")))
        ctx.compact()
        ctx.append(reply("", call("c", "lookup")))
        ctx.append(results_for("c", content="z" * 12))
        assert ctx.compact().compacted and ctx.summary == "two"
        ctx.abort_turn()
        assert ctx.summary == "one" and ctx.transcript == (*before, u)


# --- properties: the context driven as the replay engine drives it ------------------------


@dataclass
class _Turn:
    user: UserInput
    rounds: list[tuple[AssistantMessage, ToolResults]]
    final: AssistantMessage
    abort_after: int | None  # abort after this many rounds, or commit


@st.composite
def _scripts(draw):
    turns = []
    for t in range(draw(st.integers(1, 7))):
        pin = draw(st.sampled_from([None, None, None, None, "user", "reply", "results"]))
        user = UserInput(f"user {t} " + "u" * draw(st.integers(0, 120)), pinned=pin == "user")
        rounds = []
        for r in range(draw(st.integers(0, 3))):
            ids = [f"t{t}r{r}c{k}" for k in range(draw(st.integers(1, 2)))]
            reply = AssistantMessage(
                "r" * draw(st.integers(0, 40)), tuple(ToolCall(i, "lookup", {"q": i}) for i in ids),
                pinned=pin == "reply" and r == 0,
            )  # fmt: skip
            content = "c" * draw(st.integers(0, 160))
            results = ToolResults(tuple(ToolResult(i, content) for i in ids), pinned=pin == "results" and r == 0)
            rounds.append((reply, results))
        final = AssistantMessage(f"final {t} " + "f" * draw(st.integers(0, 60)))
        aborted = draw(st.integers(0, 5)) == 0
        turns.append(_Turn(user, rounds, final, draw(st.integers(0, len(rounds))) if aborted else None))
    return {
        "turns": turns,
        "max_tokens": draw(st.integers(60, 700)),
        "reserve": draw(st.integers(0, 40)),
        "system": "s" * draw(st.integers(0, 60)),
        "tools": TOOLS if draw(st.booleans()) else (),
        "plan": draw(st.lists(st.sampled_from(["ok", "ok", "ok", "none", "raise", "long"]), min_size=1, max_size=12)),
    }


class _PlannedDistill:
    def __init__(self, plan: list[str]) -> None:
        self.plan, self.calls, self.failed_at = plan, 0, []

    def __call__(self, rendered: Rendered) -> str | None:
        step = self.plan[self.calls % len(self.plan)]
        self.calls += 1
        if step == "ok":
            return f"summary #{self.calls}"
        self.failed_at.append(self.calls)
        if step == "none":
            return None
        if step == "raise":
            raise ConnectionError("model unreachable")
        return "L" * 4000


def _reference_window(transcript, system, tools, limit, head_tokens=0):
    """orion's rule written plainly: None when pinned + latest (+ summary) do not fit."""
    groups = turn_groups(transcript)
    cost = [sum(C.count_message(m) for m in g) for g in groups]
    pinned = {i for i, g in enumerate(groups) if any(m.pinned for m in g)}
    available = limit - C.count_rendered(Rendered(system), tools) - head_tokens
    keep = pinned | {len(groups) - 1}
    total = sum(cost[i] for i in keep)
    if total > available:
        return None
    for i in range(len(groups) - 2, -1, -1):
        if i in keep:
            continue
        if total + cost[i] > available:
            break
        total += cost[i]
        keep.add(i)
    return [m for i, g in enumerate(groups) if i in keep for m in g]


def _check_request(ctx: OrionContext, comp: Compaction, turn_messages: list, summarizing: bool) -> None:
    msgs = comp.rendered.messages
    transcript = ctx.transcript
    position = {id(m): i for i, m in enumerate(transcript)}
    synthetic = [k for k, m in enumerate(msgs) if id(m) not in position]
    if summarizing and ctx.summary:
        assert synthetic == [0] and msgs[0].text == f"{SUMMARY_PREFIX}\n\n{ctx.summary}" and msgs[0].pinned
    else:
        assert synthetic == []
    originals = [position[id(m)] for m in msgs if id(m) in position]
    assert originals == sorted(originals), "kept messages stay in their original order"
    # the current turn is whole, at the end
    assert list(msgs[len(msgs) - len(turn_messages) :]) == turn_messages
    assert all(a is b for a, b in zip(msgs[len(msgs) - len(turn_messages) :], turn_messages))
    # pinned messages always survive
    sent = {id(m) for m in msgs}
    assert all(id(m) in sent for m in transcript if m.pinned)
    # tool calls are followed by their results, results preceded by their calls
    for k, m in enumerate(msgs):
        if isinstance(m, AssistantMessage) and m.calls and k + 1 < len(msgs):
            assert isinstance(msgs[k + 1], ToolResults)
            assert [r.id for r in msgs[k + 1].results] == [c.id for c in m.calls]
        if isinstance(m, ToolResults):
            assert k > 0 and isinstance(msgs[k - 1], AssistantMessage) and msgs[k - 1].calls
    # the budget promise
    assert C.count_rendered(comp.rendered, ctx.tools) <= ctx.max_request_tokens


def _drive(script, summarizing: bool) -> dict:
    distill = _PlannedDistill(script["plan"])
    if summarizing:
        window = SummarizeWindow(script["max_tokens"], counter=C, distill=distill, reserve_tokens=script["reserve"])
    else:
        window = SlidingWindow(script["max_tokens"], counter=C, reserve_tokens=script["reserve"])
    events: list[object] = []
    ctx = OrionContext(script["system"], window, tools=script["tools"], on_event=events.append)
    stats = {"requests": 0, "folds": 0, "warnings": 0, "budget_errors": 0, "compacted": 0}

    def compact(turn_messages):
        before_events, before_calls, summary_before = len(events), distill.calls, ctx.summary
        try:
            comp = ctx.compact()
        except BudgetError:
            head = C.count_message(summary_message(summary_before)) if summary_before else 0
            limit = ctx.max_request_tokens
            assert _reference_window(ctx.transcript, script["system"], script["tools"], limit, head) is None
            stats["budget_errors"] += 1
            return None
        stats["requests"] += 1
        _check_request(ctx, comp, turn_messages, summarizing)
        new = events[before_events:]
        assert [type(e) for e in new].count(ContextBudget) == 1 and isinstance(new[-1], ContextBudget)
        assert new[-1].used_tokens == C.count_rendered(comp.rendered, ctx.tools)
        failed = [c for c in distill.failed_at if c > before_calls]
        warned = [e for e in new if isinstance(e, StrategyWarning)]
        assert len(warned) <= 1 and (not failed or warned)
        if warned:  # a fallback changes nothing but this request
            assert ctx.summary == summary_before and not any(isinstance(e, ContextCompacted) for e in new)
        stats["warnings"] += len(warned)
        stats["folds"] += sum(isinstance(e, ContextCompacted) for e in new)
        if not summarizing:
            assert list(comp.rendered.messages) == _reference_window(
                ctx.transcript, script["system"], script["tools"], ctx.max_request_tokens
            )
        return comp

    for turn in script["turns"]:
        summary_at_start = ctx.summary
        ctx.begin_turn(turn.user)
        current = [turn.user]
        comp = compact(current)
        if comp is None:
            return stats
        request = comp.rendered.messages
        for r, (reply, results) in enumerate(turn.rounds):
            if turn.abort_after == r:
                break
            ctx.observe(Usage(input_tokens=C.count_rendered(Rendered(script["system"], request), script["tools"])))
            ctx.append(reply)
            ctx.append(results)
            current += [reply, results]
            comp = compact(current)
            if comp is None:
                return stats
            continues = comp.rendered.messages == request + (reply, results) and all(
                a is b for a, b in zip(comp.rendered.messages, request + (reply, results))
            )
            assert comp.compacted == (not continues)
            stats["compacted"] += comp.compacted
            request = comp.rendered.messages if comp.compacted else request + (reply, results)
            assert request == comp.rendered.messages
        if turn.abort_after is not None:
            before = ctx.transcript[: len(ctx.transcript) - len(current)]
            ctx.abort_turn()
            assert ctx.transcript == (*before, turn.user) and ctx.summary == summary_at_start
        else:
            ctx.append(turn.final)
            ctx.commit_turn()
    return stats


_PROPERTY = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class TestProperties:
    @_PROPERTY
    @given(_scripts())
    def test_sliding_window_context(self, script):
        _drive(script, summarizing=False)

    @_PROPERTY
    @given(_scripts())
    def test_summarize_window_context(self, script):
        _drive(script, summarizing=True)

    def test_the_scripts_exercise_every_path(self):
        """The generators reach folds, fallbacks, slides and budget errors (a guard against
        properties that pass because nothing happens)."""
        totals = {"folds": 0, "warnings": 0, "budget_errors": 0, "compacted": 0}

        @settings(max_examples=150, deadline=None, database=None, derandomize=True)
        @given(_scripts())
        def run(script):
            for key, value in _drive(script, summarizing=True).items():
                if key in totals:
                    totals[key] += value

        run()
        assert all(v > 0 for v in totals.values()), totals

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.tuples(st.integers(4, 60), st.booleans()), min_size=1, max_size=25), st.integers(4, 400))
    def test_pure_window_matches_the_rule_and_is_idempotent(self, turns, available):
        msgs = [user(_text(n, f"{i}-"), pinned=p) for i, (n, p) in enumerate(turns)]
        w = _window(available)
        expected = _reference_window(msgs, "", (), w.max_request_tokens)
        if expected is None:
            with pytest.raises(BudgetError):
                w(msgs)
            return
        once = w(msgs)
        assert list(once) == expected and w(once) == once


# --- ChatML and prepare_context -----------------------------------------------------------


class TestChatMLTemplate:
    def test_renders_every_message_kind(self):
        msgs = [
            UserInput("What is 2+2?"),
            AssistantMessage("Let me check.", (ToolCall("c1", "calc", {"expr": "2+2"}),)),
            ToolResults((ToolResult("c1", "4"), ToolResult("c2", "boom", success=False))),
            AssistantMessage("4"),
        ]
        tools = [{"type": "function", "function": {"name": "calc"}}]
        assert ChatMLTemplate().format("Be brief.", msgs, tools) == (
            "<|im_start|>system\nBe brief.\n\n# Tools\n\n<tools>\n"
            '{"function": {"name": "calc"}, "type": "function"}\n</tools><|im_end|>\n'
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\nLet me check.\n<tool_call>\n"
            '{"name": "calc", "arguments": {"expr": "2+2"}}\n</tool_call><|im_end|>\n'
            '<|im_start|>tool\n<tool_response id="c1">\n4\n</tool_response>\n'
            '<tool_response id="c2" success="false">\nboom\n</tool_response><|im_end|>\n'
            "<|im_start|>assistant\n4<|im_end|>\n"
            "<|im_start|>assistant\n"
        )

    def test_no_system_block_without_system_or_tools_and_no_generation_prompt(self):
        out = ChatMLTemplate(add_generation_prompt=False).format("", [UserInput("hi")], ())
        assert out == "<|im_start|>user\nhi<|im_end|>\n"

    def test_validation(self):
        with pytest.raises(StrategyError, match="add_generation_prompt must be a bool, got 'yes'"):
            ChatMLTemplate(add_generation_prompt="yes")  # type: ignore[arg-type]


class TestPrepareContext:
    def test_sliding_window_prompt(self):
        msgs = _turns(10, 50, 10, 10)
        out = prepare_context(ChatMLTemplate(), "", msgs, (), _window(30), C)
        assert isinstance(out, PreparedContext)
        assert out.prompt == ChatMLTemplate().format("", msgs[2:], ())
        assert out.token_count == C.count(out.prompt) == math.ceil(len(out.prompt.encode()) / 4)
        assert (out.messages_included, out.messages_pruned) == (2, 2) and out.warnings == ()

    def test_summarize_window_prompt(self):
        msgs = _turns(10, 50, 10, 10)
        out = prepare_context(ChatMLTemplate(), "", msgs, (), _summarize(40, _Distill("gist")), C)
        assert out.prompt.startswith(f"<|im_start|>user\n{SUMMARY_PREFIX}\n\ngist<|im_end|>\n")
        assert (out.messages_included, out.messages_pruned, out.summary) == (2, 2, "gist")

    def test_summarize_fallback_is_reported(self):
        out = prepare_context(ChatMLTemplate(), "", _turns(10, 50, 10, 10), (), _summarize(40, _Distill(None)), C)
        assert len(out.warnings) == 1 and "distill returned None" in out.warnings[0]

    def test_tools_count_and_render(self):
        out = prepare_context(ChatMLTemplate(), "sys", _turns(10), TOOLS, SlidingWindow(5000, counter=C), C)
        assert "<tools>" in out.prompt and out.messages_included == 1

    def test_bad_config(self):
        with pytest.raises(StrategyError, match="config must be an orion SlidingWindow or SummarizeWindow, got 30"):
            prepare_context(ChatMLTemplate(), "", [], (), 30, C)  # type: ignore[arg-type]


# --- in the replay engine -----------------------------------------------------------------


def _conversation(turns: int = 40):
    from harpe_lab.conversation import Conversation, Turn

    out = []
    for t in range(turns):
        messages = []
        for r in range(t % 3):
            cid = f"c{t}-{r}"
            messages += [reply("", call(cid, "lookup", q=t)),
                         results_for(cid, content=f"result {t}.{r} " + "z" * (40 * r + 20))]
        messages.append(reply(f"answer {t} " + "a" * (t % 5 * 20)))
        outcome = "interrupted" if t % 11 == 7 else "answered"
        out.append(Turn(UserInput(f"question {t} " + "q" * 30, pinned=t == 2), tuple(messages), outcome))
    return Conversation(tuple(out), id="synthetic")


class TestInTheReplayEngine:
    def test_sliding_window_keeps_its_promise_and_the_engine_agrees(self):
        from harpe_lab.replay import replay

        window = SlidingWindow(400, counter=C, reserve_tokens=50)
        result = replay(_conversation(), lambda: OrionContext("Be brief.", window, tools=TOOLS), counter=C, tools=TOOLS)
        frame = result.requests
        assert frame.input_tokens.max() <= 350 and frame.compacted.any()
        kinds = {e.kind for e in result.events}
        assert kinds == {"ContextBudget"}
        assert all("2.0" in result.sent_ids(i) for i in range(len(result)) if frame.turn[i] >= 2), "the pinned input"

    def test_summarize_window_folds_and_the_engine_sees_the_summary(self):
        from harpe_lab.replay import replay

        distill = _Distill(*[f"summary {k}" for k in range(200)])
        window = SummarizeWindow(400, counter=C, distill=distill, reserve_tokens=50)
        result = replay(_conversation(), lambda: OrionContext("Be brief.", window, tools=TOOLS), counter=C, tools=TOOLS)
        frame = result.requests
        assert frame.input_tokens.max() <= 350
        assert frame.distill_calls.sum() == len(distill.requests) > 0
        assert (frame.summary_tokens > 0).any() and result.summary(len(result) - 1).startswith("summary")
        assert "summarized" in result.kept(len(result) - 1).values()


class TestPublicSurface:
    def test_the_package_lists_every_family_and_loads_them_on_use(self):
        import subprocess
        import sys

        import harpe_lab.strategies as strategies
        from harpe_lab.strategies import laser, orion

        from pathlib import Path

        here = Path(strategies.__file__).parent  # every public module or package on disk is listed
        families = {p.stem for p in here.iterdir() if not p.name.startswith("_") and (p.suffix == ".py" or p.is_dir())}
        assert set(strategies.__all__) == families and strategies.orion is orion
        # importing Harpe's own loads no other family
        code = ("import sys, harpe_lab; "
                "print(sorted(m for m in sys.modules if m.startswith('harpe_lab.strategies.') and '._' not in m))")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert out.strip() == "['harpe_lab.strategies.harpe']"
        for module in (strategies, orion, laser):
            assert all(hasattr(module, name) for name in module.__all__)
            public = {
                n for n, v in vars(module).items()
                if not n.startswith("_") and getattr(v, "__module__", None) == module.__name__
            }  # fmt: skip
            assert public <= set(module.__all__), public - set(module.__all__)
