"""`make demo`'s job and the HTML report it writes: every preset of the registry, every
bundled dataset, every number in a table equal to `totals` of one replay's frame, each
conversation measured as the CLI measures it, and rankings at a budget that leave out the
strategies the budget did not bind."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from harpe_lab import datasets
from harpe_lab.demo import (
    DEMO_FRACTIONS,
    DEMO_PRICING,
    DEMO_STRATEGIES,
    TABLE_COLUMNS,
    demo_measure,
    demo_replays,
    run_demo,
)
from harpe_lab.evaluate import (BUDGET_SLACK, budget_fit, compare, instructions_totals, needs_totals, rank_at_budget,
                                with_probe_turn)
from harpe_lab.presets import PRESETS
from harpe_lab.replay import totals
from harpe_lab.report import (
    COLUMN_LABELS,
    GLOSSARY,
    ReportSection,
    compactions_table,
    compare_columns_markdown,
    format_value,
    glossary_markdown,
    limit_sentence,
    limit_table,
    write_report,
)
from tests._support.data import ROOT

WITH_DENOMINATOR = re.compile(r"^(–|\d+\.\d% \((\d+) of (\d+)\))$")
NUMBER = re.compile(r"^(–|-?\d{1,3}(,\d{3})*|-?\d+\.\d%|\$\d{1,3}(,\d{3})*\.\d{4})$")


class _Page(HTMLParser):
    """The report as sections: h2 → {h3 caption → table rows (header first) or list items}."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: dict[str, dict[str, list]] = {}
        self._h2 = self._h3 = None
        self._tag: str | None = None
        self._text = ""
        self._row: list[str] | None = None
        self._cell: str | None = None

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3", "li"):
            self._tag, self._text = tag, ""
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = ""

    def handle_endtag(self, tag):
        if tag == "h2" and self._tag == "h2":
            self._h2, self._h3, self._tag = self._text.strip(), None, None
            self.sections[self._h2] = {}
        elif tag == "h3" and self._tag == "h3":
            self._h3, self._tag = self._text.strip(), None
            self.sections[self._h2][self._h3] = []
        elif tag == "li" and self._tag == "li":
            self.sections[self._h2][self._h3].append(self._text.strip())
            self._tag = None
        elif tag in ("td", "th") and self._row is not None:
            self._row.append(self._cell)
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.sections[self._h2][self._h3].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data
        elif self._tag:
            self._text += data


@pytest.fixture(scope="module")
def demo(demo_report):
    """The demo on every bundled dataset, and the same replays run again independently,
    measured as the CLI measures them."""
    index, printed = demo_report
    page = _Page()
    page.feed(index.read_text(encoding="utf-8"))
    runs = {}
    for name in datasets.list_datasets():
        m = demo_measure(datasets.load(name))
        runs[name] = demo_replays(with_probe_turn(datasets.load(name)), counter=m.counter, pricing=m.pricing)
    return index, page.sections, printed, runs


def test_every_preset_runs_on_every_dataset(demo):
    index, sections, printed, runs = demo
    for name, run in runs.items():
        labels = set(run.replays) | {label for label, _ in run.refused}
        for preset in DEMO_STRATEGIES:
            p = PRESETS[preset]
            expected = {preset} if p.budget_knob is None else {f"{preset}@{b}" for b in run.budgets}
            assert expected <= labels, (name, preset)
        assert len(run.budgets) == len(DEMO_FRACTIONS)
        assert f"largest full-history request: {run.peak:,} tokens" in printed


def test_table_rows_are_the_totals_of_each_frame(demo):
    _, sections, _, runs = demo
    for name, run in runs.items():
        section = sections[name]
        for caption, columns in TABLE_COLUMNS:
            header, *rows = section[caption]
            assert header == [COLUMN_LABELS[c] for c in columns]
            assert [r[0] for r in rows] == list(run.replays)  # every replay that ran, none that raised
            for row in rows:
                t = totals(run.replays[row[0]].requests)
                for column, cell in zip(columns[1:], row[1:]):
                    if column in t:
                        assert cell == format_value(column, t[column]), (name, row[0], column)


