"""The ``harpe-lab`` command line, as a user meets it: bad input is one line on stderr with an
exit code scripts can rely on (1 bad input, 2 usage), never a traceback unless asked; the
output is rounded and aligned for people and raw for scripts."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harpe_lab.cli import main
from tests._support.data import DATA as FIXTURES, REAL_DATA

DATA = FIXTURES / "importers"
JOURNALS = FIXTURES / "journals"
REAL = REAL_DATA
CLAUDE = DATA / "claude_code" / "sess-0001.jsonl"
SWE = DATA / "swe_agent" / "classic.traj"


def run(argv, capsys):
    """``main(argv)`` in-process: (exit code, stdout, stderr); argparse's exits included."""
    try:
        code = main([str(a) for a in argv])
    except SystemExit as e:  # argparse reports usage errors by exiting
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_one_line_error(code, out, err, expected_code, *fragments):
    assert code == expected_code, err
    assert err.endswith("\n") and err.count("\n") == 1, f"expected one line on stderr, got:\n{err}"
    assert "Traceback" not in err
    assert out == ""
    for fragment in fragments:
        assert fragment in err, err


def chat_file(path: Path, turns: int = 3, words: int = 400) -> Path:
    """An OpenAI chat-messages transcript of our own text: long answers, so budgets bite."""
    messages = [{"role": "system", "content": "You answer questions about the garden."}]
    for k in range(turns):
        messages.append({"role": "user", "content": f"Question {k}: what grows in bed {k}?"})
        messages.append({"role": "assistant", "content": " ".join(f"tomato{k}-{j}" for j in range(words))})
    path.write_text(json.dumps(messages), encoding="utf-8")
    return path


@pytest.fixture()
def chat(tmp_path) -> Path:
    return chat_file(tmp_path / "garden.json")


# --- every bad input: exit code, one line, no traceback ------------------------------------


