"""A distiller that asks a model (through `harpe_lab.models.CachedModel`)."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Callable, Literal

from ..errors import ModelError, StrategyError
from ..messages import Rendered, Usage, strip_harpe_keys, to_openai
from ..models import CachedModel, Completion, ModelCall
from ..protocol import DISTILL_SYSTEM
from ._fallback import DistillFallback, _Reporting

__all__ = ["HARPE_DISTILL_SYSTEM", "LLMDistiller"]

HARPE_DISTILL_SYSTEM = DISTILL_SYSTEM
"""Harpe's distill system prompt (`harpe_lab.protocol.DISTILL_SYSTEM`), the default."""


class LLMDistiller(_Reporting):
    """A distiller that asks a model through litellm, with an on-disk cache.

    ``distill(request)`` sends ``system`` (Harpe's distill prompt by default; ``None`` keeps
    the request's own) and the request's messages, and returns the reply text. Arguments
    beyond the named ones go to ``litellm.completion`` (``api_base``, ``api_key``, …); only
    reply-shaping ones (`CACHE_KEY_PARAMS`) enter the cache key, and no argument value is
    ever written to disk. See `CachedModel` for the cache, ``timeout`` and ``retries``.

    After each call ``last_usage`` holds the provider's `Usage` (``None`` when it reported
    none or the call failed), which the replay engine puts in the frame's distill columns,
    and ``last_cost_usd`` its price. ``calls`` logs every call; `totals` sums them.

    Failures (HTTP errors, timeouts, malformed JSON, a blank reply): ``on_error="raise"``
    (default) raises `ModelError`; ``on_error="skip"`` returns ``None`` — the context keeps
    its history and tries again at its next compaction — and reports a `DistillFallback`
    (``events``, ``on_event``, a `DistillFallbackWarning`). It never returns an empty
    summary.
    """

    def __init__(
        self,
        model: str,
        *,
        system: str | None = HARPE_DISTILL_SYSTEM,
        max_tokens: int | None = 1024,
        temperature: float | None = 0,
        cache_dir: str | os.PathLike | None = None,
        cache: bool = True,
        timeout: float = 120.0,
        retries: int = 2,
        on_error: Literal["raise", "skip"] = "raise",
        on_event: Callable[[object], None] | None = None,
        **litellm_kwargs: Any,
    ) -> None:
        if on_error not in ("raise", "skip"):
            raise StrategyError(f"on_error must be one of ['raise', 'skip'], but {on_error!r} was passed")
        if system is not None and not isinstance(system, str):
            raise StrategyError(f"system must be a str or None, got {type(system).__name__}")
        self._settings = dict(
            system=system, max_tokens=max_tokens, temperature=temperature, cache_dir=cache_dir, cache=cache,
            timeout=timeout, retries=retries, on_error=on_error, on_event=on_event, **litellm_kwargs,
        )  # fmt: skip
        self.client = CachedModel(
            model, max_tokens=max_tokens, temperature=temperature, cache_dir=cache_dir, cache=cache,
            timeout=timeout, retries=retries, **litellm_kwargs,
        )  # fmt: skip
        self.model = model
        self.system = system
        self.on_error = on_error
        self.on_event = on_event
        self.events: list[DistillFallback] = []
        self.last_usage: Usage | None = None
        self.last_cost_usd: float = math.nan

    @property
    def calls(self) -> list[ModelCall]:
        """Every call so far (cache hits and failures included)."""
        return list(self.client.calls)

    def fresh(self) -> "LLMDistiller":
        """A distiller with the same settings and cache folder and no calls yet, for the
        next replay (the disk cache makes repeated requests free)."""
        return LLMDistiller(self.model, **self._settings)

    @property
    def cache_dir(self) -> Path:
        return self.client.cache_dir

    def totals(self) -> dict[str, float]:
        """See `CachedModel.totals`."""
        return self.client.totals()

    def messages(self, rendered: Rendered) -> list[dict[str, Any]]:
        """The OpenAI-format messages a call sends for ``rendered``."""
        if not isinstance(rendered, Rendered):
            raise TypeError(f"a distiller takes a Rendered request, got {type(rendered).__name__}")
        system = rendered.system if self.system is None else self.system
        return strip_harpe_keys(to_openai(Rendered(system, rendered.messages)))

    def _done(self, completion: Completion) -> str:
        self.last_usage = completion.usage
        self.last_cost_usd = completion.cost_usd
        return completion.text

    def _failed(self, error: ModelError) -> None:
        self.last_usage = None
        self.last_cost_usd = math.nan
        if self.on_error == "raise":
            raise error
        self._fallback("error", str(error))

    def __call__(self, rendered: Rendered) -> str | None:
        messages = self.messages(rendered)
        try:
            return self._done(self.client.complete(messages, purpose="distill"))
        except ModelError as e:
            self._failed(e)
            return None

    async def acall(self, rendered: Rendered) -> str | None:
        """`__call__`, through ``litellm.acompletion``."""
        messages = self.messages(rendered)
        try:
            return self._done(await self.client.acomplete(messages, purpose="distill"))
        except ModelError as e:
            self._failed(e)
            return None

    def __repr__(self) -> str:
        return f"LLMDistiller({self.model!r}, on_error={self.on_error!r}, {len(self.client.calls)} calls)"
