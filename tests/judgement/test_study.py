"""``harpe-lab compare`` and ``harpe-lab tune``: strategies on a user's own sessions, each
session measured as the CLI's replay measures it, the answer first, the agent's own setting
for the tuned value."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from harpe_lab import datasets
from harpe_lab.cli import main
from harpe_lab.conversation import Conversation, Turn
from harpe_lab.messages import AssistantMessage, Usage, UserInput
from harpe_lab.presets import make_strategy
from harpe_lab.study import agent_setting, compare_sessions, totals_by_strategy, tune
from tests._support.data import REAL_DATA

CLAUDE = REAL_DATA / "claude_code"
SESSIONS = [CLAUDE / f"{s}.jsonl" for s in ("258c7280-ae70-4798-800f-63464d01a85d",
                                             "4d5611e5-241a-462a-8d15-5122611a9569")]
real = pytest.mark.skipif(not CLAUDE.is_dir(), reason="real Claude Code sessions are not on this machine")


def bundled() -> list[Conversation]:
    return [datasets.load(n) for n in datasets.list_datasets()]


def session(k: int, with_usage: bool) -> Conversation:
    """Six turns of growing questions, with the provider's usage or without."""
    turns = []
    for t in range(6):
        usage = (Usage(input_tokens=20_000 + 900 * t * (k + 1), output_tokens=10, model="gpt-4o"),) \
            if with_usage else ()
        turns.append(Turn(UserInput("question " * (40 * (t + 1))), (AssistantMessage("answer " * 30),),
                          usage=usage))
    return Conversation(tuple(turns), id=f"s{k}", metadata={"format": "openai"})


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def _bundled_path(name: str) -> Path:
    from importlib import resources

    return next(Path(str(resources.files("harpe_lab.datasets.data"))).glob(f"{name}.json*"))


