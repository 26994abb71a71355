"""Context strategies beyond Harpe's own (which live in `harpe_lab.context`).

* `harpe_lab.strategies.orion` — token-budgeted windows over whole turns (`SlidingWindow`,
  `SummarizeWindow`), their lifecycle adapter `OrionContext`, and ChatML prompts.
* `harpe_lab.strategies.laser` — pure message policies (`LastN`, `TokenBudget`, `Chain`),
  manifests, bounded folds, `Memory`, and the lifecycle adapter `PolicyContext`.
* `harpe_lab.strategies.autogen` — AutoGen's model contexts (`Buffered`, `HeadAndTail`,
  `TokenLimited`), checked against autogen-core's own code (`harpe_lab.peers.autogen`).
"""

from __future__ import annotations

from . import autogen, laser, orion
from .laser import *  # noqa: F403 - each module's __all__ is its public surface
from .orion import *  # noqa: F403

__all__ = ["autogen", "laser", "orion", *orion.__all__, *laser.__all__]
