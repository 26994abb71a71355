"""How long the Explorer takes to redraw after a slider move, on a 1,000-request replay.

    .venv/bin/python benchmarks/widgets.py [--requests 1000] [--moves 40] [--profile]
    .venv/bin/python benchmarks/widgets.py --browser [--moves 20]
    .venv/bin/python benchmarks/widgets.py --browser --real [--strategy claude-code] [--moves 10]

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
The Explorer measures the conversation as every surface does (`harpe_lab.measure`):
``cl100k_base``, calibrated when the recording has provider usage, priced per call.

``--browser`` measures the same moves where a person sees them: Voilà serves a notebook
with the Explorer, headless Chromium (``/usr/bin/chromium``, driven by Playwright) focuses
the budget knob's handle (the high water for summarizing) and presses the arrow key; each
timing runs from the key press until the plot's ``<img>`` holds a new, decoded picture
(goal: median <= 400 ms).

``--real`` replaces the synthetic conversation with the real Claude Code session in
``../shared/data/real/claude_code`` that makes the most model calls (``--session PATH``
names another); it is skipped, with a line saying so, when the folder is absent. On a real
session the handle moves down from a threshold in the upper half of the range (claude-code's
derived 167,000, say) and up from one in the lower half, so every move is a new value.
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

REAL_SESSIONS = HERE.parent.parent / "shared" / "data" / "real" / "claude_code"
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


def largest_real_session() -> Path | None:
    """The real Claude Code session (``REAL_SESSIONS``) whose replay makes the most model
    calls; None when the folder is absent or holds none."""
    from harpe_lab.importers import load_any
    from harpe_lab.recorded import recorded

    if not REAL_SESSIONS.is_dir():
        return None
    sizes = {}
    for path in sorted(REAL_SESSIONS.glob("*.jsonl")):
        loaded = load_any(str(path))
        sizes[path] = recorded(loaded if not isinstance(loaded, list) else loaded[0]).requests
    return max(sizes, key=sizes.get) if sizes else None


def load_session(path: str):
    """The conversation in ``path`` (the first, in a file that holds several)."""
    from harpe_lab.importers import load_any

    loaded = load_any(path)
    return loaded[0] if isinstance(loaded, list) else loaded


def explorer_for(conversation, strategy: str = "summarizing", counter: str | None = None):
    """The Explorer the benchmark drives: ``strategy``'s budget knob set by hand; ``counter``
    names its tokenizer (None: the Explorer's default)."""
    from harpe_lab.widgets import Explorer

    e = Explorer(conversation, strategy=strategy, datasets=False, counter=counter)
    box = e.auto.get(e.preset.budget_knob.name)
    if box is not None:
        box.value = False  # "auto": the preset derives the mark and the slider replays nothing
    return e


def budget_slider(e):
    """The slider of the Explorer's budget knob (``high_water`` for summarizing)."""
    return e.knobs[e.preset.budget_knob.name]


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


def replay_alone(e, budget: int):
    """The replay a new budget value costs the Explorer, outside it: the same preset,
    counter, prices and distiller (the one the preset builds, timed), no cache, nothing
    drawn. Returns the replay and the seconds its distiller took."""
    from harpe_lab.replay import replay

    params = {**e.parameters(), e.preset.budget_knob.name: budget}
    distill = TimedDistiller(e.factory(params)().distill)
    conversation = e._conversation()
    factory = e.preset.build(counter=e.counter, system=conversation.system, distill=distill, **params)
    return replay(conversation, factory, counter=e.counter, pricing=e.pricing, name=e.strategy.value), distill.seconds


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


def _moves(slider, moves: int) -> list[int]:
    """``moves`` new values by the slider's step: up from its value when it sits in the
    lower half of the range (then down when the range ends), down from it in the upper half."""
    step = max(1, slider.step)
    up = [v for v in range(slider.value + step, slider.max + 1, step)]
    down = [v for v in range(slider.value - step, slider.min - 1, -step)]
    first, then = (up, down) if slider.value - slider.min < (slider.max - slider.min) / 2 else (down, up)
    values = first[:moves]
    values += then[: moves - len(values)]
    return values or [slider.value]


def _conversation(args: argparse.Namespace):
    """The conversation ``args`` name: a session (``--session``, ``--real``) or a synthetic one."""
    if args.session:
        return load_session(args.session)
    return conversation_with(args.requests)


def python_side(args: argparse.Namespace) -> int:
    conversation = _conversation(args)
    started = time.perf_counter()
    e = explorer_for(conversation, args.strategy, args.counter)
    print(f"{conversation!r}: Explorer built in {time.perf_counter() - started:.2f} s; "
          f"{len(e.replay)} requests; {e.strategy.value}")  # fmt: skip
    for line in e.measure.lines():
        print(f"  {line}")
    slider = budget_slider(e)
    values = _moves(slider, args.moves)

    def set_high(v: int) -> None:
        slider.value = v

    cpu = time.process_time()
    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
    label = e.preset.budget_knob.name.replace("_", " ")
    cold = report(f"{label}, new value", timed(set_high, values))
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats(os.environ.get("PROFILE_SORT", "tottime")).print_stats(int(os.environ.get("PROFILE_ROWS", "12")))
    print(f"(process CPU time of the new-value moves: {1000 * (time.process_time() - cpu) / len(values):.1f} ms a move)")
    alone: list[tuple[int, object, float]] = []
    replay_ms = statistics.median(1000 * s for s in timed(lambda v: alone.append((v, *replay_alone(e, v))), values))
    knob = e.preset.budget_knob.name
    for v, result, _ in alone:  # the Explorer's own replays, from its cache
        if not result.requests.equals(e.replay_for({**e.parameters(), knob: v}).requests):
            raise AssertionError(f"{knob} {v}: the replay outside the Explorer differs from its own")
    distill_ms = statistics.median(1000 * s for _, _, s in alone)
    print(f"new value, replay alone: {replay_ms:.1f} ms median (the same replays without the Explorer; "
          f"drawing is the rest); the offline distiller {distill_ms:.1f} ms of it")
    warm = report(f"{label}, seen value", timed(set_high, values))
    steps = [(k * 37) % len(e.replay) for k in range(args.moves)]
    report("request step", timed(lambda v: setattr(e.step, "value", v), steps))
    if e.last_error is not None:
        print(f"a redraw failed: {e.last_error!r}", file=sys.stderr)
        return 1
    for label, value in (("new value", cold), ("seen value", warm)):
        print(f"goal: median <= {GOAL_MS:.0f} ms, {label}: {'met' if value <= GOAL_MS else 'MISSED'}")
    return 0


# --- in a browser ------------------------------------------------------------------------------


def _notebook(args: argparse.Namespace) -> dict:
    source = f"load_session({args.session!r})" if args.session else f"conversation_with({args.requests})"
    code = (f"import sys\nsys.path.insert(0, {str(HERE.parent)!r})\n"
            "from benchmarks.widgets import conversation_with, explorer_for, load_session\n"
            f"e = explorer_for({source}, {args.strategy!r}, {args.counter!r})\n"
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
        notebook.write_text(json.dumps(_notebook(args)), encoding="utf-8")
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
                from harpe_lab.presets import get_preset

                css = get_preset(args.strategy).budget_knob.name.replace("_", "-")
                handle = page.locator(f".harpe-{css} .noUi-handle").first
                value, low, high = (float(handle.get_attribute(a) or 0) for a in
                                    ("aria-valuenow", "aria-valuemin", "aria-valuemax"))  # fmt: skip
                key = "ArrowLeft" if value - low >= (high - low) / 2 else "ArrowRight"  # every move a new value
                handle.focus()
                seconds = []
                for _ in range(args.moves):
                    before = image.get_attribute("src") or ""
                    t0 = time.perf_counter()
                    handle.press(key)
                    page.wait_for_function(_NEW_PICTURE, arg=before, timeout=60_000, polling="raf")
                    seconds.append(time.perf_counter() - t0)
                readout = page.locator(f".harpe-value-{css} input").first.input_value()
                failed = page.locator(".harpe-errors").first.inner_text().strip()
            finally:
                context.close()
    what = f"{Path(args.session).name if args.session else f'~{args.requests} requests'}, {args.strategy}"
    print(f"{css.replace('-', ' ')} now {readout} tokens ({what})")
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
    parser.add_argument("--moves", type=int, default=None,
                        help="40 in Python, 20 in the browser (10 there on a session)")
    parser.add_argument("--profile", action="store_true", help="profile the new-value redraws")
    parser.add_argument("--browser", action="store_true", help="Voilà and headless Chromium instead")
    parser.add_argument("--strategy", default="summarizing", help="the preset whose budget knob moves")
    parser.add_argument("--session", default=None, help="a transcript to explore instead of a synthetic one")
    parser.add_argument("--counter", default=None,
                        help="the Explorer's counter= (cl100k_base, o200k_base, approx, bytes; default: its own)")
    parser.add_argument("--real", action="store_true",
                        help="the real Claude Code session with the most model calls (skipped when absent)")
    args = parser.parse_args(argv)
    if args.moves is None:
        args.moves = (10 if args.real or args.session else 20) if args.browser else 40
    from harpe_lab.presets import get_preset

    if get_preset(args.strategy).budget_knob is None:
        parser.error(f"--strategy {args.strategy} has no budget knob to move; choose one with a budget or high water")
    if args.real and not args.session:
        found = largest_real_session()
        if found is None:
            print(f"skipped: no real Claude Code session in {REAL_SESSIONS}")
            return 0
        args.session = str(found)
    return browser_side(args) if args.browser else python_side(args)


if __name__ == "__main__":
    raise SystemExit(main())
