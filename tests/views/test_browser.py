"""The widgets in a real browser: Voilà serves a notebook, headless Chromium drives it.

Needs Debian's ``chromium`` at /usr/bin/chromium (``apt-get install -y chromium``) and the
Python ``playwright`` package; Playwright's own browser download is never used. Set
``HARPE_LAB_SCREENSHOTS=DIR`` to keep screenshots of what the browser showed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

from tests._support.data import ROOT

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
]  # fmt: skip
STARTUP_SECONDS = 120  # Voilà starts a kernel and runs the whole notebook before it answers
RENDER_MS = 180_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def voila(notebook: Path) -> Iterator[str]:
    """Serve ``notebook`` with Voilà on 127.0.0.1 and a free port; yields its URL. Jupyter's
    data and runtime folders go to a temporary directory, not the user's home."""
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="harpe-voila-") as home:
        env = {**os.environ, "JUPYTER_DATA_DIR": f"{home}/data", "JUPYTER_RUNTIME_DIR": f"{home}/runtime",
               "JUPYTER_CONFIG_DIR": f"{home}/config", "IPYTHONDIR": f"{home}/ipython", "MPLBACKEND": "Agg",
               "JUPYTER_PLATFORM_DIRS": "1"}  # fmt: skip
        log = open(Path(home) / "voila.log", "w+")
        proc = subprocess.Popen(
            [sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}",
             "--Voila.ip=127.0.0.1", "--VoilaConfiguration.show_tracebacks=True"],
            cwd=notebook.parent, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while True:
                if proc.poll() is not None:
                    log.seek(0)
                    pytest.fail(f"voila exited with {proc.returncode}:\n{log.read()[-3000:]}")
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=1).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        log.seek(0)
                        pytest.fail(f"voila did not listen on port {port} within {STARTUP_SECONDS} s:\n{log.read()[-3000:]}")
                    time.sleep(0.3)
            yield f"http://127.0.0.1:{port}/"
        finally:
            # the kernel is voila's child, in the session started above: stop them together
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
            log.seek(0)
            tail = log.read()[-3000:]
            log.close()
            if "Traceback" in tail:
                print(tail)  # shown by pytest when the test fails


@pytest.fixture(scope="module")
def browser():
    """A headless Chromium (Debian's, a fresh profile) driven by Playwright."""
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install it with `apt-get update && apt-get install -y chromium`")
    from playwright.sync_api import Error, sync_playwright

    profile = tempfile.mkdtemp(prefix="harpe-chromium-")
    with sync_playwright() as p:
        try:
            context = p.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
                viewport={"width": 1280, "height": 1000},
            )  # fmt: skip
        except Error as exc:
            shutil.rmtree(profile, ignore_errors=True)
            pytest.skip(f"{CHROMIUM} could not be launched: {exc}")
        try:
            yield context
        finally:
            context.close()
            shutil.rmtree(profile, ignore_errors=True)


def _screenshot(page, name: str, selector: str | None = None) -> None:
    folder = os.environ.get("HARPE_LAB_SCREENSHOTS")
    if not folder:
        return
    Path(folder).mkdir(parents=True, exist_ok=True)
    target = page.locator(selector).first if selector else page
    target.screenshot(path=str(Path(folder) / name))


def _open(browser, url: str):
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(url, timeout=RENDER_MS, wait_until="domcontentloaded")
    page.locator(".harpe-plot img, img.harpe-plot").first.wait_for(state="visible", timeout=RENDER_MS)
    return page, errors


def _plot_src(page) -> str:
    return page.locator(".harpe-plot img, img.harpe-plot").first.get_attribute("src") or ""


class TestTuneWaterMarks:
    def test_moving_high_water_redraws_plot_and_count(self, browser):
        with voila(ROOT / "notebooks" / "02_tune_water_marks.ipynb") as url:
            page, errors = _open(browser, url)
            count = page.locator(".harpe-compactions").first
            before_count = count.inner_text().strip()
            before_src = _plot_src(page)
            before_png = page.locator(".harpe-plot img, img.harpe-plot").first.screenshot()
            assert before_count.isdigit() and int(before_count) > 0
            _screenshot(page, "explorer.png", ".harpe-explorer")

            # drag by keyboard, as a person can: focus the handle, jump to the highest mark
            handle = page.locator(".harpe-high-water .noUi-handle").first
            handle.focus()
            handle.press("End")
            page.wait_for_function(
                "before => { const e = document.querySelector('.harpe-compactions');"
                " return e && e.innerText.trim() !== before; }",
                arg=before_count, timeout=60_000,
            )  # fmt: skip
            after_count = count.inner_text().strip()
            assert int(after_count) < int(before_count)  # a higher mark compacts less often
            page.wait_for_function(
                "before => { const i = document.querySelector('.harpe-plot img, img.harpe-plot');"
                " return i && i.src !== before; }",
                arg=before_src, timeout=60_000,
            )  # fmt: skip
            assert page.locator(".harpe-plot img, img.harpe-plot").first.screenshot() != before_png
            assert page.locator(".harpe-errors").first.inner_text().strip() == ""
            assert errors == []
            _screenshot(page, "explorer_high_water.png", ".harpe-explorer")
            page.close()


class TestHostileText:
    def test_transcript_html_is_shown_as_text_and_never_runs(self, browser):
        with voila(ROOT / "tests" / "data" / "xss_explorer.ipynb") as url:
            page, errors = _open(browser, url)
            view = page.locator(".harpe-request-view").first
            view.wait_for(state="visible", timeout=RENDER_MS)
            text = view.inner_text()
            assert "<script>window.__pwned=1</script>" in text
            assert '<img src=x onerror="window.__pwned=2">' in text
            assert "window.__pwned=3" in page.locator(".harpe-explorer select").first.inner_text()
            # nothing ran: no injected element exists, and the flag was never set
            assert page.evaluate("typeof window.__pwned") == "undefined"
            assert page.locator(".harpe-request-view script, .harpe-request-view img").count() == 0
            assert errors == []
            page.close()


