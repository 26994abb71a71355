"""Is a probe's answer findable in a text? An offline matcher for what real answers look like.

`findable(answer, passages, question=...)` → `Finding`. A *passage* is one message's text,
with the date it was said (LoCoMo and LongMemEval sessions carry one) and the speaker's name
when known. `Haystack` prepares many passages once for many answers.

How an answer is located, in order (the first that succeeds decides):

==============  ===========================================================================
``phrase``      the normalised answer occurs word for word in one passage. Normalised:
                accents folded, lower case, punctuation and the articles a/an/the dropped,
                number words written as digits ("two" → 2, "twenty-five" → 25),
                thousands separators and ordinal suffixes dropped ("1,000" → 1000, "7th" → 7).
``date``        the answer is a date and a passage states it: absolutely ("7 May 2023",
                "May 7, 2023", "2023/05/07", "May 2023", "2022") or relative to the
                passage's own date ("yesterday", "last Friday", "last week", "this
                month", "last year", "three days ago"). LoCoMo's relative answers ("the
                week before 9 June 2023", "the Sunday before 25 May 2023", "the weekend
                before …", "two weeks before …", "the week of …") match the same relative
                phrase said on that date, or the day itself. A month answer matches a day
                in that month; a year answer, any stated date in that year.
``words``       one passage (a chunk of `CHUNK_CHARS` of a long one) holds every number of
                the answer and at least
                `RECALL_THRESHOLD` of its content words (stop words dropped, a light
                suffix stemmer applied; the passage's speaker name counts as a word of it).
``items``       a list-shaped answer ("cooking, skiing and hiking") whose every item is
                found by one of the rules above, each in any passage.
==============  ===========================================================================

Guards for precision:

* an answer that is only numbers or only a date also needs `ANCHOR_WORDS` (2) of the
  question's content words (when one is given) in the same chunk of `CHUNK_CHARS`, so "3" is
  not found in every text with a 3, nor in a numbered file listing that mentions a test;
* a number followed by a unit ("5 months ago") needs that unit within three words after
  the same number in the passage, and a list's numbering ("2. Choose…") is not a number;
* an event told on the day it happened ("I just launched the campaign") matches a day or
  month answer through the passage's own date — again only with the question's words in it;
* yes/no and hedged answers ("Likely yes", "No; …"), "not mentioned" and "the information
  provided is not enough" answers, and answers the question gives away ("Which came
  first, A or B?" → "A") are *unscorable* (`Finding.scorable` is False): whether the text
  supports them is a judgement, for a model judge.

Measured on the labelled set (`tests/data/findable_labels.json`: probes from the LoCoMo and
LongMemEval samples, each labelled by reading its evidence turns): precision 0.976, recall
0.882 on the 273 the rules were tuned on; precision 0.939, recall 0.885 on 75 held out,
labelled after the matcher was frozen (`tests/test_findable.py` pins precision ≥ 0.9 and
recall ≥ 0.8 on each). Over a whole conversation rather than the evidence, it finds 12 of
the 77 labelled answers that are judgements or computed (sums, counts, differences) —
coincidences such as "3" in "three times" — and 218 of the 238 labelled findable.

Pure: no imports beyond the standard library; text in, verdict out.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from typing import Iterable, Sequence

__all__ = [
    "RECALL_THRESHOLD",
    "CHUNK_CHARS",
    "ANCHOR_WORDS",
    "Passage",
    "Finding",
    "Haystack",
    "findable",
    "parse_timestamp",
    "normalize_text",
]

RECALL_THRESHOLD = 2 / 3
"""The share of an answer's content words one passage must hold for a ``words`` match
(rounded up: 1 of 1, 2 of 2, 2 of 3, 3 of 4, 4 of 5, 4 of 6, 6 of 9). Tuned on the labelled set
(tests/data/findable_labels.json): 3 of 4 found fewer answers without fewer false ones."""

# --- normalisation -----------------------------------------------------------------------

_NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "twice": 2, "once": 1, "dozen": 12, "hundred": 100, "thousand": 1000,
}  # fmt: skip
_TENS = {"twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
_ARTICLES = {"a", "an", "the"}
_TOKEN = re.compile(r"[^\W_]+(?:[.,:]\d+)*%?")
_NUMBER = re.compile(r"\d+(?:[.,:]\d+)*%?")
_NUMBER_UNIT = re.compile(r"(\d+(?:\.\d+)?)([a-z]{1,3})")

_STOPWORDS = frozenset("""
about above after again against all also am and any are as at be because been before being below between
both but by can could did do does doing don down during each few for from further had has have having he her
here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not
now of off on once only or other our ours ourselves out over own same she should so some such than that their
theirs them themselves then there these they this those through to too under until up very was we were what
when where which while who whom why will with would you your yours yourself yourselves s t ll re ve d m
really quite lot lots much many thing things something get got also like yes yeah oh well
""".split())  # fmt: skip


def _fold(text: str) -> str:
    s = unicodedata.normalize("NFKD", str(text))
    return "".join(c for c in s if not unicodedata.combining(c)).lower()


def _canon_number(tok: str) -> str:
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+", tok):
        tok = tok.replace(",", "")
    if re.fullmatch(r"\d+\.\d+", tok):
        tok = tok.rstrip("0").rstrip(".") if "." in tok else tok
    if tok.isdigit():
        tok = str(int(tok))
    return tok


def _tokens(text: str) -> list[str]:
    """Folded tokens: digits canonical, number words as digits, articles dropped."""
    raw: list[str] = []
    for t in _TOKEN.findall(_fold(text)):
        if t[0].isdigit() and not _NUMBER.fullmatch(t):
            m = _NUMBER_UNIT.fullmatch(t)
            if m:  # "512mb", "7th", "1.5s": a number and its unit; a hash ("3b5745…") stays whole
                raw.extend(m.groups())
                continue
        raw.append(t)
    out: list[str] = []
    i = 0
    while i < len(raw):
        t = raw[i]
        if _NUMBER.fullmatch(t):
            # "7%" and "7 percent" are one token, never the bare 7; "7th", "3rd": the suffix goes
            pct = t.endswith("%")
            t = t.rstrip("%")
            if i + 1 < len(raw) and raw[i + 1] in ("percent", "per cent", "pct"):
                pct = True
                i += 1
            out.append(_canon_number(t) + ("%" if pct else ""))
            if i + 1 < len(raw) and raw[i + 1] in ("st", "nd", "rd", "th", "s"):
                i += 1
        elif t in _NUMBER_WORDS:
            n = _NUMBER_WORDS[t]
            if t in _TENS and i + 1 < len(raw) and raw[i + 1] in _NUMBER_WORDS and _NUMBER_WORDS[raw[i + 1]] < 10:
                n += _NUMBER_WORDS[raw[i + 1]]
                i += 1
            out.append(str(n))
        elif t not in _ARTICLES:
            out.append(t)
        i += 1
    return out


def normalize_text(text: str) -> str:
    """The matcher's normal form of ``text``: folded tokens joined by single spaces."""
    return " ".join(_tokens(text))


