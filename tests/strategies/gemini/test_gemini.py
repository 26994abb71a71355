"""The coding agents' own context management, replayed natively: Gemini CLI's compression and
masking, OpenCode, Goose, Roo Code, the Anthropic SDK tool runner's compaction and OpenAI
Realtime's retention ratio (``harpe_lab.strategies.gemini``, ``.opencode``, ``.goose``,
``.roo``, ``.providers``).

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
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import (AssistantMessage, Attachment, Rendered, ToolCall, ToolResult, ToolResults, Usage,
                                UserInput)
from harpe_lab.presets import PRESETS, make_strategy
from harpe_lab.protocol import ContextCompacted, DeclaresLimit, HoldsSummary, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import BytesCounter, TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations, real_params

COUNTER = BytesCounter()
REAL = real_params("claude_code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 1)
PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Distiller:
    """A distiller that records what it was asked and answers from ``replies`` in turn (the
    last one again when they run out)."""

    def __init__(self, *replies: str | None) -> None:
        self.replies = list(replies) or ["the summary"]
        self.requests: list[Rendered] = []

    def __call__(self, rendered: Rendered) -> str | None:
        self.requests.append(rendered)
        return self.replies[min(len(self.requests), len(self.replies)) - 1]


def _request_text(rendered: Rendered) -> str:
    (message,) = rendered.messages
    return message.text


def _events(rp, kind: str) -> list:
    return [e for e in rp.events if e.kind == kind]


def _real_conversation(path):
    from harpe_lab.importers import load_any

    if path is None:
        pytest.skip("the real Claude Code session is not on this machine")
    return load_any(path)


def _replay(conversation, name: str, counter=COUNTER, **knobs):
    factory = make_strategy(name, counter=counter, system=conversation.system, **knobs)
    return replay(conversation, factory, counter=counter, name=name)


def _previous_usage(frame, i: int) -> int:
    """What the last reply reported before request ``i``: the input and output of request i - 1."""
    return int(frame.input_tokens[i - 1] + frame.output_tokens[i - 1])


def _after_clean_history(conversation, frame, i: int) -> bool:
    """Whether request ``i`` follows a reply whose usage the strategy observed last (no aborted
    turn in between, which rolls the strategy's count back to that turn's start)."""
    if i == 0:
        return False
    turn, step = int(frame.turn[i]), int(frame.step[i])
    if step > 0:
        return True
    before = conversation.turns[turn - 1]
    return before.outcome == "answered" and bool(before.messages) and before.messages[-1].role == "assistant"


def _bundled_replays(name: str, **knobs) -> None:
    """Every bundled conversation under the preset, at half its peak: the engine's invariants hold."""
    for dataset in datasets.list_datasets():
        loaded = datasets.load(dataset)
        for conv in loaded if isinstance(loaded, list) else [loaded]:
            full = replay(conv, lambda: FullContext(conv.system), counter=COUNTER)
            budget = max(500, int(full.requests.input_tokens.max()) // 2)
            rp = replay(conv, make_strategy(name, budget=budget, counter=COUNTER, system=conv.system, **knobs),
                        counter=COUNTER, name=name)
            for i in range(len(rp)):
                assert_pairs_by_ids(rp.rendered(i).messages)


# --- Gemini CLI: chat compression ----------------------------------------------------------------

from harpe_lab.strategies import gemini  # noqa: E402


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


# --- OpenCode ------------------------------------------------------------------------------------

from harpe_lab.strategies import opencode  # noqa: E402


def _oc_tokens(*messages) -> int:
    """OpenCode's estimate of ``messages``: round(JSON.stringify(model messages).length / 4)."""
    out = []
    for m in messages:
        if isinstance(m, UserInput):
            out.append({"role": "user", "content": [{"type": "text", "text": m.text}]})
        else:
            out.append({"role": "assistant", "content": [{"type": "text", "text": m.text}]})
    return math.floor(len(json.dumps(out, ensure_ascii=False, separators=(",", ":"))) / 4 + 0.5)


def _opencode(usable: int = 1_000, distill=None, events=None, **config):
    c = opencode.SessionCompaction(window=usable + 100, max_output=100, reserved=0, **config)
    assert c.usable == usable
    return c.context(SYSTEM, distill=distill or Distiller(), on_event=events)


def _answered(ctx, text: str, answer: str, usage: int = 10) -> None:
    ctx.begin_turn(user(text))
    ctx.compact()
    ctx.observe(Usage(input_tokens=usage))
    ctx.append(reply(answer))
    ctx.commit_turn()


class TestOpenCode:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"max_output": -1}, "max_output must be an int >= 0, got -1"),
        ({"reserved": -5}, "reserved must be an int >= 0, got -5"),
        ({"preserve_recent": 1.5}, "preserve_recent must be an int >= 0, got 1.5"),
        ({"prune": 1}, "prune must be a bool, got 1"),
        ({"protected_tools": "skill"}, r"protected_tools must be an iterable of tool names \(str\), got 'skill'"),
        ({"window": 50_000}, r"window \(50,000\) must be larger than max_output \(32,000\) plus reserved \(20,000\)"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            opencode.SessionCompaction(**kwargs)

    def test_defaults_are_opencodes(self):
        c = opencode.SessionCompaction()
        # 200,000 - 32,000 output - min(20,000, 32,000) reserved
        assert (c.usable, c.reserved_tokens, c.preserve_recent_tokens) == (148_000, 20_000, 15_000)
        small = opencode.SessionCompaction(max_output=8_000)
        assert (small.reserved_tokens, small.usable, small.preserve_recent_tokens) == (8_000, 184_000, 15_000)
        assert opencode.SessionCompaction(reserved=162_000).preserve_recent_tokens == 2_000  # 0.25 × 6,000 → 2,000
        assert opencode.SessionCompaction(reserved=148_000).preserve_recent_tokens == 5_000  # 0.25 × 20,000
        assert [opencode.estimate(t) for t in ("a", "ab", "abc", "abcdef")] == [0, 1, 1, 2]  # half rounds up
        assert pickle.loads(pickle.dumps(c)) == c
        ctx = c.context(SYSTEM, distill=Distiller())
        assert ctx.limit == Limit(tokens=148_000, kind="high_water") and isinstance(ctx, HoldsSummary)

    def test_the_preset(self):
        preset = PRESETS["opencode"]
        assert preset.family == "opencode" and preset.budget_knob.name == "high_water"
        assert preset.build(system=SYSTEM)().limit.tokens == 148_000
        built = preset.build(system=SYSTEM, high_water=6_000)()
        assert built.config.usable == 6_000 and built.config.preserve_recent_tokens == 2_000 and built.config.prune
        assert not preset.build(system=SYSTEM, prune=0)().config.prune
        with pytest.raises(StrategyError, match=r"high_water must be at most window - max_output \(168,000\), got 170,000"):
            preset.build(system=SYSTEM, high_water=170_000)
        with pytest.raises(StrategyError, match=r"window \(30,000\) must be larger than max_output \(32,000\)"):
            preset.build(system=SYSTEM, window=30_000)

    def test_it_compacts_once_the_last_reply_reports_usable_tokens(self):
        ctx = _opencode(1_000)
        _answered(ctx, "one", "a", usage=990)
        ctx.begin_turn(user("two"))
        assert not ctx.compact().compacted
        ctx.observe(Usage(input_tokens=990, output_tokens=9))  # 999
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))
        assert not ctx.compact().compacted
        ctx.observe(Usage(input_tokens=990, output_tokens=10))  # 1,000: at usable
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out")))
        assert ctx.compact().compacted  # mid-turn too
        assert not ctx.compact().compacted  # the summary is the last finished message: never again by itself

    def test_the_tail_is_the_newest_turns_within_preserve_recent_tokens(self):
        ua, ra, ub, rb, uc = user("a" * 400), reply("x" * 400), user("b" * 40), reply("y" * 40), user("c" * 20)
        whole = _oc_tokens(uc) + _oc_tokens(ub, rb)
        for preserve, tail in [(whole, [ub, rb, uc]), (_oc_tokens(uc) + _oc_tokens(rb), [rb, uc]),
                               (_oc_tokens(uc), [uc]), (10**6, [])]:
            distill = Distiller("the summary")
            events: list = []
            ctx = _opencode(1_000, distill, events.append, preserve_recent=preserve)
            _answered(ctx, ua.text, ra.text)
            _answered(ctx, ub.text, rb.text, usage=1_000)
            ctx.begin_turn(uc)
            out = ctx.compact()
            assert out.rendered.messages == (UserInput(opencode.COMPACTION_REQUEST), AssistantMessage("the summary"),
                                             *tail, UserInput(opencode.CONTINUE_TEXT)), preserve
            text = _request_text(distill.requests[0])
            assert ("a" * 400) in text and (("b" * 40) in text) == (ub not in tail)
            assert events[0] == opencode.Overflowed(1_000, 1_000, len(tail)) and events[1].dropped_messages == 5 - len(tail)

    def test_the_summarizer_sees_tool_outputs_cut_and_the_previous_summary(self):
        distill = Distiller("first", "second")
        ctx = _opencode(1_000, distill, preserve_recent=0)
        ctx.begin_turn(user("go"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "z" * 3_000)))
        ctx.compact()
        ctx.observe(Usage(input_tokens=1_000))
        ctx.append(reply("done"))
        ctx.commit_turn()
        _answered(ctx, "next", "ok", usage=1_000)  # compacts at its start
        ctx.begin_turn(user("last"))
        ctx.compact()  # and again: "next" reported 1,000
        first, second = (_request_text(r) for r in distill.requests)
        assert "z" * 2_000 + "\n[truncated]" in first and "z" * 2_001 not in first
        assert second.startswith("Current summary:\n\nfirst\n\n")
        assert opencode.COMPACTION_REQUEST not in second and opencode.CONTINUE_TEXT in second

    def test_old_outputs_are_pruned_at_a_turns_end_past_the_newest_forty_thousand_tokens(self):
        events: list = []
        ctx = opencode.SessionCompaction(window=10**9).context(SYSTEM, distill=Distiller(), on_event=events.append)
        ctx.begin_turn(user("read everything"))
        ctx.compact()
        for k in range(1, 5):  # 60,000 characters: 15,000 tokens each
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply("", call(f"c{k}", "read")))
            ctx.append(results((f"c{k}", "o" * 60_000)))
            ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("read"))
        ctx.commit_turn()
        _answered(ctx, "two", "b")  # the first turn is still one of the last two
        _answered(ctx, "three", "c")
        assert not events
        ctx.begin_turn(user("four"))  # "three" was answered: the prune comes with this request
        # newest first: c4 15,000, c3 30,000 (protected), c2 45,000 and c1 60,000: 30,000 > 20,000
        assert events == [opencode.Pruned(2, 30_000)]
        out = ctx.compact()
        assert out.compacted and out.edits == (2, 4)
        cleared = [r.content for m in out.rendered.messages if isinstance(m, ToolResults) for r in m.results]
        assert cleared == [opencode.CLEARED, opencode.CLEARED, "o" * 60_000, "o" * 60_000]
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("d"))
        ctx.commit_turn()
        ctx.begin_turn(user("five"))  # stops at the pruned c2: c4 and c3 come to 30,000, nothing to prune
        assert len(events) == 1

    def test_errors_skill_outputs_and_aborts_are_left(self):
        events: list = []
        ctx = opencode.SessionCompaction(window=10**9).context(SYSTEM, distill=Distiller(), on_event=events.append)
        ctx.begin_turn(user("go"))
        ctx.compact()
        for k, (name, ok) in enumerate([("skill", True), ("bash", False), ("bash", True), ("bash", True),
                                        ("bash", True)], 1):
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply("", call(f"c{k}", name)))
            ctx.append(results((f"c{k}", "o" * 100_000), success=ok))  # 25,000 tokens each
            ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("done"))
        ctx.commit_turn()
        _answered(ctx, "two", "b")  # pruning at its end would look at the first turn only from the third on
        ctx.begin_turn(user("three"))
        ctx.compact()
        ctx.abort_turn()  # the prompt loop did not end: no prune
        ctx.begin_turn(user("three"))
        assert not events
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("c"))
        ctx.commit_turn()
        ctx.begin_turn(user("four"))
        # c5 25,000, c4 50,000 (the crossing one is prunable), c3 75,000: c4 and c3 go; c2 failed, c1 is skill
        assert events == [opencode.Pruned(2, 50_000)]
        assert not opencode.SessionCompaction(window=10**9, prune=False).prune

    @PROPERTY
    @given(conversations(), st.integers(40, 2_000))
    def test_generated_conversations(self, convo, usable):
        config = opencode.SessionCompaction(window=usable + 10, max_output=10, reserved=0, prune_protect=50,
                                            prune_minimum=30)
        rp = replay(convo, lambda: config.context(SYSTEM, distill=ExtractiveDistiller(max_chars=300)),
                    counter=COUNTER, name="opencode")
        frame = rp.requests
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            if _after_clean_history(convo, frame, i):
                assert bool(frame.summarized[i]) == (_previous_usage(frame, i) >= usable), i
            if frame.summarized[i]:
                assert sent[:2] == (UserInput(opencode.COMPACTION_REQUEST), AssistantMessage(rp.summary(i)))
                assert sent[-1] == UserInput(opencode.CONTINUE_TEXT)
                # the newest message is in the tail, unless the whole history was summarized
                assert len(sent) == 3 or rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]
            else:
                assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]

    def test_bundled_datasets(self):
        _bundled_replays("opencode")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_fires_at_usable(self, real_data, path):
        conv = _real_conversation(path)
        rp = _replay(conv, "opencode", counter=TiktokenCounter())
        frame = rp.requests
        fired = _events(rp, "Overflowed")
        assert fired, "the session never reached 148,000 tokens"
        first = next(i for i in range(1, len(rp)) if _previous_usage(frame, i) >= 148_000)
        assert fired[0].request == first and fired[0].event.tokens == _previous_usage(frame, first)
        tail = fired[0].event.kept
        assert 0 < tail and rp.sent_ids(first)[-1] == rp.available_ids(first)[-1]
        sent = rp.rendered(first).messages
        assert len(sent) == tail + 3 and sent[-1] == UserInput(opencode.CONTINUE_TEXT)


