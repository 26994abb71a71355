"""Gemini's measures of its history: ``JSON.stringify`` lengths (UTF-16 units) and
``estimateTokenCountSync`` estimates of the ``Content`` each harpe_lab message maps to. Only
*where* Gemini cuts depends on them (the replay prices what is sent with its own counter), so
they follow Gemini's formulas exactly, and fast: every message is measured at every check. A
sanitizer's marker is measured as the plain text it replaced (`harpe_lab._text.hidden_chars`)."""

from __future__ import annotations

import json
import math
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from functools import lru_cache
from typing import Iterable

from ..._text import hidden_chars
from ...messages import AssistantMessage, Message, ToolResults, UserInput

_FULL_HEURISTIC_CHARS = 100_000  # MAX_CHARS_FOR_FULL_HEURISTIC


def _utf16(text: str) -> int:
    """JavaScript's ``text.length``: UTF-16 code units."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


@lru_cache(maxsize=1 << 16)  # a latched context truncates the whole history at every request
def _text_estimate(text: str) -> float:
    # estimateTextTokens: 4 ASCII characters a token, 1.5 tokens per other UTF-16 unit, and
    # plain units / 4 above 100,000 units (where Gemini skips the per-character loop)
    hidden = hidden_chars(text)  # a sanitizer's marker: the plain text it replaced
    units = _utf16(text) + hidden
    if units > _FULL_HEURISTIC_CHARS or text.isascii():
        return units / 4
    ascii_chars = len(text.encode("ascii", "ignore")) + hidden
    return ascii_chars / 4 + (units - ascii_chars) * 1.5


def estimate_tokens(text: str) -> int:
    """Gemini's ``estimateTokenCountSync([{text}])``: ASCII at 4 characters a token, any other
    UTF-16 unit 1.5 tokens, a text over 100,000 units at 4 units a token; rounded down."""
    return math.floor(_text_estimate(text))


_COMPACT_JSON = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
# what json.dumps(obj, ensure_ascii=False, separators=(",", ":")) builds at every call, built
# once; and its C encoder too, which `encode` makes again at every call (a call's arguments are
# parsed JSON, never circular: no markers)
_C_ENCODE = c_make_encoder and c_make_encoder(None, _COMPACT_JSON.default, encode_basestring, None, ":", ",",
                                               False, False, True)


def _dumps(obj: object) -> str:
    # JSON.stringify: compact, non-ASCII left as it is
    return "".join(_C_ENCODE(obj, 0)) if _C_ENCODE else _COMPACT_JSON.encode(obj)


def _quoted(text: str) -> str:
    # JSON.stringify of a string: json's own (C) string encoder, non-ASCII left as it is
    return encode_basestring(text)


def _response_tokens(name: str, content: str) -> float:
    # estimateFunctionResponseTokens: the name and the JSON of the response ({"output": …}),
    # 4 UTF-16 units a token; escapes are ASCII, so the JSON's units are the text's plus them
    return (_utf16(name) + len('{"output":}') + _units(content)) / 4


def _tool_names(messages: Iterable[Message]) -> dict[str, str]:
    return {c.id: c.name for m in messages if isinstance(m, AssistantMessage) for c in m.calls}


_PLAIN_BYTES = bytes(b for b in range(256) if b >= 0x20 and b not in b'"\\')
"""The bytes a JSON string holds as they are (all but control characters, quote, backslash)."""
_SHORT_ESCAPES = b'"\\\b\f\n\r\t'
"""The characters JSON escapes as a backslash and one more character (other controls: \\u00XX)."""


def _units(text: str) -> int:
    """UTF-16 units of ``text`` as a JSON string (quotes and escapes, all ASCII, included)."""
    if text.isascii():
        return _ascii_units(text) + hidden_chars(text)
    return _utf16(text) + len(_quoted(text)) - len(text) + hidden_chars(text)


def _ascii_units(text: str) -> int:
    """`_units` of an ASCII ``text`` without its markers' hidden characters: what escaping
    adds, counted on the bytes without building the escaped string (about twice as fast),
    1 for a short escape, 5 for a \\u00XX one."""
    special = text.encode("ascii").translate(None, _PLAIN_BYTES)
    if not special:
        return len(text) + 2
    return len(text) + 2 + len(special) + 4 * len(special.translate(None, _SHORT_ESCAPES))


@lru_cache(maxsize=1024)
def _name_units(name: str) -> tuple[int, int]:
    """``(_units(name), _utf16(name))`` of a tool name: a few names come back in every message."""
    return _units(name), _utf16(name)


def _text_measure(text: str) -> tuple[int, float]:
    """``(_units(text), _text_estimate(text))``: a message's text is measured both ways, its
    escapes (the costly part) counted once."""
    hidden = hidden_chars(text)  # a sanitizer's marker: the plain text it replaced
    if text.isascii():
        return _ascii_units(text) + hidden, (len(text) + hidden) / 4
    escapes = len(_quoted(text)) - len(text)
    units = len(text.encode("utf-16-le", "surrogatepass")) // 2 + hidden
    if units > _FULL_HEURISTIC_CHARS:
        return units + escapes, units / 4
    ascii_chars = len(text.encode("ascii", "ignore")) + hidden
    return units + escapes, ascii_chars / 4 + (units - ascii_chars) * 1.5


def _measure(message: Message, names: dict[str, str]) -> tuple[int, float]:
    """``(JSON.stringify(content).length, estimateTokenCountSync(parts))`` of ``message`` as the
    ``Content`` Gemini's history holds (ids left out), the estimate not yet rounded down."""
    if isinstance(message, UserInput):
        # {"role":"user","parts":[{"text":…}]}
        units, estimate = _text_measure(message.text)
        return 35 + units, estimate
    if isinstance(message, AssistantMessage):
        size, parts, estimate = 27, 0, 0.0  # {"role":"model","parts":[…]}
        if message.text:
            units, text_estimate = _text_measure(message.text)
            size += 9 + units  # {"text":…}
            parts += 1
            estimate += text_estimate
        for c in message.calls:
            args = _dumps(c.input)
            call = 34 + _name_units(c.name)[0] + _utf16(args) + hidden_chars(args)  # {"functionCall":{"name":…,"args":…}}
            size += call
            parts += 1
            estimate += call / 4
        return size + max(0, parts - 1), estimate
    size, estimate = 26, 0.0
    for r in message.results:
        name_units, name_length = _name_units(names.get(r.id, ""))
        units = _units(r.content)
        # {"functionResponse":{"name":…,"response":{"output":…}}}
        size += 53 + name_units + units
        estimate += (name_length + len('{"output":}') + units) / 4  # _response_tokens, escaped once
    return size + max(0, len(message.results) - 1), estimate


_MEASURED: dict[int, tuple] = {}  # id(message) -> (message, JSON units, estimate, its results' tool names)
_MEASURED_SIZE = 1 << 17


def _measured(message: Message, names: dict[str, str]) -> tuple:
    """``(message, *_measure(message, names), …)``, memoized by identity, as Harpe's character
    measure is (`harpe_lab._text.message_chars`): a compression measures the whole history,
    and a replay of the same session again (another knob value) measures the same messages.
    A results message is measured again when its tools' names differ."""
    hit = _MEASURED.get(id(message))
    key = tuple([names.get(r.id, "") for r in message.results]) if isinstance(message, ToolResults) else None
    if hit is not None and hit[0] is message and hit[3] == key:
        return hit
    if len(_MEASURED) >= _MEASURED_SIZE:
        _MEASURED.clear()
    hit = _MEASURED[id(message)] = (message, *_measure(message, names), key)
    return hit
