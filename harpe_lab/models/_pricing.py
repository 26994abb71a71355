"""Prices per token for one model, from litellm's bundled (offline) price table, with the
provider's prompt-cache rule (`PromptCache`); per-call prices for a recording made by several
models (`CallPricing`); and the price of one reply."""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..errors import StrategyError
from ..messages import Usage
from ._prompt_cache import ANTHROPIC_TTLS, PREFIX_CACHE, PromptCache

__all__ = ["Pricing", "CallPricing", "suggest_models", "reply_cost", "resolve_pricing"]


def _norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _priced(entry: Any) -> bool:
    return isinstance(entry, Mapping) and entry.get("input_cost_per_token") is not None


def suggest_models(model: str, table: Mapping[str, Any], n: int = 5) -> list[str]:
    """The names in litellm's price ``table`` closest to ``model``, best first, spelled so
    that `Pricing.for_model` accepts them.

    A name equal but for punctuation (``gpt4o`` → ``gpt-4o``) ranks first, then close names
    of the provider ``model`` names (``openai/...``; litellm lists OpenAI's own models
    without the prefix), then close names elsewhere; region and deployment paths
    (``azure/eu/...``) rank below the plain name.
    """
    provider, _, name = model.rpartition("/") if "/" in model else ("", "", model)
    provider = provider.split("/")[0].lower()
    want = _norm(name)
    matcher = difflib.SequenceMatcher(None)
    matcher.set_seq2(want)  # b is cached; each candidate is set as a
    scored: list[tuple[float, int, str]] = []
    for key, entry in table.items():
        if not _priced(entry):
            continue
        owner = str(entry.get("litellm_provider", "")).lower()
        base = key.split("/", 1)[1] if key.lower().startswith(f"{owner}/") else key
        got = _norm(base.rsplit("/", 1)[-1])
        if not got or abs(len(got) - len(want)) > max(4, len(want)):
            continue
        matcher.set_seq1(got)
        if matcher.real_quick_ratio() < 0.6 or matcher.quick_ratio() < 0.6:
            continue
        score = matcher.ratio() + (1.0 if got == want else 0.0)
        if provider and owner == provider:
            score += 0.3
        score -= 0.15 * base.count("/")  # azure/eu/gpt-4o below gpt-4o
        spelled = f"{provider}/{base}" if provider and owner == provider and "/" not in base else key
        scored.append((score, -len(spelled), spelled))
    out: list[str] = []
    for _, _, spelled in sorted(scored, reverse=True):
        if spelled not in out:
            out.append(spelled)
        if len(out) == n:
            break
    return out


@dataclass(frozen=True)
class Pricing:
    """USD per token for one model, from litellm's bundled price table, and how its
    provider caches prompts.

    ``cache_write`` is the price of a token written to the cache (``None``: writes are
    billed as ordinary input); ``cache`` the provider's `PromptCache` rule (``None``: the
    provider caches nothing). Prices given by hand get `PREFIX_CACHE`: any prefix shared
    with the previous request is read at ``cache_read``.
    """

    model: str
    input: float
    output: float
    cache_read: float
    cache_write: float | None = None
    cache: PromptCache | None = PREFIX_CACHE

    def __post_init__(self) -> None:
        if self.cache_write is None:
            object.__setattr__(self, "cache_write", self.input)

    def billed(self, tokens: int, read: int = 0, write: int = 0, output: int = 0) -> tuple[float, float]:
        """``(without caching, with caching)`` in USD for one call's reported usage: ``tokens``
        of input (cached parts included), ``read`` and ``write`` of them from and to the cache,
        ``output`` tokens. With caching, fresh input, reads and writes each at their price."""
        out = output * self.output
        fresh = tokens - read - write
        return (tokens * self.input + out,
                fresh * self.input + read * self.cache_read + write * self.cache_write + out)

    @classmethod
    def for_model(cls, model: str, *, cache_ttl: float | None = None) -> "Pricing":
        """Look ``model`` up in litellm's offline price table (``openai/gpt-4o`` or ``gpt-4o``).

        The cache rule follows the table (see `harpe_lab.models._prompt_cache`): a priced
        cache write means breakpoints (Anthropic), a priced read alone automatic caching
        (OpenAI and the like), neither no caching. ``cache_ttl`` (seconds) overrides the
        default 300: on Anthropic it is 300 or 3600 (the 1-hour cache, whose writes cost
        ``cache_creation_input_token_cost_above_1hr``).
        """
        if not isinstance(model, str) or not model.strip():
            raise StrategyError(f"model must be a model name such as 'openai/gpt-4o', but {model!r} was passed")
        if cache_ttl is not None and (isinstance(cache_ttl, bool) or not isinstance(cache_ttl, (int, float))
                                      or not cache_ttl > 0):
            raise StrategyError(f"cache_ttl must be a number of seconds > 0, got {cache_ttl!r}")
        from ._litellm import litellm, model_entry

        for key in (model, model.split("/", 1)[-1]):
            entry = model_entry(key)
            if _priced(entry):
                return cls._from_entry(model, entry, cache_ttl)
        close = suggest_models(model, litellm().model_cost)
        hint = f"did you mean {', '.join(close)}? " if close else "no similar name either. "
        raise StrategyError(
            f"no price for model {model!r} in litellm's offline price table; {hint}"
            "Use a name from that table, or give the prices yourself: Pricing(model, input=..., output=..., "
            "cache_read=...) in USD per token"
        )

    @classmethod
    def _from_entry(cls, model: str, entry: Mapping[str, Any], cache_ttl: float | None) -> "Pricing":
        inp = float(entry["input_cost_per_token"])
        out = float(entry.get("output_cost_per_token") or 0.0)
        read = entry.get("cache_read_input_token_cost")
        if read is None:
            return cls(model, inp, out, inp, inp, None)
        write = entry.get("cache_creation_input_token_cost")
        minimum = int(entry.get("prompt_cache_min_tokens") or 1024)
        ttl = float(cache_ttl) if cache_ttl is not None else 300.0
        if write is not None and float(write) > inp:
            if ttl not in ANTHROPIC_TTLS:
                raise StrategyError(
                    f"{model} caches at breakpoints with a TTL of 300 or 3600 seconds (5m or 1h), "
                    f"but cache_ttl={cache_ttl!r} was passed"
                )
            if ttl > ANTHROPIC_TTLS[0]:
                hour = entry.get("cache_creation_input_token_cost_above_1hr")
                write = float(hour) if hour is not None else 2.0 * inp  # Anthropic: 2x for the 1-hour cache
            rule = PromptCache(kind="breakpoints", min_tokens=minimum, ttl=ttl)
            return cls(model, inp, out, float(read), float(write), rule)
        provider = str(entry.get("litellm_provider", ""))
        increment = 128 if provider in ("openai", "azure") else 1
        rule = PromptCache(kind="automatic", min_tokens=minimum, increment=increment, ttl=ttl)
        return cls(model, inp, out, float(read), inp, rule)