class TestBadInput:
    def test_missing_file(self, tmp_path, capsys):
        missing = tmp_path / "nope.jsonl"
        assert_one_line_error(*run(["replay", missing], capsys), 1, str(missing), "check the path")

    def test_folder(self, tmp_path, capsys):
        assert_one_line_error(*run(["replay", tmp_path], capsys), 1, str(tmp_path), "is a folder")

    def test_empty_file(self, tmp_path, capsys):
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(b"")
        assert_one_line_error(*run(["replay", empty], capsys), 1, str(empty), "empty")

    def test_binary_file(self, tmp_path, capsys):
        blob = tmp_path / "photo.jpg"
        blob.write_bytes(bytes(range(256)) * 4)
        assert_one_line_error(*run(["replay", blob], capsys), 1, str(blob), "binary")

    def test_unknown_json_shape(self, tmp_path, capsys):
        notes = tmp_path / "notes.json"
        notes.write_text(json.dumps({"shopping": ["eggs", "flour"], "done": False}))
        assert_one_line_error(*run(["replay", notes], capsys), 1, str(notes),
                              "not a transcript in any format", "--traceback")

    def test_negative_budget(self, chat, capsys):
        assert_one_line_error(*run(["replay", chat, "--strategy", "sliding", "--budget", "-5"], capsys), 2,
                              "--budget", "'-5'", "positive")

    @pytest.mark.parametrize("budget", ["0", "eight", "1.5"])
    def test_other_bad_budgets(self, chat, capsys, budget):
        assert_one_line_error(*run(["replay", chat, "--strategy", "sliding", "--budget", budget], capsys), 2,
                              "--budget", repr(budget))

    def test_counter_typo_lists_the_choices(self, chat, capsys):
        assert_one_line_error(*run(["replay", chat, "--counter", "gpt4"], capsys), 2,
                              "'gpt4'", "cl100k_base, o200k_base, bytes, approx")

    def test_strategy_typo_lists_the_names_on_stderr(self, chat, capsys):
        code, out, err = run(["replay", chat, "--strategy", "sumarizing"], capsys)
        assert_one_line_error(code, out, err, 2, "'sumarizing'", "did you mean summarizing", "--list")
        for name in ("full", "windowed", "sliding", "chain"):
            assert name in err

    def test_budget_error_names_the_cli_setting(self, tmp_path, capsys):
        # a question longer than the whole budget: no window can hold the latest turn
        chat = tmp_path / "long_question.json"
        chat.write_text(json.dumps([{"role": "user", "content": "why " * 300}, {"role": "assistant", "content": "ok"}]))
        code, out, err = run(["replay", chat, "--strategy", "sliding", "--budget", "50"], capsys)
        assert_one_line_error(code, out, err, 1, str(chat), "sliding", "--budget 50", "Raise --budget")
        assert "max_tokens" not in err.split("Raise")[-1]  # the advice is about the CLI's own flags

    def test_pricing_typo(self, chat, capsys):
        assert_one_line_error(*run(["replay", chat, "--pricing", "openai/gpt4o"], capsys), 2,
                              "--pricing", "'openai/gpt4o'", "gpt-4o")

    def test_each_count_says_what_it_counts(self, chat, capsys):
        assert_one_line_error(*run(["compare", chat, "--strategies", "full", "--workers", "0"], capsys), 2,
                              "--workers", "worker processes", "'0'")
        assert_one_line_error(*run(["tune", chat, "--strategy", "summarizing", "--points", "1.5"], capsys), 2,
                              "--points", "whole number of points", "'1.5'")

    def test_path_required_without_list(self, capsys):
        assert_one_line_error(*run(["replay"], capsys), 2, "PATH", "--list")

    def test_unknown_option_is_one_line(self, chat, capsys):
        assert_one_line_error(*run(["replay", chat, "--bugdet", "5"], capsys), 2, "--bugdet", "--help")

    def test_traceback_flag_shows_the_traceback(self, tmp_path, capsys):
        code, out, err = run(["replay", tmp_path / "nope.jsonl", "--traceback"], capsys)
        assert code == 1
        assert "Traceback (most recent call last)" in err and "FileNotFoundError" in err

    def test_traceback_flag_before_the_command(self, tmp_path, capsys):
        code, _, err = run(["--traceback", "journal", "inspect", tmp_path / "nope.jsonl"], capsys)
        assert code == 1 and "Traceback (most recent call last)" in err


# --- journal inspect | check: sniff first ---------------------------------------------------


class TestJournalSniff:
    @pytest.mark.parametrize("command", ["inspect", "check"])
    def test_claude_code_session_is_named(self, command, capsys):
        code, out, err = run(["journal", command, CLAUDE], capsys)
        assert_one_line_error(code, out, err, 1, "is a Claude Code session", f"harpe-lab replay {CLAUDE}")

    @pytest.mark.parametrize("command", ["inspect", "check"])
    def test_swe_agent_trajectory_is_named(self, command, capsys):
        assert_one_line_error(*run(["journal", command, SWE], capsys), 1, "is a SWE-agent trajectory")

    @pytest.mark.parametrize("command", ["inspect", "check"])
    def test_empty_binary_folder_missing(self, command, tmp_path, capsys):
        empty = tmp_path / "empty.jsonl"
        empty.write_text("\n\n")
        blob = tmp_path / "blob.jsonl"
        blob.write_bytes(b"\x00\xff\xfe" * 100)
        for path, what in ((empty, "empty"), (blob, "binary"), (tmp_path, "is a folder"),
                           (tmp_path / "none.jsonl", "no such file")):
            assert_one_line_error(*run(["journal", command, path], capsys), 1, str(path), what)

    def test_text_that_is_no_journal(self, tmp_path, capsys):
        notes = tmp_path / "notes.jsonl"
        notes.write_text("buy eggs\nwater the tomatoes\n")
        assert_one_line_error(*run(["journal", "inspect", notes], capsys), 1, "not a Harpe journal",
                              f"harpe-lab journal check {notes}")

    def test_torn_tail_is_diagnosed_once_and_no_warning_leaks(self, tmp_path, capsys):
        torn = tmp_path / "torn.jsonl"
        torn.write_bytes((JOURNALS / "g5.jsonl").read_bytes()[:-20])
        code, out, err = run(["journal", "inspect", torn], capsys)
        assert code == 0
        assert err == ""  # no raw TornLineWarning on the terminal
        assert out.count("the writer stopped mid-line") == 1

    def test_a_journal_still_reads(self, capsys):
        code, out, err = run(["journal", "inspect", JOURNALS / "g5.jsonl"], capsys)
        assert code == 0 and err == ""
        assert "turns" in out.splitlines()[0]


