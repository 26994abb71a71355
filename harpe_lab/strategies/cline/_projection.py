"""The budget projection (``budget-projection/project.ts``): the safety valve both compactions
run when what they keep still exceeds the target."""

from __future__ import annotations

import math
from itertools import compress
from typing import Iterable, Sequence

from ...messages import AssistantMessage, Message, ToolResult, ToolResults, UserInput
from ._measures import _blocks, _join, _message_chars, _parsed, estimate_message

__all__ = []

# --- the budget projection (the safety valve) ------------------------------------------------


def _truncate_text(text: str, limit: int) -> str:
    """``project.ts`` ``truncateText``."""
    if limit <= 0:
        return ""
    if len(text) <= limit:
        return text
    if limit <= 16:
        return text[: max(1, limit)]
    estimate = f"\n...[truncated {len(text) - limit} chars]"
    keep = max(1, limit - len(estimate))
    return f"{text[:keep]}\n...[truncated {len(text) - keep} chars]"


def _truncate_message(message: Message, limit: int) -> Message:
    """``truncateMessageText``: every text block (file contents and tool results too), in
    order, cut to what is left of ``limit`` characters. A message with nothing cut is
    returned itself: what it sends is the same, and it stays the original message (not a
    made-up copy the replay would count as dropped)."""
    left = limit
    changed = False

    def cut(text: str) -> str:
        nonlocal left, changed
        out = _truncate_text(text, left) if left > 0 else ""
        left -= len(out)
        changed = changed or out != text
        return out

    if isinstance(message, UserInput):
        blocks = [("text", cut(b[1])) if b[0] == "text" else ("file", b[1], cut(b[2])) for b in _blocks(message.text)]
        return UserInput(_join(blocks), message.attachments, message.pinned) if changed else message
    if isinstance(message, AssistantMessage):
        text = cut(message.text)
        return AssistantMessage(text, message.calls, message.pinned) if changed else message
    assert isinstance(message, ToolResults)
    results = tuple(ToolResult(r.id, cut(r.content), r.attachments, r.success) for r in message.results)
    return ToolResults(results, message.pinned) if changed else message


def _tool_ids(message: Message) -> set[str]:
    if isinstance(message, AssistantMessage):
        return {c.id for c in message.calls}
    if isinstance(message, ToolResults):
        return {r.id for r in message.results}
    return set()


def _protected_tail(messages: Sequence[Message]) -> int:
    """``findProtectedTailStartIndex``: the last message with a call no result answers."""
    answered: set[str] | None = None  # every result's id, gathered once a call needs it
    after: set[str] = set()  # the ids answered after the place read: results follow their calls
    for k in range(len(messages) - 1, -1, -1):
        m = messages[k]
        if isinstance(m, ToolResults):
            after.update(r.id for r in m.results)
        elif isinstance(m, AssistantMessage) and m.calls and any(c.id not in after for c in m.calls):
            if answered is None:
                answered = {r.id for m in messages if isinstance(m, ToolResults) for r in m.results}
            if any(c.id not in answered for c in m.calls):
                return k
    return len(messages)


def _latest_user(messages: Sequence[Message]) -> int:
    """``findLatestTypedUserMessageIndex`` (the projection's: any user message but tool results)."""
    for k in range(len(messages) - 1, -1, -1):
        if isinstance(messages[k], UserInput):
            return k
    return -1


def _first_user(messages: Sequence[Message]) -> int:
    for k, m in enumerate(messages):
        if isinstance(m, UserInput):
            return k
    return -1


def _has_text(message: Message) -> bool:
    """``hasTruncatableText``: a text, file or tool-result block."""
    if isinstance(message, UserInput):
        return bool(_blocks(message.text))
    if isinstance(message, AssistantMessage):
        return bool(message.text)
    return bool(message.results)


def _any_image(messages: Iterable[Message]) -> bool:
    """Whether any of ``messages`` carries an image (most carry no attachment at all)."""
    for m in messages:
        if isinstance(m, UserInput):
            if m.attachments and any(a.mime.startswith("image/") for a in m.attachments):
                return True
        elif isinstance(m, ToolResults):
            for r in m.results:
                if r.attachments and any(a.mime.startswith("image/") for a in r.attachments):
                    return True
    return False


