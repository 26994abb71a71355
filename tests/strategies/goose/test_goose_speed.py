"""The shortcut that keeps Goose's strategy cheap per request (``harpe_lab.strategies.goose``)
sends what the plain way sends: Goose finds the calls it summarizes from the transcript's start
while no call id has come twice, and by a map of every call otherwise; both ways pick the same
rounds.
"""

from __future__ import annotations

import dataclasses

from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.conversation import Conversation
from harpe_lab.messages import AssistantMessage, ToolResults, Usage
from harpe_lab.replay import replay
from harpe_lab.strategies import goose
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, conversations
from tests.strategies._agents import COUNTER, PROPERTY, Distiller


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
