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
_COUNT = (
    r"(?P<n>\d+|a couple of|a couple|couple of|a few|few|a|an"
    r"|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"
)

_SEASONS = {"spring": 1, "summer": 2, "fall": 3, "autumn": 3, "winter": 4}
_SEASON = r"(?P<season>spring|summer|fall|autumn|winter)"
_ABS_PATTERNS = [
    re.compile(rf"\b{_YEAR}[-/.](?P<m>[01]?\d)[-/.](?P<day>[0-3]?\d)\b"),
    re.compile(rf"\b{_DAY}(?:\s+of)?\s*[\s.,]\s*{_MON}\b\.?(?:[\s,.]*{_YEAR}\b)?"),
    re.compile(rf"\b{_MON}\.?\s+{_DAY}\b(?!\s*(?:am|pm|:))(?:[\s,.]*{_YEAR}\b)?"),
    re.compile(rf"\b{_MON}\b[\s,.]*(?:of\s+)?{_YEAR}\b"),
    # "summer 2022", "the summer of 2022": a season of a year, before the bare year takes it
    re.compile(rf"\b{_SEASON}\b[\s,.]*(?:of\s+)?{_YEAR}\b"),
    re.compile(rf"\b{_YEAR}\b"),
]
# a bare month name ("in May") counts only after a preposition; "may" is also a verb
_BARE_MONTH = re.compile(rf"\b(?P<pre>in|of|since|during|last|this|next|early|late|mid|until|by|from)[\s-]+{_MON}\b")


@dataclass(frozen=True, order=True)
class _DateFact:
    """One date a text states: ``kind`` is "day" (y, m, d), "month" (y, m, 0), "year"
    (y, 0, 0), "season" (y, season 1-4 for spring, summer, fall, winter; a winter is named by
    the year of its December), or a relative span ("week_before", "week_of", "week_after",
    "weekend_before", "weekend_after", "weeks_before:N", "weekends_before:N", and "few" for N:
    "days_before:few", "weeks_before:few", "months_before:few") anchored at the date (y, m, d)
    it was said on."""

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
    if word in ("a couple of", "couple of", "a couple"):
        return 2
    if word in ("a few", "few"):
        return None
    return _NUMBER_WORDS.get(word)


def _previous_weekday(anchor: date, weekday: int) -> date:
    delta = (anchor.weekday() - weekday) % 7 or 7
    return anchor - timedelta(days=delta)


def _next_weekday(anchor: date, weekday: int) -> date:
    delta = (weekday - anchor.weekday()) % 7 or 7
    return anchor + timedelta(days=delta)


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
            elif k == 4:
                facts.add(_DateFact("season", int(g["year"]), _SEASONS[g["season"]]))
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


_WD_ABBREV = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5, "sun": 6}

_REL_DAY = re.compile(
    r"\b(?:(?P<today>today|tonight|this morning|this afternoon|this evening|earlier today)"
    r"|(?P<daybefore>the day before yesterday)|(?P<dayafter>the day after tomorrow)"
    r"|(?P<yesterday>yesterday|last night)|(?P<tomorrow>tomorrow)"
    # "a few days ago", "the other day": some days before, not one day
    r"|(?P<fewdays>(?:a\s+)?few\s+days\s+(?:ago|back)|the other day)"
    r"|(?P<fewweeks>(?:a\s+)?few\s+weeks\s+(?:ago|back))|(?P<fewmonths>(?:a\s+)?few\s+months\s+(?:ago|back))"
    rf"|{_COUNT}\s+days?\s+(?:ago|back)"
    r"|(?:last|this past|past|on|this)\s+(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    # "last Fri": an abbreviated weekday only after "last", where it cannot be a noun
    r"|(?:last|this past|past)\s+(?P<wda>mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\b\.?"
    r"|next\s+(?P<nextwd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?P<lastweek>last week|a week ago|past week|previous week)|(?P<thisweek>this week|earlier this week)"
    r"|(?P<nextweek>next week)"
    r"|(?P<lastweekend>last weekend|this past weekend|past weekend|this weekend|over the weekend)"
    r"|(?P<nextweekend>next weekend)"
    rf"|{_COUNT.replace('<n>', '<nw>')}\s+weeks?\s+(?:ago|back)"
    rf"|{_COUNT.replace('<n>', '<nwe>')}\s+weekends?\s+ago"
    r"|(?P<lastmonth>last month|a month ago|past month|previous month)|(?P<thismonth>this month|earlier this month)"
    r"|(?P<nextmonth>next month)"
    r"|(?P<season_rel>last|this past|this|next)\s+(?P<season>spring|summer|fall|autumn|winter)"
    r"|(?P<lastyear>last year|a year ago|previous year)|(?P<thisyear>this year)|(?P<nextyear>next year)"
    rf"|(?:about\s+|around\s+|almost\s+|over\s+)?{_COUNT.replace('<n>', '<ny>')}\s+years?\s+ago"
    rf"|{_COUNT.replace('<n>', '<nm>')}\s+months?\s+ago"
    # a duration up to the day it was said ("for 10 years", "seven years now"): since that year
    rf"|(?:for|been|past|last)\s+(?:(?:about|almost|nearly|over|around|more than)\s+)?"
    rf"{_COUNT.replace('<n>', '<nd>')}\s+years?\b(?!\s+(?:ago|old|from))"
    rf"|{_COUNT.replace('<n>', '<nn>')}\s+years?\s+(?:now|already|so far|and counting)"
    r")\b"
)


