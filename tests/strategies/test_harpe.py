"""Harpe's context lifecycle and strategies (spec §4), pinned to Harpe's own behaviour."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.strategies.harpe import (
    DISTILL_SYSTEM,
    SUMMARY_HEADER,
    Compaction,
    Context,
    ContextCompacted,
    FullContext,
    SummarizingContext,
    TurnContext,
    WindowedContext,
    distill_request,
    message_chars,
    truncate,
    turn_groups,
)
from harpe_lab.errors import HarpeLabError, StrategyError
from harpe_lab.messages import (
    AssistantMessage,
    Attachment,
    Rendered,
    ToolCall,
    ToolResult,
    ToolResults,
    Usage,
    UserInput,
)
from tests._support.builders import call, numbered_results, reply, user

BASE = "You are a careful agent."


def _turns(n: int) -> list:
    """Harpe's ContextTest shape: n turns of a 4-char input and a 4-char reply (8 chars)."""
    out: list = []
    for i in range(1, n + 1):
        out += [user(f"ask{i}"), reply(f"ans{i}")]
    return out


class _Distill:
    """A distiller that records every request and answers from a script (cycled)."""

    def __init__(self, *answers: str | None) -> None:
        self.answers = answers or ("SUMMARY",)
        self.requests: list[Rendered] = []

    def __call__(self, rendered: Rendered) -> str | None:
        self.requests.append(rendered)
        return self.answers[(len(self.requests) - 1) % len(self.answers)]


def _summarizing(initial=(), *, high=30, low=16, distill=None, events=None) -> SummarizingContext:
    return SummarizingContext(
        BASE, initial, high_water_tokens=high, low_water_chars=low,
        distill=distill if distill is not None else _Distill(),
        on_event=None if events is None else events.append,
    )


def _chars(messages) -> int:
    return sum(message_chars(m) for m in messages)


# --- message_chars, turn_groups, truncate ----------------------------------------------


class TestMessageChars:
    def test_user_counts_text_only(self):
        att = Attachment("big.bin", 10**9, "application/octet-stream", "/x/big.bin")
        assert message_chars(UserInput("hello", (att,))) == 5

    def test_assistant_counts_text_and_default_json_of_inputs(self):
        # Python's default dumps: ", " and ": " separators, non-ASCII escaped as \uXXXX.
        call = ToolCall("a-very-long-id", "a_long_tool_name", {"city": "Zürich", "n": [1, 2]})
        assert message_chars(reply("ok", call)) == 2 + len('{"city": "Z\\u00fcrich", "n": [1, 2]}')
        assert message_chars(reply("ok", call)) == 2 + 36

    def test_assistant_without_calls_counts_text(self):
        assert message_chars(reply("héllo")) == 5

    def test_tool_results_count_all_contents(self):
        assert message_chars(numbered_results("abc", "", "de", prefix="c")) == 5

    def test_rejects_what_is_not_a_message(self):
        with pytest.raises(TypeError, match="not a harpe_lab message"):
            message_chars("text")  # type: ignore[arg-type]


class TestTurnGroups:
    def test_a_group_starts_at_each_user_input(self):
        u1, a1, r1, a2, u2 = (user("1"), reply("x", call("c1", "f")), numbered_results("r", prefix="c"), reply("y"),
                              user("2"))
        assert turn_groups([u1, a1, r1, a2, u2]) == [[u1, a1, r1, a2], [u2]]

    def test_a_leading_non_user_prefix_is_its_own_group(self):
        a, r, u = reply("x", call("c1", "f")), numbered_results("r", prefix="c"), user("q")
        assert turn_groups([a, r, u]) == [[a, r], [u]]

    def test_empty(self):
        assert turn_groups([]) == []