# --- Goose ---------------------------------------------------------------------------------------

from harpe_lab.strategies import goose  # noqa: E402


def _goose(window: int = 1_000, distill=None, pair_distill=None, events=None, **config):
    c = goose.ContextManagement(window=window, **config)
    return c.context(SYSTEM, distill=distill or Distiller(), pair_distill=pair_distill or Distiller("line"),
                     on_event=events)


def _rounds(ctx, *call_ids: str, usage: int = 10) -> list:
    """One model call per id (a reply with that call and its result), each followed by a compact."""
    out = []
    for k in call_ids:
        ctx.observe(Usage(input_tokens=usage))
        ctx.append(reply("", call(k)))
        ctx.append(results((k, f"out {k}")))
        out.append(ctx.compact())
    return out


class TestGoose:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"threshold": 0}, r"threshold must be a fraction in \(0, 1\), got 0"),
        ({"threshold": 1.0}, r"threshold must be a fraction in \(0, 1\), got 1.0"),
        ({"tool_pairs": "yes"}, "tool_pairs must be a bool, got 'yes'"),
        ({"cutoff": -1}, "cutoff must be an int >= 0, got -1"),
        ({"batch": 0}, "batch must be an int >= 1, got 0"),
        ({"window": 1, "threshold": 0.5}, "threshold × window must be at least 1 token"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            goose.ContextManagement(**kwargs)

    def test_the_cutoff_and_batch_are_gooses(self):
        # the cases of Goose's own test_compute_tool_call_cutoff_scales_with_context
        assert goose.tool_call_cutoff(128_000, None) == 12
        assert goose.tool_call_cutoff(200_000, None) == 20
        assert goose.tool_call_cutoff(1_000_000, None) == 100
        assert goose.tool_call_cutoff(50_000, None) == 10
        assert goose.tool_call_cutoff(10_000_000, None) == 500
        assert goose.tool_call_cutoff(200_000, 0.3) == 10
        assert goose.tool_call_cutoff(1_000_000, 0.5) == 50
        assert goose.tool_call_cutoff(200_000, 0.8) == 16
        c = goose.ContextManagement()
        assert (c.window, c.threshold, c.threshold_tokens, c.cutoff_calls, c.batch_size) == (128_000, 0.8, 102_400,
                                                                                                10, 3)
        assert goose.ContextManagement(window=1_000_000).batch_size == 16  # cutoff 80, a fifth
        assert goose.ContextManagement(window=200_000).batch_size == 3  # cutoff 16: max(3, 3)
        assert pickle.loads(pickle.dumps(c)) == c

    def test_the_preset(self):
        preset = PRESETS["goose"]
        assert preset.family == "goose" and preset.budget_knob.name == "high_water"
        assert preset.build(system=SYSTEM)().limit == Limit(tokens=102_400, kind="high_water")
        ctx = preset.build(system=SYSTEM, high_water=160_000, window=200_000)()
        assert ctx.limit.tokens == 160_000 and ctx.config.cutoff_calls == 16
        with pytest.raises(StrategyError, match="high_water must be below window .128,000., got 128,000"):
            preset.build(system=SYSTEM, high_water=128_000)

    def test_the_preset_gives_a_recorded_distiller_one_copy_for_both_kinds_of_summary(self):
        from harpe_lab.summarize import RecordedDistiller

        # 100,000 × 0.8 / 10,000 = 8, clamped to 10 calls kept: the 11th makes c1 go, then the turn compacts
        ctx = PRESETS["goose"].build(system=SYSTEM, distill=RecordedDistiller(["pair", "whole"]),
                                     high_water=80_000, window=100_000)()
        ctx.begin_turn(user("one"))
        ctx.compact()
        _rounds(ctx, *(f"c{k}" for k in range(1, 12)))
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("a"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        ctx.compact()  # c1 chosen
        ctx.observe(Usage(input_tokens=90_000))
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))  # c1's line lands, from the first recorded summary
        assert UserInput("[Historical tool call summary] pair") in ctx.transcript
        assert ctx.compact().rendered.messages[0] == UserInput("whole")  # and the compaction gets the second

    def test_a_turn_that_starts_above_the_threshold_compacts_everything(self):
        events: list = []
        distill = Distiller("the summary")
        ctx = _goose(1_000, distill, events=events.append, tool_pairs=False)
        _answered(ctx, "one", "a", usage=790)
        ctx.begin_turn(user("two"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=790, output_tokens=10))  # 800: not above 80%
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))
        assert not ctx.compact().compacted
        # mid-turn usage above the threshold changes nothing: Goose checks when a turn starts
        _rounds(ctx, "c1", usage=5_000)
        ctx.observe(Usage(input_tokens=790, output_tokens=11))
        ctx.append(reply("c"))
        ctx.commit_turn()
        four = user("four")
        ctx.begin_turn(four)
        out = ctx.compact()
        assert out.compacted and out.rendered.messages == (
            UserInput("the summary"), AssistantMessage(goose.CONVERSATION_CONTINUATION_TEXT), four)
        assert out.rendered.messages[-1] is four
        assert "four" in _request_text(distill.requests[0])  # everything visible, the new input too
        assert events == [goose.ThresholdCompacted(801, 800), ContextCompacted(8)]  # 9 messages, the input kept
        # an input with attachments comes back as its text only
        pic = UserInput("look", (Attachment("a.png", 1, "image/png", "/a.png"),))
        ctx.observe(Usage(input_tokens=900))
        ctx.append(reply("d"))
        ctx.commit_turn()
        ctx.begin_turn(pic)
        assert ctx.compact().rendered.messages[-1] == UserInput("look")

    def test_the_oldest_tool_calls_past_the_cutoff_become_one_line_each(self):
        events: list = []
        pairs = Distiller("read the file", "[Historical tool call summary] listed it", "ran it")
        ctx = _goose(10**9, pair_distill=pairs, events=events.append, cutoff=2, batch=2)
        ctx.begin_turn(user("one"))
        ctx.compact()
        during = _rounds(ctx, "c1", "c2", "c3", "c4", "c5")
        assert not any(o.compacted for o in during)  # the current turn's calls are protected
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("a"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        assert not ctx.compact().compacted  # 5 visible, 0 this turn: the oldest 2 chosen, summarized when answered
        first, second, third = _rounds(ctx, "c6", "c7", "c8")
        ids = lambda out: [c.id for m in out.rendered.messages if isinstance(m, AssistantMessage) for c in m.calls]  # noqa: E731
        assert ids(first) == ["c3", "c4", "c5", "c6"]
        assert first.rendered.messages[-2:] == (UserInput("[Historical tool call summary] read the file"),
                                                UserInput("[Historical tool call summary] listed it"))
        assert first.compacted and first.edits is None
        # then 4 visible, 1 this turn: 3 > 2, one more
        assert ids(second) == ["c4", "c5", "c6", "c7"]
        assert second.rendered.messages[-1] == UserInput("[Historical tool call summary] ran it")
        assert ids(third) == ["c4", "c5", "c6", "c7", "c8"] and not third.compacted  # 2 eligible: at the cutoff
        assert [e for e in events if isinstance(e, goose.ToolPairsSummarized)] == [
            goose.ToolPairsSummarized(2, 4), goose.ToolPairsSummarized(1, 2)]
        assert ctx.visible_calls == 5
        assert "out c1" in _request_text(pairs.requests[0]) and "out c2" not in _request_text(pairs.requests[0])

    def test_a_round_of_parallel_calls_goes_whole_and_a_failed_summary_keeps_its_pair(self):
        ctx = _goose(10**9, pair_distill=Distiller(None, "second"), cutoff=1, batch=1)
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("p1"), call("p2")))
        ctx.append(results(("p1", "a"), ("p2", "b")))
        ctx.compact()
        _rounds(ctx, "c3")
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("done"))
        ctx.commit_turn()
        _answered(ctx, "two", "ok")  # p1 chosen when it starts; its summary fails: the pair stays
        assert ctx.visible_calls == 3
        ctx.begin_turn(user("three"))
        ctx.compact()  # p1 chosen again
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("fine"))
        ctx.commit_turn()
        assert ctx.visible_calls == 3
        ctx.begin_turn(user("four"))  # the final answer's call: its summary lands after it, before this input
        assert ctx.visible_calls == 1  # p1's summary hid its whole round, p2 with it
        kinds = [type(m).__name__ for m in ctx.transcript]
        assert kinds == ["UserInput", "AssistantMessage", "ToolResults", "AssistantMessage", "UserInput",
                         "AssistantMessage", "UserInput", "AssistantMessage", "UserInput", "UserInput"]
        assert ctx.transcript[-2:] == (UserInput("[Historical tool call summary] second"), user("four"))

    def test_an_aborted_turn_drops_its_plan(self):
        ctx = _goose(10**9, cutoff=0, batch=5)
        ctx.begin_turn(user("one"))
        ctx.compact()
        _rounds(ctx, "c1")
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("a"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        ctx.compact()  # c1 chosen
        ctx.abort_turn()
        assert ctx.visible_calls == 1
        ctx.begin_turn(user("three"))
        out = ctx.compact()  # chosen again, not applied yet: c1's round is still sent
        assert out.rendered.messages[1] == reply("", call("c1")) and ctx.visible_calls == 1

    @PROPERTY
    @given(conversations(), st.integers(20, 2_000), st.integers(0, 4), st.integers(1, 3))
    def test_generated_conversations(self, convo, threshold, cutoff, batch):
        config = goose.ContextManagement(window=10 * threshold, threshold=0.1, cutoff=cutoff, batch=batch)
        rp = replay(convo, lambda: config.context(SYSTEM, distill=ExtractiveDistiller(max_chars=300)),
                    counter=COUNTER, name="goose")
        frame = rp.requests
        compacted = {e.request for e in _events(rp, "ThresholdCompacted")}
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert rp.available_ids(i)[-1] in rp.sent_ids(i)  # the newest message is sent
            if _after_clean_history(convo, frame, i) and int(frame.step[i]) == 0:
                assert (i in compacted) == (_previous_usage(frame, i) > threshold), i
            if i in compacted:
                assert int(frame.step[i]) == 0 and sent[1] == AssistantMessage(goose.CONVERSATION_CONTINUATION_TEXT)
        for e in _events(rp, "ToolPairsSummarized"):
            if e.request in compacted:
                continue  # the lines landed before the turn's input, then everything was compacted
            sent = rp.rendered(e.request).messages
            # appended after what the answered call added: before the input at a turn's start
            end = len(sent) - (int(frame.step[e.request]) == 0)
            lines = sent[end - e.event.calls: end]
            assert all(isinstance(m, UserInput) and m.text.startswith(goose.PAIR_SUMMARY_PREFIX) for m in lines)

    def test_bundled_datasets(self):
        _bundled_replays("goose")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_fires_where_goose_would(self, real_data, path):
        conv = _real_conversation(path)
        rp = _replay(conv, "goose", counter=TiktokenCounter())
        frame = rp.requests
        (compaction,) = _events(rp, "ThresholdCompacted")
        turn2 = rp.turn_requests(2)[0]
        assert compaction.request == turn2 and _previous_usage(frame, turn2) > 102_400
        assert all(_previous_usage(frame, rp.turn_requests(t)[0]) <= 102_400 for t in (1,))
        # the first turn's calls become eligible when the second starts; past the cutoff of 10,
        # the oldest 3 (a batch) are summarized when that turn's first call is answered
        first_turn_calls = sum(len(m.calls) for m in conv.turns[0].messages if isinstance(m, AssistantMessage))
        pairs = _events(rp, "ToolPairsSummarized")
        assert first_turn_calls > 10 and pairs[0].request == rp.turn_requests(1)[1]
        assert pairs[0].event.calls == min(3, first_turn_calls - 10)


# --- Roo Code ------------------------------------------------------------------------------------

from harpe_lab.strategies import roo  # noqa: E402

PY_FILE = "\n".join(f"{n:>6}→{line}" for n, line in enumerate([
    "import os", "", "def alpha(x):", "    y = x", "    z = y", "    return z", "", "class Beta:",
    "    def gamma(self):", "        return 1", "        return 2", "", "def tiny(): pass", ""], 1))


def _roo(allowed: int = 100, distill=None, events=None, **config):
    c = roo.Condense(window=10_000, max_tokens=9_000 - allowed, **config)
    assert c.high_water == allowed
    return c.context(SYSTEM, counter=COUNTER, distill=distill or Distiller(), on_event=events)


def _names(messages) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, UserInput):
            out.append("marker" if m.text.startswith("[Sliding window") else m.text[:10])
        elif isinstance(m, AssistantMessage):
            out.append("a:" + ",".join(c.id for c in m.calls) if m.calls else "a")
        else:
            out.append("r:" + ",".join(r.id for r in m.results))
    return out