def _season_months(y: int, season: int) -> list[tuple[int, int]]:
    """The (year, month) pairs of a season; a winter is named by the year of its December."""
    if season == 4:
        return [(y, 12), (y + 1, 1), (y + 1, 2)]
    first = {1: 3, 2: 6, 3: 9}[season]
    return [(y, first), (y, first + 1), (y, first + 2)]


def _season_facts(rel: str, season: int, said: date) -> set[_DateFact]:
    """"last summer", "this winter", "next spring", said on ``said``."""
    ym = (said.year, said.month)
    # the occurrences around the day: the one it falls in or the last one before it, and the next
    current = [y for y in (said.year - 1, said.year) if ym in _season_months(y, season)]
    past = [y for y in range(said.year - 2, said.year + 1) if max(_season_months(y, season)) < ym]
    future = [y for y in range(said.year - 1, said.year + 2) if min(_season_months(y, season)) > ym]
    if rel in ("last", "this past"):
        ys = [max(past)] if past else []
    elif rel == "this":
        ys = current or ([min(future)] if future and min(future) == said.year else [])
        ys = ys or ([max(past)] if past and max(past) == said.year else [])
    else:  # next: the coming one; said during the season, the one a year on
        ys = [min(future)] if future else []
    return {_DateFact("season", y, season) for y in ys}


# What the named groups of _REL_DAY say, by how far from the day it was said. Each alternative
# of _REL_DAY sets one such group ("season" comes only with "season_rel"), so at most one of
# the readers below finds anything in a match.
_DAY_SHIFTS = {"today": 0, "daybefore": -2, "dayafter": 2, "yesterday": -1, "tomorrow": 1}
_SPANS = {
    "fewdays": "days_before:few", "fewweeks": "weeks_before:few", "fewmonths": "months_before:few",
    "lastweek": "week_before", "thisweek": "week_of", "nextweek": "week_after",
    "lastweekend": "weekend_before", "nextweekend": "weekend_after",
}  # fmt: skip
_MONTH_SHIFTS = {"lastmonth": -1, "thismonth": 0, "nextmonth": 1}
_YEAR_SHIFTS = {"lastyear": -1, "thisyear": 0, "nextyear": 1}


def _relative_facts(folded: str, said: date) -> set[_DateFact]:
    """The dates ``folded`` states relative to ``said``, the day it was said on: days, spans
    anchored at that day (which `_date_matches` resolves), months, seasons and years."""
    facts: set[_DateFact] = set()
    for m in _REL_DAY.finditer(folded):
        groups = {k: v for k, v in m.groupdict().items() if v}
        facts |= _relative_day(groups, said) | _relative_span(groups, said)
        facts |= _relative_month(groups, said) | _relative_year(groups, said)
        if "season_rel" in groups:
            facts |= _season_facts(groups["season_rel"], _SEASONS[groups["season"]], said)
    return facts


def _relative_day(groups: dict[str, str], said: date) -> set[_DateFact]:
    """"yesterday", "3 days ago", "last Friday", "next Monday": one day."""
    for name, shift in _DAY_SHIFTS.items():
        if name in groups:
            return {_day(said + timedelta(days=shift))}
    if "n" in groups:
        n = _count(groups["n"])
        return {_day(said - timedelta(days=n))} if n is not None else set()
    if "wd" in groups or "wda" in groups:
        weekday = _WEEKDAYS[groups["wd"]] if "wd" in groups else _WD_ABBREV[groups["wda"]]
        return {_day(_previous_weekday(said, weekday))}
    if "nextwd" in groups:
        return {_day(_next_weekday(said, _WEEKDAYS[groups["nextwd"]]))}
    return set()


