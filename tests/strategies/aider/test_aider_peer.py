"""Differential: Aider's own ChatSummary (aider-chat, in a virtual environment of its own,
harpe_lab.peers.aider) sends the same requests as ours (skipped when aider-chat cannot be
installed; real sessions skipped when ../shared/data/real is absent)."""

from __future__ import annotations

import fcntl
import importlib.util
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.protocol import DistillCall
from harpe_lab.replay import replay
from harpe_lab.strategies.aider import Aider
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import TiktokenCounter
from tests._support.data import ROOT
from tests._support.editing import conversations, real_params
from tests.strategies._agents import COUNTER


# === Aider's own ChatSummary, side by side ======================================================


@pytest.fixture(scope="session")
def aider_python(tmp_path_factory) -> str | None:
    """An interpreter that runs aider-chat: ``None`` when ``aider`` imports here, else
    ``$HARPE_LAB_AIDER_PYTHON``, else a virtual environment made once (kept across runs
    beside pytest's temporary directories) with ``pip install aider-chat==0.86.2``; skipped
    when pip cannot reach PyPI."""
    from harpe_lab.peers.aider import AIDER_VERSION, ENV, install_aider

    if importlib.util.find_spec("aider") is not None:
        return None
    if os.environ.get(ENV):
        return os.environ[ENV]
    # pytest-of-<user>, which outlives each run's own folder (under xdist, a worker's basetemp
    # is one level deeper)
    runs = next((p for p in tmp_path_factory.getbasetemp().parents if p.name.startswith("pytest-of-")),
                tmp_path_factory.getbasetemp().parent)
    home = runs / f"harpe_lab-aider-chat-{AIDER_VERSION}"
    lock = runs / f"harpe_lab-aider-chat-{AIDER_VERSION}.lock"
    with open(lock, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # one installer at a time (xdist, parallel runs)
        try:
            return install_aider(home)
        except StrategyError as exc:
            pytest.skip(f"aider-chat {AIDER_VERSION} could not be installed (needs PyPI): {str(exc)[-300:]}")


def _side_by_side(convo, config: Aider, python, counter) -> int:
    """Replay under our ChatSummary and Aider's; the same requests, the same distill
    requests. Returns how many summaries landed."""
    from harpe_lab.peers.aider import aider_context

    ours = replay(convo, lambda: config.context(convo.system, counter=counter, distill=ExtractiveDistiller(1_500)),
                  counter=counter, name="native")
    theirs = replay(convo, lambda: aider_context(convo.system, config, counter=counter,
                                                 distill=ExtractiveDistiller(1_500), python=python),
                    counter=counter, name="aider")
    assert len(ours) == len(theirs)
    for i in range(len(ours)):
        assert ours.rendered(i) == theirs.rendered(i), f"request {i} differs"
    asked = [[e.event.request for e in rp.events if isinstance(e.event, DistillCall)] for rp in (ours, theirs)]
    assert asked[0] == asked[1]
    assert ours.requests.compacted.tolist() == theirs.requests.compacted.tolist()
    return int(ours.requests.summarized.sum())


class TestAgainstAidersOwnCode:
    def test_it_is_aider_that_runs(self, aider_python):
        from harpe_lab.peers.aider import AIDER_VERSION, AiderChatSummary

        assert AiderChatSummary(aider_python).version == AIDER_VERSION

    def test_the_peer_says_what_to_install(self, monkeypatch):
        from harpe_lab.peers import aider as peer

        monkeypatch.delenv(peer.ENV, raising=False)
        monkeypatch.setattr(peer.importlib.util, "find_spec", lambda name: None)
        with pytest.raises(ImportError, match=r"pip install aider-chat==0\.86\.2"):
            peer.AiderChatSummary()
        with pytest.raises(StrategyError, match="python must be the path of an interpreter"):
            peer.AiderChatSummary("/nonexistent/python")

    def test_in_process_too(self, aider_python):
        """Where aider imports (here, its own interpreter with harpe_lab on the path), the peer
        runs ChatSummary in process: the same results as our reimplementation, kept dicts by
        identity, on weights that split, recurse and cut the head."""
        import subprocess
        import sys
        from pathlib import Path

        code = """
from harpe_lab.strategies.aider import chat_summary
from harpe_lab.peers.aider import AiderChatSummary
peer = AiderChatSummary()
assert peer.python is None
for n, budget, window in [(14, 120, 10_000), (30, 200, 10_000), (30, 400, 700), (5, 20, 10_000), (3, 10_000, 99)]:
    msgs = [{"role": "user" if k % 3 else "assistant", "content": "w " * (k % 7 + 1)} for k in range(n)]
    count = lambda m: len(m["content"])
    chat = lambda ms: sum(map(count, ms)) + 3
    send = lambda m: str(hash(m[1]["content"]) % 997)
    ours = chat_summary(list(msgs), max_tokens=budget, window=window, count=count, count_chat=chat, send=send)
    theirs = peer(list(msgs), max_tokens=budget, window=window, count=count, count_chat=chat, send=send)
    assert ours == theirs, (n, budget, window)
    assert [any(d is m for m in msgs) for d in ours] == [any(d is m for m in msgs) for d in theirs]
print("same")
"""
        python = aider_python or sys.executable
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0"}
        env.pop("HARPE_LAB_AIDER_PYTHON", None)
        done = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0 and done.stdout.strip() == "same", done.stderr[-2000:]

    @pytest.mark.parametrize("budget", [1_024, 3_000])
    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_bundled(self, aider_python, name, budget):
        landed = _side_by_side(datasets.load(name), Aider(history_tokens=budget), aider_python,
                               TiktokenCounter("cl100k_base"))
        assert landed > 0, "the comparison would pass without a summary"

    def test_a_small_summarizer_window_cuts_the_head(self, aider_python):
        # window 1,100: the head one summary reads is 588 tokens, so Aider drops the rest
        convo = datasets.load("coding_agent")
        assert _side_by_side(convo, Aider(window=1_100, history_tokens=2_000), aider_python,
                             TiktokenCounter("cl100k_base")) > 0

    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                     HealthCheck.data_too_large])
    @given(conversations(), st.integers(50, 800))
    def test_generated(self, aider_python, convo, budget):
        _side_by_side(convo, Aider(history_tokens=budget), aider_python, COUNTER)

    @pytest.mark.real_data
    @pytest.mark.parametrize(("path", "budget"), [
        *((p.values[0], 1_024) for p in real_params("cline/session.messages.json", 1)),
        *((p.values[0], None) for p in real_params("claude_code/*-*-*-*-*.jsonl", 2)),
        *((p.values[0], 1_024) for p in real_params("tau_bench/*.json", 1)),
    ], ids=lambda v: v.name[:30] if hasattr(v, "name") else str(v))
    def test_real(self, real_data, aider_python, path, budget):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no real sessions")
        # the Claude Code sessions run at Aider's default budget (8,000 for a 128k window);
        # the shorter Cline and tau-bench conversations need a smaller one to summarize
        assert _side_by_side(load_any(path), Aider(history_tokens=budget), aider_python,
                             TiktokenCounter("cl100k_base")) > 0
