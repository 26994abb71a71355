"""Reading Harpe journals: every generation (hand-written golden files), Harpe's turn rules,
history, usage, the importer and the ``harpe-lab journal`` commands."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from harpe_lab.cli import main
from harpe_lab.strategies.harpe import truncate
from harpe_lab.errors import JournalError, MissingJournalError
from harpe_lab.journal import (
    Entry,
    Journal,
    JsonlLogger,
    TurnData,
    TurnLog,
    TurnRecord,
    decode_message,
    read_entries,
)
from harpe_lab.messages import Attachment, ToolCall, ToolResults, Usage, UserInput
from tests._support.builders import reply, result, user
from tests._support.data import DATA, ROOT, SHARED

GOLDEN = DATA / "journals"
EXAMPLE = SHARED / "docs" / "harpe-format-example.jsonl"


@pytest.fixture
def example() -> Path:
    """The specification's example journal, read by path from ../shared (skip when absent)."""
    if not EXAMPLE.is_file():
        pytest.skip(f"{EXAMPLE} is absent")
    return EXAMPLE


def usage(i, o, r=0, w=0, provider="", model=""):
    return Usage(i, o, r, w, provider, model)


def summary(records):
    """What a user relies on, per record, in one comparable tuple."""
    return [(r.data.input, r.data.messages, r.data.outcome, r.data.error, r.usage, r.terminated) for r in records]


def write(tmp_path, lines, name="j.jsonl"):
    p = tmp_path / name
    p.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return p


T0 = "2026-01-01T00:00:00.000000Z"


def rec(event, fields=None, context=(), time=T0):
    return {"time": time, "event": event, "fields": fields or {}, "context": list(context)}


def user_msg(text, turn, *outer):
    return rec("harpe.turn.message", {"role": "user", "text": text, "attachments": []}, [*outer, f"harpe.turn.id={turn}"])


def asst_msg(text, turn, *outer):
    return rec("harpe.turn.message", {"role": "assistant", "text": text, "calls": []}, [*outer, f"harpe.turn.id={turn}"])


def end(kind, turn, *outer, **fields):
    return rec(f"harpe.turn.{kind}", fields, [*outer, f"harpe.turn.id={turn}"])


REQ = rec("harpe.turn.request", {"data": {"text": "q"}})
RESP = rec("harpe.turn.response", {"data": "turnEnd"})
T1, T2, T3 = "1" * 16, "2" * 16, "3" * 16


# --- golden journals, one per generation -------------------------------------------------


class TestSharedExample:
    """The specification's own example (§6): two records, then a fragment."""

    def test_records(self, example):
        records = Journal.records(example)
        assert [r.data.outcome for r in records] == ["answered", "failed"]
        assert [len(r.data.messages) for r in records] == [3, 0]
        assert records[1].data.error == "AuthenticationError: bad key"
        assert records[0].usage == (usage(1834, 61, 1500, 0, "anthropic", "claude-opus-4-6"),)
        assert records[1].data.input.attachments == (
            Attachment("report.pdf", 48213, "application/pdf", "/srv/agent/data/report.pdf"),)
        assert records.reader == "brackets" and records.generations == ("G5",)
        assert [n.line for n in records.notes] == [21]  # the unclosed fragment

    def test_history(self, example):
        kinds = [m.role for m in Journal.load(example)]
        assert kinds == ["user", "assistant", "tool_results", "assistant", "user"]

    def test_nested_subagent_turn_is_excluded(self, example):
        first = Journal.records(example)[0]
        assert first.data.messages == (
            reply("I'll delegate.", ToolCall("toolu_01", "delegate", {"task": "2+2", "depth": 1})),
            ToolResults((result("toolu_01", "4"),)),
            reply("2+2 = 4."),
        )
        assert first.turn_id == "3f9c0a1b2c3d4e5f"


