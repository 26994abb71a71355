"""What the tests of the coding agents' strategies share: a recording distiller, the settings
of their properties, replays of a preset on the bundled and the real sessions, and the text the
speed tests generate."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.messages import AssistantMessage, Rendered, Usage, UserInput
from harpe_lab.presets import make_strategy
from harpe_lab.replay import replay
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.tokens import BytesCounter
from tests._support.builders import reply, user
from tests._support.editing import assert_pairs_by_ids, real_params

COUNTER = BytesCounter()
REAL = real_params("claude_code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 1)
PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Distiller:
    """A distiller that records what it was asked and answers from ``replies`` in turn (the
    last one again when they run out)."""

    def __init__(self, *replies: str | None) -> None:
        self.replies = list(replies) or ["the summary"]
        self.requests: list[Rendered] = []

    def __call__(self, rendered: Rendered) -> str | None:
        self.requests.append(rendered)
        return self.replies[min(len(self.requests), len(self.replies)) - 1]


def _request_text(rendered: Rendered) -> str:
    (message,) = rendered.messages
    return message.text


def _events(rp, kind: str) -> list:
    return [e for e in rp.events if e.kind == kind]


def _real_conversation(path):
    from harpe_lab.importers import load_any

    if path is None:
        pytest.skip("the real Claude Code session is not on this machine")
    return load_any(path)


def _replay(conversation, name: str, counter=COUNTER, **knobs):
    factory = make_strategy(name, counter=counter, system=conversation.system, **knobs)
    return replay(conversation, factory, counter=counter, name=name)


def _previous_usage(frame, i: int) -> int:
    """What the last reply reported before request ``i``: the input and output of request i - 1."""
    return int(frame.input_tokens[i - 1] + frame.output_tokens[i - 1])


def _after_clean_history(conversation, frame, i: int) -> bool:
    """Whether request ``i`` follows a reply whose usage the strategy observed last (no aborted
    turn in between, which rolls the strategy's count back to that turn's start)."""
    if i == 0:
        return False
    turn, step = int(frame.turn[i]), int(frame.step[i])
    if step > 0:
        return True
    before = conversation.turns[turn - 1]
    return before.outcome == "answered" and bool(before.messages) and before.messages[-1].role == "assistant"


def _bundled_replays(name: str, **knobs) -> None:
    """Every bundled conversation under the preset, at half its peak: the engine's invariants hold."""
    for dataset in datasets.list_datasets():
        loaded = datasets.load(dataset)
        for conv in loaded if isinstance(loaded, list) else [loaded]:
            full = replay(conv, lambda: FullContext(conv.system), counter=COUNTER)
            budget = max(500, int(full.requests.input_tokens.max()) // 2)
            rp = replay(conv, make_strategy(name, budget=budget, counter=COUNTER, system=conv.system, **knobs),
                        counter=COUNTER, name=name)
            for i in range(len(rp)):
                assert_pairs_by_ids(rp.rendered(i).messages)


def _answered(ctx, text: str, answer: str, usage: int = 10) -> None:
    ctx.begin_turn(user(text))
    ctx.compact()
    ctx.observe(Usage(input_tokens=usage))
    ctx.append(reply(answer))
    ctx.commit_turn()


def _names(messages) -> list[str]:
    out = []
    for m in messages:
        if isinstance(m, UserInput):
            out.append("marker" if m.text.startswith("[Sliding window") else m.text[:10])
        elif isinstance(m, AssistantMessage):
            out.append("a:" + ",".join(c.id for c in m.calls) if m.calls else "a")
        else:
            out.append("r:" + ",".join(r.id for r in m.results))
    return out


# --- the speed tests: text rich in what JSON escapes --------------------------------------------------

_HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]
EXAMPLES = settings(max_examples=300, deadline=None, suppress_health_check=_HEALTH)
REPLAYS = settings(max_examples=30, deadline=None, suppress_health_check=_HEALTH)


# text weighted towards what JSON escapes, and long enough to cross the 500-character cut
_CHARS = st.one_of(
    st.sampled_from('"\\\n\r\t\b\f\x00\x1f\x7f /é€😀'),
    st.characters(min_codepoint=0, max_codepoint=0x7F),
    st.characters(),  # any code point, lone surrogates included
)
TEXT = st.text(_CHARS, max_size=60)
LONG = st.one_of(TEXT, st.tuples(TEXT, st.integers(1, 80)).map(lambda p: p[0] * p[1]))  # to ~5,000 characters
