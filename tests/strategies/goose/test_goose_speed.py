"""The shortcuts that keep Goose's, Roo Code's and the providers' strategies cheap per request
(``harpe_lab.strategies.goose``, ``.roo``, ``.providers``) send what the plain way sends.

Goose finds the calls it summarizes from the transcript's start while no call id has come
twice, and by a map of every call otherwise: both ways pick the same rounds. Roo keeps each
file's outline from one condense to the next, and its turn's mark of the files read is a copy
made only when the turn reads one: a file read again, or taken back by an aborted turn, is
folded with the content it holds now.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.conversation import Conversation
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResults, Usage
from harpe_lab.replay import replay
from harpe_lab.strategies import goose, roo
from harpe_lab.tokens import BytesCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, conversations

COUNTER = BytesCounter()
PROPERTY = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Distiller:
    """Answers from ``replies`` in turn (the last one again when they run out)."""

    def __init__(self, *replies: str | None) -> None:
        self.replies = list(replies) or ["the summary"]
        self.calls = 0

    def __call__(self, rendered) -> str | None:
        self.calls += 1
        return self.replies[min(self.calls, len(self.replies)) - 1]


class _FullScan(goose.ContextManagementContext):
    """Goose's context finding every call it summarizes by a map of all the transcript's calls."""

    @property
    def _unique(self) -> bool:
        return False

    @_unique.setter
    def _unique(self, value: bool) -> None:
        pass


def _repeated_ids(conversation: Conversation, every: int) -> Conversation:
    """``conversation`` with its call ids counted modulo ``every``: ids come again across rounds."""
    n = 0
    turns = []
    for turn in conversation.turns:
        names: dict[str, str] = {}
        messages = []
        for m in turn.messages:
            if isinstance(m, AssistantMessage):
                calls = []
                for c in m.calls:
                    n += 1
                    names[c.id] = f"call_{n % every}"
                    calls.append(dataclasses.replace(c, id=names[c.id]))
                messages.append(dataclasses.replace(m, calls=tuple(calls)))
            else:
                messages.append(ToolResults(tuple(dataclasses.replace(r, id=names.get(r.id, r.id))
                                                  for r in m.results)))
        turns.append(dataclasses.replace(turn, messages=tuple(messages), ids=()))
    return dataclasses.replace(conversation, turns=tuple(turns))


class TestGooseFindsTheCallsItSummarizes:
    @PROPERTY
    @given(conversations(max_turns=6, max_rounds=6), st.sampled_from([None, 2, 5]),
           st.sampled_from([(1, 1), (2, 3), (4, 2)]), st.sampled_from([600, 3_000, 10**6]))
    def test_from_the_start_or_by_a_map_of_every_call_alike(self, conversation, every, cutoff_batch, window):
        if every is not None:  # ids that come again take the map
            conversation = _repeated_ids(conversation, every)
        cutoff, batch = cutoff_batch
        config = goose.ContextManagement(window=window, cutoff=cutoff, batch=batch)

        def run(kind):
            def factory():
                return kind(SYSTEM, config, distill=Distiller("whole"), pair_distill=Distiller("one line"))

            rp = replay(conversation, factory, counter=COUNTER, name="goose")
            return rp.requests, [repr(e) for e in rp.events], [rp.rendered(i) for i in range(len(rp))]

        fast, full = run(goose.ContextManagementContext), run(_FullScan)
        assert fast[0].equals(full[0]) and fast[1:] == full[1:]

    def test_a_round_of_one_call_is_summarized_from_its_results_as_they_are(self):
        pairs: list = []

        def pair_distill(rendered):
            pairs.append(rendered.messages[0].text)
            return "line"

        ctx = goose.ContextManagement(window=10**9, cutoff=1, batch=2).context(
            SYSTEM, distill=Distiller(), pair_distill=pair_distill)
        ctx.begin_turn(user("one"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c1"), call("c2")))
        ctx.append(results(("c1", "out c1"), ("c2", "out c2")))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c3")))
        ctx.append(results(("c3", "out c3")))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("done"))
        ctx.commit_turn()
        ctx.begin_turn(user("two"))
        ctx.compact()  # 3 visible, none this turn: c1 and c2 chosen
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c4")))
        ctx.append(results(("c4", "out c4")))
        out = ctx.compact()
        assert out.compacted and out.edits is None
        # each call of a two-call round with its own result only
        assert len(pairs) == 2 and "out c1" in pairs[0] and "out c2" not in pairs[0]
        assert "out c2" in pairs[1] and "out c1" not in pairs[1]
        # and a request with nothing to do says it only grew
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c5")))
        ctx.append(results(("c5", "out c5")))
        quiet = ctx.compact()
        assert not quiet.compacted and quiet.edits == ()


FILE_A = "\n".join(["def alpha(x):", "    y = x", "    z = y", "    return z", ""])
FILE_B = "\n".join(["class Beta:", "    a = 1", "    b = 2", "    c = 3", ""])


def _roo_ctx(distill, allowed: int = 1_000):
    config = roo.Condense(window=10_000, max_tokens=9_000 - allowed)
    return config.context(SYSTEM, counter=COUNTER, distill=distill)


def _read(ctx, call_id: str, path: str, content: str, usage: int) -> None:
    ctx.observe(Usage(input_tokens=usage))
    ctx.append(reply("", ToolCall(call_id, "Read", {"file_path": path})))
    ctx.append(results((call_id, content)))


def _summary_text(out) -> str:
    (message,) = out.rendered.messages
    return message.text


class TestRooFoldsTheFilesItReadAsTheyAreNow:
    def test_a_file_read_again_is_folded_with_its_new_content(self):
        ctx = _roo_ctx(Distiller("s1", "s2"))
        ctx.begin_turn(user("task"))
        ctx.compact()
        _read(ctx, "c1", "a.py", FILE_A, usage=2_000)
        first = ctx.compact()
        assert first.compacted and _summary_text(first) == roo.summary_text("s1", "", roo.folded_files(
            [("a.py", FILE_A)]))
        _read(ctx, "c2", "a.py", FILE_B, usage=2_000)
        second = ctx.compact()
        assert second.compacted and _summary_text(second) == roo.summary_text("s2", "", roo.folded_files(
            [("a.py", FILE_B)]))
        assert "alpha" not in _summary_text(second)

    def test_an_aborted_turn_takes_its_reads_back(self):
        for outcome, folded in [("abort", FILE_A), ("commit", FILE_B)]:
            ctx = _roo_ctx(Distiller("s"))
            ctx.begin_turn(user("task"))
            ctx.compact()
            _read(ctx, "c1", "a.py", FILE_A, usage=10)
            ctx.compact()
            _read(ctx, "c2", "b.py", FILE_B, usage=10)
            ctx.compact()
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply("read"))
            ctx.commit_turn()
            ctx.begin_turn(user("again"))
            ctx.compact()
            _read(ctx, "c3", "a.py", FILE_B, usage=10)
            assert not ctx.compact().compacted
            if outcome == "abort":
                ctx.abort_turn()
            else:
                ctx.observe(Usage(input_tokens=10))
                ctx.append(reply("read again"))
                ctx.commit_turn()
            ctx.begin_turn(user("go on"))
            ctx.compact()
            ctx.observe(Usage(input_tokens=2_000))
            ctx.append(reply("", call("c4")))
            ctx.append(results(("c4", "ok")))
            out = ctx.compact()
            # most recently read first: a.py last read in the turn kept, else b.py was
            order = [("b.py", FILE_B), ("a.py", FILE_A)] if outcome == "abort" else [("a.py", folded), ("b.py", FILE_B)]
            assert out.compacted and _summary_text(out) == roo.summary_text("s", "", roo.folded_files(order)), outcome

    def test_a_file_is_outlined_once_for_every_condense_that_folds_it(self, monkeypatch):
        outlined: list[str] = []
        real = roo.outline

        def counting(content: str) -> str:
            outlined.append(content)
            return real(content)

        monkeypatch.setattr(roo, "outline", counting)
        ctx = _roo_ctx(Distiller("s"))
        ctx.begin_turn(user("task"))
        ctx.compact()
        _read(ctx, "c1", "a.py", FILE_A, usage=2_000)
        assert ctx.compact().compacted
        for k in range(3):
            ctx.observe(Usage(input_tokens=2_000))
            ctx.append(reply("", call(f"x{k}")))
            ctx.append(results((f"x{k}", "ok")))
            out = ctx.compact()
            assert out.compacted and "## File Context: a.py" in _summary_text(out)
        assert outlined == [FILE_A]