def test_one_number_format_everywhere(demo):
    _, sections, _, _ = demo
    checked = 0
    for name in datasets.list_datasets():
        for caption, rows in sections[name].items():
            if rows and isinstance(rows[0], str):
                continue  # a list of lines, not a table
            header, *body = rows
            per_category = caption.startswith("Retention per probe category")
            for row in body:
                if len(row) < len(header):  # a strategy kept out of a ranking: its note across the row
                    assert caption.startswith("Best at ") and len(row) == 2, (name, caption, row)
                    assert re.fullmatch(r"sends up to [\d,]+ — .+", row[1]), (name, caption, row)
                    continue
                for label, cell in zip(header[1:], row[1:]):
                    if per_category:
                        match = WITH_DENOMINATOR.match(cell)
                        assert match, (name, caption, label, cell)
                        if match.group(2):  # the kept count never exceeds the denominator
                            assert int(match.group(2)) <= int(match.group(3)), (name, row[0], label, cell)
                    elif label == "of":
                        assert re.fullmatch(r"\d+ findable of \d+ probes", cell), (name, caption, cell)
                    elif label not in ("limit", "error"):
                        assert NUMBER.match(cell), (name, caption, label, cell)
                        checked += 1
    assert checked > 500
    for name in datasets.list_datasets():  # priced per call, or as DEMO_PRICING where no model is named
        costs = [r[-1] for r in sections[name]["Summaries, cache and cost"][1:]]
        assert costs and all(c.startswith("$") for c in costs), name


def test_every_overshooting_strategy_is_listed_with_how_often(demo):
    _, sections, printed, runs = demo
    listed = sections["Over the limit, and refused"]["Strategies that go over their limit"]
    expected = []
    for name, run in runs.items():
        over = [label for label, r in run.replays.items() if totals(r.requests)["overshoots"] > 0]
        assert all(run.replays[label].limit is not None for label in over)
        table = limit_table(run.replays)
        assert sorted(table["strategy"]) == sorted(over)
        expected += [f"{name}: {limit_sentence(row)}" for _, row in table.iterrows()]
        # the per-dataset table too, with how often
        if over:
            header, *rows = sections[name]["Over the limit: requests above the strategy's declared limit"]
            assert sorted(r[0] for r in rows) == sorted(over)
    assert listed == expected and len(expected) > 0
    summarizing = [line for line in listed if line.startswith("support_chat: summarizing@")]
    assert summarizing and all(re.search(r"in \d+ of \d+ requests \(\d+\.\d%\), by up to [\d,]+ tokens$", s)
                               for s in summarizing)  # fmt: skip
    refused = sections["Over the limit, and refused"]["Strategies that refused (raised)"]
    expected_refused = [f"{name}: {label} — {reason}" for name, run in runs.items() for label, reason in run.refused]
    assert refused == (expected_refused or ["none"])


