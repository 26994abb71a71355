"""The model call: one chat completion through litellm, cached on disk (`CachedModel`, for
the distillers and the answer checks) or sent as is (`send`, for the live loop, which runs
its own retries)."""

from __future__ import annotations

import json
import math
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import ModelError
from ..messages import Usage
from ._cache import CACHE_KEY_PARAMS, ReplyCache, cache_key, default_cache_dir
from ._failures import explain
from ._pricing import reply_cost
from ._response import UnusableReply, finish_reason, reply_of, usage_of
from ._secrets import secrets_of

__all__ = ["CachedModel", "Completion", "ModelCall", "send", "route"]


def send(model: str, messages: Sequence[Mapping[str, Any]], *, tools: Sequence[Mapping[str, Any]] = (),
         max_tokens: int, **litellm_kwargs: Any) -> Any:
    """One ``litellm.completion`` call with litellm's and the provider SDK's retries off
    (the caller owns the retry policy). litellm's exceptions propagate: read them with
    `harpe_lab.models.classify`, and the response with `reply_of` and `usage_of`."""
    from ._litellm import litellm

    request: dict[str, Any] = {
        "model": model,
        "messages": list(messages),
        "max_tokens": max_tokens,
        "num_retries": 0,
        "max_retries": 0,
    }
    if tools:
        request["tools"] = [dict(t) for t in tools]
    return litellm().completion(**request, **litellm_kwargs)


def route(model: str, *, api_base: str | None = None, custom_llm_provider: str | None = None) -> tuple[str, str]:
    """(provider, model name without the provider) as litellm routes ``model``:
    ``"openai/gpt-4o"`` → ``("openai", "gpt-4o")``; a bare name is looked up in litellm's
    table (``("", model)`` when it does not know it: a label only, the call reports the
    real error)."""
    if custom_llm_provider:
        return str(custom_llm_provider), model
    if "/" in model:
        prefix, rest = model.split("/", 1)
        return prefix, rest
    from ._litellm import litellm

    try:
        name, provider, _, _ = litellm().get_llm_provider(model, api_base=api_base)
        return str(provider), str(name)
    except Exception:  # noqa: BLE001 - only a label; the call itself reports the real error
        return "", model


@dataclass(frozen=True)
class Completion:
    """One model reply: ``text``, ``finish_reason``, the provider's ``usage`` (``None``
    when it reported none), ``cost_usd`` (NaN when litellm's price table does not know the
    model), whether it came from the on-disk ``cached`` copy, and the cache ``key``."""

    text: str
    finish_reason: str
    usage: Usage | None
    cost_usd: float
    cached: bool
    key: str


@dataclass(frozen=True)
class ModelCall:
    """A record of one call in a `CachedModel`'s log (failed calls included, with
    ``error``). Tokens are the provider's, also for a cache hit (what the reply cost when
    it was made); ``cost_usd`` is NaN for an unknown price."""

    model: str
    key: str
    cached: bool
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cost_usd: float = math.nan
    seconds: float = 0.0
    finish_reason: str = ""
    error: str = ""
    purpose: str = ""


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1].rstrip() + "…"


def _preview(messages: Sequence[Mapping[str, Any]], role: str) -> str:
    for m in reversed(messages):
        if m.get("role") == role:
            c = m.get("content")
            return _clip(c if isinstance(c, str) else json.dumps(c), 200)
    return ""