GOLDEN_EXPECTED = {
    "g1.jsonl": dict(
        generations=("G1",), reader="brackets",
        records=[
            (user("list files", Attachment("notes.txt", 12, "text/plain", "")),
             (reply("Listing.", ToolCall("toolu_1", "ls", {"dir": "."})),
              ToolResults((result("toolu_1", "a.txt\nb.txt"),)), reply("Two files.")),
             "answered", "", (usage(120, 30, model="claude-3-opus"), usage(170, 12, model="claude-3-opus")), True),
            # the nested (positional) subagent turn is skipped; failed has no error field
            (user("ask the helper"), (), "failed", "", (), True),
        ],
        history=["user", "assistant", "tool_results", "assistant", "user"],
    ),
    "g2.jsonl": dict(
        generations=("G2",), reader="brackets",
        records=[
            (user("hello"), (reply("Hi!"),), "answered", "", (usage(50, 5, model="gpt-4o"),), True),
            (user("stop"), (), "interrupted", "", (), True),
            # no terminator: interrupted, messages kept
            (user("crash"), (reply("Partial"),), "interrupted", "", (usage(80, 9, model="gpt-4o"),), False),
        ],
        history=["user", "assistant", "user", "user"],
        notes=[1, 9, 20],  # discarded span, orphan response, bracket without a turn
    ),
    "g3.jsonl": dict(
        generations=("G2", "G3"), reader="brackets",  # G3 omits an empty context: such lines read as G2
        records=[
            (user("weather?"),
             (reply("Checking.", ToolCall("call_9", "weather", {"city": "Zürich"})),
              ToolResults((result("call_9", "Sunny, 21°C"),)),
              reply("Sunny.")),
             "answered", "", (usage(40, 20, model="gpt-4o-mini"), usage(75, 8, model="gpt-4o-mini")), True),
            (user("again"), (), "failed", "RateLimitError: 429", (), True),
        ],
        history=["user", "assistant", "tool_results", "assistant", "user"],
    ),
    "g4.jsonl": dict(
        generations=("G4",), reader="brackets",
        records=[
            (user("summarise the repo"),
             (reply("Delegating to a reader.",
                    ToolCall("call_A", "subagent", {"task": "read README", "limits": {"pages": 2, "deep": False}})),
              ToolResults((result("call_A", "README: a library for agents."),)),
              reply("It is a library for building agents — résumé: small.")),
             "answered", "", (usage(900, 40, 0, 0, "openai", "gpt-4.1"), usage(1000, 25, 896, 0, "openai", "gpt-4.1")),
             True),
            (user("long job"), (), "interrupted", "", (), True),
        ],
        history=["user", "assistant", "tool_results", "assistant", "user"],
    ),
    "g4b.jsonl": dict(
        generations=("G4b",), reader="brackets",
        records=[
            (user("compare a and b"),
             (reply("Reading both in parallel.", ToolCall("call_1", "reader", {"file": "a"}),
                    ToolCall("call_2", "reader", {"file": "b"})),
              ToolResults((result("call_1", "a says 1"), result("call_2", "b says 2"))), reply("a=1, b=2")),
             "answered", "",
             (usage(500, 50, 0, 480, "anthropic", "claude-sonnet-4-5"),
              usage(700, 20, 480, 0, "anthropic", "claude-sonnet-4-5")), True),
            (user("again"), (), "failed", "", (), True),
        ],
        history=["user", "assistant", "tool_results", "assistant", "user"],
    ),
    "g5.jsonl": dict(
        generations=("G5",), reader="brackets",
        records=[
            (user("Read report.pdf and run foo — please",
                  Attachment("report.pdf", 48213, "application/pdf", "/srv/data/report.pdf")),
             (reply("I'll read it.\n",
                    ToolCall("toolu_A", "read_pdf", {"path": "/srv/data/report.pdf", "pages": [1, 2],
                                          "opts": {"ocr": False, "lang": "fr", "dpi": 1.5}}),
                    ToolCall("toolu_B", "foo", {})),
              ToolResults((result("toolu_A", "Le rapport était clair.",
                                  Attachment("page1.png", 1024, "image/png", "/tmp/page1.png")),
                result("toolu_B", "Unknown tool: foo", success=False))),
              reply("The report was clear.")),
             "answered", "",
             (usage(2000, 100, 1500, 200, "anthropic", "claude-opus-4-6"),
              usage(2600, 50, 2000, 0, "anthropic", "claude-opus-4-6")), True),
            (user("and now crash"), (reply("Thinking…", ToolCall("toolu_C", "bash", {"cmd": "rm -rf /tmp/x"})),),
             "interrupted", "",
             (usage(3000, 10, 0, 0, "anthropic", "claude-opus-4-6"),), False),
            (user("cancel me"), (), "interrupted", "", (), True),
        ],
        history=["user", "assistant", "tool_results", "assistant", "user", "user"],
        notes=[None],  # the cron turn outside any bracket
    ),
    "sessionlog.jsonl": dict(
        generations=("SessionLog",), reader="sessionlog",
        records=[
            (user("hi there", Attachment("cat.png", 2048, "image/png", "")),
             (reply("Let me look.", ToolCall("toolu_x", "describe", {"image": "cat.png"})),
              ToolResults((result("toolu_x", "a cat", Attachment("crop.png", 100, "image/png", "")),)),
              reply("It is a cat.")),
             "answered", "", (), True),
            (user("thanks"), (reply("You're welcome."),), "answered", "", (), True),
        ],
        history=["user", "assistant", "tool_results", "assistant", "user", "assistant"],
    ),
    "fold.jsonl": dict(
        generations=("G2",), reader="fold",
        records=[
            (user("one"), (reply("1"),), "answered", "", (usage(10, 1, model="m"),), True),
            (user("two"), (reply("partial"),), "interrupted", "", (), False),  # cut off by the next started
            (user("three"), (), "failed", "boom", (), True),
            (user("four"), (reply("4"),), "interrupted", "", (), False),
        ],
        history=["user", "assistant", "user", "user", "user"],
    ),
}


