"""`make demo`'s job and the HTML report it writes."""

from __future__ import annotations

import pandas as pd

from harpe_lab.demo import run_demo
from harpe_lab.report import ReportSection, write_report


def test_demo_writes_a_report_for_a_dataset(tmp_path):
    lines: list[str] = []
    index = run_demo(tmp_path, datasets=("research_assistant",), echo=lines.append)
    page = index.read_text(encoding="utf-8")
    images = sorted(p.name for p in tmp_path.glob("*.png"))
    assert len(images) == 4 and all(f"src='{name}'" in page for name in images)
    # every strategy at every budget appears in the printed table and in the page
    printed = "\n".join(lines)
    for strategy in ("full", "windowed@", "summarizing@", "sliding@", "summarize-window@", "chain@"):
        assert strategy in printed and strategy in page
    assert "largest full-history request" in printed


def test_report_escapes_transcript_text(tmp_path):
    evil = "<script>window.__pwned=1</script>"
    section = ReportSection(evil, evil, tables=[(evil, pd.DataFrame({"strategy": [evil], "n": [1]}))],
                            images=[(evil, "a'b.png")])
    page = write_report(tmp_path, evil, [section], intro=evil).read_text(encoding="utf-8")
    assert "<script>" not in page
    assert page.count("&lt;script&gt;window.__pwned=1&lt;/script&gt;") >= 5
    assert "src='a&#x27;b.png'" in page
