"""Laser's context policies: pure functions from a message list to the messages a model sees.

A *policy* is a frozen, validated callable ``policy(messages) -> tuple[Message, ...]``:

* `LastN` keeps the last ``n`` messages;
* `TokenBudget` keeps the newest messages whose estimated tokens fit ``max_tokens``
  (always at least one);
* `Chain` applies policies in order, each to the previous one's output.

Every policy here keeps a *tail* of its input, and a tail can begin with tool results
whose call was cut off — a request no provider accepts. So a window never starts with
`ToolResults`: its start moves forward past them. If that would leave nothing (the tail
was only tool results), it moves back instead, to the assistant message that made the
calls; that is the one case where a policy returns more than ``n`` messages or more than
its budget. Policies never mutate their input, and applying one to its own output changes
nothing.

Around them: `block` (the last messages as one text block), `assemble` (apply a policy
and record a `Manifest` of what the model received), `fold` with bounds (`Last`,
`After`, `UpTo`, `Whole`) over a message log, `Memory` (facts a ``remember`` tool
recorded, folded from the log), and `PolicyContext`, which runs any policy through
Harpe's context lifecycle for `harpe_lab.replay.replay`.

Layout (one concept per module, each importing only those above it):

* ``_policies``: `LastN`, `TokenBudget`, `MessagePrice`, `Chain`, `block` (`message_text` is the ground floor's, `harpe_lab._text`)
* ``_manifest``: `Manifest`, `assemble`
* ``_folds``: `fold` and its bounds (`Last`, `After`, `UpTo`, `Whole`)
* ``_memory``: `Memory`
* ``_context``: `PolicyContext`
"""

from __future__ import annotations

from ._context import PolicyContext
from ._folds import After, Bound, Checkpoint, Last, UpTo, Whole, fold
from ._manifest import Manifest, assemble
from ._memory import Memory
from ._policies import Chain, LastN, MessagePrice, Policy, TokenBudget, block, message_text
from ...errors import StrategyError
from ...protocol import Limit
from .._preset import Factory, Knob, Preset, budget_knob, fixed_tokens
from typing import Any

__all__ = [
    "Policy",
    "LastN",
    "TokenBudget",
    "MessagePrice",
    "Chain",
    "message_text",
    "block",
    "Manifest",
    "assemble",
    "Checkpoint",
    "Bound",
    "Last",
    "After",
    "UpTo",
    "Whole",
    "fold",
    "Memory",
    "PolicyContext",
    "PRESETS",
]


# --- presets ------------------------------------------------------------------------------


def _chain(*, counter: Any, system: str, tools: tuple, budget: int, n: int, **_: Any) -> Factory:
    room = budget - fixed_tokens(counter, system, tools)
    if room < 1:
        raise StrategyError(
            f"budget {budget:,} tokens leaves no room for messages: the system prompt and tools alone take "
            f"{budget - room:,}; raise the budget"
        )
    policy = Chain([LastN(n), TokenBudget(room, estimator=MessagePrice(counter))])
    limit = Limit(tokens=budget, kind="target")
    return lambda: PolicyContext(system, policy, limit=limit)


PRESETS: tuple[Preset, ...] = (
    Preset(name="chain", family="laser",
           source="Laser's `Chain(LastN, TokenBudget)` (`harpe_lab.strategies.laser`)",
           description="Laser's Chain([LastN(n), TokenBudget]): the last n messages, newest first, within the budget",
           knobs=(budget_knob("the request's tokens, system and tools included"),
                  Knob(name="n", unit="messages", default=100, minimum=1, help="keep at most the last n messages")),
           needs=frozenset({"counter"}), limit_kind="target", _make=_chain,
           note="the budget binds only when the last n messages take more than it; the newest message is always kept"),
)
