"""The models layer: everything that talks to a model provider through litellm.

==========================  ===============================================================
`CachedModel`               a chat completion with an on-disk reply cache and a call log
                            (the distillers, the answer checks); `Completion`, `ModelCall`
`send`, `route`             one uncached call with retries off, and how litellm routes a
                            model name (the live loop, `harpe_lab.agent.Brain`)
`reply_of`, `usage_of`      the one reader of a response's reply and of its usage
`classify`, `explain`       the one classifier of provider failures (transient or not,
                            ``Retry-After``, what to fix)
`secrets_of`, `scrub`       credentials kept out of journals, cache files, errors and reprs
`default_cache_dir`,        the disk cache's folder and the arguments that enter its key
`CACHE_KEY_PARAMS`
`Pricing`, `reply_cost`     prices from litellm's offline table; `CallPricing` prices each
                            call of a recording by the model that made it; `AutoPricing`
                            too, with a stand-in for a recording that names none priced
`PromptCache`,              a provider's prompt-cache rule (breakpoints, automatic; TTL,
`PREFIX_CACHE`              minimum), read from that table and the providers' docs
`model_input_limit`,        a model's context window and token counts, offline
`count_tokens`
==========================  ===============================================================

Importing this package does not import litellm: each function imports it (through
``harpe_lab.models._litellm``, offline, with its bundled price table) on first use. Nothing
outside this package imports litellm.
"""

from __future__ import annotations

from ._cache import CACHE_KEY_PARAMS, default_cache_dir
from ._call import CachedModel, Completion, ModelCall, route, send
from ._failures import Failure, classify, explain
from ._pricing import AutoPricing, CallPricing, Pricing, reply_cost, resolve_pricing, suggest_models
from ._prompt_cache import PREFIX_CACHE, PromptCache
from ._response import UnusableReply, reply_of, usage_of
from ._secrets import scrub, secrets_of
from ._window import count_tokens, model_input_limit

__all__ = [
    "CachedModel",
    "Completion",
    "ModelCall",
    "send",
    "route",
    "reply_of",
    "usage_of",
    "UnusableReply",
    "classify",
    "explain",
    "Failure",
    "secrets_of",
    "scrub",
    "default_cache_dir",
    "CACHE_KEY_PARAMS",
    "Pricing",
    "CallPricing",
    "AutoPricing",
    "PromptCache",
    "PREFIX_CACHE",
    "suggest_models",
    "reply_cost",
    "resolve_pricing",
    "model_input_limit",
    "count_tokens",
]
