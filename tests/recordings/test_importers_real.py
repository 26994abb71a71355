"""Importers on the real transcripts in ../shared/data/real (skipped when absent).

Every expected count is computed here from the raw JSON with a few independent lines, not
by calling the importer; the importer must agree.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from harpe_lab.importers import (
    detect_format,
    load_all,
    load_claude_code,
    load_locomo_all,
    load_longmemeval_all,
    load_openai_all,
    load_swe_agent,
    load_tau_bench_all,
    load_toolbench,
)
from harpe_lab.messages import AssistantMessage, ToolResults
from tests._support.data import REAL_DATA

pytestmark = pytest.mark.real_data


def _files(pattern: str) -> list:
    found = sorted(REAL_DATA.glob(pattern)) if REAL_DATA.is_dir() else []
    return [pytest.param(p, id=p.name[:60]) for p in found] or [pytest.param(None, id="absent")]


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _counts(c) -> dict[str, int]:
    s = c.summary()
    s["assistant"] = sum(isinstance(m, AssistantMessage) for m in c.messages())
    s["result_messages"] = sum(isinstance(m, ToolResults) for m in c.messages())
    s["filled"] = sum(t.metadata.get("missing_tool_results", 0) for t in c.turns)
    return s


# --- Claude Code -------------------------------------------------------------------------


def claude_code_expected(records: list[dict]) -> dict:
    """What a Claude Code file should become, from its records alone."""
    main = any(r.get("type") in ("user", "assistant") and r.get("isSidechain") is False for r in records)
    ids, usage_ids, calls, with_calls = [], set(), [], set()
    results = answered = 0
    events = []  # input | reply | result | compaction (interrupt markers are not events)
    boundaries, summaries = [], []
    for r in records:
        kind = r.get("type")
        if kind in ("user", "assistant") and main and r.get("isSidechain"):
            continue
        if kind == "system" and r.get("subtype") == "compact_boundary":
            boundaries.append(r["compactMetadata"]["preTokens"])
        elif kind == "assistant":
            m = r["message"]
            if m["id"] not in ids:
                ids.append(m["id"])
            if "usage" in m:
                usage_ids.add(m["id"])
            for b in m["content"]:
                if b["type"] == "tool_use":
                    calls.append(b["id"])
                    with_calls.add(m["id"])
            events.append("reply")
        elif kind == "user":
            content = r["message"]["content"]
            if r.get("isCompactSummary"):
                summaries.append(content)
                events.append("compaction")
                continue
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
            got = [b for b in blocks if b["type"] == "tool_result"]
            results += len(got)
            answered += sum(b["tool_use_id"] in calls for b in got)
            if got:
                events.append("result")
            rest = [b for b in blocks if b["type"] != "tool_result"]
            if rest and not (rest[0].get("text", "").startswith("[Request interrupted by user") and len(rest) == 1):
                events.append("input")
    turns = sum(1 for k, e in enumerate(events) if e == "input" and (k == 0 or events[k - 1] != "input"))
    first = next((e for e in events if e in ("input", "reply")), "input")
    turns += first == "reply"  # replies before any input get a synthetic one
    return {"turns": turns, "assistant": len(ids), "usage_rows": len(usage_ids), "tool_calls": len(calls),
            "tool_results": results, "unanswered": len(calls) - answered, "result_messages": len(with_calls),
            "boundaries": boundaries, "summaries": summaries}


class TestClaudeCodeReal:
    @pytest.mark.parametrize("path", _files("claude_code/*.jsonl") + _files("claude_code/*/subagents/*.jsonl"))
    def test_counts_match_the_raw_records(self, real_data, path):
        want = claude_code_expected(_jsonl(path))
        c = load_claude_code(path)
        got = _counts(c)
        assert got["turns"] == want["turns"]
        assert got["assistant"] == want["assistant"]
        assert got["usage_rows"] == want["usage_rows"]  # one per distinct API message id with usage
        assert got["tool_calls"] == want["tool_calls"]
        assert got["tool_results"] == want["tool_results"] + got["filled"]
        assert got["filled"] == want["unanswered"]
        assert got["result_messages"] == want["result_messages"]
        assert got["messages"] == got["turns"] + got["assistant"] + got["result_messages"]

    @pytest.mark.parametrize("path", _files("claude_code/*.jsonl"))
    def test_every_recorded_compaction_is_found(self, real_data, path):
        want = claude_code_expected(_jsonl(path))
        c = load_claude_code(path)
        assert [k.pre_tokens for k in c.compactions] == want["boundaries"]
        assert [k.summary for k in c.compactions] == want["summaries"]
        assert all(k.trigger == "auto" and k.summary for k in c.compactions)
        assert len(c.metadata.get("compaction_boundaries", ())) == len(want["boundaries"])
        assert not any(t.input.text.startswith("This session is being continued") for t in c.turns)

    def test_the_long_sessions_each_have_a_compaction(self, real_data):
        long = [p for p in (real_data / "claude_code").glob("*.jsonl") if p.stat().st_size > 1_000_000]
        assert len(long) == 3
        for p in long:
            c = load_claude_code(p)
            assert len(c.compactions) == 1, p.name
            assert c.compactions[0].pre_tokens > 140_000
            point = c.compactions[0]
            assert 0 < point.message <= len(c.turns[point.turn].all_messages)

    @pytest.mark.parametrize("path", _files("claude_code/*.jsonl"))
    def test_subagent_files_are_listed_and_linked(self, real_data, path):
        folder = path.parent / path.stem / "subagents"
        c = load_claude_code(path)
        expected = sorted(p.name for p in folder.glob("agent-*.jsonl")) if folder.is_dir() else []
        subs = c.metadata.get("subagents", ())
        assert sorted(Path(s["path"]).name for s in subs) == expected
        calls = {call.id for m in c.messages() if isinstance(m, AssistantMessage) for call in m.calls}
        for s in subs:
            if s["kind"] == "task":
                assert s["tool_use_id"] in calls

    def test_every_call_is_answered(self, real_data):
        for p in sorted((real_data / "claude_code").glob("*.jsonl")):
            c = load_claude_code(p)
            for t in c.turns:
                for i, m in enumerate(t.messages):
                    if isinstance(m, AssistantMessage) and m.calls:
                        assert [r.id for r in t.messages[i + 1].results] == [x.id for x in m.calls]


# --- LoCoMo, LongMemEval ---------------------------------------------------------------------


class TestLoCoMoReal:
    def test_counts_and_probes(self, real_data):
        raw = json.loads((real_data / "locomo" / "locomo_dev3.json").read_text())
        convs = load_locomo_all(real_data / "locomo" / "locomo_dev3.json")
        assert [c.id for c in convs] == [s["sample_id"] for s in raw]
        for sample, c in zip(raw, convs):
            conv = sample["conversation"]
            sessions = [v for k, v in conv.items() if k.startswith("session_") and not k.endswith("date_time")]
            utterances = [u for s in sessions for u in s]
            a = sum(u["speaker"] == conv["speaker_a"] for u in utterances)
            b_first = sum(1 for s in sessions if s and s[0]["speaker"] != conv["speaker_a"])
            assert len(c.turns) == a + b_first
            assert c.summary()["messages"] == len(utterances) + b_first
            assert len(c.probes) == len(sample["qa"])
            ids = set(c.message_ids())
            assert {u["dia_id"] for u in utterances} <= ids
            for probe, qa in zip(c.probes, sample["qa"]):
                assert set(probe.evidence) <= ids
                assert probe.asked_at == len(c.turns)
                assert (probe.category == "adversarial") == (qa["category"] == 5)
                if "answer" in qa:
                    assert probe.answer == str(qa["answer"])

    def test_malformed_evidence_is_split(self, real_data):
        (c,) = [x for x in load_locomo_all(real_data / "locomo" / "locomo_dev3.json") if x.id == "conv-26"]
        split = [p for p in c.probes if "D8:6" in p.evidence and "D9:17" in p.evidence]
        assert len(split) == 1


class TestLongMemEvalReal:
    def test_every_question_becomes_a_conversation_with_one_probe(self, real_data):
        path = real_data / "longmemeval" / "longmemeval_oracle.json"
        raw = json.loads(path.read_text())
        convs = load_longmemeval_all(path)
        assert len(convs) == len(raw) == 500
        for item, c in zip(raw, convs):
            sessions = item["haystack_sessions"]
            users = sum(m["role"] == "user" for s in sessions for m in s)
            starts = sum(1 for s in sessions if s and s[0]["role"] == "assistant")
            assert len(c.turns) == users + starts
            assert c.summary()["messages"] == sum(len(s) for s in sessions) + starts
            (probe,) = c.probes
            assert probe.id == item["question_id"] and probe.question == item["question"]
            assert probe.answer == str(item["answer"])
            assert len(probe.evidence) == sum(bool(m.get("has_answer")) for s in sessions for m in s)
            assert probe.asked_at == len(c.turns)
        types = Counter(c.metadata["question_type"] for c in convs)
        assert types["knowledge-update"] == 78
        assert sum(c.id.endswith("_abs") for c in convs) == 30


# --- tool-using trajectories -----------------------------------------------------------------


def openai_expected(messages: list[dict]) -> dict:
    users = sum(m["role"] == "user" for m in messages)
    first = next((m["role"] for m in messages if m["role"] not in ("system", "developer")), "user")
    calls = sum(len(m.get("tool_calls") or []) + bool(m.get("function_call")) for m in messages)
    results = sum(m["role"] in ("tool", "function") for m in messages)
    assistants = sum(m["role"] == "assistant" for m in messages)
    runs = sum(1 for k, m in enumerate(messages)
               if m["role"] in ("tool", "function") and (k == 0 or messages[k - 1]["role"] not in ("tool", "function")))
    return {"turns": users + (first != "user"), "assistant": assistants, "tool_calls": calls, "tool_results": results,
            "result_messages": runs}


class TestTauBenchReal:
    def test_counts_per_trajectory(self, real_data):
        path = real_data / "tau_bench" / "gpt-4o-airline.json"
        raw = json.loads(path.read_text())
        convs = load_tau_bench_all(path)
        assert len(convs) == len(raw) == 200
        for item, c in zip(raw, convs):
            want = openai_expected(item["traj"])
            got = _counts(c)
            assert got["turns"] == want["turns"]
            assert got["assistant"] == want["assistant"]
            assert got["tool_calls"] == want["tool_calls"]
            assert got["tool_results"] == want["tool_results"] + got["filled"]
            assert got["result_messages"] == want["result_messages"]
            assert c.metadata["reward"] == item["reward"]
        assert sum(_counts(c)["tool_calls"] for c in convs) == 1164


class TestSweAgentReal:
    @pytest.mark.parametrize("path", _files("swe_agent/*.traj"))
    def test_counts_per_trajectory(self, real_data, path):
        history = json.loads(path.read_text())["history"]
        c = load_swe_agent(path)
        got = _counts(c)
        assistants = [k for k, m in enumerate(history) if m["role"] == "assistant"]
        fc = any(m.get("tool_calls") for m in history)
        if fc:
            calls = sum(len(m.get("tool_calls") or []) for m in history)
            results = sum(m["role"] == "tool" for m in history)
            observations = 0
        else:
            acting = [k for k in assistants if (history[k].get("action") or "").strip()]
            calls = len(acting)
            observations = sum(1 for k in acting if k + 1 < len(history) and history[k + 1]["role"] == "user")
            results = observations
        users = sum(m["role"] == "user" for m in history) - observations
        assert got["turns"] == users
        assert got["assistant"] == len(assistants)
        assert got["tool_calls"] == calls
        assert got["tool_results"] == results + got["filled"]
        assert got["filled"] <= 1  # at most the final submit goes unanswered
        assert c.system == "\n\n".join(m["content"] for m in history if m["role"] == "system")


def toolbench_tree_expected(doc: dict) -> dict:
    """Calls on the deepest path of a failed run's search tree."""
    best, stack = [], [(doc["tree"]["tree"], [doc["tree"]["tree"]])]
    while stack:
        node, path = stack.pop()
        best = path if len(path) > len(best) else best
        stack.extend((c, path + [c]) for c in reversed(node["children"]))
    calls = sum(1 for k, n in enumerate(best) if n["node_type"] == "Action" and k + 1 < len(best))
    return {"turns": 1, "assistant": calls, "tool_calls": calls, "tool_results": calls}


