"""Codex's contexts on the one turn lifecycle and its truncation as one edit path.

`CompactContext` comes from `TurnLifecycle` and keeps only what is Codex's in the hooks: the
state a turn start saves (the count's parts, the summary, what the next compaction reads),
the turn's input held out of the pre-turn check, and what an abort puts back; its requests
keep the lifecycle's promise (`Compaction.edits`). `ToolOutputTruncation` is its editor
(`harpe_lab.strategies.editing.Edits`), held here to the rule its module documents, written
once more as a plain whole-history function."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.messages import AssistantMessage, Rendered, ToolResult, ToolResults, Usage, UserInput
from harpe_lab.strategies._lifecycle import TurnLifecycle
from harpe_lab.strategies.codex import (
    SERIALIZATION_ALLOWANCE,
    Compact,
    CompactContext,
    ToolOutputTruncation,
    truncate_middle,
)
from harpe_lab.strategies.codex._compact import _estimate
from harpe_lab.strategies.editing import EditContext, Edits
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_the_promise, conversations

_fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class _Distiller:
    """A summary that depends on the request only (so two runs asked the same get the same),
    recording what it was asked."""

    def __init__(self) -> None:
        self.requests: list[str] = []

    def __call__(self, rendered: Rendered) -> str:
        text = rendered.messages[0].text
        self.requests.append(text)
        return f"summary of {len(text)} characters"


def _context(limit: int = 100, user_tokens: int = 10, reasoning: int = 0, events: list | None = None):
    config = Compact(window=10_000, token_limit=limit, user_tokens=user_tokens, reasoning=reasoning)
    return config.context(SYSTEM, distill=_Distiller(), on_event=None if events is None else events.append)


def _flat(conversation) -> tuple:
    return tuple(m for t in conversation.turns for m in (t.input, *t.messages))


# --- the compaction's context ----------------------------------------------------------------


class TestOneLifecycle:
    def test_it_comes_from_the_one_base_and_keeps_only_its_hooks(self):
        assert issubclass(CompactContext, TurnLifecycle)
        own = set(vars(CompactContext))
        assert not own & {"begin_turn", "append", "abort_turn", "transcript", "base_system", "_request",
                          "_marked", "_turn_input", "_since", "_sent", "_aborted"}
        assert {"_mark_turn", "_added", "_restored"} <= own

    def test_its_public_face_is_unchanged(self):
        ctx = _context(limit=123)
        assert ctx.limit.tokens == 123 and ctx.limit.kind == "high_water"
        assert ctx.summary == "" and ctx.transcript == () and ctx.tokens == 0
        assert isinstance(ctx.distill, _Distiller) and ctx.config == Compact(window=10_000, token_limit=123,
                                                                             user_tokens=10)
        seen: list = []
        ctx.subscribe(seen.append)
        assert repr(ctx) == "CompactContext(limit=123, 0 messages)"

    def test_base_system_is_read_only_and_every_request_starts_from_it(self):
        ctx = _context()
        with pytest.raises(AttributeError):
            ctx.base_system = "another"
        ctx.begin_turn(user("one"))
        assert ctx.compact().rendered.system == SYSTEM

    def test_an_abort_before_any_turn_leaves_an_empty_transcript(self):
        ctx = _context()
        ctx.abort_turn()
        assert ctx.transcript == () and ctx.tokens == 0
        ctx.begin_turn(user("one"))
        first = ctx.compact()
        assert not first.compacted and first.edits is None and first.rendered.messages == (user("one"),)

    def test_the_turns_input_joins_the_count_after_the_pre_turn_check(self):
        ctx = _context(limit=10_000 * 9 // 10)
        first = user("x" * 400)
        ctx.begin_turn(first)
        assert ctx.tokens == 0  # held out of the check before the turn
        ctx.compact()
        assert ctx.tokens == _estimate(first)
        ctx.append(reply("a", call("c1")))
        out = results(("c1", "y" * 80))
        ctx.append(out)
        assert ctx.tokens == _estimate(out)  # the reply's own tokens come with the next usage
        ctx.observe(Usage(input_tokens=50, output_tokens=5))
        assert ctx.tokens == 55

    def test_an_abort_after_a_compaction_puts_the_history_the_summary_and_the_count_back(self):
        events: list = []
        ctx = _context(limit=100, reasoning=7, events=events)
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=40, output_tokens=5))
        ctx.append(reply("a"))
        ctx.commit_turn()
        before, count = ctx.transcript, ctx.tokens
        assert count == 45  # the one reply follows the newest user message: no reasoning yet
        two = user("two")
        ctx.begin_turn(two)
        ctx.compact()
        ctx.observe(Usage(input_tokens=200, output_tokens=5))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out")))
        assert ctx.compact().compacted and ctx.summary.startswith("summary of")
        ctx.abort_turn()
        assert ctx.transcript == (*before, two) and ctx.transcript[-1] is two and ctx.summary == ""
        # the count before the turn, its input now history like any other (and the newest user
        # message: the reply before it counts its reasoning)
        assert ctx.tokens == 45 + _estimate(two) + 7
        after = ctx.compact()
        assert not after.compacted and after.edits is None and after.rendered.messages == (*before, two)
        # the next compaction reads the history the abort put back, not what was compacted
        ctx.observe(Usage(input_tokens=150))
        ctx.append(reply("b"))
        ctx.compact()
        asked = ctx.distill.requests[-1]
        assert "one" in asked and "two" in asked and "out" not in asked


@st.composite
def _runs(draw):
    """A generated conversation, each assistant message's usage, and where an unanswered turn
    is cut off (aborted)."""
    convo = draw(conversations(max_turns=6, max_rounds=4))
    plan = []
    for turn in convo.turns:
        usages = [draw(st.integers(0, 400)) for _ in turn.messages]
        cut = None if turn.outcome == "answered" else draw(st.integers(0, len(turn.messages)))
        plan.append((turn, usages, cut))
    return plan


def _play(ctx, plan, *, skip_aborted: bool) -> list:
    """Run ``plan`` on ``ctx``, checking the lifecycle's promise at each request and what an
    abort restores; the requests of the turns that were not aborted, with the count and the
    summary after each. With ``skip_aborted`` an aborted turn is given only its input (begun
    and committed, never checked)."""
    previous: tuple = ()
    since: list = []
    aborted = False
    out = []

    def compact(record: bool) -> None:
        nonlocal previous, since, aborted
        c = ctx.compact()
        assert_the_promise(c, previous, since, aborted)
        new = c.rendered.messages
        if c.edits is None:
            assert c.compacted or aborted or not previous
        else:
            assert c.edits == ()  # Codex never edits in place
        previous, since, aborted = new, [], False
        if record:
            out.append((new, c.compacted, ctx.tokens, ctx.summary))

    for turn, usages, cut in plan:
        if cut is not None and skip_aborted:
            ctx.begin_turn(turn.input)
            ctx.commit_turn()
            since.append(turn.input)
            continue
        count = ctx.tokens
        ctx.begin_turn(turn.input)
        since.append(turn.input)
        start, summary = ctx.transcript, ctx.summary
        record = cut is None
        compact(record)
        for k, m in enumerate(turn.messages[:cut]):
            if isinstance(m, AssistantMessage):
                ctx.observe(Usage(input_tokens=usages[k], output_tokens=3))
            ctx.append(m)
            since.append(m)
            if isinstance(m, ToolResults):
                compact(record)
        if cut is None:
            ctx.commit_turn()
        else:
            ctx.abort_turn()
            assert ctx.transcript == start and ctx.transcript[-1] is turn.input
            assert ctx.summary == summary
            assert ctx.tokens == count + _estimate(turn.input)  # reasoning is 0 here
            since, aborted = [], True
    last = UserInput("last")
    ctx.begin_turn(last)
    since.append(last)
    compact(True)
    return out


class TestProperties:
    @_fast
    @given(_runs(), st.integers(1, 600), st.integers(0, 40))
    def test_an_aborted_turn_is_as_if_it_had_brought_only_its_input(self, plan, limit, user_tokens):
        """Aborted turns, whatever they compacted, leave the context where a turn given only
        its input leaves it: every later request, count, summary and distill request the same."""
        aborts = _context(limit=limit, user_tokens=user_tokens)
        inputs_only = _context(limit=limit, user_tokens=user_tokens)
        assert _play(aborts, plan, skip_aborted=False) == _play(inputs_only, plan, skip_aborted=True)
        asked = [r for r in inputs_only.distill.requests]
        assert all(r in aborts.distill.requests for r in asked)


# --- the truncation: one path ------------------------------------------------------------------


def truncation_reference(policy: ToolOutputTruncation, messages) -> tuple:
    """The module's rule over a whole history: every output whose UTF-8 bytes exceed 4 bytes a
    token of ``max_tokens`` times 1.2 (rounded up) is middle-truncated; a results message with
    none cut is the original object."""
    budget = math.ceil(policy.max_tokens * SERIALIZATION_ALLOWANCE)
    out = []
    for m in messages:
        if isinstance(m, ToolResults):
            cut = [truncate_middle(r.content, budget) for r in m.results]
            if any(c != r.content for c, r in zip(cut, m.results)):
                m = ToolResults(tuple(r if c == r.content else ToolResult(r.id, c, r.attachments, r.success)
                                      for c, r in zip(cut, m.results)), m.pinned)
        out.append(m)
    return tuple(out)


class TestTruncationIsItsEditor:
    def test_the_policy_is_defined_by_its_editor_alone(self):
        assert issubclass(ToolOutputTruncation, Edits)
        own = set(vars(ToolOutputTruncation))
        assert "__call__" not in own and "incremental" in own
        assert not {name for name in own if name.startswith("_cut") or name == "_long"}

    @_fast
    @given(conversations(), st.integers(0, 40))
    def test_it_is_codexs_rule(self, convo, max_tokens):
        messages = _flat(convo)
        policy = ToolOutputTruncation(max_tokens=max_tokens)
        out = policy(messages)
        assert out == truncation_reference(policy, messages)
        assert all(o is m for o, m in zip(out, messages) if o == m)  # what is kept is the original

    @_fast
    @given(conversations(), st.integers(0, 40), st.data())
    def test_fed_in_pieces_every_request_is_the_rule_applied_to_the_history_so_far(self, convo, max_tokens, data):
        messages = _flat(convo)
        stops = set(data.draw(st.lists(st.integers(1, len(messages)), max_size=8)))
        policy = ToolOutputTruncation(max_tokens=max_tokens)
        ctx = EditContext("", policy)
        for k, m in enumerate(messages, 1):
            ctx.begin_turn(m) if isinstance(m, UserInput) else ctx.append(m)
            if k in stops:
                assert ctx.compact().rendered.messages == truncation_reference(policy, messages[:k])
