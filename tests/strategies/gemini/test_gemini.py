"""Gemini CLI's chat compression and tool-output masking (``harpe_lab.strategies.gemini``),
replayed natively.

One class per strategy: its configuration's validation, cases computed by hand from the
agent's source (thresholds, budgets, batch sizes, the texts it writes), generated
conversations replayed with the engine's checks on (no orphaned call or result, never
empty) and the rule re-derived from the replay's own frame, and one replay of a real Claude
Code session checking that it fires where its rule says, by the replay's counter.
"""

from __future__ import annotations

import json
import math
import pickle
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, Rendered, ToolCall, ToolResult, ToolResults, Usage, UserInput
from harpe_lab.presets import PRESETS
from harpe_lab.protocol import DeclaresLimit, HoldsSummary, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies import gemini
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations
from tests.strategies._agents import (COUNTER, PROPERTY, REAL, Distiller, _after_clean_history, _bundled_replays,
                                      _events, _real_conversation, _replay, _request_text)


# --- Gemini CLI: chat compression ----------------------------------------------------------------


def _compressor(trigger: int, distill=None, events=None, **config):
    """A compression context whose trigger is ``trigger`` tokens (window = 2 × trigger)."""
    c = gemini.ChatCompression(window=2 * trigger, threshold=0.5, **config)
    assert c.trigger == trigger
    return c.context(SYSTEM, distill=distill or Distiller(), on_event=events)


def _round(ctx, call_id: str, content: str, reported: int, name: str = "bash", text: str = ""):
    """One model call reporting ``reported`` prompt tokens, its tool round, then compact."""
    ctx.observe(Usage(input_tokens=reported))
    ctx.append(AssistantMessage(text, (ToolCall(call_id, name, {"cmd": "ls"}),)))
    ctx.append(results((call_id, content)))
    return ctx.compact()