class TestGolden:
    """Hand-written journals of every generation, read by path and through `read_entries`."""

    @pytest.mark.parametrize("name", sorted(GOLDEN_EXPECTED))
    def test_records(self, name):
        expected = GOLDEN_EXPECTED[name]
        records = Journal.records(GOLDEN / name)
        assert summary(records) == expected["records"]
        assert records.generations == expected["generations"]
        assert records.reader == expected["reader"]
        assert [n.line for n in records.notes] == expected.get("notes", [])
        assert records.problems == ()

    @pytest.mark.parametrize("name", sorted(GOLDEN_EXPECTED))
    def test_history(self, name):
        assert [m.role for m in Journal.load(GOLDEN / name)] == GOLDEN_EXPECTED[name]["history"]

    @pytest.mark.parametrize("name", sorted(GOLDEN_EXPECTED))
    def test_entries_path_reads_the_same(self, name):
        by_path = Journal.records(GOLDEN / name)
        by_entries = Journal.records(read_entries(GOLDEN / name))
        assert list(by_entries) == list(by_path)
        assert by_entries.notes == by_path.notes and by_entries.generations == by_path.generations

    def test_history_is_users_plus_answered_messages(self):
        records = Journal.records(GOLDEN / "g5.jsonl")
        expected = []
        for r in records:
            expected.append(r.data.input)
            if r.data.outcome == "answered":
                expected.extend(r.data.messages)
        assert Journal.load(GOLDEN / "g5.jsonl") == expected

    def test_request_and_response_payloads(self):
        records = Journal.records(GOLDEN / "g5.jsonl")
        assert records[1].request == {"text": "and now crash"}
        assert records[1].response == {"error": "RuntimeError in compact"}
        assert Journal.records(GOLDEN / "g2.jsonl")[0].lines == (3, 8)

    def test_turn_ids_and_subagent_usage(self):
        g4 = Journal.records(GOLDEN / "g4.jsonl")
        assert [r.turn_id for r in g4] == ["1111aaaa2222bbbb", "5555eeee6666ffff"]
        assert g4[0].nested_usage == (usage(300, 60, 0, 0, "openai", "gpt-4.1-mini"),)
        g4b = Journal.records(GOLDEN / "g4b.jsonl")
        assert g4b[0].turn_id == "aaaa000000000001"
        assert [u.input_tokens for u in g4b[0].nested_usage] == [120]

    def test_times_are_aware_utc(self):
        r = Journal.records(GOLDEN / "g5.jsonl")[0]
        assert r.started == datetime(2026, 1, 2, 3, 4, 6, tzinfo=timezone.utc)
        s = Journal.records(GOLDEN / "sessionlog.jsonl")[0]
        assert s.started == datetime.fromtimestamp(1700000000.25, tz=timezone.utc)


class TestNormalForm:
    """Every generation's scopes become ``key=value`` strings, outermost first."""

    def entry(self, name, line):
        return next(e for e in read_entries(GOLDEN / name) if e.line == line)

    def test_g1_category_and_driver_field(self):
        e = self.entry("g1.jsonl", 1)
        assert (e.generation, e.event, e.context) == ("G1", "app.started", ())
        assert dict(e.fields) == {"context": {"session": "s1"}}  # withContext(key, map) is a plain field

    def test_g3_list_is_reversed(self):
        e = self.entry("g3.jsonl", 5)
        assert e.generation == "G3"
        assert e.context == ("session=s3", "tool=weather")
        assert dict(e.fields) == {"city": "Zürich"}

    def test_g4_object_scopes_are_reversed(self):
        e = self.entry("g4.jsonl", 6)
        assert e.context == ("app.session=7", "harpe.turn.id=1111aaaa2222bbbb", "harpe.tools.call=call_A",
                             "harpe.turn.id=3333cccc4444dddd")
        assert e.turns == ("1111aaaa2222bbbb", "3333cccc4444dddd") and e.depth == 2

    def test_string_scopes_are_kept_as_written(self):
        e = self.entry("g4b.jsonl", 5)
        assert e.context[0] == "harpe.turn.id=bbbb000000000002"  # G4b: innermost first, as written
        e = self.entry("g5.jsonl", 10)
        assert e.context[-1] == "harpe.tools.call=toolu_A"

    def test_sessionlog_line(self):
        e = self.entry("sessionlog.jsonl", 3)
        assert (e.generation, e.event) == ("SessionLog", "harpe.sessionlog.message")
        assert e.time == datetime.fromtimestamp(1700000002, tz=timezone.utc)
        assert isinstance(e.message(), ToolResults)

    def test_reader_reports_generations(self):
        reader = read_entries(GOLDEN / "g3.jsonl")
        assert len(list(reader)) == 14 and reader.generations == ("G2", "G3") and reader.problems == ()

    def test_entry_round_trips_to_g5_dict(self):
        e = self.entry("g5.jsonl", 4)
        assert e.to_dict() == json.loads((GOLDEN / "g5.jsonl").read_text().splitlines()[3])

    def test_entry_validates(self):
        with pytest.raises(TypeError, match="aware datetime"):
            Entry(datetime(2026, 1, 1), "x")
        with pytest.raises(TypeError, match="scope strings"):
            Entry(datetime(2026, 1, 1, tzinfo=timezone.utc), "x", {}, (1,))