class TestRoo:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"max_tokens": -1}, "max_tokens must be an int >= 0, got -1"),
        ({"percent": 4}, "percent must be an int >= 5, got 4"),
        ({"percent": 101}, "percent must be at most 100, got 101"),
        ({"condense": "yes"}, "condense must be a bool, got 'yes'"),
        ({"read_tools": "Read"}, r"read_tools must be an iterable of tool names \(str\), got 'Read'"),
        ({"max_tokens": 180_000}, r"max_tokens \(180,000\) leaves no allowed tokens below 90% of the window"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            roo.Condense(**kwargs)

    def test_defaults_are_roos(self):
        c = roo.Condense()
        assert (c.window, c.max_tokens, c.percent, c.condense) == (200_000, 8_192, 100, True)
        assert c.allowed == 171_808 and c.high_water == 171_808  # 200,000 × 0.9 - 8,192
        assert pickle.loads(pickle.dumps(c)) == c
        with pytest.raises(StrategyError, match="counter must have count_rendered"):
            c.context(SYSTEM, counter=None, distill=Distiller())
        preset = PRESETS["roo"]
        assert preset.family == "roo-code" and preset.needs == {"counter", "distill"}
        assert preset.build(system=SYSTEM, counter=COUNTER)().limit == Limit(tokens=171_808, kind="high_water")
        built = preset.build(system=SYSTEM, counter=COUNTER, high_water=6_000)()
        assert built.limit.tokens == 6_000 and built.config.max_tokens == 174_000
        with pytest.raises(StrategyError, match="high_water must be at most 90% of window .180,000., got 180,001"):
            preset.build(system=SYSTEM, counter=COUNTER, high_water=180_001)

    def test_the_folded_outline_of_a_file(self):
        # definitions spanning at least 4 lines, up to the next one at the same indent; the
        # reader's line numbers stripped: alpha is lines 3-6, Beta 8-11; gamma (3) and tiny (1) are short
        assert roo.outline(PY_FILE) == "3--6 | def alpha(x):\n8--11 | class Beta:\n"
        assert roo.outline("just text\nno definitions") == ""
        section = f"<system-reminder>\n## File Context: a.py\n{roo.outline(PY_FILE)}\n</system-reminder>"
        assert roo.folded_files([("a.py", PY_FILE), ("notes.txt", "plain")]) == [section]
        # over the limit: the next file is cut to fit when 200 characters are left, else dropped
        big = "\n".join(f"def f{k}(x):\n    a = x\n    b = a\n    return b" for k in range(20))
        assert len(roo.outline(big)) > 300
        cut = roo.folded_files([("a.py", PY_FILE), ("b.py", big)], len(section) + 250)
        assert cut == [section, (f"<system-reminder>\n## File Context: b.py\n{roo.outline(big)[:150]}\n... (truncated)\n"
                                 "</system-reminder>")]
        assert roo.folded_files([("a.py", PY_FILE), ("b.py", big)], len(section) + 199) == [section]

    def test_a_condense_is_a_fresh_start_with_the_workflows_and_the_files_read(self):
        events: list = []
        distill = Distiller("the summary")
        ctx = _roo(100, distill, events.append)
        task = user('<command name="deploy">ship it</command> then report')
        ctx.begin_turn(task)
        assert not ctx.compact().compacted  # no count yet: Roo waits for one
        ctx.observe(Usage(input_tokens=40, output_tokens=5))
        ctx.append(reply("", ToolCall("c1", "Read", {"file_path": "src/a.py"})))
        ctx.append(results(("c1", PY_FILE)))
        out = ctx.compact()
        (summary,) = out.rendered.messages
        assert out.compacted and summary.text == roo.summary_text(
            "the summary", '<command name="deploy">ship it</command>', roo.folded_files([("src/a.py", PY_FILE)]))
        assert summary.text.startswith("## Conversation Summary\nthe summary\n\n<system-reminder>\n## Active Workflows")
        assert "## File Context: src/a.py\n3--6 | def alpha(x):" in summary.text
        assert isinstance(events[0], roo.Condensed) and events[1] == ContextCompacted(3)
        assert events[0].prev_tokens == 45 + COUNTER.count_message(results(("c1", PY_FILE))) > 100
        assert events[0].new_tokens == COUNTER.count_rendered(Rendered(SYSTEM, (summary,)))
        assert "ship it" in _request_text(distill.requests[0])

    def test_it_condenses_above_the_allowed_tokens_or_at_percent_of_the_window(self):
        # the result costs 43 (bytes / 4, and the message's 3); allowed is 1,000 of a 10,000 window
        for percent, usage, fires in [(100, 957, False), (100, 958, True), (5, 456, False), (5, 457, True)]:
            ctx = _roo(1_000, percent=percent)
            ctx.begin_turn(user("go"))
            ctx.compact()
            ctx.observe(Usage(input_tokens=usage))
            ctx.append(reply("", call("c1")))
            ctx.append(results(("c1", "x" * 160)))  # 40 tokens + 3 for the message
            last = COUNTER.count_message(results(("c1", "x" * 160)))
            out = ctx.compact()
            # above 1,000, or 5% of 10,000 (500) reached: 100 × prev / window >= 5
            assert last == 43
            assert out.compacted == fires == (usage + last > 1_000 or 100 * (usage + last) / 10_000 >= percent)

    def test_a_failed_condense_falls_back_to_hiding_half_the_messages(self):
        events: list = []
        ctx = _roo(100, Distiller(None), events.append)
        ctx.begin_turn(user("task"))
        ctx.compact()
        for k in (1, 2):
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "o")))
            ctx.compact()
        ctx.observe(Usage(input_tokens=500))
        ctx.append(reply("", call("c3")))
        ctx.append(results(("c3", "o")))
        out = ctx.compact()
        # 7 visible: floor(6 / 2) = 3, even: 2 hidden after the first
        assert out.compacted and _names(out.rendered.messages) == ["task", "marker", "a:c2", "r:c2", "a:c3", "r:c3"]
        assert out.rendered.messages[1] == UserInput(roo.truncation_marker(2))
        assert events[-1] == roo.SlidingWindowTruncated(events[-1].prev_tokens, 2, 2)
        ctx.observe(Usage(input_tokens=500))
        ctx.append(reply("", call("c4")))
        ctx.append(results(("c4", "o")))
        # the marker is not visible: 7 again, and the next two go, after the older marker
        assert _names(ctx.compact().rendered.messages) == ["task", "marker", "marker", "a:c3", "r:c3", "a:c4", "r:c4"]

    def test_after_a_condense_the_condensed_away_messages_still_count(self):
        events: list = []
        ctx = _roo(100, Distiller("s", None), events.append)  # one summary, then every condense fails
        ctx.begin_turn(user("task"))
        ctx.compact()

        def round_(k: int, usage: int):
            ctx.observe(Usage(input_tokens=usage))
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "o")))
            return ctx.compact()

        for k in (1, 2, 3):
            round_(k, 10)
        assert _names(round_(4, 500).rendered.messages) == ["## Convers"]  # 9 hidden by the condense
        round_(5, 10)
        # 9 + 5 visible: floor(13 / 2) = 6 hidden, all condensed-away ones after the first; the
        # marker lands among them, before the summary: nothing the model sees changes
        out = round_(6, 500)
        assert not out.compacted and _names(out.rendered.messages) == ["## Convers", "a:c5", "r:c5", "a:c6", "r:c6"]
        assert events[-1] == roo.SlidingWindowTruncated(events[-1].prev_tokens, 6, 0)
        # 3 + 7 visible: 4 hidden — two condensed-away ones, the summary and c5's call; c5's
        # result, orphaned, is dropped; the marker shows
        out = round_(7, 500)
        assert out.compacted and _names(out.rendered.messages) == ["marker", "a:c6", "r:c6", "a:c7", "r:c7"]
        assert events[-1] == roo.SlidingWindowTruncated(events[-1].prev_tokens, 4, 3)

    @PROPERTY
    @given(conversations(), st.integers(40, 2_000))
    def test_generated_conversations(self, convo, allowed):
        config = roo.Condense(window=10 * allowed, max_tokens=8 * allowed)
        rp = replay(convo, lambda: config.context(SYSTEM, counter=COUNTER, distill=ExtractiveDistiller(max_chars=300)),
                    counter=COUNTER, name="roo")
        full = replay(convo, lambda: FullContext(SYSTEM), counter=COUNTER)
        frame = rp.requests
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            if _after_clean_history(convo, frame, i):
                prev = _previous_usage(frame, i) + COUNTER.count_message(full.rendered(i).messages[-1])
                assert bool(frame.summarized[i]) == (prev > allowed), i
            if frame.summarized[i]:
                assert len(sent) == 1 and sent[0].text.startswith("## Conversation Summary\n")
            else:
                assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]

    def test_bundled_datasets(self):
        _bundled_replays("roo")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_condenses_above_the_allowed_tokens(self, real_data, path):
        conv = _real_conversation(path)
        counter = TiktokenCounter()
        rp = _replay(conv, "roo", counter=counter, window=150_000)  # 135,000 - 8,192 = 126,808 allowed
        full = replay(conv, lambda: FullContext(conv.system), counter=counter)
        frame = rp.requests
        condensed = _events(rp, "Condensed")
        assert condensed and rp.limit.tokens == 126_808
        prev = lambda i: _previous_usage(frame, i) + counter.count_message(full.rendered(i).messages[-1])  # noqa: E731
        first = next(i for i in range(1, len(rp)) if prev(i) > 126_808)
        assert condensed[0].request == first and condensed[0].event.prev_tokens == prev(first)
        (summary,) = rp.rendered(first).messages
        assert "## File Context: " in summary.text  # Claude Code's Read results, folded


