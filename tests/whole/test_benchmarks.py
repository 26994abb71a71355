"""The benchmark runner still runs: every section at toy sizes, through its command line.

The figures of a ``--tiny`` run mean nothing; what is checked is that each section
produces its rows (so the benchmark code cannot rot unnoticed), that the LangChain and
harpe_lab sides agree message for message (the runner asserts it on every run), and that
the results file is written with the machine and a verdict beside every goal.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.peers import PAIRS
from benchmarks.replay import own_knobs_differ
from harpe_lab.presets import PRESETS
from tests._support.data import ROOT


def _run(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess, str]:
    out = tmp_path / "RESULTS.md"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--tiny", "--out", str(out), *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return done, out.read_text(encoding="utf-8") if out.exists() else ""


def _rows(table: str, section: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip("|").split("|")]
        for line in table.splitlines()
        if line.startswith("| ") and line.split("|")[1].strip() == section
    ]


OWN = own_knobs_differ()  # measured again at their own knobs
HAS_LANGCHAIN = importlib.util.find_spec("langchain_core") is not None
HAS_DASK = importlib.util.find_spec("distributed") is not None
HAS_MSGSPEC = importlib.util.find_spec("msgspec") is not None
needs_langchain = pytest.mark.skipif(not HAS_LANGCHAIN, reason="needs the bench extra (langchain-core)")


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess, str]:
    """One ``--tiny`` run of every section the installed extras allow (a single
    subprocess, shared by the tests)."""
    sections = ["floor", "journal", "scale", "dashboard", "peers", "sessions"] + (["langchain"] if HAS_LANGCHAIN else [])
    return _run(tmp_path_factory.mktemp("bench"), "--sections", ",".join(sections),
                *([] if HAS_DASK else ["--no-dask"]))  # fmt: skip


class TestTinyRun:
    def test_it_succeeds_and_prints_the_table(self, run):
        done, _ = run
        assert done.returncode == 0, done.stderr[-3000:]
        assert "| Section" in done.stdout

    @pytest.mark.parametrize(
        "section, rows",
        [("1 floor", len(PRESETS) + sum("distill" in p.needs for p in PRESETS.values())
          + len(OWN) + sum("distill" in PRESETS[n].needs for n in OWN)),
         ("1 scaling", len(PRESETS) + len(OWN)), ("3 journal", 4 + HAS_MSGSPEC), ("4 scale-out", 4 if HAS_DASK else 3),
         ("7 peers", sum(p.available() for p in PAIRS) + (not all(p.available() for p in PAIRS))),
         ("8 sessions", 5),
         pytest.param("2 LangChain", 4, marks=needs_langchain)],
    )  # fmt: skip
    def test_each_section_reports_its_rows(self, run, section, rows):
        _, results = run
        assert len(_rows(results, section)) == rows

    def test_every_missed_replay_goal_has_its_remains_row_and_no_other(self, run):
        _, results = run
        missed = {row[1] for section in ("1 floor", "1 scaling") for row in _rows(results, section)
                  if row[4] == "MISS"}
        remains = _rows(results, "1 remains")
        def of(preset, m):  # "X, its own knobs / …" is not a row of X's
            return m.startswith(f"{preset} /") or m.startswith(f"{preset}:")

        for row in remains:
            preset = row[1].split(": the replay with")[0]
            assert any(of(preset, m) for m in missed), row[1]
            assert row[2].endswith(" ms") and "warm 2N / N" in row[5] and "own time:" in row[5]
            assert re.search(r"the cyclic garbage collector \d+ ms of it", row[5]), row[5]
            assert re.search(r"the engine alone \d+ ms .*the strategy's own work about \d+ ms", row[5]), row[5]
            assert re.search(r"tokenizing the text it wrote, which its floor counts once too, \d+ ms \([\d,]+ texts", row[5])
        for m in missed:
            assert any(of(r[1].split(": the replay with")[0], m) for r in remains), m

    def test_the_dashboard_reports_milliseconds_with_a_verdict(self, run):
        _, results = run
        rows = _rows(results, "5 dashboard")
        assert rows, "no dashboard timings were read from benchmarks/widgets.py"
        for row in rows:
            assert row[2].endswith(" ms") and row[3] == "≤ 100 ms" and row[4] in ("PASS", "MISS")
        new = [row for row in rows if row[1] == "Explorer redraw: high water, new value"]
        assert new and re.search(r"the replay alone [\d.]+ ms \(the offline distiller [\d.]+ ms of it\)", new[0][5])

    def test_every_goal_has_a_verdict_and_every_value_is_a_number(self, run):
        _, results = run
        table = [line for line in results.splitlines() if line.startswith("| ") and "Section" not in line]
        assert table
        for line in table:
            cells = [c.strip() for c in line.strip("|").split("|")]
            value, goal, verdict = cells[2], cells[3], cells[4]
            assert value != "n/a", line
            assert (goal == "—") == (verdict == ""), line

    @needs_langchain
    def test_the_langchain_rows_say_both_sides_kept_the_same_messages(self, run):
        _, results = run
        rows = _rows(results, "2 LangChain")
        assert rows
        for row in rows:
            assert "same messages kept at every request" in row[5]

    def test_each_timed_peer_sent_the_same_requests_as_its_native_twin(self, run):
        _, results = run
        timed = [row for row in _rows(results, "7 peers") if "skipped" not in row[1]]
        assert len(timed) == sum(p.available() for p in PAIRS)
        for row in timed:
            assert "same request at every call" in row[5], row

    def test_the_load_before_each_section_is_recorded(self, run):
        _, results = run
        loads = results.split("## Machine load", 1)[1]
        listed = re.findall(r"^- \*\*(.+?)\*\*: ([0-9.]+) \(run (\d) of (\d) kept", loads, re.MULTILINE)
        sections = ["1 floor", "3 journal", "4 scale-out", "5 dashboard", "7 peers", "8 sessions"]
        assert [section for section, *_ in listed] == sections + (["2 LangChain"] if HAS_LANGCHAIN else [])
        for _, load, kept, runs in listed:
            assert float(load) >= 0 and (kept, runs) == ("1", "1")  # --tiny never runs a section again

    def test_a_section_run_on_a_busy_machine_is_run_again_and_the_quietest_kept(self, tmp_path):
        import os

        done, results = _run(tmp_path, "--sections", "journal", "--reruns", "1")
        assert done.returncode == 0, done.stderr[-3000:]
        (loads, kept, runs), = re.findall(r"^- \*\*3 journal\*\*: ([0-9., ]+) \(run (\d) of (\d) kept", results,
                                          re.MULTILINE)  # fmt: skip
        before = [float(x) for x in loads.split(", ")]
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
        assert len(before) == int(runs)
        if abs(before[0] - cores) > 0.005:  # shown to 2 decimals: 2.004 on 2 cores is busy, shown as 2.00
            assert (len(before) == 2) == (before[0] > cores)
        assert before[int(kept) - 1] == min(before)
        assert len(_rows(results, "3 journal")) == 4 + HAS_MSGSPEC  # the rows of one run, not of both

    def test_the_results_name_the_machine(self, run):
        _, results = run
        for key in ("**date**", "**cpu**", "**cores**", "**python**"):
            assert key in results


class TestArguments:
    def test_an_unknown_section_is_refused_with_the_choices(self, tmp_path):
        done, results = _run(tmp_path, "--sections", "floor,nope")
        assert done.returncode == 2
        assert "--sections must be among floor, langchain, journal, scale, dashboard" in done.stderr
        assert results == ""


class TestEngineAlone:
    """The remains rows split a warm replay into the engine's part and the strategy's by
    playing the preset's recorded requests back to the engine: that split means something
    only if the playback sends exactly what the strategy sent."""

    @pytest.mark.parametrize("name", ["full", "summarizing", "masking", "clearing", "sliding", "chain",
                                      "autogen-head-and-tail", "openhands-summarizing", "hybrid"])
    def test_a_playback_sends_what_the_strategy_sent(self, name):
        from benchmarks.replay import _playback, _recorder
        from harpe_lab.datasets import synthesize
        from harpe_lab.presets import make_strategy
        from harpe_lab.replay import replay
        from harpe_lab.tokens import TiktokenCounter

        counter = TiktokenCounter()
        conversation = synthesize(120, seed=3, tool_rate=0.6, result_chars=900)
        factory = make_strategy(name, budget=3000, counter=counter, system=conversation.system)
        recorder = _recorder(factory())
        replay(conversation, lambda: recorder, counter=counter, name=name)
        played = replay(conversation, lambda: _playback(recorder), counter=counter, name=name)
        recorded = replay(conversation, factory, counter=counter, name=name)  # no recorder in between
        assert name == "full" or recorded.requests["compacted"].any()  # the budget makes the strategy work
        assert played.requests.equals(recorded.requests)
        assert [(e.request, e.turn, e.kind, e.event) for e in played.events] == \
            [(e.request, e.turn, e.kind, e.event) for e in recorded.events]
        assert [played.rendered(i) for i in range(len(played.requests))] == \
            [recorded.rendered(i) for i in range(len(recorded.requests))]
        assert [played.summary(i) for i in range(len(played.requests))] == \
            [recorded.summary(i) for i in range(len(recorded.requests))]


class TestForked:
    """Each floor preset is measured in a forked child: what it returns, and what goes wrong
    in it, must come back, or a replay whose frame changed would pass unnoticed."""

    def test_the_result_comes_back_and_an_error_is_raised_here_as_it_was(self):
        import os

        from benchmarks.common import forked

        assert forked(lambda: [("1 floor", 1.25)]) == [("1 floor", 1.25)]
        assert forked(lambda: os.getpid()) != os.getpid()

        def frames_differ() -> None:
            raise AssertionError("codex 2N: a timed replay's request frame differs")

        with pytest.raises(AssertionError, match="codex 2N: a timed replay's request frame differs") as info:
            forked(frames_differ)
        assert "frames_differ" in str(info.value.__cause__)  # the child's traceback
        with pytest.raises(RuntimeError, match=r"died without a result \(wait status 768\)"):
            forked(lambda: os._exit(3))


class TestOwnText:
    """A remains row says how long a replay spends tokenizing text the strategy wrote,
    which the floor never counts: that figure must time exactly those texts."""

    def _go(self, name):
        from harpe_lab.presets import make_strategy
        from harpe_lab.replay import replay

        def go(conversation, counter):
            factory = make_strategy(name, budget=3000, counter=counter, system=conversation.system)
            return replay(conversation, factory, counter=counter, name=name)

        return go

    def test_the_timed_counter_times_each_new_text_and_each_text_counted_by_lines(self):
        from benchmarks.replay import _timed_counter

        counter = _timed_counter()
        assert counter.count("a new text") == counter.count("a new text")  # the second from the memo
        assert counter.count_lines("one\ntwo\n") == counter.count("one\ntwo\n")
        assert (counter.texts, counter.chars) == (3, len("a new text") + 2 * len("one\ntwo\n"))
        assert counter.seconds > 0

    def test_the_floor_gets_each_text_once_and_how_it_was_counted(self):
        from benchmarks.replay import _timed_counter

        counter = _timed_counter()
        counter.count("counted before")
        counter.recording = True
        counter.count("a new text")
        counter.count_lines("one\ntwo\n")
        counter.count("a new text")
        counter.count_lines("one\ntwo\n")  # not memoized whole: timed again, recorded once
        assert counter.texts == 4
        assert counter.recorded == [(False, "a new text"), (True, "one\ntwo\n")]
        plain = _timed_counter()
        plain.count("a new text")
        assert plain.texts == 1 and plain.recorded == []

    def test_a_strategy_that_writes_nothing_tokenizes_nothing_new(self):
        from benchmarks.replay import _own_text
        from harpe_lab.datasets import synthesize

        conversation = synthesize(60, seed=3, tool_rate=0.6, result_chars=900)
        seconds, texts, chars = _own_text(conversation, self._go("windowed"), 1)
        assert (seconds, texts, chars) == (0.0, 0, 0)

    def test_it_times_each_stand_in_once(self):
        from benchmarks.replay import _own_text
        from harpe_lab.datasets import synthesize
        from harpe_lab.messages import ToolResults
        from harpe_lab.tokens import TiktokenCounter

        conversation = synthesize(60, seed=3, tool_rate=0.6, result_chars=900)
        seconds, texts, chars = _own_text(conversation, self._go("trimming"), 1)
        sent = self._go("trimming")(conversation, TiktokenCounter())
        originals = {r.content for m in conversation.messages() if isinstance(m, ToolResults) for r in m.results}
        written = {r.content for i in range(len(sent.requests)) for m in sent.rendered(i).messages
                   if isinstance(m, ToolResults) for r in m.results} - originals
        assert written and all(t.startswith("[Trimmed: ") for t in written)
        assert (texts, chars) == (len(written), sum(map(len, written)))
        assert seconds > 0
