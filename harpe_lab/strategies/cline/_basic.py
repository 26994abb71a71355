"""Basic compaction (``basic-compaction.ts``): no model; typed prompts kept, the work between
them replaced by a notice, survivors frozen."""

from __future__ import annotations

from itertools import compress
from typing import Sequence

from ...messages import AssistantMessage, Message, UserInput
from ._measures import (
    PRESERVED_ASSISTANT_TEXTS,
    _MEMO_MAX,
    _PRESERVED,
    _SUMMARY,
    _estimate_chars,
    _join,
    _message_chars,
    _parsed,
    _user_chars,
    estimate_message,
)
from ._notice import _assistant_text, dropped_work_notice, tool_activity
from ._projection import _any_image, _project

__all__ = []

# --- basic compaction ------------------------------------------------------------------------


_SANITIZED: dict[str, tuple[str, bool]] = {}  # text -> (its sanitized text, whether any block is left)
_TEXT_ONLY: dict[str, str] = {}  # text -> its text blocks alone


def _sanitized(text: str) -> tuple[str, bool]:
    hit = _SANITIZED.get(text)
    if hit is None:
        blocks = [b for b in ((("text", b[1].strip()) if b[0] == "text" else b) for b in _parsed(text))
                  if b[0] != "text" or b[1]]
        hit = (_join(blocks), bool(blocks))
        if len(_SANITIZED) >= _MEMO_MAX:
            _SANITIZED.clear()
        _SANITIZED[text] = hit
    return hit


def _text_only(text: str) -> str:
    hit = _TEXT_ONLY.get(text)
    if hit is None:
        hit = _join([b for b in _parsed(text) if b[0] == "text"])
        if len(_TEXT_ONLY) >= _MEMO_MAX:
            _TEXT_ONLY.clear()
        _TEXT_ONLY[text] = hit
    return hit


def _sanitize_typed(message: UserInput) -> UserInput | None:
    """``sanitizeTypedUserMessage``: text blocks trimmed, empty ones dropped; None when
    nothing is left. (The text's part is memoized by the text: every compaction sanitizes
    every prompt again; a changed prompt is a new message each time, as it was.)"""
    text, left = _sanitized(message.text)
    if not left and not message.attachments:
        return None
    return message if text == message.text else UserInput(text, message.attachments, message.pinned)


def _without_attachments(message: UserInput) -> UserInput:
    """``userContentBlocks(message, false)``: file and image blocks dropped."""
    text = _text_only(message.text)
    if text == message.text and not message.attachments:
        return message
    return UserInput(text, (), message.pinned)


def _without_attachments_chars(message: UserInput) -> int:
    """`_message_chars` of ``_without_attachments(message)``, without building it: a text
    block's JSON holds only its text."""
    text = _text_only(message.text)
    if text == message.text and not message.attachments:
        return _message_chars(message)
    return _user_chars(text, ())


def _with_notice(message: UserInput, notice: str) -> UserInput:
    return UserInput(f"{message.text}\n\n{notice}" if message.text else notice, message.attachments, message.pinned)