def _stem(w: str) -> str:
    """A light suffix stemmer, the same on both sides: plurals, -ing, -ed, a final e."""
    if len(w) > 4 and w.endswith("ies"):
        w = w[:-3] + "y"
    elif len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    for suffix in ("ing", "ed"):
        if len(w) > len(suffix) + 2 and w.endswith(suffix):
            w = w[: -len(suffix)]
            if len(w) > 2 and w[-1] == w[-2] and w[-1] not in "lsz":
                w = w[:-1]
            break
    if len(w) > 3 and w.endswith("e"):
        w = w[:-1]
    if len(w) > 3 and w.endswith("y"):
        w = w[:-1] + "i"
    return w


def _is_number(tok: str) -> bool:
    return bool(_NUMBER.fullmatch(tok))


def _units_follow(answer: list[str], passage: list[str]) -> bool:
    """Every number of the answer followed by a word ("5 months") is followed by that word's
    stem within three tokens somewhere in the passage, so "5-day trip … two months ago" does
    not hold "5 months ago"."""
    for k, t in enumerate(answer[:-1]):
        nxt = answer[k + 1]
        if not _is_number(t) or _is_number(nxt) or nxt in _STOPWORDS:
            continue
        unit = _stem(nxt)
        if not any(p == t and unit in {_stem(x) for x in passage[j + 1 : j + 4]} for j, p in enumerate(passage)):
            return False
    return True