class TestTurnRules:
    """Harpe's ``Journal.records`` rules (§3.2–§3.4), one behaviour each."""

    def test_positional_pairing_and_second_request_discards(self, tmp_path):
        p = write(tmp_path, [REQ, user_msg("lost", T1), REQ, user_msg("kept", T2), end("answered", T2), RESP, RESP])
        records = Journal.records(p)
        assert [r.data.input.text for r in records] == ["kept"]
        assert [n.line for n in records.notes] == [1, 7]

    def test_unterminated_turn_keeps_messages(self, tmp_path):
        p = write(tmp_path, [REQ, user_msg("u", T1), asst_msg("half", T1), RESP])
        (r,) = Journal.records(p)
        assert (r.data.outcome, r.data.messages, r.terminated) == ("interrupted", (reply("half"),), False)
        assert Journal.load(p) == [user("u")]

    def test_interrupted_and_failed_drop_messages(self, tmp_path):
        p = write(tmp_path, [REQ, user_msg("a", T1), asst_msg("x", T1), end("interrupted", T1), RESP,
                             REQ, user_msg("b", T2), asst_msg("y", T2), end("failed", T2, error="E"), RESP])
        assert summary(Journal.records(p)) == [(user("a"), (), "interrupted", "", (), True),
                                               (user("b"), (), "failed", "E", (), True)]

    def test_first_terminator_wins_and_later_messages_count(self, tmp_path):
        p = write(tmp_path, [REQ, user_msg("a", T1), end("answered", T1), asst_msg("late", T1),
                             end("failed", T1, error="no"), RESP])
        (r,) = Journal.records(p)
        assert (r.data.outcome, r.data.messages) == ("answered", (reply("late"),))

    def test_second_user_message_of_a_turn_is_dropped(self, tmp_path):
        p = write(tmp_path, [REQ, user_msg("first", T1), user_msg("second", T1), end("answered", T1), RESP])
        assert Journal.records(p)[0].data.input == user("first")

    def test_nested_turns_are_excluded_even_interleaved(self, tmp_path):
        call = "harpe.tools.call=c1"
        p = write(tmp_path, [REQ, user_msg("outer", T1), user_msg("inner", T2, f"harpe.turn.id={T1}", call),
                             asst_msg("outer reply", T1), asst_msg("inner reply", T2, f"harpe.turn.id={T1}", call),
                             end("answered", T2, f"harpe.turn.id={T1}", call), end("answered", T1), RESP])
        (r,) = Journal.records(p)
        assert (r.data.input, r.data.messages) == (user("outer"), (reply("outer reply"),))

    def test_bracket_inside_a_turn_reads_its_own_turn(self, tmp_path):
        # the order-agnostic rule: the shortest turn-id list is the bracket's turn
        outer = f"harpe.turn.id={T3}"
        req = rec("harpe.turn.request", {"data": "x"}, [outer])
        p = write(tmp_path, [req, user_msg("u", T1, outer), asst_msg("r", T1, outer), end("answered", T1, outer),
                             rec("harpe.turn.response", {"data": "y"}, [outer])])
        (r,) = Journal.records(p)
        assert (r.data.input, r.turn_id) == (user("u"), T1)

    def test_bracket_without_a_turn_and_records_outside_brackets(self, tmp_path):
        p = write(tmp_path, [user_msg("cron", T3), end("answered", T3), REQ, rec("app.command"), RESP])
        records = Journal.records(p)
        assert list(records) == [] and records.reader == "brackets"
        assert len(records.notes) == 2
        assert Journal.load(p) == []

    def test_legacy_first_outermost_turn_only(self, tmp_path):
        flat = lambda event, **f: {"time": T0, "event": event, **f}  # noqa: E731
        p = write(tmp_path, [flat("harpe.turn.request", data="q"),
                             flat("harpe.turn.started", role="user", text="one", attachments=[]),
                             flat("harpe.turn.answered"),
                             flat("harpe.turn.started", role="user", text="two", attachments=[]),
                             flat("harpe.turn.answered"),
                             flat("harpe.turn.response", data="r")])
        assert [r.data.input.text for r in Journal.records(p)] == ["one"]

    def test_missing_request_data_reads_as_empty_string(self, tmp_path):
        p = write(tmp_path, [rec("harpe.turn.request"), user_msg("u", T1), end("answered", T1), rec("harpe.turn.response")])
        (r,) = Journal.records(p)
        assert (r.request, r.response) == ("", "")

    def test_records_accepts_entries(self):
        entries = [Entry(datetime(2026, 1, 1, tzinfo=timezone.utc), e["event"], e["fields"], tuple(e["context"]))
                   for e in (REQ, user_msg("u", T1), end("answered", T1), RESP)]
        assert [r.data.input for r in Journal.records(entries)] == [user("u")]
        with pytest.raises(TypeError, match="Entry objects"):
            Journal.records([{"event": "x"}])

    def test_stream_yields_records_as_responses_arrive(self, tmp_path):
        p = write(tmp_path, [REQ, user_msg("a", T1), end("answered", T1), RESP,
                             REQ, user_msg("b", T2), end("answered", T2), RESP])
        stream = Journal.stream(p)
        assert next(stream).data.input == user("a")
        assert stream._asm.count == 1  # the second bracket has not been read yet
        assert [r.data.input for r in stream] == [user("b")]


