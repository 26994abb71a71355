"""Our messages at LangChain's granularity (one tool result a unit), and LangChain's
message utilities both middlewares use: ``trim_messages``, ``get_buffer_string(format="xml")``
and the cutoff that never splits a call from its results."""

from __future__ import annotations

import json
from typing import Callable, Sequence
from xml.sax.saxutils import escape, quoteattr

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, ToolResult, ToolResults, UserInput

_ID_DISPLAY = 64


# --- units: our messages at LangChain's granularity ----------------------------------------

Unit = Message
"""A message as LangChain holds it: a `UserInput`, an `AssistantMessage`, or a `ToolResults`
with exactly one result (a ``ToolMessage``)."""


def units_of(message: Message) -> tuple[Message, ...]:
    """``message`` as units: itself, or one one-result `ToolResults` per result (sharing the
    `ToolResult` objects, so `regroup` can tell an untouched round)."""
    if isinstance(message, ToolResults) and not message.results:
        raise StrategyError("a ToolResults with no result has no LangChain message (no ToolMessage to stand for it)")
    if isinstance(message, ToolResults) and len(message.results) != 1:
        return tuple(ToolResults((r,), message.pinned) for r in message.results)
    return (message,)


class Splitter:
    """`units_of` with a memory: the same message always gives the same unit objects, so
    counts cached by object (every harpe_lab counter) are reused across requests."""

    def __init__(self) -> None:
        self._memo: dict[int, tuple[Message, tuple[Message, ...]]] = {}

    def __call__(self, message: Message) -> tuple[Message, ...]:
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        units = units_of(message)
        if units[0] is not message:
            self._memo[id(message)] = (message, units)
        return units


def regroup(units: Sequence[tuple[Message, Message | None]]) -> tuple[Message, ...]:
    """Our messages from ``(unit, original)`` pairs, ``original`` being the message a unit came
    from (``None`` for one made up). Consecutive tool-result units of one original round
    become one `ToolResults`: the original itself when they are all its results, untouched
    (the same `ToolResult` objects); else a new one with the original's ``pinned``."""
    out: list[Message] = []
    k = 0
    n = len(units)
    while k < n:
        unit, original = units[k]
        if not isinstance(unit, ToolResults) or not isinstance(original, ToolResults):
            out.append(unit)
            k += 1
            continue
        group = [unit]
        k += 1
        while k < n and units[k][1] is original and isinstance(units[k][0], ToolResults):
            group.append(units[k][0])
            k += 1
        results = tuple(r for u in group for r in u.results)
        whole = len(results) == len(original.results) and all(a is b for a, b in zip(results, original.results))
        out.append(original if whole else ToolResults(results, original.pinned))
    return tuple(out)


def _is_tool(unit: Message) -> bool:
    return isinstance(unit, ToolResults)


def _tool_id(unit: Message) -> str:
    return unit.results[0].id  # type: ignore[union-attr]


def _with_text(unit: Message, text: str) -> Message:
    """``unit`` with its text (LangChain's ``content``) replaced."""
    if isinstance(unit, UserInput):
        return UserInput(text, unit.attachments, unit.pinned)
    if isinstance(unit, AssistantMessage):
        return AssistantMessage(text, unit.calls, unit.pinned)
    r = unit.results[0]
    return ToolResults((ToolResult(r.id, text, r.attachments, r.success),), unit.pinned)


def _text(unit: Message) -> str:
    if isinstance(unit, ToolResults):
        return unit.results[0].content
    return unit.text


def _display_id(call_id: str) -> str:
    return f"{call_id[:_ID_DISPLAY]}..." if len(call_id) > _ID_DISPLAY else call_id


