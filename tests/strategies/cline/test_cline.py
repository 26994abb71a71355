"""Cline's compaction (harpe_lab.strategies.cline): configuration, the arithmetic pinned by hand
from its source, the properties every replay keeps, and Cline's own output reproduced on the
real session in ../shared/data/real/cline; the presets of Cline and Aider."""

from __future__ import annotations

import json
import math
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, ToolResults, Usage, UserInput
from harpe_lab.presets import PRESETS, make_strategy
from harpe_lab.protocol import DeclaresLimit, DistillCall, HoldsSummary, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies import cline as cl
from harpe_lab.strategies.aider import SUMMARIZE_PROMPT
from harpe_lab.strategies.cline import (
    DUPLICATE_FILE_READ_NOTICE,
    LEGACY_TRUNCATION_NOTICE,
    AgenticCompaction,
    BasicCompaction,
    ClineCompacted,
    LegacyContextManager,
    LegacyTruncated,
    ToolActivity,
    dropped_work_notice,
    estimate_message,
    max_allowed_size,
    summary_message,
    tool_activity,
)
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.summarize import ExtractiveDistiller, RecordedDistiller
from tests._support.builders import call, image, reply, results, user
from tests._support.data import REAL_DATA
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations
from tests.strategies._agents import COUNTER, PROPERTY, Distiller


def flat(conversation) -> list:
    return [m for t in conversation.turns for m in t.all_messages]


def js_json_tokens(obj) -> int:
    """Cline's estimate written out independently: JSON.stringify, UTF-16 length, / 3 up."""
    text = json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return max(1, math.ceil(len(text.encode("utf-16-le")) // 2 / 3))


# === Cline: configuration =======================================================================


class TestClineValidation:
    @pytest.mark.parametrize(("cls", "kwargs", "message"), [
        (BasicCompaction, {"max_input": 0}, "max_input must be an int >= 1, got 0"),
        (BasicCompaction, {"max_input": 1.5}, "max_input must be an int >= 1, got 1.5"),
        (BasicCompaction, {"trigger": 0}, "trigger must be an int >= 1, got 0"),
        (BasicCompaction, {"max_input": 1000, "trigger": 1001}, "trigger must be at most max_input .1,000., got 1,001"),
        (BasicCompaction, {"max_output": True}, "max_output must be an int >= 1, got True"),
        (AgenticCompaction, {"preserve_recent_tokens": -1}, "preserve_recent_tokens must be an int >= 0, got -1"),
        (LegacyContextManager, {"context_window": 0}, "context_window must be an int >= 1, got 0"),
        (LegacyContextManager, {"max_allowed": "9"}, "max_allowed must be an int >= 1, got '9'"),
    ])
    def test_bad_values_are_shown(self, cls, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            cls(**kwargs)

    @pytest.mark.parametrize("cls", [BasicCompaction, AgenticCompaction, LegacyContextManager])
    def test_keyword_only_frozen_and_picklable(self, cls):
        with pytest.raises(TypeError):
            cls(100_000)  # type: ignore[misc]
        config = cls()
        with pytest.raises(AttributeError):
            config.trigger = 5  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(config)) == config

    def test_the_contexts_check_what_they_are_given(self):
        with pytest.raises(StrategyError, match="distill must be a callable"):
            AgenticCompaction().context(SYSTEM, distill=None)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="base_system must be a str"):
            BasicCompaction().context(None)  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="config must be a BasicCompaction or an AgenticCompaction"):
            cl.ClineContext(SYSTEM, LegacyContextManager())  # type: ignore[arg-type]
        with pytest.raises(StrategyError, match="ratio must be a number, got 'half'"):
            BasicCompaction().compact_manually([user("a"), reply("b")], ratio="half")  # type: ignore[arg-type]

    def test_capabilities(self):
        ctx = AgenticCompaction().context(SYSTEM, distill=Distiller())
        assert isinstance(ctx, DeclaresLimit) and ctx.limit == Limit(tokens=115_200, kind="target")
        assert isinstance(ctx, HoldsSummary) and ctx.summary == "" and ctx.base_system == SYSTEM
        legacy = LegacyContextManager().context(SYSTEM)
        assert legacy.limit == Limit(tokens=98_000, kind="high_water")


# === Cline: the arithmetic, by hand =============================================================