class TestEagerTurn:
    """A bracket's own records are taken as they are read once its turn is known
    (`Assembler.run`); these are the cases where that could differ from reading the turn at
    its response, checked against the reader's general path (the one `Journal.usage` takes)."""

    @staticmethod
    def general(p):
        from harpe_lab.journal import RecordStream

        stream = RecordStream(p, errors="skip", usage_rows=[])
        return summary(list(stream)), [(x.line, x.reason) for x in stream.problems]

    def test_an_uncommon_message_keeps_the_turns_order(self, tmp_path):
        att = {"name": "a.png", "size": 3.0, "mime": "image/png", "path": "/a.png"}  # an integral float size
        odd = rec("harpe.turn.message", {"role": "user", "text": "with file", "attachments": [att]},
                  [f"harpe.turn.id={T1}"])
        odd_reply = rec("harpe.turn.message", {"role": "assistant", "text": "odd", "calls": [], "extra": 1.0},
                        [f"harpe.turn.id={T1}"])
        tool = rec("harpe.turn.message", {"role": "tool_results", "results": [
            {"id": "c", "content": "x", "attachments": [att], "success": True}]}, [f"harpe.turn.id={T1}"])
        p = write(tmp_path, [REQ, odd, asst_msg("one", T1), tool, odd_reply, user_msg("again", T1),
                             asst_msg("two", T1), end("answered", T1), RESP])
        (r,) = Journal.records(p)
        assert r.data.input == user("with file", Attachment("a.png", 3, "image/png", "/a.png"))
        assert r.data.messages == (reply("one"),
                                   ToolResults((result("c", "x", Attachment("a.png", 3, "image/png", "/a.png")),)),
                                   reply("odd"), reply("two"))
        assert (summary([r]), []) == self.general(p)

    def test_a_bad_message_is_reported_at_the_response_in_line_order(self, tmp_path):
        bad = rec("harpe.turn.message", {"role": "assistant", "text": 5, "calls": []}, [f"harpe.turn.id={T1}"])
        bad_usage = rec("harpe.metering.usage", {"provider": "p", "model": "m", "inputTokens": "9"},
                        [f"harpe.turn.id={T1}"])
        p = write(tmp_path, [REQ, user_msg("u", T1), bad_usage, asst_msg("ok", T1), bad, end("answered", T1), RESP])
        stream = Journal.stream(p, errors="skip")
        records = list(stream)
        assert [(x.line, x.event) for x in stream.problems] == [(5, "harpe.turn.message"), (3, "harpe.metering.usage")]
        assert (summary(records), [(x.line, x.reason) for x in stream.problems]) == self.general(p)
        with pytest.raises(JournalError, match=r"j\.jsonl:5: .*'text' must be a string"):
            list(Journal.stream(p))

    def test_a_bad_message_in_a_bracket_that_never_closes_is_no_error(self, tmp_path):
        bad = rec("harpe.turn.message", {"role": "assistant", "text": 5, "calls": []}, [f"harpe.turn.id={T1}"])
        p = write(tmp_path, [REQ, user_msg("a", T1), end("answered", T1), RESP, REQ, user_msg("b", T2), bad])
        assert [r.data.input for r in Journal.records(p)] == [user("a")]  # Harpe never reads the open bracket

    def test_records_before_the_turn_is_known(self, tmp_path):
        # a nested turn's records and usage ahead of the outer turn's first record (innermost-first scopes)
        inner = [f"harpe.turn.id={T2}", f"harpe.turn.id={T1}"]
        u = lambda n, ctx: rec("harpe.metering.usage", {"provider": "p", "model": "m", "inputTokens": n,  # noqa: E731
                                                        "outputTokens": 1, "cacheReadTokens": 0,
                                                        "cacheWriteTokens": 0}, ctx)
        p = write(tmp_path, [REQ, rec("harpe.turn.message", {"role": "user", "text": "sub", "attachments": []}, inner),
                             u(7, inner), user_msg("outer", T1), u(9, [f"harpe.turn.id={T1}"]),
                             rec("harpe.turn.answered", {}, inner), end("answered", T1), RESP])
        records = Journal.records(p)
        (r,) = records
        assert (r.data.input, r.turn_id, r.usage, r.nested_usage) == (user("outer"), T1, (usage(9, 1, 0, 0, "p", "m"),),
                                                                      (usage(7, 1, 0, 0, "p", "m"),))
        assert records.generations == ("G4b",)
        assert (summary(records), []) == self.general(p)


