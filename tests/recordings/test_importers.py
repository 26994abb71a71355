"""Importers on small hand-written fixtures (tests/data/importers): what each format
becomes, the unknown-format error, discover(), the native format and the journal round trip."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harpe_lab.conversation import Conversation, Probe, RecordedCompaction, Turn
from harpe_lab.errors import ImportFormatError
from harpe_lab.importers import (
    FORMATS,
    SessionFile,
    claude_code_subagents,
    detect_format,
    discover,
    from_openai_messages,
    load_all,
    load_any,
    load_claude_code,
    load_codex,
    load_conversation,
    load_locomo,
    load_locomo_all,
    load_longmemeval,
    load_openai,
    load_openai_all,
    load_sharegpt,
    load_sharegpt_all,
    load_swe_agent,
    load_tau_bench,
    load_toolbench,
    save_conversation,
)
from harpe_lab.importers._common import MISSING_RESULT
from harpe_lab.messages import AssistantMessage, Attachment, ToolCall, ToolResult, ToolResults, Usage, UserInput
from tests._support.data import DATA as FIXTURES

DATA = FIXTURES / "importers"
CC = DATA / "claude_code" / "sess-0001.jsonl"


@pytest.fixture(scope="module")
def cc_conv() -> Conversation:
    return load_claude_code(CC)


@pytest.fixture(scope="module")
def locomo_conv() -> Conversation:
    return load_locomo(DATA / "locomo" / "locomo.json")


@pytest.fixture(scope="module")
def swe_conv() -> Conversation:
    return load_swe_agent(DATA / "swe_agent" / "classic.traj")


def kinds(turn: Turn) -> list[str]:
    return [type(m).__name__ for m in turn.messages]


def calls_answered(c: Conversation) -> bool:
    """Every assistant message with calls is followed by results for exactly those ids."""
    for turn in c.turns:
        msgs = turn.messages
        for i, m in enumerate(msgs):
            if isinstance(m, AssistantMessage) and m.calls:
                nxt = msgs[i + 1] if i + 1 < len(msgs) else None
                answered = [r.id for r in nxt.results][: len(m.calls)] if isinstance(nxt, ToolResults) else []
                if answered != [c.id for c in m.calls]:
                    return False
    return True


class TestClaudeCode:
    @pytest.fixture
    def conv(self, cc_conv) -> Conversation:
        return cc_conv

    def test_turns_start_at_user_inputs_with_record_ids(self, conv):
        assert [t.ids[0] for t in conv.turns] == ["u-0001", "u-0007", "u-0014"]
        assert conv.id == "sess-0001"
        assert conv.metadata["format"] == "claude_code"

    def test_blocks_of_one_api_message_form_one_assistant_message(self, conv):
        first = conv.turns[0]
        assert first.ids[1] == "msg_A"
        reply = first.messages[0]
        assert reply.text == "Let me read the test and run it."
        # the second tool_use block of msg_A was written after the first one's result
        assert [c.id for c in reply.calls] == ["toolu_R1", "toolu_B1"]
        assert kinds(first)[:2] == ["AssistantMessage", "ToolResults"]
        assert [r.id for r in first.messages[1].results] == ["toolu_R1", "toolu_B1"]

    def test_usage_is_counted_once_per_api_message_from_its_last_record(self, conv):
        ids = [i for t in conv.turns for m, i in zip(t.all_messages, t.ids) if isinstance(m, AssistantMessage)]
        assert ids == ["msg_A", "msg_B", "msg_C", "msg_D", "msg_E", "msg_F", "msg_G"]
        assert sum(len(t.usage) for t in conv.turns) == 7
        a = conv.turns[0].usage[0]
        assert a == Usage(input_tokens=3 + 900 + 11000, output_tokens=142, cache_read_tokens=11000,
                          cache_write_tokens=900, provider="anthropic", model="claude-opus-4-6")

    def test_thinking_is_kept_out_of_the_text_but_in_metadata(self, conv):
        assert "timezone" not in conv.turns[0].messages[0].text
        assert conv.turns[0].metadata["thinking"] == ("Probably a timezone issue.",)

    def test_error_results_are_failed_and_list_content_is_joined(self, conv):
        results = {r.id: r for t in conv.turns for m in t.messages if isinstance(m, ToolResults) for r in m.results}
        assert results["toolu_B1"].success is False
        assert results["toolu_E1"].success is False
        assert results["toolu_R1"].success is True
        assert results["toolu_T1"].content == (
            "Two callers: shop/orders.py:12 and shop/reports.py:40.\n\nagentId: abc123")

    def test_interrupt_marker_flags_the_turn_and_is_not_an_input(self, conv):
        assert conv.turns[0].metadata["interrupted"] is True
        assert conv.turns[0].outcome == "answered"  # Claude Code keeps the messages
        assert all("[Request interrupted" not in t.input.text for t in conv.turns)

    def test_consecutive_inputs_merge_and_keep_images_as_attachments(self, conv):
        second = conv.turns[1]
        assert second.input.text.startswith("<local-command-caveat>")
        assert second.input.text.endswith("use local time and fix the test too")
        assert second.metadata["merged_inputs"] == ("u-0008", "u-0009")
        (image,) = second.input.attachments
        assert image.mime == "image/png" and image.size > 0 and image.path == ""

    def test_compaction_is_recorded_not_a_user_turn(self, conv):
        assert conv.compactions == (RecordedCompaction(
            turn=1, summary="This session is being continued from a previous conversation. Summary: the date test "
                            "compared UTC with local time; clock.py and the test now use local time.",
            pre_tokens=151234, trigger="auto", message=3),)
        assert all(not t.input.text.startswith("This session is being continued") for t in conv.turns)
        # the compaction came after the input and the msg_D round (2 messages)
        assert list(conv.metadata["compaction_boundaries"]) == ["c-0001"]

    def test_inline_sidechain_records_are_skipped_and_counted(self, conv):
        assert conv.metadata["sidechain_records"] == 1
        assert "Find every caller" not in " ".join(t.input.text for t in conv.turns)

    def test_subagent_files_are_linked_to_their_task_call(self, conv):
        subs = {s["agent_id"]: s for s in conv.metadata["subagents"]}
        assert set(subs) == {"abc123", "acompact-9f1e2d"}
        assert subs["abc123"]["tool_use_id"] == "toolu_T1"
        assert subs["abc123"]["subagent_type"] == "Explore"
        assert subs["acompact-9f1e2d"]["kind"] == "compaction"
        assert [p.name for p in claude_code_subagents(CC)] == ["agent-abc123.jsonl", "agent-acompact-9f1e2d.jsonl"]

    def test_a_call_without_a_result_gets_a_failed_placeholder(self, conv):
        last = conv.turns[-1]
        assert last.metadata["missing_tool_results"] == 1
        assert last.messages[-1].results == (ToolResult("toolu_G1", MISSING_RESULT, success=False),)
        assert last.ids[-1] == "msg_G:results"
        assert calls_answered(conv)

    def test_a_subagent_file_loads_on_its_own(self):
        sub = load_claude_code(CC.parent / "sess-0001" / "subagents" / "agent-abc123.jsonl")
        assert sub.metadata["sidechain"] is True and sub.id == "abc123"
        assert sub.summary() == {"turns": 1, "messages": 4, "tool_calls": 1, "tool_results": 1, "usage_rows": 2,
                                 "probes": 0}

    def test_a_broken_line_names_the_file_and_line(self, tmp_path):
        lines = CC.read_text().splitlines()
        lines[5] = lines[5][:40]
        bad = tmp_path / "s.jsonl"
        bad.write_text("\n".join(lines) + "\n")
        with pytest.raises(ImportFormatError, match=rf"{re.escape(str(bad))}.*line 6: not JSON"):
            load_claude_code(bad)

    def test_a_user_record_without_a_message_is_an_error_with_its_line(self, tmp_path):
        bad = tmp_path / "s.jsonl"
        bad.write_text(CC.read_text() + json.dumps({"type": "user", "uuid": "z", "sessionId": "s"}) + "\n")
        line = len(CC.read_text().splitlines()) + 1
        with pytest.raises(ImportFormatError, match=rf"line {line}: a user record with no 'message' object"):
            load_claude_code(bad)


class TestOpenAI:
    def test_system_and_developer_become_the_system_prompt(self):
        c = load_openai(DATA / "openai" / "messages.json")
        assert c.system == "You are a travel assistant.\n\nPrices are in EUR."
        assert [t.ids[0] for t in c.turns] == ["m2", "m7"]

    def test_tool_results_are_merged_and_put_in_call_order(self):
        c = load_openai(DATA / "openai" / "messages.json")
        first = c.turns[0]
        assert kinds(first) == ["AssistantMessage", "ToolResults", "AssistantMessage"]
        assert first.messages[0].calls[0].input == {"from": "Lyon", "to": "Turin", "day": "Friday"}
        assert [r.id for r in first.messages[1].results] == ["call_1", "call_2"]  # file order was call_2, call_1
        assert first.ids == ("m2", "m3", "m4", "m6")

    def test_usage_dicts_on_assistant_messages_become_rows(self):
        c = load_openai(DATA / "openai" / "messages.json")
        assert c.turns[0].usage == (Usage(120, 40, 64), Usage(210, 25, 0))
        assert c.turns[1].usage == ()  # its reply recorded none

    def test_image_parts_become_attachments(self):
        c = load_openai(DATA / "openai" / "messages.json")
        (a,) = c.turns[1].input.attachments
        assert c.turns[1].input.text == "Is this the right station?"
        assert a.mime == "image/jpeg" and a.size > 0 and a.path == ""

    def test_a_wrapped_object_keeps_id_and_metadata_and_a_leading_reply_gets_a_synthetic_input(self):
        c = load_openai(DATA / "openai" / "wrapped.json")
        assert c.id == "chat-42"
        assert c.metadata["model"] == "gpt-4o" and c.metadata["title"] == "Weekend plans"
        first = c.turns[0]
        assert first.input == UserInput("") and first.metadata["synthetic_input"] is True
        assert first.ids == ("m0:input", "m0")

    def test_legacy_function_calls_get_ids_their_results_answer(self):
        c = load_openai(DATA / "openai" / "legacy_function.json")
        msgs = c.turns[0].messages
        assert [m.calls[0].id for m in msgs if isinstance(m, AssistantMessage) and m.calls] == ["fc1", "fc3"]
        assert [m.results[0].id for m in msgs if isinstance(m, ToolResults)] == ["fc1", "fc3"]
        assert msgs[2].calls[0].input == {"_raw": "not json {"}
        assert calls_answered(c)

    def test_a_jsonl_file_holds_many_conversations(self):
        all_ = load_openai_all(DATA / "openai" / "many.jsonl")
        assert [c.id for c in all_] == ["a1", "a2", "a3"]
        assert len(all_[1]) == 2 and all_[1].system == "Be terse."
        assert load_openai(DATA / "openai" / "many.jsonl", index="a2") == all_[1]
        assert load_openai(DATA / "openai" / "many.jsonl", index=-1) == all_[2]

    def test_index_errors_say_what_is_there(self):
        with pytest.raises(IndexError, match="holds 3 conversations"):
            load_openai(DATA / "openai" / "many.jsonl", index=3)
        with pytest.raises(KeyError, match="no conversation with id 'zz'.*'a1'"):
            load_openai(DATA / "openai" / "many.jsonl", index="zz")

    def test_an_unknown_role_is_an_error_naming_the_message(self):
        with pytest.raises(ImportFormatError, match=r"bad_role.json: message 1: unknown role 'robot'"):
            load_openai(DATA / "openai" / "bad_role.json")

    def test_messages_in_memory(self):
        c = from_openai_messages([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}], id="x")
        assert c.id == "x" and c.turns[0].messages == (AssistantMessage("hello"),)


class TestShareGPT:
    def test_speakers_system_and_ids(self):
        c = load_sharegpt(DATA / "sharegpt" / "sharegpt.json")
        assert c.id == "sg-1" and c.system == "You are a helpful assistant."
        assert [t.input.text for t in c.turns] == ["Name three prime numbers.", "And the next one?"]
        assert c.turns[1].ids == ("m2", "m3")

    def test_function_call_and_observation_are_a_tool_round(self):
        c = load_sharegpt(DATA / "sharegpt" / "sharegpt.json", index="sg-2")
        call = c.turns[0].messages[0].calls[0]
        assert call == ToolCall("call1.0", "lookup_capital", {"country": "Australia"})
        assert c.turns[0].messages[1].results[0] == ToolResult("call1.0", '{"capital": "Canberra"}')
        assert c.metadata["tools"] == '[{"name": "lookup_capital"}]'

    def test_all_and_jsonl(self):
        assert len(load_sharegpt_all(DATA / "sharegpt" / "sharegpt.json")) == 2
        assert load_sharegpt(DATA / "sharegpt" / "single.jsonl").summary()["messages"] == 2

    def test_an_unknown_speaker_is_an_error(self):
        with pytest.raises(ImportFormatError, match=r"conversations\[1\]: unknown speaker 'narrator'"):
            load_sharegpt(DATA / "sharegpt" / "bad_speaker.json")


class TestLoCoMo:
    @pytest.fixture
    def conv(self, locomo_conv) -> Conversation:
        return locomo_conv

    def test_speaker_a_starts_turns_and_dia_ids_are_message_ids(self, conv):
        assert conv.message_ids() == ["D1:1", "D1:2", "D1:3", "D1:4", "D2:start", "D2:1", "D2:2", "D2:3", "D2:4"]
        assert conv.turns[2].metadata["synthetic_input"] is True
        assert conv.turns[2].metadata["session"] == 2
        assert conv.turns[0].metadata["date_time"] == "9:10 am on 3 March, 2024"

    def test_shared_photos_are_described_in_the_text(self, conv):
        assert conv.turns[1].input.text == "Two years old. Look at her! [shares a photo: a grey cat on a sofa]"

    def test_qa_become_probes_after_the_last_turn(self, conv):
        assert [p.id for p in conv.probes] == ["conv-a:q0", "conv-a:q1", "conv-a:q2"]
        assert {p.asked_at for p in conv.probes} == {len(conv.turns)}
        assert conv.probes[0] == Probe("conv-a:q0", 5, "What is the name of Noor's cat?", "Mochi", ("D1:1",),
                                       "single-hop")

    def test_evidence_lists_are_split_and_unknown_ids_dropped(self, conv):
        assert conv.probes[1].evidence == ("D2:1", "D1:4")
        assert conv.probes[1].answer == "2024" and conv.probes[1].category == "temporal"
        assert conv.probes[2].evidence == ("D2:2",)
        assert conv.metadata["unknown_evidence"] == {"conv-a:q2": ("D9:9",)}

    def test_adversarial_questions_are_answered_not_mentioned(self, conv):
        p = conv.probes[2]
        assert p.category == "adversarial" and p.answer == "Not mentioned in the conversation"
        assert conv.metadata["adversarial_answers"] == {"conv-a:q2": "a vase"}

    def test_samples_by_id_and_all(self):
        assert load_locomo(DATA / "locomo" / "locomo.json", index="conv-b").summary()["turns"] == 1
        assert [c.id for c in load_locomo_all(DATA / "locomo" / "locomo.json")] == ["conv-a", "conv-b"]


def _realtalk(path: Path, **extra) -> Path:
    """A REALTALK-shaped chat of our own writing: top-level session lists, ``clean_text``,
    a speaker whose name changes case, an image shared as a URL, LoCoMo-style QA."""
    sample = {
        "session_1_date_time": "Mon, 4 Aug 2025",
        "session_1": [
            {"speaker": "Ines", "dia_id": "D1:1", "clean_text": "morning! did the plums ripen?",
             "text": "morning!! did the plums ripen??"},
            {"speaker": "Bruno", "dia_id": "D1:2", "clean_text": "two of them, the rest are still green"},
            {"speaker": "ines", "dia_id": "D1:3", "clean_text": "look what I baked",
             "img_url": ["https://example.org/plum-tart.jpg"]},
        ],
        "session_2": [
            {"speaker": "Bruno", "dia_id": "D2:1", "clean_text": "the tart recipe please", "date_time": "Wed, 6 Aug 2025"},
            {"speaker": "INES", "dia_id": "D2:2", "clean_text": "it is my grandmother's, from Braga"},
        ],
        "qa": [
            {"question": "Where is Ines's grandmother from?", "answer": "Braga", "evidence": ["D2:2"], "category": 1},
            {"question": "What did Ines bake?", "answer": "a plum tart", "evidence": ["D1:3; D9:1"], "category": 4},
        ],
        **extra,
    }
    path.write_text(json.dumps(sample), encoding="utf-8")
    return path


class TestRealTalk:
    @pytest.fixture
    def conv(self, tmp_path) -> Conversation:
        return load_any(_realtalk(tmp_path / "Chat_9_Ines_Bruno.json"))

    def test_load_any_recognises_the_variant_and_says_so(self, conv, tmp_path):
        assert conv.metadata["format"] == "locomo" and conv.metadata["variant"] == "realtalk"
        assert detect_format(tmp_path / "Chat_9_Ines_Bruno.json") == "locomo"
        assert conv.id == "Chat_9_Ines_Bruno"
        assert (conv.metadata["speaker_a"], conv.metadata["speaker_b"]) == ("Ines", "Bruno")

    def test_messages(self, conv):
        # Ines opens, so she plays the user, whatever the case of her name
        assert conv.message_ids() == ["D1:1", "D1:2", "D1:3", "D2:start", "D2:1", "D2:2"]
        assert [t.input.text for t in conv.turns] == [
            "morning! did the plums ripen?",  # clean_text, not text
            "look what I baked [shares a photo: https://example.org/plum-tart.jpg]",
            "",
            "it is my grandmother's, from Braga",
        ]
        assert [m.text for m in conv.turns[0].messages] == ["two of them, the rest are still green"]
        assert conv.turns[2].metadata["synthetic_input"] is True
        assert [m.text for m in conv.turns[2].messages] == ["the tart recipe please"]
        assert conv.turns[0].metadata["date_time"] == "Mon, 4 Aug 2025"
        assert conv.turns[3].metadata["date_time"] == "Wed, 6 Aug 2025"  # from the utterance
        assert conv.turns[3].metadata["session"] == 2

    def test_probes(self, conv):
        assert conv.probes == (
            Probe("Chat_9_Ines_Bruno:q0", 4, "Where is Ines's grandmother from?", "Braga", ("D2:2",), "multi-hop"),
            Probe("Chat_9_Ines_Bruno:q1", 4, "What did Ines bake?", "a plum tart", ("D1:3",), "single-hop"),
        )
        assert conv.metadata["unknown_evidence"] == {"Chat_9_Ines_Bruno:q1": ("D9:1",)}

    def test_named_speakers_choose_the_user(self, tmp_path):
        conv = load_any(_realtalk(tmp_path / "c.json", name={"speaker_1": "Bruno", "speaker_2": "Ines"}))
        assert conv.turns[0].metadata.get("synthetic_input") is True  # Bruno plays the user; Ines opened
        assert conv.turns[1].input.text == "two of them, the rest are still green"

    def test_missing_dia_ids_are_made_from_the_position(self, tmp_path):
        path = tmp_path / "no_ids.json"
        path.write_text(json.dumps({"session_1": [{"speaker": "A", "clean_text": "hi"},
                                                  {"speaker": "B", "clean_text": "hello"}]}))
        conv = load_any(path)
        assert conv.metadata["variant"] == "realtalk" and conv.message_ids() == ["D1:1", "D1:2"]

    def test_locomo_says_its_variant_too(self, locomo_conv):
        assert locomo_conv.metadata["variant"] == "locomo"

    def test_a_session_that_is_not_a_list_is_not_realtalk(self, tmp_path):
        path = tmp_path / "odd.json"
        path.write_text(json.dumps({"session_1": "hello"}))
        with pytest.raises(ImportFormatError, match=r"locomo: the top-level object: session_1 is not a list"):
            load_any(path)


@pytest.mark.real_data
def test_real_realtalk_if_present(real_data):
    files = sorted((real_data / "realtalk").glob("*.json")) if (real_data / "realtalk").is_dir() else []
    if not files:
        pytest.skip("no REALTALK sample in the shared real data (see its README)")
    conv = load_any(files[0])
    assert conv.metadata["variant"] == "realtalk"
    assert len(conv.turns) > 10 and conv.probes
    known = set(conv.message_ids())
    assert all(set(p.evidence) <= known for p in conv.probes)


class TestLongMemEval:
    def test_has_answer_messages_are_the_evidence_of_the_final_probe(self):
        c = load_longmemeval(DATA / "longmemeval" / "longmemeval.json")
        (p,) = c.probes
        assert p == Probe("q-001", len(c.turns), "Where does the user's sister live now?", "Porto",
                          ("s-aa:0", "s-bb:1"), "knowledge-update")
        assert c.metadata["question_date"] == "2024/06/01 (Sat) 10:00"

    def test_a_session_opening_with_the_assistant_gets_a_synthetic_input(self):
        c = load_longmemeval(DATA / "longmemeval" / "longmemeval.json")
        assert [t.ids[0] for t in c.turns] == ["s-aa:0", "s-bb:start", "s-bb:1"]
        assert c.turns[1].metadata == {"session_id": "s-bb", "date": "2024/05/20 (Mon) 18:30", "synthetic_input": True}
        assert kinds(c.turns[2]) == ["AssistantMessage", "AssistantMessage"]

    def test_abstention_questions_have_no_evidence(self):
        c = load_longmemeval(DATA / "longmemeval" / "longmemeval.json", index="q-002_abs")
        assert c.probes[0].evidence == () and c.probes[0].category == "single-session-user-abstention"


class TestTauBench:
    def test_trajectories_keep_reward_and_pair_reused_call_ids_per_round(self):
        c = load_tau_bench(DATA / "tau_bench" / "tau.json")
        assert c.id == "task7-trial1" and c.metadata["reward"] == 1.0
        assert c.metadata["instruction"] == "You want to cancel reservation ABC123."
        assert c.system == "# Airline policy\nBe helpful."
        assert [t.input.text for t in c.turns] == ["Hi, please cancel my booking ABC123.", "yes", "###STOP###"]
        assert calls_answered(c)
        assert load_tau_bench(DATA / "tau_bench" / "tau.json", index="task8-trial0").metadata["reward"] == 0.0


class TestSweAgent:
    @pytest.fixture
    def conv(self, swe_conv) -> Conversation:
        return swe_conv

    def test_actions_become_tool_calls_answered_by_observations(self, conv):
        task = conv.turns[1]
        assert task.input.text.startswith("ISSUE:")
        call = task.messages[0].calls[0]
        assert call == ToolCall("h3", "search_dir", {"command": 'search_dir "def parse_date"\n'})
        assert task.messages[0].text == "Let's find the function.\n"
        assert task.messages[1].results[0].content.startswith("Found 1 matches")

    def test_the_demonstration_is_its_own_turn(self, conv):
        assert conv.turns[0].metadata == {"demo": True} and conv.turns[0].messages == ()
        assert conv.system.startswith("SETTING:")

    def test_a_reply_without_an_action_is_followed_by_a_new_turn(self, conv):
        assert conv.turns[2].input.text.startswith("Your output was not formatted correctly")

    def test_the_final_submit_without_observation_is_filled(self, conv):
        assert conv.turns[-1].metadata["missing_tool_results"] == 1
        assert conv.metadata["exit_status"] == "submitted"
        assert calls_answered(conv)

    def test_function_calling_and_trajectory_only_files(self):
        fc = load_swe_agent(DATA / "swe_agent" / "function_calling.traj")
        replies = [m for m in fc.turns[0].messages if isinstance(m, AssistantMessage)]
        assert [m.calls[0].id for m in replies] == ["call_f1", "call_f2"]
        assert fc.turns[0].input.text == "ISSUE: missing colon in tests/missing_colon.py"
        only = load_swe_agent(DATA / "swe_agent" / "trajectory_only.traj")
        assert only.turns[0].metadata["synthetic_input"] is True
        outputs = [m.results[0].content for m in only.turns[0].messages if isinstance(m, ToolResults)]
        assert outputs == ["README.md\nsrc/", "# demo"]


class TestToolBench:
    def test_the_longest_chain_is_read(self):
        c = load_toolbench(DATA / "toolbench" / "answer.json")
        assert c.summary() == {"turns": 1, "messages": 5, "tool_calls": 2, "tool_results": 2, "usage_rows": 0,
                               "probes": 0}
        assert c.metadata["win"] is True and c.metadata["total_tokens"] == 1800
        assert c.turns[0].messages[0].calls[0] == ToolCall("fc2", "mountain_info", {"name": "Fuji"})

    def test_a_failed_run_is_read_from_the_deepest_path_of_its_tree(self):
        c = load_toolbench(DATA / "toolbench" / "failed.json")
        assert c.metadata["path_from"] == "tree" and c.metadata["win"] is False
        assert c.turns[0].input.text == "What's the weather in Oslo this week?"
        assert [m.calls[0] for m in c.turns[0].messages if isinstance(m, AssistantMessage)] == [
            ToolCall("node1", "weather_now", {"city": "Oslo"}), ToolCall("node3", "weather_week", {"city": "Oslo"})]
        assert c.turns[0].messages[-1].results[0].content == '{"error": "timeout", "response": ""}'


class TestCodex:
    def test_rollout_items_become_turns_with_usage_and_a_compaction(self):
        c = load_codex(DATA / "codex" / "rollout.jsonl")
        assert c.id == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b" and c.system == "Follow the repository's AGENTS.md."
        first, second = c.turns
        assert first.input.text.endswith("why does `make build` fail?") and first.metadata["merged_inputs"] == ("l3",)
        assert first.metadata["reasoning"] == ("**Checking the build output**",)
        assert kinds(first) == ["AssistantMessage", "ToolResults", "AssistantMessage"]
        assert first.messages[1].results[0].success is False  # exit code 2
        assert first.messages[1].results[0].content.startswith("gcc: error")
        # the duplicated token_count event is not a second row
        assert first.usage == (Usage(4200, 60, 3000, 0, "openai", "gpt-5-codex"),
                               Usage(4400, 35, 4100, 0, "openai", "gpt-5-codex"))
        assert second.messages[0].calls[0].name == "apply_patch"
        assert c.compactions[0].summary.startswith("The user asked why make build fails")
        # the window a rollout states is Codex's effective one, 95% of the model's
        assert (c.metadata["context_window"], c.metadata["model_window"]) == (258_400, 272_000)

    def test_legacy_rollouts_without_an_envelope(self):
        c = load_codex(DATA / "codex" / "legacy.jsonl")
        assert c.summary() == {"turns": 1, "messages": 4, "tool_calls": 1, "tool_results": 1, "usage_rows": 0,
                               "probes": 0}
        assert c.turns[0].messages[1].results[0].content == "a.txt\nb.txt\n"


def _rich_conversation() -> Conversation:
    att = Attachment("plan.pdf", 2048, "application/pdf", "/tmp/plan.pdf")
    t0 = Turn(UserInput("hello", (att,), pinned=True),
              (AssistantMessage("calling", (ToolCall("c1", "f", {"a": [1, 2, {"b": None}]}),)),
               ToolResults((ToolResult("c1", "out", (att,), success=False),)), AssistantMessage("done", pinned=True)),
              usage=(Usage(10, 2, 1, 3, "p", "m"), Usage(20, 4)), ids=("a", "b", "c", "d"),
              metadata={"k": (1, {"x": 2})})
    t1 = Turn(UserInput("again"), outcome="failed", error="boom", ids=("e",))
    return Conversation((t0, t1), id="rich", source="here", metadata={"format": "openai", "n": 3},
                        probes=(Probe("p", 2, "q?", "a", ("a", "c"), "cat"),),
                        compactions=(RecordedCompaction(1, "sum", 99, "auto"),), system="sys")


class TestNativeFormat:
    def test_save_then_load_gives_the_same_conversation(self, tmp_path):
        c = _rich_conversation()
        back = load_conversation(save_conversation(c, tmp_path / "sub" / "c.json"))
        assert back.turns == c.turns and back.probes == c.probes and back.compactions == c.compactions
        assert back.system == "sys" and back.id == "rich" and back.source == "here"
        assert back.metadata["format"] == "harpe_lab" and back.metadata["source_format"] == "openai"
        assert detect_format(tmp_path / "sub" / "c.json") == "harpe_lab"

    def test_one_turn_per_line(self, tmp_path):
        path = save_conversation(_rich_conversation(), tmp_path / "c.json")
        lines = path.read_text().splitlines()
        assert sum(1 for line in lines if line.startswith('{"ids"')) == 2

    def test_a_bad_message_is_reported_with_its_turn(self, tmp_path):
        path = save_conversation(_rich_conversation(), tmp_path / "c.json")
        path.write_text(path.read_text().replace('"role": "tool_results"', '"role": "robot"'))
        with pytest.raises(ImportFormatError, match=r"turns\[0\] messages\[1\]: unknown role 'robot'"):
            load_conversation(path)

    def test_a_mistyped_field_shows_the_value(self, tmp_path):
        path = save_conversation(_rich_conversation(), tmp_path / "c.json")
        path.write_text(path.read_text().replace('"asked_at": 2', '"asked_at": "two"'))
        with pytest.raises(ImportFormatError, match=r"probes\[0\]: 'asked_at' must be a integer, got str \"two\""):
            load_conversation(path)


FIXTURE_FORMATS = {
    "claude_code/sess-0001.jsonl": "claude_code",
    "openai/messages.json": "openai",
    "openai/wrapped.json": "openai",
    "openai/many.jsonl": "openai",
    "sharegpt/sharegpt.json": "sharegpt",
    "sharegpt/single.jsonl": "sharegpt",
    "locomo/locomo.json": "locomo",
    "longmemeval/longmemeval.json": "longmemeval",
    "tau_bench/tau.json": "tau_bench",
    "swe_agent/classic.traj": "swe_agent",
    "swe_agent/trajectory_only.traj": "swe_agent",
    "toolbench/answer.json": "toolbench",
    "toolbench/failed.json": "toolbench",
    "codex/rollout.jsonl": "codex",
    "codex/legacy.jsonl": "codex",
    "harpe/journal.jsonl": "harpe",
}


class TestPublicNames:
    def test_every_exported_name_exists(self):
        import harpe_lab.importers as importers

        assert sorted(importers.__all__) == sorted(set(importers.__all__))
        for name in importers.__all__:
            assert getattr(importers, name) is not None, name
        assert set(FORMATS) == {"harpe", "harpe_lab", "claude_code", "codex", "locomo", "longmemeval", "tau_bench",
                                "swe_agent", "toolbench", "sharegpt", "openai", "cline", "gemini_cli", "aider"}


class TestLoadAny:
    @pytest.mark.parametrize("name,fmt", FIXTURE_FORMATS.items(), ids=list(FIXTURE_FORMATS))
    def test_sniffs_the_format_and_says_so(self, name, fmt):
        assert detect_format(DATA / name) == fmt
        c = load_any(DATA / name)
        assert c.metadata["format"] == fmt
        assert c.source == str(DATA / name)

    def test_load_all_returns_every_conversation(self):
        assert len(load_all(DATA / "locomo" / "locomo.json")) == 2
        assert len(load_all(DATA / "openai" / "many.jsonl")) == 3
        assert len(load_all(CC)) == 1

    def test_index_picks_one_of_many(self):
        assert load_any(DATA / "tau_bench" / "tau.json", index=1).id == "task8-trial0"
        with pytest.raises(IndexError, match="holds one conversation"):
            load_any(CC, index=2)

    def test_a_named_format_skips_sniffing(self):
        c = load_any(DATA / "tau_bench" / "tau.json", format="tau_bench")
        assert c.metadata["format"] == "tau_bench"
        with pytest.raises(ValueError, match=r"format must be one of .*'openai'.*but 'xml' was passed"):
            load_any(CC, format="xml")

    def test_a_harpe_journal_is_read_by_load_harpe(self):
        c = load_any(DATA / "harpe" / "journal.jsonl")
        assert c.turns[0].messages == (AssistantMessage("Lima."),)
        assert c.turns[0].usage[0].input_tokens == 320


class TestUnknownFormat:
    def test_the_error_lists_every_format_tried_with_the_first_record_that_failed(self):
        path = DATA / "unknown" / "notes.json"
        with pytest.raises(ImportFormatError) as info:
            load_any(path)
        message = str(info.value)
        assert message.startswith(f"{path}: not a transcript in any format harpe_lab reads")
        for fmt in FORMATS:
            assert f"\n  {fmt}: " in message
        assert "  claude_code: line 1: a record with no 'type' string" in message
        assert "  openai: the top-level object has no 'messages' list" in message
        assert "  locomo: the top-level object: has no 'conversation' object" in message
        assert "Convert it to OpenAI chat messages" in message

    def test_json_lines_of_unknown_records_name_their_line(self):
        with pytest.raises(ImportFormatError) as info:
            load_any(DATA / "unknown" / "records.jsonl")
        message = str(info.value)
        assert "  harpe: line 1: no 'time' key" in message
        assert "  sharegpt: line 1: has no 'conversations' list" in message
        assert "  tau_bench: a JSON Lines file, not one JSON document" in message

    def test_the_first_bad_record_is_named_not_the_first_record(self, tmp_path):
        path = tmp_path / "chat.json"
        path.write_text(json.dumps([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                    {"speaker": "x", "content": "c"}]))
        expected = r"openai: the top-level list item 2: has no 'role' key \(keys: speaker, content\)"
        with pytest.raises(ImportFormatError, match=expected):
            load_any(path)

    def test_a_truncated_file_names_the_broken_line(self):
        expected = r"truncated.jsonl: neither a JSON document .* nor JSON Lines \(line 2: not JSON"
        with pytest.raises(ImportFormatError, match=expected):
            load_any(DATA / "unknown" / "truncated.jsonl")

    def test_empty_missing_and_folder_paths(self, tmp_path):
        with pytest.raises(ImportFormatError, match="the file is empty"):
            load_any(DATA / "unknown" / "empty.json")
        with pytest.raises(FileNotFoundError, match="no such transcript file"):
            load_any(tmp_path / "nope.json")
        with pytest.raises(ImportFormatError, match="is a folder"):
            load_any(tmp_path)

    def test_a_specific_loader_explains_why_the_file_is_not_its_format(self):
        with pytest.raises(ImportFormatError, match=r"not a LoCoMo file: record 0: has no 'conversation' object"):
            load_locomo(DATA / "tau_bench" / "tau.json")
        with pytest.raises(ImportFormatError, match=r"not a Claude Code session: line 1: a record with no 'type'"):
            load_claude_code(DATA / "harpe" / "journal.jsonl")


def _write(path: Path, text: str = "{}\n", mtime: float | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return path


class TestDiscover:
    @pytest.fixture
    def home(self, tmp_path, monkeypatch):
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
        monkeypatch.delenv("CODEX_HOME", raising=False)
        projects = tmp_path / ".claude" / "projects"
        _write(projects / "-home-ana-shop" / "sess-1.jsonl", "x" * 120, mtime=1_700_000_000)
        _write(projects / "-home-ana-blog" / "sess-2.jsonl", "y" * 10, mtime=1_700_000_500)
        _write(projects / "-home-ana-shop" / "sess-1" / "subagents" / "agent-abc.jsonl", "z", mtime=1_700_000_100)
        _write(projects / "-home-ana-shop" / "notes.txt", "not a session")
        _write(tmp_path / ".codex" / "sessions" / "2025" / "09" / "02" /
               "rollout-2025-09-02T08-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl", "c" * 50, mtime=1_700_000_900)
        return tmp_path

    def test_lists_claude_code_and_codex_sessions_newest_first(self, home):
        found = discover()
        assert [(s.tool, s.session_id) for s in found] == [
            ("codex", "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"), ("claude_code", "sess-2"), ("claude_code", "sess-1")]
        shop = found[2]
        assert shop == SessionFile(home / ".claude" / "projects" / "-home-ana-shop" / "sess-1.jsonl", "claude_code",
                                   "-home-ana-shop", "sess-1", 120, shop.modified)
        assert shop.modified.timestamp() == 1_700_000_000 and shop.modified.tzinfo is not None
        assert found[0].project == "2025/09/02"

    def test_subagents_on_request(self, home):
        subs = [s for s in discover(subagents=True) if s.subagent]
        assert [(s.session_id, s.path.name) for s in subs] == [("sess-1", "agent-abc.jsonl")]

    def test_to_frame(self, home):
        frame = discover().to_frame()
        assert list(frame.columns) == ["tool", "project", "session_id", "subagent", "size", "modified", "path"]
        assert frame["size"].tolist() == [50, 10, 120]

    def test_config_dir_variables_are_honoured(self, home, tmp_path, monkeypatch):
        other = tmp_path / "elsewhere"
        _write(other / "projects" / "p" / "moved.jsonl")
        monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(other))
        assert [s.session_id for s in discover() if s.tool == "claude_code"] == ["moved"]

    def test_no_tool_folders_means_no_rows(self, tmp_path, monkeypatch):
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
        monkeypatch.delenv("CODEX_HOME", raising=False)
        assert discover(home=tmp_path) == []
        assert len(discover(home=tmp_path).to_frame()) == 0

    def test_found_sessions_load(self, tmp_path, monkeypatch):
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
        _write(tmp_path / ".claude" / "projects" / "p" / "sess-0001.jsonl", CC.read_text())
        (found,) = discover(home=tmp_path)
        assert load_any(found.path).summary()["turns"] == 3


class TestJournalRoundTrip:
    """import → to_journal → load_harpe gives back the same turns, outcomes and messages."""

    @pytest.mark.parametrize("name", ["claude_code/sess-0001.jsonl", "openai/messages.json", "tau_bench/tau.json",
                                      "swe_agent/classic.traj", "codex/rollout.jsonl", "locomo/locomo.json",
                                      "toolbench/answer.json", "sharegpt/sharegpt.json"])
    def test_round_trip(self, name, tmp_path):
        from harpe_lab.importers.harpe import load_harpe, to_journal
        from harpe_lab.journal import Journal

        c = load_any(DATA / name)
        path = to_journal(c, tmp_path / "j.jsonl")
        back = load_harpe(path)
        assert [t.input for t in back.turns] == [t.input for t in c.turns]
        assert [t.messages for t in back.turns] == [t.messages for t in c.turns]
        assert [t.outcome for t in back.turns] == [t.outcome for t in c.turns]
        assert [t.usage for t in back.turns] == [t.usage for t in c.turns]
        assert len(Journal.records(path)) == len(c.turns)


_roles = st.sampled_from(["user", "assistant", "assistant_calls", "tool", "system"])


@st.composite
def openai_chats(draw):
    out, pending, n = [], [], 0
    for role in draw(st.lists(_roles, min_size=1, max_size=25)):
        if role == "assistant_calls":
            k = draw(st.integers(1, 3))
            ids = [f"call_{n + j}" for j in range(k)]
            n += k
            out.append({"role": "assistant", "content": draw(st.text(max_size=5)), "tool_calls": [
                {"id": i, "type": "function", "function": {"name": "f", "arguments": "{}"}} for i in ids]})
            pending = ids
        elif role == "tool":
            if pending:
                out.append({"role": "tool", "tool_call_id": pending.pop(), "content": draw(st.text(max_size=5))})
        else:
            out.append({"role": role, "content": draw(st.text(max_size=5))})
    return out


class TestOpenAIProperties:
    @settings(max_examples=60, deadline=None)
    @given(openai_chats())
    def test_every_message_lands_once_and_every_call_is_answered(self, chat):
        c = from_openai_messages(chat)
        users = sum(m["role"] == "user" for m in chat)
        assistants = sum(m["role"] == "assistant" for m in chat)
        synthetic = sum(1 for t in c.turns if t.metadata.get("synthetic_input"))
        assert len(c.turns) == users + synthetic
        assert sum(isinstance(m, AssistantMessage) for m in c.messages()) == assistants
        assert sum(len(m.results) for m in c.messages() if isinstance(m, ToolResults)) == (
            sum(m["role"] == "tool" for m in chat) + sum(t.metadata.get("missing_tool_results", 0) for t in c.turns))
        assert calls_answered(c)
        assert len(set(c.message_ids())) == len(c.message_ids())