# --- the providers' own: the Anthropic SDK tool runner, OpenAI Realtime ----------------------------

from harpe_lab.strategies import providers  # noqa: E402


class Flat:
    """A counter that prices every message at 10 tokens and an empty request at 3."""

    def count_message(self, message) -> int:
        return 10

    def count_rendered(self, rendered, tools=()) -> int:
        return 3 + 10 * len(rendered.messages)


class TestAnthropicSdkCompaction:
    def test_bad_values_and_defaults(self):
        with pytest.raises(StrategyError, match="threshold must be an int >= 1, got 0"):
            providers.ToolRunnerCompaction(threshold=0)
        c = providers.ToolRunnerCompaction()
        assert c.threshold == 100_000 and pickle.loads(pickle.dumps(c)) == c
        assert c.context(SYSTEM, distill=Distiller()).limit == Limit(tokens=100_000, kind="high_water")
        preset = PRESETS["anthropic-sdk-compaction"]
        assert preset.family == "anthropic" and preset.build(system=SYSTEM, high_water=6_000)().limit.tokens == 6_000
        assert providers.summary_message("x") == "<summary>\nx\n</summary>"
        assert providers.summary_message("<summary>y</summary>") == "<summary>y</summary>"
        assert providers.summary_message("as said in <summary>") == "<summary>\nas said in <summary>\n</summary>"

    def test_the_response_that_crosses_is_discarded_and_the_rest_summarized(self):
        events: list = []
        distill = Distiller("done so far")
        ctx = providers.ToolRunnerCompaction(threshold=1_000).context(SYSTEM, distill=distill, on_event=events.append)
        ctx.begin_turn(user("go"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=500, output_tokens=499))  # 999
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "first output")))
        assert not ctx.compact().compacted
        ctx.observe(Usage(input_tokens=990, output_tokens=10))  # 1,000: at the threshold
        ctx.append(reply("", call("c2")))
        ctx.append(results(("c2", "second output")))
        out = ctx.compact()
        assert out.compacted and out.rendered.messages == (UserInput("<summary>\ndone so far\n</summary>"),)
        text = _request_text(distill.requests[0])
        assert "first output" in text and "second output" not in text  # never run, never seen
        assert distill.requests[0].system == providers.SUMMARY_PROMPT
        assert events == [providers.RunnerCompacted(1_000, 1_000, 2), ContextCompacted(5)]
        # at a turn's start the new input follows the summary; the answer that crossed goes
        ctx.observe(Usage(input_tokens=2_000))
        ctx.append(reply("answer"))
        ctx.commit_turn()
        new = user("next")
        ctx.begin_turn(new)
        out = ctx.compact()
        assert out.rendered.messages[1:] == (new,) and out.rendered.messages[1] is new
        assert events[-2] == providers.RunnerCompacted(2_000, 1_000, 1)

    @PROPERTY
    @given(conversations(), st.integers(20, 2_000))
    def test_generated_conversations(self, convo, threshold):
        config = providers.ToolRunnerCompaction(threshold=threshold)
        rp = replay(convo, lambda: config.context(SYSTEM, distill=ExtractiveDistiller(max_chars=300)),
                    counter=COUNTER, name="anthropic-sdk-compaction")
        frame = rp.requests
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            if _after_clean_history(convo, frame, i):
                assert bool(frame.summarized[i]) == (_previous_usage(frame, i) >= threshold), i
            if frame.summarized[i]:
                assert sent[0].text.startswith("<summary>\n")
                # mid-turn the summary alone; at a turn's start the inputs since the last reply
                # follow it (an aborted turn leaves its input)
                assert len(sent) == 1 if int(frame.step[i]) else (
                    len(sent) >= 2 and all(isinstance(m, UserInput) for m in sent[1:])
                    and rp.sent_ids(i)[-1] == rp.available_ids(i)[-1])
            else:
                assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]

    def test_bundled_datasets(self):
        _bundled_replays("anthropic-sdk-compaction")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_fires_at_a_hundred_thousand(self, real_data, path):
        conv = _real_conversation(path)
        rp = _replay(conv, "anthropic-sdk-compaction", counter=TiktokenCounter())
        frame = rp.requests
        fired = _events(rp, "RunnerCompacted")
        assert fired
        first = next(i for i in range(1, len(rp)) if _previous_usage(frame, i) >= 100_000)
        assert fired[0].request == first and fired[0].event.tokens == _previous_usage(frame, first)
        assert rp.rendered(first).messages == (UserInput(providers.summary_message(rp.summary(first))),)


