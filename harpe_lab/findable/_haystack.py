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
# a comma between digits ("$1,300") separates thousands, not items
_LIST_SPLIT = re.compile(r"\s*(?:;|(?<!\d),|,(?!\d{3}\b)|\.\s|\band\b|\bor\b|&|/|\n)\s*")

_SPAN = r"(?:days|weeks|months|years|hours|minutes)"
_MONTH = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
          r"|the month of \w+)")

# Questions whose answer no text states, whatever the answer's words: only a judge can tell.
_JUDGED_QUESTIONS = (
    # an order of events ("Which happened first, A or B?", "What is the order of …"): the
    # answer names events the text holds, but their order is inferred from their dates
    re.compile(r"\b(?:the order of|in (?:what|which|the) order|order (?:in which|from)"
               r"|from (?:earliest|first|oldest) to (?:latest|last|newest|most recent))\b"),
    re.compile(r"^(?:which|who|what|did|was|were|do|does|have|had)\b(?=.*\bor\b)"
               r"(?=.*\b(?:first|earlier|earliest|later|latest|sooner|more recently)\b)"),
    # a difference or the time elapsed between two events ("how much more …", "how many years
    # older …", "how many days passed between …", "how many days before I did A did I do B",
    # "how many pages do I have left"): a value computed from two stated ones, which a text
    # states only by coincidence ("$6" the train fare, for "how much more was the $12 taxi")
    re.compile(r"\bhow (?:much|many)(?: \w+)? (?:more|less|fewer|longer|shorter|older|younger|earlier|later"
               r"|faster|slower|cheaper|bigger|smaller|higher|lower|further|farther)\b"
               r"|\bdifference (?:in|of) (?:price|cost|age|time|days|weeks|months|years|hours|the number)\b"
               r"|\b(?:days|weeks|months|years|time) (?:had |have |has )?passed\b|\bpassed between\b"
               r"|\bhow long (?:had|have|has) (?:i|you|we|they|he|she|it)\b[^?]*\bwhen\b"
               rf"|\bhow many {_SPAN}(?: ago)? (?:had|have|has|did) (?:i|you|we|they|he|she|it)\b[^?]*\bwhen\b"
               r"|\bhow (?:long|many \w+)\b[^?]*\bbetween\b[^?]*\band\b"
               rf"|\bhow (?:long|many {_SPAN}) (?:before|after)\b"
               # "How many weeks ago did I …?": counted back from the day the question is asked,
               # which no passage is said on ("three weeks ago" said a month earlier is another day)
               rf"|^how many {_SPAN} ago\b"
               rf"|\bhow (?:long|many {_SPAN}) did (?:i|you|we|they|he|she)\b[^?]*\b(?:before|after|until)"
               r" (?:i|you|we|they|he|she|my|your|his|her|their)\b"
               rf"|\bhow many {_SPAN} did it take\b|\bhow long did it take\b[^?]*\b(?:after|since|from)\b"
               r"|^how (?:many|much)\b[^?]*\b(?:(?:have|has|had) left|left to|remaining)\b"
               r"|^how much\b[^?]*\bsave\b[^?]*\b(?:by|instead of|compared|than|rather)\b"),
    # a count or a sum over what several places tell ("… in total", "the total number of …",
    # "How many tanks …, including the one …", "How long … A and B combined", "How many
    # different kinds …", "How many A or B …", "How many … of A and B", "How many … in March /
    # in the past month / this year / recently"): the text states the items one by
    # one, and the number only by coincidence ("3" in "Domino's three times last week" for
    # "how many types of food delivery services"; "two" of "two weeks ago" for "how many
    # dogs"); counting them is a judgement, not a word match
    re.compile(r"^how (?:many|much|long)\b[^?]*\b(?:in total|total|altogether|combined|in all|all together|both"
               r"|all (?:the|my|of)|across|including)\b"
               r"|\bthe (?:total|sum|combined) (?:number|amount|time|distance|cost|price|count|of)\b"),
    re.compile(r"^how many (?:different|distinct|separate|unique|kinds?|types?|sorts?)\b"
               r"|^how many\b[^?]*\b\w+,? or\b"
               r"|^how (?:many|much)\b[^?]*\b\w+ and \w+"),
    re.compile(rf"^how (?:many|much)\b[^?]*\b(?:(?:in|over|during) the (?:past|last)\b|recently|lately"
               rf"|this (?:year|month|week|season|summer|spring|fall|autumn|winter)\b|in {_MONTH}\b"
               rf"|in (?:19|20)\d\d\b|from {_MONTH} to\b)"),
    # an order picked without alternatives ("Which streaming service did I start using most
    # recently?", "the date of the first BBQ in June"): which one is first or last is read off
    # the dates of several
    re.compile(r"^(?:which|what|who|where)\b[^?]*\b(?:did|do|have|had) \w+\b[^?]*"
               r"\b(?:most recently|first|last|earliest|latest)\s*\??$"),
    re.compile(r"\b(?:the|my) (?:first|last|earliest|latest|second|third)\b"
               # (not a date: "the last week of August", "the first weekend in May")
               r"(?! (?:week|weekend|day|month|year|time|half|quarter|few)s?\b)[^?,;]{1,60}?\b(?:in|during|over|of)"
               rf" (?:{_MONTH}|the (?:past|last|previous)\b|this\b|last\b|(?:19|20)\d\d\b)"),
    # a comparison that picks the greatest or least of several ("Which grocery store did I
    # spend the most money at?", "Which airline did I fly with the most?"): each amount or
    # count is stated, the winner is computed from them. Not "the most popular" (a quality
    # one text may state), nor what the assistant said ("… you recommended …")
    re.compile(r"^(?![^?]*\byou\b)(?:which|who|whom|what (?!(?:is|was|are|were|did|do|does|have|has|had)\b)\w+"
               r"(?: \w+)? (?:did|do|does|have|has|had|was|were|is|are))\b[^?]*"
               r"\b(?:the (?:most|least)(?! \w+(?:ful|ous|ive|ble|ic|al|ant|ent|ing|ed|ular|ar)\b)"
               r"|the (?:fewest|largest|biggest|highest|lowest|smallest|greatest|longest|shortest|cheapest)"
               r"|most (?:often|frequently))\b"),
    # a share of a whole ("What percentage of the leadership positions …"): computed from the
    # part and the whole, each stated apart
    re.compile(r"^what (?:percentage|percent|proportion|fraction|share) of\b"),
    # an inference ("Would she …?", "What might his degree be?", "… likely …"): LoCoMo's
    # answers to these are judgements even when they name something the text mentions
    re.compile(r"^would (?!you\b)|\bwould\b[^?]*\blikely\b|\blikely to be\b"
               r"|^what\b[^?]*\bmight\b(?! (?:i|you)\b)"),
)