class TestLoad:
    def test_resume_cap_drops_whole_oldest_turns(self, tmp_path):
        lines = []
        for i, t in enumerate((T1, T2, T3)):
            lines += [REQ, user_msg("u" * 10, t), asst_msg("a" * 10, t), end("answered", t), RESP]
        p = write(tmp_path, lines)
        full = Journal.load(p)
        assert len(full) == 6
        assert Journal.load(p, max_chars=40) == full[2:] == truncate(full, 40)
        assert Journal.load(p, max_chars=0) == full[4:]  # the newest turn is always kept

    def test_missing_file_says_how_to_start(self, tmp_path):
        with pytest.raises(MissingJournalError) as info:
            Journal.load(tmp_path / "nope.jsonl")
        assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, JournalError)
        assert "nope.jsonl" in str(info.value) and "JsonlLogger" in str(info.value)

    def test_bad_max_chars(self):
        with pytest.raises(ValueError, match="max_chars must be an int >= 0, got -1"):
            Journal.load(GOLDEN / "g5.jsonl", max_chars=-1)


class TestUsage:
    def test_one_row_per_reply_with_attribution(self):
        frame = Journal.usage(GOLDEN / "g4.jsonl")
        assert list(frame["input_tokens"]) == [900, 300, 1000]
        assert list(frame["own"]) == [True, False, True]
        assert list(frame["record"]) == [0, 0, 0]
        assert list(frame["depth"]) == [1, 2, 1]
        assert list(frame["turn_id"]) == ["1111aaaa2222bbbb", "3333cccc4444dddd", "1111aaaa2222bbbb"]
        assert str(frame["time"].dt.tz) == "UTC"

    def test_rows_outside_records_have_no_record(self, tmp_path):
        u = rec("harpe.metering.usage", {"provider": "p", "model": "m", "inputTokens": 5, "outputTokens": 1,
                                         "cacheReadTokens": 0, "cacheWriteTokens": 0}, [f"harpe.turn.id={T1}"])
        p = write(tmp_path, [u, REQ, user_msg("x", T2), RESP])
        frame = Journal.usage(p)
        assert len(frame) == 1 and frame["record"].isna().all()

    def test_legacy_token_events_when_no_metering(self):
        frame = Journal.usage(GOLDEN / "g3.jsonl")
        assert list(frame["event"]) == ["harpe.model.replied"] * 2
        assert list(frame["output_tokens"]) == [20, 8]

    def test_newer_replied_events_are_not_usage(self, example):
        assert list(Journal.usage(example)["line"]) == [5]

    def test_empty(self, tmp_path):
        p = tmp_path / "e.jsonl"
        p.write_text("")
        frame = Journal.usage(p)
        assert len(frame) == 0 and "cache_write_tokens" in frame.columns


class TestMessageCodec:
    def test_strict_requires_every_key(self):
        with pytest.raises(JournalError, match="'attachments' is missing"):
            decode_message({"role": "user", "text": "x"})
        assert decode_message({"role": "user", "text": "x"}, strict=False) == user("x")

    def test_legacy_variants(self):
        m = decode_message({"role": "tool_results", "results": [{"id": "1", "content": "c", "media": [
            {"name": "n", "size": 3, "mime": "m", "inline": True}]}]}, strict=False)
        assert m == ToolResults((result("1", "c", Attachment("n", 3, "m", "")),))

    def test_integral_floats_are_integers(self):
        m = decode_message({"role": "user", "text": "", "attachments": [
            {"name": "n", "size": 3.0, "mime": "m", "path": "/p"}]})
        assert m.attachments[0].size == 3 and type(m.attachments[0].size) is int

    def test_decoded_messages_are_the_constructed_ones(self):
        # the common shapes take a quick path; it builds exactly what the constructors build
        cases = [
            ({"role": "user", "text": "x", "attachments": []}, user("x")),
            ({"role": "assistant", "text": "t", "calls": [{"id": "c", "name": "n", "input": {"a": 1}}]},
             reply("t", ToolCall("c", "n", {"a": 1}))),
            ({"role": "tool_results", "results": [{"id": "c", "content": "r", "attachments": [], "success": False}]},
             ToolResults((result("c", "r", success=False),))),
        ]
        for fields, expected in cases:
            for strict in (True, False):
                m = decode_message(fields, strict=strict)
                assert m == expected and type(m) is type(expected)
                assert vars(m) == vars(expected)

    def test_unknown_role_strict(self):
        with pytest.raises(JournalError, match="'role' is 'system'"):
            decode_message({"role": "system", "text": "x"})


