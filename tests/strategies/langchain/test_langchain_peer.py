"""Differential: the native `Summarization` and `ClearToolUsesEdit` against LangChain's own
middleware (harpe_lab.peers.langchain) on generated, bundled and real conversations: both send
the same request at every model call and the distiller sees the same prompts; LangChain's own
functions as the oracle of what the summarizer sees (skipped without the `peers` extra; real
sessions skipped when ../shared/data/real is absent)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.messages import Rendered, ToolResults, UserInput
from harpe_lab.replay import replay
from harpe_lab.strategies.langchain import (DEFAULT_SUMMARY_PROMPT, ClearToolUsesEdit, Summarization, buffer_xml,
                                            trim_last)
from harpe_lab.tokens import BytesCounter
from tests._support.editing import SYSTEM, conversations, real_params
from tests.strategies.langchain._shared import _SETTINGS, Recorder, _unit_lists

pytest.importorskip("langchain", reason="the peers extra (langchain) is not installed")
from langchain.agents.middleware import summarization as lc_summarization  # noqa: E402
from langchain_core.messages.utils import get_buffer_string, trim_messages  # noqa: E402

from harpe_lab.peers import langchain as peer  # noqa: E402


def _summarize(conversation, config: Summarization, counter=None, system: str = SYSTEM):
    """Replay under the native and the peer; assert identical requests and distill prompts;
    return (native replay, peer replay, folds). A fold is a compacted request: the state was
    rewritten (summarized, or dropped when the summarizer saw nothing)."""
    counter = counter or BytesCounter()
    ours, theirs = Recorder(), Recorder()
    a = replay(conversation, lambda: config.context(system, counter=counter, distill=ours), counter=counter,
               name="native")
    b = replay(conversation, lambda: peer.summarization(system, config, counter=counter, distill=theirs),
               counter=counter, name="langchain")
    _same(a, b)
    assert ours.requests == theirs.requests, "the summarizer saw different prompts"
    return a, b, int(a.requests.compacted.sum())


def _clear(conversation, config: ClearToolUsesEdit, counter=None, tools=()):
    """The same for context editing; returns (native, peer, requests with a cleared result)."""
    counter = counter or BytesCounter()
    a = replay(conversation, lambda: config.context(SYSTEM, counter=counter, tools=tools), counter=counter,
               tools=tools, name="native")
    b = replay(conversation, lambda: peer.context_editing(SYSTEM, config, counter=counter, tools=tools),
               counter=counter, tools=tools, name="langchain")
    _same(a, b)
    cleared = sum(any(isinstance(m, ToolResults) and any(r.content == config.placeholder for r in m.results)
                      for m in a.rendered(i).messages) for i in range(len(a)))
    return a, b, cleared


def _same(a, b) -> None:
    assert len(a) == len(b)
    for i in range(len(a)):
        x, y = a.rendered(i), b.rendered(i)
        if x != y:
            k = next((k for k, (m, n) in enumerate(zip(x.messages, y.messages)) if m != n), None)
            where = f"message {k}: {x.messages[k]!r:.600} != {y.messages[k]!r:.600}" if k is not None else (
                f"{len(x.messages)} != {len(y.messages)} messages")
            pytest.fail(f"request {i} differs at {where}")
    fa, fb = a.requests, b.requests
    for column in ("compacted", "summarized", "distill_calls", "input_tokens", "overshoot_tokens"):
        assert fa[column].tolist() == fb[column].tolist(), column
    assert a.limit == b.limit


# --- what the summarizer sees: LangChain's own functions as the oracle ------------------------------


class TestValidation:
    def test_the_prompt_is_langchains_word_for_word(self):
        assert DEFAULT_SUMMARY_PROMPT == lc_summarization.DEFAULT_SUMMARY_PROMPT


class TestWhatTheSummarizerSees:
    @settings(max_examples=150, **_SETTINGS)
    @given(_unit_lists())
    def test_the_history_is_formatted_as_get_buffer_string_xml(self, units):
        assert buffer_xml(units) == get_buffer_string([peer.to_langchain(u) for u in units], format="xml")

    @settings(max_examples=150, **_SETTINGS)
    @given(_unit_lists(), st.integers(0, 80))
    def test_trimming_is_trim_messages_last_partial_from_a_human(self, units, budget):
        counter = BytesCounter()
        conv = peer._Converter()
        lc = [conv.to(u, u) for u in units]
        count = peer._Count(counter, conv)
        theirs = trim_messages(lc, max_tokens=budget, token_counter=count, start_on="human", strategy="last",
                               allow_partial=True, include_system=True)
        ours = trim_last(units, budget, lambda us: counter.count_rendered(Rendered("", tuple(us))))
        assert ours == [conv.unit(m) for m in theirs]
        assert not ours or isinstance(ours[0], UserInput)


# --- differential: LangChain's own middleware -------------------------------------------------------------


_BUNDLED = {
    # (summarization configs, clearing configs): each folds / clears several times
    "coding_agent": ([Summarization(trigger=("tokens", 3000), keep=("messages", 6), trim_tokens_to_summarize=500),
                      Summarization(trigger=[("messages", 30), {"tokens": 2000, "messages": 10}],
                                    keep=("tokens", 1500))],
                     [ClearToolUsesEdit(trigger=2000, keep=2, clear_at_least=300, clear_tool_inputs=True),
                      ClearToolUsesEdit(trigger=2000, keep=1, token_count="model")]),
    "research_assistant": ([Summarization(trigger=("fraction", 0.5), keep=("fraction", 0.2), context_window=3000),
                            Summarization(trigger=("messages", 12), keep=("messages", 4))],
                           [ClearToolUsesEdit(trigger=1200, keep=3)]),
    "support_chat": ([Summarization(trigger=("tokens", 1500), keep=("tokens", 500), trim_tokens_to_summarize=None),
                      Summarization(trigger=("messages", 20), keep=("messages", 5))],
                     [ClearToolUsesEdit(trigger=1500, keep=2, exclude_tools={"lookup_order"})]),
}


class TestDifferential:
    @pytest.mark.parametrize("name", sorted(_BUNDLED))
    def test_bundled_summarization(self, name):
        for config in _BUNDLED[name][0]:
            a, _, folds = _summarize(datasets.load(name), config)
            assert folds >= 3, (config, folds)
            assert a.requests.summarized.sum() >= 1

    @pytest.mark.parametrize("name", sorted(_BUNDLED))
    def test_bundled_clearing(self, name):
        tools = ({"type": "function", "function": {"name": "bash", "parameters": {}}},)
        for config in _BUNDLED[name][1]:
            _, _, cleared = _clear(datasets.load(name), config, tools=tools)
            assert cleared >= 3, (config, cleared)

    def test_reported_usage_folds_earlier_and_again_as_langchain_does(self):
        # the replay reports the whole request (a long system prompt included) and the reply:
        # LangChain's check of the newest reply's usage fires before its own count does, and
        # again after a fold while the kept reply still reports more than the trigger
        convo, system = datasets.load("coding_agent"), "Follow the house rules. " * 400
        config = Summarization(trigger=("tokens", 4000), keep=("messages", 6))
        _, _, plain = _summarize(convo, config, system=system)
        a, _, reported = _summarize(convo, Summarization(trigger=("tokens", 4000), keep=("messages", 6),
                                                               reported_usage=True), system=system)
        assert reported > plain >= 3
        folds = a.requests.compacted.tolist()
        assert any(x and y for x, y in zip(folds, folds[1:])), "no fold right after a fold"

    @settings(max_examples=25, **_SETTINGS)
    @given(conversations(), st.sampled_from([("messages", 6), ("tokens", 150), ("fraction", 0.3)]),
           st.sampled_from([("messages", 2), ("tokens", 60), ("fraction", 0.1)]), st.sampled_from([None, 0, 40]))
    def test_generated_summarization(self, convo, trigger, keep, trim):
        _summarize(convo, Summarization(trigger=trigger, keep=keep, trim_tokens_to_summarize=trim,
                                        context_window=500, reported_usage=trim == 0))

    @settings(max_examples=25, **_SETTINGS)
    @given(conversations(), st.integers(0, 300), st.integers(0, 3), st.integers(0, 60), st.booleans(),
           st.sampled_from(["messages", "model"]))
    def test_generated_clearing(self, convo, trigger, keep, least, inputs, count):
        _clear(convo, ClearToolUsesEdit(trigger=trigger, keep=keep, clear_at_least=least, clear_tool_inputs=inputs,
                                        exclude_tools={"read"}, token_count=count))


_REAL = [p for p in real_params("claude_code/*.jsonl", 8) if p.values[0] is None or p.values[0].stat().st_size > 1_000_000]


@pytest.mark.real_data
class TestDifferentialOnRealSessions:
    @pytest.mark.parametrize("path", _REAL)
    def test_claude_code_sessions(self, real_data, path):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no long Claude Code session")
        convo = load_any(path)
        for config in (Summarization(trigger=("tokens", 30_000), keep=("messages", 20)),
                       Summarization(trigger=("tokens", 20_000), keep=("tokens", 6000), trim_tokens_to_summarize=2000)):
            *_, folds = _summarize(convo, config)
            assert folds >= 3, (path.name, config, folds)
        # without trimming the summarizer sees every fold
        a, *_ = _summarize(convo, Summarization(trigger=("tokens", 30_000), keep=("messages", 30),
                                                trim_tokens_to_summarize=None))
        assert a.requests.distill_calls.sum() >= 3 and a.requests.summarized.sum() >= 3
        _, _, cleared = _clear(convo, ClearToolUsesEdit(trigger=20_000, keep=3, clear_at_least=2000))
        assert cleared >= 3

    def test_tool_heavy_session(self, real_data):
        from harpe_lab.importers import load_any

        path = real_data / "claude_code" / "tool_heavy.jsonl"
        if not path.is_file():
            pytest.skip("no tool_heavy.jsonl")
        convo = load_any(path)
        *_, folds = _summarize(convo, Summarization(trigger=("messages", 4), keep=("messages", 2)))
        assert folds >= 2
        _, _, cleared = _clear(convo, ClearToolUsesEdit(trigger=100, keep=1))
        assert cleared >= 2
