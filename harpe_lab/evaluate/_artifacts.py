"""Artifact retention: the share of the full history's file paths, commands, numbers, URLs,
identifiers and decisions a context (or a summary) still holds."""

from __future__ import annotations

import math
import re
from typing import Any, Iterable, Mapping, Sequence

from ..conversation import Conversation
from ..messages import Rendered
from ..summarize import ARTIFACT_CATEGORIES, content_words, messages_text, ordered_artifacts

__all__ = ["artifact_retention"]


def _as_text(source: Any) -> str:
    if isinstance(source, Conversation):
        body = messages_text(source.messages())
        return source.system + "\n\n" + body if source.system else body
    if isinstance(source, (str, Rendered)):
        return messages_text(source)
    if isinstance(source, Iterable):
        return messages_text(list(source))
    raise TypeError(f"expected messages, a Rendered, a Conversation or a str, got {type(source).__name__}")


def _canon_number(s: str) -> str:
    return re.sub(r"\s+", "", s).lower()


class _Held:
    """A kept text, prepared once for many artifact lookups."""

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.split())
        found = ordered_artifacts(text, decisions=False)
        self.numbers = {_canon_number(n) for n in found["numbers"]}
        self._words: set[str] | None = None

    @property
    def words(self) -> set[str]:
        if self._words is None:
            self._words = content_words(self.text)
        return self._words

    def holds(self, category: str, value: str) -> bool:
        if value in self.text:
            return True
        if category == "numbers":
            return _canon_number(value) in self.numbers
        if category == "decisions":
            # paraphrase-tolerant: most of the sentence's content words are still there
            words = content_words(value)
            return bool(words) and len(words & self.words) >= 0.6 * len(words)
        return False


def _retention(full: Mapping[str, Sequence[str]], held: _Held) -> dict[str, float]:
    out: dict[str, float] = {}
    total = kept = 0
    for category in ARTIFACT_CATEGORIES:
        values = list(full[category])
        k = sum(held.holds(category, v) for v in values)
        out[category] = k / len(values) if values else math.nan
        total += len(values)
        kept += k
    out["all"] = kept / total if total else math.nan
    return out


def artifact_retention(full_history: Any, rendered: Any) -> dict[str, float]:
    """The share of the full history's artifacts (`harpe_lab.summarize.extract_artifacts`)
    that ``rendered`` still holds, per category of `ARTIFACT_CATEGORIES`, plus ``"all"``
    (over every artifact). NaN for a category the full history has none of.

    Both arguments may be messages, a `Rendered` request, a `Conversation` or a str (a
    summary, say). An artifact is held when its text occurs in ``rendered`` (whitespace
    normalised); numbers also match with the unit spacing changed (``512MB``); a decision
    sentence counts as held when 60% of its content words are present — a
    paraphrase-tolerant approximation.
    """
    full = ordered_artifacts(_as_text(full_history))
    return _retention(full, _Held(_as_text(rendered)))