# --- replay output ----------------------------------------------------------------------------


class TestReplayOutput:
    def test_table_is_rounded_and_aligned(self, chat, capsys):
        code, out, err = run(["replay", chat, "--strategy", "windowed", "--budget", "1500"], capsys)
        assert code == 0 and err == ""
        assert "nan" not in out.lower()
        lines = out.splitlines()
        assert "openai" in lines[0] and "3 turns" in lines[0]
        assert "windowed at budget 1,500 tokens" in lines[1]
        header = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
        table = lines[header:lines.index("", header)]
        assert len(table) == 1 + 3  # one row per request
        assert len({len(row) for row in table[1:]}) == 1  # rows aligned to the same width
        assert any("," in row.split()[3] for row in table[1:])  # tokens with thousands separators
        share = next(line for line in lines if "cached prefix share" in line).split(":")[-1].strip()
        assert share.endswith("%") and len(share.split(".")[-1]) == 2  # one decimal, then "%"
        assert "cost" not in out  # no pricing, no cost, never nan

    def test_json_for_scripts(self, chat, capsys):
        code, out, _ = run(["replay", chat, "--strategy", "sliding", "--budget", "1500", "--format", "json"], capsys)
        assert code == 0
        doc = json.loads(out)
        assert doc["strategy"] == "sliding" and doc["budget"] == 1500 and doc["counter"] == "cl100k_base"
        assert len(doc["requests"]) == doc["totals"]["requests"] == 3
        assert all(r["input_tokens"] <= 1500 for r in doc["requests"])
        assert doc["totals"]["input_tokens_max"] == max(r["input_tokens"] for r in doc["requests"])
        assert "cost_usd" not in doc["totals"] and "cost_usd" not in doc["requests"][0]
        assert doc["requests"][0]["recorded_input_tokens"] is None  # NaN becomes null

    def test_csv_for_scripts(self, chat, capsys):
        code, out, _ = run(["replay", chat, "--format", "csv"], capsys)
        assert code == 0
        rows = list(csv.DictReader(io.StringIO(out)))
        assert len(rows) == 3
        assert [int(r["turn"]) for r in rows] == [0, 1, 2]
        # full history: every request holds everything before it, so it only grows
        sizes = [int(r["input_tokens"]) for r in rows]
        assert sizes == sorted(sizes) and sizes[0] < sizes[-1]

    def test_pricing_adds_the_cost(self, chat, capsys):
        code, out, _ = run(["replay", chat, "--pricing", "openai/gpt-4o", "--format", "json"], capsys)
        assert code == 0
        doc = json.loads(out)
        from harpe_lab.models import Pricing

        price = Pricing.for_model("openai/gpt-4o")
        inputs = sum(r["input_tokens"] for r in doc["requests"])
        assert doc["totals"]["cost_usd"] >= inputs * price.input > 0
        code, out, _ = run(["replay", chat, "--pricing", "openai/gpt-4o"], capsys)
        assert "prices (USD per million tokens): openai/gpt-4o input 2.5, output 10" in out
        assert "cost (USD): $" in out

    def test_no_model_named_means_no_cost_and_says_so(self, chat, capsys):
        code, out, _ = run(["replay", chat], capsys)
        assert code == 0
        assert "prices: none (the recording names no model; pass --pricing MODEL)" in out
        assert "cost (USD)" not in out
        assert "counter: cl100k_base, uncalibrated: the recording has no provider usage" in out

    def test_counters_differ(self, chat, capsys):
        sizes = {}
        for counter in ("cl100k_base", "bytes"):
            code, out, _ = run(["replay", chat, "--counter", counter, "--format", "json"], capsys)
            assert code == 0
            sizes[counter] = json.loads(out)["totals"]["input_tokens_sum"]
        assert sizes["bytes"] != sizes["cl100k_base"]  # --counter reaches the replay

    def test_list_shows_every_preset_with_its_knobs(self, capsys):
        from harpe_lab.presets import PRESETS

        code, out, err = run(["replay", "--list"], capsys)
        assert code == 0 and err == ""
        blocks: dict[str, list[str]] = {}
        for line in out.splitlines():
            if line and not line.startswith(" "):
                blocks[line.split()[0]] = [line]
            elif line.strip() and blocks:
                blocks[list(blocks)[-1]].append(line.strip())
        assert [n for n in blocks if n in PRESETS] == list(PRESETS)  # every preset, in registry order
        for preset in PRESETS.values():
            head, *knobs = blocks[preset.name]
            assert head.split()[1] == preset.family and preset.description in head
            for knob in preset.knobs:
                line = next(k for k in knobs if k.startswith(f"{knob.name} ({knob.unit}): default "))
                assert ("derived" if knob.default is None else f"{knob.default:,}") in line
                assert f"range {knob.minimum:,} to" in line
                assert ("[--budget]" in line) == (knob is preset.budget_knob)
                assert ("[--window]" in line) == (knob is preset.window_knob)
        assert any(k.startswith("window (tokens)") and "[--window]" in k for k in blocks["codex"])
        assert not any("[--window]" in k for k in blocks["hybrid"])  # its window counts tool rounds

    @pytest.mark.parametrize("name", __import__("harpe_lab.presets").presets.STRATEGIES)
    def test_every_preset_replays(self, chat, capsys, name):
        from harpe_lab.presets import PRESETS

        preset = PRESETS[name]
        budget = ["--budget", "700"] if preset.budget_knob is not None else []
        code, out, err = run(["replay", chat, "--strategy", name, *budget, "--format", "json"], capsys)
        assert code == 0, err
        doc = json.loads(out)
        assert doc["strategy"] == name and len(doc["requests"]) == 3
        assert doc["budget"] == (700 if budget else None)
        if preset.limit_kind == "budget":  # a hard promise: no request above it
            assert max(r["input_tokens"] for r in doc["requests"]) <= 700

    def test_set_another_knob(self, chat, capsys):
        code, out, _ = run(["replay", chat, "--strategy", "chain", "--set", "n=1", "--format", "json"], capsys)
        assert code == 0
        assert [r["messages_sent"] for r in json.loads(out)["requests"]] == [1, 1, 1]

    def test_set_the_budget_knob_is_reported_as_the_budget(self, chat, capsys):
        code, out, _ = run(["replay", chat, "--strategy", "summarizing", "--set", "high_water=900", "--format",
                            "json"], capsys)
        assert code == 0 and json.loads(out)["budget"] == 900

    @pytest.mark.parametrize("option, fragment", [
        (["--set", "n=0"], "n must be >= 1"),
        (["--set", "depth=3"], "has no knob 'depth'; its knobs: budget, n"),
        (["--set", "n"], "KNOB=VALUE"),
        (["--set", "n=inf"], "--set n=inf: must be a whole number"),
        (["--set", "budget=900", "--budget", "800"], "give one of them"),
    ])
    def test_bad_knob_is_a_usage_error(self, chat, capsys, option, fragment):
        assert_one_line_error(*run(["replay", chat, "--strategy", "chain", *option], capsys), 2, fragment)

    def test_budget_on_a_strategy_without_one(self, chat, capsys):
        assert_one_line_error(*run(["replay", chat, "--strategy", "full", "--budget", "900"], capsys), 2,
                              "--budget does not apply to the 'full' strategy")

    @pytest.mark.parametrize("strategy, option, fragment", [
        ("hybrid", ["--window", "9000"], "--window does not apply to the 'hybrid' strategy"),
        ("codex", ["--window", "9000", "--set", "window=9000"], "--window and --set window= both set the window"),
    ])
    def test_window_where_it_does_not_apply(self, chat, capsys, strategy, option, fragment):
        assert_one_line_error(*run(["replay", chat, "--strategy", strategy, *option], capsys), 2, fragment)

    def test_the_window_a_recording_does_not_declare_is_the_strategy_s_own_and_said(self, chat, capsys):
        code, out, _ = run(["replay", chat, "--strategy", "codex"], capsys)
        assert code == 0 and "window: the strategy's default, 272,000: the recording declares no window" in out
        code, out, _ = run(["replay", chat, "--strategy", "codex", "--window", "9000", "--format", "json"], capsys)
        assert code == 0 and json.loads(out)["window"] == 9_000

    def test_help_names_list_and_the_strategies(self, capsys):
        from harpe_lab.presets import PRESETS

        code, out, _ = run(["replay", "--help"], capsys)
        assert code == 0 and "--list" in out and "--pricing" in out and "--format" in out and "--set" in out
        assert all(name in out.split() or f"{name}," in out.split() for name in PRESETS)  # never cut at a hyphen
        code, out, _ = run(["--help"], capsys)
        assert code == 0 and "harpe-lab replay --list" in out


