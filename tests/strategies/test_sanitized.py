"""A recording sanitized before it was shared holds a marker where each text was
(``[REDACTED_TEXT len=N sha=…]``). Every strategy that measures text itself weighs a marker
as the plain text it replaced, so it compacts where its agent did: each family's measure of a
message with markers equals its measure of the message with N plain characters instead."""

from __future__ import annotations

import re

import pytest

from harpe_lab._text import hidden_chars, message_chars
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.strategies.cline._measures import _message_chars, estimate_message
from harpe_lab.strategies.codex._compact import _estimate as codex_estimate
from harpe_lab.strategies.codex._truncation import approx_tokens
from harpe_lab.strategies.gemini._measures import _measure, estimate_tokens
from harpe_lab.strategies.opencode import _json_chars, estimate
from tests._support.data import REAL_DATA

MARKED = ["[REDACTED_TEXT len=3021 sha=dc9e82a0]", "see [REDACTED_OUTPUT len=40 sha=0123456789abcdef] and [REDACTED_TEXT len=7 sha=aabbccdd]",
          "é [REDACTED_MESSAGE len=500 sha=12345678]", "no marker here", "[REDACTED_SIGNATURE]"]


def plain(text: str) -> str:
    """``text`` with each marker replaced by as many plain characters as it stands for."""
    return re.sub(r"\[REDACTED_[A-Z]+ len=(\d+) sha=[0-9a-f]+\]", lambda m: "x" * int(m.group(1)), text)


def messages(text: str) -> list:
    return [UserInput(text), AssistantMessage(text, (ToolCall("c1", "bash", {"command": text}),)),
            ToolResults((ToolResult("c1", text),))]


MEASURES = {
    "harpe": message_chars,
    "cline": _message_chars,
    "cline-estimate": estimate_message,
    "opencode": lambda m: _json_chars(m, {"c1": "bash"}),
    "gemini": lambda m: _measure(m, {"c1": "bash"}),
}


@pytest.mark.parametrize("text", MARKED)
@pytest.mark.parametrize("family", MEASURES)
def test_a_message_weighs_what_the_texts_its_markers_replaced_weigh(family, text):
    for marked, written in zip(messages(text), messages(plain(text))):
        assert MEASURES[family](marked) == MEASURES[family](written)


@pytest.mark.parametrize("text", MARKED)
def test_a_text_weighs_what_the_texts_its_markers_replaced_weigh(text):
    assert hidden_chars(text) == len(plain(text)) - len(text)
    for measure in (approx_tokens, estimate, estimate_tokens):
        assert measure(text) == measure(plain(text))
    for message in (UserInput(text), ToolResults((ToolResult("c1", text),))):
        assert codex_estimate(message) == codex_estimate(type(message)(*(  # the same message, plain
            (plain(text),) if isinstance(message, UserInput) else ((ToolResult("c1", plain(text)),),))))


@pytest.mark.real_data
@pytest.mark.skipif(not (REAL_DATA / "codex").is_dir(), reason="real Codex sessions are not on this machine")
@pytest.mark.parametrize("preset", ["cline-basic", "windowed"])
def test_on_a_sanitized_session_a_strategy_measuring_text_compacts(preset):
    """On the shared rollout that compacted, strategies that measure text themselves see its
    real sizes (they saw 38-character markers, and cline-basic never compacted)."""
    from harpe_lab.importers import load_any
    from harpe_lab.measure import measure
    from harpe_lab.presets import make_strategy
    from harpe_lab.replay import replay

    conv = load_any(next((REAL_DATA / "codex").glob("rollout-2026-02-23T12-54-34-*.jsonl")))
    m = measure(conv)
    frame = replay(conv, make_strategy(preset, counter=m.counter, system=conv.system,
                                       budget=100_000 if preset == "windowed" else None),
                   counter=m.counter).requests
    assert frame["compacted"].any()