# JupyterLab 4's output area in a 1,280 px wide window with the file browser open (250 px
# wide, as it opens): 848 px, measured in Chromium. The widgets are shown in a box that wide.
LAB_OUTPUT_WIDTH = 848

_LAYOUT_NOTEBOOK = f"""\
import ipywidgets as w
from IPython.display import display
from harpe_lab import datasets
from harpe_lab.widgets import Compare, Explorer

conversation = datasets.load("coding_agent")
explorer = Explorer(conversation, strategy="summarizing", high_water=8000, datasets=False)
display(w.Box([explorer.widget], layout=w.Layout(width="{LAB_OUTPUT_WIDTH}px")))
compare = Compare(conversation, ["full", "windowed", "summarizing", "sliding", "masking", "claude-code",
                                 "openhands-summarizing", "autogen-token-limited"], budget=8000)
display(w.Box([compare.widget], layout=w.Layout(width="{LAB_OUTPUT_WIDTH}px")))
"""

_BOX = "(s) => {{ const e = document.querySelector(s); if (!e) return null; const b = e.getBoundingClientRect(); " \
       "return {{left: b.left, right: b.right, width: b.width, height: b.height, scroll: e.scrollWidth, " \
       "client: e.clientWidth}}; }}".format()


@pytest.fixture(scope="module")
def layout_page(browser, tmp_path_factory):
    """A Voilà page with the Explorer and Compare on the bundled coding session, each in a box
    as wide as JupyterLab's output area at 1,280 px with the file browser open."""
    notebook = tmp_path_factory.mktemp("layout") / "layout.ipynb"
    notebook.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "id": "layout", "metadata": {}, "outputs": [],
                   "source": _LAYOUT_NOTEBOOK}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")  # fmt: skip
    with voila(notebook) as url:
        page, errors = _open(browser, url)
        page.locator("table.harpe-compare-table").first.wait_for(state="visible", timeout=RENDER_MS)
        yield page, errors
        page.close()


def _box(page, selector: str) -> dict:
    found = page.evaluate(_BOX, selector)
    assert found is not None, f"{selector} is not on the page"
    return found


class TestLayoutAt1280:
    def test_the_explorer_fits_beside_the_file_browser(self, layout_page):
        page, errors = layout_page
        explorer = _box(page, ".harpe-explorer")
        assert explorer["width"] <= LAB_OUTPUT_WIDTH + 1
        assert explorer["scroll"] <= explorer["client"] + 1, "the Explorer overflows its area sideways"
        controls, stats = _box(page, ".harpe-knob-row"), _box(page, ".harpe-stats")
        assert stats["left"] >= controls["right"], "the stats table should sit beside the knobs, not under them"
        assert stats["right"] <= explorer["right"] + 1
        track = _box(page, ".harpe-high-water .noUi-target")
        assert track["width"] >= 180, "a slider this short cannot be dragged to a value"
        header = page.locator(".harpe-explorer .harpe-measure").first.inner_text()
        assert "counter: cl100k_base fitted to" in header and "prices (per call, USD per million tokens)" in header
        plot = _box(page, ".harpe-explorer img.harpe-plot")
        assert plot["right"] <= explorer["right"] + 1
        assert errors == []
        _screenshot(page, "explorer_1280.png", ".harpe-explorer")

    def test_a_typed_value_beyond_the_slider_is_said_not_clamped(self, layout_page):
        page, errors = layout_page
        handle = page.locator(".harpe-explorer .harpe-high-water .noUi-handle").first
        top = int(float(handle.get_attribute("aria-valuemax")))
        typed = top + 25_000
        box = page.locator(".harpe-explorer .harpe-value-high-water input").first
        box.fill(f"{typed:,}")
        box.press("Enter")
        message = page.locator(".harpe-explorer .harpe-message").first
        message.wait_for(state="visible", timeout=60_000)
        assert f"{typed:,} is outside the slider's range" in message.inner_text()
        page.wait_for_function(
            "v => { const h = document.querySelector('.harpe-explorer .harpe-high-water .noUi-handle');"
            " return h && Number(h.getAttribute('aria-valuenow')) === v; }", arg=typed, timeout=60_000)  # fmt: skip
        assert box.input_value() == f"{typed:,}"
        assert errors == []
        _screenshot(page, "explorer_typed_value.png", ".harpe-explorer")

    def test_the_compare_table_fits_its_area(self, layout_page):
        page, errors = layout_page
        area = _box(page, ".harpe-compare")
        assert area["width"] <= LAB_OUTPUT_WIDTH + 1 and area["scroll"] <= area["client"] + 1
        scroll = _box(page, ".harpe-compare-scroll")
        table = _box(page, "table.harpe-compare-table")
        assert table["width"] <= area["width"], f"a {table['width']:.0f} px table in a {area['width']:.0f} px area"
        assert scroll["scroll"] <= scroll["client"] + 1
        heights = page.evaluate("() => [...document.querySelectorAll('table.harpe-compare-table tbody tr')]"
                                ".map(r => r.getBoundingClientRect().height)")  # fmt: skip
        assert len(heights) == 8 and max(heights) <= 56, f"row heights {heights}: at most three lines each"
        head = page.evaluate("() => document.querySelector('table.harpe-compare-table thead tr')"
                             ".getBoundingClientRect().height")  # fmt: skip
        assert head <= 56
        assert errors == []
        _screenshot(page, "compare_1280.png", ".harpe-compare")
