"""Notebook 03 on a real Claude Code session, in a real browser: Voilà runs it, Chromium shows it.

The notebook invites readers to run it on their own session (``HARPE_LAB_SESSION``). This
runs it on the longest real Claude Code session in ``../shared/data/real/claude_code``
(skipped when absent) from the first cell to the Compare widget, and checks that nothing
failed on the way and that Compare applied the budget the notebook computed from the
session's size (above 100,000 tokens: a slider capped lower would clamp it).

Needs Debian's ``chromium`` and the ``playwright`` package, as tests/views/test_browser.py, whose
Voilà server and browser fixture it reuses. ``HARPE_LAB_SCREENSHOTS=DIR`` keeps a screenshot.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.views.test_browser import RENDER_MS, ROOT, _screenshot, browser, voila  # noqa: F401  (browser: a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.real_data, pytest.mark.slow]

NOTEBOOK = ROOT / "notebooks" / "03_compare_on_real_transcripts.ipynb"
STRATEGIES = ["full", "windowed", "summarizing", "sliding", "chain"]  # the notebook's `names`
ERROR_OUTPUT = "[data-mime-type='application/vnd.jupyter.stderr'], .jp-OutputArea-output.jp-mod-error"


@pytest.fixture
def session(real_data) -> Path:
    """The longest real Claude Code session (a main session, not a subagent file)."""
    sessions = [p for p in (real_data / "claude_code").glob("*.jsonl") if p.stat().st_size > 1_000_000]
    if not sessions:
        pytest.skip(f"no Claude Code session over 1 MB in {real_data / 'claude_code'}")
    return max(sessions, key=lambda p: p.stat().st_size)


def test_notebook_03_runs_to_the_end_on_a_real_claude_code_session(browser, session, monkeypatch):  # noqa: F811
    monkeypatch.setenv("HARPE_LAB_SESSION", str(session))  # voila() passes the environment to the kernel
    with voila(NOTEBOOK) as url:
        page = browser.new_page()
        page_errors: list[str] = []
        page.on("pageerror", lambda exc: page_errors.append(str(exc)))
        page.goto(url, timeout=RENDER_MS, wait_until="domcontentloaded")
        # the last cell's widget, with its table filled in: the notebook ran to its end
        table = page.locator(".harpe-compare .harpe-compare-table").first
        table.wait_for(state="visible", timeout=RENDER_MS)
        page.wait_for_function(
            "names => { const t = document.querySelector('.harpe-compare .harpe-compare-table');"
            " return t && names.every(n => t.innerText.includes(n)); }",
            arg=STRATEGIES, timeout=RENDER_MS,
        )  # fmt: skip
        text = page.locator("body").inner_text()
        _screenshot(page, "notebook_03_real_session.png")

        # it read the real session, not the bundled fallback
        assert "read as claude_code" in text, text[:2000]
        assert "is not a file" not in text
        # no cell failed, no warning or traceback was printed, nothing failed in the page
        assert page.locator(ERROR_OUTPUT).count() == 0, page.locator(ERROR_OUTPUT).first.inner_text()
        assert "Traceback" not in text and "There was an error when executing cell" not in text
        assert page_errors == []
        # both exercises' checks passed on the real session
        assert text.count("correct:") == 2, text[-3000:]

        # the budget the notebook computed from the session is above 100,000 tokens ...
        printed = re.search(r"budget ([\d,]+) tokens", text)
        assert printed, text[:3000]
        budget = int(printed.group(1).replace(",", ""))
        assert budget > 100_000
        # ... and Compare applied it, unclamped
        readout = page.locator(".harpe-compare .harpe-budget-value input").first.input_value()
        assert int(re.sub(r"\D", "", readout)) == budget
        # every strategy ran at that budget: no panel shows an error, no table row is an error
        # spanning the columns
        assert page.locator(".harpe-compare .harpe-error-box").count() == 0
        assert page.locator(".harpe-compare .harpe-compare-table td.span").count() == 0, table.inner_text()
        page.close()
