"""How long the Explorer takes to redraw after a slider move, on a 1,000-request replay.

    .venv/bin/python benchmarks/widgets.py [--requests 1000] [--moves 40] [--profile]
    .venv/bin/python benchmarks/widgets.py --browser [--moves 20]

Prints the median and 90th percentile of three timings, each from the moment a
control's ``.value`` is set until every view (plot PNG, count, summary, gauge, request
view) holds the new state — what a person waits for after letting go of a slider:

* ``high water, new value``  — the replay is computed, then drawn
* ``high water, seen value`` — the replay comes from the cache, only drawn
* ``request step``           — only the cursor, gauge and request view change

The high water moves by the slider's own step from its default (8,000 tokens) upward, as
a person dragging it does, with the knob's "auto" box unchecked: while it is checked the
preset derives the mark and moving the slider replays nothing. The summarizing preset
replays with its offline `ExtractiveDistiller`. The goal is a median of at most 100 ms.
The same replays are then timed outside the Explorer, checked against its own, with the
distiller's share (``--profile`` prints where the new-value redraws spend their time).

``--browser`` measures the same moves where a person sees them: Voilà serves a notebook
with the Explorer, headless Chromium (``/usr/bin/chromium``, driven by Playwright) focuses
the high-water handle and presses the arrow key; each timing runs from the key press until
the plot's ``<img>`` holds a new, decoded picture (goal: median <= 400 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

HERE = Path(__file__).resolve().parent
if __package__ in (None, ""):  # run as a script: make `harpe_lab` and `benchmarks` importable
    sys.path.insert(0, str(HERE.parent))

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from harpe_lab.datasets import synthesize  # noqa: E402

GOAL_MS = 100.0
BROWSER_GOAL_MS = 400.0
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage"]  # fmt: skip


def conversation_with(requests: int):
    """A synthetic conversation with about ``requests`` model calls."""
    turns = max(3, requests // 2)
    while True:
        c = synthesize(turns, seed=1, tool_rate=0.5, result_chars=800)
        n = sum(1 + sum(1 for m in t.messages if m.role == "tool_results") for t in c.turns)
        if n >= requests:
            return c
        turns = int(turns * requests / n) + 1


def explorer_for(conversation):
    """The Explorer the benchmark drives: summarizing preset, high water set by hand."""
    from harpe_lab.widgets import Explorer

    e = Explorer(conversation, datasets=False)
    e.auto["high_water"].value = False  # "auto": the preset derives the mark and the slider replays nothing
    return e


class TimedDistiller:
    """A distiller, with the time its calls take in ``seconds``."""

    def __init__(self, distill) -> None:
        self.distill = distill
        self.seconds = 0.0

    def __call__(self, rendered):
        started = time.perf_counter()
        try:
            return self.distill(rendered)
        finally:
            self.seconds += time.perf_counter() - started


def replay_alone(e, high_water: int):
    """The replay a new high-water value costs the Explorer, outside it: the same preset,
    counter and distiller (the one the preset builds, timed), no cache, nothing drawn.
    Returns the replay and the seconds its distiller took."""
    from harpe_lab.replay import replay

    params = {**e.parameters(), "high_water": high_water}
    distill = TimedDistiller(e.factory(params)().distill)
    conversation = e._conversation()
    factory = e.preset.build(counter=e.counter, system=conversation.system, distill=distill, **params)
    return replay(conversation, factory, counter=e.counter, name=e.strategy.value), distill.seconds


def timed(set_value, values) -> list[float]:
    out = []
    for v in values:
        started = time.perf_counter()
        set_value(v)
        out.append(time.perf_counter() - started)
    return out


def report(label: str, seconds: list[float]) -> float:
    ms = sorted(s * 1000 for s in seconds)
    median = statistics.median(ms)
    p90 = ms[int(0.9 * (len(ms) - 1))]
    print(f"{label:<24} median {median:7.1f} ms   p90 {p90:7.1f} ms   ({len(ms)} moves)")
    return median


def python_side(args: argparse.Namespace) -> int:
    conversation = conversation_with(args.requests)
    started = time.perf_counter()
    e = explorer_for(conversation)
    print(f"{conversation!r}: Explorer built in {time.perf_counter() - started:.2f} s; "
          f"{len(e.replay)} requests")  # fmt: skip
    slider = e.high_water
    # up from the default by the slider's step, then down from it when the range ends there
    step = max(1, slider.step)
    values = [v for v in range(slider.value + step, slider.max + 1, step)][: args.moves]
    values += [v for v in range(slider.value - step, slider.min - 1, -step)][: args.moves - len(values)]
    values = values or [slider.value]

    def set_high(v: int) -> None:
        slider.value = v

    cpu = time.process_time()
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
    cold = report("high water, new value", timed(set_high, values))
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(int(os.environ.get("PROFILE_ROWS", "12")))
    print(f"(process CPU time of the new-value moves: {1000 * (time.process_time() - cpu) / len(values):.1f} ms a move)")
    alone: list[tuple[int, object, float]] = []
    replay_ms = statistics.median(1000 * s for s in timed(lambda v: alone.append((v, *replay_alone(e, v))), values))
    for v, result, _ in alone:  # the Explorer's own replays, from its cache
        if not result.requests.equals(e.replay_for({**e.parameters(), "high_water": v}).requests):
            raise AssertionError(f"high water {v}: the replay outside the Explorer differs from its own")
    distill_ms = statistics.median(1000 * s for _, _, s in alone)
    print(f"new value, replay alone: {replay_ms:.1f} ms median (the same replays without the Explorer; "
          f"drawing is the rest); the offline distiller {distill_ms:.1f} ms of it")
    warm = report("high water, seen value", timed(set_high, values))
    steps = [(k * 37) % len(e.replay) for k in range(args.moves)]
    report("request step", timed(lambda v: setattr(e.step, "value", v), steps))
    if e.last_error is not None:
        print(f"a redraw failed: {e.last_error!r}", file=sys.stderr)
        return 1
    for label, value in (("new value", cold), ("seen value", warm)):
        print(f"goal: median <= {GOAL_MS:.0f} ms, {label}: {'met' if value <= GOAL_MS else 'MISSED'}")
    return 0


# --- in a browser ------------------------------------------------------------------------------


def _notebook(requests: int) -> dict:
    code = (f"import sys\nsys.path.insert(0, {str(HERE.parent)!r})\n"
            "from benchmarks.widgets import conversation_with, explorer_for\n"
            f"e = explorer_for(conversation_with({requests}))\n"
            "e")  # fmt: skip
    return {"cells": [{"cell_type": "code", "execution_count": None, "id": "explorer", "metadata": {},
                       "outputs": [], "source": code}],
            "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}  # fmt: skip


@contextmanager
def _voila(notebook: Path, startup_seconds: float = 180) -> Iterator[str]:
    """Voilà serving ``notebook`` on 127.0.0.1 (Jupyter's folders in a temporary one)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    home = notebook.parent
    env = {**os.environ, "JUPYTER_DATA_DIR": f"{home}/data", "JUPYTER_RUNTIME_DIR": f"{home}/runtime",
           "JUPYTER_CONFIG_DIR": f"{home}/config", "IPYTHONDIR": f"{home}/ipython", "MPLBACKEND": "Agg",
           "JUPYTER_PLATFORM_DIRS": "1"}  # fmt: skip
    log = open(home / "voila.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}",
                             "--Voila.ip=127.0.0.1", "--VoilaConfiguration.show_tracebacks=True"],
                            cwd=home, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + startup_seconds
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"voila exited with {proc.returncode}:\n{log.read()[-3000:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"voila did not listen on port {port} within {startup_seconds} s") from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}/"
    finally:
        # the kernel is voila's child, in the session started above: stop them together
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()


_IMG = ".harpe-plot img, img.harpe-plot"
_NEW_PICTURE = ("before => { const i = document.querySelector('.harpe-plot img, img.harpe-plot');"
                " return i && i.src !== before && i.complete && i.naturalWidth > 0; }")  # fmt: skip


def browser_side(args: argparse.Namespace) -> int:
    """Time ``args.moves`` arrow-key moves of the high-water handle in Chromium on Voilà."""
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        print(f"{CHROMIUM} is missing: install it with `apt-get install -y chromium`", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="harpe-bench-voila-") as tmp:
        notebook = Path(tmp) / "explorer_benchmark.ipynb"
        notebook.write_text(json.dumps(_notebook(args.requests)), encoding="utf-8")
        with _voila(notebook) as url, sync_playwright() as p:
            context = p.chromium.launch_persistent_context(
                str(Path(tmp) / "profile"), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
                viewport={"width": 1280, "height": 1000})  # fmt: skip
            try:
                page = context.new_page()
                errors: list[str] = []
                page.on("pageerror", lambda exc: errors.append(str(exc)))
                started = time.perf_counter()
                page.goto(url, timeout=300_000, wait_until="domcontentloaded")
                image = page.locator(_IMG).first
                image.wait_for(state="visible", timeout=300_000)
                print(f"Voilà page with the Explorer shown in {time.perf_counter() - started:.1f} s")
                handle = page.locator(".harpe-high-water .noUi-handle").first
                handle.focus()
                seconds = []
                for _ in range(args.moves):
                    before = image.get_attribute("src") or ""
                    t0 = time.perf_counter()
                    handle.press("ArrowRight")
                    page.wait_for_function(_NEW_PICTURE, arg=before, timeout=60_000, polling="raf")
                    seconds.append(time.perf_counter() - t0)
                readout = page.locator(".harpe-high-water .widget-readout").first.inner_text()
                failed = page.locator(".harpe-errors").first.inner_text().strip()
            finally:
                context.close()
    print(f"high water now {readout} tokens")
    median = report("browser, new value", seconds)
    if errors or failed:
        print(f"errors in the page: {errors} {failed[-2000:]}", file=sys.stderr)
        return 1
    print(f"goal: median <= {BROWSER_GOAL_MS:.0f} ms, browser new value: "
          f"{'met' if median <= BROWSER_GOAL_MS else 'MISSED'}")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--moves", type=int, default=None, help="40 in Python, 20 in the browser")
    parser.add_argument("--profile", action="store_true", help="profile the new-value redraws")
    parser.add_argument("--browser", action="store_true", help="Voilà and headless Chromium instead")
    args = parser.parse_args(argv)
    if args.moves is None:
        args.moves = 20 if args.browser else 40
    return browser_side(args) if args.browser else python_side(args)


if __name__ == "__main__":
    raise SystemExit(main())
