"""harpe_lab — replay recorded agent conversations under any context strategy and budget.

``import harpe_lab`` is light: matplotlib, ipywidgets, litellm, tiktoken and pandas are
imported only by the modules that need them, on first use. Names from those modules are
resolved lazily below.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from .strategies.harpe import (
    Compaction,
    Context,
    ContextCompacted,
    FullContext,
    SummarizingContext,
    TurnContext,
    WindowedContext,
    message_chars,
    truncate,
)
from .errors import (
    BudgetError,
    HarpeLabError,
    ImportFormatError,
    JournalError,
    MissingJournalError,
    ModelError,
    StrategyError,
)
from .messages import (
    AssistantMessage,
    Attachment,
    Rendered,
    ToolCall,
    ToolResult,
    ToolResults,
    Usage,
    UserInput,
    from_openai,
    to_openai,
)
from .tokens import ApproxCounter, BytesCounter, LitellmCounter, TiktokenCounter, TokenCounter, counter_for_model

# These functions share their module's name. Bound here, the package attribute is the
# function; lazily resolved, an earlier `import harpe_lab.replay` would leave it the module.
from .calibrate import calibrate
from .replay import replay
from .sweep import sweep

__version__ = "0.1.0"

# name -> module that defines it, imported on first access
_LAZY: dict[str, str] = {
    "Conversation": ".conversation",
    "Turn": ".conversation",
    "Probe": ".conversation",
    "RecordedCompaction": ".conversation",
    "Replay": ".replay",
    "ReplayEvent": ".replay",
    "Pricing": ".models",
    "Calibration": ".calibrate",
    "make_strategy": ".presets",
    "STRATEGIES": ".presets",
    "PRESETS": ".presets",
    "get_preset": ".presets",
    "Limit": ".protocol",
    "ScaledCounter": ".tokens",
    "SlidingWindow": ".strategies.orion",
    "SummarizeWindow": ".strategies.orion",
    "OrionContext": ".strategies.orion",
    "ContextBudget": ".strategies.orion",
    "LastN": ".strategies.laser",
    "TokenBudget": ".strategies.laser",
    "Chain": ".strategies.laser",
    "PolicyContext": ".strategies.laser",
    "load_any": ".importers",
    "load_all": ".importers",
    "detect_format": ".importers",
    "discover": ".importers",
    "to_journal": ".importers",
    "synthesize": ".synth",
    "ExtractiveDistiller": ".summarize",
    "LLMDistiller": ".summarize",
    "RecordedDistiller": ".summarize",
    "extract_artifacts": ".summarize",
    "with_probe_turn": ".evaluate",
    "probe_retention": ".evaluate",
    "artifact_retention": ".evaluate",
    "answer_probes": ".evaluate",
    "compare": ".evaluate",
    "retention": ".evaluate",
    "Brain": ".agent",
    "ask": ".agent",
    "chat": ".agent",
    "Interact": ".agent",
    "Journal": ".journal",
    "JsonlLogger": ".journal",
    "TurnLog": ".journal",
    "TurnRecord": ".journal",
    "TurnData": ".journal",
    "Entry": ".journal",
    "read_entries": ".journal",
    "load_harpe": ".importers.harpe",
    "plot_token_use": ".plots",
    "plot_strategies": ".plots",
    "plot_sweep": ".plots",
    "plot_context_map": ".plots",
    "Explorer": ".widgets",
    "Compare": ".widgets",
}

__all__ = [
    "HarpeLabError",
    "JournalError",
    "MissingJournalError",
    "StrategyError",
    "BudgetError",
    "ImportFormatError",
    "ModelError",
    "Attachment",
    "UserInput",
    "ToolCall",
    "AssistantMessage",
    "ToolResult",
    "ToolResults",
    "Rendered",
    "Usage",
    "to_openai",
    "from_openai",
    "Context",
    "Compaction",
    "ContextCompacted",
    "FullContext",
    "WindowedContext",
    "TurnContext",
    "SummarizingContext",
    "truncate",
    "message_chars",
    "TokenCounter",
    "ApproxCounter",
    "BytesCounter",
    "TiktokenCounter",
    "LitellmCounter",
    "counter_for_model",
    "replay",
    "sweep",
    "calibrate",
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
