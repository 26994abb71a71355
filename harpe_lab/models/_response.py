"""Reading a chat-completions response from litellm: the reply and the provider's usage.

The one reader of both; the live loop's `Brain` and the cached calls of the distillers and
answer checks read every response through it.
"""

from __future__ import annotations

from typing import Any

from ..messages import AssistantMessage, ToolCall, Usage, parse_arguments

__all__ = ["UnusableReply", "reply_of", "finish_reason", "usage_of"]


class UnusableReply(Exception):
    """A response that holds no reply to use (no choices, no message): not transient."""


def reply_of(response: Any) -> AssistantMessage:
    """The first choice as an `AssistantMessage`: its text (``""`` when there is none) and
    its tool calls, arguments parsed by `harpe_lab.messages.parse_arguments` (arguments that
    are not a JSON object are kept under ``"_raw"``, so the tool can report them)."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise UnusableReply("the provider returned no choices")
    message = getattr(choices[0], "message", None)
    if message is None:
        raise UnusableReply("the provider's first choice has no message")
    text = message.content if isinstance(message.content, str) else ""
    calls = []
    for c in getattr(message, "tool_calls", None) or ():
        raw = c.function.arguments
        parsed = parse_arguments(raw.strip() if isinstance(raw, str) else raw)
        if not isinstance(parsed, dict):
            parsed = {"_raw": raw}
        calls.append(ToolCall(str(c.id or ""), str(c.function.name or ""), parsed))
    return AssistantMessage(text, tuple(calls))


def finish_reason(response: Any) -> str:
    """The first choice's finish reason (``""`` when it gave none)."""
    return str(getattr(response.choices[0], "finish_reason", "") or "")


def _num(obj: Any, name: str) -> int:
    value = getattr(obj, name, None) if obj is not None else None
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


def usage_of(response: Any, *, provider: str, model: str) -> Usage | None:
    """The provider's token counts for ``response`` as a `Usage` labelled ``provider`` and
    ``model``; ``None`` when it reported none (no usage, or litellm's zeros in its place).

    Cache reads come from ``prompt_tokens_details.cached_tokens`` (OpenAI) or
    ``cache_read_input_tokens`` (Anthropic), cache writes from ``cache_creation_input_tokens``.
    """
    u = getattr(response, "usage", None)
    if u is None:
        return None
    prompt, completion = _num(u, "prompt_tokens"), _num(u, "completion_tokens")
    if prompt == 0 and completion == 0:
        return None  # litellm fills zeros when the provider sent no usage
    details = getattr(u, "prompt_tokens_details", None)
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        cache_read_tokens=_num(details, "cached_tokens") or _num(u, "cache_read_input_tokens"),
        cache_write_tokens=_num(u, "cache_creation_input_tokens"),
        provider=provider,
        model=model,
    )
