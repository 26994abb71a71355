"""The seeds' presets: Harpe's own strategies, orion's and Laser's — the families this lab
started from. Harpe's windowed strategy measures characters and converts at
`CHARS_PER_TOKEN`; the summarizing strategy's knobs are its high- and low-water marks."""

from __future__ import annotations

from typing import Any, Callable

from ..strategies.harpe import CHARS_PER_TOKEN, FullContext, SummarizingContext, TurnContext, WindowedContext
from ..errors import StrategyError
from ..protocol import Distill, Limit
from ._common import _budget, _distiller, _fixed_tokens, _reserve
from .registry import DEFAULT_BUDGET, Factory, Knob, Preset

__all__ = ["SEEDS"]


def _full(*, system: str, **_: Any) -> Factory:
    return lambda: FullContext(system)


def _turn(*, system: str, **_: Any) -> Factory:
    return lambda: TurnContext(system)


def _windowed(*, system: str, budget: int, **_: Any) -> Factory:
    return lambda: WindowedContext(system, max_chars=CHARS_PER_TOKEN * budget)


def _summarizing(*, system: str, distill: Distill | None, high_water: int, low_water: int | None, **_: Any) -> Factory:
    low = high_water // 2 if low_water is None else low_water
    make = _distiller(distill, high_water)
    return lambda: SummarizingContext(system, high_water_tokens=high_water, low_water_chars=CHARS_PER_TOKEN * low,
                                      distill=make())  # fmt: skip


def _orion(summarize: bool) -> Callable[..., Factory]:
    def build(*, counter: Any, system: str, tools: tuple, distill: Distill | None, budget: int, reserve: int | None,
              **_: Any) -> Factory:
        from ..strategies import orion

        spare = max(1, budget // 10) if reserve is None else reserve
        if summarize:
            make = _distiller(distill, budget)
            return lambda: orion.OrionContext(system, orion.SummarizeWindow(
                budget + spare, counter=counter, distill=make(), reserve_tokens=spare), tools=tools)
        window = orion.SlidingWindow(budget + spare, counter=counter, reserve_tokens=spare)
        return lambda: orion.OrionContext(system, window, tools=tools)

    return build


def _chain(*, counter: Any, system: str, tools: tuple, budget: int, n: int, **_: Any) -> Factory:
    from ..strategies import laser

    room = budget - _fixed_tokens(counter, system, tools)
    if room < 1:
        raise StrategyError(
            f"budget {budget:,} tokens leaves no room for messages: the system prompt and tools alone take "
            f"{budget - room:,}; raise the budget"
        )
    policy = laser.Chain([laser.LastN(n), laser.TokenBudget(room, estimator=laser.MessagePrice(counter))])
    limit = Limit(tokens=budget, kind="target")
    return lambda: laser.PolicyContext(system, policy, limit=limit)

SEEDS: tuple[Preset, ...] = (
    Preset(name="full", family="harpe",
           source='Harpe spec §4.4 (`harpe-format.md`)',
           description="Harpe's FullContext: the whole transcript, every request",
           _make=_full),
    Preset(name="windowed", family="harpe",
           source='Harpe spec §4.5',
           description="Harpe's WindowedContext: the newest whole turns that fit the budget (measured in characters)",
           knobs=(_budget(f"the window, converted to characters at {CHARS_PER_TOKEN} a token"),),
           limit_kind="target", _make=_windowed,
           note="the current turn is never cut, so a long agent turn goes over the budget"),
    Preset(name="turn", family="harpe",
           source='Harpe spec §4.6',
           description="Harpe's TurnContext: only the current turn", _make=_turn),
    Preset(name="summarizing", family="harpe",
           source='Harpe spec §4.7',
           description="Harpe's SummarizingContext: fold the oldest turns into a summary above the high water",
           knobs=(Knob(name="high_water", unit="tokens", default=DEFAULT_BUDGET, scales=True,
                       help="compact after the provider reports more input tokens than this"),
                  Knob(name="low_water", unit="tokens", default=None, minimum=0, scales=True,
                       help=f"keep the newest turns that fit this (as {CHARS_PER_TOKEN}× characters); "
                            "default: half the high water")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_summarizing,
           note="reactive: the request that crosses the high water goes out before the compaction"),
    Preset(name="sliding", family="orion",
           source="orion's `SlidingWindow` (`harpe_lab.strategies.orion`)",
           description="orion's SlidingWindow: pinned turns, the latest turn and the newest turns within the budget",
           knobs=(_budget("the most tokens a request may use"), _reserve()),
           needs=frozenset({"counter"}), limit_kind="budget", _make=_orion(False)),
    Preset(name="summarize-window", family="orion",
           source="orion's `SummarizeWindow` (`harpe_lab.strategies.orion`)",
           description="orion's SummarizeWindow: the sliding window, with what falls out folded into a summary",
           knobs=(_budget("the most tokens a request may use, summary included"), _reserve()),
           needs=frozenset({"counter", "distill"}), limit_kind="budget", _make=_orion(True)),
    Preset(name="chain", family="laser",
           source="Laser's `Chain(LastN, TokenBudget)` (`harpe_lab.strategies.laser`)",
           description="Laser's Chain([LastN(n), TokenBudget]): the last n messages, newest first, within the budget",
           knobs=(_budget("the request's tokens, system and tools included"),
                  Knob(name="n", unit="messages", default=100, minimum=1, help="keep at most the last n messages")),
           needs=frozenset({"counter"}), limit_kind="target", _make=_chain,
           note="the budget binds only when the last n messages take more than it; the newest message is always kept"),
)
