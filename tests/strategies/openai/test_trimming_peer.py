"""Differential: the native ToolOutputTrimmer and the OpenAI Agents SDK's own send the same
messages at every request (skipped without the `peers` extra; real sessions skipped when
../shared/data/real is absent)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.replay import replay
from harpe_lab.strategies.openai.agents_sdk import ToolOutputTrimmer
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, reply, results, round_trip, user
from tests._support.data import REAL_DATA
from tests._support.editing import SYSTEM, conversations

pytest.importorskip("agents", reason="the peers extra (openai-agents) is not installed")
from agents.extensions import ToolOutputTrimmer as SDKToolOutputTrimmer  # noqa: E402

from harpe_lab.peers.openai_agents import SDKTrimmer, from_items, to_items  # noqa: E402

_CONFIGS = [
    ToolOutputTrimmer(),
    ToolOutputTrimmer(recent_turns=1, max_output_chars=200, preview_chars=50),
    ToolOutputTrimmer(recent_turns=1, max_output_chars=100, preview_chars=0, trimmable_tools={"Read", "Bash", "read"}),
]


def _config_id(c: ToolOutputTrimmer) -> str:
    """The same on every run (a set's repr follows the hash seed; xdist's workers must agree)."""
    tools = "all" if c.trimmable_tools is None else "+".join(sorted(c.trimmable_tools))
    return f"recent{c.recent_turns}-chars{c.max_output_chars}-preview{c.preview_chars}-{tools}"


def _differential(conversation, native: ToolOutputTrimmer) -> int:
    """Replay under both; assert identical requests; return how many requests trimmed."""
    counter = BytesCounter()
    ours = replay(conversation, lambda: native.context(SYSTEM), counter=counter, name="native")
    theirs = replay(conversation, lambda: SDKTrimmer(native).context(SYSTEM), counter=counter, name="sdk")
    assert len(ours) == len(theirs)
    for i in range(len(ours)):
        assert ours.rendered(i) == theirs.rendered(i), f"request {i} differs"
    assert ours.requests.compacted.tolist() == theirs.requests.compacted.tolist()
    return sum(len(ours.sent_ids(i)) < len(ours.rendered(i).messages) for i in range(len(ours)))


class TestConversion:
    def test_items_are_the_sdks_input_items(self):
        msgs = [user("q"), reply("let me look", call("c1", "bash", cmd="ls ✓")), results(("c1", "a\nb"))]
        assert [i for items in to_items(msgs) for i in items] == [
            {"role": "user", "content": "q"},
            {"role": "assistant", "content": "let me look"},
            {"type": "function_call", "call_id": "c1", "name": "bash", "arguments": '{"cmd": "ls ✓"}'},
            {"type": "function_call_output", "call_id": "c1", "output": "a\nb"},
        ]

    def test_unchanged_items_give_back_the_original_messages(self):
        msgs = [user("q"), *round_trip("c1", "x"), reply("done")]
        sent = to_items(msgs)
        back = from_items([i for items in sent for i in items], sent, msgs)
        assert all(a is b for a, b in zip(back, msgs))

    def test_an_edited_output_is_read_back_from_the_item(self):
        msgs = [user("q"), *round_trip("c1", "x")]
        sent = to_items(msgs)
        flat = [i for items in sent for i in items]
        flat[-1] = {**flat[-1], "output": "short"}
        back = from_items(flat, sent, msgs)
        assert back[2].results[0].content == "short" and back[2].results[0].id == "c1"

    def test_items_that_do_not_map_back_are_refused(self):
        msgs = [user("q"), *round_trip("c1", "x")]
        sent = to_items(msgs)
        with pytest.raises(StrategyError, match="returned 2 input items for 3 sent"):
            from_items([i for items in sent for i in items][:2], sent, msgs)

    def test_the_sdks_object_or_ours(self):
        assert SDKTrimmer(ToolOutputTrimmer(recent_turns=3)).trimmer.recent_turns == 3
        assert SDKTrimmer(SDKToolOutputTrimmer(preview_chars=7)).trimmer.preview_chars == 7
        with pytest.raises(StrategyError, match="trimmer must be an agents.extensions.ToolOutputTrimmer"):
            SDKTrimmer("nope")


def test_without_the_extra_the_import_error_says_what_to_install():
    code = ("import sys; sys.modules['agents'] = None\n"
            "try:\n    import harpe_lab.peers.openai_agents\n"
            "except ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install harpe_lab[peers]" in out and "openai-agents" in out


class TestDifferential:
    @pytest.mark.parametrize("native", _CONFIGS, ids=_config_id)
    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_bundled(self, name, native):
        trimmed = _differential(datasets.load(name), native)
        if native.recent_turns == 1 and native.trimmable_tools is None:
            assert trimmed > 0, "the comparison would pass without trimming anything"

    @settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(), st.integers(1, 3), st.integers(1, 300), st.integers(0, 150),
           st.none() | st.frozensets(st.sampled_from(["bash", "read", "grep", "edit"])))
    def test_generated(self, convo, recent, limit, preview, tools):
        _differential(convo, ToolOutputTrimmer(recent_turns=recent, max_output_chars=limit,
                                               preview_chars=preview, trimmable_tools=tools))


def _real(pattern: str, n: int) -> list:
    found = sorted(REAL_DATA.glob(pattern))[:n] if REAL_DATA.is_dir() else []
    return [pytest.param(p, id=p.name[:40]) for p in found] or [pytest.param(None, id="absent")]


@pytest.mark.real_data
class TestDifferentialOnRealSessions:
    @pytest.mark.parametrize("native", _CONFIGS[1:], ids=_config_id)
    @pytest.mark.parametrize("path", _real("claude_code/*.jsonl", 6) + _real("swe_agent/*.traj", 2))
    def test_real(self, real_data, path, native):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no real sessions")
        _differential(load_any(path), native)

    @pytest.mark.parametrize("index", range(4))
    def test_tau_bench_conversations(self, real_data, index):
        from harpe_lab.importers import load_any

        path = real_data / "tau_bench" / "gpt-4o-airline.json"
        if not path.is_file():
            pytest.skip("no tau-bench trajectories")
        for native in _CONFIGS:
            _differential(load_any(path, index=index), native)

    def test_the_long_claude_code_sessions_are_trimmed(self, real_data):
        from harpe_lab.importers import load_any

        long = sorted(p for p in (real_data / "claude_code").glob("*.jsonl") if p.stat().st_size > 1_000_000)
        if not long:
            pytest.skip("no long Claude Code session")
        trimmed = [_differential(load_any(p), _CONFIGS[1]) for p in long]
        assert all(t > 0 for t in trimmed), trimmed
