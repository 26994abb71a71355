"""The views in a real browser at 1,280 px: the demo report (every table fits its container)
and the Explorer in Voilà (only the picked preset's knobs shown; an error replaces the
picture and blanks the counts, and the next good replay brings them back).

Needs Debian's ``chromium`` at /usr/bin/chromium and the Python ``playwright`` package
(Playwright's own browser download is never used), as tests/views/test_browser.py. Set
``HARPE_LAB_SCREENSHOTS=DIR`` to keep a screenshot of the page.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.slow]

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]  # fmt: skip
WIDTH = 1280

# For each table: its box, its container's, and whether any cell's content is clipped.
MEASURE = """() => [...document.querySelectorAll('table')].map((t, k) => {
  const box = t.getBoundingClientRect(), parent = t.parentElement, outer = parent.getBoundingClientRect();
  const clipped = [...t.querySelectorAll('td, th')].filter(c => c.scrollWidth > c.clientWidth + 1).length;
  const caption = (t.parentElement.previousElementSibling || {}).innerText || '';
  return {k, caption, right: box.right, width: box.width, parentRight: outer.right,
          parentScroll: parent.scrollWidth, parentClient: parent.clientWidth, clipped, rows: t.rows.length};
})"""


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (Debian's, a fresh profile) driven by Playwright, 1,280 px wide."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install it with `apt-get update && apt-get install -y chromium`")
    from playwright.sync_api import Error, sync_playwright

    profile = tempfile.mkdtemp(prefix="harpe-chromium-")
    with sync_playwright() as p:
        try:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
                viewport={"width": WIDTH, "height": 900},
            )  # fmt: skip
        except Error as exc:
            shutil.rmtree(profile, ignore_errors=True)
            pytest.skip(f"{CHROMIUM} could not be launched: {exc}")
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def page(browser, demo_report):
    """The report `make demo`'s job wrote (once for the test session), opened."""
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(demo_report[0].resolve().as_uri(), wait_until="load")
    folder = os.environ.get("HARPE_LAB_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / "report.png"), full_page=True)
    yield page, errors
    page.close()


def test_no_table_overflows_its_container_at_1280_px(page):
    page, errors = page
    assert page.evaluate("window.innerWidth") == WIDTH
    tables = page.evaluate(MEASURE)
    assert len(tables) >= 6  # two tables per dataset at least
    for t in tables:
        where = f"table {t['k']} ({t['caption']!r})"
        assert t["rows"] > 1, where
        assert t["right"] <= t["parentRight"] + 0.5, f"{where} sticks out of its container: {t}"
        assert t["parentScroll"] <= t["parentClient"], f"{where} makes its container scroll: {t}"
        assert t["right"] <= WIDTH, f"{where} is cut off by the window: {t}"
        assert t["clipped"] == 0, f"{where} clips {t['clipped']} cells: {t}"
    assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH  # no sideways scrolling
    assert errors == []


def test_every_picture_loads_and_fits(page):
    page, _ = page
    images = page.evaluate("() => [...document.images].map(i => [i.naturalWidth, i.getBoundingClientRect().right])")
    assert images and all(natural > 0 for natural, _ in images)  # loaded
    assert all(right <= WIDTH for _, right in images)


def test_glossary_and_limit_sections_are_shown(page):
    page, _ = page
    text = page.locator("body").inner_text()
    assert "Glossary" in text and "compacted" in text
    # the long lists come last, folded: one click opens them
    assert "Strategies that go over their limit" not in text
    page.locator("details summary", has_text="Over the limit, and refused").click()
    text = page.locator("body").inner_text()
    assert "Strategies that go over their limit" in text and "Strategies that refused (raised)" in text
    assert text.index("The answer") < text.index("Over the limit, and refused")


# --- the Explorer in Voilà: knobs per preset, and an error in place of the picture --------------

EXPLORER_CELL = '''
from harpe_lab.conversation import Conversation, Turn
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.widgets import Explorer

def turn(t):
    msgs = []
    for s in range(2):
        msgs += [AssistantMessage(f"step {s}", (ToolCall(f"c{t}.{s}", "read", {"path": "f"}),)),
                 ToolResults((ToolResult(f"c{t}.{s}", "x" * 400),))]
    return Turn(UserInput(f"question {t}"), tuple(msgs) + (AssistantMessage(f"done {t}"),))

explorer = Explorer(Conversation(tuple(turn(t) for t in range(30)), id="synthetic"), strategy="windowed",
                    budget=1500, high_water=1500, distill=lambda rendered: 42, datasets=False)
explorer
'''


def _visible(page, selector: str) -> bool:
    return page.evaluate(f"() => {{ const e = document.querySelector({selector!r});"
                         " return !!e && getComputedStyle(e).display !== 'none' && e.offsetParent !== null; }")


def test_explorer_in_the_browser_shows_the_presets_knobs_and_its_errors(browser, tmp_path):
    import nbformat

    from tests.views.test_browser import voila

    notebook = tmp_path / "explorer_error.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(EXPLORER_CELL)]
    nbformat.write(nb, notebook)
    with voila(notebook) as url:
        page = browser.new_page()
        try:
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(url, timeout=180_000, wait_until="domcontentloaded")
            page.locator(".harpe-plot img, img.harpe-plot").first.wait_for(state="visible", timeout=180_000)
            assert _visible(page, ".harpe-budget") and not _visible(page, ".harpe-high-water")
            assert not _visible(page, ".harpe-plot-error")
            assert page.locator(".harpe-compactions").first.inner_text().strip().isdigit()

            page.locator(".harpe-explorer select").nth(1).select_option("summarizing")  # the strategy dropdown
            page.locator(".harpe-plot-error").first.wait_for(state="visible", timeout=60_000)
            text = page.locator(".harpe-plot-error").first.inner_text()
            assert "summarizing (high_water=1,500, low_water=auto) on synthetic: no replay" in text
            assert "StrategyError" in text
            assert not _visible(page, ".harpe-plot")  # no stale picture of windowed
            assert page.locator(".harpe-compactions").first.inner_text().strip() == "–"
            assert _visible(page, ".harpe-high-water") and not _visible(page, ".harpe-budget")

            page.locator(".harpe-explorer select").nth(1).select_option("windowed")
            page.locator(".harpe-plot-error").first.wait_for(state="hidden", timeout=60_000)
            assert _visible(page, ".harpe-plot")
            assert page.locator(".harpe-compactions").first.inner_text().strip().isdigit()
            assert errors == []
            folder = os.environ.get("HARPE_LAB_SCREENSHOTS")
            if folder:
                page.locator(".harpe-explorer").first.screenshot(path=str(Path(folder) / "explorer_recovered.png"))
        finally:
            page.close()
