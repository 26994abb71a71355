"""Generated conversations and replay checks shared by the tests of the edit strategies
(masking, clearing, trimming) and their peer adapters; the messages come from `builders`."""

from __future__ import annotations

from hypothesis import strategies as st

import pytest

from harpe_lab.conversation import Conversation, Turn
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.replay import replay
from harpe_lab.strategies.editing import EditContext, Incremental
from harpe_lab.strategies.harpe import FullContext
from tests._support.builders import image
from tests._support.data import REAL_DATA

SYSTEM = "You are a coding agent."


# --- invariants of one request -------------------------------------------------------------


def assert_pairs_by_ids(messages) -> None:
    """Every reply with calls is followed by the results of exactly those call ids, and
    every results message follows its calls (what a provider requires)."""
    for k, m in enumerate(messages):
        if isinstance(m, AssistantMessage) and m.calls:
            assert k + 1 < len(messages) and isinstance(messages[k + 1], ToolResults), f"orphaned call at {k}"
            assert [c.id for c in m.calls] == [r.id for r in messages[k + 1].results], f"call ids changed at {k}"
        if isinstance(m, ToolResults):
            assert k > 0 and isinstance(messages[k - 1], AssistantMessage), f"orphaned results at {k}"
            assert [c.id for c in messages[k - 1].calls] == [r.id for r in m.results], f"result ids changed at {k}"


def assert_the_promise(compaction, previous: tuple, since: list, aborted: bool) -> None:
    """A request's `Compaction.edits` kept against the request before it (``previous``) and the
    messages appended since (``since``): the same messages but at the positions named, and
    ``compacted`` exactly when one of those differs. After an aborted turn what it appended is
    gone, so no promise can hold."""
    new = compaction.rendered.messages
    assert_pairs_by_ids(new)
    assert not (aborted and compaction.edits is not None), "what the aborted turn appended is gone: no promise"
    if compaction.edits is not None:
        base = previous + tuple(since)
        assert len(new) == len(base)
        differs = {k for k, (a, b) in enumerate(zip(new, base)) if a is not b}
        assert differs <= set(compaction.edits) and compaction.compacted == bool(differs)


def assert_an_edit(before, after) -> None:
    """``after`` is ``before`` with some tool results / call inputs replaced in place."""
    assert len(after) == len(before)
    for m, o in zip(before, after):
        assert type(o) is type(m)
        if isinstance(m, UserInput):
            assert o == m
        elif isinstance(m, AssistantMessage):
            assert o.text == m.text and [(c.id, c.name) for c in o.calls] == [(c.id, c.name) for c in m.calls]
        else:
            assert [r.id for r in o.results] == [r.id for r in m.results]
            assert [r.success for r in o.results] == [r.success for r in m.results]


def real_params(pattern: str, n: int) -> list:
    """Up to ``n`` files of ``../shared/data/real`` matching ``pattern``, as parameters
    (one ``None`` parameter when there are none: the test then skips)."""
    found = sorted(REAL_DATA.glob(pattern))[:n] if REAL_DATA.is_dir() else []
    return [pytest.param(p, id=p.name[:40]) for p in found] or [pytest.param(None, id="absent")]


def check_replay(conversation: Conversation, factory, policy, *, counter, newest: bool = True) -> tuple:
    """Replay ``conversation`` under ``factory`` and under the full history; at every
    request the edit strategy sent exactly ``policy`` applied to the full history, a valid
    request ending (when ``newest``) with the newest original message. Returns both replays."""
    edited = replay(conversation, factory, counter=counter, name="edited")
    full = replay(conversation, lambda: FullContext(SYSTEM), counter=counter, name="full")
    assert len(edited) == len(full)
    for i in range(len(full)):
        history = full.rendered(i).messages
        sent = edited.rendered(i).messages
        assert sent == policy(history), f"request {i} is not the policy applied to the history"
        assert_an_edit(history, sent)
        assert_pairs_by_ids(sent)
        if history and newest:
            assert edited.sent_ids(i)[-1] == edited.available_ids(i)[-1], f"request {i} lost its newest message"
    frame = edited.requests
    probe = factory()
    if type(probe) is EditContext and isinstance(probe.policy, Incremental):
        # the policy's editor (one request at a time) against the policy applied to the
        # whole history at every request: the same requests, the same stand-in objects
        bound = probe.policy
        whole = replay(conversation, lambda: EditContext(SYSTEM, lambda ms: bound(ms), limit=probe.limit),
                       counter=counter, name="edited")
        assert frame.equals(whole.requests), "the editor's frame differs from the whole-history policy's"
        for i in range(len(whole)):
            assert edited.sent_ids(i) == whole.sent_ids(i)
            assert edited.rendered(i) == whole.rendered(i)
    # a request that only grew is sent as "the previous one plus new messages"
    for i in range(1, len(full)):
        prev, now = edited.rendered(i - 1).messages, edited.rendered(i).messages
        same_prefix = len(now) >= len(prev) and all(a == b for a, b in zip(prev, now))
        if same_prefix:
            assert not frame.compacted.iloc[i], f"request {i} reported a compaction it did not make"
    return edited, full


# --- generated conversations -----------------------------------------------------------------

_line = st.text(alphabet="abc xyz✓é", min_size=0, max_size=12)
_content = st.lists(_line, min_size=0, max_size=40).map("\n".join)
_tools = st.sampled_from(["bash", "read", "grep", "edit"])


@st.composite
def conversations(draw, *, max_turns: int = 5, max_rounds: int = 6) -> Conversation:
    """Conversations as Harpe records them: a user input, rounds of one reply with 1-3
    tool calls and their results (long and multi-line, some failed, some with images), an
    answer or not; some turns failed or interrupted."""
    turns = []
    n = 0
    for t in range(draw(st.integers(1, max_turns))):
        messages: list = []
        for r in range(draw(st.integers(0, max_rounds))):
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                n += 1
                calls.append(ToolCall(f"call_{n}", draw(_tools), {"arg": draw(_line)}))
            messages.append(AssistantMessage(draw(_line), tuple(calls)))
            messages.append(ToolResults(tuple(
                ToolResult(c.id, draw(_content), (image(),) if draw(st.integers(0, 9)) == 0 else (),
                           draw(st.integers(0, 5)) > 0)
                for c in calls
            )))
        outcome = draw(st.sampled_from(["answered", "answered", "answered", "failed", "interrupted"]))
        if outcome == "answered" or draw(st.booleans()):
            messages.append(AssistantMessage(f"answer {t} " + draw(_line)))
        turns.append(Turn(UserInput(f"task {t} " + draw(_line)), tuple(messages), outcome))
    return Conversation(tuple(turns), id="generated")


def drive(ctx, msgs) -> list[tuple]:
    """The requests ``ctx`` sends for a task and its one-call rounds, one request per round."""
    ctx.begin_turn(msgs[0])
    sent = [ctx.compact().rendered.messages]
    for k in range(1, len(msgs), 2):
        ctx.append(msgs[k])
        ctx.append(msgs[k + 1])
        sent.append(ctx.compact().rendered.messages)
    return sent


def round_numbers(messages) -> list[int]:
    """The round numbers (c1 -> 1) of the tool results in ``messages``."""
    return [int(m.results[0].id[1:]) for m in messages if isinstance(m, ToolResults)]
