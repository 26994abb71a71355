"""Every context strategy, one module (or package) per family, all speaking `harpe_lab.protocol`.

* `harpe_lab.strategies.harpe` — Harpe's own: `FullContext`, `WindowedContext`,
  `TurnContext`, `SummarizingContext`, and Harpe's distill request.
* `harpe_lab.strategies.orion` — token-budgeted windows over whole turns (`SlidingWindow`,
  `SummarizeWindow`), their lifecycle adapter `OrionContext`, and ChatML prompts.
* `harpe_lab.strategies.laser` — pure message policies (`LastN`, `TokenBudget`, `Chain`),
  manifests, bounded folds, `Memory`, and the lifecycle adapter `PolicyContext`.
* `harpe_lab.strategies.autogen` — AutoGen's model contexts (`Buffered`, `HeadAndTail`,
  `TokenLimited`), checked against autogen-core's own code (`harpe_lab.peers.autogen`).
* `harpe_lab.strategies.masking`, `.trimming`, `.clearing` — edit policies (`editing`) that
  replace old tool output in place: SWE-agent's observation masking, the Agents SDK's
  `ToolOutputTrimmer` (checked against its own code, `harpe_lab.peers.openai_agents`), and
  Anthropic's tool-result clearing.
"""

from __future__ import annotations

from . import autogen, clearing, editing, harpe, laser, masking, orion, trimming
from .laser import *  # noqa: F403 - each module's __all__ is its public surface
from .orion import *  # noqa: F403

__all__ = ["autogen", "clearing", "editing", "harpe", "laser", "masking", "orion", "trimming",
           *orion.__all__, *laser.__all__]