class TestTruncate:
    def test_total_equal_to_budget_keeps_everything(self):
        msgs = _turns(5)
        assert truncate(msgs, 40) == msgs

    def test_one_char_over_drops_the_oldest_turn(self):
        msgs = _turns(5)
        assert truncate(msgs, 39) == msgs[2:]

    def test_keeps_the_newest_turns_that_fit(self):
        assert truncate(_turns(5), 16) == _turns(5)[6:]

    def test_the_last_turn_is_kept_even_when_alone_it_is_too_big(self):
        msgs = _turns(2) + [user("x" * 100), reply("y" * 100)]
        assert truncate(msgs, 10) == msgs[-2:]
        assert truncate(msgs, -1) == msgs[-2:]

    def test_a_reply_is_never_separated_from_its_results(self):
        msgs = [user("aa"), reply("b", call("c1", "f")), numbered_results("c" * 50, prefix="c"), reply("d"), user("e")]
        assert truncate(msgs, 20) == [user("e")]

    def test_a_leading_prefix_is_dropped_first(self):
        msgs = [reply("zzzz"), numbered_results("yyyy", prefix="c"), *_turns(1)]
        assert truncate(msgs, 8) == _turns(1)

    def test_empty_input(self):
        assert truncate([], 0) == []

    def test_does_not_modify_its_input(self):
        msgs = _turns(3)
        copy = list(msgs)
        truncate(msgs, 1)
        assert msgs == copy


# --- hypothesis: well-formed transcripts -----------------------------------------------

_text = st.text(alphabet="abcdé✓ ", max_size=8)
_input = st.dictionaries(st.sampled_from("xyz"), st.integers(0, 99) | _text, max_size=2)


@st.composite
def _turn(draw) -> list:
    """One recorded turn as Harpe's engine writes it: input, rounds of reply + results, answer."""
    msgs: list = [UserInput(draw(_text))]
    for r in range(draw(st.integers(0, 2))):
        n = draw(st.integers(1, 2))
        calls = tuple(ToolCall(f"c{r}{i}", "f", draw(_input)) for i in range(n))
        msgs.append(AssistantMessage(draw(_text), calls))
        msgs.append(ToolResults(tuple(ToolResult(c.id, draw(_text)) for c in calls)))
    msgs.append(AssistantMessage(draw(_text)))
    return msgs


@st.composite
def _transcript(draw) -> list:
    out: list = []
    if draw(st.booleans()):  # a leading fragment that does not start at a user input
        out += draw(_turn())[1:]
    for t in draw(st.lists(_turn(), max_size=6)):
        out += t
    return out


def _separates_results(messages) -> bool:
    return any(
        isinstance(m, ToolResults) and (i == 0 or not isinstance(messages[i - 1], AssistantMessage))
        for i, m in enumerate(messages)
    )


class TestTruncateProperties:
    @settings(max_examples=300, deadline=None)
    @given(_transcript(), st.integers(-5, 150))
    def test_truncate_keeps_the_longest_fitting_suffix_of_whole_turns(self, msgs, budget):
        kept = truncate(msgs, budget)
        cut = len(msgs) - len(kept)
        assert kept == msgs[cut:], "a suffix of the transcript"
        if cut:
            assert isinstance(kept[0], UserInput), "a window starts at a user input"
            assert not _separates_results(kept)
        groups = turn_groups(msgs)
        if groups:
            assert kept[-len(groups[-1]):] == groups[-1], "the last turn is always kept"
        if len(turn_groups(kept)) > 1:
            assert _chars(kept) <= budget
        if cut:
            # strict >: one more turn would not have fitted
            dropped_last = turn_groups(msgs[:cut])[-1]
            assert _chars(kept) + _chars(dropped_last) > budget

    @settings(max_examples=150, deadline=None)
    @given(_transcript(), st.integers(0, 150))
    def test_truncate_is_idempotent(self, msgs, budget):
        once = truncate(msgs, budget)
        assert truncate(once, budget) == once


# --- the strategies, by example --------------------------------------------------------