def _relative_span(groups: dict[str, str], said: date) -> set[_DateFact]:
    """"last week", "a few days ago", "two weekends ago": a span, kept anchored at the day it
    was said because which days it holds is only settled against an answer."""
    kind = next((kind for name, kind in _SPANS.items() if name in groups), None) or _weeks_ago(groups)
    return {_DateFact(kind, said.year, said.month, said.day)} if kind else set()


def _weeks_ago(groups: dict[str, str]) -> str | None:
    """The span "N weeks (weekends) ago" is; None when not said, or said without a number."""
    for name, unit in (("nw", "week"), ("nwe", "weekend")):
        if name in groups:
            n = _count(groups[name])
            if n is None:
                return None
            # "a week ago" is "last week": one span, so an answer that names either matches
            return f"{unit}_before" if n == 1 else f"{unit}s_before:{n}"
    return None


def _relative_month(groups: dict[str, str], said: date) -> set[_DateFact]:
    """"last month", "this month", "three months ago": one month."""
    shift = next((shift for name, shift in _MONTH_SHIFTS.items() if name in groups), None)
    if shift is None and "nm" in groups:
        n = _count(groups["nm"])
        shift = -n if n is not None else None
    return {_DateFact("month", *_month_shift(said.year, said.month, shift))} if shift is not None else set()


def _relative_year(groups: dict[str, str], said: date) -> set[_DateFact]:
    """"last year", "two years ago", and a duration up to the day it was said ("for 10 years",
    "seven years now"), which began that many years before."""
    for name, shift in _YEAR_SHIFTS.items():
        if name in groups:
            return {_DateFact("year", said.year + shift)}
    counted = groups.get("ny") or groups.get("nd") or groups.get("nn")
    n = _count(counted) if counted else None
    if n is None:
        return set()
    if "ny" in groups:
        # "two years ago" said in May points at that May too, which a month-long answer can match
        return {_DateFact("year", said.year - n), _DateFact("month", said.year - n, said.month)}
    return {_DateFact("year", said.year - n)}


_ANSWER_REL = re.compile(
    rf"^(?:on\s+|in\s+|around\s+|about\s+|since\s+|during\s+|by\s+|approximately\s+|roughly\s+)?(?:the\s+)?"
    rf"(?:(?P<wd>monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    rf"|(?:(?P<nw>a\s+few|few|a\s+couple\s+of|a\s+couple|couple\s+of|\w+)\s+)?"
    rf"(?P<unit>days?|weeks?|weekends?|months?|years?))\s+(?P<rel>before|after|of)\s+(?P<rest>.+)$"
)
_WEEK_OF_MONTH = re.compile(
    r"^(?:in\s+|on\s+|during\s+)?(?:the\s+)?(?:first|second|third|fourth|last|final)\s+(?:week|weekend)\s+of\s+"
)
_ANSWER_PREFIX = re.compile(
    r"^(?:on|in|around|about|since|during|by|the|early|late|mid|approximately|roughly|sometime|circa)(?:\s+|-)"
)