class TestClineArithmetic:
    def test_trigger_and_targets_are_clines_defaults(self):
        config = BasicCompaction()
        assert (cl.DEFAULT_MAX_INPUT, cl.TRIGGER_RATIO, cl.TARGET_RATIO) == (128_000, 0.9, 0.7)
        assert config.trigger_tokens == 115_200
        short = [user("a"), reply("b")] * 4  # 4 exchanges
        assert config.request_target(short) == 80_640  # floor(0.7 × 115,200)
        # 5 exchanges and a model max output below max input: half of max input
        long = [user("a"), reply("b")] * 5
        assert BasicCompaction(max_output=8_192).request_target(long) == 64_000
        assert BasicCompaction(max_output=8_192).request_target(short) == 80_640
        assert BasicCompaction().request_target(long) == 80_640  # no max output reported
        assert BasicCompaction(max_output=200_000).request_target(long) == 80_640  # not below max input
        # tool results are user messages: a tool round is an exchange too
        rounds = [user("go"), *[m for k in range(5) for m in (reply("", call(f"c{k}")), results((f"c{k}", "x")))]]
        assert cl._pairs(rounds) == 5
        # never above the trigger less one token
        assert BasicCompaction(trigger=10, max_output=1, max_input=1_000).request_target(long) == 9

    def test_a_message_weighs_its_stored_json_at_three_characters_a_token(self):
        m = UserInput("héllo 😀")
        assert estimate_message(m) == js_json_tokens({"role": "user",
                                                      "content": [{"type": "text", "text": "héllo 😀"}]})
        # the emoji is two UTF-16 units, as JavaScript counts
        text = '{"role":"user","content":[{"type":"text","text":"héllo 😀"}]}'
        assert estimate_message(m) == math.ceil((len(text) + 1) / 3)
        r = reply("ok", call("c1", "read_files", files=[{"path": "a.py"}]))
        assert estimate_message(r) == js_json_tokens({"role": "assistant", "content": [
            {"type": "text", "text": "ok"},
            {"type": "tool_use", "id": "c1", "name": "read_files", "input": {"files": [{"path": "a.py"}]}}]})
        failed = results(("c1", "boom"), success=False)
        assert estimate_message(failed) == js_json_tokens({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": True}]})
        # an attached file is its own block, as the SDK stores it
        f = UserInput('look\n\n<file_content path="/a.py">\nx = 1\n</file_content>')
        assert estimate_message(f) == js_json_tokens({"role": "user", "content": [
            {"type": "text", "text": "look"}, {"type": "file", "path": "/a.py", "content": "x = 1"}]})

    def test_the_request_estimate_is_the_whole_requests_json(self):
        tools = ({"name": "read_files", "parameters": {"type": "object"}},)
        ctx = BasicCompaction().context("S", tools=tools)
        ctx.begin_turn(user("hi"))
        ctx.append(reply("yo"))
        whole = {"systemPrompt": "S", "messages": [cl._message_json(user("hi")), cl._message_json(reply("yo"))],
                 "tools": list(tools)}
        assert ctx.tokens == js_json_tokens(whole)

    def test_file_blocks_are_read_back_from_the_importers_rendering(self):
        text = ('a\n\n<file_content path="/x">\nl1\n\nl2\n</file_content>'
                '\n\nb\n\n<file_content path="/y">\n\n</file_content>')
        assert cl._blocks(text) == [("text", "a"), ("file", "/x", "l1\n\nl2"), ("text", "b"), ("file", "/y", "")]
        assert cl._join(cl._blocks(text)) == text
        # a closing tag inside the content, not followed by a blank line, does not end it
        inner = '<file_content path="/z">\nq\n</file_content> tail\n</file_content>'
        assert cl._blocks(inner) == [("file", "/z", "q\n</file_content> tail")]
        # not standing alone: plain text
        assert cl._blocks('see <file_content path="/x">\nq\n</file_content>') == \
            [("text", 'see <file_content path="/x">\nq\n</file_content>')]


class TestNotice:
    def test_the_notice_text_is_clines(self):
        notice = dropped_work_notice(ToolActivity(("a.py:1-2", "b.py"), ("c.py:3-9",), ("ls -la",)), ["one", "two"])
        assert notice == ("<SYSTEM_NOTICE>\nEarlier context was compacted. Summary of your actions after the request "
                          "above:\nFiles read:\na.py:1-2\nb.py\n\nFiles edited:\nc.py:3-9\n\nCommands ran:\nls -la"
                          "\n\nYour recent responses:\none\n---\ntwo</SYSTEM_NOTICE>")
        assert dropped_work_notice(ToolActivity()) == (
            "<SYSTEM_NOTICE>\nEarlier context was compacted. Summary of your actions after the request above:\n"
            "Files read:\n\n\nFiles edited:\n\n\nCommands ran:\n</SYSTEM_NOTICE>")

    def test_what_clines_tools_did(self):
        long = "x" * 150
        diff = json.dumps({"query": "edit", "result": "Edited\n```diff\n-467: a\n+467: b\n+470: c\n```"})
        msgs = [
            reply("", call("r1", "read_files", files=[{"path": " a.py ", "start_line": 1, "end_line": 20.0},
                                                      {"path": "b.py"}, {"path": ""}])),
            results(("r1", "...")),
            reply("", call("e1", "editor", path="c.py", old_text="a"), call("e2", "apply_patch", file_path="d.py")),
            results(("e1", diff), ("e2", "no numbered lines")),
            reply("", call("k1", "run_commands", commands=["ls", " ls ", long]), call("e3", "editor", path="e.py")),
            reply("", call("q1", "Read", file_path="f.py")),  # not one of Cline's tools
        ]
        assert tool_activity(msgs) == ToolActivity(
            ("a.py:1-20", "b.py"), ("c.py:467-470", "d.py", "e.py"), ("ls", "x" * 100 + "..."))
        assert not tool_activity([user("x"), reply("y")])
        # a raw diff (not JSON) is read too, escaped newlines included
        assert cl._diff_range('text\\n-3: a\\n+12: b') == (3, 12)


# === Cline: basic compaction, by hand ===========================================================


def _session():
    """Three Cline-shaped turns: a task with a file attached and tool rounds, a question, and
    the current turn."""
    return [
        UserInput('fix the bug\n\n<file_content path="/src/app.py">\nprint(1)\n</file_content>'),
        reply("Reading it.", call("r1", "read_files", files=[{"path": "/src/app.py", "start_line": 1, "end_line": 9}])),
        results(("r1", "1 | print(1)")),
        reply("", call("e1", "editor", path="/src/app.py")),
        results(("e1", json.dumps({"result": "-1: print(1)\n+1: print(2)"}))),
        reply("Fixed: it prints 2 now."),
        UserInput("  and the tests?  "),
        reply("Running them.", call("k1", "run_commands", commands=["pytest -q"])),
        results(("k1", "3 passed")),
        reply("All 3 pass."),
        UserInput("thanks"),
        reply("Anything else?", call("k2", "run_commands", commands=["git status"])),
        results(("k2", "clean")),
        reply("The tree is clean."),
    ]


class TestBasicCompaction:
    def test_prompts_finals_the_latest_turn_and_notices(self):
        out = BasicCompaction().compact_manually(_session(), system=SYSTEM)
        notice1 = dropped_work_notice(ToolActivity(("/src/app.py:1-9",), ("/src/app.py:1-1",), ()))
        notice2 = dropped_work_notice(ToolActivity((), (), ("pytest -q",)))
        assert out == (
            UserInput("fix the bug\n\n" + notice1),  # older prompt: the attached file goes, the notice comes
            reply("Fixed: it prints 2 now."),
            UserInput("and the tests?\n\n" + notice2),  # trimmed
            reply("All 3 pass."),
            # the latest turn fits whole: nothing of it is dropped
            UserInput("thanks"), *_session()[11:],
        )

    def test_the_valve_keeps_a_message_it_cuts_nothing_of_as_itself(self):
        from harpe_lab.strategies.cline._projection import _truncate_message

        # project.ts's truncateMessageText, to what is left of the limit, block by block
        for m in (user("fix it"), reply("Fixed."), results(("c1", "ok"), ("c2", "done"))):
            assert _truncate_message(m, 1_000) is m  # nothing cut: the original, which the replay counts as sent
        cut = _truncate_message(results(("c1", "x" * 50), ("c2", "y" * 50)), 60)
        assert [r.content for r in cut.results] == ["x" * 50, "y" * 10]
        assert _truncate_message(reply("z" * 40), 20).text == "z\n...[truncated 39 chars]"

    def test_the_newest_three_assistant_texts_are_quoted_where_dropped(self):
        msgs = _session()
        msgs[0] = UserInput("fix the bug")
        # a target so small that only the prompts fit: everything else is dropped
        out, marks = cl._basic(msgs, [0] * len(msgs), target=1, trigger=10**6)
        # the prompts are now adjacent: merged into one, each gap bridged by its notice
        assert len(out) == 1 and marks == [0]
        text = out[0].text
        assert text.startswith("fix the bug\n\n<SYSTEM_NOTICE>") and "\n\nand the tests?\n\n<SYSTEM_NOTICE>" in text
        assert "\n\nthanks\n\n<SYSTEM_NOTICE>" in text and text.count("<SYSTEM_NOTICE>") == 3
        # the conversation's newest three assistant texts, each in the gap it was dropped from
        first, middle, last = text.split("<SYSTEM_NOTICE>")[1:]
        assert "Your recent responses" not in first
        assert middle.endswith("Commands ran:\npytest -q\n\nYour recent responses:\nAll 3 pass."
                               "</SYSTEM_NOTICE>\n\nthanks\n\n")
        assert last.endswith("Your recent responses:\nAnything else?\n---\nThe tree is clean.</SYSTEM_NOTICE>")
        assert "Running them." not in text and "Reading it." not in text

    def test_the_safety_valve_prices_old_prompts_with_their_files(self):
        """Cline budgets older prompts without their attached files (the merge drops them) but
        hands the projection the prompts with them: below the prompts' own size, the valve
        then cuts, and drops whole prompts from the oldest (never the first or the latest)."""
        out, _ = cl._basic(_session(), [0] * 14, target=1, trigger=10**6)
        (only,) = out
        assert only.text.startswith("fix the bug\n\n<SYSTEM_NOTICE>") and "and the tests?" not in only.text
        assert "\n\nthanks\n\n<SYSTEM_NOTICE>" in only.text

    @staticmethod
    def _two_turns(trigger: int, events: list):
        ctx = BasicCompaction(trigger=trigger, max_input=10_000).context(SYSTEM, on_event=events.append)
        msgs = _session()
        ctx.begin_turn(msgs[0])
        for m in msgs[1:6]:
            ctx.append(m)
        ctx.commit_turn()
        ctx.begin_turn(msgs[6])
        return ctx, ctx.tokens, ctx.compact()

    def test_it_compacts_when_the_estimate_reaches_the_trigger(self):
        _, tokens, _ = self._two_turns(10_000, [])
        events: list = []
        assert not self._two_turns(tokens + 1, events)[2].compacted and not events
        ctx, _, out = self._two_turns(tokens, events)
        # the notices are rule-written, not a summary: a compaction, no ContextCompacted
        assert out.compacted and [type(e) for e in events] == [ClineCompacted]
        # the target: 70% of the trigger, less the request's overhead (the system prompt's JSON)
        overhead = tokens - sum(estimate_message(m) for m in _session()[:7])
        assert events[0] == ClineCompacted("basic", tokens, float(tokens), math.floor(tokens * 0.7) - overhead,
                                           7, 3)
        # the two tool rounds dropped, both prompts rewritten (a notice; trimmed): the final answer is kept
        assert ctx.transcript[1] == _session()[5] and ctx.transcript[2] == UserInput("and the tests?")

    def test_survivors_are_frozen_and_not_noticed_twice(self):
        _, tokens, _ = self._two_turns(10_000, [])
        ctx, _, first = self._two_turns(tokens, [])
        assert first.compacted
        msgs = _session()
        kept_final = ctx.transcript[1]
        assert kept_final == reply("Fixed: it prints 2 now.") and ctx._marks[1] == cl._PRESERVED
        for m in msgs[7:10]:
            ctx.append(m)
        ctx.commit_turn()
        ctx.begin_turn(msgs[10])
        for m in msgs[11:]:
            ctx.append(m)
        ctx.compact()
        sent = ctx.transcript
        assert sent[0].text.count("<SYSTEM_NOTICE>") == 1  # not noticed again
        assert sent[1] is kept_final  # frozen: kept as it was

    def test_only_the_latest_prompt_keeps_its_files_and_images(self):
        msgs = [UserInput('a\n\n<file_content path="/f">\nx\n</file_content>', (image(),)), reply("done a"),
                UserInput('b\n\n<file_content path="/g">\ny\n</file_content>', (image(),)),
                reply("", call("k", "run_commands", commands=["ls"])), results(("k", "out")), reply("done b")]
        # everything fits: all that goes is the older prompt's file and image
        out, _ = cl._basic(msgs, [0] * len(msgs), target=10**6, trigger=10**6)
        assert out == [UserInput("a"), *msgs[1:]] and out[2] is msgs[2]

    def test_nothing_to_change_is_no_compaction(self):
        assert cl._basic([user("a"), reply("b")], [0, 0], target=10**6, trigger=10**6) is None
        assert BasicCompaction().compact_manually([user("a")]) is None  # a lone message
        # /compact aims at half the messages' tokens: the answer goes, quoted in the notice
        (only,) = BasicCompaction().compact_manually([user("a"), reply("b")])
        assert only.text.endswith("Your recent responses:\nb</SYSTEM_NOTICE>")


# === Cline: agentic compaction ==================================================================


class TestAgenticCompaction:
    def test_the_cut_keeps_the_preserved_tokens_and_the_latest_prompt(self):
        msgs = _session()
        marks = [0] * len(msgs)
        sizes = [estimate_message(m) for m in msgs]
        # preserve 0: the last message only, moved back to the latest typed prompt
        assert cl._cut_index(msgs, marks, 0) == 10
        # within one turn, the cut never lands on tool results
        turn = [user("go"), *[m for k in range(4) for m in (reply("", call(f"c{k}")), results((f"c{k}", "x" * 90)))]]
        tmarks = [0] * len(turn)
        cut = cl._cut_index(turn, tmarks, sum(estimate_message(m) for m in turn[-3:]))
        assert isinstance(turn[cut], AssistantMessage) and cut == 5
        assert cl._cut_index(msgs, marks, sum(sizes)) == 0  # everything preserved: nothing to cut

    def test_the_summary_request_and_message_are_clines(self):
        distill = Distiller("## Goal\nfix it")
        out = AgenticCompaction(preserve_recent_tokens=0).compact_manually(_session(), distill=distill)
        (request,) = distill.requests
        assert request.system == cl.SUMMARY_SYSTEM
        text = request.messages[0].text
        assert text.startswith("Summarize this session for continuation. Be concise and factual.\n\n## Goal\n")
        assert "## Files\nRead: /src/app.py\nEdited: /src/app.py\n\nConversation:\n[User]: fix the bug\n" \
               "[User file /src/app.py]: print(1)\n\n[Bot]: Reading it.\n[Bot tool calls]: read_files(files=" in text
        assert "\n\n[Tool result]: 3 passed\n\n" in text and "thanks" not in text
        # no "## Files" in the reply: Cline adds its own
        summary = "## Goal\nfix it\n\n## Files\nRead:\n- /src/app.py\nModified:\n- /src/app.py"
        assert out[0] == UserInput(summary_message(summary)) == UserInput("Context summary:\n\n" + summary)
        assert out[1:] == tuple(_session()[10:])

    def test_the_previous_summary_is_folded_in_and_not_resummarized(self):
        distill = Distiller("## Files\nnone")
        ctx = AgenticCompaction(trigger=200, max_input=100_000, preserve_recent_tokens=0).context(SYSTEM,
                                                                                                 distill=distill)
        ctx.begin_turn(user("first task " * 30))
        ctx.append(reply("done " * 30))
        ctx.commit_turn()
        ctx.begin_turn(user("second"))
        assert ctx.compact().compacted and ctx.summary == "## Files\nnone"
        ctx.append(reply("ok " * 200))
        ctx.commit_turn()
        ctx.begin_turn(user("third"))
        assert ctx.tokens >= 200 and ctx.compact().compacted
        second = distill.requests[1].messages[0].text
        assert "Previous summary:\n## Files\nnone\n\nConversation:\n[User]: second\n\n[Bot]: ok" in second
        assert "Context summary" not in second and "first task" not in second

    def test_an_empty_summary_changes_nothing_and_a_failing_one_falls_back_to_basic(self):
        assert AgenticCompaction(preserve_recent_tokens=0).compact_manually(_session(), distill=Distiller("  ")) is None

        def boom(_):
            raise RuntimeError("provider down")

        events: list = []
        ctx = AgenticCompaction(trigger=50, max_input=100_000).context(SYSTEM, distill=boom, on_event=events.append)
        ctx.begin_turn(_session()[0])
        for m in _session()[1:10]:
            ctx.append(m)
        ctx.commit_turn()
        ctx.begin_turn(user("next"))
        assert ctx.compact().compacted
        (done,) = [e for e in events if isinstance(e, ClineCompacted)]
        assert done.strategy == "basic" and done.fallback
        assert "<SYSTEM_NOTICE>" in ctx.transcript[0].text

    def test_an_aborted_turn_takes_back_its_compaction(self):
        ctx = AgenticCompaction(trigger=100, max_input=100_000, preserve_recent_tokens=0).context(
            SYSTEM, distill=Distiller())
        ctx.begin_turn(user("a " * 100))
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("c"))
        ctx.compact()
        assert ctx.summary
        ctx.abort_turn()
        assert ctx.transcript == (user("a " * 100), reply("b"), user("c")) and ctx.summary == ""


# === Cline: the lifecycle, generated conversations ==============================================


def _cline_check(convo, factory, trigger_of):
    """Replay; every request keeps tool pairs, the first requests are the full history until
    the first compaction, each compaction happened at or above the trigger."""
    events: list = []
    rp = replay(convo, factory, counter=COUNTER, on_event=events.append)
    full = replay(convo, lambda: FullContext(SYSTEM), counter=COUNTER)
    assert len(rp) == len(full)
    fired = [e for e in events if isinstance(e.event, ClineCompacted)]
    for e in fired:
        assert e.event.tokens >= trigger_of(e.event)
    first = min((e.request for e in fired), default=len(rp))
    for i in range(len(rp)):
        sent = rp.rendered(i).messages
        assert_pairs_by_ids(sent)
        if i < first:
            assert sent == full.rendered(i).messages
    return rp, full, fired


def _without_images(sent, original) -> bool:
    """``sent`` is ``original`` with its image attachments dropped."""
    if type(sent) is not type(original):
        return False
    if isinstance(sent, ToolResults):
        return [(r.id, r.content, r.success) for r in sent.results] == \
            [(r.id, r.content, r.success) for r in original.results]
    return isinstance(sent, UserInput) and sent.text == original.text


class TestClineProperties:
    @PROPERTY
    @given(conversations(), st.integers(60, 2_000))
    def test_basic(self, convo, trigger):
        config = BasicCompaction(trigger=trigger, max_input=10**6)
        rp, full, fired = _cline_check(convo, lambda: config.context(SYSTEM), lambda e: trigger)
        for i in range(len(rp)):
            sent, history = rp.rendered(i).messages, full.rendered(i).messages
            # the latest prompt is always sent (the projection never cuts it; a merge keeps it whole)
            latest = next(m for m in reversed(history) if isinstance(m, UserInput)).text.strip()
            assert any(isinstance(m, UserInput) and latest in m.text for m in sent), f"request {i} lost {latest!r}"
            # the request ends with the newest message; or the newest round did not fit the
            # target and went (noticed on the latest prompt when Cline's tools did it or it said
            # something — these bash calls with empty replies leave nothing; not noticed at all
            # when it followed messages an earlier compaction froze, which then end the request,
            # as they were or as the safety valve cut them)
            # (the newest may come with its images dropped: the projection keeps them only in
            # the live tail, calls still unanswered)
            if sent[-1] is not history[-1] and not _without_images(sent[-1], history[-1]):
                assert (isinstance(sent[-1], UserInput) and latest in sent[-1].text) or \
                    any(sent[-1] is m for m in rp.rendered(i - 1).messages)

    @PROPERTY
    @given(conversations(), st.integers(60, 2_000))
    def test_agentic(self, convo, trigger):
        config = AgenticCompaction(trigger=trigger, max_input=10**6, preserve_recent_tokens=trigger // 3)
        rp, full, fired = _cline_check(convo, lambda: config.context(SYSTEM, distill=Distiller("s")),
                                       lambda e: trigger)
        frame = rp.requests
        for i in range(len(rp)):
            sent, history = rp.rendered(i).messages, full.rendered(i).messages
            assert sent[-1] is history[-1], f"request {i} lost its newest message"
            # the cut never passes the latest typed prompt once one stands after the first
            # message: from the second turn on, the current turn is sent whole, from its prompt
            turn = int(frame.turn[i])
            if turn > 0:
                prompt = convo.turns[turn].input
                start = next(k for k, m in enumerate(history) if m is prompt)
                assert len(sent) >= len(history) - start
                assert all(a is b for a, b in zip(sent[len(sent) - (len(history) - start):], history[start:]))
            if rp.summary(i):
                assert sent[0] == UserInput(summary_message(rp.summary(i)))


# === the real Cline session =====================================================================

CLINE = REAL_DATA / "cline"


@pytest.mark.real_data
class TestClinesOwnOutput:
    @pytest.fixture
    def session(self, real_data):
        from harpe_lab.importers import load_any

        if not (CLINE / "session.messages.json").is_file():
            pytest.skip("no real Cline session")
        return load_any(CLINE / "session.messages.json")

    def test_basic_reproduces_basic_compaction_json(self, session):
        from harpe_lab.importers import load_any

        theirs = flat(load_any(CLINE / "basic.compaction.json"))
        ours = BasicCompaction().compact_manually(flat(session), system=session.system)
        assert len(ours) == len(theirs) == 10
        for k, (a, b) in enumerate(zip(ours, theirs)):
            assert a == b, f"message {k} differs:\n{a!r}\n{b!r}"
        # the notices are there, byte for byte, with their file ranges and the quoted response
        assert ours[0].text.endswith("agent-sidebar.tsx:467-477\n\nCommands ran:\n</SYSTEM_NOTICE>")
        assert "Your recent responses:\nThe edit was applied correctly" in ours[6].text

    def test_agentic_keeps_the_same_messages(self, session):
        from harpe_lab.importers import load_any

        recorded = load_any(CLINE / "agentic.compaction.json")
        (compaction,) = recorded.compactions
        # compact-session.ts runs with --preserve-recent-tokens 0 unless told
        config = AgenticCompaction(preserve_recent_tokens=0)
        # with Cline's own summary (replayed): the very messages it wrote
        ours = config.compact_manually(flat(session), system=session.system, distill=RecordedDistiller(recorded))
        (their_input, their_reply) = flat(recorded)
        # the importer joins the summary message and the prompt after it into one input
        assert f"{ours[0].text}\n\n{ours[1].text}" == their_input.text and ours[2] == their_reply
        assert ours[0].text == summary_message(compaction.summary)
        # with our distiller: the same kept messages, our summary in Cline's message
        mine = config.compact_manually(flat(session), system=session.system, distill=ExtractiveDistiller(2_000))
        assert mine[1:] == ours[1:] == tuple(flat(session)[-2:])
        assert mine[0].text.startswith("Context summary:\n\n") and "agent-sidebar.tsx" in mine[0].text

    def test_clines_estimate_of_the_recorded_messages(self, session):
        raw = json.loads((CLINE / "session.messages.json").read_text(encoding="utf-8"))["messages"]
        # Cline's own formula on the stored messages gives its recorded tokensBefore
        assert sum(cl._estimate_chars(cl._js_len(cl._json(m))) for m in raw) == 21_919
        # ours runs lower: the stored ids, timestamps and metrics are not in our messages, and
        # the importer keeps no text of the list-shaped read_files / run_commands results
        ours = sum(map(estimate_message, flat(session)))
        assert 0.7 * 21_919 < ours < 21_919

    def test_replayed_under_every_cline_preset(self, session):
        for name in ("cline-basic", "cline-agentic", "cline-legacy"):
            rp = replay(session, make_strategy(name, budget=8_000, window=40_000, counter=COUNTER,
                                               system=session.system), counter=COUNTER)
            frame = rp.requests
            for i in range(len(rp)):
                assert_pairs_by_ids(rp.rendered(i).messages)
            assert frame.compacted.any(), name


# === Cline legacy ===============================================================================


def _alternating(n_rounds: int, size: int = 40) -> list:
    """A task and n tool rounds: the provider's messages alternate user / assistant."""
    msgs = [user("task"), reply("first reply", call("c0", "bash"))]
    for k in range(n_rounds):
        msgs += [results((f"c{k}", "o" * size)), reply(f"r{k + 1}", call(f"c{k + 1}", "bash"))]
    msgs.append(results((f"c{n_rounds}", "last")))
    return msgs


def _legacy_drive(config, msgs, usage_at: dict[int, int]):
    """Feed one turn; observe ``usage_at[k]`` before the reply at index k; compact after each
    tool result. Returns the context and its requests."""
    events: list = []
    ctx = config.context(SYSTEM, on_event=events.append)
    ctx.begin_turn(msgs[0])
    sent = [ctx.compact().rendered.messages]
    for k, m in enumerate(msgs[1:], start=1):
        if isinstance(m, AssistantMessage) and k in usage_at:
            ctx.observe(Usage(input_tokens=usage_at[k]))
        ctx.append(m)
        if isinstance(m, ToolResults):
            sent.append(ctx.compact().rendered.messages)
    return ctx, sent, events


class TestLegacy:
    @pytest.mark.parametrize(("window", "allowed"), [
        (64_000, 37_000), (128_000, 98_000), (200_000, 160_000),
        (100_000, 80_000), (1_000_000, 960_000), (400_000, 360_000),
    ])
    def test_the_window_table(self, window, allowed):
        assert max_allowed_size(window) == allowed

    def test_half_then_more_of_the_rest_is_deleted(self):
        msgs = _alternating(8)  # groups: 0 user, 1 reply, then 8 × (results, reply), then results
        config = LegacyContextManager(context_window=128_000, max_allowed=1_000)
        ctx, sent, events = _legacy_drive(config, msgs, {17: 1_500})
        (ev,) = [e for e in events if isinstance(e, LegacyTruncated)]
        # 19 provider messages; from index 2: floor(17 / 4) * 2 = 8 removed, [2, 9]
        assert ev.keep == "half" and ev.truncated and ev.deleted_to == 9 and ev.saved == 0.0
        last = sent[-1]
        assert last[0] == user("task")
        assert last[1] == AssistantMessage(LEGACY_TRUNCATION_NOTICE, msgs[1].calls)
        # its call lost its result with the cut: "result missing"
        assert last[2] == results(("c0", "result missing"))
        # the first message after the cut (msgs[10]) held the results of a deleted call: dropped
        assert last[3] is msgs[11] and list(last[3:]) == msgs[11:] and len(last) == 3 + len(msgs) - 11
        assert_pairs_by_ids(last)

    def test_over_twice_the_threshold_three_quarters_go(self):
        msgs = _alternating(8)
        ctx, sent, events = _legacy_drive(LegacyContextManager(max_allowed=1_000), msgs, {17: 2_500})
        (ev,) = [e for e in events if isinstance(e, LegacyTruncated)]
        # floor(17 × 3 / 4 / 2) * 2 = 6 * 2 = 12 removed: [2, 13]
        assert ev.keep == "quarter" and ev.deleted_to == 13

    def test_duplicate_reads_are_replaced_first(self):
        big = "line\n" * 400
        msgs = [user("task"), reply("", call("c0", "read_file")),
                results(("c0", f"[read_file for 'a.py'] Result:\n{big}")),
                reply("", call("c1", "read_file")),
                results(("c1", "[read_file for 'b.py'] Result:\nsmall")),
                reply("", call("c2", "read_file")),
                results(("c2", f"[read_file for 'a.py'] Result:\n{big}")),
                reply("", call("c3", "bash")), results(("c3", "x"))]
        ctx, sent, events = _legacy_drive(LegacyContextManager(max_allowed=100), msgs, {7: 500})
        (ev,) = [e for e in events if isinstance(e, LegacyTruncated)]
        assert not ev.truncated and ev.saved >= 0.3  # enough saved: nothing deleted
        last = sent[-1]
        assert last[2].results[0].content == f"[read_file for 'a.py'] Result:\n{DUPLICATE_FILE_READ_NOTICE}"
        assert last[6] is msgs[6] and last[1] is msgs[1]  # the latest read is kept; no notice

    def test_file_mentions_are_replaced_too(self):
        f = '<file_content path="/a">\n' + "x" * 2_000 + "\n</file_content>"
        msgs = [user("task"), reply("ok"), user(f"look {f}"), reply("seen"), user(f"again {f}"), reply("seen"),
                user("go on")]
        events: list = []
        ctx = LegacyContextManager(max_allowed=10).context(SYSTEM, on_event=events.append)
        for k, m in enumerate(msgs):
            if isinstance(m, UserInput):
                if k:
                    ctx.commit_turn()
                ctx.begin_turn(m)
                out = ctx.compact()
            else:
                ctx.observe(Usage(input_tokens=50 if k == 5 else 5))  # only the last reply reaches it
                ctx.append(m)
        (ev,) = events
        # about 2,000 of 4,100 characters saved: over 30%, so nothing is deleted
        assert not ev.truncated and 0.3 <= ev.saved < 0.5 and ev.keep == "quarter"  # 50 / 2 > 10
        sent = out.rendered.messages
        assert sent[2].text == f'look <file_content path="/a">{DUPLICATE_FILE_READ_NOTICE}</file_content>'
        assert sent[4] is msgs[4] and len(sent) == len(msgs) and sent[1] is msgs[1]

    def test_a_notice_longer_than_what_it_replaces_saves_less_than_nothing(self):
        f = '<file_content path="/a">\nshort\n</file_content>'
        ctx = LegacyContextManager(max_allowed=10).context(SYSTEM, on_event=(events := []).append)
        for k, m in enumerate([user("task"), reply("ok"), user(f), reply("seen"), user(f), reply("seen")]):
            if isinstance(m, UserInput):
                if k:
                    ctx.commit_turn()
                ctx.begin_turn(m)
                ctx.compact()
            else:
                ctx.observe(Usage(input_tokens=50 if k == 5 else 5))
                ctx.append(m)
        ctx.commit_turn()
        ctx.begin_turn(user("next"))
        ctx.compact()
        (ev,) = events
        assert ev.saved < 0 and ev.truncated  # as Cline counts it: the notice is the longer text

    def test_the_usage_is_acted_on_once_and_an_abort_takes_it_back(self):
        msgs = _alternating(4)
        config = LegacyContextManager(max_allowed=100)
        ctx = config.context(SYSTEM)
        ctx.begin_turn(msgs[0])
        ctx.compact()
        for m in msgs[1:6]:
            ctx.append(m)
        ctx.observe(Usage(input_tokens=200))
        assert ctx.compact().compacted
        assert not ctx.compact().compacted  # the same usage is not acted on twice
        ctx.abort_turn()
        assert ctx._deleted is None and ctx.transcript == (msgs[0],)
        # what it did is undone; the last request (the one that truncated) had no reply, so
        # there is no usage to act on at the next check
        ctx.begin_turn(user("again"))
        assert not ctx.compact().compacted and ctx._deleted is None

    @PROPERTY
    @given(conversations(), st.integers(100, 3_000))
    def test_properties(self, convo, threshold):
        config = LegacyContextManager(max_allowed=threshold)
        events: list = []
        rp = replay(convo, lambda: config.context(SYSTEM), counter=COUNTER, on_event=events.append)
        frame = rp.requests
        acted = {e.request for e in events if isinstance(e.event, LegacyTruncated)}
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1], f"request {i} lost its newest message"
            if i in acted:  # only when the previous request's usage reached the threshold
                assert frame.input_tokens[i - 1] + frame.output_tokens[i - 1] >= threshold


# === presets ====================================================================================


class TestPresets:
    def test_registered_with_families_knobs_and_sources(self):
        for name, family in [("cline-basic", "cline"), ("cline-agentic", "cline"), ("cline-legacy", "cline"),
                             ("aider", "aider")]:
            preset = PRESETS[name]
            assert preset.family == family and (".ts" in preset.source or ".py" in preset.source)
        assert PRESETS["cline-basic"].limit_kind == "target" and PRESETS["cline-legacy"].limit_kind == "high_water"
        assert PRESETS["aider"].limit_kind is None and PRESETS["aider"].needs == {"counter", "distill"}
        assert PRESETS["cline-agentic"].knob("preserve").default == 20_000

    def test_defaults_are_the_agents(self):
        assert PRESETS["cline-basic"].build(system=SYSTEM)().limit.tokens == 115_200
        assert PRESETS["cline-basic"].build(system=SYSTEM, window=200_000)().limit.tokens == 180_000
        assert PRESETS["cline-legacy"].build(system=SYSTEM)().limit.tokens == 98_000
        assert PRESETS["cline-legacy"].build(system=SYSTEM, window=200_000)().limit.tokens == 160_000
        assert PRESETS["aider"].build(system=SYSTEM, counter=COUNTER)().config.budget == 8_000
        with pytest.raises(StrategyError, match="high_water must be at most window .128,000., got 200,000"):
            PRESETS["cline-basic"].build(system=SYSTEM, high_water=200_000)
        with pytest.raises(StrategyError, match="prices tokens itself"):
            PRESETS["aider"].build(system=SYSTEM)

    @pytest.mark.parametrize("name", datasets.list_datasets())
    @pytest.mark.parametrize("preset", ["cline-basic", "cline-agentic", "cline-legacy", "aider"])
    def test_the_bundled_conversations(self, name, preset):
        convo = datasets.load(name)
        full = replay(convo, lambda: FullContext(convo.system), counter=COUNTER)
        peak = int(full.requests.input_tokens.max())
        knobs = {"history_tokens": 1_000} if preset == "aider" else {"budget": peak // 2}
        rp = replay(convo, make_strategy(preset, counter=COUNTER, system=convo.system, **knobs), counter=COUNTER)
        frame = rp.requests
        assert frame.compacted.any() and frame.input_tokens.max() < peak
        for i in range(len(rp)):
            assert_pairs_by_ids(rp.rendered(i).messages)
        distills = [e.event for e in rp.events if isinstance(e.event, DistillCall)]
        if preset == "cline-agentic":
            assert distills and all(d.request.system == cl.SUMMARY_SYSTEM for d in distills)
        if preset == "aider":
            assert distills and all(d.request.system == SUMMARIZE_PROMPT for d in distills)
        if preset in ("cline-basic", "cline-legacy"):
            assert not distills