class TestRetentionRatio:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"limit": 0}, "limit must be an int >= 1, got 0"),
        ({"limit": 10, "ratio": 1.5}, r"ratio must be a fraction in \[0, 1\], got 1.5"),
        ({"limit": 10, "ratio": True}, r"ratio must be a fraction in \[0, 1\], got True"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            providers.RetentionRatio(**kwargs)

    def test_defaults_and_the_preset(self):
        assert providers.RetentionRatio(limit=10).ratio == 0.8
        ctx = providers.RetentionRatio(limit=50).context(SYSTEM, counter=Flat())
        assert ctx.limit == Limit(tokens=53, kind="target")  # the messages' limit and the empty request's 3
        preset = PRESETS["retention-ratio"]
        assert preset.family == "openai-realtime" and preset.budget_knob.name == "budget"
        counter = TiktokenCounter()
        assert preset.build(system=SYSTEM, counter=counter, budget=6_000)().limit == Limit(tokens=6_000, kind="target")
        with pytest.raises(StrategyError, match="budget 5 tokens leaves no room for messages"):
            preset.build(system=SYSTEM, counter=counter, budget=5)

    @pytest.mark.parametrize(("limit", "ratio", "kept"), [
        (50, 0.8, ["a:c2", "r:c2", "a:c3", "r:c3"]),  # 70 > 50: down to 40
        (55, 0.3, ["a:c3", "r:c3"]),  # down to 16.5 would drop the newest call: it stops there, at 20
        (50, 0.75, ["a:c3", "r:c3"]),  # down to 37.5 stops on c2's result: it goes with its call
    ])
    def test_the_oldest_go_until_the_ratio_of_the_limit(self, limit, ratio, kept):
        events: list = []
        ctx = providers.RetentionRatio(limit=limit, ratio=ratio).context(SYSTEM, counter=Flat(),
                                                                          on_event=events.append)
        ctx.begin_turn(user("task"))
        outs = [ctx.compact()]
        for k in (1, 2, 3):
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "o")))
            outs.append(ctx.compact())
        assert not any(o.compacted for o in outs[:3])
        assert outs[3].compacted and _names(outs[3].rendered.messages) == kept
        assert events == [providers.Truncated(7 - len(kept), 70, 10 * len(kept))]
        # dropped stays dropped: the next request extends this one
        ctx.append(reply("done"))
        ctx.commit_turn()
        ctx.begin_turn(user("more"))
        nxt = ctx.compact()
        assert nxt.rendered.messages[: len(kept)] == outs[3].rendered.messages[: len(kept)] or nxt.compacted

    def test_the_newest_message_and_its_call_stay_even_alone_over_the_limit(self):
        ctx = providers.RetentionRatio(limit=5).context(SYSTEM, counter=Flat())
        ctx.begin_turn(user("task"))
        assert _names(ctx.compact().rendered.messages) == ["task"]
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "o")))
        assert _names(ctx.compact().rendered.messages) == ["a:c1", "r:c1"]

    @PROPERTY
    @given(conversations(), st.integers(10, 2_000), st.integers(0, 100))
    def test_generated_conversations(self, convo, limit, percent):
        config = providers.RetentionRatio(limit=limit, ratio=percent / 100)
        rp = replay(convo, lambda: config.context(SYSTEM, counter=COUNTER), counter=COUNTER, name="retention-ratio")
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            ids, available = rp.sent_ids(i), rp.available_ids(i)
            assert len(ids) == len(sent) and ids == available[len(available) - len(ids):]  # the newest, verbatim
            tokens = sum(COUNTER.count_message(m) for m in sent)
            newest_unit = 2 if isinstance(sent[-1], ToolResults) else 1
            assert tokens <= limit or len(sent) == newest_unit, i

    def test_bundled_datasets(self):
        _bundled_replays("retention-ratio")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_truncates_at_the_limit(self, real_data, path):
        conv = _real_conversation(path)
        counter = TiktokenCounter()
        rp = _replay(conv, "retention-ratio", counter=counter, budget=60_000)
        full = replay(conv, lambda: FullContext(conv.system), counter=counter)
        cuts = _events(rp, "Truncated")
        limit = rp.limit.tokens - (counter.count_rendered(Rendered(conv.system, ())))
        assert cuts and rp.limit.tokens == 60_000
        first = next(i for i in range(len(full)) if full.requests.input_tokens[i] > 60_000)
        assert cuts[0].request == first
        for e in cuts:
            assert e.event.tokens_before > limit and e.event.tokens_after <= 0.8 * limit
        assert (rp.requests.input_tokens <= 60_000).all()
