"""The matcher's normal form of a text: folded tokens (accents, case, articles, number words
and separators), a light stemmer, and content words."""

from __future__ import annotations

import re
import unicodedata
from typing import Iterable

__all__ = ["normalize_text"]


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
    """A light suffix stemmer, the same on both sides: plurals, -ing, -ed, a final e, and
    -ship ("mentorship" is a mentor's as "mentoring" is, "friendships" a friend's)."""
    if len(w) > 9 and w.endswith("ships"):
        w = w[:-1]
    if len(w) > 8 and w.endswith("ship"):
        w = w[:-4]
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


# One word for the same thing, each side, before stemming: informal and plural kin words ("my
# mom" states "her mother"), chat abbreviations ("for my biz") and irregular past forms ("I
# led 4 engineers" states "I lead 4 engineers"); the suffix stemmer cannot see these.
_LEMMAS = {
    "mom": "mother", "moms": "mother", "mum": "mother", "mums": "mother", "mommy": "mother", "mama": "mother",
    "dad": "father", "dads": "father", "daddy": "father", "papa": "father",
    "grandma": "grandmother", "granny": "grandmother", "grandpa": "grandfather",
    "kid": "child", "kids": "child", "children": "child", "hubby": "husband",
    "biz": "business", "bday": "birthday", "pic": "picture", "pics": "picture", "vid": "video", "vids": "video",
    "fav": "favorite", "fave": "favorite", "favourite": "favorite", "convo": "conversation",
}
_IRREGULAR = """
bought:buy brought:bring built:build caught:catch taught:teach sold:sell told:tell held:hold kept:keep
slept:sleep spent:spend sent:send lent:lend paid:pay heard:hear felt:feel left:leave lost:lose met:meet
led:lead fed:feed won:win found:find sat:sit stood:stand understood:understand made:make
went:go gone:go came:come became:become ran:run began:begin begun:begin took:take taken:take
gave:give given:give saw:see seen:see wrote:write written:write drove:drive driven:drive ate:eat
eaten:eat grew:grow grown:grow knew:know known:know sang:sing sung:sing swam:swim flew:fly flown:fly
drawn:draw chose:choose chosen:choose wore:wear worn:wear broke:break broken:break
fallen:fall forgot:forget forgotten:forget rode:ride ridden:ride threw:throw thrown:throw
woke:wake spoke:speak spoken:speak hung:hang dug:dig
"""
_LEMMAS.update(pair.split(":") for pair in _IRREGULAR.split())  # type: ignore[misc]


def _content(tokens: Iterable[str]) -> list[str]:
    seen: list[str] = []
    for t in tokens:
        if _is_number(t) or t in _STOPWORDS or len(t) < 2:
            continue
        s = _stem(_LEMMAS.get(t, t))
        if s not in seen:
            seen.append(s)
    return seen