def _content(tokens: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for t in tokens:
        if _is_number(t) or t in _STOPWORDS or len(t) < 2:
            continue
        s = _stem(t)
        if s not in seen:
            seen.append(s)
    return seen


# --- dates -------------------------------------------------------------------------------

_MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december".split())}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
_MON = (
    r"(?P<mon>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_COUNT = r"(?P<n>\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|a couple of|a few|couple of)"

_ABS_PATTERNS = [
    re.compile(rf"\b{_YEAR}[-/.](?P<m>[01]?\d)[-/.](?P<day>[0-3]?\d)\b"),
    re.compile(rf"\b{_DAY}(?:\s+of)?\s*[\s.,]\s*{_MON}\b\.?(?:[\s,.]*{_YEAR}\b)?"),
    re.compile(rf"\b{_MON}\.?\s+{_DAY}\b(?!\s*(?:am|pm|:))(?:[\s,.]*{_YEAR}\b)?"),
    re.compile(rf"\b{_MON}\b[\s,.]*(?:of\s+)?{_YEAR}\b"),
    re.compile(rf"\b{_YEAR}\b"),
]
# a bare month name ("in May") counts only after a preposition; "may" is also a verb
_BARE_MONTH = re.compile(rf"\b(?P<pre>in|of|since|during|last|this|next|early|late|mid|until|by|from)[\s-]+{_MON}\b")


@dataclass(frozen=True, order=True)
class _DateFact:
    """One date a text states: ``kind`` is "day" (y, m, d), "month" (y, m, 0), "year"
    (y, 0, 0), or a relative span ("week_before", "week_of", "weekend_before",
    "weeks_before:N", "weekends_before:N") anchored at the date (y, m, d) it was said on."""

    kind: str
    y: int
    m: int = 0
    d: int = 0


def _day(d: date) -> _DateFact:
    return _DateFact("day", d.year, d.month, d.day)


def _month_shift(y: int, m: int, k: int) -> tuple[int, int]:
    i = y * 12 + (m - 1) + k
    return i // 12, i % 12 + 1


def _count(word: str) -> int | None:
    word = word.strip()
    if word.isdigit():
        return int(word)
    if word in ("a", "an", "one"):
        return 1
    if word in ("a couple of", "couple of"):
        return 2
    if word == "a few":
        return None
    return _NUMBER_WORDS.get(word)


def _previous_weekday(anchor: date, weekday: int) -> date:
    delta = (anchor.weekday() - weekday) % 7 or 7
    return anchor - timedelta(days=delta)


def _safe_date(y: int, m: int, d: int) -> date | None:
    try:
        return date(y, m, d)
    except ValueError:
        return None


def _absolute_facts(folded: str, default_year: int | None) -> set[_DateFact]:
    facts: set[_DateFact] = set()
    taken: list[tuple[int, int]] = []

    def free(m: re.Match) -> bool:
        return all(m.end() <= a or m.start() >= b for a, b in taken)

    for k, pat in enumerate(_ABS_PATTERNS):
        for m in pat.finditer(folded):
            if not free(m):
                continue
            g = m.groupdict()
            year = int(g["year"]) if g.get("year") else None
            if k == 0:
                d = _safe_date(int(g["year"]), int(g["m"]), int(g["day"]))
                if d:
                    facts.add(_day(d))
            elif k in (1, 2):
                mon = _MONTHS[g["mon"]]
                y = year if year is not None else default_year
                day = int(g["day"])
                if y is None:
                    if 1 <= day <= 31:
                        facts.add(_DateFact("day", 0, mon, day))
                else:
                    d = _safe_date(y, mon, day)
                    if d:
                        facts.add(_day(d))
            elif k == 3:
                facts.add(_DateFact("month", int(g["year"]), _MONTHS[g["mon"]]))
            else:
                facts.add(_DateFact("year", int(g["year"])))
            taken.append((m.start(), m.end()))
    for m in _BARE_MONTH.finditer(folded):
        if not free(m) or m.group("pre") in ("last", "this", "next"):
            continue
        if default_year is not None:
            facts.add(_DateFact("month", default_year, _MONTHS[m.group("mon")]))
        else:
            facts.add(_DateFact("month", 0, _MONTHS[m.group("mon")]))
    return facts


_REL_DAY = re.compile(
    r"\b(?:(?P<today>today|tonight|this morning|this afternoon|this evening|earlier today)"
    r"|(?P<yesterday>yesterday|last night)|(?P<tomorrow>tomorrow)"
    rf"|{_COUNT}\s+days?\s+ago"
    r"|(?:last|this past|past|on|this)\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?P<lastweek>last week|a week ago|past week|previous week)|(?P<thisweek>this week)"
    r"|(?P<lastweekend>last weekend|this past weekend|past weekend|this weekend)"
    rf"|{_COUNT.replace('<n>', '<nw>')}\s+weeks?\s+ago"
    rf"|{_COUNT.replace('<n>', '<nwe>')}\s+weekends?\s+ago"
    r"|(?P<lastmonth>last month|a month ago|past month|previous month)|(?P<thismonth>this month)"
    r"|(?P<nextmonth>next month)"
    r"|(?P<lastyear>last year|a year ago|previous year)|(?P<thisyear>this year)|(?P<nextyear>next year)"
    rf"|(?:about\s+|around\s+|almost\s+|over\s+)?{_COUNT.replace('<n>', '<ny>')}\s+years?\s+ago"
    rf"|{_COUNT.replace('<n>', '<nm>')}\s+months?\s+ago"
    r")\b"
)


def _relative_facts(folded: str, said: date) -> set[_DateFact]:
    facts: set[_DateFact] = set()
    y, mo, dd = said.year, said.month, said.day
    for m in _REL_DAY.finditer(folded):
        g = {k: v for k, v in m.groupdict().items() if v}
        if "today" in g:
            facts.add(_day(said))
        elif "yesterday" in g:
            facts.add(_day(said - timedelta(days=1)))
        elif "tomorrow" in g:
            facts.add(_day(said + timedelta(days=1)))
        elif "n" in g:
            n = _count(g["n"])
            if n is not None:
                facts.add(_day(said - timedelta(days=n)))
        elif "wd" in g:
            facts.add(_day(_previous_weekday(said, _WEEKDAYS[g["wd"]])))
        elif "lastweek" in g:
            facts.add(_DateFact("week_before", y, mo, dd))
        elif "thisweek" in g:
            facts.add(_DateFact("week_of", y, mo, dd))
        elif "lastweekend" in g:
            facts.add(_DateFact("weekend_before", y, mo, dd))
        elif "nw" in g:
            n = _count(g["nw"])
            if n == 1:
                facts.add(_DateFact("week_before", y, mo, dd))
            elif n is not None:
                facts.add(_DateFact(f"weeks_before:{n}", y, mo, dd))
        elif "nwe" in g:
            n = _count(g["nwe"])
            if n == 1:
                facts.add(_DateFact("weekend_before", y, mo, dd))
            elif n is not None:
                facts.add(_DateFact(f"weekends_before:{n}", y, mo, dd))
        elif "lastmonth" in g:
            facts.add(_DateFact("month", *_month_shift(y, mo, -1)))
        elif "thismonth" in g:
            facts.add(_DateFact("month", y, mo))
        elif "nextmonth" in g:
            facts.add(_DateFact("month", *_month_shift(y, mo, 1)))
        elif "nm" in g:
            n = _count(g["nm"])
            if n is not None:
                facts.add(_DateFact("month", *_month_shift(y, mo, -n)))
        elif "lastyear" in g:
            facts.add(_DateFact("year", y - 1))
        elif "thisyear" in g:
            facts.add(_DateFact("year", y))
        elif "nextyear" in g:
            facts.add(_DateFact("year", y + 1))
        elif "ny" in g:
            n = _count(g["ny"])
            if n is not None:
                facts.add(_DateFact("year", y - n))
                facts.add(_DateFact("month", y - n, mo))
    return facts


_ANSWER_REL = re.compile(
    rf"^(?:on\s+|in\s+|around\s+|about\s+|since\s+|during\s+|by\s+)?(?:the\s+)?"
    rf"(?:(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    rf"|(?:(?P<nw>\w+)\s+)?(?P<unit>weeks?|weekends?)"
    rf"|(?P<dayb>day))\s+(?P<rel>before|of)\s+(?P<rest>.+)$"
)
_ANSWER_PREFIX = re.compile(r"^(?:on|in|around|about|since|during|by|the|early|late|mid)\s+")


def _answer_date(answer: str) -> set[_DateFact] | None:
    """The date an answer states, as the facts any one of which states it; None when the
    answer is not (only) a date."""
    folded = " ".join(re.sub(r"[`'\"]", "", _fold(answer)).replace(",", " ").split())
    folded = re.sub(r"(?<=[a-z])\.(?=\d)", " ", folded).strip(" .")
    m = _ANSWER_REL.match(folded)
    if m:
        anchor = _single_day(m.group("rest"))
        if anchor is None:
            return None
        a = date(anchor.y, anchor.m, anchor.d)
        if m.group("wd"):
            if m.group("rel") != "before":
                return None
            return {_day(_previous_weekday(a, _WEEKDAYS[m.group("wd")]))}
        if m.group("dayb"):
            return {_day(a - timedelta(days=1))} if m.group("rel") == "before" else None
        unit = m.group("unit").rstrip("s")
        n = _count(m.group("nw")) if m.group("nw") else 1
        if n is None:
            return None
        if m.group("rel") == "of":
            return {_DateFact("week_of", a.year, a.month, a.day)} if unit == "week" and n == 1 else None
        kind = f"{unit}_before" if n == 1 else f"{unit}s_before:{n}"
        facts = {_DateFact(kind, a.year, a.month, a.day)}
        if unit == "weekend" and n == 1:
            # the Saturday or Sunday of that weekend, said as a day
            sat = _previous_weekday(a, 5)
            facts |= {_day(sat), _day(sat + timedelta(days=1))} if sat + timedelta(days=1) < a else {_day(sat)}
        return facts
    rest = folded
    while True:
        stripped = _ANSWER_PREFIX.sub("", rest)
        if stripped == rest:
            break
        rest = stripped
    whole = _whole_date(rest)
    return {whole} if whole else None


def _whole_date(text: str) -> _DateFact | None:
    """The one date ``text`` is, entirely; None otherwise."""
    facts = _absolute_facts(text, None)
    if len(facts) != 1:
        return None
    fact = next(iter(facts))
    residue = text
    for pat in (*_ABS_PATTERNS, _BARE_MONTH):
        residue = pat.sub(" ", residue)
    if residue.strip(" ,.-"):
        return None
    return fact


def _single_day(text: str) -> _DateFact | None:
    fact = _whole_date(text.strip(" ."))
    if fact is None or fact.kind != "day" or fact.y == 0:
        return None
    return fact


_TIMESTAMP_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # LoCoMo: "1:56 pm on 8 May, 2023"
    "%I:%M %p on %d %b, %Y",
    "%Y/%m/%d (%a) %H:%M",  # LongMemEval: "2023/05/20 (Sat) 02:21"
    "%Y/%m/%d",
    "%Y-%m-%d",
    "%Y-%m-%dT%H:%M:%S",
    "%d %B %Y",
    "%d %B, %Y",
    "%B %d, %Y",
)


def parse_timestamp(text: object) -> date | None:
    """The calendar day of a session timestamp in the forms LoCoMo ("1:56 pm on 8 May,
    2023") and LongMemEval ("2023/05/20 (Sat) 02:21") use, ISO dates, and "8 May 2023";
    None when ``text`` is empty or none of these."""
    if isinstance(text, datetime):
        return text.date()
    if isinstance(text, date):
        return text
    s = " ".join(str(text or "").split())
    if not s:
        return None
    for fmt in _TIMESTAMP_FORMATS:
        try:
            return datetime.strptime(s, fmt).date()
        except ValueError:
            continue
    m = re.match(r"(\d{4})-(\d\d)-(\d\d)", s)
    if m:
        return _safe_date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    return None


def _span_month(h: _DateFact, want: _DateFact) -> bool:
    """A relative week ("last week" said on 9 July) lies in the month ``want``."""
    if not h.kind.startswith(("week_before", "week_of", "weekend_before")) or not h.y:
        return False
    said = date(h.y, h.m, h.d)
    start, end = (said - timedelta(days=7), said - timedelta(days=1)) if "before" in h.kind else (said, said)
    return any((d.year, d.month) == (want.y, want.m) for d in (start, end))


def _date_matches(want: _DateFact, have: set[_DateFact]) -> bool:
    if want in have:
        return True
    if want.kind == "day":
        if want.y == 0:
            return any(h.kind == "day" and (h.m, h.d) == (want.m, want.d) for h in have)
        return _DateFact("day", 0, want.m, want.d) in have
    if want.kind == "month":
        return any(
            h.kind in ("day", "month") and h.m == want.m and (h.y in (want.y, 0) or want.y == 0) for h in have
        ) or any(_span_month(h, want) for h in have)
    if want.kind == "year":
        return any(h.kind in ("day", "month", "year") and h.y == want.y for h in have)
    return False


# --- passages and the haystack -----------------------------------------------------------


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
    __slots__ = ("tokens", "joined", "stems", "numbers", "dates", "said", "owner")

    def __init__(self, p: Passage, text: str, owner: int) -> None:
        self.owner = owner
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
        self._prepared = [
            _Prepared(p, chunk, k) for k, p in enumerate(items) for chunk in _chunks(_LIST_MARKER.sub(" ", p.text))
        ]
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
                    return "date", self._prepared[i].owner
            # an event told on the day it happened ("I just launched…"): the passage's own
            # date, for a day or month answer, when the passage is about the question
            if question and all(w.kind in ("day", "month") for w in want):
                for i, p in enumerate(self._prepared):
                    if p.said and any(_date_matches(w, p.said) for w in want) and self._anchored(i, question):
                        return "date", self._prepared[i].owner
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
                return "phrase", self._prepared[i].owner
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
                return "words", self._prepared[i].owner
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