def reply_cost(model: str, usage: Usage | None) -> float:
    """The price in USD of one reply's ``usage`` as billed (cache reads and writes at their own
    prices, `Pricing.billed`); NaN when there is no usage or the price table does not know
    ``model`` (an unknown price is never 0)."""
    if usage is None:
        return math.nan
    try:
        price = Pricing.for_model(model)
    except StrategyError:
        return math.nan
    return price.billed(usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens, usage.output_tokens)[1]


@dataclass(frozen=True)
class CallPricing:
    """Prices each model call by the model that made it: a mixed session (Opus for the main
    loop, Haiku for small tasks) is priced call by call, not all as one model.

    ``models`` maps a recorded model name to its `Pricing`; a call whose model is unknown
    (none recorded, or not in the price table: ``unpriced``) is priced as ``default``, the
    model that made the most calls.
    """

    default: Pricing
    models: Mapping[str, Pricing]
    calls: Mapping[str, int]
    """How many recorded calls each model made."""
    unpriced: tuple[str, ...] = ()
    """Models the recording names that the price table does not know (priced as ``default``)."""

    def for_call(self, model: str | None) -> Pricing:
        return self.models.get(model, self.default) if model else self.default

    @property
    def model(self) -> str:
        """The models, most calls first: ``claude-opus-4-6`` or ``claude-opus-4-6 ×84, claude-haiku-4-5 ×133``."""
        if len(self.models) <= 1:
            return self.default.model
        order = sorted(self.models, key=lambda m: -self.calls.get(m, 0))
        return ", ".join(f"{m} ×{self.calls.get(m, 0):,}" for m in order)

    @classmethod
    def for_models(cls, calls: Mapping[str, int], *, cache_ttl: float | None = None) -> "CallPricing | None":
        """Per-call prices for the recorded ``calls`` (model name → number of calls) from
        litellm's offline table; ``None`` when no model named there has a price."""
        priced: dict[str, Pricing] = {}
        unpriced: list[str] = []
        for name in sorted(calls, key=lambda m: -calls[m]):
            try:
                priced[name] = _for_recorded(name, cache_ttl)
            except StrategyError:
                unpriced.append(name)
        if not priced:
            return None
        return cls(priced[next(iter(priced))], priced, dict(calls), tuple(unpriced))


def _for_recorded(name: str, cache_ttl: float | None) -> Pricing:
    """A recorded model name's prices; a TTL only where the provider lets callers choose it."""
    plain = Pricing.for_model(name)
    if cache_ttl and plain.cache is not None and plain.cache.kind == "breakpoints":
        return Pricing.for_model(name, cache_ttl=cache_ttl)
    return plain


@dataclass(frozen=True)
class AutoPricing:
    """``"auto"``, and a recording that names no model the price table knows (a Cline SDK
    session, an exported chat) priced as ``stand_in`` rather than left without a cost."""

    stand_in: str

    def __post_init__(self) -> None:
        if not isinstance(self.stand_in, str) or not self.stand_in:
            raise StrategyError(f"stand_in must be a model name, got {self.stand_in!r}")


def resolve_pricing(pricing: "str | Pricing | CallPricing | AutoPricing | None", models: Mapping[str, int], *,
                    cache_ttl: float | None = None) -> "Pricing | CallPricing | None":
    """The prices a replay of a recording uses: ``"auto"`` prices each call by the model the
    recording names for it (``models``: name → calls; ``None`` when it names none priced), and
    `AutoPricing` the same, else every call as its stand-in; a model name on a provider whose
    callers choose the cache TTL (Anthropic) takes the recording's ``cache_ttl``; a `Pricing`,
    a `CallPricing` or ``None`` is used as given."""
    if pricing == "auto" or isinstance(pricing, AutoPricing):
        per_call = CallPricing.for_models(models, cache_ttl=cache_ttl)
        if per_call is None and isinstance(pricing, AutoPricing):
            return _for_recorded(pricing.stand_in, cache_ttl)
        return per_call
    if not isinstance(pricing, str):
        return pricing
    return _for_recorded(pricing, cache_ttl)
