"""What the native AutoGen tests and the differential ones share: the counter, generated
conversations, and a context that logs what it is asked."""

from __future__ import annotations

from hypothesis import strategies as st

from harpe_lab.conversation import Conversation, Turn
from harpe_lab.strategies.autogen import ModelContext
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results_for, user

COUNTER = TiktokenCounter("cl100k_base")


# --- generated conversations, and a context that logs its transcripts --------------------------


@st.composite
def _conversations(draw):
    turns = []
    for t in range(draw(st.integers(1, 5))):
        msgs = []
        for r in range(draw(st.integers(0, 4))):
            ids = [f"t{t}r{r}c{k}" for k in range(draw(st.integers(1, 2)))]
            msgs.append(reply("r" * draw(st.integers(0, 20)), *[call(i, "lookup") for i in ids]))
            msgs.append(results_for(*ids, content="c" * draw(st.integers(0, 120))))
        msgs.append(reply(f"final {t} " + "f" * draw(st.integers(0, 30))))
        outcome = draw(st.sampled_from(["answered", "answered", "answered", "interrupted"]))
        turns.append(Turn(user(f"u{t} " + "u" * draw(st.integers(0, 60))), tuple(msgs), outcome=outcome))
    return Conversation(tuple(turns))


def _logged(policy, log, system=""):
    """A factory of contexts running ``policy``, logging each transcript it is given."""

    def run(messages):
        log.append(tuple(messages))
        return policy(messages)

    limit = policy.context(system).limit
    return lambda: ModelContext(system, run, limit=limit)
