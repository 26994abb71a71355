"""Prices per token for one model, from litellm's bundled (offline) price table."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import StrategyError

__all__ = ["Pricing"]


@dataclass(frozen=True)
class Pricing:
    """USD per token for one model, from litellm's bundled price table."""

    model: str
    input: float
    output: float
    cache_read: float

    @classmethod
    def for_model(cls, model: str) -> "Pricing":
        """Look ``model`` up in litellm's offline price table (``openai/gpt-4o`` or ``gpt-4o``)."""
        from ._litellm import litellm

        table = litellm().model_cost
        for key in (model, model.split("/", 1)[-1]):
            entry = table.get(key)
            if entry and entry.get("input_cost_per_token") is not None:
                inp = float(entry["input_cost_per_token"])
                out = float(entry.get("output_cost_per_token") or 0.0)
                cache = entry.get("cache_read_input_token_cost")
                return cls(model, inp, out, inp if cache is None else float(cache))
        close = sorted(k for k in table if model.split("/")[-1][:6] in k)[:8]
        raise StrategyError(
            f"no price for model {model!r} in litellm's price table; "
            f"similar names: {', '.join(close) or 'none'}. Pass pricing=Pricing(model, input=..., output=..., cache_read=...)"
        )
