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
                "May 7, 2023", "2023/05/07", "May 2023", "summer 2022", "2022") or
                relative to the passage's own date ("yesterday", "last Friday", "last
                Fri", "last week", "next week", "this month", "last summer", "last year",
                "three days ago", "a few days ago"; a duration up to that day, "for 10
                years", "seven years now", is since that year). LoCoMo's relative answers
                ("the week before 9 June 2023", "the Sunday before 25 May 2023", "the
                weekend before …", "two weeks before …", "the week of …", "the week
                after …", "a few days before …", "two days before …") match the same
                relative phrase said on that date, or the day itself. A month answer
                ("the last week of August 2023" included) matches a day in that month; a
                season answer, a day or month in it; a year answer, any stated date in
                that year.
``words``       one passage (a chunk of `CHUNK_CHARS` of a long one) holds every number of
                the answer and at least
                `RECALL_THRESHOLD` of its content words (stop words dropped, a light
                suffix stemmer applied, kin and chat words and irregular past forms
                folded — "my mom" for "her mother", "biz", "led"; the passage's speaker
                name counts as a word of it). A shared photo's caption is read apart from
                what was said: the words must all be in one or all in the other.
``items``       a list-shaped answer ("cooking, skiing and hiking") whose every item is
                found by one of the rules above, each in any passage. A URL is one item;
                framing words ("Previously, …", "According to …,") are none.
==============  ===========================================================================

An answer's long word that no passage holds but one passage's word does with one more
letter ("metoring", "funraiser": the answer keys' typos) is read as that word.

Guards for precision:

* an answer that is only numbers or only a date also needs `ANCHOR_WORDS` (2) of the
  question's content words (when one is given) in the same chunk of `CHUNK_CHARS`, so "3" is
  not found in every text with a 3, nor in a numbered file listing that mentions a test; a
  clock time ("2 AM", "6:30 pm") needs one, its other words may pick the day elsewhere ("the
  day before my doctor's appointment"); "when", "date", "time" never anchor;
* a number followed by a unit ("5 months ago") needs that unit within three words after
  the same number in the passage, and a list's numbering ("2. Choose…") is not a number;
* a bare number answering "How many N …?" must stand as a count somewhere, not as the measure
  of something else: "two weeks ago" does not count dogs, nor "March 2" bikes (a number
  followed by a span of time, "times" or "am"/"pm", or a date's day, unless N is that span);
* an event told on the day it happened ("I just launched the campaign") matches a day or
  month answer through the passage's own date — again only with the question's words in it;
* a question that picks its day by a holiday ("… on Valentine's Day?") is answered only by a
  passage that names the holiday: which day it fell on is outside knowledge;
* yes/no and hedged answers ("Likely yes", "No; …"), "not mentioned" and "the information
  provided is not enough" answers, and answers the question gives away ("Which came
  first, A or B?" → "A") are *unscorable* (`Finding.scorable` is False): whether the text
  supports them is a judgement, for a model judge. So are the answers to questions no text
  answers whatever the answer's words: an order of events ("Which happened first, A or
  B?", "What is the order of …", "Which … did I start using most recently?", "the first
  BBQ in June"), a comparison that picks the most or least of several ("Which store did I
  spend the most money at?", "Which airline did I fly with the most?"; not "the most
  popular", a quality one text may state, nor what "you" said), a share ("What percentage
  of …"), a difference or the time elapsed between two events ("How much more …", "How many
  years older …", "How many days passed between …", "How many days before I did A did I do
  B?", "How many pages do I have left …?", "How many weeks ago …?", counted from the day
  asked, which no passage is said on), a count or a sum over what several places tell ("…
  in total", "the total number of …", "How many different …", "How many A or B …", "How
  many … of A and B", "…, including …", "How many … in March / in the past month / this
  year / recently"), an inference ("Would she …?", "What might his degree be?"). A word
  match finds the items of a count, never the count; those numbers are found only by
  coincidence ("3" of "Domino's three times last week" for "how many types of food delivery
  services"). A number written into a date ("the 7/22 trip") does not give a number answer
  away.

Measured on the labelled set (`tests/data/findable_labels.json`: probes from the LoCoMo and
LongMemEval samples, each labelled by reading its evidence turns; it says how the sets were
made). Round 2 (rules tuned on 333, frozen, then 183 held out labelled): precision 0.989,
recall 0.942 tuning; 0.950 / 0.943 held out. Round 3 (LongMemEval multi-session and
temporal-reasoning, whose held-out false finds were counts and an order found by
coincidence) tuned on all 516: 0.989 / 0.942 on the first 333, 0.983 / 0.951 on round 2's
183 — no false find left among LongMemEval's multi-session and temporal-reasoning probes,
LoCoMo multi-hop 0.959 / 0.887 over both (`tests/judgement/test_findable.py` pins each a little under;
fresh held-out labels measure round 3). Over a whole conversation rather than the evidence,
it finds 3 of the 165 labelled answers that are judgements or computed values (round 2: 20)
and 301 of the 312 labelled findable. Round 4: round 3's 77 fresh held-out LongMemEval labels
scored 0/2/1 (tp/fp/fn) multi-session and 5/3/0 temporal-reasoning — comparisons ("the
most"), an order without alternatives ("the first … in June"), a holiday's date, and a
clock time anchored across two passages. Tuned on all 593 (no verdict on the first 516
changed): 1/0/0 and 5/0/0 on those 77; over whole conversations 2 of the 165 judged or
computed found, 301 of 312 findable.

Pure: no imports beyond the standard library; text in, verdict out.

Layout (one concept per module, each importing only those above it):

* ``_normalize``: the normal form: folded tokens, number words, the stemmer, content words
* ``_dates``: dates stated absolutely or relatively, answer dates, `parse_timestamp`
* ``_haystack``: `Passage`, `Finding`, `Haystack`, `findable` and their constants
"""

from __future__ import annotations

from ._dates import parse_timestamp
from ._haystack import ANCHOR_WORDS, CHUNK_CHARS, RECALL_THRESHOLD, Finding, Haystack, Passage, findable
from ._normalize import normalize_text

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