class TestToolBenchReal:
    @pytest.mark.parametrize("path", _files("toolbench/*.json"))
    def test_counts_of_the_chosen_chain(self, real_data, path):
        doc = json.loads(path.read_text())
        chains = doc["answer_generation"].get("train_messages")
        want = openai_expected(max(chains, key=len)) if chains else toolbench_tree_expected(doc)
        c = load_toolbench(path)
        got = _counts(c)
        for key in ("turns", "assistant", "tool_calls"):
            assert got[key] == want[key], key
        # the final Finish call gets no function result, so it is filled in
        assert got["tool_results"] == want["tool_results"] + got["filled"]
        assert got["filled"] <= 1
        assert c.metadata["path_from"] == ("train_messages" if chains else "tree")


class TestWildChatReal:
    def test_each_record_is_a_conversation(self, real_data):
        path = real_data / "wildchat" / "wildchat1m_sample588.json"
        raw = json.loads(path.read_text())
        convs = load_openai_all(path)
        assert [c.id for c in convs] == [r["id"] for r in raw]
        for item, c in zip(raw, convs):
            want = openai_expected(item["messages"])
            got = _counts(c)
            assert (got["turns"], got["assistant"]) == (want["turns"], want["assistant"])


# --- sniffing and the journal round trip -------------------------------------------------------