def _merge(messages: list[Message], origin: list[int], original: Sequence[Message],
           original_marks: Sequence[int]) -> tuple[list[Message], list[int]]:
    """``mergeAdjacentUserTurns``: prompts left adjacent become one, each gap bridged by the
    notice of the work dropped there; the work dropped after a prompt is noticed on it.
    Returns the messages and the original index of the first message each stands for."""
    preserved: set[int] = set()  # the conversation's newest assistant texts
    for k in range(len(original) - 1, -1, -1):
        if len(preserved) >= PRESERVED_ASSISTANT_TEXTS:
            break
        if _assistant_text(original[k]):
            preserved.add(k)

    newest = sorted(preserved)

    def responses(start: int, end: int) -> list[str]:
        return [_assistant_text(original[k]) for k in newest if start <= k < end]

    n = len(messages)
    typed = [isinstance(m, UserInput) and not original_marks[o] & _SUMMARY for m, o in zip(messages, origin)]
    latest = next((k for k in range(n - 1, -1, -1) if typed[k]), -1)
    out: list[Message] = []
    out_origin: list[int] = []
    prompts: list[tuple[int, int]] = []  # each prompt's place in out, and the last original index it stands for
    k = 0
    while k < n:
        try:
            at = typed.index(True, k)
        except ValueError:
            at = n
        if at > k:  # what is not a typed prompt is carried as it is
            out += messages[k:at]
            out_origin += origin[k:at]
            k = at
            if k == n:
                break
        end = k
        while end + 1 < n and typed[end + 1]:
            end += 1
        message = messages[k]
        if end > k:
            text_parts: list[str] = []
            attachments: tuple = ()
            for member in range(k, end + 1):
                if member > k and origin[member] > origin[member - 1] + 1:
                    gap = original[origin[member - 1] + 1:origin[member]]
                    activity, said = tool_activity(gap), responses(origin[member - 1] + 1, origin[member])
                    if activity or said:
                        text_parts.append(dropped_work_notice(activity, said))
                m = messages[member]
                assert isinstance(m, UserInput)
                if member != latest:
                    m = _without_attachments(m)
                else:
                    attachments = m.attachments
                if m.text:
                    text_parts.append(m.text)
            first = messages[k]
            message = UserInput("\n\n".join(text_parts), attachments, first.pinned)
        elif k != latest:
            message = _without_attachments(message)  # type: ignore[arg-type]
        prompts.append((len(out), origin[end]))
        out.append(message)
        out_origin.append(origin[k])
        k = end + 1
    for e, last in prompts:
        gap_end = out_origin[e + 1] if e + 1 < len(out_origin) else len(original)
        if gap_end <= last + 1:
            continue
        gap = original[last + 1:gap_end]
        activity, said = tool_activity(gap), responses(last + 1, gap_end)
        if not activity and not said:
            continue
        out[e] = _with_notice(out[e], dropped_work_notice(activity, said))  # type: ignore[arg-type]
    return out, out_origin


_WHOLE = object()  # `_compacted`: the settled prefix cannot be taken as it is; run on the whole


def _basic(original: Sequence[Message], marks: Sequence[int], *, target: int, trigger: int,
           ests: Sequence[int] | None = None) -> tuple[list[Message], list[int]] | None:
    """``runBasicCompaction`` over ``original`` (with their marks): the new messages and
    their marks, or None when Cline would leave the history as it is. ``ests``: each
    message's `estimate_message`, when the caller keeps them."""
    est = list(map(estimate_message, original)) if ests is None else ests
    return _compacted(original, marks, est, 0, target=target, trigger=trigger, whole=True)  # type: ignore[return-value]


def _basic_after(original: Sequence[Message], marks: Sequence[int], settled: int, *, target: int, trigger: int,
                 ests: Sequence[int]) -> tuple[tuple[list[Message], list[int]] | None, int]:
    """`_basic`, where ``original[:settled]`` is a settled prefix (`settled_until`), which a
    compaction carries as it is: it runs on the rest only, with the prefix's estimate added
    to what it keeps. Also returns how many leading messages were carried so (``settled``,
    or 0 where the prefix could not be taken as it is and the whole history was compacted).

    Every prompt Cline keeps is processed again at every compaction, so without this a long
    session's compaction costs O(prompts kept), and compactions come more often as the
    prompts pile up."""
    if settled > 0:
        done = _compacted(original[settled:], marks[settled:], ests[settled:], sum(ests[:settled]),
                          target=target, trigger=trigger, whole=False)
        if done is None:
            return None, settled
        if done is not _WHOLE:
            messages, new_marks = done  # type: ignore[misc]
            return ([*original[:settled], *messages], [*marks[:settled], *new_marks]), settled
    return _basic(original, marks, target=target, trigger=trigger, ests=ests), 0