def test_glossary_is_shared_with_the_docs(demo):
    _, sections, _, _ = demo
    page = Path(demo[0]).read_text(encoding="utf-8")
    docs = (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
    assert glossary_markdown() in docs
    assert compare_columns_markdown() in docs  # compare's columns, one meaning each, the headline named
    assert "Glossary" in sections
    for name, text in GLOSSARY:
        assert f"<dt><code>{name}</code></dt>" in page
    for column in ("compacted", "summarized", "messages_dropped", "overshoot_tokens", "cached_prefix_tokens",
                   "input_tokens", "system_tokens", "summary_tokens", "history_tokens", "turn_tokens",
                   "distill_calls", "cost_usd", "cost_usd_cached"):  # fmt: skip
        assert column in dict(GLOSSARY)


def test_pictures_are_written_and_explained(demo):
    index, sections, _, _ = demo
    page = index.read_text(encoding="utf-8")
    images = sorted(p.name for p in index.parent.glob("*.png"))
    assert len(images) == 5 * len(datasets.list_datasets())
    assert all(f"src='{name}'" in page for name in images)
    assert "How to read the pictures" in sections and "▼ a compacted request" in page and "○ a summary" in page


MEASURED = "How it was measured (as harpe-lab replay measures it)"


def test_each_conversation_says_how_it_was_measured(demo):
    _, sections, printed, _ = demo
    for name in datasets.list_datasets():
        lines = sections[name][MEASURED]
        assert [line for line in lines if line in demo_measure(datasets.load(name)).lines()] == \
            demo_measure(datasets.load(name)).lines()  # the CLI's header, and what the demo adds to it
        assert lines[0].startswith("counter: ") and lines[1].startswith("prices ")
        assert lines[0] in printed
    # the bundled chats carry no provider usage: their counts are said to be uncalibrated
    for name in ("research_assistant", "support_chat"):
        lines = sections[name][MEASURED]
        assert lines[0] == ("counter: cl100k_base, uncalibrated: the recording has no provider usage to fit it to, "
                            "so counts are the tokenizer's estimate")  # fmt: skip
        assert lines[1].startswith(f"prices (USD per million tokens): {DEMO_PRICING} ")
        assert lines[1].endswith("a stand-in for every call: the recording names no model the price table knows")
        assert "recorded: no provider usage in the file" in lines
    # the coding session carries Claude usage: calibrated on it, priced per call, cache write and TTL shown
    lines = sections["coding_agent"][MEASURED]
    fitted = r"counter: cl100k_base fitted to \d+ recorded requests \(×[\d.]+ \+ [\d,]+; .*median error"
    assert re.match(fitted, lines[0]), lines[0]
    assert lines[1].startswith("prices (per call, ") and "cache write" in lines[1] and "TTL" in lines[1]
    assert any(re.match(r"recorded: \d+ calls, .*cost \$[\d.]+ with caching \(\$[\d.]+ without\)", line)
               for line in lines)  # fmt: skip
    assert "recorded compactions: none" in lines


def test_each_budget_ranks_only_the_strategies_that_kept_it(demo):
    _, sections, _, runs = demo
    for name, run in runs.items():
        judged = compare(list(run.replays.values()))
        labels = list(run.replays)
        for budget in run.budgets:
            caption = next(c for c in sections[name] if c.startswith(f"Best at {budget:,} tokens by retention"))
            header, *rows = sections[name][caption]
            assert header[:3] == ["strategy", "rank", "retention"]
            mine = [k for k in labels if k.endswith(f"@{budget}") or ("@" not in k and PRESETS[k].budget_knob is None)]
            rows_by = {r[0]: r for r in rows}
            assert set(rows_by) == set(mine), (name, budget)
            frame = judged.iloc[[labels.index(k) for k in mine]].copy()
            fits = [budget_fit(run.replays[k], budget) for k in mine]
            frame["budget_met"], frame["budget_note"] = [f[0] for f in fits], [f[1] for f in fits]
            ranked = rank_at_budget(frame)
            assert [r[0] for r in rows] == ranked["strategy"].tolist()
            for _, r in ranked.iterrows():
                row = rows_by[r["strategy"]]
                largest = totals(run.replays[r["strategy"]].requests)["input_tokens_max"]
                if r["budget_met"]:
                    assert largest <= budget * (1 + BUDGET_SLACK)
                    if r["unranked"] == "":
                        assert row[1] == format_value("rank", r["rank"])
                        assert row[2] == format_value("retention", r["retention"])
                else:  # kept out, with why
                    assert largest > budget * (1 + BUDGET_SLACK)
                    assert row == [r["strategy"], r["budget_note"]]
                    assert r["budget_note"].startswith(f"sends up to {largest:,} — ")
            # full sends everything whatever the budget: never ranked below the largest request
            if run.replays["full"].requests["input_tokens"].max() > budget * (1 + BUDGET_SLACK):
                assert rows_by["full"][1].endswith("— no budget knob")


def test_report_escapes_transcript_text(tmp_path):
    evil = "<script>window.__pwned=1</script>"
    section = ReportSection(evil, evil, tables=[(evil, pd.DataFrame({"strategy": [evil], "n": [1]}))],
                            images=[(evil, "a'b.png")], bullets=[(evil, [evil])])  # fmt: skip
    page = write_report(tmp_path, evil, [section], intro=evil).read_text(encoding="utf-8")
    assert "<script>" not in page
    assert page.count("&lt;script&gt;window.__pwned=1&lt;/script&gt;") >= 7
    assert "src='a&#x27;b.png'" in page


@pytest.mark.parametrize("column, value, shown", [
    ("input_tokens_sum", 1234567, "1,234,567"), ("input_tokens_median", 6942.5, "6,942"),
    ("cached_prefix_share", 0.45349, "45.3%"), ("cost_usd", 0.012345, "$0.0123"),
    ("cost_usd_cached", float("nan"), "–"), ("strategy", "chain@8000", "chain@8000"),
])  # fmt: skip
def test_format_value(column, value, shown):
    assert format_value(column, value) == shown


# --- a real recording: the report's numbers are the CLI's ------------------------------------

SESSION = "claude_code/258c7280-ae70-4798-800f-63464d01a85d.jsonl"


@pytest.mark.real_data
@pytest.mark.slow
def test_the_report_on_a_real_session_holds_the_clis_totals(real_data, tmp_path, capsys):
    from harpe_lab.cli import main
    from harpe_lab.importers import load_any

    path = real_data / SESSION
    if not path.exists():
        pytest.skip(f"{path} is absent")
    cli = {}
    for preset in ("full", "claude-code"):
        assert main(["replay", str(path), "--strategy", preset, "--format", "json"]) == 0
        cli[preset] = json.loads(capsys.readouterr().out)

    conversation = load_any(str(path))
    lines: list[str] = []
    index = run_demo(tmp_path, conversations={"session": conversation}, strategies=("full", "claude-code"),
                     echo=lines.append)  # fmt: skip
    page = _Page()
    page.feed(index.read_text(encoding="utf-8"))
    section = page.sections["session"]
    m = demo_measure(conversation)
    assert section[MEASURED] == m.lines() and m.calibrated  # the CLI's header, calibrated on the usage
    assert cli["full"]["counter"] == m.counter_name and cli["full"]["calibrated"]
    for caption, columns in TABLE_COLUMNS[:2]:
        header, *rows = section[caption]
        by_label = {r[0]: r for r in rows}
        for preset, doc in cli.items():  # the preset at its defaults, as `--strategy NAME` runs it
            for column, cell in zip(columns[1:], by_label[preset][1:]):
                if column in doc["totals"]:
                    assert cell == format_value(column, doc["totals"][column]), (preset, column)
    # and the numbers themselves, not only their format
    run = demo_replays(conversation, counter=m.counter, pricing=m.pricing, strategies=("full", "claude-code"),
                       defaults=True)  # fmt: skip
    for preset, doc in cli.items():
        mine = {**totals(run.replays[preset].requests), **needs_totals(run.replays[preset]),
                **instructions_totals(run.replays[preset])}
        for key, value in doc["totals"].items():
            assert mine[key] == pytest.approx(value, rel=1e-9), (preset, key)
        replayed = [int(i) for i in run.replays[preset].requests.query("compacted")["request"]]
        assert replayed == doc["replayed_compactions"]

    # what happened beside what would have happened
    caption = next(c for c in section if c.startswith("Compactions: each preset at its defaults"))
    header, *rows = section[caption]
    assert header == ["strategy", "compactions", "compacted at request", "against the recorded",
                      "cost with cache before it"]  # fmt: skip
    expected = compactions_table({k: run.replays[k] for k in ("full", "claude-code")}, m.recorded)
    assert [r[0] for r in rows] == ["recorded", "full", "claude-code"] == expected["strategy"].tolist()
    recorded = [c["request"] for c in cli["full"]["recorded"]["compactions"]]
    assert rows[0][1:3] == [str(len(recorded)), ", ".join(f"{r:,}" for r in recorded)]
    replayed = cli["claude-code"]["replayed_compactions"]
    assert rows[2][3] == f"{recorded[0]:,} → {replayed[0]:,} ({replayed[0] - recorded[0]:+,})"
    assert abs(replayed[0] - recorded[0]) <= 2  # the target: within two calls of the real one
    assert rows[1][3] == f"{recorded[0]:,} → none"
    # the full history's cost up to the recorded compaction is the recorded cost, within 5%
    full, real = (float(r[4].lstrip("$").replace(",", "")) for r in (rows[1], rows[0]))
    assert full == pytest.approx(real, rel=0.05)


def test_transcript_text_in_a_recording_is_escaped_in_the_report(tmp_path):
    from harpe_lab.conversation import Conversation, Turn
    from harpe_lab.messages import AssistantMessage, UserInput

    evil = "<script>window.__pwned=1</script>"
    turns = tuple(Turn(UserInput(f"{evil} {k}"), (AssistantMessage(f"{evil} reply {k}"),)) for k in range(6))
    conversation = Conversation(turns, id=evil, metadata={"format": evil})
    index = run_demo(tmp_path, conversations={evil: conversation}, strategies=("full", "sliding"),
                     echo=lambda line: None)  # fmt: skip
    page = index.read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert all("<" not in p.name for p in tmp_path.iterdir())  # picture names are slugs
