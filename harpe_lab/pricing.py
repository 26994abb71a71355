"""Moved to `harpe_lab.models`: ``from harpe_lab.models import Pricing``. Kept for imports
not yet updated (``harpe_lab.demo``)."""

from __future__ import annotations

from .models import Pricing, suggest_models

__all__ = ["Pricing", "suggest_models"]