class TestLayout:
    """The package's floor plan: one concept per module, nothing imported from above."""

    PACKAGE = ROOT / "harpe_lab" / "journal"

    def test_public_names_stay_importable_from_the_package(self):
        from harpe_lab import journal

        assert sorted(journal.__all__) == sorted([
            "Entry", "TurnData", "TurnRecord", "Problem", "Records", "RecordStream", "EntryReader",
            "TornLineWarning", "read_entries", "encode_message", "decode_message", "Journal", "JsonlLogger",
            "TurnLog", "format_time", "USAGE_COLUMNS", "REQUEST", "RESPONSE", "MESSAGE", "STARTED", "ANSWERED",
            "INTERRUPTED", "FAILED", "USAGE", "TURN_SCOPE", "CALL_SCOPE"])
        for name in journal.__all__:
            assert getattr(journal, name) is not None, name
        assert journal.Journal.__module__ == "harpe_lab.journal._journal"

    def test_modules_are_small(self):
        sizes = {p.name: len(p.read_text(encoding="utf-8").splitlines()) for p in self.PACKAGE.glob("*.py")}
        assert len(sizes) >= 10
        assert {name: n for name, n in sizes.items() if n > 500} == {}

    def test_each_module_imports_only_those_listed_above_it(self):
        import ast

        from harpe_lab import journal

        table = journal.__doc__.split("Layout\n------", 1)[1]
        order = [line.split()[0] for line in table.splitlines() if line.startswith("_")]
        assert sorted(order) == sorted(p.stem for p in self.PACKAGE.glob("_*.py") if p.stem != "__init__")
        wrong = []
        for name in order:
            tree = ast.parse((self.PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.level == 1:
                    used = [node.module] if node.module else [a.name for a in node.names]
                    wrong += [f"{name} imports {u}" for u in used if order.index(u) >= order.index(name)]
        assert wrong == []

    def test_the_journal_imports_only_the_ground_floor(self):
        import ast

        allowed = {"errors", "messages", "_text"}  # harpe_lab modules below the recordings floor
        found = {}
        for p in self.PACKAGE.glob("*.py"):
            for node in ast.walk(ast.parse(p.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ImportFrom) and node.level == 2:
                    found[f"{p.name}: ..{node.module}"] = (node.module or "").split(".")[0] in allowed
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("harpe_lab"):
                    found[f"{p.name}: {node.module}"] = False
                elif isinstance(node, ast.Import) and any(a.name.startswith("harpe_lab") for a in node.names):
                    found[f"{p.name}: import harpe_lab"] = False
        assert found and [k for k, ok in found.items() if not ok] == []

    def test_the_size_rules_it_uses_live_on_the_ground_floor(self):
        import ast

        from harpe_lab import _text

        tree = ast.parse(Path(_text.__file__).read_text(encoding="utf-8"))
        below = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.level}
        assert below == {"messages"}
        assert Journal.load.__globals__["truncate"] is _text.truncate


def test_import_is_light():
    import subprocess
    import sys

    code = ("import sys, harpe_lab.journal, harpe_lab.importers.harpe; "
            "print(sorted(m for m in ('pandas', 'litellm', 'tiktoken', 'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# --- importer -----------------------------------------------------------------------------


class TestImporter:
    def test_load_harpe(self):
        from harpe_lab.conversation import Conversation
        from harpe_lab.importers.harpe import load_harpe

        c = load_harpe(GOLDEN / "g5.jsonl")
        assert isinstance(c, Conversation) and c.id == "g5" and c.source == str(GOLDEN / "g5.jsonl")
        assert [t.outcome for t in c] == ["answered", "interrupted", "interrupted"]
        assert c.turns[0].usage[1].input_tokens == 2600
        assert c.turns[1].metadata["request"] == {"text": "and now crash"}
        assert c.turns[1].metadata["terminated"] is False
        assert c.metadata["format"] == "harpe" and c.metadata["generations"] == ("G5",)

    def test_session_path_gives_a_dated_id(self, tmp_path):
        from harpe_lab.importers.harpe import load_harpe

        p = tmp_path / "logs" / "sessions" / "2026" / "09" / "03" / "10-15-02.jsonl"
        p.parent.mkdir(parents=True)
        p.write_bytes((GOLDEN / "g5.jsonl").read_bytes())
        assert load_harpe(p).id == "2026-09-03T10-15-02"

    def test_max_chars_keeps_newest_turns(self):
        from harpe_lab.importers.harpe import load_harpe

        c = load_harpe(GOLDEN / "g5.jsonl", max_chars=30)
        # the same turns Journal.load keeps: interrupted turns count only their input (§3.6)
        kept = [m.text for m in Journal.load(GOLDEN / "g5.jsonl", max_chars=30) if isinstance(m, UserInput)]
        assert [t.input.text for t in c] == kept == ["and now crash", "cancel me"]
        assert c.metadata["dropped_turns"] == 1

    def test_to_journal_round_trips(self, tmp_path):
        from harpe_lab.importers.harpe import load_harpe, to_journal

        for name in ("g4.jsonl", "g5.jsonl", "g1.jsonl", "sessionlog.jsonl"):
            original = load_harpe(GOLDEN / name)
            again = load_harpe(to_journal(original, tmp_path / name))
            assert [(t.input, t.messages, t.outcome, t.error, t.usage) for t in again] == \
                   [(t.input, t.messages, t.outcome, t.error, t.usage) for t in original]
            assert again.metadata["generations"] == ("G5",)
            assert [t.metadata["request"] for t in again] == [{"text": t.input.text} for t in original]

    def test_to_journal_refuses_to_overwrite(self, tmp_path):
        from harpe_lab.importers.harpe import load_harpe, to_journal

        p = tmp_path / "x.jsonl"
        p.write_text("")
        with pytest.raises(JournalError, match="already exists"):
            to_journal(load_harpe(GOLDEN / "g5.jsonl"), p)


# --- command line ---------------------------------------------------------------------------


class TestCli:
    def test_inspect(self, capsys):
        assert main(["journal", "inspect", str(GOLDEN / "g5.jsonl")]) == 0
        out = capsys.readouterr().out
        assert "3 turns" in out and "generation G5" in out
        assert "answered" in out and "interrupted*" in out
        assert "1 answered, 2 interrupted, 0 failed" in out
        assert "tokens in 7,600, out 160, cache read 3,500, cache write 200" in out

    def test_inspect_counts_skipped_lines(self, tmp_path, capsys):
        p = tmp_path / "j.jsonl"
        p.write_bytes((GOLDEN / "g5.jsonl").read_bytes() + b"not json\n")
        assert main(["journal", "inspect", str(p)]) == 0
        assert "1 bad line(s) skipped" in capsys.readouterr().out

    def test_check_ok(self, capsys, example):
        assert main(["journal", "check", str(example)]) == 0
        out = capsys.readouterr().out
        assert out.startswith("note: line 21") and "OK:" in out and "no problems" in out

    def test_check_lists_problems(self, tmp_path, capsys):
        lines = [REQ, user_msg("u", T1), "garbage",
                 # a subagent's bad message: records never decodes it, check does
                 rec("harpe.turn.message", {"role": "assistant", "text": 5, "calls": []},
                     [f"harpe.turn.id={T1}", "harpe.tools.call=c", f"harpe.turn.id={T2}"]),
                 end("answered", T1), RESP]
        p = tmp_path / "bad.jsonl"
        p.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
        assert main(["journal", "check", str(p)]) == 1
        out = capsys.readouterr().out
        assert f"{p}:3: the line is not valid JSON" in out
        assert f"{p}:4: (harpe.turn.message) 'text' must be a string, got int 5" in out
        assert "2 problem(s)" in out

    def test_missing_file(self, tmp_path, capsys):
        assert main(["journal", "check", str(tmp_path / "none.jsonl")]) == 1
        assert "none.jsonl: no such file; check the path" in capsys.readouterr().err


class TestWriterHelpers:
    """`Journal` and `TurnLog` write what the reader reads back."""

    def test_turn_lifecycle(self, tmp_path):
        p = tmp_path / "w.jsonl"
        with JsonlLogger(p) as logger:
            journal = Journal(logger.with_context("app.session=1"))
            journal.request({"text": "hi"})
            turn = journal.turn(T1)
            turn.user(user("hi"))
            turn.model_sent("openai", "gpt")
            turn.model_replied("openai", "gpt")
            turn.usage(usage(10, 2, 1, 0, "openai", "gpt"))
            turn.assistant(reply("", ToolCall("c1", "sub", {"q": "x"})))
            sub = turn.nested("c1", T2)
            sub.user(user("x"))
            sub.usage(usage(3, 1))
            sub.assistant(reply("y"))
            sub.answered()
            turn.tool_results(ToolResults((result("c1", "y"),)))
            turn.model_retried("RateLimitError", attempt=1, retry_in_seconds=1)
            turn.assistant(reply("done"))
            turn.answered()
            journal.response()
        (r,) = Journal.records(p)
        assert summary([r]) == [(user("hi"),
                                 (reply("", ToolCall("c1", "sub", {"q": "x"})), ToolResults((result("c1", "y"),)),
                                  reply("done")),
                                 "answered", "", (usage(10, 2, 1, 0, "openai", "gpt"),), True)]
        assert r.nested_usage == (usage(3, 1),) and r.turn_id == T1
        lines = [json.loads(x) for x in p.read_text().splitlines()]
        assert lines[7]["context"] == ["app.session=1", f"harpe.turn.id={T1}", "harpe.tools.call=c1",
                                       f"harpe.turn.id={T2}"]
        retried = next(x for x in lines if x["event"] == "harpe.model.retried")
        assert retried["fields"] == {"warning": "RateLimitError", "attempt": 1, "retryInSeconds": 1.0}

    def test_turn_log_refuses_misuse(self, tmp_path):
        with JsonlLogger(tmp_path / "w.jsonl") as logger:
            turn = TurnLog(logger)
            assert len(turn.id) == 16
            with pytest.raises(JournalError, match="write the user message first"):
                turn.assistant(reply("x"))
            turn.user(user("u"))
            with pytest.raises(JournalError, match="already has its user message"):
                turn.user(user("again"))
            turn.failed("E")
            with pytest.raises(JournalError, match="already ended"):
                turn.answered()
            with pytest.raises(ValueError, match="16 lowercase hex"):
                TurnLog(logger, "XYZ")

    def test_failed_always_writes_error(self, tmp_path):
        p = tmp_path / "w.jsonl"
        with JsonlLogger(p) as logger:
            turn = TurnLog(logger, T1)
            turn.user(user("u"))
            turn.failed()
        assert json.loads(p.read_text().splitlines()[-1])["fields"] == {"error": ""}

    def test_turn_data_validates(self):
        with pytest.raises(ValueError, match="outcome must be one of"):
            TurnData(input=user("x"), outcome="done")
        with pytest.raises(ValueError, match="failed turn keeps no messages"):
            TurnData(input=user("x"), messages=(reply("y"),), outcome="failed")
        with pytest.raises(TypeError, match="TurnRecord.data must be a TurnData"):
            TurnRecord(request="", response="", data=None)
