"""Named strategies with one budget knob, for the CLI, the demo, sweeps and widgets.

``make_strategy(name, budget=..., counter=...)`` returns a zero-argument factory for
`harpe_lab.replay.replay`. ``budget`` is in tokens for every preset; presets that Harpe
measures in characters convert at 4 characters a token:

=====================  ===================================================================
``full``               FullContext (budget ignored)
``windowed``           WindowedContext, ``max_chars = 4 * budget``
``turn``               TurnContext (budget ignored)
``summarizing``        SummarizingContext, high water ``budget`` tokens, low water
                       ``2 * budget`` chars (about half the budget), offline distiller
``sliding``            orion SlidingWindow of ``budget`` tokens (reserve 10% of it)
``summarize-window``   orion SummarizeWindow of ``budget`` tokens, offline distiller
``chain``              Laser Chain([LastN(100), TokenBudget(budget)])
=====================  ===================================================================
"""

from __future__ import annotations

from typing import Any, Callable

from .context import FullContext, SummarizingContext, TurnContext, WindowedContext
from .errors import StrategyError

__all__ = ["STRATEGIES", "make_strategy", "DEFAULT_BUDGET"]

DEFAULT_BUDGET = 8_000
STRATEGIES = ("full", "windowed", "turn", "summarizing", "sliding", "summarize-window", "chain")


def _default_distill(budget: int) -> Callable:
    from .summarize import ExtractiveDistiller

    return ExtractiveDistiller(max_chars=max(400, budget))


def make_strategy(
    name: str,
    *,
    budget: int | None = None,
    counter: Any = None,
    system: str = "",
    distill: Callable | None = None,
    tools: tuple = (),
) -> Callable[[], Any]:
    """A zero-argument context factory for the preset ``name`` at ``budget`` tokens."""
    if name not in STRATEGIES:
        raise StrategyError(f"strategy must be one of {list(STRATEGIES)}, but {name!r} was passed")
    budget = DEFAULT_BUDGET if budget is None else budget
    if not isinstance(budget, int) or budget <= 0:
        raise StrategyError(f"budget must be a positive number of tokens, got {budget!r}")
    if name == "full":
        return lambda: FullContext(system)
    if name == "windowed":
        return lambda: WindowedContext(system, max_chars=4 * budget)
    if name == "turn":
        return lambda: TurnContext(system)
    d = distill or _default_distill(budget)
    if name == "summarizing":
        return lambda: SummarizingContext(system, high_water_tokens=budget, low_water_chars=2 * budget, distill=d)
    if counter is None:
        raise StrategyError(f"the {name!r} strategy counts tokens itself: pass counter=")
    from .strategies import laser, orion

    reserve = max(1, budget // 10)
    if name == "sliding":
        window = orion.SlidingWindow(budget, counter=counter, reserve_tokens=reserve)
        return lambda: orion.OrionContext(system, window, tools=tools)
    if name == "summarize-window":
        window = orion.SummarizeWindow(budget, counter=counter, distill=d, reserve_tokens=reserve)
        return lambda: orion.OrionContext(system, window, tools=tools)
    policy = laser.Chain([laser.LastN(100), laser.TokenBudget(budget)])
    return lambda: laser.PolicyContext(system, policy)