class TestProtocol:
    @pytest.mark.parametrize("ctx", [FullContext(BASE), WindowedContext(BASE), TurnContext(BASE), _summarizing()])
    def test_every_strategy_is_a_context(self, ctx):
        assert isinstance(ctx, Context)

    def test_compact_returns_rendered_and_flag(self):
        ctx = FullContext(BASE)
        ctx.begin_turn(user("hi"))
        assert ctx.compact() == Compaction(Rendered(BASE, (user("hi"),)), False)

    def test_begin_turn_takes_a_user_input(self):
        with pytest.raises(TypeError, match="begin_turn takes a UserInput, got AssistantMessage"):
            FullContext(BASE).begin_turn(reply("a"))  # type: ignore[arg-type]

    def test_transcript_and_rendered_are_snapshots(self):
        ctx = FullContext(BASE, _turns(1))
        seen, rendered = ctx.transcript, ctx.compact().rendered.messages
        ctx.begin_turn(user("more"))
        assert seen == rendered == tuple(_turns(1))


class TestFullContext:
    def test_renders_the_whole_transcript_and_never_compacts(self):
        ctx = FullContext(BASE, _turns(2))
        ctx.begin_turn(user("new"))
        ctx.observe(Usage(10**9))
        assert ctx.compact() == Compaction(Rendered(BASE, (*_turns(2), user("new"))), False)

    def test_abort_keeps_the_user_input_and_drops_the_tail(self):
        ctx = FullContext(BASE, _turns(1))
        ctx.begin_turn(user("new"))
        ctx.append(reply("x", call("c1", "f")))
        ctx.append(numbered_results("r", prefix="c"))
        ctx.abort_turn()
        assert ctx.transcript == (*_turns(1), user("new"))

    def test_commit_keeps_the_turn(self):
        ctx = FullContext(BASE)
        ctx.begin_turn(user("a"))
        ctx.append(reply("b"))
        ctx.commit_turn()
        assert ctx.transcript == (user("a"), reply("b"))
        ctx.begin_turn(user("c"))
        ctx.abort_turn()
        assert ctx.transcript == (user("a"), reply("b"), user("c"))

    def test_the_initial_list_is_not_shared(self):
        initial = _turns(1)
        ctx = FullContext(BASE, initial)
        ctx.begin_turn(user("q"))
        assert initial == _turns(1)


class TestWindowedContext:
    def test_harpes_budget_is_24000_chars(self):
        assert WindowedContext(BASE).max_chars == 24_000
        big = [user("x" * 12_000), reply("y" * 12_000), user("z")]
        ctx = WindowedContext(BASE, big)
        assert ctx.compact().rendered.messages == (user("z"),)

    def test_renders_a_window_but_stores_everything(self):
        ctx = WindowedContext(BASE, _turns(5), max_chars=16)
        ctx.begin_turn(user("new1"))
        c = ctx.compact()
        assert c == Compaction(Rendered(BASE, (*_turns(5)[8:], user("new1"))), False)
        assert ctx.transcript == (*_turns(5), user("new1"))

    def test_abort_keeps_the_user_input(self):
        ctx = WindowedContext(BASE, _turns(1), max_chars=8)
        ctx.begin_turn(user("new"))
        ctx.append(reply("x"))
        ctx.abort_turn()
        assert ctx.transcript == (*_turns(1), user("new"))


