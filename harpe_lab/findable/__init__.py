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
