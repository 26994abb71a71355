"""Harpe's shared rules about messages' size: how many characters a message weighs, how
messages group into turns, how a history is cut to a character budget, and what a
sanitizer's marker stands for.

Ground floor: it imports only `harpe_lab.messages`. The journal (`Journal.load`) and every
strategy use these rules, so they live below both.
"""

from __future__ import annotations

import json
import re
from typing import Sequence

from .messages import AssistantMessage, Message, ToolResults, UserInput

__all__ = ["CHARS_PER_TOKEN", "REDACTED", "hidden_chars", "message_chars", "message_parts", "message_text",
           "turn_groups", "truncate", "unredacted"]

CHARS_PER_TOKEN = 4
"""Harpe's rule of thumb: a token is about 4 characters (24,000 chars ≈ 6k tokens)."""


REDACTED = re.compile(r"\[REDACTED_[A-Z]+ len=(\d+) sha=[0-9a-f]{6,64}\]")
"""The marker a sanitizer leaves where it removed a text before a recording was shared
(``[REDACTED_TEXT len=3021 sha=dc9e82a0]``: the shared Codex rollouts): the text's length in
characters and a hash of it, so the same text gives the same marker. Group 1: the length."""


def unredacted(text: str) -> tuple[str, list[int]]:
    """``text`` without the sanitizer's markers (`REDACTED`) in it, and the length in
    characters of each text they replaced (``(text, [])`` when it has none)."""
    if "[REDACTED_" not in text:  # found in C: most texts hold none
        return text, []
    lengths: list[int] = []

    def drop(match: re.Match[str]) -> str:
        lengths.append(int(match.group(1)))
        return ""

    return REDACTED.sub(drop, text), lengths


def hidden_chars(text: str) -> int:
    """How many more characters ``text`` stands for than it holds: for each sanitizer's marker
    in it (`REDACTED`), the length of the text it replaced less the marker's own. Every
    measure of a text's size adds it, so a sanitized recording weighs what it weighed (the
    texts replaced are taken as plain ASCII: a character, a byte, a UTF-16 unit each)."""
    if "[REDACTED_" not in text:  # found in C: most texts hold none
        return 0
    return sum(int(m.group(1)) - len(m.group(0)) for m in REDACTED.finditer(text))


_CHARS: dict[int, tuple[Message, int]] = {}  # id(message) -> (message, its measure)
_CHARS_SIZE = 1 << 17


def message_chars(message: Message) -> int:
    """Harpe's character measure: user text; assistant text plus each call's input as
    Python's default ``json.dumps`` writes it; the contents of all tool results (a
    sanitizer's marker as the text it replaced: `hidden_chars`)."""
    # memoized in a side table by identity (the message held, so its id stays unique): a
    # windowed context measures the same messages at every request
    hit = _CHARS.get(id(message))
    if hit is not None and hit[0] is message:
        return hit[1]
    if isinstance(message, UserInput):
        n = _len(message.text)
    elif isinstance(message, AssistantMessage):
        n = _len(message.text) + sum(_len(json.dumps(c.input)) for c in message.calls)
    elif isinstance(message, ToolResults):
        n = sum(_len(r.content) for r in message.results)
    else:
        raise TypeError(f"not a harpe_lab message: {message!r}")
    if len(_CHARS) >= _CHARS_SIZE:
        _CHARS.clear()
    _CHARS[id(message)] = (message, n)
    return n


def _len(text: str) -> int:
    return len(text) + hidden_chars(text)


def turn_groups(messages: Sequence[Message]) -> list[list[Message]]:
    """Group messages into turns: a group starts at each `UserInput`; a leading non-user
    prefix forms its own first group."""
    groups: list[list[Message]] = []
    for m in messages:
        if isinstance(m, UserInput) or not groups:
            groups.append([m])
        else:
            groups[-1].append(m)
    return groups


def truncate(messages: Sequence[Message], max_chars: int) -> list[Message]:
    """Drop whole oldest turns while more than one is left and the total exceeds
    ``max_chars`` (strictly). Never splits a reply from its tool results; the newest turn
    is always kept, even when it alone is over the budget."""
    # Equivalent to Harpe's drop-from-the-front loop: the result is the longest suffix of
    # whole turns within the budget. Walking from the newest end only measures what is kept.
    start = len(messages)
    total = group = 0
    for k in range(len(messages) - 1, -1, -1):
        m = messages[k]
        hit = _CHARS.get(id(m))  # message_chars' side table, inlined (every request walks this)
        group += hit[1] if hit is not None and hit[0] is m else message_chars(m)
        if k == 0 or isinstance(m, UserInput):
            if start < len(messages) and total + group > max_chars:
                break
            total += group
            start, group = k, 0
    return list(messages[start:])


def message_parts(message: Message) -> tuple[tuple[str, str], ...]:
    """The text a message carries, part by part, as ``(kind, text)``: ``"text"`` (a user's
    or the assistant's words), ``"call"`` (``name(arguments)``, the arguments as JSON),
    ``"result"`` and ``"failed"`` (a tool result's content). Attachments are not text and
    are left out. Every view of a message as text is built from these parts."""
    if isinstance(message, UserInput):
        return (("text", message.text),)
    if isinstance(message, AssistantMessage):
        head = (("text", message.text),) if message.text else ()
        return head + tuple(("call", f"{c.name}({json.dumps(c.input, ensure_ascii=False)})") for c in message.calls)
    if isinstance(message, ToolResults):
        return tuple(("result" if r.success else "failed", r.content) for r in message.results)
    raise TypeError(f"not a harpe_lab message: {message!r}")


def message_text(message: Message) -> str:
    """A message as plain text: its parts (`message_parts`) joined by newlines — what
    Laser estimates and `block` shows."""
    return "\n".join(text for _, text in message_parts(message))
