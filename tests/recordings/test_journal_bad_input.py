"""Bad input: every kind gets a clear error (strict) or a counted skip, and never hides the
complete records around it."""

from __future__ import annotations

import json
import warnings

import pytest

from harpe_lab.errors import JournalError
from harpe_lab.journal import Journal, JsonlLogger, TornLineWarning, TurnLog, read_entries
from harpe_lab.messages import AssistantMessage, ToolResult, ToolResults, UserInput

T0 = "2026-01-01T00:00:00.000000Z"
TURN = "harpe.turn.id=" + "a" * 16


def line(event, fields=None, context=(TURN,), time=T0):
    return json.dumps({"time": time, "event": event, "fields": {} if fields is None else fields,
                       "context": list(context)})


REQ = line("harpe.turn.request", {"data": {"text": "q"}}, ())
RESP = line("harpe.turn.response", {"data": "turnEnd"}, ())
USER = line("harpe.turn.message", {"role": "user", "text": "hello", "attachments": []})
REPLY = line("harpe.turn.message", {"role": "assistant", "text": "hi", "calls": []})
DONE = line("harpe.turn.answered")
SENT = line("harpe.model.sent", {"provider": "p", "model": "m"})
GOOD = [REQ, USER, SENT, REPLY, DONE, RESP]
EXPECTED = [(UserInput("hello"), (AssistantMessage("hi"),), "answered")]


def journal(tmp_path, lines, *, raw: bytes | None = None, name="bad.jsonl"):
    p = tmp_path / name
    p.write_bytes(raw if raw is not None else "".join(x + "\n" for x in lines).encode())
    return p


def turns(records):
    return [(r.data.input, r.data.messages, r.data.outcome) for r in records]


def strict_error(p):
    with pytest.raises(JournalError) as info:
        Journal.records(p)
    return info.value


def skipped(p):
    records = Journal.records(p, errors="skip")
    return records, [(x.line, x.reason) for x in records.problems]


class TestUnreadableLines:
    def test_invalid_json(self, tmp_path):
        p = journal(tmp_path, [REQ, USER, '{"time": "x", "event": ', REPLY, DONE, RESP])
        err = strict_error(p)
        assert (err.path, err.line) == (str(p), 3)
        assert str(err).startswith(f"{p}:3: the line is not valid JSON")
        assert 'errors="skip"' in str(err)  # how to get past it
        records, problems = skipped(p)
        assert turns(records) == EXPECTED and [x[0] for x in problems] == [3]

    def test_non_utf8_bytes(self, tmp_path):
        raw = "\n".join(GOOD[:2]).encode() + b'\n{"time": "\xff\xfe"}\n' + "\n".join(GOOD[2:]).encode() + b"\n"
        p = journal(tmp_path, [], raw=raw)
        assert "the line is not UTF-8 (byte 10" in str(strict_error(p))
        records, problems = skipped(p)
        assert turns(records) == EXPECTED and [x[0] for x in problems] == [3]

    def test_not_an_object(self, tmp_path):
        p = journal(tmp_path, [REQ, "[1, 2]", USER, REPLY, DONE, RESP])
        assert "expected a JSON object per line, got list [1, 2]" in str(strict_error(p))
        assert turns(skipped(p)[0]) == EXPECTED

    def test_object_that_is_no_record(self, tmp_path):
        p = journal(tmp_path, GOOD + ['{"hello": "world"}'])
        err = strict_error(p)
        assert err.line == 7 and "not a journal record: no 'time', 'event' or 'role'" in str(err)

    def test_torn_last_line_warns_in_both_modes(self, tmp_path):
        raw = ("\n".join(GOOD) + "\n" + REQ + "\n" + USER[:25]).encode()
        p = journal(tmp_path, [], raw=raw)
        for errors in ("strict", "skip"):
            with pytest.warns(TornLineWarning, match=r"bad.jsonl:8: the last line is incomplete"):
                records = Journal.records(p, errors=errors)
            assert turns(records) == EXPECTED and records.problems == ()
            assert sorted(n.line for n in records.notes) == [7, 8]  # the open request, the torn line

    def test_torn_line_through_read_entries(self, tmp_path):
        p = journal(tmp_path, [], raw=("\n".join(GOOD) + "\n" + USER[:25]).encode())
        with pytest.warns(TornLineWarning):
            records = Journal.records(read_entries(p))
        assert turns(records) == EXPECTED and [n.line for n in records.notes] == [7]

    def test_complete_last_line_without_newline_counts(self, tmp_path):
        p = journal(tmp_path, [], raw="\n".join(GOOD).encode())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert turns(Journal.records(p)) == EXPECTED

    def test_json_only_python_reads(self, tmp_path):
        # Harpe writes with Python's json.dumps, which can emit NaN and huge integers
        odd = line("harpe.tools.runCode.ran", {"runSeconds": float("nan"), "n": 2 ** 80})
        p = journal(tmp_path, GOOD[:3] + [odd] + GOOD[3:])
        assert turns(Journal.records(p)) == EXPECTED
        entry = next(e for e in read_entries(p) if e.event == "harpe.tools.runCode.ran")
        assert entry.fields["n"] == 2 ** 80