class TestGeminiCompress:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"threshold": 0}, r"threshold must be a fraction in \(0, 1\], got 0"),
        ({"threshold": 1.5}, r"threshold must be a fraction in \(0, 1\], got 1.5"),
        ({"threshold": True}, r"threshold must be a fraction in \(0, 1\], got True"),
        ({"preserve": 1}, r"preserve must be a fraction in \(0, 1\), got 1"),
        ({"response_budget": -1}, "response_budget must be an int >= 0, got -1"),
        ({"truncate_chars": 0}, "truncate_chars must be an int >= 1, got 0"),
        ({"output_dir": 3}, "output_dir must be a str, got 3"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            gemini.ChatCompression(**kwargs)

    def test_defaults_are_gemini_clis(self):
        c = gemini.ChatCompression()
        assert (c.window, c.threshold, c.preserve, c.response_budget, c.truncate_chars) == (
            1_048_576, 0.5, 0.3, 50_000, 40_000)
        assert c.trigger == 524_288
        with pytest.raises(TypeError):
            gemini.ChatCompression(1000)  # type: ignore[misc]
        with pytest.raises(AttributeError):
            c.window = 1  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(c)) == c
        ctx = c.context(SYSTEM, distill=Distiller())
        assert isinstance(ctx, DeclaresLimit) and ctx.limit == Limit(tokens=524_288, kind="high_water")
        assert isinstance(ctx, HoldsSummary) and ctx.summary == ""
        with pytest.raises(StrategyError, match="distill must be a callable"):
            c.context(SYSTEM, distill=None)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="base_system must be a str"):
            c.context(None, distill=Distiller())  # type: ignore[arg-type]

    def test_the_preset(self):
        preset = PRESETS["gemini-compress"]
        assert preset.family == "gemini-cli" and preset.budget_knob.name == "high_water"
        assert preset.build(system=SYSTEM)().limit.tokens == 524_288
        assert preset.build(system=SYSTEM, window=200_000)().limit.tokens == 100_000
        # a high water given in tokens lands on those tokens whatever the window
        assert preset.build(system=SYSTEM, high_water=6_001, window=200_003)().limit.tokens == 6_001
        with pytest.raises(StrategyError, match="high_water must be at most window .200,000., got 200,001"):
            preset.build(system=SYSTEM, high_water=200_001, window=200_000)

    def test_gemini_estimates_tokens_by_character_class(self):
        assert gemini.estimate_tokens("abcd" * 10) == 10
        assert gemini.estimate_tokens("é" * 4) == 6  # 1.5 a non-ASCII unit
        assert gemini.estimate_tokens("a😀") == 3  # 0.25 + two UTF-16 units at 1.5
        assert gemini.estimate_tokens("é" * 100_001) == 25_000  # past 100,000 units: 4 a token

    def test_a_truncated_output_keeps_a_fifth_at_the_head_and_the_rest_at_the_tail(self):
        content = "a" * 8_000 + "b" * 42_000
        cut = gemini.truncated_output(content, "/tmp/out/bash_1.txt", 40_000)
        assert cut == ("Output too large. Showing first 8,000 and last 32,000 characters. For full output see: "
                       "/tmp/out/bash_1.txt\n" + "a" * 8_000 + "\n\n... [10,000 characters omitted] ...\n\n"
                       + "b" * 32_000)
        assert gemini.truncated_output("x" * 40_000, "/p") == "x" * 40_000  # not over: as it is

    def test_the_split_lands_before_a_plain_user_message_past_seventy_percent(self):
        u, a, r = UserInput("u"), AssistantMessage("a"), results(("c", "r"))
        called = AssistantMessage("", (call("c"),))
        # sizes 100, 100, 50, 10, 100: 70% of 360 is 252; the user message at 3 comes at 250
        assert gemini.split_point([u, called, r, u, a], [100, 100, 50, 10, 100]) == 5  # all of it: ends on an answer
        assert gemini.split_point([u, called, r, u, called], [100, 100, 50, 10, 100]) == 3  # the last before
        assert gemini.split_point([u, called, r, u, called], [100, 100, 60, 10, 100]) == 3  # 260 >= 259.0: here
        assert gemini.split_point([u, called, r, called, r], [10, 10, 10, 10, 10]) == 0  # one turn: nothing
        with pytest.raises(StrategyError, match="fraction must be a fraction in"):
            gemini.split_point([u], [1], 1.0)

    def test_it_compresses_once_the_reported_prompt_reaches_the_trigger(self):
        events: list = []
        distill = Distiller("first", "final")
        ctx = _compressor(1_000, distill, events.append)
        ctx.begin_turn(user("fix the bug " * 50))
        assert not ctx.compact().compacted
        assert not _round(ctx, "c1", "x" * 400, reported=999).compacted
        ctx.observe(Usage(input_tokens=990))
        ctx.append(reply("done"))
        ctx.commit_turn()
        ctx.begin_turn(user("now the tests"))
        assert not ctx.compact().compacted  # 990: below
        ctx.observe(Usage(input_tokens=1_000))
        ctx.append(reply("answer"))
        ctx.commit_turn()
        second = user("and the docs")
        ctx.begin_turn(second)
        out = ctx.compact()
        assert out.compacted and out.edits is None
        # the history before the turn's input is 4 messages of ~1,150 characters (the task's
        # 600, the call, the 400-character result, "done"), then "now the tests" and "answer":
        # that user message comes past 70% of the characters, so the split is there
        assert out.rendered.messages == (UserInput("<state_snapshot>\nfinal\n</state_snapshot>"),
                                         AssistantMessage(gemini.ACKNOWLEDGEMENT), user("now the tests"),
                                         reply("answer"), second)
        assert out.rendered.messages[-1] is second and ctx.summary == "final"
        assert [type(e).__name__ for e in events] == ["Compression", "ContextCompacted"]
        assert events[0].status == "compressed" and events[0].original_tokens == 1_000
        assert events[1].dropped_messages == 4
        # two calls: the snapshot, then the probe with the first answer as the current summary
        first, probe = distill.requests
        assert first.system.startswith(gemini.COMPRESSION_SYSTEM) and "Generate a new state snapshot" in first.system
        assert probe.system.endswith(gemini.PROBE_PROMPT)
        assert _request_text(first).startswith("Conversation excerpt to summarize:")
        assert _request_text(probe).startswith("Current summary:\n\nfirst\n\n")
        assert "fix the bug" in _request_text(first) and "now the tests" not in _request_text(first)

    def test_the_newest_thirty_percent_is_kept_and_a_long_turn_is_not_cut(self):
        ctx = _compressor(100, Distiller("s"))
        ctx.begin_turn(user("a" * 2_000))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("b" * 2_000))
        ctx.commit_turn()
        task = user("c" * 200)
        ctx.begin_turn(task)
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "d" * 200)))
        out = _round(ctx, "c2", "e" * 200, reported=1_000)  # above what is kept, or the guard refuses
        # mid-turn the history ends on a call: the cut is the last plain user message, the turn's start
        snapshot, ack, *kept = out.rendered.messages
        assert out.compacted and kept[0] is task and len(kept) == 5
        assert kept[-1].results[0].id == "c2"
        # within the one turn that is left nothing can be cut again but the snapshot itself
        ctx2 = _compressor(100, Distiller("s"))
        ctx2.begin_turn(user("a" * 2_000))
        ctx2.compact()
        assert not _round(ctx2, "c1", "x" * 4_000, reported=5_000).compacted

    def test_function_responses_past_the_newest_fifty_thousand_tokens_are_truncated(self):
        old = "o" * 120_000  # 30,000 tokens each, by Gemini's estimate
        # newest first: c3 (30,000, kept), c2 (60,000 > 50,000: cut, then counts its 10,000 or so),
        # c1 (cut too); the files are numbered in the order Gemini saves them
        # the same pre-pass, alone: c3 kept, c2 and c1 cut to 40,000 characters with their files numbered
        ctx = _compressor(1_000_000, Distiller("s"))
        history = [user("go")] + [m for k in (1, 2, 3) for m in (reply("", call(f"c{k}")), results((f"c{k}", old)))]
        cut = ctx._truncate(history, {f"c{k}": "bash" for k in (1, 2, 3)})
        assert cut[6] is history[6]
        assert cut[4].results[0].content == gemini.truncated_output(old, f"{gemini.OUTPUT_DIR}/bash_1.txt")
        assert cut[2].results[0].content == gemini.truncated_output(old, f"{gemini.OUTPUT_DIR}/bash_2.txt")
        assert cut[:2] == history[:2] and cut[1] is history[1]
        # an output past the budget but short enough is saved too, and kept as it is: it takes a number
        ctx = _compressor(1_000_000, Distiller("s"))
        history[6] = results(("c3", "o" * 190_000))  # 47,500 tokens: within the budget
        history[4] = results(("c2", "s" * 30_000))  # 7,500 more: past it, but not over 40,000 characters
        cut = ctx._truncate(history, {f"c{k}": "bash" for k in (1, 2, 3)})
        assert cut[4] is history[4] and cut[6] is history[6]
        assert cut[2].results[0].content == gemini.truncated_output(old, f"{gemini.OUTPUT_DIR}/bash_2.txt")

    def test_a_previous_snapshot_is_integrated(self):
        distill = Distiller("one", "", "two", "")
        ctx = _compressor(100, distill)
        for text in ("first task", "second task"):
            ctx.begin_turn(user(text))
            ctx.compact()
            ctx.observe(Usage(input_tokens=100))
            ctx.append(reply("done " + text))
            ctx.commit_turn()
        ctx.begin_turn(user("third"))
        out = ctx.compact()
        # the probe answered "": the first answer is the summary
        assert out.rendered.messages[0].text == "<state_snapshot>\ntwo\n</state_snapshot>"
        first_of_second = distill.requests[2]
        assert "previous state snapshot exists" in first_of_second.system
        text = _request_text(first_of_second)
        assert text.startswith("Current summary:\n\none\n\n") and gemini.ACKNOWLEDGEMENT not in text
        assert "second task" in text and "<state_snapshot>" not in text

    def test_an_empty_summary_changes_nothing(self):
        events: list = []
        ctx = _compressor(10, Distiller("  ", ""), events.append)
        ctx.begin_turn(user("x" * 100))
        ctx.compact()
        ctx.observe(Usage(input_tokens=50))
        ctx.append(reply("y"))
        ctx.commit_turn()
        ctx.begin_turn(user("z"))
        out = ctx.compact()
        assert not out.compacted and len(out.rendered.messages) == 3 and not ctx.latched
        assert [e.status for e in events] == ["empty_summary"]

    def test_a_compression_that_does_not_shrink_is_refused_and_latches_to_truncation_only(self):
        events: list = []
        distill = Distiller("s" * 100_000)  # far more than what it replaces
        ctx = _compressor(50, distill, events.append)
        ctx.begin_turn(user("go"))
        ctx.compact()
        big = "b" * 240_000  # 60,000 tokens: over the function-response budget alone
        _round(ctx, "c1", big, reported=10)
        _round(ctx, "c2", big, reported=10)
        ctx.observe(Usage(input_tokens=60))
        ctx.append(reply("done"))
        ctx.commit_turn()
        ctx.begin_turn(user("next"))
        out = ctx.compact()
        assert not out.compacted and ctx.latched and len(distill.requests) == 2
        assert events[-1] == gemini.Compression("inflated", 60, events[-1].new_tokens) and events[-1].new_tokens > 60
        assert ctx.summary == "" and out.rendered.messages[0] == user("go")
        # from now on only truncation, never a summary: c1 is past the newest 50,000 tokens
        ctx.observe(Usage(input_tokens=10**9))
        ctx.append(reply("ok"))
        ctx.commit_turn()
        ctx.begin_turn(user("more"))
        out = ctx.compact()
        assert len(distill.requests) == 2 and ctx.latched
        assert out.compacted and out.edits == (2, 4)
        c1, c2 = out.rendered.messages[2].results[0], out.rendered.messages[4].results[0]
        assert c1.content.startswith("Output too large. Showing first 8,000") and c1.id == "c1"
        assert c2.content.startswith("Output too large.")  # 60,000 > 50,000 on its own
        assert events[-1].status == "truncated" and events[-1].original_tokens == 10**9
        # a truncation that changes nothing more is no compaction
        ctx.observe(Usage(input_tokens=10**9))
        ctx.append(reply("ok"))
        ctx.commit_turn()
        ctx.begin_turn(user("again"))
        again = ctx.compact()
        assert again.edits in ((), (2, 4))  # already cut outputs are cut again (Gemini re-truncates them)

    def test_an_aborted_turn_takes_back_its_compression(self):
        ctx = _compressor(100, Distiller("s"))
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
        assert ctx.compact().compacted and ctx.summary == "s"
        ctx.abort_turn()
        assert ctx.transcript == (user("one"), reply("a"), user("two"), reply("b"), user("three"))
        assert ctx.summary == "" and ctx.tokens == 500

    @PROPERTY
    @given(conversations(), st.integers(30, 1_500))
    def test_generated_conversations(self, convo, trigger):
        events: list = []
        factory = lambda: _compressor(trigger, ExtractiveDistiller(max_chars=300))  # noqa: E731
        rp = replay(convo, factory, counter=COUNTER, name="gemini-compress", on_event=events.append)
        frame = rp.requests
        compressed = {e.request for e in rp.events if e.kind == "Compression" and e.event.status == "compressed"}
        assert {e.request for e in rp.events if e.kind == "ContextCompacted"} == compressed
        for e in _events(rp, "Compression"):
            i = e.request
            # only ever at or above the trigger, by the last reply's reported prompt
            assert e.event.original_tokens >= trigger
            if _after_clean_history(convo, frame, i):
                assert e.event.original_tokens == int(frame.input_tokens[i - 1])
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]  # the request's own message is always sent
            if i in compressed:
                assert sent[0].text.startswith("<state_snapshot>\n") and sent[1] == AssistantMessage(gemini.ACKNOWLEDGEMENT)
            # at a turn's start after an answer, at or above the trigger, the history is compressed
            # (it ends on an answer: everything can go) unless the guard refuses; once it has
            # refused, only a truncation that shrinks the estimate is reported
            latched = any(e.kind == "Compression" and e.event.status == "inflated" and e.request < i
                          for e in rp.events)
            if (_after_clean_history(convo, frame, i) and int(frame.step[i]) == 0
                    and int(frame.input_tokens[i - 1]) >= trigger and not latched):
                statuses = [e.event.status for e in rp.events if e.request == i and e.kind == "Compression"]
                assert statuses in (["compressed"], ["inflated"], ["empty_summary"]), i
            if latched:
                assert not any(e.request == i and e.kind == "DistillCall" for e in rp.events)  # never a summary again

    def test_bundled_datasets(self):
        _bundled_replays("gemini-compress")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_fires_at_half_the_window(self, real_data, path):
        conv = _real_conversation(path)
        counter = TiktokenCounter()
        rp = _replay(conv, "gemini-compress", counter=counter, window=200_000)
        frame = rp.requests
        attempts = _events(rp, "Compression")
        assert attempts, "the session never reached 100,000 tokens"
        first = next(i for i in range(1, len(rp)) if frame.input_tokens[i - 1] >= 100_000)
        assert attempts[0].request == first and attempts[0].event.status == "compressed"
        assert attempts[0].event.original_tokens == int(frame.input_tokens[first - 1])
        for e in attempts:
            assert e.event.original_tokens >= 100_000
        assert all(frame.input_tokens[i - 1] < 100_000 for i in range(1, first))
        # two summarizer calls per compression
        assert frame.distill_calls.sum() == 2 * len([e for e in attempts if e.event.status == "compressed"])
        # at the default window (524,288 tokens) the session never compresses
        assert not _events(_replay(conv, "gemini-compress", counter=counter), "Compression")


