"""What one model call of a replay costs: the provider's cache reads and writes and the price
with and without caching, from what the engine knows of the call and the one before it.

A pure function of its arguments, so a test can price one call alone (the rules are in the
package doc: the first call reads what the recording's first call read, an invalidated call
reads only the prefix every session shares, another model's cache holds nothing).
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ..models import Pricing
from ..tokens import REPLY_PRIMING

__all__ = ["Call", "CallCost", "UNPRICED", "price_call"]


class Call(NamedTuple):
    """One call as the pricing sees it."""

    input_tokens: int
    """The whole request, reply priming included."""
    output_tokens: int
    fixed: int
    """System prompt, tool schemas and reply priming."""
    cached: int
    """The prefix identical to the previous request (its ``cached_prefix_tokens``)."""
    first: bool
    """No request before it in this replay."""
    same_system: bool
    """The previous request had the same system prompt (and tools)."""
    compacted: bool
    """The strategy removed or replaced something it had sent."""
    reset: bool
    """The recording's agent sent it with its cached messages invalidated."""
    same_model: bool
    """The previous call was by the same model (a cache is per model)."""
    warm: int
    """What the recording's first call read from the cache (an earlier session's prefix)."""
    gap: float | None
    """Seconds since the previous call, when both times are recorded."""
    distill_input_tokens: int = 0
    distill_output_tokens: int = 0


class CallCost(NamedTuple):
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    cost_usd_cached: float
    distill_cost_usd: float


UNPRICED = CallCost(0, 0, math.nan, math.nan, math.nan)
"""A call with no price: no cache reads or writes, every cost NaN."""


def price_call(price: Pricing | None, call: Call) -> CallCost:
    """The cache split and the price of ``call`` under ``price`` (all NaN without one; no
    reads or writes for a provider that caches nothing). The distill calls' input is never
    cached."""
    if price is None:
        return UNPRICED
    read = write = 0
    cache = price.cache
    if cache is not None:
        prompt = call.input_tokens - REPLY_PRIMING
        same_fixed = call.fixed - REPLY_PRIMING if call.same_system and call.same_model else 0
        if call.reset and call.warm:  # invalidated: only the prefix every session shares is still cached
            same_fixed = min(same_fixed, call.warm)
        if call.first and call.warm:  # what an earlier session left: the agent's own system prompt and tools
            same_fixed = min(call.warm, call.fixed - REPLY_PRIMING)
            read, write = cache.split(prompt=prompt, shared=same_fixed, extends=False, fixed=same_fixed, gap=None)
        else:
            extends = not call.first and not call.compacted and not call.reset and call.same_model
            read, write = cache.split(prompt=prompt, shared=call.cached if call.same_model else 0, extends=extends,
                                      fixed=same_fixed, gap=call.gap)
    distill = price.billed(call.distill_input_tokens, output=call.distill_output_tokens)[0]
    cost, cost_cached = price.billed(call.input_tokens, read, write, call.output_tokens)
    return CallCost(read, write, cost + distill, cost_cached + distill, distill)