class TestEncodingNoise:
    def test_byte_order_mark(self, tmp_path):
        p = journal(tmp_path, [], raw=b"\xef\xbb\xbf" + "".join(x + "\n" for x in GOOD).encode())
        records = Journal.records(p)
        assert turns(records) == EXPECTED and "byte-order mark" in records.notes[0].reason
        assert [e.line for e in read_entries(p)] == [1, 2, 3, 4, 5, 6]

    def test_crlf_line_endings(self, tmp_path):
        p = journal(tmp_path, [], raw="".join(x + "\r\n" for x in GOOD).encode())
        assert turns(Journal.records(p)) == EXPECTED and Journal.records(p).problems == ()

    def test_empty_file(self, tmp_path):
        records = Journal.records(journal(tmp_path, [], raw=b""))
        assert list(records) == [] and records.problems == () and records.reader == "none"

    def test_blank_lines(self, tmp_path):
        p = journal(tmp_path, ["", GOOD[0], "   ", "\t", *GOOD[1:], ""])
        records = Journal.records(p)
        assert turns(records) == EXPECTED and records.problems == ()
        assert records[0].lines == (2, 9)


class TestEnvelopeErrors:
    @pytest.mark.parametrize("bad, message", [
        ({"event": "x", "fields": {}, "context": []}, "the record has no 'time'"),
        ({"time": "yesterday", "event": "x", "fields": {}, "context": []}, "'time' is not an RFC 3339 time: 'yesterday'"),
        ({"time": "2026-01-01T00:00:00", "event": "x", "fields": {}, "context": []}, "has no UTC offset"),
        ({"time": True, "event": "x", "fields": {}, "context": []}, "'time' must be an RFC 3339 string"),
        ({"time": T0, "event": 7, "fields": {}, "context": []}, "'event' must be a string, got int 7"),
        ({"time": T0, "event": "x", "fields": "oops", "context": []}, "'fields' must be an object, got str 'oops'"),
        ({"time": T0, "event": "x", "fields": {}, "context": "a=b"}, "'context' must be a list of scope strings"),
        ({"time": T0, "event": "x", "fields": {}, "context": ["a=b", {"c": "d"}]}, "only scope strings (G5) or only objects"),
        ({"time": T0, "fields": {}, "context": []}, "the record has no 'event'"),
    ])
    def test_strict_error_and_skip(self, tmp_path, bad, message):
        p = journal(tmp_path, GOOD[:2] + [json.dumps(bad)] + GOOD[2:])
        err = strict_error(p)
        assert err.line == 3 and message in str(err)
        records, problems = skipped(p)
        assert turns(records) == EXPECTED and [x[0] for x in problems] == [3]

    def test_offsets_are_converted_to_utc(self, tmp_path):
        p = journal(tmp_path, [line("x", time="2026-01-01T02:00:00+02:00")])
        (e,) = read_entries(p)
        assert e.time.isoformat() == "2026-01-01T00:00:00+00:00"

    def test_missing_file_and_directory(self, tmp_path):
        with pytest.raises(FileNotFoundError, match="To start a new session instead"):
            Journal.records(tmp_path / "missing.jsonl")
        with pytest.raises(JournalError, match="is a directory"):
            Journal.records(tmp_path)

    def test_errors_argument(self, tmp_path):
        with pytest.raises(ValueError, match=r"errors must be one of \('strict', 'skip'\), but 'ignore' was passed"):
            Journal.records(journal(tmp_path, GOOD), errors="ignore")


