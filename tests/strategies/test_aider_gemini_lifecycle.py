"""Aider's and Gemini CLI's contexts on the one turn lifecycle (`TurnLifecycle`): what each
keeps of an aborted turn, and what the request after it promises.

The turn start, the abort's restored transcript and the request bookkeeping are the base's;
these tests hold what the hooks add: Aider keeps a summary that landed in the aborted turn
and keeps the turn's input in its current exchange; Gemini's compression takes back its count
and summary, its masking takes back the masked outputs. After an abort no request promises to
continue the last one.
"""

from __future__ import annotations

import pytest

from harpe_lab.messages import AssistantMessage, Usage, UserInput
from harpe_lab.strategies import aider, gemini
from harpe_lab.strategies._lifecycle import TurnLifecycle
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM

COUNTER = TiktokenCounter()


def _aider(budget: int = 1) -> aider.AiderContext:
    return aider.Aider(history_tokens=budget).context(SYSTEM, counter=COUNTER, distill=lambda rendered: "short")


def _compressor(trigger: int) -> gemini.ChatCompressionContext:
    return gemini.ChatCompression(window=trigger * 2, threshold=0.5).context(SYSTEM, distill=lambda rendered: "s")


def _masker() -> gemini.ToolOutputMaskingContext:
    return gemini.ToolOutputMasking(protect=3_000, min_prunable=2_000).context(SYSTEM)


CONTEXTS = [lambda: _aider(10_000), lambda: _compressor(100), _masker]


class TestTheBase:
    @pytest.mark.parametrize("make", CONTEXTS)
    def test_each_is_a_turn_lifecycle_with_a_read_only_system(self, make):
        ctx = make()
        assert isinstance(ctx, TurnLifecycle) and ctx.base_system == SYSTEM
        with pytest.raises(AttributeError):
            ctx.base_system = "other"  # type: ignore[misc]

    @pytest.mark.parametrize("cls", [aider.AiderContext, gemini.ChatCompressionContext,
                                     gemini.ToolOutputMaskingContext])
    def test_each_keeps_only_its_hooks(self, cls):
        own = {name for c in cls.__mro__[: cls.__mro__.index(TurnLifecycle)] for name in vars(c)}
        assert not own & {"begin_turn", "append", "abort_turn", "_request", "_marked", "_turn_input"}, cls
        # Aider's commit_turn is move_back_cur_messages: the finished exchange joins the history
        assert ("commit_turn" in own) == (cls is aider.AiderContext), cls

    @pytest.mark.parametrize("make", CONTEXTS)
    def test_a_turn_continues_its_requests_and_an_abort_ends_that(self, make):
        ctx = make()
        ctx.begin_turn(user("one"))
        assert ctx.compact().edits == ()
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out")))
        assert ctx.compact().edits == ()
        ctx.abort_turn()
        assert ctx.transcript == (user("one"),)
        ctx.begin_turn(user("two"))
        after = ctx.compact()
        assert after.edits is None and after.rendered.messages == (user("one"), user("two"))
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))
        assert ctx.compact().edits == ()

    @pytest.mark.parametrize("make", CONTEXTS)
    def test_bad_arguments_are_still_refused(self, make):
        ctx = make()
        with pytest.raises(TypeError):
            ctx.begin_turn("text")  # type: ignore[arg-type]
        with pytest.raises(TypeError):
            ctx.append({"role": "user"})  # type: ignore[arg-type]


class TestAider:
    def _landed(self) -> aider.AiderContext:
        """A context whose finished turn was summarized, the summary landed with the turn "two"."""
        ctx = _aider()
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.append(reply("a"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        out = ctx.compact()
        assert out.compacted and out.edits is None and ctx.summary == "short"
        return ctx

    def test_a_summary_that_landed_in_an_aborted_turn_stays(self):
        ctx = self._landed()
        ctx.append(reply("b"))
        ctx.abort_turn()
        head = (UserInput(aider.SUMMARY_PREFIX + "short"), AssistantMessage("Ok."))
        assert ctx.transcript == head + (user("two"),) and ctx.summary == "short"
        ctx.begin_turn(user("three"))
        out = ctx.compact()
        assert not out.compacted and out.edits is None
        assert out.rendered.messages == head + (user("two"), user("three"))

    def test_the_aborted_input_joins_the_history_with_the_next_finished_turn(self):
        ctx = _aider(budget=10_000)
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.append(reply("a"))
        ctx.abort_turn()
        ctx.begin_turn(user("two"))
        ctx.compact()
        ctx.append(reply("b"))
        ctx.commit_turn()
        weighed = sum(ctx.count_message(m) for m, _ in aider.aider_messages([user("one"), user("two"), reply("b")]))
        assert ctx.history_tokens == weighed
        ctx.begin_turn(user("three"))
        out = ctx.compact()
        assert out.edits == () and out.rendered.messages == (user("one"), user("two"), reply("b"), user("three"))


class TestGemini:
    def test_an_abort_takes_back_the_compressions_count_and_summary(self):
        ctx = _compressor(100)
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=50))
        ctx.append(reply("a"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=500))
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))
        assert ctx.compact().compacted and ctx.summary == "s" and ctx.tokens < 500
        ctx.abort_turn()
        assert ctx.summary == "" and ctx.tokens == 500
        ctx.begin_turn(user("four"))
        again = ctx.compact()  # the restored count is over the trigger again: it compresses again
        assert again.compacted and again.edits is None and ctx.summary == "s"

    def test_an_abort_takes_back_the_masking_and_the_next_request_says_so(self):
        ctx = _masker()
        for k in range(1, 6):
            if k == 1:
                ctx.begin_turn(user("go"))
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "x" * 4_000)))
            out = ctx.compact()
        assert out.compacted and out.edits
        ctx.abort_turn()
        assert ctx.transcript == (user("go"),) and ctx.prunable_tokens == 0
        ctx.begin_turn(user("again"))
        after = ctx.compact()
        assert after.compacted and after.edits is None
