"""Differential: the native model contexts against autogen-core's own code
(harpe_lab.peers.autogen) on bundled, generated and real conversations (the comparisons are
skipped without the `peers` extra; real sessions when ../shared/data/real is absent)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harpe_lab.datasets import list_datasets, load
from harpe_lab.replay import replay
from harpe_lab.strategies.autogen import Buffered, HeadAndTail, TokenLimited
from harpe_lab.tokens import ApproxCounter
from tests._support.builders import call, reply, results_for, user
from tests.strategies.autogen._shared import COUNTER, _conversations, _logged


# --- the same requests from autogen-core's own code ---------------------------------------


@pytest.fixture(scope="module")
def peer():
    pytest.importorskip("autogen_core", reason="autogen-core is not installed: pip install harpe_lab[peers]")
    from harpe_lab.peers import autogen

    return autogen


def _pairs(peer, conv_peak: int):
    """(native factory, peer factory) for each strategy and setting compared."""
    limit = max(50, conv_peak // 3)
    return {
        "buffered-1": (lambda: Buffered(buffer_size=1).context("sys"), lambda: peer.buffered("sys", buffer_size=1)),
        "buffered-7": (lambda: Buffered(buffer_size=7).context("sys"), lambda: peer.buffered("sys", buffer_size=7)),
        "head-and-tail-3-5": (lambda: HeadAndTail(head_size=3, tail_size=5).context("sys"),
                              lambda: peer.head_and_tail("sys", head_size=3, tail_size=5)),
        "head-and-tail-2-1": (lambda: HeadAndTail(head_size=2, tail_size=1).context("sys"),
                              lambda: peer.head_and_tail("sys", head_size=2, tail_size=1)),
        "token-limited": (lambda: TokenLimited(token_limit=limit, counter=COUNTER).context("sys"),
                          lambda: peer.token_limited("sys", token_limit=limit, counter=COUNTER)),
    }


def _peak(conv) -> int:
    return int(replay(conv, lambda: Buffered(buffer_size=10**9).context("sys"), counter=COUNTER)
               .requests["input_tokens"].max())


class _Recording:
    """Delegates the lifecycle to an `AutogenContext` and records, at every request,
    AutoGen's own selection (before `pair_up`)."""

    def __init__(self, inner, raws):
        self.inner, self.raws, self.limit = inner, raws, inner.limit

    def begin_turn(self, input):
        self.inner.begin_turn(input)

    def append(self, message):
        self.inner.append(message)

    def compact(self):
        out = self.inner.compact()
        self.raws.append(self.inner.last_selection)
        return out

    def observe(self, usage):
        self.inner.observe(usage)

    def commit_turn(self):
        self.inner.commit_turn()

    def abort_turn(self):
        self.inner.abort_turn()


def _same_requests(peer, conv, which=None):
    """Native and AutoGen's own code send the same request at every index, and AutoGen's
    raw selection is the native ``select`` of the same transcript at every request."""
    cut = 0
    for name, (native, theirs) in _pairs(peer, _peak(conv)).items():
        if which is not None and name not in which:
            continue
        log: list = []
        raws: list = []
        policy = native().policy
        a = replay(conv, _logged(policy, log, "sys"), counter=COUNTER)
        b = replay(conv, lambda theirs=theirs: _Recording(theirs(), raws), counter=COUNTER)
        assert len(a) == len(b) == len(log) == len(raws)
        for i in range(len(a)):
            assert raws[i] == policy.select(log[i]), f"{name} on {conv.id}: AutoGen selects otherwise at request {i}"
            assert a.rendered(i) == b.rendered(i), f"{name} on {conv.id}: request {i} differs"
        fa, fb = a.requests.drop(columns="strategy"), b.requests.drop(columns="strategy")
        assert fa.equals(fb), f"{name} on {conv.id}: the frames differ"
        assert a.limit == b.limit
        cut += int(fa["messages_dropped"].max() > 0)
    assert cut, f"no strategy cut anything on {conv.id}: the comparison would prove nothing"


class TestSameAsAutogen:
    @pytest.mark.parametrize("name", list_datasets())
    def test_bundled(self, peer, name):
        _same_requests(peer, load(name))

    @settings(max_examples=40, deadline=None)
    @given(conv=_conversations(), sizes=st.tuples(st.integers(1, 6), st.integers(1, 6), st.integers(1, 150)))
    def test_generated_with_interrupted_turns(self, peer, conv, sizes):
        n, m, limit = sizes
        counter = ApproxCounter()
        pairs = [
            (Buffered(buffer_size=n), lambda: peer.buffered("s", buffer_size=n)),
            (HeadAndTail(head_size=n, tail_size=m), lambda: peer.head_and_tail("s", head_size=n, tail_size=m)),
            (TokenLimited(token_limit=limit, counter=counter),
             lambda: peer.token_limited("s", token_limit=limit, counter=counter)),
        ]
        for policy, theirs in pairs:
            a = replay(conv, lambda: policy.context("s"), counter=counter)
            b = replay(conv, theirs, counter=counter)
            assert [a.rendered(i) for i in range(len(a))] == [b.rendered(i) for i in range(len(b))], policy
            assert a.requests.drop(columns="strategy").equals(b.requests.drop(columns="strategy"))

    def test_counting_client_counts_like_the_native(self, peer):
        msgs = list(load("coding_agent").messages())[:12]
        tools = ({"type": "function", "function": {"name": "run", "description": "d", "parameters": {}}},)
        policy = TokenLimited(token_limit=10, counter=COUNTER, tools=tools)
        client = peer.CountingClient(COUNTER)
        assert client.count_tokens([peer.to_autogen(m) for m in msgs], tools=[t["function"] for t in tools]) == \
            policy.count(msgs)

    def test_round_trip_of_messages(self, peer):
        msgs = [user("q"), reply("thinking", call("a", "lookup", q=1)), results_for("a", content="r"), reply("done")]
        assert tuple(peer.from_autogen_any(peer.to_autogen(m)) for m in msgs) == tuple(msgs)

    def test_a_missing_extra_says_what_to_install(self):
        code = ("import sys; sys.modules['autogen_core'] = None\n"
                "try:\n    import harpe_lab.peers.autogen\nexcept ImportError as e:\n    print(e)")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        assert "pip install harpe_lab[peers]" in out


def _real(root: Path, kind: str, name: str, **options):
    path = root / kind / name
    if not path.exists():
        pytest.skip(f"real data {path} is absent")
    from harpe_lab.importers import load_any

    return load_any(path, **options)


@pytest.mark.real_data
class TestSameAsAutogenOnRealSessions:
    @pytest.mark.parametrize("kind, name, options", [
        ("swe_agent", "demonstrations__ctf__crypto__eps.traj", {}),
        ("swe_agent", "demonstrations__ctf__crypto__katy.traj", {}),
        ("tau_bench", "gpt-4o-airline.json", {"index": 0}),
        ("claude_code", "subagent.jsonl", {}),
    ])
    def test_real(self, peer, real_data, kind, name, options):
        _same_requests(peer, _real(real_data, kind, name, **options))

    @pytest.mark.slow
    def test_a_long_claude_code_session(self, peer, real_data):
        conv = _real(real_data, "claude_code", "258c7280-ae70-4798-800f-63464d01a85d.jsonl")
        _same_requests(peer, conv, which={"buffered-7", "head-and-tail-3-5", "token-limited"})
