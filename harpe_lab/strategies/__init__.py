"""Every context strategy, one module (or package) per family, all speaking `harpe_lab.protocol`;
each family declares its presets beside its strategies (``PRESETS``), which the registry,
`harpe_lab.presets`, gathers.

* `harpe_lab.strategies.harpe` — Harpe's own: `FullContext`, `WindowedContext`,
  `TurnContext`, `SummarizingContext`, and Harpe's distill request.
* `harpe_lab.strategies.orion` — token-budgeted windows over whole turns (`SlidingWindow`,
  `SummarizeWindow`), their lifecycle adapter `OrionContext`, and ChatML prompts.
* `harpe_lab.strategies.laser` — pure message policies (`LastN`, `TokenBudget`, `Chain`),
  manifests, bounded folds, `Memory`, and the lifecycle adapter `PolicyContext`.
* `harpe_lab.strategies.autogen` — AutoGen's model contexts (`Buffered`, `HeadAndTail`,
  `TokenLimited`), checked against autogen-core's own code (`harpe_lab.peers.autogen`).
* `harpe_lab.strategies.swe_agent` — SWE-agent's observation masking (`LastNObservations`).
* `harpe_lab.strategies.openai` — OpenAI's: the Agents SDK's `ToolOutputTrimmer`
  (`.agents_sdk`, checked against its own code, `harpe_lab.peers.openai_agents`) and Realtime's
  retention-ratio truncation (`.realtime`).
* `harpe_lab.strategies.anthropic` — Anthropic's: tool-result clearing (`.clearing`), Claude
  Code's auto-compact (`.claude_code`: at the threshold, the whole history, mid-turn too,
  becomes one summary message) and the SDK tool runner's compaction (`.tool_runner`).
* `harpe_lab.strategies.openhands` — OpenHands' condensers (`AmortizedForgetting`,
  `ObservationMasking`, `LLMSummarizing`), over OpenHands' events.
* `harpe_lab.strategies.jetbrains` — "The Complexity Trap"'s hybrid (`Hybrid`): SWE-agent's
  masking plus a checkpoint summary every N turns.
* `harpe_lab.strategies.langchain` — LangChain 1.x's middleware: `Summarization`
  (``SummarizationMiddleware``) and `ClearToolUsesEdit` (``ContextEditingMiddleware``),
  checked against LangChain's own code (`harpe_lab.peers.langchain`).
* `harpe_lab.strategies.codex` — Codex CLI's inline auto-compaction (`Compact`): the newest
  user messages verbatim and one summary message; and its tool-output truncation
  (`ToolOutputTruncation`).
* `harpe_lab.strategies.gemini` — Gemini CLI's chat compression and tool-output masking.
* `harpe_lab.strategies.cline` — Cline's SDK compaction (basic and agentic) and the VS Code
  extension's legacy context manager.
* `harpe_lab.strategies.aider` — Aider's background summary of finished turns.
* `harpe_lab.strategies.opencode`, `.goose`, `.roo` — OpenCode's prune and tail-keeping
  summary, Goose's auto-compaction and tool-pair summaries, Roo Code's condense.

What several families share is private: the turn lifecycle (`_lifecycle`), the edit policies'
one path (`editing`: masking, trimming and clearing rewrite old tool output in place), the
preset types (`_preset`) and the configuration checks (`_validate`).
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["aider", "anthropic", "autogen", "cline", "codex", "editing", "gemini", "goose", "harpe", "jetbrains",
           "langchain", "laser", "openai", "opencode", "openhands", "orion", "roo", "swe_agent"]


def __getattr__(name: str) -> Any:
    # each family is imported when first used: `import harpe_lab` needs only Harpe's own
    if name in __all__:
        return import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
