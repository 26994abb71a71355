"""`make demo`'s job and the HTML report it writes: every preset of the registry, every
bundled dataset, and every number in a table equal to `totals` of one replay's frame."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from harpe_lab import datasets
from harpe_lab.demo import DEMO_FRACTIONS, DEMO_PRICING, DEMO_STRATEGIES, TABLE_COLUMNS, demo_replays
from harpe_lab.evaluate import with_probe_turn
from harpe_lab.presets import PRESETS
from harpe_lab.models import Pricing
from harpe_lab.replay import totals
from harpe_lab.report import (
    COLUMN_LABELS,
    GLOSSARY,
    ReportSection,
    format_value,
    glossary_markdown,
    limit_sentence,
    limit_table,
    write_report,
)
from harpe_lab.tokens import TiktokenCounter

ROOT = Path(__file__).resolve().parents[1]
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
    """The demo on every bundled dataset, and the same replays run again independently."""
    index, printed = demo_report
    page = _Page()
    page.feed(index.read_text(encoding="utf-8"))
    counter = TiktokenCounter("cl100k_base")
    price = Pricing.for_model(DEMO_PRICING)
    runs = {name: demo_replays(with_probe_turn(datasets.load(name)), counter=counter, pricing=price)
            for name in datasets.list_datasets()}  # fmt: skip
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
            header, *body = rows
            per_category = caption.startswith("Retention per probe category")
            for row in body:
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
    costs = [r[-1] for r in sections["support_chat"]["Summaries, cache and cost"][1:]]
    assert all(c.startswith("$") for c in costs)  # priced: the demo fills the cost columns


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
    assert glossary_markdown() in (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8")
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
