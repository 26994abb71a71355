"""How a provider's prompt cache splits one request into tokens read, written and sent fresh.

The replay engine asks `PromptCache.split` once per request, in O(1), with what it already
keeps: the request's size, the longest prefix it shares with the previous request, whether
it merely extends that request, the size of its fixed part (system prompt and tool schemas)
and the seconds since the previous request (from the recording's timestamps). The rules,
as the providers document them (read 2026-12 through the pages below; litellm 1.110's
offline price table supplies the prices and, where it has one, ``prompt_cache_min_tokens``):

* **Breakpoints** (Anthropic, and the clouds that serve Claude: the table prices a cache
  write above ordinary input). The caller marks blocks with ``cache_control``; the prefix
  up to a breakpoint is written (1.25× the input price for the default 5-minute TTL, 2×
  for the 1-hour TTL — litellm's ``cache_creation_input_token_cost`` and
  ``cache_creation_input_token_cost_above_1hr``) and read later at 0.1×. The TTL is
  refreshed each time the entry is read. A prefix shorter than the model's minimum (1,024
  tokens for most models, 2,048–4,096 for some: ``prompt_cache_min_tokens``) is not
  cached at all. Claude Code marks the system prompt and the last messages, so a request
  that extends the previous one reads all of it and writes what is new; a request that
  changed something it had sent reads only the fixed part (its own breakpoint) and writes
  the rest. Anthropic also looks back up to 20 blocks before a breakpoint for an older
  entry; that is not modelled, so reads after a change are a lower bound.
  Sources: platform.claude.com/docs/en/build-with-claude/prompt-caching (pricing
  multipliers, TTL "refreshed for no additional cost each time the cached content is
  used", minimum lengths per model, the 20-block lookback), read through its mirrors
  docs.orq.ai/docs/proxy/prompt-caching and portkey.ai/docs/.../anthropic/prompt-caching.
* **Automatic** (OpenAI, and any provider whose table prices reads but not writes:
  Gemini's implicit cache, DeepSeek). No markers and no write charge: "the API caches the
  longest prefix of a prompt that has been previously computed, starting at 1,024 tokens
  and increasing in 128-token increments"; caches "are typically cleared after 5–10
  minutes of inactivity" (openai.com/index/api-prompt-caching/). The 128-token increment
  applies to OpenAI and Azure OpenAI; others are taken at token granularity. The default
  TTL is the lower end, 300 s.
* **None**: the table prices no cache read, so nothing is cached.

Without timestamps (``gap=None``) nothing expires.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from ..errors import StrategyError

__all__ = ["PromptCache", "PREFIX_CACHE", "ANTHROPIC_TTLS"]

CacheKind = Literal["breakpoints", "automatic"]

ANTHROPIC_TTLS = (300.0, 3600.0)
"""The two TTLs Anthropic offers, in seconds: ``"5m"`` (the default) and ``"1h"``."""


@dataclass(frozen=True, kw_only=True)
class PromptCache:
    """One provider's prompt-cache rule (see the module doc): ``kind``, the shortest
    cacheable prefix ``min_tokens``, the ``increment`` cached lengths come in, and the
    ``ttl`` in seconds an entry lives after its last use."""

    kind: CacheKind
    min_tokens: int = 1024
    increment: int = 1
    ttl: float = 300.0

    def __post_init__(self) -> None:
        if self.kind not in ("breakpoints", "automatic"):
            raise StrategyError(f"kind must be one of ['breakpoints', 'automatic'], but {self.kind!r} was passed")
        if isinstance(self.min_tokens, bool) or not isinstance(self.min_tokens, int) or self.min_tokens < 0:
            raise StrategyError(f"min_tokens must be an int >= 0, got {self.min_tokens!r}")
        if isinstance(self.increment, bool) or not isinstance(self.increment, int) or self.increment < 1:
            raise StrategyError(f"increment must be an int >= 1, got {self.increment!r}")
        if isinstance(self.ttl, bool) or not isinstance(self.ttl, (int, float)) or not self.ttl > 0:
            raise StrategyError(f"ttl must be a number of seconds > 0 (math.inf: never expires), got {self.ttl!r}")

    def split(self, *, prompt: int, shared: int, extends: bool, fixed: int, gap: float | None) -> tuple[int, int]:
        """``(read, write)`` tokens of one request of ``prompt`` cacheable tokens.

        ``shared``: tokens of the longest prefix identical to the previous request (0 for
        the first); ``extends``: the request is the previous one plus new messages;
        ``fixed``: tokens of the system prompt and tool schemas when unchanged since the
        previous request, else 0; ``gap``: seconds since the previous request (``None``:
        unknown, never expires). The rest of ``prompt`` is sent fresh.
        """
        alive = gap is None or gap <= self.ttl
        if self.kind == "automatic":
            if not alive or shared < self.min_tokens or prompt < self.min_tokens:
                return 0, 0
            return self.min_tokens + (shared - self.min_tokens) // self.increment * self.increment, 0
        if prompt < self.min_tokens:
            return 0, 0  # below the minimum a breakpoint is ignored: nothing read, nothing written
        held = shared if extends else min(fixed, shared)
        read = held if alive and held >= self.min_tokens else 0
        return read, prompt - read


PREFIX_CACHE = PromptCache(kind="automatic", min_tokens=0, increment=1, ttl=math.inf)
"""The simplest rule, for prices given by hand: any prefix shared with the previous request
is read, nothing expires and no write is charged."""
