"""Distillers: what turns dropped history into a summary, and the artifacts a summary must keep.

A *distiller* is a callable ``distill(Rendered) -> str | None``, the argument
`harpe_lab.strategies.harpe.SummarizingContext` and orion's ``SummarizeWindow`` take. Both hand it
Harpe's distill request (`harpe_lab.strategies.harpe.DISTILL_SYSTEM` and one user message built by
`harpe_lab.strategies.harpe.distill_request`); ``None`` means "no summary this time" and leaves the
history as it was.

=======================  ==================================================================
`ExtractiveDistiller`    the offline baseline: deterministic, no model, no downloads. Keeps
                         every artifact it detects (artifacts first) and the most salient
                         sentences that fit ``max_chars``.  (``_extractive``)
`LLMDistiller`           a model through `harpe_lab.models.CachedModel`, with its on-disk
                         cache, token and cost accounting (``last_usage``, ``calls``,
                         `LLMDistiller.totals`).  (``_llm``)
`RecordedDistiller`      replays the summaries the recording agent wrote (for example
                         Claude Code's compaction summaries), in order.  (``_recorded``)
`DistillFallback`        what a distiller reports when it returns ``None``.  (``_fallback``)
=======================  ==================================================================

`extract_artifacts` (``_artifacts``) finds what a good summary of an agent's work keeps
verbatim: file paths, commands, numbers with units, URLs, identifiers and decisions.

Importing this package imports neither litellm nor pandas; `LLMDistiller` reaches litellm
through `harpe_lab.models` on its first call. See ``docs/summaries.md``.
"""

from __future__ import annotations

from ._artifacts import ARTIFACT_CATEGORIES, content_words, extract_artifacts, messages_text, ordered_artifacts
from ._extractive import ExtractiveDistiller
from ._fallback import DistillFallback, DistillFallbackWarning
from ._llm import HARPE_DISTILL_SYSTEM, LLMDistiller
from ._recorded import RecordedDistiller

__all__ = [
    "ExtractiveDistiller",
    "LLMDistiller",
    "RecordedDistiller",
    "DistillFallback",
    "DistillFallbackWarning",
    "HARPE_DISTILL_SYSTEM",
    "ARTIFACT_CATEGORIES",
    "extract_artifacts",
    "ordered_artifacts",
    "content_words",
    "messages_text",
]
