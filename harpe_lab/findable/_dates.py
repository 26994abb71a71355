"""Dates a text states — absolutely, or relative to the day it was said — the date an answer
is, and whether one matches the other; `parse_timestamp` for session timestamps."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta

from ._normalize import _NUMBER_WORDS, _fold

__all__ = ["parse_timestamp"]


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
