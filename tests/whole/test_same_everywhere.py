"""One real session gives the same totals on every surface: the CLI's default replay, the
Explorer, notebook 06, the report and compare — each measuring it the same way by default, and
setting a coding agent's window to the one the session declares."""

from __future__ import annotations

import json

import pytest

from harpe_lab.cli import main
from tests._support.data import REAL_DATA, ROOT

SESSION = REAL_DATA / "claude_code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
NOTEBOOK = ROOT / "notebooks" / "06_agent_sessions.ipynb"
KEYS = ("requests", "input_tokens_sum", "input_tokens_max", "compactions", "overshoots", "distill_calls",
        "cache_read_tokens_sum", "cache_write_tokens_sum", "cost_usd", "cost_usd_cached")

pytestmark = [pytest.mark.real_data, pytest.mark.slow,
              pytest.mark.skipif(not SESSION.is_file(), reason="real Claude Code sessions are not on this machine")]


def cli_json(strategy: str, capsys) -> dict:
    assert main(["replay", str(SESSION), "--strategy", strategy, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def notebook_totals(monkeypatch) -> tuple[dict[str, dict], str]:
    """Notebook 06 run on the session (HARPE_LAB_SESSION), then asked for its replays' totals;
    and what its cells printed."""
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("HARPE_LAB_SESSION", str(SESSION))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(str(NOTEBOOK), as_version=4)
    probe = nbformat.v4.new_code_cell(
        "import json\nprint('TOTALS ' + json.dumps({'full': full.totals(), 'claude-code': as_claude_code.totals(), "
        "'cline-basic': agents['cline-basic'].totals()}))")
    nb.cells.append(probe)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    printed = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
                      if o.get("output_type") == "stream")
    totals = next(line for line in printed.splitlines() if line.startswith("TOTALS "))[len("TOTALS "):]
    return json.loads(totals), printed


def test_the_cli_the_explorer_notebook_06_and_the_report_agree(capsys, monkeypatch, tmp_path):
    from harpe_lab.demo import run_demo
    from harpe_lab.importers import load_any
    from harpe_lab.widgets import Explorer

    # cline-basic's window is the model's: 200,000 as the session declares, not its own 128,000
    names = ("full", "claude-code", "cline-basic")
    as_json = {name: cli_json(name, capsys) for name in names}
    cli = {name: as_json[name]["totals"] for name in as_json}
    explorer = {}
    for name in names:
        e = Explorer(str(SESSION), strategy=name, datasets=False)
        explorer[name] = e.replay.totals()
    notebook, printed = notebook_totals(monkeypatch)
    run = run_demo(tmp_path, conversations={"session": load_any(SESSION)}, strategies=names, echo=lambda _: None)
    assert run.is_file()
    from harpe_lab.demo import demo_measure, demo_replays

    conv = load_any(SESSION)
    m = demo_measure(conv)
    report = {k: r.totals() for k, r in demo_replays(conv, counter=m.counter, pricing=m.pricing,
                                                     strategies=names, defaults=True).replays.items()
              if k in names}
    assert main(["compare", str(SESSION), "--strategies", ",".join(names), "--format", "json"]) == 0
    compared = {row["strategy"]: row for row in json.loads(capsys.readouterr().out)["sessions"]}
    for name in names:
        for key in KEYS:
            values = [cli[name][key], explorer[name][key], notebook[name][key], report[name][key]]
            if key in compared[name]:
                values.append(compared[name][key])
            assert all(v == pytest.approx(values[0], rel=1e-9) for v in values), (name, key, values)
    assert cli["claude-code"]["compactions"] >= 1 and cli["full"]["cost_usd_cached"] > 0
    assert as_json["cline-basic"]["window"] == 200_000
    assert main(["replay", str(SESSION), "--strategy", "cline-basic", "--window", "128000", "--format", "json"]) == 0
    own = json.loads(capsys.readouterr().out)["totals"]
    assert own["input_tokens_sum"] != cli["cline-basic"]["input_tokens_sum"]  # the window is what made them agree
    # the cost up to the recorded compaction, which the CLI prints beside the recorded bill:
    # the notebook counts the same recorded calls
    against = as_json["full"]["cost_against_recorded"]
    # and leaves out the same requests with no recorded call (this session has one at most)
    (left_out,) = against["unrecorded_requests"] or [None]
    counted = f"{against['calls']} recorded calls" + (f"; request {left_out} left out: no recorded call"
                                                       if left_out is not None else "")
    assert (f"before the first recorded compaction ({counted}): "
            f"recorded ${against['recorded_usd']:,.2f}, replayed full ${against['replayed_usd']:,.2f}") in printed
