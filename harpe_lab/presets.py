"""The preset registry: every named strategy a person can pick, as data.

Each family declares its presets beside its strategies (``PRESETS`` in
`harpe_lab.strategies.harpe`, `~.orion`, `~.codex`, …; what a `Preset` and a `Knob` are is in
`harpe_lab.strategies._preset`). The registry gathers them the first time it is read — as
tiktoken's registry finds its encodings — so ``import harpe_lab`` imports no family. The CLI,
the widgets, the demo and the report read this registry; nothing else tests a strategy's name.

"Budget" means the same for every preset: tokens of the whole request (system prompt, tool
schemas, messages and chat overhead) as the replay's counter prices them.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any, Iterator, Mapping

from .errors import StrategyError
from .protocol import Distill
from .strategies._preset import DEFAULT_BUDGET, Factory, Knob, Preset, _whole

__all__ = ["Knob", "Preset", "PRESETS", "STRATEGIES", "FAMILIES", "DEFAULT_BUDGET", "get_preset", "make_strategy"]

# Where each family declares its presets, in the order `harpe-lab replay --list` prints them:
# the seeds', the libraries', the coding agents' and the providers' own. A family whose
# presets sit apart in that order (Anthropic's, OpenAI's) is listed by the module of each.
FAMILIES: tuple[str, ...] = (
    "harpe", "orion", "laser",
    "autogen", "swe_agent", "openai.agents_sdk", "anthropic.clearing", "anthropic.claude_code", "openhands",
    "jetbrains", "langchain",
    "codex", "cline", "aider", "gemini", "opencode", "goose", "roo",
    "anthropic.tool_runner", "openai.realtime",
)


class _Registry(Mapping[str, Preset]):
    """Every preset by name, gathered from `FAMILIES` on first use."""

    def __init__(self) -> None:
        self._presets: dict[str, Preset] | None = None

    def _gathered(self) -> dict[str, Preset]:
        if self._presets is None:
            presets: dict[str, Preset] = {}
            for family in FAMILIES:
                for preset in import_module(f"harpe_lab.strategies.{family}").PRESETS:
                    if preset.name in presets:
                        raise StrategyError(f"two presets are called {preset.name!r}: rename one in "
                                            f"harpe_lab.strategies.{family}")
                    presets[preset.name] = preset
            self._presets = presets
        return self._presets

    def __getitem__(self, name: str) -> Preset:
        return self._gathered()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._gathered())

    def __len__(self) -> int:
        return len(self._gathered())

    def __repr__(self) -> str:
        return f"PRESETS({', '.join(self._gathered())})"


PRESETS: Mapping[str, Preset] = _Registry()


def __getattr__(name: str) -> Any:
    if name == "STRATEGIES":  # the names, in the registry's order; gathered on first use too
        return tuple(PRESETS)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
