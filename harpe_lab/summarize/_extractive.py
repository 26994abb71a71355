"""The offline baseline distiller: no model, deterministic, fast."""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from ..errors import StrategyError
from ..messages import Rendered, UserInput
from ._artifacts import _DECISION, _ERRORISH, _clip, _extract_ordered, _segments, _sentences, content_words

__all__ = ["ExtractiveDistiller"]

_LABELS = {"files": "Files", "commands": "Commands", "numbers": "Numbers", "urls": "URLs", "identifiers": "Identifiers"}
_LABEL_OF = {v: k for k, v in _LABELS.items()}
_NOTES = "Notes:"
_EXCERPT_LEAD_FIRST = "Conversation excerpt to summarize:\n\n"
_EXCERPT_LEAD_SUMMARY = "Current summary:\n\n"
_EXCERPT_FOLD = "\n\nNew conversation excerpt to fold into it:\n\n"
_EXCERPT_TAIL = "\nReply with the updated summary."
_SPEAKER_LINE = re.compile(r"^(User|Agent|\[tool result\]) ?:? ?(.*)$")


@dataclass
class _Sentence:
    text: str
    speaker: str
    position: int
    prior: bool
    score: float = 0.0


def _parse_request(rendered: Rendered) -> tuple[str, list[tuple[str, str]]]:
    """(previous summary, [(speaker, text)]) from Harpe's distill request, or from any
    request's messages when it is not one."""
    msgs = rendered.messages
    if len(msgs) == 1 and isinstance(msgs[0], UserInput):
        text = msgs[0].text
        body = None
        prior = ""
        if text.startswith(_EXCERPT_LEAD_FIRST):
            body = text[len(_EXCERPT_LEAD_FIRST):]
        elif text.startswith(_EXCERPT_LEAD_SUMMARY) and _EXCERPT_FOLD in text:
            prior, _, body = text[len(_EXCERPT_LEAD_SUMMARY):].partition(_EXCERPT_FOLD)
        if body is not None:
            if body.endswith(_EXCERPT_TAIL):
                body = body[: -len(_EXCERPT_TAIL)]
            return prior, _excerpt_segments(body)
    return "", _segments(msgs)


def _excerpt_segments(body: str) -> list[tuple[str, str]]:
    """Split Harpe's excerpt (``User: …``, ``Agent: …``, ``[tool result] …`` lines, messages
    possibly spanning lines) back into (speaker, text)."""
    out: list[tuple[str, list[str]]] = []
    for line in body.split("\n"):
        if line.startswith("User: "):
            out.append(("User", [line[6:]]))
        elif line.startswith("Agent: [called tool ") and line.endswith("]"):
            out.append(("Call", [line[7:]]))
        elif line.startswith("Agent: "):
            out.append(("Agent", [line[7:]]))
        elif line.startswith("[tool result] "):
            out.append(("Tool", [line[14:]]))
        elif out:
            out[-1][1].append(line)
        elif line.strip():
            out.append(("Agent", [line]))
    return [(speaker, "\n".join(lines).strip("\n")) for speaker, lines in out]


def _parse_own_summary(summary: str) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """Artifacts and notes of a summary this distiller wrote (anything else: all notes)."""
    arts: dict[str, list[str]] = {c: [] for c in _LABELS}
    notes: list[tuple[str, str]] = []
    in_notes = False
    for line in summary.splitlines():
        head, sep, rest = line.partition(": ")
        if not in_notes and sep and head in _LABEL_OF:
            arts[_LABEL_OF[head]].extend(x.replace("\u02cb", "`") for x in re.findall(r"`([^`]*)`", rest))
        elif line.strip() == _NOTES:
            in_notes = True
        elif line.startswith("- "):
            speaker, sep2, text = line[2:].partition(": ")
            if sep2 and speaker in ("User", "Agent", "Tool"):
                notes.append((speaker, text))
            else:
                notes.append(("Agent", line[2:]))
        elif line.strip() and not line.startswith("(") and not (sep and head in _LABEL_OF):
            notes.append(("Agent", line.strip()))
    return arts, notes