# --- Gemini CLI: tool-output masking -------------------------------------------------------------


class ReferenceMasking:
    """Gemini's ``ToolOutputMaskingService.mask`` written out again from its source, run over the
    whole history at every request (no running sums): what the incremental context must send."""

    def __init__(self, config: gemini.ToolOutputMasking) -> None:
        self.config = config
        self.base_system = SYSTEM
        self.history: list = []
        self.names: dict[str, str] = {}
        self.marked: tuple = ([], None)

    def begin_turn(self, input):
        self.marked = (list(self.history), input)
        self.append(input)

    def append(self, m):
        if isinstance(m, AssistantMessage):
            self.names.update((c.id, c.name) for c in m.calls)
        self.history.append(m)

    def observe(self, usage):
        pass

    def commit_turn(self):
        pass

    def abort_turn(self):
        before, input = self.marked
        self.history = before + [input]

    def _tokens(self, name: str, content: str) -> int:
        js = name + json.dumps({"output": content}, ensure_ascii=False, separators=(",", ":"))
        return math.floor(len(js.encode("utf-16-le", "surrogatepass")) // 2 / 4)  # JavaScript's length

    def compact(self):
        from harpe_lab.protocol import Compaction

        c = self.config
        h = self.history
        end = len(h) - 1 if h and not isinstance(h[-1], AssistantMessage) else len(h)  # the request's own
        cumulative, reached, total, prunable = 0, False, 0, []
        for i in range(end - 1 - c.protect_latest_turn, -1, -1):
            m = h[i]
            if not isinstance(m, ToolResults):
                continue
            for j in range(len(m.results) - 1, -1, -1):
                r = m.results[j]
                name = self.names.get(r.id, "")
                if name in c.exempt_tools or "<tool_output_masked" in r.content:
                    continue
                tokens = self._tokens(name, r.content)
                if not reached:
                    cumulative += tokens
                    if cumulative > c.protect:
                        reached = True
                        total += tokens
                        prunable.append((i, j, tokens))
                else:
                    total += tokens
                    prunable.append((i, j, tokens))
        if total >= c.min_prunable:
            for i, j, tokens in prunable:
                r = h[i].results[j]
                name = self.names.get(r.id, "") or "unknown_tool"
                safe = [re.sub(r"[^a-zA-Z0-9_-]", "_", part).lower() for part in (name, r.id)]  # sanitizeFilenamePart
                text = gemini.masked_output(r.content, name, f"{c.output_dir}/{safe[0]}_{safe[1]}.txt")
                if tokens - self._tokens(name, text) > 0:
                    h[i] = ToolResults(tuple(ToolResult(x.id, text, x.attachments, x.success) if k == j else x
                                             for k, x in enumerate(h[i].results)), h[i].pinned)
        return Compaction(Rendered(SYSTEM, tuple(h)), True)


def _masker(**config):
    return gemini.ToolOutputMasking(**config).context(SYSTEM)


def _drive(ctx, rounds: int, content: str, name: str = "bash") -> list[tuple]:
    """The requests ``ctx`` sends for a task and ``rounds`` one-call rounds (call ``c<k>``)."""
    ctx.begin_turn(user("fix the bug"))
    sent = [ctx.compact().rendered.messages]
    for k in range(1, rounds + 1):
        ctx.append(reply("", call(f"c{k}", name)))
        ctx.append(results((f"c{k}", content)))
        sent.append(ctx.compact().rendered.messages)
    return sent


def _masked(messages) -> list[str]:
    return [r.id for m in messages if isinstance(m, ToolResults) for r in m.results
            if r.content.startswith("<tool_output_masked>")]


class TestGeminiMasking:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"protect": -1}, "protect must be an int >= 0, got -1"),
        ({"min_prunable": 1.5}, "min_prunable must be an int >= 0, got 1.5"),
        ({"protect_latest_turn": 1}, "protect_latest_turn must be a bool, got 1"),
        ({"exempt_tools": "ask_user"}, "exempt_tools must be an iterable of tool names, got 'ask_user'"),
        ({"exempt_tools": [3]}, r"exempt_tools must hold tool names \(str\), got 3"),
        ({"output_dir": None}, "output_dir must be a str, got None"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            gemini.ToolOutputMasking(**kwargs)

    def test_defaults_are_gemini_clis(self):
        m = gemini.ToolOutputMasking()
        assert (m.protect, m.min_prunable, m.protect_latest_turn) == (50_000, 30_000, True)
        assert m.exempt_tools == {"activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"}
        assert pickle.loads(pickle.dumps(m)) == m
        preset = PRESETS["gemini-masking"]
        assert preset.family == "gemini-cli" and preset.budget_knob is None and preset.limit_kind is None
        assert preset.build(system=SYSTEM)().config == m

    def test_the_stand_ins(self):
        path = "/out/bash_c1.txt"
        shell = "Output: " + "\n".join(f"line {n}" for n in range(30)) + "\nExit Code: 1"
        preview = ("Output: " + "\n".join(f"line {n}" for n in range(10)) + "\n\n... [10 lines omitted] ...\n\n"
                   + "\n".join(f"line {n}" for n in range(20, 30)) + "\nExit Code: 1")
        assert gemini.masked_output(shell, gemini.SHELL_TOOL, path) == (
            f"<tool_output_masked>\n{preview}\n\nOutput too large. Full output available at: {path}\n"
            "</tool_output_masked>")
        # any other tool: its pretty-printed response, 250 characters each end
        other = gemini.masked_output("a" * 300 + "b" * 300, "read_file", path)
        assert other == ("<tool_output_masked>\n" + '{\n  "output": "' + "a" * 235 + "\n... [TRUNCATED] ...\n"
                         + "b" * 247 + '"\n}' + f"\n\nOutput too large. Full output available at: {path}\n"
                         "</tool_output_masked>")
        assert gemini.masked_output("short", "read_file", path).startswith('<tool_output_masked>\n{\n  "output": "short"\n}')

    def test_a_batch_waits_for_min_prunable_past_the_protected_window(self):
        # 'x' * 4,000 from "bash" is floor((4 + 4,013) / 4) = 1,004 tokens. With 3,000 protected
        # the newest two are kept and the third crosses; two prunable (2,008) reach 2,000
        sent = _drive(_masker(protect=3_000, min_prunable=2_000), 10, "x" * 4_000)
        assert [_masked(s) for s in sent[:5]] == [[]] * 5
        # sent[k] carries c<k>'s output (never looked at yet) after c1..c<k-1>
        assert _masked(sent[5]) == ["c1", "c2"]
        assert _masked(sent[6]) == ["c1", "c2"]  # c3 alone is prunable now: 1,004 < 2,000
        assert _masked(sent[7]) == ["c1", "c2", "c3", "c4"]
        assert _masked(sent[9]) == ["c1", "c2", "c3", "c4", "c5", "c6"]
        stand_in = sent[5][2].results[0]
        assert stand_in.content == gemini.masked_output("x" * 4_000, "bash", f"{gemini.OUTPUT_DIR}/bash_c1.txt")
        assert sent[6][2].results[0] is stand_in  # masked stays masked: the same object, the prefix holds

    def test_the_request_promises_where_it_masked(self):
        ctx = _masker(protect=3_000, min_prunable=2_000)
        ctx.begin_turn(user("go"))
        ctx.compact()
        outs = []
        for k in range(1, 6):
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "x" * 4_000)))
            outs.append(ctx.compact())
        assert [o.edits for o in outs[:4]] == [()] * 4 and not any(o.compacted for o in outs[:4])
        assert outs[4].compacted and outs[4].edits == (2, 4)

    def test_exempt_tools_small_outputs_and_masked_ones(self):
        events: list = []
        ctx = gemini.ToolOutputMasking(protect=0, min_prunable=0).context(SYSTEM, on_event=events.append)
        ctx.begin_turn(user("go"))
        ctx.compact()
        for k, (name, content) in enumerate([("ask_user", "x" * 4_000), ("bash", "tiny"),
                                             ("bash", "<tool_output_masked>old</tool_output_masked>"),
                                             ("bash", "y" * 4_000), ("bash", "z")], 1):
            ctx.append(reply("", call(f"c{k}", name)))
            ctx.append(results((f"c{k}", content)))
            last = ctx.compact()
        # protect 0: every output looked at is prunable; the exempt one, the already masked one
        # and "tiny" (its stand-in is longer) stay; c5 is the request's own
        assert _masked(last.rendered.messages) == ["c3", "c4"]
        assert last.rendered.messages[2].results[0].content == "x" * 4_000
        assert last.rendered.messages[4].results[0].content == "tiny"
        assert events[-1].masked == 1 and events[-1].tokens_saved > 0

    def test_an_aborted_turn_takes_back_its_masking(self):
        ctx = _masker(protect=3_000, min_prunable=2_000)
        sent = _drive(ctx, 5, "x" * 4_000)
        assert _masked(sent[5]) == ["c1", "c2"]
        ctx.abort_turn()
        ctx.begin_turn(user("again"))
        out = ctx.compact()
        assert _masked(out.rendered.messages) == [] and out.edits is None

    @PROPERTY
    @given(conversations(max_rounds=8), st.integers(0, 300), st.integers(0, 300), st.booleans())
    def test_generated_conversations_match_geminis_algorithm_at_every_request(self, convo, protect, minimum, latest):
        config = gemini.ToolOutputMasking(protect=protect, min_prunable=minimum, protect_latest_turn=latest)
        rp = replay(convo, lambda: config.context(SYSTEM), counter=COUNTER, name="gemini-masking")
        ref = replay(convo, lambda: ReferenceMasking(config), counter=COUNTER, name="reference")
        full = replay(convo, lambda: FullContext(SYSTEM), counter=COUNTER)
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert sent == ref.rendered(i).messages, f"request {i}"
            assert len(sent) == len(full.rendered(i).messages)  # nothing is dropped, only replaced
            assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]
            if i:  # a masked output stays masked, as the same object
                before = {r.id: r for m in rp.rendered(i - 1).messages if isinstance(m, ToolResults) for r in m.results
                          if r.content.startswith("<tool_output_masked>")}
                now = {r.id: r for m in sent if isinstance(m, ToolResults) for r in m.results}
                assert all(now[k] is r for k, r in before.items() if k in now)

    def test_bundled_datasets(self):
        _bundled_replays("gemini-masking")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_masks_where_gemini_would(self, real_data, path):
        conv = _real_conversation(path)
        rp = _replay(conv, "gemini-masking", counter=TiktokenCounter())
        ref = replay(conv, lambda: ReferenceMasking(gemini.ToolOutputMasking()), counter=TiktokenCounter(),
                     name="reference")
        batches = _events(rp, "OutputsMasked")
        assert batches, "the session never had 80,000 tokens of tool output"
        for e in batches:
            assert e.event.prunable_tokens >= 30_000 and e.event.tokens_saved > 0
        for i in range(len(rp)):
            assert rp.rendered(i).messages == ref.rendered(i).messages, f"request {i}"
        first = batches[0].request
        assert not _masked(rp.rendered(first - 1).messages) and _masked(rp.rendered(first).messages)
