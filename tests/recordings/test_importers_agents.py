"""The coding agents' transcripts: Cline SDK sessions, Gemini CLI recordings and Aider chat
histories, on the hand-written fixtures in tests/data and the real Cline session in
../shared/data/real/cline (skipped when absent).

Expected counts and token sums are computed here from the raw files with a few lines of
their own (or written out by hand from the fixture, with the reason beside them), never by
calling the importer.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harpe_lab.errors import ImportFormatError
from harpe_lab.importers import (
    FORMATS,
    detect_format,
    discover,
    load_aider,
    load_aider_all,
    load_all,
    load_any,
    load_cline,
    load_gemini_cli,
)
from harpe_lab.importers._common import MISSING_RESULT
from harpe_lab.messages import AssistantMessage, ToolResults
from tests._support.data import DATA, REAL_DATA

AIDER = DATA / "aider" / ".aider.chat.history.md"
GEMINI = DATA / "gemini_cli" / "session-2026-05-04T09-12-5f0c2a9e.jsonl"
GEMINI_OLD = DATA / "gemini_cli" / "session-2025-11-18T16-05-c2f8a410.json"
CLINE = REAL_DATA / "cline"
CLINE_FILES = ["session.messages.json", "basic.compaction.json", "agentic.compaction.json"]


def counts(c) -> dict[str, int]:
    s = c.summary()
    msgs = c.messages()
    s["replies"] = sum(isinstance(m, AssistantMessage) for m in msgs)
    s["result_messages"] = sum(isinstance(m, ToolResults) for m in msgs)
    s["input_tokens"] = sum(u.input_tokens for t in c.turns for u in t.usage)
    s["output_tokens"] = sum(u.output_tokens for t in c.turns for u in t.usage)
    s["cache_read_tokens"] = sum(u.cache_read_tokens for t in c.turns for u in t.usage)
    s["cache_write_tokens"] = sum(u.cache_write_tokens for t in c.turns for u in t.usage)
    return s


def test_the_three_formats_are_registered():
    assert {"cline", "gemini_cli", "aider"} <= set(FORMATS)
    # JSON formats another sniffer could take come before the general ones
    assert FORMATS.index("cline") < FORMATS.index("openai")
    assert FORMATS.index("gemini_cli") < FORMATS.index("openai")


# --- Cline -------------------------------------------------------------------------------


def cline_expected(doc: dict) -> dict[str, int]:
    """What a Cline messages file should become, from its JSON alone."""
    turns = replies = calls = results = rows = 0
    sums = dict.fromkeys(("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens"), 0)
    waiting = False  # an input with no reply after it yet: a next input joins it
    for m in doc["messages"]:
        kinds = [b["type"] for b in m["content"]]
        if m["role"] == "assistant":
            replies += 1
            calls += kinds.count("tool_use")
            if m.get("metrics"):
                rows += 1
                for k in sums:
                    sums[k] += m["metrics"][k]
            waiting = False
            continue
        results += kinds.count("tool_result")
        if any(k != "tool_result" for k in kinds):
            turns += 0 if waiting else 1
            waiting = True
        elif kinds:
            waiting = False
    return {"turns": turns, "replies": replies, "tool_calls": calls, "tool_results": results, "usage_rows": rows,
            "input_tokens": sums["inputTokens"], "output_tokens": sums["outputTokens"],
            "cache_read_tokens": sums["cacheReadTokens"], "cache_write_tokens": sums["cacheWriteTokens"]}


@pytest.mark.real_data
class TestClineReal:
    @pytest.mark.parametrize("name", CLINE_FILES)
    def test_counts_match_the_raw_json(self, real_data, name):
        doc = json.loads((CLINE / name).read_text(encoding="utf-8"))
        got = counts(load_cline(CLINE / name))
        assert {k: got[k] for k in cline_expected(doc)} == cline_expected(doc)
        assert detect_format(CLINE / name) == "cline"

    def test_the_session(self, real_data):
        doc = json.loads((CLINE / "session.messages.json").read_text(encoding="utf-8"))
        c = load_cline(CLINE / "session.messages.json")
        got = counts(c)
        # the README's description of the file: 32 messages, 11 tool_use/tool_result pairs
        assert (len(doc["messages"]), got["tool_calls"], got["tool_results"]) == (32, 11, 11)
        assert (got["turns"], got["replies"], got["usage_rows"]) == (5, 16, 16)
        assert all(t.metadata.get("missing_tool_results", 0) == 0 for t in c.turns)
        metrics = [m["metrics"] for m in doc["messages"] if m["role"] == "assistant"]
        assert [x for t in c.turns for x in t.metadata["cost_usd"]] == [m["cost"] for m in metrics]
        assert c.metadata["recorded_cost_usd"] == pytest.approx(sum(m["cost"] for m in metrics))
        first = c.turns[0].usage[0]
        assert (first.input_tokens, first.cache_read_tokens) == (34334, 0)
        assert first.model == "anthropic/claude-opus-4.8-fast"
        assert c.turns[-1].usage[0].model == "mistralai/voxtral-small-24b-2507"
        assert c.system == doc["system_prompt"] and c.id == doc["sessionId"]
        # the attached file is sent as the SDK formats it
        assert '<file_content path="/Users/example/dev/cline/apps/examples/desktop-app/webview/components/' \
               'agent-sidebar.tsx">' in c.turns[0].input.text
        # the manifest beside it
        assert c.metadata["cwd"] == "/Users/example/dev/cline"
        times = c.turns[0].metadata["request_times"]
        assert len(times) == 3 and times[0] == doc["messages"][0]["ts"] / 1000

    def test_basic_compaction(self, real_data):
        doc = json.loads((CLINE / "basic.compaction.json").read_text(encoding="utf-8"))
        c = load_cline(CLINE / "basic.compaction.json")
        assert len(c.compactions) == 1
        k = c.compactions[0]
        assert (k.turn, k.trigger, k.summary, k.pre_tokens) == (0, "manual_compaction", "", None)
        assert c.metadata["compaction"][0]["messages_removed"] == 22
        # every kept prompt carries its notice, joined to the prompt as the model reads it
        texts = [b["text"] for b in doc["messages"][2]["content"]]
        assert c.turns[1].input.text == "\n\n".join(texts)
        assert "<SYSTEM_NOTICE>" in c.turns[1].input.text

    def test_the_sums_are_what_clines_basic_compaction_recorded(self, real_data):
        # Cline adds up the metrics it strips into the first kept message's usageBefore
        before = json.loads((CLINE / "basic.compaction.json").read_text())["messages"][0]["metadata"]["usageBefore"]
        c = load_cline(CLINE / "session.messages.json")
        got = counts(c)
        assert (got["input_tokens"], got["output_tokens"], got["cache_read_tokens"], got["cache_write_tokens"]) == (
            before["inputTokens"], before["outputTokens"], before["cacheReadTokens"], before["cacheWriteTokens"])
        assert c.metadata["recorded_cost_usd"] == pytest.approx(before["cost"])

    def test_agentic_compaction(self, real_data):
        doc = json.loads((CLINE / "agentic.compaction.json").read_text(encoding="utf-8"))
        c = load_cline(CLINE / "agentic.compaction.json")
        summary, prompt = doc["messages"][0], doc["messages"][1]
        (turn,) = c.turns
        assert turn.input.text == summary["content"][0]["text"] + "\n\n" + prompt["content"][0]["text"]
        assert turn.metadata["merged_inputs"] == (prompt["id"],)
        (k,) = c.compactions
        assert (k.turn, k.trigger, k.pre_tokens) == (0, "agentic", 21919)
        assert k.summary == summary["metadata"]["summary"]


def _cline_doc(messages: list) -> dict:
    return {"version": 1, "agent": "lead", "sessionId": "s-1", "messages": messages, "system_prompt": "Be brief."}


def _text(t: str) -> dict:
    return {"type": "text", "text": t}


class TestClineHandWritten:
    def write(self, tmp_path, messages, name="s-1.messages.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(_cline_doc(messages)))
        return path

    def test_blocks_turns_and_usage(self, tmp_path):
        path = self.write(tmp_path, [
            {"id": "u1", "role": "user", "ts": 1_000, "content": [_text("Fix it"), {
                "type": "file", "path": "/w/a.py", "content": "x = 1"}]},
            {"id": "a1", "role": "assistant", "ts": 2_000, "modelInfo": {"id": "m", "provider": "p"},
             "content": [{"type": "thinking", "thinking": "look first"}, _text("Reading."),
                         {"type": "tool_use", "id": "t1", "name": "read_files", "input": {"path": "/w/a.py"}}]},
            {"id": "r1", "role": "user", "ts": 3_000, "content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": "no such file", "is_error": True}]},
            {"id": "a2", "role": "assistant", "ts": 4_000, "modelInfo": {"id": "m", "provider": "p"},
             "metrics": {"inputTokens": 900, "outputTokens": 12, "cacheReadTokens": 800, "cacheWriteTokens": 0,
                         "cost": 0.01}, "content": [_text("Done.")]},
            {"id": "u2", "role": "user", "content": [_text("and")]},
            {"id": "u3", "role": "user", "content": [_text("thanks")]},
        ])
        c = load_any(path)
        assert c.metadata["format"] == "cline"
        t0, t1 = c.turns
        assert t0.input.text == 'Fix it\n\n<file_content path="/w/a.py">\nx = 1\n</file_content>'
        assert t0.ids == ("u1", "a1", "r1", "a2")
        assert t0.messages[1].results[0].success is False
        assert t0.metadata["thinking"] == ("look first",)
        # only the last reply recorded metrics: the rows cannot be matched to replies
        assert t0.usage == () and t0.metadata["usage_incomplete"] is True
        assert t0.metadata["cost_usd"] == (None, 0.01)
        assert t0.metadata["request_times"] == (1.0, 3.0)
        assert (t1.input.text, t1.metadata["merged_inputs"]) == ("and\n\nthanks", ("u3",))
        assert c.system == "Be brief."

    def test_results_and_text_in_one_message(self, tmp_path):
        path = self.write(tmp_path, [
            {"id": "u1", "role": "user", "content": [_text("go")]},
            {"id": "a1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
            {"id": "u2", "role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"},
                                                     _text("now stop")]},
        ])
        c = load_cline(path)
        assert [t.ids for t in c.turns] == [("u1", "a1", "u2:results"), ("u2",)]
        assert c.turns[1].input.text == "now stop"

    def test_a_bad_role_is_named(self, tmp_path):
        path = self.write(tmp_path, [{"id": "u1", "role": "user", "content": [_text("a")]},
                                     {"id": "x", "role": "robot", "content": []}])
        for load in (load_cline, load_any):  # a Cline file, so Cline's reader says what is wrong
            with pytest.raises(ImportFormatError, match=r"s-1.messages.json: messages\[1\]: role 'robot'; expected "
                                                        r"'user' or 'assistant'$"):
                load(path)
        with pytest.raises(ImportFormatError, match=r"not a Cline session: the top-level object has no 'version'"):
            load_cline(GEMINI_OLD)

    def test_malformed_blocks_and_metrics_are_errors(self, tmp_path):
        path = self.write(tmp_path, [{"id": "u1", "role": "user", "content": [_text("a")]},
                                     {"id": "a1", "role": "assistant", "content": [_text("b")],
                                      "metrics": {"inputTokens": "many"}}])
        with pytest.raises(ImportFormatError, match=r"s-1.messages.json: messages\[1\]: metrics 'inputTokens' must "
                                                    r"be a number, got 'many'"):
            load_cline(path)
        orphan = {"type": "tool_result", "content": "x"}
        path = self.write(tmp_path, [{"id": "u1", "role": "user", "content": [orphan]}])
        with pytest.raises(ImportFormatError, match=r"messages\[0\] content\[0\]: a tool_result block has no"):
            load_cline(path)


# --- Gemini CLI --------------------------------------------------------------------------


def _gemini_rows(records: list[dict], leave_out: set[str]) -> dict[str, int]:
    """Usage sums of the latest version of every gemini message not in ``leave_out``."""
    latest: dict[str, dict] = {}
    for r in records:
        if isinstance(r.get("id"), str):
            latest[r["id"]] = r
    rows = [m["tokens"] for i, m in latest.items() if m["type"] == "gemini" and m.get("tokens") and i not in leave_out]
    return {"usage_rows": len(rows), "input_tokens": sum(t["input"] + t["tool"] for t in rows),
            "output_tokens": sum(t["output"] + t["thoughts"] for t in rows),
            "cache_read_tokens": sum(t["cached"] for t in rows)}


@pytest.fixture(scope="module")
def conv():
    return load_gemini_cli(GEMINI)


class TestGeminiCli:
    def test_counts(self, conv):
        records = [json.loads(line) for line in GEMINI.read_text(encoding="utf-8").splitlines()]
        got = counts(conv)
        # by hand from the fixture: 3 prompts kept (u3 rolled back, u4 rewound), 7 replies with
        # tokens (g8 rewound), 5 calls each answered by a functionResponse user message
        assert (got["turns"], got["replies"], got["tool_calls"], got["tool_results"]) == (3, 7, 5, 5)
        expected = _gemini_rows(records, leave_out={"47ad90e3-g8"})
        assert {k: got[k] for k in expected} == expected
        assert expected["usage_rows"] == 7
        for t in conv.turns:
            assert len(t.metadata["request_times"]) == len(t.usage)

    def test_a_row_adds_up_to_geminis_total(self, conv):
        records = {r["id"]: r for r in map(json.loads, GEMINI.read_text().splitlines()) if "id" in r}
        for turn in conv.turns:
            replies = [i for m, i in zip(turn.messages, turn.ids[1:]) if isinstance(m, AssistantMessage)]
            for u, i in zip(turn.usage, replies):
                assert u.input_tokens + u.output_tokens == records[i]["tokens"]["total"]
                assert (u.model, u.provider) == ("gemini-2.5-pro", "gemini")

    def test_results_come_from_the_function_responses_sent(self, conv):
        t0 = conv.turns[0]
        assert t0.ids == ("0b7e9a52-u1", "6d2f41c8-g1", "a91c03f7-fr1", "3e88b1d0-g2", "f4d2a6b9-fr2", "7c15e2aa-g3")
        assert [c.name for c in t0.messages[0].calls] == ["read_file", "read_file"]
        assert t0.messages[1].results[1].content.startswith("import time\n\n\nclass Ledger:")
        assert t0.metadata["thinking"][0] == "Locating the flaky test: Read test_rollover and the Ledger class it " \
                                             "exercises."
        # the first version of g1 had no calls: the record written again replaced it
        assert t0.messages[0].text == "I'll read the test and the ledger module first."

    def test_rewinds_rollbacks_and_the_compression(self, conv):
        assert conv.metadata["rewound_messages"] == 3  # u3 (rolled back), u4 and g8 ($rewindTo)
        assert conv.metadata["checkpoints"] == 2
        assert dict(conv.metadata["ui_messages"]) == {"info": 2}
        (k,) = conv.compactions
        assert (k.turn, k.message, k.trigger) == (2, None, "compress")
        assert k.summary.startswith("<state_snapshot>") and "4 of 20 runs failed" in k.summary
        # the compressed history's copies are not messages again
        assert "60c2d8f1-k1" not in conv.message_ids() and conv.turns[2].ids == ("3c70e4b8-u5", "e6a4d2f5-g9")
        assert conv.metadata["summary"] == "Fix flaky test_rollover by injecting a clock"

    def test_the_older_one_document_format(self):
        doc = json.loads(GEMINI_OLD.read_text(encoding="utf-8"))
        c = load_any(GEMINI_OLD)
        assert c.metadata["format"] == "gemini_cli"
        got = counts(c)
        calls = sum(len(m.get("toolCalls") or ()) for m in doc["messages"])
        answered = sum(1 for m in doc["messages"] for tc in m.get("toolCalls") or () if tc["result"] is not None)
        kinds = [m["type"] for m in doc["messages"]]
        assert (got["turns"], got["replies"], got["tool_calls"]) == (kinds.count("user"), kinds.count("gemini"), calls)
        assert (calls, answered) == (3, 2)
        expected = _gemini_rows(doc["messages"], leave_out=set())
        assert {k: got[k] for k in expected} == expected
        t0, t1, _ = c.turns
        assert t0.messages[3].results[0].success is False  # response.error, status "error"
        assert t1.messages[1].results[0].content == MISSING_RESULT and t1.metadata["missing_tool_results"] == 1
        assert dict(c.metadata["ui_messages"]) == {"warning": 1}
        # the request went out when the previous tool call finished
        assert t0.metadata["request_times"][1] == pytest.approx(1763481923.52)

    def test_a_masking_checkpoint_keeps_what_was_sent(self, tmp_path):
        meta = {"sessionId": "s", "projectHash": "h", "startTime": "2026-05-01T10:00:00Z"}
        call = {"functionCall": {"id": "c1", "name": "read_file", "args": {"absolute_path": "/a"}}}
        sent = [
            {"id": "u1", "timestamp": "2026-05-01T10:00:01Z", "type": "user", "content": [{"text": "read /a"}]},
            {"id": "g1", "timestamp": "2026-05-01T10:00:02Z", "type": "gemini", "content": [call],
             "tokens": {"input": 100, "output": 5, "cached": 0, "thoughts": 0, "tool": 0, "total": 105}},
            {"id": "f1", "timestamp": "2026-05-01T10:00:03Z", "type": "user", "content": [
                {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "A" * 500}}}]},
            {"id": "g2", "timestamp": "2026-05-01T10:00:04Z", "type": "gemini", "content": "It is all A.",
             "tokens": {"input": 230, "output": 6, "cached": 100, "thoughts": 0, "tool": 0, "total": 236}},
        ]
        # setHistory records the masked history message by message, then checkpoints it
        copies = [dict(m, id=m["id"] + "'") for m in sent]
        copies[2] = dict(copies[2], content=[{"functionResponse": {"id": "c1", "name": "read_file",
                                                                   "response": {"output": "<masked>"}}}])
        copies = [{k: v for k, v in m.items() if k != "tokens"} for m in copies]
        later = [{"id": "u2", "timestamp": "2026-05-01T10:01:00Z", "type": "user", "content": [{"text": "ok"}]},
                 {"id": "g3", "timestamp": "2026-05-01T10:01:01Z", "type": "gemini", "content": "Good."}]
        lines = [meta, *sent, *copies, {"$set": {"messages": copies}}, *later]
        path = tmp_path / "session-2026-05-01T10-00-s.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in lines))
        c = load_gemini_cli(path)
        assert [t.ids for t in c.turns] == [("u1", "g1", "f1", "g2"), ("u2", "g3")]
        assert c.turns[0].messages[1].results[0].content == "A" * 500
        assert c.compactions == () and c.metadata["checkpoints"] == 1 and "rewound_messages" not in c.metadata
        assert c.turns[0].usage[1].input_tokens == 230 and c.turns[1].metadata.get("usage_incomplete") is None

    def test_bad_records_are_named_by_line(self, tmp_path):
        meta = json.dumps({"sessionId": "s", "projectHash": "h"})
        path = tmp_path / "session-x.jsonl"
        path.write_text(meta + "\n" + json.dumps({"id": "m1", "type": "robot", "content": "hi"}) + "\n")
        with pytest.raises(ImportFormatError, match=r"session-x.jsonl:2: message 'm1' has type 'robot'; expected one "
                                                    r"of error, gemini, info, user, warning"):
            load_gemini_cli(path)
        path.write_text(meta + "\n" + json.dumps({"id": "m1", "type": "gemini", "content": "hi", "tokens": 7}) + "\n")
        with pytest.raises(ImportFormatError, match=r"session-x.jsonl:2: message 'm1': 'tokens' must be an object"):
            load_any(path)
        path.write_text(meta + "\n" + json.dumps({"text": "stray"}) + "\n")
        with pytest.raises(ImportFormatError, match=r"not a Gemini CLI session: line 2: not a message \(no 'id'\)"):
            load_gemini_cli(path)


# --- Aider -------------------------------------------------------------------------------


def _k(raw: str) -> int:
    return round(float(raw[:-1]) * 1000) if raw.endswith("k") else int(raw.replace(",", ""))


def aider_expected(text: str) -> list[dict[str, int]]:
    """Per run with a reply: usage rows and sums, from the 'Tokens:' lines alone."""
    runs = re.split(r"^# aider chat started at .*$", text, flags=re.M)[1:]
    out = []
    for run in runs:
        rows = re.findall(r"^> Tokens: ([\d.,k]+) sent, (?:([\d.k]+) cache write, )?(?:([\d.k]+) cache hit, )?"
                          r"([\d.,k]+) received\.", run, flags=re.M)
        if rows:
            out.append({"usage_rows": len(rows), "input_tokens": sum(_k(r[0]) for r in rows),
                        "output_tokens": sum(_k(r[3]) for r in rows),
                        "cache_write_tokens": sum(_k(r[1]) for r in rows if r[1]),
                        "cache_read_tokens": sum(_k(r[2]) for r in rows if r[2])})
    return out


@pytest.fixture(scope="module")
def convs():
    return load_aider_all(AIDER)


class TestAider:
    def test_one_conversation_per_run_with_a_reply(self, convs):
        # three runs; the second (started, then /exit) holds no conversation
        assert [c.id for c in convs] == ["2026-03-09 10:14:52", "2026-03-11 16:02:07"]
        assert [c.metadata["session"] for c in convs] == [1, 3]
        assert detect_format(AIDER) == "aider"
        assert load_any(AIDER).id == convs[0].id and load_any(AIDER).metadata["format"] == "aider"
        assert [c.id for c in load_all(AIDER)] == [c.id for c in convs]
        assert load_aider(AIDER, index="2026-03-11 16:02:07").turns == convs[1].turns
        assert load_any(AIDER, index=1).id == convs[1].id

    def test_counts_match_the_tokens_lines(self, convs):
        expected = aider_expected(AIDER.read_text(encoding="utf-8"))
        assert [{k: counts(c)[k] for k in e} for c, e in zip(convs, expected)] == expected
        # by hand: 3 + 3 turns (the /run, /add and /exit commands are not turns), 4 + 2 replies
        assert [(counts(c)["turns"], counts(c)["replies"]) for c in convs] == [(3, 4), (3, 2)]
        assert expected[0]["input_tokens"] == 2300 + 2900 + 3400 + 3500

    def test_inputs_replies_and_aiders_messages(self, convs):
        first, second = convs
        t = first.turns[1]
        assert t.input.text == "The test for an empty string fails now. Fix it."
        assert len(t.messages) == 2  # a reflection: Aider sent the file the model asked for
        assert t.metadata["tool_output"][-1].startswith("Add file to the chat?")
        assert t.metadata["cost_usd"] == pytest.approx((0.0085, 0.0115))
        run = first.metadata["commands"][0]
        assert run["text"] == "/run python -m pytest -q tests/test_slugify.py"
        assert run["output"][0].splitlines()[0].startswith("..F.") and run["output"][0].endswith("in 0.04s")
        assert len(run["output"][0].splitlines()) == 10
        assert first.metadata["models"] == ("openai/gpt-4o",) and first.metadata["aider_version"] == "0.86.2"
        assert first.metadata["announcements"][-1] == "Added src/slugify.py to the chat."
        usage = second.turns[0]
        assert usage.input.text == "Add a Usage section to the README.\nShow one slugify() call and its output.\n\n" \
                                   "Keep it short."
        reply = usage.messages[0].text
        assert "\n#### Usage\n" in reply and "\n> Note: accents are dropped, not transliterated.\n" in reply
        assert (usage.usage[0].cache_write_tokens, usage.usage[0].cache_read_tokens) == (1100, 3400)
        assert usage.usage[0].model == "anthropic/claude-sonnet-4-20250514"
        assert second.metadata["weak_models"] == ("anthropic/claude-3-5-haiku-20241022",)
        assert second.turns[1].input.text.startswith("/ask ")
        assert second.turns[2].metadata["no_reply"] is True and second.turns[2].messages == ()
        assert second.metadata["session_cost_usd"] == 0.05

    def test_a_bad_tokens_line_names_its_line(self, tmp_path):
        path = tmp_path / ".aider.chat.history.md"
        path.write_text("\n# aider chat started at 2026-01-01 09:00:00\n\n#### hi  \n\nHello.\n\n"
                        "> Tokens: lots sent, 3 received.  \n")
        with pytest.raises(ImportFormatError, match=r"\.aider\.chat\.history\.md:8: cannot read 'lots sent'"):
            load_any(path)

    def test_files_that_are_not_aider_histories(self, tmp_path):
        notes = tmp_path / "notes.md"
        notes.write_text("# Notes\n\nnothing here\n")
        with pytest.raises(ImportFormatError, match=r"notes.md: not an Aider chat history \(no '# aider chat started "):
            load_aider(notes)
        with pytest.raises(ImportFormatError, match=r"notes.md: neither a JSON document"):
            load_any(notes)
        quiet = tmp_path / "quiet.md"
        quiet.write_text("\n# aider chat started at 2026-01-01 09:00:00\n\n> Aider v0.86.2  \n\n#### /exit  \n")
        with pytest.raises(ImportFormatError, match=r"holds 1 Aider run and none has a reply"):
            load_aider(quiet)
        with pytest.raises(ImportFormatError, match=r"not an Aider chat history: a JSON file"):
            load_aider(GEMINI_OLD)


# --- discover ----------------------------------------------------------------------------


class TestDiscover:
    @pytest.fixture
    def home(self, tmp_path, monkeypatch):
        for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME", "CLINE_DIR", "CLINE_DATA_DIR",
                     "CLINE_SESSION_DATA_DIR"):
            monkeypatch.delenv(name, raising=False)
        chats = tmp_path / ".gemini" / "tmp" / "9c41d7e2" / "chats"
        chats.mkdir(parents=True)
        (chats / GEMINI.name).write_bytes(GEMINI.read_bytes())
        (chats / GEMINI_OLD.name).write_bytes(GEMINI_OLD.read_bytes())
        (chats / "5f0c2a9e-1b7d-4c3e-9a51-2d8e6f4b7c10").mkdir()
        (chats / "5f0c2a9e-1b7d-4c3e-9a51-2d8e6f4b7c10" / "sub-1.jsonl").write_text("{}\n")
        cline = tmp_path / ".cline" / "data" / "sessions" / "s-1"
        cline.mkdir(parents=True)
        (cline / "s-1.messages.json").write_text(json.dumps(_cline_doc([
            {"id": "u1", "role": "user", "content": [_text("hi")]},
            {"id": "a1", "role": "assistant", "content": [_text("hello")]}])))
        (cline / "s-1.json").write_text("{}")
        (cline / "s-1.compaction.json").write_text("{}")
        (cline / "s-1__sub.messages.json").write_text("{}")
        project = tmp_path / "work" / "tinyslug"
        project.mkdir(parents=True)
        (project / ".aider.chat.history.md").write_bytes(AIDER.read_bytes())
        return tmp_path

    def test_lists_gemini_and_cline_sessions_and_aider_in_the_folders_given(self, home):
        found = discover(home=home, folders=[home / "work" / "tinyslug", home / "work"])
        assert sorted((s.tool, s.session_id, s.subagent) for s in found) == [
            ("aider", "tinyslug", False), ("cline", "s-1", False),
            ("gemini_cli", "5f0c2a9e", False), ("gemini_cli", "c2f8a410", False)]
        for s in found:
            assert load_any(s.path).metadata["format"] == s.tool
        assert {s.project for s in found if s.tool == "gemini_cli"} == {"9c41d7e2"}

    def test_subagents_on_request(self, home):
        subs = sorted((s.tool, s.session_id) for s in discover(home=home, subagents=True) if s.subagent)
        assert subs == [("cline", "s-1__sub"), ("gemini_cli", "sub-1")]

    def test_the_agents_own_variables_move_their_folders(self, home, tmp_path, monkeypatch):
        moved = tmp_path / "elsewhere"
        (moved / "sessions" / "s-9").mkdir(parents=True)
        (moved / "sessions" / "s-9" / "s-9.messages.json").write_text("{}")
        monkeypatch.setenv("CLINE_DATA_DIR", str(moved))
        monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "nobody"))
        assert [(s.tool, s.session_id) for s in discover(home=home)] == [("cline", "s-9")]