REAL_FORMATS = {
    "claude_code/short.jsonl": "claude_code",
    "locomo/locomo_dev3.json": "locomo",
    "longmemeval/longmemeval_oracle.json": "longmemeval",
    "tau_bench/gpt-4o-airline.json": "tau_bench",
    "wildchat/wildchat1m_sample588.json": "openai",
    "toolbench/G1_answer__10_ChatGPT_DFS_woFilter_w2.json": "toolbench",
    "swe_agent/demonstrations__function_calling_simple.traj": "swe_agent",
}


class TestLoadAnyReal:
    @pytest.mark.parametrize("name,fmt", REAL_FORMATS.items(), ids=list(REAL_FORMATS))
    def test_detects_each_real_format(self, real_data, name, fmt):
        assert detect_format(real_data / name) == fmt

    def test_load_all_on_a_many_conversation_file(self, real_data):
        assert len(load_all(real_data / "tau_bench" / "gpt-4o-airline.json")) == 200


class TestJournalRoundTripReal:
    @pytest.mark.parametrize("path", _files("claude_code/*.jsonl"))
    def test_claude_code_sessions_survive_a_journal(self, real_data, path, tmp_path):
        from harpe_lab.importers.harpe import load_harpe, to_journal

        c = load_claude_code(path)
        back = load_harpe(to_journal(c, tmp_path / "j.jsonl"))
        assert [t.input for t in back.turns] == [t.input for t in c.turns]
        assert [t.messages for t in back.turns] == [t.messages for t in c.turns]
        assert [t.outcome for t in back.turns] == [t.outcome for t in c.turns]
        assert [t.usage for t in back.turns] == [t.usage for t in c.turns]

    def test_tau_bench_and_locomo_survive_a_journal(self, real_data, tmp_path):
        from harpe_lab.importers.harpe import load_harpe, to_journal

        for k, c in enumerate(load_tau_bench_all(real_data / "tau_bench" / "gpt-4o-airline.json")[:20]
                              + load_locomo_all(real_data / "locomo" / "locomo_dev3.json")):
            back = load_harpe(to_journal(c, tmp_path / f"{k}.jsonl"))
            assert [(t.input, t.messages, t.outcome) for t in back.turns] == [
                (t.input, t.messages, t.outcome) for t in c.turns]