class TestTurnContext:
    def test_only_the_current_turn_is_sent(self):
        ctx = TurnContext(BASE)
        ctx.begin_turn(user("one"))
        ctx.append(reply("r1"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        ctx.append(reply("x", call("c1", "f")))
        ctx.append(numbered_results("r", prefix="c"))
        assert ctx.compact() == Compaction(Rendered(BASE,
                                                    (user("two"), reply("x", call("c1", "f")),
                                                     numbered_results("r", prefix="c"))), False)

    @pytest.mark.parametrize("end", ["commit_turn", "abort_turn"])
    def test_commit_and_abort_both_forget_the_turn(self, end):
        ctx = TurnContext(BASE)
        ctx.begin_turn(user("one"))
        ctx.append(reply("a"))
        getattr(ctx, end)()
        assert ctx.compact().rendered.messages == ()


class TestSummarizingPinnedScenario:
    """Harpe's ContextTest: five 8-char turns, high water 30 tokens, low water 16 chars."""

    REQUEST = (
        "Conversation excerpt to summarize:\n\n"
        "User: ask1\nAgent: ans1\n"
        "User: ask2\nAgent: ans2\n"
        "User: ask3\nAgent: ans3\n"
        "\nReply with the updated summary."
    )
    SYSTEM = (
        "You are a careful agent.\n\n"
        "# Conversation summary\n\n"
        "(Older turns, distilled; the messages below are the most recent turns.)\n\n"
        "ask1-ask3 happened"
    )

    def test_over_high_water_keeps_two_turns_and_distills_once(self):
        distill, events = _Distill("ask1-ask3 happened"), []
        ctx = _summarizing(_turns(5), distill=distill, events=events)
        ctx.observe(Usage(40))
        c = ctx.compact()
        assert c.compacted is True
        assert c.rendered.messages == tuple(_turns(5)[6:])
        assert len(distill.requests) == 1
        assert events == [ContextCompacted(dropped_messages=6)]
        assert c.rendered.system == self.SYSTEM
        assert ctx.summary == "ask1-ask3 happened"

    def test_distill_receives_harpes_prompt_and_request_verbatim(self):
        distill = _Distill("s")
        ctx = _summarizing(_turns(5), distill=distill)
        ctx.observe(Usage(40))
        ctx.compact()
        assert distill.requests == [Rendered(DISTILL_SYSTEM, (UserInput(self.REQUEST),))]
        assert DISTILL_SYSTEM == (
            "You maintain a running summary of a conversation between a user and an agent. Reply with "
            "ONLY the updated summary text — no preamble, no headings. Preserve: the user's goals and "
            "constraints, decisions made, facts discovered, tool actions taken and their outcomes, and "
            "unresolved questions. Be concise; drop pleasantries and dead ends."
        )

    def test_a_following_low_observation_does_not_distill_again(self):
        distill, events = _Distill("ask1-ask3 happened"), []
        ctx = _summarizing(_turns(5), distill=distill, events=events)
        ctx.observe(Usage(40))
        ctx.compact()
        ctx.observe(Usage(15))
        c = ctx.compact()
        assert c == Compaction(Rendered(self.SYSTEM, tuple(_turns(5)[6:])), False)
        assert len(distill.requests) == 1 and len(events) == 1

    def test_distill_none_leaves_the_window_and_system_intact(self):
        distill, events = _Distill(None), []
        ctx = _summarizing(_turns(5), distill=distill, events=events)
        ctx.observe(Usage(40))
        c = ctx.compact()
        assert c == Compaction(Rendered(BASE, tuple(_turns(5))), False)
        assert len(c.rendered.messages) == 10
        assert len(distill.requests) == 1 and events == [] and ctx.summary == ""

    def test_same_scenario_driven_turn_by_turn(self):
        distill, events = _Distill("ask1-ask3 happened"), []
        ctx = _summarizing(distill=distill, events=events)
        for i, tokens in enumerate([8, 16, 24, 30, 40], start=1):
            ctx.begin_turn(user(f"ask{i}"))
            assert ctx.compact().compacted is False, "30 is not over high water 30"
            ctx.observe(Usage(tokens))
            ctx.append(reply(f"ans{i}"))
            ctx.commit_turn()
        assert len(distill.requests) == 0, "40 tokens were observed only after the last request"
        ctx.begin_turn(user("ask6"))
        c = ctx.compact()
        # the new turn joins the kept window: ask4..ask5 and ask6 are 20 > 16, so ask4 goes too
        assert c.compacted and events == [ContextCompacted(8)]
        assert c.rendered.messages == (*_turns(5)[8:], user("ask6"))
        assert distill.requests[0].messages[0].text == (
            "Conversation excerpt to summarize:\n\n"
            "User: ask1\nAgent: ans1\nUser: ask2\nAgent: ans2\n"
            "User: ask3\nAgent: ans3\nUser: ask4\nAgent: ans4\n"
            "\nReply with the updated summary."
        )


class TestSummarizingContext:
    def test_strictly_over_high_water_is_needed(self):
        distill = _Distill()
        ctx = _summarizing(_turns(5), distill=distill)
        ctx.observe(Usage(30))
        assert ctx.compact().compacted is False and distill.requests == []

    def test_only_input_tokens_are_read(self):
        distill = _Distill()
        ctx = _summarizing(_turns(5), distill=distill)
        ctx.observe(Usage(1, output_tokens=10**6, cache_read_tokens=10**6, cache_write_tokens=10**6))
        assert ctx.compact().compacted is False and distill.requests == []

    def test_a_single_oversized_turn_is_not_distilled(self):
        distill = _Distill()
        ctx = _summarizing([user("x" * 100), reply("y" * 100)], distill=distill)
        ctx.observe(Usage(1000))
        assert ctx.compact().compacted is False and distill.requests == []

    def test_distill_none_is_retried_at_the_next_boundary(self):
        distill = _Distill(None, "later")
        ctx = _summarizing(_turns(5), distill=distill)
        ctx.observe(Usage(40))
        assert ctx.compact().compacted is False
        assert ctx.compact().compacted is True
        assert ctx.summary == "later" and len(distill.requests) == 2

    def test_second_compaction_folds_into_the_current_summary(self):
        distill = _Distill("S1", "S2")
        ctx = _summarizing(_turns(5), distill=distill)
        ctx.observe(Usage(40))
        ctx.compact()
        for i in (6, 7):
            ctx.begin_turn(user(f"ask{i}"))
            ctx.append(reply(f"ans{i}"))
            ctx.commit_turn()
        ctx.observe(Usage(31))
        c = ctx.compact()
        assert c.compacted and ctx.summary == "S2"
        assert distill.requests[1].messages[0].text == (
            "Current summary:\n\nS1\n\nNew conversation excerpt to fold into it:\n\n"
            "User: ask4\nAgent: ans4\nUser: ask5\nAgent: ans5\n\nReply with the updated summary."
        )

    def test_request_lists_tool_calls_and_results(self):
        dropped = [user("go"), reply("", call("c1", "grep"), call("c2", "cat")),
                   numbered_results("hit", "body", prefix="c"),
                   reply("done")]
        assert distill_request(dropped, "") == (
            "Conversation excerpt to summarize:\n\nUser: go\nAgent: [called tool grep]\n"
            "Agent: [called tool cat]\n[tool result] hit\n[tool result] body\nAgent: done\n"
            "\nReply with the updated summary."
        )

    def test_empty_summary_is_accepted_and_renders_no_block(self):
        distill = _Distill("", "S")
        ctx = _summarizing(_turns(5), distill=distill)
        ctx.observe(Usage(40))
        c = ctx.compact()
        assert c == Compaction(Rendered(BASE, tuple(_turns(5)[6:])), True)
        for i in (6, 7, 8):
            ctx.begin_turn(user(f"ask{i}"))
            ctx.append(reply(f"ans{i}"))
            ctx.commit_turn()
        ctx.compact()  # still 40 observed: compacts again, built as a first summary
        assert distill.requests[1].messages[0].text.startswith("Conversation excerpt to summarize:\n\nUser: ask4")

    def test_summary_header_is_harpes(self):
        assert SUMMARY_HEADER == (
            "# Conversation summary\n\n(Older turns, distilled; the messages below are the most recent turns.)\n\n"
        )

    def test_an_exception_from_distill_propagates_and_changes_nothing(self):
        def boom(_: Rendered) -> str:
            raise RuntimeError("provider down")

        ctx = _summarizing(_turns(5), distill=boom)
        ctx.observe(Usage(40))
        with pytest.raises(RuntimeError, match="provider down"):
            ctx.compact()
        assert ctx.transcript == tuple(_turns(5)) and ctx.summary == ""

    def test_distill_returning_a_non_string_is_an_error(self):
        ctx = _summarizing(_turns(5), distill=lambda r: 42)
        ctx.observe(Usage(40))
        with pytest.raises(StrategyError, match="distill must return a str or None, got int"):
            ctx.compact()

    def test_works_without_an_event_sink(self):
        ctx = _summarizing(_turns(5))
        ctx.observe(Usage(40))
        assert ctx.compact().compacted


class TestSummarizingAbort:
    def test_abort_undoes_a_mid_turn_compaction(self):
        distill, events = _Distill("S"), []
        ctx = _summarizing(_turns(5), distill=distill, events=events)
        ctx.observe(Usage(10))
        ctx.begin_turn(user("ask6"))
        ctx.compact()
        ctx.observe(Usage(40))
        ctx.append(reply("look", call("c1", "f")))
        ctx.append(numbered_results("r", prefix="c"))
        assert ctx.compact().compacted and ctx.summary == "S"
        ctx.abort_turn()
        assert ctx.transcript == (*_turns(5), user("ask6"))
        assert ctx.summary == ""
        assert ctx.compact() == Compaction(Rendered(BASE, (*_turns(5), user("ask6"))), False)
        # the restored observation (10) is below high water: nothing is distilled again
        assert len(distill.requests) == 1

    def test_abort_restores_the_summary_of_the_turn_start(self):
        distill = _Distill("S1", "S2")
        ctx = _summarizing(_turns(5), distill=distill)
        ctx.observe(Usage(40))
        ctx.compact()
        ctx.observe(Usage(5))
        ctx.begin_turn(user("ask6"))
        ctx.observe(Usage(99))
        ctx.append(reply("x" * 50))
        assert ctx.compact().compacted and ctx.summary == "S2"
        ctx.abort_turn()
        assert ctx.summary == "S1"
        assert ctx.transcript == (*_turns(5)[6:], user("ask6"))


class TestConfiguration:
    @pytest.mark.parametrize(
        "make, shown",
        [
            (lambda: WindowedContext(BASE, max_chars=-1), "max_chars must be an int >= 0, got -1"),
            (lambda: WindowedContext(BASE, max_chars=2.5), "got 2.5"),
            (lambda: _summarizing(high=0), "high_water_tokens must be an int > 0, got 0"),
            (lambda: _summarizing(high=-5), "got -5"),
            (lambda: _summarizing(high=True), "got True"),
            (lambda: _summarizing(low=-1), "low_water_chars must be an int >= 0, got -1"),
            (lambda: SummarizingContext(BASE, high_water_tokens=1, low_water_chars=1, distill=None),
             "distill must be a callable Rendered -> str | None, got None"),
            (lambda: SummarizingContext(BASE, high_water_tokens=1, low_water_chars=1, distill="gpt-4o"),
             "got 'gpt-4o'"),
            (lambda: FullContext(None), "base_system must be a str, got NoneType"),
            (lambda: TurnContext(3), "base_system must be a str, got int"),
        ],
    )
    def test_bad_values_raise_strategy_errors_that_show_them(self, make, shown):
        with pytest.raises(StrategyError) as info:
            make()
        assert shown in str(info.value)
        assert isinstance(info.value, ValueError) and isinstance(info.value, HarpeLabError)

    def test_high_water_has_no_default(self):
        with pytest.raises(TypeError):
            SummarizingContext(BASE, low_water_chars=1, distill=_Distill())  # type: ignore[call-arg]

    def test_zero_budgets_are_allowed(self):
        assert WindowedContext(BASE, max_chars=0).max_chars == 0
        assert _summarizing(low=0).low_water_chars == 0

    @pytest.mark.parametrize(
        "make, name",
        [
            (lambda: FullContext(BASE), "base_system"),
            (lambda: WindowedContext(BASE), "base_system"),
            (lambda: WindowedContext(BASE), "max_chars"),
            (lambda: TurnContext(BASE), "base_system"),
            (lambda: _summarizing(), "base_system"),
            (lambda: _summarizing(), "high_water_tokens"),
            (lambda: _summarizing(), "low_water_chars"),
            (lambda: _summarizing(), "distill"),
        ],
    )
    def test_the_configuration_is_frozen(self, make, name):
        ctx = make()
        before = getattr(ctx, name)
        with pytest.raises(AttributeError):
            setattr(ctx, name, 1)
        assert getattr(ctx, name) is before

    def test_a_frozen_window_keeps_its_limit(self):
        ctx = WindowedContext(BASE, _turns(5), max_chars=16)
        with pytest.raises(AttributeError):
            ctx.max_chars = 10**6  # type: ignore[misc]
        assert ctx.limit.tokens == 4
        assert ctx.compact().rendered.messages == tuple(_turns(5)[6:])


class TestOneLifecycle:
    """Every strategy's turn lifecycle is `TurnLifecycle`'s: a strategy keeps only its hooks."""

    @staticmethod
    def _classes():
        from harpe_lab.strategies.anthropic.claude_code import AutoCompactContext
        from harpe_lab.strategies.langchain import SummarizationContext
        from harpe_lab.strategies.laser import PolicyContext
        from harpe_lab.strategies.orion import OrionContext

        return (FullContext, WindowedContext, TurnContext, SummarizingContext, OrionContext, AutoCompactContext,
                PolicyContext, SummarizationContext)

    def test_every_context_comes_from_the_one_base(self):
        from harpe_lab.strategies._lifecycle import TurnLifecycle

        for cls in self._classes():
            assert issubclass(cls, TurnLifecycle), cls
            own = {name for c in cls.__mro__[: cls.__mro__.index(TurnLifecycle)] for name in vars(c)}
            assert not own & {"begin_turn", "append", "abort_turn"}, cls
            # Harpe's TurnContext forgets its turn on commit too (§4.6): its one addition
            assert ("commit_turn" in own) == (cls is TurnContext), cls

    @pytest.mark.parametrize("make", [FullContext, lambda b: _summarizing()])
    def test_a_request_after_an_abort_promises_nothing(self, make):
        ctx = make(BASE)
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.append(reply("x", call("c1", "f")))
        ctx.append(numbered_results("r", prefix="c"))
        assert ctx.compact().edits == ()  # the previous request and what was appended since
        ctx.abort_turn()
        ctx.begin_turn(user("two"))
        assert ctx.compact().edits is None
        ctx.append(reply("y"))
        assert ctx.compact().edits == ()


# --- hypothesis: the lifecycle of every strategy ---------------------------------------


@st.composite
def _script(draw) -> list:
    """Turns as the engine runs them: the op list of each turn, cut short by an abort."""
    turns = []
    for _ in range(draw(st.integers(1, 5))):
        msgs = draw(_turn())
        ops: list = [("begin", msgs[0]), ("compact",)]
        for m in msgs[1:]:
            if isinstance(m, AssistantMessage):
                ops.append(("observe", Usage(draw(st.integers(0, 80)))))
            ops.append(("append", m))
            if isinstance(m, ToolResults):
                ops.append(("compact",))
        if draw(st.booleans()):
            ops.append(("commit",))
        else:
            ops = ops[: draw(st.integers(1, len(ops)))] + [("abort",)]
        turns.append(ops)
    return turns


_STRATEGIES = ["full", "windowed", "turn", "summarizing"]


def _make(kind: str, draw):
    if kind == "full":
        return FullContext(BASE), None, None
    if kind == "windowed":
        return WindowedContext(BASE, max_chars=draw(st.integers(0, 60))), None, None
    if kind == "turn":
        return TurnContext(BASE), None, None
    answers = draw(st.lists(st.sampled_from([None, "", "S1", "S2 ✓"]), min_size=1, max_size=4))
    distill, events = _Distill(*answers), []
    ctx = SummarizingContext(BASE, high_water_tokens=draw(st.integers(1, 60)),
                             low_water_chars=draw(st.integers(0, 40)), distill=distill, on_event=events.append)
    return ctx, distill, events


def _check_window(messages, turn) -> None:
    assert messages[len(messages) - len(turn):] == tuple(turn), "the current turn is always kept whole"
    if messages:
        assert isinstance(messages[0], UserInput), "a window starts at a user input"
    assert not _separates_results(messages), "a reply is never separated from its tool results"


class TestLifecycleProperties:
    @pytest.mark.parametrize("kind", _STRATEGIES)
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(script=_script(), data=st.data())
    def test_engine_lifecycle_invariants(self, kind, script, data):
        ctx, distill, events = _make(kind, data.draw)
        history: list = []  # what Harpe's FullContext would hold
        tokens = 0  # Harpe's lastInputTokens, as the spec defines it
        for ops in script:
            turn: list = []
            before = list(getattr(ctx, "transcript", ()))
            summary_before = getattr(ctx, "summary", "")
            tokens_before = tokens
            for op in ops:
                if op[0] == "begin":
                    ctx.begin_turn(op[1])
                    turn = [op[1]]
                elif op[0] == "append":
                    ctx.append(op[1])
                    turn.append(op[1])
                elif op[0] == "observe":
                    ctx.observe(op[1])
                    tokens = op[1].input_tokens
                elif op[0] == "commit":
                    ctx.commit_turn()
                    history += turn
                elif op[0] == "abort":
                    ctx.abort_turn()
                    history += turn[:1]
                    tokens = tokens_before
                    if kind == "turn":
                        assert ctx.compact().rendered.messages == ()
                    else:
                        assert list(ctx.transcript) == before + turn[:1], "abort keeps only the user input"
                    if kind == "summarizing":
                        assert ctx.summary == summary_before
                else:
                    self._check_compact(kind, ctx, history + turn, turn, distill, events, tokens)
            if kind in ("full", "windowed"):
                assert list(ctx.transcript) == history, "the stored transcript is never shortened"

    @staticmethod
    def _check_compact(kind, ctx, full, turn, distill, events, tokens) -> None:
        calls_before = len(distill.requests) if distill else 0
        events_before = len(events) if events is not None else 0
        stored_before = list(ctx.transcript) if kind == "summarizing" else []
        c = ctx.compact()
        messages = c.rendered.messages
        _check_window(messages, turn)
        assert tuple(full[len(full) - len(messages):]) == messages, "a contiguous tail of the conversation"
        if kind == "full":
            assert c == Compaction(Rendered(BASE, tuple(full)), False)
        elif kind == "windowed":
            assert c == Compaction(Rendered(BASE, tuple(truncate(full, ctx.max_chars))), False)
            if len(turn_groups(messages)) > 1:
                assert _chars(messages) <= ctx.max_chars
        elif kind == "turn":
            assert c == Compaction(Rendered(BASE, tuple(turn)), False)
        else:
            called = len(distill.requests) - calls_before
            assert messages == ctx.transcript, "Summarizing renders its whole kept transcript"
            kept = truncate(stored_before, ctx.low_water_chars)
            over = tokens > ctx.high_water_tokens
            assert called == (1 if over and len(kept) < len(stored_before) else 0), (
                "distill exactly when strictly over high water and a whole turn can go")
            if called:
                assert distill.requests[-1].system == DISTILL_SYSTEM
            assert c.compacted == (len(events) > events_before)
            if c.compacted:
                assert called == 1
                assert messages == tuple(kept), "keeps what truncate(low_water_chars) keeps"
                assert events[-1] == ContextCompacted(len(stored_before) - len(kept))
            else:
                assert messages == tuple(stored_before), "no compaction, nothing dropped"
            summary = ctx.summary
            assert c.rendered.system == (BASE + "\n\n" + SUMMARY_HEADER + summary if summary else BASE)
