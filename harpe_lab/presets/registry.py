"""The preset registry: every named strategy a person can pick, as data.

A `Preset` has a name, a family, a one-line description, its `Knob` s (unit, default, valid
range, whether a sensible value grows with the conversation) and what it needs (a token
counter, a distiller). ``preset.build(**knobs)`` returns a zero-argument factory that builds
a *fresh* strategy — and a fresh distiller — at every call, so replays never share state.
The CLI, the widgets, the demo and the report read this registry; nothing else tests a
strategy's name.

"Budget" means the same for every preset: tokens of the whole request (system prompt, tool
schemas, messages and chat overhead) as the replay's counter prices them. The presets
themselves are declared by family in the sibling modules (`seeds`, `libraries`, `agents`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import StrategyError
from ..protocol import Distill, LimitKind

__all__ = ["Knob", "Preset", "PRESETS", "STRATEGIES", "DEFAULT_BUDGET", "get_preset", "make_strategy"]

DEFAULT_BUDGET = 8_000
Factory = Callable[[], Any]


def _whole(name: str, value: Any, minimum: int, maximum: int | None) -> int:
    """``value`` as an int: integral floats (8000.0) are accepted, anything else refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StrategyError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise StrategyError(f"{name} must be a whole number, got {value!r}")
        value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and <= {maximum:,}"
        raise StrategyError(f"{name} must be >= {minimum:,}{upper}, got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class Knob:
    """One setting of a preset."""

    name: str
    unit: str
    """``"tokens"``, ``"messages"``, …"""
    default: int | None
    """``None``: derived from the other knobs, as `help` says."""
    minimum: int = 1
    maximum: int | None = None
    scales: bool = False
    """Whether a sensible value grows with the conversation's size (a budget does; a count
    of messages does not): views set its range from the conversation."""
    help: str = ""

    def check(self, value: Any) -> int:
        return _whole(self.name, value, self.minimum, self.maximum)

    def range_for(self, peak_tokens: int) -> tuple[int, int]:
        """A slider range for a conversation whose largest full-history request is
        ``peak_tokens``: up to a little above it for knobs that scale, else the declared
        range (``maximum`` or ten times the default)."""
        if self.scales:
            high = max(self.minimum + 1, -(-peak_tokens * 11 // 10))
        else:
            high = self.maximum or max(self.minimum + 1, 10 * (self.default or self.minimum))
        return self.minimum, high if self.maximum is None else min(high, self.maximum)


@dataclass(frozen=True, kw_only=True)
class Preset:
    """A named strategy with its knobs; `build` makes a factory."""

    name: str
    family: str
    description: str
    knobs: tuple[Knob, ...] = ()
    needs: frozenset[str] = frozenset()
    """``"counter"`` (prices tokens itself), ``"distill"`` (calls a distiller)."""
    limit_kind: LimitKind | None = None
    """What kind of `Limit` its strategies declare (``None``: no limit)."""
    note: str = ""
    """When another knob binds before the budget, or other caveats."""
    source: str = ""
    """Where its semantics come from: the specification, repository file or page read."""
    _make: Callable[..., Factory] = field(repr=False, compare=False)

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise StrategyError(
            f"the {self.name!r} preset has no knob {name!r}; its knobs: {[k.name for k in self.knobs] or 'none'}"
        )

    @property
    def budget_knob(self) -> Knob | None:
        """The knob a single "budget" sets: ``budget``, or ``high_water`` for summarizing."""
        for k in self.knobs:
            if k.name in ("budget", "high_water"):
                return k
        return None

    def build(self, *, counter: Any = None, system: str = "", tools: tuple = (), distill: Distill | None = None,
              **knobs: Any) -> Factory:
        """A zero-argument factory of fresh strategies with these knob values (defaults for
        the others). ``distill`` replaces the offline default distiller; a stateful one is
        renewed (``fresh()``) for every strategy built."""
        if "counter" in self.needs and counter is None:
            raise StrategyError(f"the {self.name!r} strategy prices tokens itself: pass counter=")
        values: dict[str, int | None] = {}
        for k in self.knobs:
            value = knobs.pop(k.name, None)
            values[k.name] = k.default if value is None else k.check(value)
        if knobs:
            raise StrategyError(
                f"the {self.name!r} preset has no knob {sorted(knobs)[0]!r}; "
                f"its knobs: {[k.name for k in self.knobs] or 'none'}"
            )
        if distill is not None and not callable(distill):
            raise StrategyError(f"distill must be a callable Rendered -> str | None, got {distill!r}")
        return self._make(counter=counter, system=system, tools=tuple(tools), distill=distill, **values)

# The families' modules import Knob and Preset from here, so they are read only once both
# exist: this import sits below the types on purpose. Concatenated in this order, the
# families keep the registry's order, which `harpe-lab replay --list` prints.
from .seeds import SEEDS  # noqa: E402
from .libraries import LIBRARIES  # noqa: E402
from .agents import AGENTS  # noqa: E402

PRESETS: Mapping[str, Preset] = {p.name: p for p in (*SEEDS, *LIBRARIES, *AGENTS)}
STRATEGIES: tuple[str, ...] = tuple(PRESETS)


def get_preset(name: str) -> Preset:
    """The preset called ``name``."""
    preset = PRESETS.get(name) if isinstance(name, str) else None
    if preset is None:
        raise StrategyError(f"strategy must be one of {list(PRESETS)}, but {name!r} was passed")
    return preset


def make_strategy(name: str, *, budget: Any = None, counter: Any = None, system: str = "",
                  distill: Distill | None = None, tools: tuple = (), **knobs: Any) -> Factory:
    """A zero-argument factory of fresh strategies for the preset ``name``.

    ``budget`` sets the preset's budget knob (``high_water`` for summarizing) and is ignored
    by presets without one; other knobs by name. Unset knobs take their defaults.
    """
    preset = get_preset(name)
    if budget is not None:
        target = preset.budget_knob
        if target is not None:
            knobs.setdefault(target.name, budget)
        else:
            _whole("budget", budget, 1, None)
    return preset.build(counter=counter, system=system, tools=tools, distill=distill, **knobs)