def buffer_xml(units: Sequence[Message]) -> str:
    """LangChain's ``get_buffer_string(messages, format="xml")`` of the units' messages."""
    out = []
    for m in units:
        if isinstance(m, UserInput):
            kind = "human"
        elif isinstance(m, AssistantMessage):
            kind = "ai"
        elif isinstance(m, ToolResults):
            kind = "tool"
        else:
            raise TypeError(f"not a harpe_lab message: {m!r}")
        text = _text(m)
        content = escape(text) if text else ""
        if isinstance(m, AssistantMessage) and m.calls:
            parts = [f"<message type={quoteattr(kind)}>"]
            if content:
                parts.append(f"  <content>{content}</content>")
            for c in m.calls:
                args = escape(json.dumps(c.input, ensure_ascii=False))
                parts.append(f"  <tool_call id={quoteattr(_display_id(c.id or ''))} name={quoteattr(c.name or '')}>"
                             f"{args}</tool_call>")
            parts.append("</message>")
            out.append("\n".join(parts))
        else:
            out.append(f"<message type={quoteattr(kind)}>{content}</message>")
    return "\n".join(out)


def _split_lines(text: str) -> list[str]:
    # LangChain's default text splitter: lines, each keeping its newline
    splits = text.split("\n")
    return [s + "\n" for s in splits[:-1]] + splits[-1:]


def trim_last(units: Sequence[Message], max_tokens: int, count: Callable[[Sequence[Message]], int], *,
              count_text: Callable[[str], int] | None = None) -> list[Message]:
    """``trim_messages(units, max_tokens=, token_counter=count, strategy="last",
    allow_partial=True, start_on="human", include_system=True)`` for units (which hold no
    system message): the newest units within ``max_tokens``, the newest one left out cut to
    its last lines that fit, then units dropped from the oldest end until a user message
    leads. ``count`` is called on the same lists, in the same order, as LangChain calls it,
    unless ``count_text`` is given: a price of a unit's text such that ``count`` of the unit
    with text ``t`` is ``count`` of it with none, plus ``count_text(t) - count_text("")``
    (`harpe_lab.tokens.text_price`). The cut unit's candidate texts are then priced with it,
    line by line where the counter can, so a line tried again costs nothing: the same
    choices, fewer encodes."""
    msgs = list(units)[::-1]
    if not msgs:
        return []
    if count(msgs) <= max_tokens:
        for _ in range(len(msgs)):
            if not isinstance(msgs[-1], UserInput):
                msgs.pop()
            else:
                break
        return msgs[::-1]
    left, right = 0, len(msgs)
    for _ in range(len(msgs).bit_length()):
        if left >= right:
            break
        mid = (left + right + 1) // 2
        if count(msgs[:mid]) <= max_tokens:
            left = mid
        else:
            right = mid - 1
    idx = left
    if idx < len(msgs):
        text = _text(msgs[idx])
        if text:
            splits = _split_lines(text)[::-1]
            base = count(msgs[:idx])
            if count_text is not None:
                base += count([_with_text(msgs[idx], "")]) - count_text("")
            lo, hi = 0, len(splits)
            for _ in range(len(splits).bit_length()):
                if lo >= hi:
                    break
                mid = (lo + hi + 1) // 2
                part = "".join(splits[:mid])
                price = count([_with_text(msgs[idx], part)]) if count_text is None else count_text(part)
                if base + price <= max_tokens:
                    lo = mid
                else:
                    hi = mid - 1
            if lo > 0:
                msgs = [*msgs[:idx], _with_text(msgs[idx], "".join(splits[:lo][::-1]))]
                idx += 1
    for _ in range(idx):
        if idx > 0 and not isinstance(msgs[idx - 1], UserInput):
            idx -= 1
        else:
            break
    return msgs[:idx][::-1]


def safe_cutoff(units: Sequence[Message], cutoff: int) -> int:
    """LangChain's ``_find_safe_cutoff_point``: a cutoff on a tool result moves back to the
    ``AIMessage`` holding one of the calls of the results there, or (none) past them."""
    if cutoff >= len(units) or not _is_tool(units[cutoff]):
        return cutoff
    ids: set[str] = set()
    idx = cutoff
    while idx < len(units) and _is_tool(units[idx]):
        if _tool_id(units[idx]):
            ids.add(_tool_id(units[idx]))
        idx += 1
    for i in range(cutoff - 1, -1, -1):
        m = units[i]
        if isinstance(m, AssistantMessage) and m.calls and ids & {c.id for c in m.calls if c.id}:
            return i
    return idx