class TestFieldErrors:
    def test_missing_message_field(self, tmp_path):
        user = line("harpe.turn.message", {"role": "user", "text": "hello"})
        p = journal(tmp_path, [REQ, user, REPLY, DONE, RESP])
        err = strict_error(p)
        assert (err.line, err.event) == (2, "harpe.turn.message")
        assert "(harpe.turn.message) 'attachments' is missing; expected a list" in str(err)
        records, problems = skipped(p)
        assert list(records) == [] and [x[0] for x in problems] == [2]  # no user message: no turn
        assert "holds no turn" in records.notes[0].reason

    @pytest.mark.parametrize("fields, message", [
        ({"role": "user", "text": "x", "attachments": [{"name": "a", "size": "12", "mime": "m", "path": "/a"}]},
         "attachment 0: 'size' must be an integer, got str '12'"),
        ({"role": "assistant", "text": "x", "calls": [{"id": "1", "name": "n", "input": [1]}]},
         "call 0: 'input' must be an object, got list [1]"),
        ({"role": "tool_results", "results": [{"id": "1", "content": "c", "attachments": [], "success": "yes"}]},
         "result 0: 'success' must be a boolean, got str 'yes'"),
        ({"role": "assistant", "text": 3, "calls": []}, "'text' must be a string, got int 3"),
        ({"role": "robot", "text": "x"}, "'role' is 'robot'"),
        ({"text": "x"}, "'role' is missing"),
    ])
    def test_mistyped_message_fields(self, tmp_path, fields, message):
        p = journal(tmp_path, [REQ, USER, line("harpe.turn.message", fields), DONE, RESP])
        assert message in str(strict_error(p))
        records, problems = skipped(p)
        assert turns(records) == [(UserInput("hello"), (), "answered")] and [x[0] for x in problems] == [3]

    def test_mistyped_usage(self, tmp_path):
        usage = line("harpe.metering.usage", {"provider": "p", "model": "m", "inputTokens": "5", "outputTokens": 1,
                                              "cacheReadTokens": 0, "cacheWriteTokens": 0})
        p = journal(tmp_path, GOOD[:3] + [usage] + GOOD[3:])
        err = strict_error(p)
        assert err.event == "harpe.metering.usage" and "'inputTokens' must be an integer, got str '5'" in str(err)
        records, problems = skipped(p)
        assert records[0].usage == () and [x[0] for x in problems] == [4]

    def test_usage_accepts_integral_floats_only(self, tmp_path):
        usage = lambda n: line("harpe.metering.usage", {  # noqa: E731
            "provider": "p", "model": "m", "inputTokens": n, "outputTokens": 1.0, "cacheReadTokens": 0,
            "cacheWriteTokens": 0})
        p = journal(tmp_path, GOOD[:3] + [usage(5.0)] + GOOD[3:])
        assert Journal.records(p)[0].usage[0].input_tokens == 5
        p = journal(tmp_path, GOOD[:3] + [usage(5.5)] + GOOD[3:], name="b.jsonl")
        assert "'inputTokens' must be an integer, got float 5.5" in str(strict_error(p))

    def test_mistyped_failure_detail(self, tmp_path):
        p = journal(tmp_path, [REQ, USER, line("harpe.turn.failed", {"error": {"code": 1}}), RESP])
        assert "'error' must be a string" in str(strict_error(p))

    def test_nulls_are_absent(self, tmp_path):
        p = journal(tmp_path, [
            json.dumps({"time": T0, "event": "harpe.turn.request", "fields": {"data": None}, "context": None}),
            USER, line("harpe.turn.failed", {"error": None}),
            json.dumps({"time": T0, "event": "harpe.turn.response", "fields": None, "context": []}),
        ])
        (r,) = Journal.records(p)
        assert (r.request, r.response, r.data.outcome, r.data.error) == ("", "", "failed", "")

    def test_null_in_a_required_message_field(self, tmp_path):
        user = line("harpe.turn.message", {"role": "user", "text": None, "attachments": []})
        p = journal(tmp_path, [REQ, user, DONE, RESP])
        assert "'text' is missing; expected a string" in str(strict_error(p))


class TestStructure:
    """What Harpe drops by design is never an error; it is a note."""

    def test_unknown_events_are_ignored(self, tmp_path):
        p = journal(tmp_path, GOOD[:2] + [line("app.custom.thing", {"x": [1, {"y": 2}]})] + GOOD[2:])
        records = Journal.records(p)
        assert turns(records) == EXPECTED and records.problems == () and records.notes == ()

    def test_response_without_request(self, tmp_path):
        records = Journal.records(journal(tmp_path, [RESP] + GOOD))
        assert turns(records) == EXPECTED and [(n.line, n.event) for n in records.notes] == [(1, "harpe.turn.response")]

    def test_request_without_response(self, tmp_path):
        records = Journal.records(journal(tmp_path, GOOD + [REQ, USER, REPLY]))
        assert turns(records) == EXPECTED
        assert [n.line for n in records.notes] == [7] and "without a response" in records.notes[0].reason

    def test_two_requests_in_a_row(self, tmp_path):
        records = Journal.records(journal(tmp_path, [REQ, USER] + GOOD))
        assert turns(records) == EXPECTED
        assert "request discarded: a second request at line 3" in records.notes[0].reason


class TestLongLines:
    def test_a_20_megabyte_line(self, tmp_path):
        p = tmp_path / "big.jsonl"
        content = "é" * 3_000_000 + "x" * 2_000_000  # ensure_ascii: 6 bytes per é, ~20 MB line
        with JsonlLogger(p) as logger:
            logger.log("harpe.turn.request", {"data": {"text": "big"}})
            turn = TurnLog(logger, "b" * 16)
            turn.user(UserInput("big"))
            turn.assistant(AssistantMessage("reading"))
            turn.tool_results(ToolResults((ToolResult("t", content),)))
            turn.answered()
            logger.log("harpe.turn.response", {"data": "turnEnd"})
        assert max(len(x) for x in p.read_bytes().split(b"\n")) > 20_000_000
        (r,) = Journal.records(p)
        assert r.data.messages[1].results[0].content == content
