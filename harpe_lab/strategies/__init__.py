"""Context strategies beyond Harpe's own (which live in `harpe_lab.context`).

* `harpe_lab.strategies.orion` — token-budgeted windows over whole turns (`SlidingWindow`,
  `SummarizeWindow`), their lifecycle adapter `OrionContext`, and ChatML prompts.
* `harpe_lab.strategies.laser` — pure message policies (`LastN`, `TokenBudget`, `Chain`),
  manifests, bounded folds, `Memory`, and the lifecycle adapter `PolicyContext`.
"""

from __future__ import annotations

from . import laser, orion
from .laser import (
    After,
    Bound,
    Chain,
    Checkpoint,
    Last,
    LastN,
    Manifest,
    Memory,
    Policy,
    PolicyContext,
    TokenBudget,
    UpTo,
    Whole,
    assemble,
    block,
    fold,
    message_text,
)
from .orion import (
    SUMMARY_PREFIX,
    ChatMLTemplate,
    ContextBudget,
    OrionContext,
    PreparedContext,
    SlidingWindow,
    StrategyWarning,
    SummarizeWindow,
    Window,
    WindowSelection,
    prepare_context,
    summarize_request,
    summary_message,
)

__all__ = [
    "laser",
    "orion",
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
    "Policy",
    "LastN",
    "TokenBudget",
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
]
