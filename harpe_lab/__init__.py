"""harpe_lab — replay recorded agent conversations under any context strategy and budget.

``import harpe_lab`` is light: matplotlib, ipywidgets, litellm, tiktoken and pandas are
imported only by the modules that need them, on first use. Names from those modules are
resolved lazily below.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .errors import BudgetError, HarpeLabError, JournalError, StrategyError
from .messages import AssistantMessage, ToolCall, ToolResult, ToolResults, Usage, UserInput
from .strategies.harpe import FullContext, SummarizingContext, TurnContext, WindowedContext
from .tokens import ApproxCounter, BytesCounter, TiktokenCounter

# These functions share their module's name. Bound here, the package attribute is the
# function; lazily resolved, an earlier `import harpe_lab.replay` would leave it the module.
from .calibrate import calibrate
from .measure import measure
from .replay import replay
from .sweep import sweep

__version__ = "0.1.0"

# name -> module that defines it, imported on first access. The front door holds what a
# notebook needs for the whole task; everything else is imported from its own module
# (harpe_lab.protocol, harpe_lab.strategies.orion, harpe_lab.journal, ...).
_LAZY: dict[str, str] = {
    "Conversation": ".conversation",
    "Turn": ".conversation",
    "load_any": ".importers",
    "discover": ".importers",
    "synthesize": ".synth",
    "make_strategy": ".presets",
    "PRESETS": ".presets",
    "Replay": ".replay",
    "ExtractiveDistiller": ".summarize",
    "LLMDistiller": ".summarize",
    "RecordedDistiller": ".summarize",
    "compare": ".evaluate",
    "retention": ".evaluate",
    "plot_token_use": ".plots",
    "Explorer": ".widgets",
    "Compare": ".widgets",
}

__all__ = [
    "HarpeLabError",
    "StrategyError",
    "BudgetError",
    "JournalError",
    "UserInput",
    "AssistantMessage",
    "ToolCall",
    "ToolResult",
    "ToolResults",
    "Usage",
    "FullContext",
    "WindowedContext",
    "TurnContext",
    "SummarizingContext",
    "ApproxCounter",
    "BytesCounter",
    "TiktokenCounter",
    "replay",
    "sweep",
    "calibrate",
    "measure",
    *_LAZY,
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'harpe_lab' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