def _drop_images(messages: list[Message], origin: list[int],
                 ests: list[int]) -> tuple[list[Message], list[int], list[int]]:
    """`_project`'s first policy, apart so `_project` reads as its steps: images dropped from
    every message outside the latest user message and the live tail (a prompt left with
    nothing goes), each changed message re-estimated."""
    latest = _latest_user(messages)
    tail = _protected_tail(messages)
    kept_m: list[Message] = []
    kept_o: list[int] = []
    kept_e: list[int] = []
    for k, (m, o, e) in enumerate(zip(messages, origin, ests)):
        protected = k == latest or k >= tail
        if not protected and isinstance(m, UserInput) and any(a.mime.startswith("image/") for a in m.attachments):
            m = UserInput(m.text, tuple(a for a in m.attachments if not a.mime.startswith("image/")), m.pinned)
            if not _parsed(m.text) and not m.attachments:
                continue  # nothing left: the message goes
            e = estimate_message(m)
        elif not protected and isinstance(m, ToolResults) and any(a.mime.startswith("image/")
                                                                  for r in m.results for a in r.attachments):
            m = ToolResults(tuple(ToolResult(r.id, r.content, tuple(a for a in r.attachments
                                                                     if not a.mime.startswith("image/")),
                                             r.success)
                                  for r in m.results), m.pinned)
            e = estimate_message(m)
        kept_m.append(m)
        kept_o.append(o)
        kept_e.append(e)
    return kept_m, kept_o, kept_e


def _linked(messages: Sequence[Message]) -> dict[int, tuple[int, ...]]:
    """The messages each message is linked to by tool ids, transitively, itself included (in
    order; a message without tool ids is not listed)."""
    parent: dict[int, int] = {}
    owner: dict[str, int] = {}  # a tool id -> the first message that holds it

    def root(k: int) -> int:
        while parent[k] != k:
            parent[k] = k = parent[parent[k]]
        return k

    for k, m in enumerate(messages):
        ids = _tool_ids(m)
        if not ids:
            continue
        parent[k] = k
        for i in ids:
            other = owner.setdefault(i, k)
            if other != k:
                a, b = root(other), root(k)
                if a != b:
                    parent[max(a, b)] = min(a, b)
    members: dict[int, list[int]] = {}
    for k in parent:  # in order
        members.setdefault(root(k), []).append(k)
    return {k: tuple(ks) for ks in members.values() for k in ks}


def _drop_oldest(messages: list[Message], origin: list[int], ests: Sequence[int], target: int, latest: int,
                 tail: int) -> tuple[list[Message], list[int], bool]:
    """`_project`'s last policy: while over ``target``, whole messages dropped from the oldest,
    each with the messages a tool id links it to, never the first or ``latest`` user message
    or anything from the live ``tail`` on."""
    # Such a group holds no user message (those carry no tool ids), and a reply goes with
    # every result that answers it, so dropping one changes neither the first and latest user
    # message nor the live tail, nor any other group: the groups are found once and the drops
    # made on the list once (project.ts finds them again after each drop).
    total = sum(ests)
    first = _first_user(messages)
    group = _linked(messages)
    dropped: set[int] = set()
    for k in range(len(messages)):
        if total <= target:
            break
        if k in dropped or k == first or k == latest:
            continue
        closure = group.get(k) or (k,)
        if closure[-1] >= tail:
            continue
        dropped.update(closure)
        total -= sum(ests[j] for j in closure)
    if dropped:
        keep = [j not in dropped for j in range(len(messages))]
        messages, origin = list(compress(messages, keep)), list(compress(origin, keep))
    return messages, origin, total <= target


def _project(messages: list[Message], origin: list[int], target: int,
             estimates: Sequence[int] | None = None) -> tuple[list[Message], list[int], bool]:
    """``buildBudgetProjection`` with the compaction policies (``basic_compaction_projection``
    and ``agentic_summary``): images outside the live tail dropped, then, while over
    ``target``, texts cut from the newest message back and whole messages (with their tool
    pairs) dropped from the oldest, never the first or latest user message or the live tail.
    Returns the messages, the original index of each, and whether the target was met.
    ``estimates``: `estimate_message` of each message, when the caller has them."""
    if target <= 0:
        return list(messages), list(origin), False
    messages, origin = list(messages), list(origin)
    ests = list(map(estimate_message, messages)) if estimates is None else list(estimates)
    if _any_image(messages):
        messages, origin, ests = _drop_images(messages, origin, ests)
    total = sum(ests)
    if total <= target:
        return messages, origin, True
    # cutting texts keeps every message's kind and tool ids: the latest user message and the
    # live tail stay where they are, and the total moves by what each cut saved
    latest = _latest_user(messages)
    tail = _protected_tail(messages)
    k = len(messages) - 1
    while k >= 0 and total > target:
        if k != latest and k < tail and _has_text(messages[k]):
            m = messages[k]
            size = _message_chars(m)
            per_token = max(1.0, size / max(1, ests[k]))
            limit = max(16, math.floor(target * per_token / max(1, len(messages))))
            messages[k] = _truncate_message(m, limit)
            if messages[k] is not m:
                e = estimate_message(messages[k])
                total += e - ests[k]
                ests[k] = e
        k -= 1
    if total <= target:
        return messages, origin, True
    return _drop_oldest(messages, origin, ests, target, latest, tail)