def _compacted(original: Sequence[Message], marks: Sequence[int], est: Sequence[int], base: int, *, target: int,
               trigger: int, whole: bool) -> tuple[list[Message], list[int]] | None | object:
    """`_basic` on ``original``, after a settled prefix of estimate ``base`` unless
    ``whole``; `_WHOLE` where the prefix would not come through as it is (the safety valve
    would cut, an image would be dropped)."""
    n = len(original)
    if n < 2:
        return None if whole else _WHOLE
    total_target = max(1, min(target, trigger))
    typed_at = [k for k, (m, mark) in enumerate(zip(original, marks))
                if isinstance(m, UserInput) and not mark & _SUMMARY]  # _is_typed, inlined
    sanitized: dict[int, UserInput] = {}
    for k in typed_at:
        s = _sanitize_typed(original[k])  # type: ignore[arg-type]
        if s is not None:
            sanitized[k] = s
    if not sanitized:
        return None if whole else _WHOLE
    latest_typed = typed_at[-1]
    total = base
    for k, s in sanitized.items():
        if s is original[k] and (k == latest_typed or _text_only(s.text) == s.text and not s.attachments):
            total += est[k]  # the message itself is weighed
        else:
            total += _estimate_chars(_message_chars(s) if k == latest_typed else _without_attachments_chars(s))
    is_frozen = [bool(mark & _PRESERVED) for mark in marks]
    for k in sanitized:
        is_frozen[k] = False
    total += sum(compress(est, is_frozen))
    # the latest turn: its newest messages within the target, starting at an assistant message
    start, accumulated = n, 0
    for k in range(n - 1, latest_typed, -1):
        if is_frozen[k]:
            break
        cost = est[k]
        if total + accumulated + cost > total_target:
            break
        accumulated += cost
        start = k
    while start < n and not isinstance(original[start], AssistantMessage):
        start += 1
    total += sum(est[start:])
    # older turns: each one's final answer when it fits, newest turns first
    finals: set[int] = set()
    for b in range(len(typed_at) - 2, -1, -1):
        for k in range(typed_at[b + 1] - 1, typed_at[b], -1):
            if is_frozen[k]:
                break
            m = original[k]
            if not isinstance(m, AssistantMessage) or m.calls:
                continue
            if m.text.strip():  # thinking is not message text here: nothing to strip
                cost = est[k]
                if total + cost <= total_target:
                    finals.add(k)
                    total += cost
            break
    origin = sorted({*sanitized, *compress(range(n), is_frozen), *finals, *range(start, n)})
    kept: list[Message] = [sanitized.get(k) or original[k] for k in origin]
    weights = [est[k] if m is original[k] else estimate_message(m) for k, m in zip(origin, kept)]
    # the safety valve: never trim what was kept on purpose to chase a lower target
    valve = min(max(total_target, total), max(1, trigger))
    if whole:
        kept, origin, _ = _project(kept, origin, valve, weights)
    elif base + sum(weights) > valve or _any_image(kept):
        return _WHOLE
    merged, merged_origin = _merge(kept, origin, original, marks)
    if len(merged) == n and all(a == b for a, b in zip(merged, original)):
        return None
    # a typed prompt is processed again at every compaction; the rest is frozen
    new_marks = [0 if isinstance(m, UserInput) and not marks[o] & _SUMMARY else marks[o] | _PRESERVED
                 for m, o in zip(merged, merged_origin)]
    return merged, new_marks


def _fixed(message: UserInput) -> bool:
    """Whether a typed prompt comes out of a basic compaction as itself (sanitized, without
    files or images) when it is not the latest."""
    return not message.attachments and _sanitize_typed(message) is message and _text_only(message.text) == message.text


def settled_until(messages: Sequence[Message], marks: Sequence[int], start: int = 0) -> int:
    """How much of a basic compaction's output the next one carries as it is: the place of
    its latest typed prompt, or of the last before something that compaction would change
    (0: nothing). Before ``start`` (0, or an earlier such place) the history is known
    settled: only what follows is read.

    A settled prefix holds typed prompts that a compaction gives back as themselves and
    frozen messages without images (every other message of a compaction's output is frozen,
    and no two typed prompts stand next to each other: they were merged), and ends before a
    typed prompt. Everything it holds is kept, and no work was dropped between its messages,
    so no notice is added to them: a compaction leaves it as it is, and weighs it as the sum
    of its messages' estimates (`_basic_after`)."""
    latest = next((k for k in range(len(messages) - 1, start - 1, -1)
                   if isinstance(messages[k], UserInput) and not marks[k] & _SUMMARY), -1)
    good = start
    for k in range(start, latest + 1):
        m = messages[k]
        if isinstance(m, UserInput) and not marks[k] & _SUMMARY:
            good = k
            if k == latest or not _fixed(m):
                break
        elif _any_image((m,)):  # kept only in a live tail; the next compaction drops it
            break
    return good
