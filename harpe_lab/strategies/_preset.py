"""What a preset is: a named strategy with its knobs (`Preset`, `Knob`), and what the families'
presets share (the default distiller, a request's fixed cost, the budget and reserve knobs).

Each family declares its presets beside its strategies, as ``PRESETS``; the registry
(`harpe_lab.presets`) gathers them. A `Preset` has a name, a family, a one-line description,
its knobs (unit, default, valid range, whether a sensible value grows with the conversation)
and what it needs (a token counter, a distiller). ``preset.build(**knobs)`` returns a
zero-argument factory that builds a *fresh* strategy — and a fresh distiller — at every call,
so replays never share state.

"Budget" means the same for every preset: tokens of the whole request (system prompt, tool
schemas, messages and chat overhead) as the replay's counter prices them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from ..errors import StrategyError
from ..messages import Rendered
from ..protocol import Distill, LimitKind, fresh_distiller

__all__ = ["Knob", "Preset", "DEFAULT_BUDGET", "Factory", "make_distiller", "fixed_tokens", "budget_knob", "reserve_knob"]

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

    @property
    def window_knob(self) -> Knob | None:
        """The knob that is the model's context window, in tokens (``window``,
        ``context_window``; hybrid's ``window`` counts tool rounds and is not one)."""
        for k in self.knobs:
            if k.name in ("window", "context_window") and k.unit == "tokens":
                return k
        return None

    def at_window(self, knobs: Mapping[str, Any], window: int | None) -> dict[str, Any]:
        """``knobs`` with the window knob set to ``window`` — the window of a session's model,
        `harpe_lab.recorded.model_window` — unless they set it (or ``window`` is None). Every
        view that replays a preset on a session (the CLI, compare, the widgets, the report)
        builds it so: on a session the agent's window is the model's, not the preset's default."""
        out = dict(knobs)
        k = self.window_knob
        if k is not None and window and out.get(k.name) is None:
            out[k.name] = window
        return out

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


def make_distiller(distill: Distill | None, budget: int) -> Callable[[], Distill]:
    """A factory of the preset's distiller: a fresh copy of ``distill``, or, when none is
    given, the offline extractive one writing at most ``budget`` characters."""
    if distill is not None:
        return lambda: fresh_distiller(distill)
    from ..summarize import ExtractiveDistiller

    shared = ExtractiveDistiller(max_chars=max(400, budget))  # stateless: its caches are pure
    return lambda: shared


def fixed_tokens(counter: Any, system: str, tools: tuple) -> int:
    """What a request costs before any message: system prompt, tool schemas, reply priming."""
    return int(counter.count_rendered(Rendered(system, ()), tools))


def budget_knob(help: str) -> Knob:
    """The ``budget`` knob, as every preset with a whole-request budget declares it."""
    return Knob(name="budget", unit="tokens", default=DEFAULT_BUDGET, minimum=1, scales=True, help=help)


def reserve_knob() -> Knob:
    """The ``reserve`` knob of the presets that keep room for the reply beside the budget."""
    return Knob(name="reserve", unit="tokens", default=None, minimum=0, scales=True,
                help="tokens kept free for the reply, beside the budget (default: 10% of the budget)")