def _relative_answer(m: re.Match) -> set[_DateFact] | None:
    """LoCoMo's relative answers: "the Friday before 15 July 2023", "two weeks before …",
    "the week of …", "a few days before …", "the weekend after …", "a month before …"."""
    anchor = _single_day(m.group("rest"))
    if anchor is None:
        return None
    a = date(anchor.y, anchor.m, anchor.d)
    rel = m.group("rel")
    if m.group("wd"):
        wd = _WEEKDAYS[m.group("wd")]
        if rel == "of":
            return None
        return {_day(_previous_weekday(a, wd) if rel == "before" else _next_weekday(a, wd))}
    unit = m.group("unit").rstrip("s")
    word = " ".join(m.group("nw").split()) if m.group("nw") else "a"
    few = word in ("a few", "few")
    n = None if few else _count(word)
    if n is None and not few:
        return None
    if rel == "of":
        if unit == "week" and n == 1:
            return {_DateFact("week_of", a.year, a.month, a.day)}
        if unit == "day" and n == 1:
            return {_day(a)}
        return None
    sign = -1 if rel == "before" else 1
    if unit == "day":
        if few:
            return {_DateFact("days_before:few", a.year, a.month, a.day)} if sign < 0 else None
        return {_day(a + timedelta(days=sign * n))}
    if unit == "month":
        if few:
            return {_DateFact("months_before:few", a.year, a.month, a.day)} if sign < 0 else None
        return {_DateFact("month", *_month_shift(a.year, a.month, sign * n))}
    if unit == "year":
        return None if few else {_DateFact("year", a.year + sign * n)}
    if few:
        return {_DateFact(f"{unit}s_before:few", a.year, a.month, a.day)} if sign < 0 and unit == "week" else None
    if sign > 0:
        if n != 1:
            return None
        facts = {_DateFact(f"{unit}_after", a.year, a.month, a.day)}
        if unit == "weekend":  # the Saturday or Sunday of that weekend, said as a day
            sat = _next_weekday(a, 5)
            facts |= {_day(sat), _day(sat + timedelta(days=1))}
        return facts
    kind = f"{unit}_before" if n == 1 else f"{unit}s_before:{n}"
    facts = {_DateFact(kind, a.year, a.month, a.day)}
    if unit == "weekend" and n == 1:
        # the Saturday or Sunday of that weekend, said as a day
        sat = _previous_weekday(a, 5)
        facts |= {_day(sat), _day(sat + timedelta(days=1))} if sat + timedelta(days=1) < a else {_day(sat)}
    return facts


def _answer_date(answer: str) -> set[_DateFact] | None:
    """The date an answer states, as the facts any one of which states it; None when the
    answer is not (only) a date."""
    folded = " ".join(re.sub(r"[`'\"]", "", _fold(answer)).replace(",", " ").split())
    folded = re.sub(r"(?<=[a-z])\.(?=\d)", " ", folded).strip(" .")
    # "the last week of August 2023", "the first weekend of May 2023": that month
    rest = _WEEK_OF_MONTH.sub("", folded)
    if rest != folded:
        whole = _whole_date(rest)
        return {whole} if whole and whole.kind == "month" else None
    m = _ANSWER_REL.match(folded)
    if m:
        return _relative_answer(m)
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
    if not h.kind.startswith(("week_before", "week_of", "weekend_before", "week_after", "weekend_after")) or not h.y:
        return False
    said = date(h.y, h.m, h.d)
    if "before" in h.kind:
        start, end = said - timedelta(days=7), said - timedelta(days=1)
    elif "after" in h.kind:
        start, end = said + timedelta(days=1), said + timedelta(days=7)
    else:
        start, end = said, said
    return any((d.year, d.month) == (want.y, want.m) for d in (start, end))


def _in_season(want: _DateFact, h: _DateFact) -> bool:
    """A stated day, month or season lies in the season ``want`` ("winter 2023" may name
    the winter that ends in 2023 as well as the one that starts in its December)."""
    if h.kind == "season":
        return h == want or (want.m == 4 and h.m == 4 and h.y == want.y - 1)
    if h.kind not in ("day", "month") or not h.y:
        return False
    months = _season_months(want.y, want.m)
    if want.m == 4:
        months += _season_months(want.y - 1, 4)
    return (h.y, h.m) in months


def _few_before(want: _DateFact, h: _DateFact) -> bool:
    """"A few days (weeks, months) before X" holds what was said on X as "a few days ago",
    or a day 2 to 6 days (a span 2 to 4 weeks, a month 2 to 4 months) before X."""
    if h == want:
        return True
    x = date(want.y, want.m, want.d)
    unit = want.kind.split("_")[0]
    if unit == "days":
        return h.kind == "day" and h.y > 0 and 2 <= (x - date(h.y, h.m, h.d)).days <= 6
    if unit == "weeks":
        return h.kind in (f"weeks_before:{n}" for n in (2, 3, 4)) and (h.y, h.m, h.d) == (want.y, want.m, want.d)
    return h.kind == "month" and any((h.y, h.m) == _month_shift(x.year, x.month, -n) for n in (2, 3, 4))


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
        return any(h.kind in ("day", "month", "year", "season") and h.y == want.y for h in have)
    if want.kind == "season":
        return any(_in_season(want, h) for h in have)
    if want.kind.endswith(":few"):
        return any(_few_before(want, h) for h in have)
    return False
