"""Moved to `harpe_lab.models` (``harpe_lab.models._litellm``); kept only until
``harpe_lab.plots`` imports `harpe_lab.models.model_input_limit` instead of litellm."""

from __future__ import annotations

from .models._litellm import litellm

__all__ = ["litellm"]