# --- as a real process ----------------------------------------------------------------------


def _harpe_lab(*args, **kw):
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}
    return subprocess.run([sys.executable, "-m", "harpe_lab", *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=120, **kw)


class TestProcess:
    def test_console_script_is_main(self):
        from importlib.metadata import entry_points

        (script,) = [e for e in entry_points(group="console_scripts") if e.name == "harpe-lab"]
        assert script.value == "harpe_lab.cli:main" and script.load() is main

    def test_bad_input_in_a_real_process(self, tmp_path):
        done = _harpe_lab("replay", tmp_path / "missing.jsonl")
        assert done.returncode == 1
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
        assert "missing.jsonl" in done.stderr

    def test_closed_pipe_is_quiet(self, tmp_path):
        big = chat_file(tmp_path / "long.json", turns=3000, words=3)
        env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_OFFLINE_MODE": "true"}
        proc = subprocess.Popen([sys.executable, "-m", "harpe_lab", "replay", str(big), "--counter", "approx"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        proc.stdout.readline()
        proc.stdout.close()  # the reader goes away, as `| head -1` does
        err = proc.stderr.read().decode()
        assert proc.wait(timeout=120) == 141
        assert err == ""


@pytest.mark.real_data
@pytest.mark.skipif(not (REAL / "claude_code").is_dir(), reason="real Claude Code sessions are not on this machine")
def test_real_claude_code_session(capsys):
    session = REAL / "claude_code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
    code, out, err = run(["replay", session, "--strategy", "autogen-token-limited", "--budget", "120000", "--format", "json"],
                         capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["format"] == "claude_code"
    assert doc["calibrated"] and doc["counter"] == "cl100k_base"
    assert doc["totals"]["requests"] > 100
    assert doc["totals"]["input_tokens_max"] <= 120_000
    # recorded usage is carried through for comparison with the simulation
    assert sum(r["recorded_input_tokens"] is not None for r in doc["requests"]) > 100
    code, out, err = run(["journal", "inspect", session], capsys)
    assert code == 1 and "is a Claude Code session" in err