# a time of day as an answer states it: "2 am", "6:30 pm", "14:30" (tokens: "2 am", "6:30 pm")
_CLOCK = re.compile(r"\d{1,2}(?::\d\d)?(?: (?:am|pm|p m))|\d{1,2}:\d\d")

_NUMERIC_DATE = re.compile(r"\b\d{1,4}[/-]\d{1,2}(?:[/-]\d{1,4})?\b")

_URL = re.compile(r"https?://\S+|www\.\S+")
_URL_MASK = re.compile(r"url(\d+)url")

_FRAMING = re.compile(
    r"^(?:(?:previously|currently|now|nowadays|initially|originally|at first|later|then|first|second|finally"
    r"|lastly|also|so|in the past|these days|before|after that)\s*|according to\b.*)$"
)

_RESPELL_MIN = 7
"""An answer's word this long or longer that no passage holds may be a passage's word with
one letter dropped (see `Haystack._respell`); shorter ones are too often other words."""

ANCHOR_WORDS = 2
"""How many of the question's content words (all, if it has fewer) must share a passage
chunk with an answer that is only a number or a date."""

CHUNK_CHARS = 400
"""Long passages (a tool's output, a whole file) are matched in chunks of about this many
characters — sentences or lines, each chunk overlapping the next by one — so an answer's
words, or a bare number and the question's words, must be near each other."""

