"""Passages prepared once (`Haystack`) and the verdict on one answer (`Finding`): the rules of
`harpe_lab.findable` applied in order."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from typing import Iterable, Sequence

from ._dates import _absolute_facts, _answer_date, _date_matches, _day, _relative_facts
from ._normalize import _content, _fold, _is_number, _tokens, _units_follow

__all__ = ["RECALL_THRESHOLD", "CHUNK_CHARS", "ANCHOR_WORDS", "Passage", "Finding", "Haystack", "findable"]

RECALL_THRESHOLD = 2 / 3
"""The share of an answer's content words one passage must hold for a ``words`` match
(rounded up: 1 of 1, 2 of 2, 2 of 3, 3 of 4, 4 of 5, 4 of 6, 6 of 9). Tuned on the labelled set
(tests/data/findable_labels.json): 3 of 4 found fewer answers without fewer false ones."""


@dataclass(frozen=True)
class Passage:
    """One message's text, the day it was said (None when unknown) and who said it."""

    text: str
    date: date | None = None
    speaker: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError(f"Passage.text must be a str, got {type(self.text).__name__}")
        if self.date is not None and not isinstance(self.date, date):
            raise TypeError(f"Passage.date must be a datetime.date or None, got {type(self.date).__name__}")


@dataclass(frozen=True)
class Finding:
    """The matcher's verdict on one answer."""

    found: bool
    """The answer is findable."""
    how: str
    """``"phrase"``, ``"date"``, ``"words"``, ``"items"``; ``"none"`` when not found;
    ``"unscorable"`` for yes/no, hedged and not-mentioned answers."""
    items: tuple[str, ...] = ()
    """The parts looked for (one for an answer that is not a list)."""
    missing: tuple[str, ...] = ()
    """The parts not found."""
    passages: tuple[int, ...] = field(default=(), repr=False)
    """Indexes of the passages where the parts were found."""

    @property
    def scorable(self) -> bool:
        """False when only a judgement can tell (see `Finding.how`)."""
        return self.how != "unscorable"


_UNSCORABLE = re.compile(
    r"^(?:(?:most )?likely|probably|possibly|maybe|perhaps|yes|no|not|none|n/?a|unknown|somewhat|"
    r"i don.?t know|information (?:not|is not)|(?:the )?information provided is not|not enough information|"
    r"you (?:did not|didn.?t|never) (?:mention|say)|there is no (?:information|mention))\b"
)
_LIST_SPLIT = re.compile(r"\s*(?:;|,|\.\s|\band\b|\bor\b|&|/|\n)\s*")


ANCHOR_WORDS = 2
"""How many of the question's content words (all, if it has fewer) must share a passage
chunk with an answer that is only a number or a date."""

CHUNK_CHARS = 400
"""Long passages (a tool's output, a whole file) are matched in chunks of about this many
characters — sentences or lines, each chunk overlapping the next by one — so an answer's
words, or a bare number and the question's words, must be near each other."""

_PIECES = re.compile(r"(?<=[.!?])\s+|\n+")


def _chunks(text: str) -> list[str]:
    if len(text) <= CHUNK_CHARS:
        return [text]
    pieces: list[str] = []
    for x in _PIECES.split(text):
        while x and len(x) > CHUNK_CHARS:  # one long line (a list of names, say): cut at a space
            cut = x.rfind(" ", 0, CHUNK_CHARS)
            cut = cut if cut > 0 else CHUNK_CHARS
            pieces.append(x[:cut])
            x = x[cut:]
        if x and x.strip():
            pieces.append(x)
    out: list[str] = []
    current: list[str] = []
    size = 0
    for piece in pieces:
        if current and size + len(piece) > CHUNK_CHARS:
            out.append(" ".join(current))
            current, size = [current[-1]], len(current[-1])
        current.append(piece)
        size += len(piece) + 1
    if current and (not out or len(current) > 1):
        out.append(" ".join(current))
    return out


# "2. Choose compatible fish": a list's numbering is not a number the text states
_LIST_MARKER = re.compile(r"(?m)^[ \t]*\d{1,2}[.)](?=[ \t])|(?<=[.!?:])[ \t]+\d{1,2}\.(?=[ \t]+[A-Z*])")


class _Prepared:
    """One chunk of a passage as the rules read it; read only, so shared by every haystack
    that holds the passage."""

    __slots__ = ("tokens", "joined", "stems", "numbers", "dates", "said")

    def __init__(self, p: Passage, text: str) -> None:
        self.tokens = _tokens(text)
        self.joined = f" {' '.join(self.tokens)} "
        self.stems = set(_content(self.tokens)) | set(_content(_tokens(p.speaker)))
        self.numbers = {t for t in self.tokens if _is_number(t)}
        folded = " ".join(_fold(text).split())
        facts = _absolute_facts(folded, p.date.year if p.date else None)
        if p.date is not None:
            facts |= _relative_facts(folded, p.date)
        self.dates = facts
        self.said = {_day(p.date)} if p.date is not None else set()


@lru_cache(maxsize=16_384)
def _prepare(p: Passage) -> tuple[_Prepared, ...]:
    # The haystacks of a replay's requests hold the same messages again and again (and those
    # of the other replays of the conversation too): each is prepared once.
    return tuple(_Prepared(p, chunk) for chunk in _chunks(_LIST_MARKER.sub(" ", p.text)))


