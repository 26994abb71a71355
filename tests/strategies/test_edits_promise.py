"""`Compaction.edits`: a strategy's promise of how a request follows the previous one.

The engine trusts a promise (it checks only its ends), so every strategy that makes one is
held to it here, request by request, on every preset: the request is the previous one
followed by the messages appended since, except at the promised places. And a replay that
takes the promises gives exactly the frame of one that ignores them and compares.
"""

from __future__ import annotations

import dataclasses

import pytest

from harpe_lab.datasets import load, synthesize
from harpe_lab.presets import PRESETS, make_strategy
from harpe_lab.protocol import Compaction
from harpe_lab.replay import replay
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import TiktokenCounter


def _with_aborts(conversation, every: int = 5):
    turns = [dataclasses.replace(t, outcome="failed", error="boom") if k % every == every - 1 else t
             for k, t in enumerate(conversation.turns)]  # fmt: skip
    return dataclasses.replace(conversation, turns=tuple(turns))


CONVERSATIONS = {  # name: (conversation, a budget the largest turn fits that still cuts)
    "coding_agent": (lambda: load("coding_agent"), 16_000),  # holds a failed and an interrupted turn
    "support_chat": (lambda: load("support_chat"), 2_500),
    "synthetic+aborts": (lambda: _with_aborts(synthesize(120, seed=5, tool_rate=0.6)), 6_000),
}


class _Held:
    """A strategy whose every `Compaction` is checked against what it was sent: forwards the
    whole lifecycle and every optional capability to ``ctx``."""

    def __init__(self, ctx, log: list) -> None:
        self._ctx = ctx
        self._log = log
        self._previous: tuple | None = None
        self._since: list = []

    def __getattr__(self, name):
        return getattr(self._ctx, name)

    def begin_turn(self, input) -> None:
        self._ctx.begin_turn(input)
        self._since.append(input)

    def append(self, message) -> None:
        self._ctx.append(message)
        self._since.append(message)

    def observe(self, usage) -> None:
        self._ctx.observe(usage)

    def commit_turn(self) -> None:
        self._ctx.commit_turn()

    def abort_turn(self) -> None:
        self._ctx.abort_turn()

    def compact(self) -> Compaction:
        c = self._ctx.compact()
        new = tuple(c.rendered.messages)
        if c.edits is not None:
            base = (self._previous or ()) + tuple(self._since)
            assert len(new) == len(base), f"request {len(self._log)}: promised a continuation of another length"
            differs = tuple(k for k, (a, b) in enumerate(zip(new, base)) if a is not b)
            assert set(differs) <= set(c.edits), f"request {len(self._log)}: unpromised changes at {differs}"
            assert c.compacted == bool(differs), f"request {len(self._log)}: compacted={c.compacted} with edits {differs}"
        self._log.append(c.edits)
        self._previous, self._since = new, []
        return c


class _Blind(_Held):
    """The same strategy with every promise withdrawn: the engine compares by itself."""

    def compact(self) -> Compaction:
        c = self._ctx.compact()
        return Compaction(c.rendered, c.compacted)


@pytest.fixture(scope="module")
def counter():
    return TiktokenCounter()


@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
@pytest.mark.parametrize("name", sorted(PRESETS))
def test_promises_hold_and_change_nothing(name, conversation, counter):
    make, budget = CONVERSATIONS[conversation]
    conv = make()
    factory = make_strategy(name, budget=budget, counter=counter, system=conv.system, distill=ExtractiveDistiller())
    log: list = []
    held = replay(conv, lambda: _Held(factory(), log), counter=counter, name=name)
    blind = replay(conv, lambda: _Blind(factory(), []), counter=counter, name=name)
    assert held.requests.equals(blind.requests)
    assert [held.rendered(i) for i in range(len(held))] == [blind.rendered(i) for i in range(len(blind))]
    for i in range(len(held)):
        assert held.sent_ids(i) == blind.sent_ids(i)
    assert held.context_map().equals(blind.context_map())
    if name in ("full", "summarizing", "masking", "clearing", "trimming", "openhands-masking"):
        # these know how each request follows the last: most requests carry a promise
        assert sum(e is not None for e in log) > len(log) // 2, f"{name} promised on {log.count(None)} of {len(log)}"


def test_an_abort_withdraws_the_promise(counter):
    from harpe_lab.messages import AssistantMessage, UserInput
    from harpe_lab import FullContext

    ctx = FullContext("sys")
    ctx.begin_turn(UserInput("one"))
    assert ctx.compact().edits == ()
    ctx.append(AssistantMessage("reply"))
    ctx.abort_turn()
    ctx.begin_turn(UserInput("two"))
    assert ctx.compact().edits is None  # "reply" is gone: not a continuation
    ctx.append(AssistantMessage("again"))
    ctx.commit_turn()
    ctx.begin_turn(UserInput("three"))
    assert ctx.compact().edits == ()


def test_a_broken_promise_is_caught_at_its_end(counter):
    """A strategy that promises a continuation but changed the newest sent message: the engine
    sees it at the promise's end and compares instead, so the numbers stay right."""
    from harpe_lab.messages import Rendered, UserInput
    from harpe_lab import FullContext

    class Liar(FullContext):
        def compact(self):
            c = super().compact()
            msgs = list(c.rendered.messages)
            if len(msgs) > 2:
                msgs[-2] = UserInput("not what was sent")
            return Compaction(Rendered(c.rendered.system, tuple(msgs)), False, ())

    conv = load("support_chat")
    lied = replay(conv, lambda: Liar(conv.system), counter=counter, name="x")
    honest = replay(conv, lambda: _Blind(Liar(conv.system), []), counter=counter, name="x")
    assert lied.requests.equals(honest.requests)