# LoCoMo's shared photos, "[shares a photo: a photo of a woman …]": a caption describes an
# image in words of its own (woman, group, table, people), so an answer's words must all be
# in what was said or all in the caption — "transgender" said and "woman" in a caption do not
# make "transgender woman". (A date or number said is still anchored by the caption's words.)
_CAPTION = re.compile(r"(?=\[shares a photo:)")

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
    that holds the passage. ``text`` is the chunk without a list's numbering; ``raw`` the whole
    passage with it (when it has any), for answers that quote the numbering with words ("28. Kg3")."""

    __slots__ = ("tokens", "joined", "raw", "stems", "parts", "numbers", "dates", "said")

    def __init__(self, p: Passage, text: str, raw: str) -> None:
        self.tokens = _tokens(text)
        self.joined = f" {' '.join(self.tokens)} "
        self.raw = raw  # the whole passage's tokens, numbering kept: one string shared by its chunks
        speaker = set(_content(_tokens(p.speaker)))
        self.stems = set(_content(self.tokens)) | speaker
        # what was said and the caption of a photo shared with it, each with the speaker
        pieces = _CAPTION.split(text)
        self.parts = (self.stems,) if len(pieces) < 2 else tuple(
            set(_content(_tokens(x))) | speaker for x in pieces if x.strip())
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
    stripped = _LIST_MARKER.sub(" ", p.text)
    raw = f" {' '.join(_tokens(p.text))} " if stripped != p.text else ""
    return tuple(_Prepared(p, chunk, raw) for chunk in _chunks(stripped))


# The answer side is the same for every haystack an answer is looked for in (each request of
# a replay): what depends on the answer and the question alone is computed once.


@lru_cache(maxsize=16_384)
def _part_words(part: str) -> tuple[tuple[str, ...], frozenset | None]:
    """A part of an answer: its tokens, and the date it is (None when it is not a date)."""
    want = _answer_date(part)
    return tuple(_tokens(part)), (frozenset(want) if want is not None else None)


@lru_cache(maxsize=16_384)
def _content_of(tokens: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(_content(tokens))


@lru_cache(maxsize=4_096)
def _one_letter_more(word: str) -> tuple[tuple[str, str], ...]:
    """Each word ``word`` is with one letter dropped, and its stem (see `Haystack._respell`)."""
    out = {}
    for k in range(len(word) + 1):
        for c in "abcdefghijklmnopqrstuvwxyz":
            w = word[:k] + c + word[k:]
            out[w] = _content([w])[0]
    return tuple(out.items())


@dataclass(frozen=True)
class _Plan:
    """How an answer to a question is looked for: ``judged`` when no text can tell, else the
    question's anchor words, the answer's texts to look for whole, and its list items."""

    judged: bool
    question: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()
    counted: tuple[str, ...] = ()
    """What a "How many …?" question counts ("dogs" of "How many dogs has she adopted?"),
    as content words: a bare number answer must count it, not measure a time (see `_counts_it`)."""
    occasion: tuple[str, ...] = ()
    """The holiday a question picks its day by ("on Valentine's Day"), as content words: the
    passage that holds the answer must name it (see `_occasion`)."""


# words that ask for a date or time rather than say what happened: never anchors (stemmed, as
# the question's words are: "time" is "tim")
_WHEN_WORDS = frozenset(_content("when date time day year month".split()))


@lru_cache(maxsize=8_192)
def _plan(answer: str, question: str) -> _Plan:
    folded = _fold(answer).strip(" .")
    if not folded or _UNSCORABLE.match(folded) or "not mentioned" in folded:
        return _Plan(True)
    # a date written with numbers ("the 7/22 trip") does not give away a number answer ("7")
    a_norm, q_norm = " ".join(_tokens(answer)), f" {' '.join(_tokens(_NUMERIC_DATE.sub(' ', question)))} "
    if question and a_norm and f" {a_norm} " in q_norm:
        # "Which did I get first, A or B?" -> "A": the question holds the answer; only a judge can tell
        return _Plan(True)
    folded_q = " ".join(_fold(question).split())
    if any(p.search(folded_q) for p in _JUDGED_QUESTIONS):
        return _Plan(True)
    q = tuple(s for s in _content(_tokens(question)) if s not in _WHEN_WORDS)
    # parentheses hold asides and alternatives: look for the answer without them first
    bare = re.sub(r"\s*\([^)]*\)", "", answer).strip() or answer
    # a URL's slashes and dots do not separate items: split around it, keep it whole
    urls = _URL.findall(bare)
    masked = _URL.sub(lambda m: f" url{urls.index(m.group(0))}url ", bare)
    pieces = (x.strip(" .") for x in _LIST_SPLIT.split(masked))
    parts = [_URL_MASK.sub(lambda m: urls[int(m.group(1))], p) for p in pieces if p and _tokens(p)]
    parts = [p for p in parts if _content(_tokens(p)) or any(_is_number(t) for t in _tokens(p))]
    # "Previously, …; currently, …", "According to Borges, …": words that frame the items
    # of an answer are not items of it
    parts = [p for p in parts if not _FRAMING.match(_fold(p))] or parts
    texts = tuple(dict.fromkeys((answer, bare)))
    return _Plan(False, q, texts, tuple(parts), _counted(question), _occasion(folded_q))


# Holidays a question may pick a day by. Which day one fell on is outside knowledge (the
# sessions carry dates, not feasts), so only a passage that names the holiday says what
# happened on it: "my American Airlines flight" said on 14 February is not "the airline I
# flew with on Valentine's Day".
_HOLIDAY = re.compile(
    r"\b(?:valentine|christmas|xmas|thanksgiving|halloween|easter|hanukkah|chanukah|diwali|passover|ramadan"
    r"|new year|independence day|memorial day|labor day|mother.?s day|father.?s day|(?:st\.? )?patrick.?s day)"
)


def _occasion(folded_question: str) -> tuple[str, ...]:
    """The content words of the holiday ``folded_question`` names ("valentin" of "What did I
    do on Valentine's Day?"), "day" and "s" left out; () when it names none."""
    m = _HOLIDAY.search(folded_question)
    if not m:
        return ()
    return tuple(w for w in _content(_tokens(m.group(0))) if w not in {"day", "st"})


# the words that end what "How many …" counts: its verb, or the subject before the verb
_COUNT_END = frozenset("did do does have has had is are was were will would can could should am i you he she we "
                       "they it there".split())  # fmt: skip


def _counted(question: str) -> tuple[str, ...]:
    """The content words of what a "How many …?" question counts, up to its verb: ("dog",)
    for "How many dogs has Maria adopted?"; () for any other question."""
    tokens = _tokens(question)
    for k in range(len(tokens) - 1):
        if tokens[k] == "how" and tokens[k + 1] == "many":
            span = []
            for t in tokens[k + 2 : k + 10]:
                if t in _COUNT_END:
                    break
                span.append(t)
            return tuple(_content(span))
    return ()


# what a number measures or dates rather than counts: a time span, a clock time, a frequency
_MEASURES = frozenset(_content("second minute hour day night week weekend month year decade time pm".split()))
_MONTH_WORDS = frozenset("january february march april may june july august september october november december "
                         "jan feb mar apr jun jul aug sep sept oct nov dec".split())  # fmt: skip


def _counts_it(numbers: Sequence[str], tokens: Sequence[str], counted: Sequence[str]) -> bool:
    """Each number of a bare answer to "How many N …?" stands somewhere in ``tokens`` as a
    count, not as the measure of something else: "two weeks ago" does not count dogs, nor
    "March 2" bikes (a number followed by a span of time, "times" or "am"/"pm", or a date's
    day, unless N is that span: "How many days …" is answered by "5 days"). N itself need not
    follow the number ("Mummies (4)", "page 220", "four different ones")."""
    if not counted:
        return True
    other = _MEASURES - set(counted)

    def counts(j: int) -> bool:
        after = tokens[j + 1] if j + 1 < len(tokens) else ""
        unit = _content([after])
        if after == "am" or (unit and unit[0] in other):
            return False
        return after not in _MONTH_WORDS and (j == 0 or tokens[j - 1] not in _MONTH_WORDS)

    return all(any(t == n and counts(j) for j, t in enumerate(tokens)) for n in numbers)


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

    def _anchored(self, i: int, question: Sequence[str], least: int = ANCHOR_WORDS) -> bool:
        if not question:
            return True
        stems = self._prepared[i].stems
        return sum(s in stems for s in question) >= min(least, len(question))

    def _respell(self, tokens: tuple[str, ...]) -> tuple[str, ...]:
        """The answer's words as the passages spell them, where the answer drops a letter of
        a long word no passage holds as written ("metoring", "funraiser", "educaton": typos
        of the answer keys). Only when one word, and one only, of the passages fits."""
        out = list(tokens)
        for k, t in enumerate(tokens):
            if len(t) >= _RESPELL_MIN and t.isalpha():
                stem = _content_of((t,))
                if stem and stem[0] not in self._by_stem:
                    fits = {s: w for w, s in _one_letter_more(t) if s in self._by_stem}
                    if len(fits) == 1:
                        out[k] = next(iter(fits.values()))
        return tuple(out)

    def _names(self, i: int, occasion: Sequence[str]) -> bool:
        stems = self._prepared[i].stems
        return all(s in stems for s in occasion)

    def _find_part(
        self,
        part: str,
        question: Sequence[str],
        words: bool = True,
        counted: Sequence[str] = (),
        occasion: Sequence[str] = (),
    ) -> tuple[str, int] | None:
        tokens, want = _part_words(part)
        tokens = self._respell(tokens)
        if not tokens:
            return None
        content = _content_of(tokens)
        numbers = [t for t in tokens if _is_number(t)]
        # only numbers (and stop words): anchor on the question. A clock time ("2 AM", "6:30
        # pm") is a number with its unit, a narrower claim than a bare count: one question word
        # near it is enough (the others may pick the day, in another passage: "the day before
        # my doctor's appointment")
        clock = bool(_CLOCK.fullmatch(" ".join(tokens)))
        bare = not content or clock
        least = 1 if clock else ANCHOR_WORDS
        # a date
        want = _answer_date(part)
        if want is not None:
            for i in self._dated:
                if (any(_date_matches(w, self._prepared[i].dates) for w in want) and self._anchored(i, question)
                        and self._names(i, occasion)):
                    return "date", self._owners[i]
            # an event told on the day it happened ("I just launched…"): the passage's own
            # date, for a day or month answer, when the passage is about the question
            if question and all(w.kind in ("day", "month") for w in want):
                for i, p in enumerate(self._prepared):
                    if (p.said and any(_date_matches(w, p.said) for w in want) and self._anchored(i, question)
                            and self._names(i, occasion)):
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
            if (needle in p.joined or (content and numbers and needle in p.raw)) and (
                not (bare or want) or self._anchored(i, question, least)
            ) and (not bare or _counts_it(numbers, p.tokens, counted)) and self._names(i, occasion):
                return "phrase", self._owners[i]
        if want is not None or bare or not words:
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
            p = self._prepared[i]
            if len(p.parts) > 1 and max(sum(s in piece for s in content) for piece in p.parts) < need:
                continue
            if all(n in p.numbers for n in numbers) and _units_follow(tokens, p.tokens) and self._names(
                i, occasion
            ):
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
        plan = _plan(answer, question)
        if plan.judged:
            return Finding(False, "unscorable", (answer,), (answer,))
        q, parts = plan.question, plan.parts
        for text in plan.texts:
            # a list is found whole only word for word: recall over its words could skip an item
            hit = self._find_part(text, q, words=len(parts) < 2, counted=plan.counted, occasion=plan.occasion)
            if hit:
                return Finding(True, hit[0], (text,), (), (hit[1],))
        if len(parts) < 2:
            bare = plan.texts[-1]  # without its parentheses
            return Finding(False, "none", (bare,), (bare,))
        found, missing = [], []
        for p in parts:
            hit = self._find_part(p, q, occasion=plan.occasion)
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