@dataclass(frozen=True)
class ExtractiveDistiller:
    """The offline baseline distiller: no model, deterministic, fast.

    It reads Harpe's distill request (the previous summary, if any, and the excerpt of
    dropped messages; any other request is read message by message) and writes::

        Files: `src/app.py`, `tests/test_app.py`
        Commands: `pytest -q tests/test_app.py`
        Numbers: `3.2 s`, `512 MB`
        URLs: `https://…`
        Identifiers: `parse_config`, `HTTPError`
        Notes:
        - User: Make the importer skip blank lines but never bad ones.
        - Agent: The test failed because …

    Artifacts (`extract_artifacts`, all categories but decisions) come first and are all
    kept; the most salient sentences fill the rest of ``max_chars``, in their original
    order. Decision and constraint sentences are chosen first; then salience decides:
    words frequent in the excerpt, artifacts mentioned, error wording and the user's own
    words count up, plain tool output counts down, repeats are dropped. When the
    artifacts alone exceed ``max_chars`` (a long session folded many times), the most
    recently mentioned ones are kept and the summary says how many older ones were left
    out — the one case where an artifact is lost, so the summary stays bounded.

    It is a *baseline*: it copies, it does not understand. Compare it with `LLMDistiller`
    before concluding anything about summarisation as such.
    """

    max_chars: int = 4000
    """Target length of the summary in characters (artifacts first, then sentences)."""
    max_sentence_chars: int = 240
    """Longer sentences are clipped (with "…") so one log line cannot fill the summary."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_chars, int) or isinstance(self.max_chars, bool) or self.max_chars < 1:
            raise StrategyError(f"max_chars must be an int >= 1, got {self.max_chars!r}")
        if (
            not isinstance(self.max_sentence_chars, int)
            or isinstance(self.max_sentence_chars, bool)
            or self.max_sentence_chars < 20
        ):
            raise StrategyError(f"max_sentence_chars must be an int >= 20, got {self.max_sentence_chars!r}")

    def __call__(self, rendered: Rendered) -> str:
        if not isinstance(rendered, Rendered):
            raise TypeError(f"a distiller takes a Rendered request, got {type(rendered).__name__}")
        prior, segments = _parse_request(rendered)
        prior_arts, prior_notes = _parse_own_summary(prior) if prior else ({c: [] for c in _LABELS}, [])

        # artifacts, with the place of their last mention (segment, offset): recency decides
        # which go when they do not all fit
        last_seen: dict[tuple[str, str], tuple[int, int]] = {}
        order: list[tuple[str, str]] = []

        def see(category: str, value: str, where: tuple[int, int]) -> None:
            key = (category, value)
            if key not in last_seen:
                order.append(key)
            last_seen[key] = where

        k = 0
        for category, values in prior_arts.items():
            for v in values:
                see(category, v, (-1, k))
                k += 1
        for seg, (speaker, text) in enumerate([("Agent", t) for _, t in prior_notes] + segments):
            found = _extract_ordered(text, decisions=False)
            for category in _LABELS:
                for v in found[category]:
                    see(category, v, (seg, text.rfind(v)))

        sentences: list[_Sentence] = []
        for speaker, text in prior_notes:
            sentences.append(_Sentence(_clip(text, self.max_sentence_chars), speaker, len(sentences), True))
        for speaker, text in segments:
            if speaker == "Call":
                continue  # "[called tool X] {...}": its artifacts are listed already
            for s in _sentences(text):
                sentences.append(_Sentence(_clip(s, self.max_sentence_chars), speaker, len(sentences), False))

        artifact_block, omitted = self._artifact_block(order, last_seen)
        budget = self.max_chars - len(artifact_block) - len(_NOTES) - 2
        if omitted:
            budget = 0
        notes = self._select(sentences, budget)
        parts = [artifact_block] if artifact_block else []
        if omitted:
            parts.append(f"({omitted} older artifacts omitted)")
        if notes:
            parts.append(_NOTES)
            parts.extend(f"- {s.speaker}: {s.text}" for s in notes)
        return "\n".join(parts)

    def _artifact_block(
        self, order: list[tuple[str, str]], last_seen: dict[tuple[str, str], tuple[int, int]]
    ) -> tuple[str, int]:
        def render(keys: Iterable[tuple[str, str]]) -> str:
            by: dict[str, list[str]] = {c: [] for c in _LABELS}
            for category, value in keys:
                by[category].append(value)
            return "\n".join(
                f"{_LABELS[c]}: " + ", ".join("`" + v.replace("`", "\u02cb") + "`" for v in vs)
                for c, vs in by.items()
                if vs
            )

        block = render(order)
        if len(block) <= self.max_chars:
            return block, 0
        # keep the most recently mentioned artifacts that fit, in their original order
        ranked = [k for _, _, k in sorted(((last_seen[key], -k, k) for k, key in enumerate(order)), reverse=True)]
        room = self.max_chars - 40 - 15 * len(_LABELS)
        keep: set[int] = set()
        used = 0
        for k in ranked:
            cost = len(order[k][1]) + 4
            if used + cost > room:
                continue
            keep.add(k)
            used += cost
        return render(order[k] for k in sorted(keep)), len(order) - len(keep)

    def _select(self, sentences: list[_Sentence], budget: int) -> list[_Sentence]:
        if budget <= 0 or not sentences:
            return []
        tf: Counter[str] = Counter()
        words_of: list[set[str]] = []
        for s in sentences:
            words = content_words(s.text)
            words_of.append(words)
            tf.update(words)
        seen_text: set[str] = set()
        for s, words in zip(sentences, words_of):
            key = s.text.lower()
            if key in seen_text:
                s.score = -math.inf
                continue
            seen_text.add(key)
            score = sum(math.log1p(tf[w]) for w in words) / math.sqrt(1 + len(words))
            found = _extract_ordered(s.text, decisions=False)
            score += 1.5 * min(3, sum(len(v) for v in found.values()))
            if _DECISION.search(s.text):
                score += 10.0  # decisions and constraints go first: they are what a summary is for
            error = bool(_ERRORISH.search(s.text))
            if error:
                score += 2.0
            if s.speaker == "User":
                score += 1.5
            elif s.speaker == "Tool" and not error:
                score -= 1.5
            if len(words) < 3:
                score -= 1.5
            if s.prior:
                score += 0.5
            s.score = score
        ranked = sorted((s for s in sentences if s.score > -math.inf), key=lambda s: (-s.score, s.position))
        chosen: list[_Sentence] = []
        used = 0
        for s in ranked:
            cost = len(s.text) + len(s.speaker) + 5
            if used + cost > budget:
                continue
            chosen.append(s)
            used += cost
        return sorted(chosen, key=lambda s: s.position)

