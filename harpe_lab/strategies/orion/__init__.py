"""orion's context windows: whole turns chosen by tokens, optionally with one running summary.

orion (an agent framework) chooses what each model request carries by counting tokens:

* the system prompt, the tool schemas (and the reply priming a chat request always ends
  with) and ``reserve_tokens`` for the reply are taken off ``max_tokens``;
* the messages are grouped into turns (`harpe_lab.strategies.harpe.turn_groups`: a turn starts at
  each user input), so a reply is never separated from the tool results that answer it;
* the latest turn is always kept, and so is every turn holding a pinned message
  (``pinned=True`` on a `UserInput`, `AssistantMessage` or `ToolResults`);
* then the most recent other turns, newest first, until the first that does not fit — the
  window stops there rather than skip a turn to fit an older, smaller one;
* the kept turns go out in their original order.

When the pinned turns and the latest turn alone do not fit, the window raises
`BudgetError` with the numbers. `SlidingWindow` simply leaves the other turns out;
`SummarizeWindow` folds them (and any earlier summary) into exactly one pinned user
message, ``[Summary of earlier conversation]``, placed first and counted in the budget.

Both are frozen, validated configurations and pure callables from messages to messages.
`OrionContext` runs either of them through Harpe's context lifecycle (for
`harpe_lab.replay.replay` and live agents); `prepare_context` renders a selection as one
`ChatMLTemplate` prompt for completion-style models.

Layout (one concept per module, each importing only those above it):

* ``_window``: `SlidingWindow`, `SummarizeWindow`, `WindowSelection`; turn selection and the fold
* ``_context``: `OrionContext` and its events (`ContextBudget`, `StrategyWarning`)
* ``_chatml``: `ChatMLTemplate`, `PreparedContext`, `prepare_context`
"""

from __future__ import annotations

from ._chatml import ChatMLTemplate, PreparedContext, prepare_context
from ._context import ContextBudget, OrionContext, StrategyWarning
from ._window import (SUMMARY_PREFIX, SlidingWindow, SummarizeWindow, Window, WindowSelection, summarize_request,
                      summary_message)
from ...protocol import Distill
from .._preset import Factory, Preset, budget_knob, make_distiller, reserve_knob
from typing import Any, Callable

__all__ = [
    "SlidingWindow",
    "SummarizeWindow",
    "Window",
    "WindowSelection",
    "OrionContext",
    "ContextBudget",
    "StrategyWarning",
    "ChatMLTemplate",
    "PreparedContext",
    "prepare_context",
    "SUMMARY_PREFIX",
    "summary_message",
    "summarize_request",
    "PRESETS",
]


# --- presets ------------------------------------------------------------------------------


def _orion(summarize: bool) -> Callable[..., Factory]:
    def build(*, counter: Any, system: str, tools: tuple, distill: Distill | None, budget: int, reserve: int | None,
              **_: Any) -> Factory:
        spare = max(1, budget // 10) if reserve is None else reserve
        if summarize:
            make = make_distiller(distill, budget)
            return lambda: OrionContext(system, SummarizeWindow(
                budget + spare, counter=counter, distill=make(), reserve_tokens=spare), tools=tools)
        window = SlidingWindow(budget + spare, counter=counter, reserve_tokens=spare)
        return lambda: OrionContext(system, window, tools=tools)

    return build


PRESETS: tuple[Preset, ...] = (
    Preset(name="sliding", family="orion",
           source="orion's `SlidingWindow` (`harpe_lab.strategies.orion`)",
           description="orion's SlidingWindow: pinned turns, the latest turn and the newest turns within the budget",
           knobs=(budget_knob("the most tokens a request may use"), reserve_knob()),
           needs=frozenset({"counter"}), limit_kind="budget", _make=_orion(False)),
    Preset(name="summarize-window", family="orion",
           source="orion's `SummarizeWindow` (`harpe_lab.strategies.orion`)",
           description="orion's SummarizeWindow: the sliding window, with what falls out folded into a summary",
           knobs=(budget_knob("the most tokens a request may use, summary included"), reserve_knob()),
           needs=frozenset({"counter", "distill"}), limit_kind="budget", _make=_orion(True)),
)