class TestCompareSessions:
    def test_a_strategy_a_session_refuses_is_said_and_summed_over_the_others(self, capsys, tmp_path):
        # Codex refuses a limit above 90% of the window: coding_agent declares 200,000, support_chat none
        # (Codex's own 272,000 then)
        both = [_bundled_path("coding_agent"), _bundled_path("support_chat")]
        frame = compare_sessions(both, ["codex"], knobs={"high_water": 190_000}, workers=1, progress=False)
        assert list(frame.columns) == list(frame.attrs["columns"])
        totals = totals_by_strategy(frame).iloc[0]
        ran = frame[frame["refused"].isna()]
        assert list(ran["session"]) == ["support_chat"] and totals["refused"] == 1
        assert totals["input_tokens_sum"] == ran["input_tokens_sum"].iloc[0]
        assert totals["budget_note"].startswith("refused in 1 of 2 sessions: high_water must be at most 90% of window")
        refused = compare_sessions(both[:1], ["codex"], knobs={"high_water": 190_000}, workers=1, progress=False)
        alone = totals_by_strategy(refused).iloc[0]
        assert math.isnan(alone["input_tokens_sum"]) and math.isnan(alone["compactions"]) and alone["refused"] == 1
        from harpe_lab.study_report import write_study_report

        page = write_study_report(refused, tmp_path).read_text()
        assert "No strategy replayed every session within the budget it was compared at" in page
        assert "refused in 1 of 1 session: high_water must be at most 90% of window (180,000)" in page
        code, out, _ = run(["compare", both[0], "--strategies", "codex,full", "--set", "high_water=190000",
                            "--workers", "1"], capsys)
        assert code == 0 and "refused in 1 of 1 session: high_water must be at most 90% of window (180,000)" in out


    def test_one_row_per_session_strategy_and_budget(self):
        convs = bundled()
        frame = compare_sessions(convs, ["full", "chain", "masking"], budgets=[3_000, 6_000], workers=1,
                                 progress=False)
        assert len(frame) == len(convs) * 3 * 2
        assert set(frame.columns) <= set(frame.attrs["columns"])
        # a preset with no budget knob is replayed once and judged at each budget
        full = frame[frame["strategy"] == "full"]
        assert (full.groupby("session")["input_tokens_sum"].nunique() == 1).all()
        assert all(n.endswith("— no budget knob") or n.startswith("no budget knob") for n in full["budget_note"])

    def test_each_session_is_counted_as_the_cli_counts_it(self, capsys):
        from importlib.resources import files

        path = files("harpe_lab.datasets.data") / "coding_agent.jsonl"
        frame = compare_sessions([path], ["summarizing"], budgets=[4_000], workers=1, progress=False)
        code, out, _ = run(["replay", path, "--strategy", "summarizing", "--budget", "4000", "--format", "json"],
                           capsys)
        assert code == 0
        doc = json.loads(out)
        assert frame["input_tokens_sum"].iloc[0] == doc["totals"]["input_tokens_sum"]
        assert frame["compactions"].iloc[0] == doc["totals"]["compactions"]

    def test_only_a_window_in_tokens_takes_the_session_s_window(self, capsys):
        from importlib.resources import files

        from harpe_lab.presets import get_preset

        # hybrid's window counts tool rounds: set to the session's 200,000 it would never mask
        assert get_preset("hybrid").window_knob is None
        assert get_preset("codex").window_knob.name == "window"
        assert get_preset("claude-code").window_knob.name == "context_window"
        path = files("harpe_lab.datasets.data") / "coding_agent.jsonl"
        frame = compare_sessions([path], ["hybrid", "codex"], workers=1, progress=False).set_index("strategy")
        for name, window in (("hybrid", None), ("codex", 200_000)):
            code, out, _ = run(["replay", path, "--strategy", name, "--format", "json"], capsys)
            doc = json.loads(out)
            assert code == 0 and doc["window"] == window
            assert frame.loc[name, "input_tokens_sum"] == doc["totals"]["input_tokens_sum"]
        code, out, _ = run(["replay", path, "--strategy", "hybrid", "--set", "window=200000", "--format", "json"],
                           capsys)
        assert json.loads(out)["totals"]["input_tokens_sum"] > frame.loc["hybrid", "input_tokens_sum"]

    def test_the_summarizer_given_is_the_one_the_presets_call(self):
        from importlib.resources import files

        path = files("harpe_lab.datasets.data") / "coding_agent.jsonl"
        asked = []

        def distill(rendered):
            asked.append(rendered)
            return "The user wants the importer fixed; tests/test_importer.py fails."

        frame = compare_sessions([path], ["summarizing", "full"], budgets=[4_000], workers=1, progress=False,
                                 distill=distill)
        calls = frame.set_index("strategy")["distill_calls"]
        assert calls["summarizing"] == len(asked) > 0 and calls["full"] == 0

    def test_the_same_frame_on_one_process_or_two(self):
        convs = bundled()
        one = compare_sessions(convs, ["chain", "summarizing"], budgets=[4_000], workers=1, progress=False)
        two = compare_sessions(convs, ["chain", "summarizing"], budgets=[4_000], workers=2, progress=False)
        assert one.equals(two)

    def test_sessions_without_usage_share_a_fit_pooled_over_the_others(self):
        frame = compare_sessions([session(0, True), session(1, True), session(2, False)], ["full"], workers=1,
                                 progress=False)
        measures = frame.attrs["measures"]
        assert measures["s0"].calibrated and measures["s2"].calibrated
        assert "pooled over 2 sessions" in measures["s2"].counter_name
        assert measures["s2"].counter is not measures["s0"].counter

    def test_measured_where_replayed_or_up_front_the_same_frame(self):
        # compare measures each session in the worker that replays it; tune measures them all first
        from harpe_lab.study import _measures

        convs = [session(0, True), session(1, True), session(2, False), *bundled()]
        up_front = compare_sessions(convs, ["full", "chain"], budgets=[3_000], workers=1, progress=False,
                                    measures=_measures(convs, counter="cl100k_base", calibrate=True, pricing="auto"))
        for workers in (1, 2):
            frame = compare_sessions(convs, ["full", "chain"], budgets=[3_000], workers=workers, progress=False)
            assert frame.equals(up_front), workers
            assert "fit pooled over" in frame.attrs["measures"]["s2"].counter_name  # replayed again, pooled


class TestTotalsAndReport:
    def test_the_totals_lead_and_a_budget_that_did_not_bind_is_said(self, tmp_path):
        frame = compare_sessions(bundled(), ["full", "chain"], budgets=[3_000], workers=1, progress=False)
        totals = totals_by_strategy(frame)
        full = totals[totals["strategy"] == "full"].iloc[0]
        assert not full["budget_met"] and "no budget knob" in full["budget_note"]
        from harpe_lab.study_report import write_study_report

        index = write_study_report(frame, tmp_path)
        page = index.read_text()
        assert page.index("The answer") < page.index("Per session") < page.index("How each session was measured")
        assert "Cheapest with prompt caching" in page or "No strategy replayed every session" in page
        assert all((tmp_path / name).is_file() for name in ("cost.png", "session_0.png"))