class CachedModel:
    """A chat-completions model through litellm, with an on-disk reply cache and a call log.

    The cache key is the SHA-256 of the model name, the messages and the reply-shaping
    arguments (`CACHE_KEY_PARAMS`); each reply is a JSON file ``<cache_dir>/<key[:2]>/
    <key>.json`` holding the reply text, finish reason, usage, the model, those arguments,
    and short previews of the request — never the API key or any other transport argument.
    A hit makes no request, so a notebook re-runs offline with identical numbers. Only
    successful, non-blank replies are cached.

    ``retries`` goes to litellm as the provider SDK's ``max_retries`` (retry with backoff on
    5xx, 429 and timeouts; ``retries=2`` makes at most 3 attempts). litellm's own
    ``num_retries`` is not passed: it overrides ``max_retries``. Every failure — HTTP
    error, timeout, malformed JSON, a blank reply — raises `ModelError` saying what went
    wrong (with no secret in it). Thread-safe.
    """

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int | None = 1024,
        temperature: float | None = 0,
        cache_dir: str | os.PathLike | None = None,
        cache: bool = True,
        timeout: float = 120.0,
        retries: int = 2,
        **litellm_kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ModelError(f"model must be a litellm model name such as 'openai/gpt-4o-mini', got {model!r}")
        if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
            raise ModelError(f"max_tokens must be an int >= 1 or None, got {max_tokens!r}")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout <= 0:
            raise ModelError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if not isinstance(retries, int) or isinstance(retries, bool) or retries < 0:
            raise ModelError(f"retries must be an int >= 0, got {retries!r}")
        self.model = model
        self.timeout = float(timeout)
        self.retries = retries
        self.cache = bool(cache)
        self.cache_dir = Path(cache_dir).expanduser() if cache_dir is not None else default_cache_dir()
        self._replies = ReplyCache(self.cache_dir)
        params: dict[str, Any] = {}
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        if temperature is not None:
            params["temperature"] = temperature
        transport: dict[str, Any] = {}
        for k, v in litellm_kwargs.items():
            (params if k in CACHE_KEY_PARAMS else transport)[k] = v
        self._params = params
        self._transport = transport  # may hold secrets: never hashed, logged or written
        self._lock = threading.Lock()
        self.calls: list[ModelCall] = []

    @property
    def params(self) -> dict[str, Any]:
        """The reply-shaping arguments (part of the cache key)."""
        return dict(self._params)

    def key(self, messages: Sequence[Mapping[str, Any]]) -> str:
        """The cache key of a request: SHA-256 over model, messages and `params`."""
        return cache_key(self.model, messages, self._params)

    def _load(self, key: str) -> dict[str, Any] | None:
        return self._replies.load(key) if self.cache else None

    def _store(self, key: str, messages: Sequence[Mapping[str, Any]], completion: Completion) -> None:
        if not self.cache:
            return
        u = completion.usage
        self._replies.store(key, {
            "model": self.model,
            "params": self._params,
            "request": {
                "messages": len(messages),
                "chars": sum(len(str(m.get("content") or "")) for m in messages),
                "system_preview": _preview(messages, "system"),
                "last_user_preview": _preview(messages, "user"),
            },
            "text": completion.text,
            "finish_reason": completion.finish_reason,
            "usage": None if u is None else {
                "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
                "cache_read_tokens": u.cache_read_tokens, "cache_write_tokens": u.cache_write_tokens,
            },
        })  # fmt: skip

    def _from_cache(self, key: str, doc: Mapping[str, Any]) -> Completion:
        u = doc.get("usage")
        usage = None if not u else Usage(
            input_tokens=int(u["input_tokens"]), output_tokens=int(u["output_tokens"]),
            cache_read_tokens=int(u.get("cache_read_tokens", 0)), cache_write_tokens=int(u.get("cache_write_tokens", 0)),
            provider="litellm", model=self.model,
        )  # fmt: skip
        return Completion(doc["text"], str(doc.get("finish_reason", "")), usage, reply_cost(self.model, usage), True,
                          key)

    def _arguments(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        # litellm's own num_retries would override max_retries (0 turns the SDK's retry off)
        args: dict[str, Any] = {"timeout": self.timeout, "max_retries": self.retries}
        args.update(self._transport)
        args.update(self._params)
        args["model"] = self.model
        args["messages"] = list(messages)
        return args

    def _finish(self, key: str, messages: Sequence[Mapping[str, Any]], response: Any) -> Completion:
        try:
            text = reply_of(response).text
            finish = finish_reason(response)
        except (UnusableReply, AttributeError, IndexError, TypeError) as e:
            raise ModelError(f"model {self.model!r}: the reply has no message ({type(e).__name__}: {e})") from e
        usage = usage_of(response, provider="litellm", model=self.model)
        if not text.strip():
            raise ModelError(
                f"model {self.model!r}: the reply was empty (content={text!r}, finish_reason={finish!r}); "
                "an empty summary or answer is never used silently — check max_tokens and the prompt"
            )
        completion = Completion(text, finish, usage, reply_cost(self.model, usage), False, key)
        self._store(key, messages, completion)
        return completion

    def _log(self, key: str, started: float, purpose: str, completion: Completion | None = None, error: str = "") -> None:
        u = completion.usage if completion is not None else None
        call = ModelCall(
            self.model, key, bool(completion and completion.cached),
            u.input_tokens if u else 0, u.output_tokens if u else 0, u.cache_read_tokens if u else 0,
            completion.cost_usd if completion is not None else math.nan,
            time.perf_counter() - started, completion.finish_reason if completion is not None else "", error, purpose,
        )  # fmt: skip
        with self._lock:
            self.calls.append(call)

    def complete(self, messages: Sequence[Mapping[str, Any]], *, purpose: str = "") -> Completion:
        """Send OpenAI-format ``messages`` (or answer from the cache). Raises `ModelError`."""
        key, started = self.key(messages), time.perf_counter()
        hit = self._hit(key, started, purpose)
        if hit is not None:
            return hit
        from ._litellm import litellm

        try:
            response = litellm().completion(**self._arguments(messages))
        except Exception as e:  # every provider failure becomes one clear ModelError
            raise self._failed(key, started, purpose, e) from e
        return self._done(key, messages, started, purpose, response)

    async def acomplete(self, messages: Sequence[Mapping[str, Any]], *, purpose: str = "") -> Completion:
        """`complete`, through ``litellm.acompletion``."""
        key, started = self.key(messages), time.perf_counter()
        hit = self._hit(key, started, purpose)
        if hit is not None:
            return hit
        from ._litellm import litellm

        try:
            response = await litellm().acompletion(**self._arguments(messages))
        except Exception as e:  # every provider failure becomes one clear ModelError
            raise self._failed(key, started, purpose, e) from e
        return self._done(key, messages, started, purpose, response)

    def _hit(self, key: str, started: float, purpose: str) -> Completion | None:
        doc = self._load(key)
        if doc is None:
            return None
        completion = self._from_cache(key, doc)
        self._log(key, started, purpose, completion)
        return completion

    def _failed(self, key: str, started: float, purpose: str, e: Exception) -> ModelError:
        error = ModelError(explain(e, self.model, self.timeout, secrets_of(self._transport)))
        self._log(key, started, purpose, error=str(error))
        return error

    def _done(self, key: str, messages: Sequence[Mapping[str, Any]], started: float, purpose: str,
              response: Any) -> Completion:
        try:
            completion = self._finish(key, messages, response)
        except ModelError as e:
            self._log(key, started, purpose, error=str(e))
            raise
        self._log(key, started, purpose, completion)
        return completion

    def totals(self) -> dict[str, float]:
        """Calls, cache hits, failures, tokens and cost so far (``cost_usd`` counts every
        reply used, ``cost_usd_spent`` only the ones fetched now; NaN if a price is unknown)."""
        with self._lock:
            calls = list(self.calls)
        ok = [c for c in calls if not c.error]
        return {
            "calls": len(calls),
            "cache_hits": sum(c.cached for c in ok),
            "errors": len(calls) - len(ok),
            "input_tokens": sum(c.input_tokens for c in ok),
            "output_tokens": sum(c.output_tokens for c in ok),
            "cost_usd": sum(c.cost_usd for c in ok),
            "cost_usd_spent": sum(c.cost_usd for c in ok if not c.cached),
        }

    def __repr__(self) -> str:
        hidden = f", +{len(self._transport)} transport args" if self._transport else ""
        return f"CachedModel({self.model!r}, cache_dir={str(self.cache_dir)!r}{hidden})"
