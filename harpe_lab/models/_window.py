"""What a model's window holds: its input limit from litellm's offline model table, and a
text's length in the model's own tokens."""

from __future__ import annotations

from ..errors import HarpeLabError

__all__ = ["model_input_limit", "count_tokens"]


def model_input_limit(limit: int | str) -> int:
    """``limit`` as a token count: an int is returned as is, a model name is looked up in
    litellm's offline model table (``max_input_tokens``; ``openai/gpt-4o`` or ``gpt-4o``)."""
    if isinstance(limit, bool) or not isinstance(limit, (int, str)):
        raise HarpeLabError(f"`limit` must be a token count or a model name, but {limit!r} was passed.")
    if isinstance(limit, int):
        if limit <= 0:
            raise HarpeLabError(f"`limit` must be a positive token count, but {limit!r} was passed.")
        return limit
    from ._litellm import litellm, model_entry

    for key in (limit, limit.split("/", 1)[-1]):
        entry = model_entry(key) or {}
        value = entry.get("max_input_tokens") or entry.get("max_tokens")
        if value:
            return int(value)
    stem = limit.split("/")[-1][:6]
    close = sorted(k for k in litellm().model_cost if stem and stem in k)[:8]
    raise HarpeLabError(
        f"`limit` must be a token count or a model name in litellm's model table, but {limit!r} was "
        f"passed; similar names: {', '.join(close) or 'none'}."
    )


def count_tokens(model: str, text: str) -> int:
    """How many tokens ``text`` is for ``model``, by ``litellm.token_counter`` (offline)."""
    from ._litellm import litellm

    return int(litellm().token_counter(model=model, text=text))
