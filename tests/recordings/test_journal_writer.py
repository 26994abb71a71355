"""Writing journals: byte-exact G5 lines, whole lines under threads and processes, and no
lost turn when the writer is killed at any moment."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import threading
import time
import warnings
from datetime import datetime, timezone

import pytest

from harpe_lab.errors import JournalError
from harpe_lab.journal import Journal, JsonlLogger, TornLineWarning, TurnLog, format_time
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, Usage, UserInput


def expected_time(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class TestLineFormat:
    FIELDS = [
        {},
        {"text": "héllo ☃ 🙂 \u2028", "n": 3, "f": 1.0, "g": 0.07, "tiny": 1e-7, "big": 2 ** 70, "ok": True},
        {"nested": {"a": [1, 2.5, {"b": False, "c": []}], "quote": "\"\\\n\t"}, "empty": {"": ""}},
        {"tuple": (1, "two")},
    ]

    def test_lines_equal_default_json_dumps(self, tmp_path):
        p = tmp_path / "a" / "b" / "j.jsonl"  # parent folders are created
        times = [1788000000.0, 1788000000.000001, 0.5, 1788000000.123456]
        clock = iter(times).__next__
        with JsonlLogger(p, clock=clock) as logger:
            scoped = logger.with_context("app.session=alpha", "harpe.turn.id=0123456789abcdef")
            logger.log("app.started", self.FIELDS[0])
            scoped.log("harpe.turn.message", self.FIELDS[1])
            scoped.with_context("harpe.tools.call=toolu_é").log("x.y", self.FIELDS[2])
            logger.log("x.z", self.FIELDS[3])
        contexts = [[], ["app.session=alpha", "harpe.turn.id=0123456789abcdef"],
                    ["app.session=alpha", "harpe.turn.id=0123456789abcdef", "harpe.tools.call=toolu_é"], []]
        events = ["app.started", "harpe.turn.message", "x.y", "x.z"]
        expected = "".join(
            json.dumps({"time": expected_time(t), "event": e, "fields": f, "context": c}) + "\n"
            for t, e, f, c in zip(times, events, self.FIELDS, contexts)
        ).encode("ascii")
        assert p.read_bytes() == expected

    def test_time_format(self):
        assert format_time(1788000000.5) == "2026-08-29T10:40:00.500000Z"
        assert format_time(0) == "1970-01-01T00:00:00.000000Z"

    def test_appends_to_an_existing_file(self, tmp_path):
        p = tmp_path / "j.jsonl"
        for i in range(2):
            with JsonlLogger(p, clock=lambda: 0.0) as logger:
                logger.log("e", {"i": i})
        assert [json.loads(x)["fields"]["i"] for x in p.read_text().splitlines()] == [0, 1]

    def test_every_record_reaches_the_file_at_once(self, tmp_path):
        p = tmp_path / "j.jsonl"
        logger = JsonlLogger(p)
        logger.info("e", "first")
        assert json.loads(p.read_text())["fields"] == {"info": "first"}  # no flush, no close needed
        logger.close()
        assert logger.closed
        with pytest.raises(JournalError, match="the logger is closed"):
            logger.warn("e", "late")

    @pytest.mark.parametrize("fields, message", [
        ({"x": None}, "is None; Harpe's Value has no null"),
        ({"x": float("nan")}, "has no NaN or infinity"),
        ({"x": {1: "a"}}, "non-string key 1"),
        ({"x": object()}, "a journal value is a str, int, float, bool, list or dict"),
    ])
    def test_rejects_what_harpe_cannot_hold(self, tmp_path, fields, message):
        p = tmp_path / "j.jsonl"
        with JsonlLogger(p) as logger:
            with pytest.raises(JournalError, match=message):
                logger.log("e", fields)
        assert p.read_bytes() == b""

    def test_rejects_bad_names(self, tmp_path):
        with JsonlLogger(tmp_path / "j.jsonl") as logger:
            with pytest.raises(ValueError, match="event must be a non-empty dotted name"):
                logger.log("")
            with pytest.raises(ValueError, match="a scope is a 'key=id' string"):
                logger.with_context("nokey")

    def test_tool_call_input_must_be_an_object(self, tmp_path):
        with JsonlLogger(tmp_path / "j.jsonl") as logger:
            turn = TurnLog(logger)
            turn.user(UserInput("u"))
            with pytest.raises(JournalError, match="call inputs as JSON objects"):
                turn.assistant(AssistantMessage("", (ToolCall("c", "n", [1, 2]),)))


def _payload(rng: random.Random) -> str:
    return rng.choice(("ab", "é☃", "x\n")) * rng.choice((5, 50, 2500, 35_000))  # up to ~420 kB escaped


def _append_lines(path: str, worker: int, count: int, seed: int) -> None:
    rng = random.Random(seed)
    with JsonlLogger(path) as logger:
        for i in range(count):
            logger.log("w", {"worker": worker, "i": i, "payload": _payload(rng)})


def _check_whole_lines(path, workers: int, count: int) -> None:
    raw = path.read_bytes()
    assert raw.endswith(b"\n")
    seen: dict[int, list[int]] = {w: [] for w in range(workers)}
    for line in raw.split(b"\n")[:-1]:
        fields = json.loads(line)["fields"]  # every line is one whole record
        seen[fields["worker"]].append(fields["i"])
    assert seen == {w: list(range(count)) for w in range(workers)}


class TestConcurrency:
    def test_threads_write_whole_lines(self, tmp_path):
        p = tmp_path / "j.jsonl"
        with JsonlLogger(p) as logger:
            def work(worker: int) -> None:
                rng = random.Random(worker)
                scoped = logger.with_context(f"worker={worker}")
                for i in range(150):
                    scoped.log("w", {"worker": worker, "i": i, "payload": _payload(rng)})

            threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        _check_whole_lines(p, 6, 150)
        times = [json.loads(x)["time"] for x in p.read_text().splitlines()]
        assert times == sorted(times)  # stamped under the lock, so in file order

    def test_processes_write_whole_lines(self, tmp_path):
        p = tmp_path / "j.jsonl"
        ctx = multiprocessing.get_context("fork")
        procs = [ctx.Process(target=_append_lines, args=(str(p), w, 150, w)) for w in range(4)]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(60)
            assert proc.exitcode == 0
        _check_whole_lines(p, 4, 150)


# --- crash safety ---------------------------------------------------------------------------

TID = "{:016x}"


def _turn_spec(i: int):
    """Turn ``i`` of the crash session, computed from ``i`` alone (writer and checker agree)."""
    size = 3_000_000 if i % 7 == 6 else (i * 7919) % 40_000
    call = ToolCall(f"toolu_{i}", "read", {"path": f"/f/{i}", "opts": {"n": i, "utf": "ü"}})
    reply = AssistantMessage(f"reading {i}", (call,))
    results = ToolResults((ToolResult(f"toolu_{i}", ("é" if i % 2 else "x") * size),))
    final = AssistantMessage(f"done {i}")
    outcome = ("answered", "answered", "answered", "failed", "interrupted")[i % 5]
    usage = (Usage(100 + i, 10, 0, 0, "p", "m"), Usage(200 + i, 20, 5, 0, "p", "m"))
    return UserInput(f"turn {i} ✓"), (reply, results, final), outcome, usage


def _write_crash_session(path: str) -> None:
    with JsonlLogger(path) as logger:
        journal = Journal(logger.with_context("app.session=crash"))
        i = 0
        while True:
            user, (reply, results, final), outcome, usage = _turn_spec(i)
            journal.request({"text": user.text})
            turn = journal.turn(TID.format(i + 1))
            turn.user(user)
            turn.usage(usage[0])
            turn.assistant(reply)
            if i % 3 == 0:  # a subagent inside the tool call
                sub = turn.nested(reply.calls[0].id, TID.format(10_000 + i))
                sub.user(UserInput("sub"))
                sub.assistant(AssistantMessage("sub answer"))
                sub.answered()
            turn.tool_results(results)
            turn.usage(usage[1])
            turn.assistant(final)
            if outcome == "answered":
                turn.answered()
            elif outcome == "failed":
                turn.failed(f"error {i}")
            else:
                turn.interrupted()
            journal.response("turnEnd")
            i += 1


def _expected(i: int):
    user, messages, outcome, usage = _turn_spec(i)
    return (user, messages if outcome == "answered" else (), outcome, f"error {i}" if outcome == "failed" else "",
            usage)


def _complete_responses(raw: bytes) -> int:
    *lines, tail = raw.split(b"\n")
    try:  # a last line cut exactly before its newline is still whole
        lines.append(tail) if json.loads(tail) else None
    except ValueError:
        pass
    return sum(1 for line in lines if b'"event": "harpe.turn.response"' in line)


def _read_never_raising(path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        records = Journal.records(path)
    torn = [w for w in caught if issubclass(w.category, TornLineWarning)]
    assert len(caught) == len(torn) <= 1
    return records, bool(torn)


def _assert_recovered(path) -> bool:
    raw = path.read_bytes()
    records, torn = _read_never_raising(path)
    assert len(records) == _complete_responses(raw)
    for i, r in enumerate(records):
        assert (r.data.input, r.data.messages, r.data.outcome, r.data.error, r.usage) == _expected(i)
    return torn


class TestCrashSafety:
    def test_killed_writer_loses_no_completed_turn(self, tmp_path):
        rng = random.Random(20260903)
        torn_runs = 0
        for run in range(50):
            p = tmp_path / f"crash{run}.jsonl"
            pid = os.fork()
            if pid == 0:  # the child writes until it is killed
                try:
                    _write_crash_session(str(p))
                finally:
                    os._exit(1)
            deadline = time.monotonic() + 5
            while not p.exists() and time.monotonic() < deadline:
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, 0.06))
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            torn_runs += _assert_recovered(p)
        print(f"{torn_runs} of 50 kills left a torn last line")

    def test_truncated_anywhere(self, tmp_path):
        # every possible torn tail, deterministically: cut a finished session at random bytes
        full = tmp_path / "full.jsonl"
        pid = os.fork()
        if pid == 0:
            try:
                _write_crash_session(str(full))
            finally:
                os._exit(1)
        while not full.exists() or full.stat().st_size < 4_000_000:
            time.sleep(0.002)
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raw = full.read_bytes()
        rng = random.Random(7)
        cut = tmp_path / "cut.jsonl"
        torn = 0
        for offset in sorted(rng.sample(range(len(raw)), 100)) + [len(raw)]:
            cut.write_bytes(raw[:offset])
            torn += _assert_recovered(cut)
        assert torn > 40  # most cuts land inside a line