class Haystack:
    """Passages prepared once for many `find` calls (the messages of one request, say).

    ``passages`` are `Passage` objects or plain strings (a string is a passage without a
    date or speaker)."""

    def __init__(self, passages: Iterable[Passage | str]) -> None:
        items = [Passage(p) if isinstance(p, str) else p for p in passages]
        bad = [p for p in items if not isinstance(p, Passage)]
        if bad:
            raise TypeError(f"passages must be Passage objects or str, got {type(bad[0]).__name__}")
        self.passages: tuple[Passage, ...] = tuple(items)
        self._prepared: list[_Prepared] = []
        self._owners: list[int] = []  # the passage of each prepared chunk
        for k, p in enumerate(items):
            chunks = _prepare(p)
            self._prepared += chunks
            self._owners += [k] * len(chunks)
        self._by_stem: dict[str, list[int]] = {}
        self._dated = [i for i, p in enumerate(self._prepared) if p.dates]
        for i, p in enumerate(self._prepared):
            for s in p.stems:
                self._by_stem.setdefault(s, []).append(i)
        self._cache: dict[tuple[str, str], Finding] = {}

    def __len__(self) -> int:
        return len(self.passages)

    # one part of an answer ---------------------------------------------------------------

    def _anchored(self, i: int, question: Sequence[str]) -> bool:
        if not question:
            return True
        stems = self._prepared[i].stems
        return sum(s in stems for s in question) >= min(ANCHOR_WORDS, len(question))

    def _find_part(self, part: str, question: Sequence[str], words: bool = True) -> tuple[str, int] | None:
        tokens = _tokens(part)
        if not tokens:
            return None
        content = _content(tokens)
        numbers = [t for t in tokens if _is_number(t)]
        bare = not content  # only numbers (and stop words): anchor on the question
        # a date
        want = _answer_date(part)
        if want is not None:
            for i in self._dated:
                if any(_date_matches(w, self._prepared[i].dates) for w in want) and self._anchored(i, question):
                    return "date", self._owners[i]
            # an event told on the day it happened ("I just launched…"): the passage's own
            # date, for a day or month answer, when the passage is about the question
            if question and all(w.kind in ("day", "month") for w in want):
                for i, p in enumerate(self._prepared):
                    if p.said and any(_date_matches(w, p.said) for w in want) and self._anchored(i, question):
                        return "date", self._owners[i]
        # word for word
        needle = f" {' '.join(tokens)} "
        if content:
            pool = set(self._by_stem.get(content[0], ()))
            for s in content[1:]:
                pool &= set(self._by_stem.get(s, ()))
            pool_list = sorted(pool)
        else:
            pool_list = range(len(self._prepared))
        for i in pool_list:
            p = self._prepared[i]
            if needle in p.joined and (not (bare or want) or self._anchored(i, question)):
                return "phrase", self._owners[i]
        if want is not None or not content or not words:
            return None
        # content-word recall
        need = max(1, math.ceil(RECALL_THRESHOLD * len(content) - 1e-9))
        hits: dict[int, int] = {}
        for s in content:
            for i in self._by_stem.get(s, ()):
                hits[i] = hits.get(i, 0) + 1
        for i in sorted(hits, key=lambda i: (-hits[i], i)):
            if hits[i] < need:
                break
            if all(n in self._prepared[i].numbers for n in numbers) and _units_follow(tokens, self._prepared[i].tokens):
                return "words", self._owners[i]
        return None

    def find(self, answer: object, question: str = "") -> Finding:
        """Is ``answer`` findable in these passages? ``question``, when given, anchors
        answers that are only a number or a date (see the module docstring)."""
        answer = " ".join(str(answer).split())
        key = (answer, question)
        if key in self._cache:
            return self._cache[key]
        finding = self._find(answer, question)
        self._cache[key] = finding
        return finding

    def _find(self, answer: str, question: str) -> Finding:
        folded = _fold(answer).strip(" .")
        if not folded or _UNSCORABLE.match(folded) or "not mentioned" in folded:
            return Finding(False, "unscorable", (answer,), (answer,))
        a_norm, q_norm = " ".join(_tokens(answer)), f" {' '.join(_tokens(question))} "
        if question and a_norm and f" {a_norm} " in q_norm:
            # "Which did I get first, A or B?" -> "A": the question holds the answer; only a judge can tell
            return Finding(False, "unscorable", (answer,), (answer,))
        q = [s for s in _content(_tokens(question)) if s not in {"when", "date", "time", "day", "year", "month"}]
        # parentheses hold asides and alternatives: look for the answer without them first
        bare = re.sub(r"\s*\([^)]*\)", "", answer).strip() or answer
        parts = [p for p in (x.strip(" .") for x in _LIST_SPLIT.split(bare)) if p and _tokens(p)]
        parts = [p for p in parts if _content(_tokens(p)) or any(_is_number(t) for t in _tokens(p))]
        for text in dict.fromkeys((answer, bare)):
            # a list is found whole only word for word: recall over its words could skip an item
            hit = self._find_part(text, q, words=len(parts) < 2)
            if hit:
                return Finding(True, hit[0], (text,), (), (hit[1],))
        if len(parts) < 2:
            return Finding(False, "none", (bare,), (bare,))
        found, missing = [], []
        for p in parts:
            hit = self._find_part(p, q)
            if hit:
                found.append(hit[1])
            else:
                missing.append(p)
        return Finding(not missing, "items" if not missing else "none", tuple(parts), tuple(missing), tuple(found))


def findable(answer: object, passages: str | Passage | Iterable[Passage | str], *, question: str = "") -> Finding:
    """Is ``answer`` findable in ``passages`` (a str, a `Passage` or several)? For many
    answers against the same passages, build one `Haystack` and call `Haystack.find`."""
    if isinstance(passages, (str, Passage)):
        passages = [passages]
    return Haystack(passages).find(answer, question)