@real
@pytest.mark.real_data
class TestOnRealSessions:
    def test_compare_from_the_command_line(self, tmp_path, capsys):
        code, out, err = run(["compare", *SESSIONS, "--strategies", "full,claude-code,chain,masking,trimming",
                              "--budget", "120000", "--out", tmp_path / "report", "--workers", "1"], capsys)
        assert code == 0, err
        assert "fitted to 102 recorded requests" in out and "claude-opus-4-6 input 5" in out
        table = out.split("\n\n", 1)[1]
        assert table.splitlines()[0].split()[:3] == ["strategy", "budget", "sessions"]
        assert len(table.strip().splitlines()) == 1 + 5
        csv = (tmp_path / "report" / "compare.csv").read_text().splitlines()
        assert len(csv) == 1 + 2 * 5
        page = (tmp_path / "report" / "index.html").read_text()
        assert "recorded auto compaction before request 103" in page
        # the per-session table of real sessions is wider than the page: it scrolls in its box
        chromium = Path("/usr/bin/chromium")
        if chromium.exists():
            from playwright.sync_api import sync_playwright

            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(chromium), args=[
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync"])
                try:
                    tab = browser.new_page(viewport={"width": 1280, "height": 900})
                    tab.goto((tmp_path / "report" / "index.html").resolve().as_uri(), wait_until="load")
                    assert tab.evaluate("document.documentElement.scrollWidth") <= 1280
                    assert tab.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)")
                finally:
                    browser.close()

    def test_compare_in_a_real_process(self, tmp_path):
        proc = subprocess.run([sys.executable, "-m", "harpe_lab", "compare", str(SESSIONS[1]), "--strategies",
                               "full,claude-code", "--format", "json", "--workers", "1"],
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        doc = json.loads(proc.stdout)
        cc = next(r for r in doc["sessions"] if r["strategy"] == "claude-code")
        assert cc["recorded_first_compaction"] == 62 and abs(cc["first_compaction"] - 62) <= 2

    def test_tune_recommends_a_claude_code_threshold_and_names_the_variable(self, capsys):
        code, out, err = run(["tune", SESSIONS[1], "--strategy", "claude-code", "--knob", "high_water=60000:166000",
                              "--points", "3", "--workers", "1"], capsys)
        assert code == 0, err
        line = next(x for x in out.splitlines() if x.startswith("recommended: high_water = "))
        value = int(line.split("= ")[1].split()[0].replace(",", ""))
        assert 60_000 <= value <= 166_000
        setting = next(x for x in out.splitlines() if x.startswith("export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE="))
        pct = int(setting.split("=")[1].split()[0])
        assert pct == math.floor(100 * value / 180_000)


class TestFolders:
    def test_a_stray_file_in_a_folder_is_named_and_skipped_a_file_named_is_an_error(self, tmp_path, capsys):
        import shutil
        from importlib import resources

        folder = tmp_path / "sessions"
        folder.mkdir()
        shutil.copy(Path(str(resources.files("harpe_lab.datasets.data"))) / "coding_agent.jsonl", folder)
        (folder / "manifest.json").write_text('{"sessions": 1}\n', encoding="utf-8")
        code, out, err = run(["compare", folder, "--strategies", "full", "--workers", "1", "--format", "json"],
                             capsys)
        assert code == 0
        assert f"skipped {folder / 'manifest.json'}: not a session in any format harpe_lab reads" in err
        assert [row["session"] for row in json.loads(out)["sessions"]] == ["coding_agent"]
        code, _, err = run(["compare", folder / "manifest.json", "--strategies", "full"], capsys)
        assert code != 0 and "manifest.json" in err and err.count("\n") == 1


class TestTune:
    def test_the_least_cost_is_recommended_and_the_grid_refined_around_it(self):
        result = tune(bundled(), "chain", knob="n", lo=10, hi=80, points=4, pricing="openai/gpt-4o", workers=1,
                      progress=False)
        f = result.frame
        assert len(f) > 4 and result.value in set(f["n"]) and result.knob == "n"
        assert f.loc[f["n"] == result.value, "cost_usd_cached"].iloc[0] == f["cost_usd_cached"].min()
        assert result.reason.startswith("the least cost with caching over 3 sessions: $")

    def test_without_a_window_the_range_ends_at_the_largest_request(self):
        # nothing states the window: the values worth trying end where the recorded requests
        # do (above, nothing compacts), and stay under the window the preset runs at (128,000)
        turns = tuple(Turn(UserInput(f"question {k}"), (AssistantMessage("a" * 4_000 * (k + 1)),),
                           usage=(Usage(30_000 + 1_000 * k, 10, model="m"),)) for k in range(8))
        result = tune([Conversation(turns, id="no-window")], "cline-basic", objective="tokens", points=3,
                      workers=1, progress=False)
        assert result.frame["high_water"].max() == 37_000 and result.frame["high_water"].min() == 37_000 // 5
        assert result.window is None
        big = tuple(Turn(t.input, t.messages, usage=(Usage(200_000 + t.usage[0].input_tokens, 10, model="m"),))
                    for t in turns)
        result = tune([Conversation(big, id="over")], "cline-basic", objective="tokens", points=3, workers=1,
                      progress=False)
        assert result.frame["high_water"].max() == 127_999

    def test_a_value_every_request_goes_over_is_flagged(self):
        # requests of 30,000+ tokens, nearly all of it what the file lacks (a system prompt and
        # tools): below that, the least cost is a value the agent cannot keep
        turns = tuple(Turn(UserInput(f"question {k}"), (AssistantMessage("a" * 4_000 * (k + 1)),),
                           usage=(Usage(30_000 + 1_000 * k, 10, model="m"),)) for k in range(8))
        sessions = [Conversation(turns, id="fixed-prompt")]
        low = tune(sessions, "cline-basic", objective="tokens", lo=2_000, hi=10_000, points=3, workers=1,
                   progress=False)
        assert low.reason.endswith("but every request went over it (8): what a request sends even after compacting "
                                   "(the agent's system prompt and tools) is above it, so the agent cannot keep it; "
                                   "no_overshoot (--no-overshoot) keeps to values it can")
        fits = tune(sessions, "cline-basic", objective="tokens", lo=33_000, hi=37_000, points=3, workers=1,
                    progress=False)
        assert fits.value == 36_000 and fits.reason == "the least tokens sent over 1 session: 265,655 tokens"

    def test_a_retention_floor_no_value_meets(self):
        result = tune(bundled(), "chain", knob="n", lo=2, hi=6, points=3, min_retention=1.01, workers=1,
                      progress=False)
        assert result.value is None and "retention ≥ 1.01" in result.reason

    def test_a_value_a_session_refuses_is_out_and_said(self, capsys):
        # Codex refuses a limit above 90% of the window: coding_agent declares 200,000
        coding = datasets.load("coding_agent")
        result = tune([coding], "codex", knob="high_water", lo=60_000, hi=190_000, points=3, pricing="openai/gpt-4o",
                      workers=1, progress=False)
        f = result.frame.set_index("high_water")
        assert f.loc[190_000, "refused"].startswith("refused by 1 of 1 session: high_water must be at most 90% of "
                                                    "window (180,000)")
        assert math.isnan(f.loc[190_000, "input_tokens_sum"]) and 190_000 not in set(result.frontier["high_water"])
        assert result.value != 190_000 and f["refused"].drop(190_000).isna().all()
        result = tune([coding], "codex", knob="high_water", lo=185_000, hi=190_000, points=2, workers=1,
                      progress=False)
        assert result.value is None and result.reason.startswith("every value between 185,000 and 190,000 was refused")
        code, out, _ = run(["tune", _bundled_path("coding_agent"), "--strategy", "codex", "--knob",
                            "high_water=185000:190000", "--points", "2", "--workers", "1"], capsys)
        assert code == 1 and "no recommendation: every value between 185,000 and 190,000 was refused" in out

    def test_the_agents_own_settings(self):
        assert agent_setting("claude-code", {"high_water": 90_000}).startswith(
            "export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE=50 ")
        assert "already" in agent_setting("claude-code", {"high_water": 167_000})
        assert agent_setting("summarizing", {"high_water": 8000, "low_water": 16000}) == \
            "SummarizingContext(system, high_water_tokens=8000, low_water_chars=16000)   # Harpe"
        assert agent_setting("chain", {"n": 5}) == ""

    @pytest.mark.parametrize("high_water", [1, 8_000, 100_000, 115_199, 230_401])
    def test_cline_s_setting_gives_back_the_tuned_trigger(self, high_water):
        # Cline compacts at 90% of the window a provider states: the window the line prints,
        # given back to the preset, triggers at the tuned value
        line = agent_setting("cline-basic", {"high_water": high_water})
        window = int(line.split('"contextWindow": ')[1].split()[0])
        assert make_strategy("cline-basic", window=window)().limit.tokens == high_water
        assert f"{high_water:,} tokens" in line and line == agent_setting("cline-agentic", {"high_water": high_water})

    def test_bad_arguments_are_one_line(self, capsys):
        code, _, err = run(["tune", "x.jsonl", "--strategy", "chain", "--knob", "n=5"], capsys)
        assert code == 2 and "--knob takes KNOB=LO:HI" in err and err.count("\n") == 1
        code, _, err = run(["compare", "x.jsonl", "--strategies", "full", "--budget", "5", "--budgets", "6,7"],
                           capsys)
        assert code == 2 and "not both" in err
