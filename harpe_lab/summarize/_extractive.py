"""The offline baseline distiller: no model, deterministic, fast."""

from __future__ import annotations

import functools
import math
import re
from bisect import bisect_left, bisect_right
from collections import Counter, OrderedDict
from dataclasses import dataclass
from itertools import accumulate, chain, count, groupby, repeat
from operator import itemgetter
from typing import Collection

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
_QUOTED = re.compile(r"`([^`]*)`")
_MESSAGE_START = re.compile(r"\n(?=User: |Agent: |\[tool result\] )")
_SPAN = 1 << 48  # more than any offset in a text and any number of artifacts


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
    possibly spanning lines) back into (speaker, text). A line starting with one of those
    starts a message; any other line continues the one before (before the first message,
    the first non-blank line starts an ``Agent`` one)."""
    pieces = _MESSAGE_START.split(body)
    out: list[tuple[str, str]] = []
    if not pieces[0].startswith(("User: ", "Agent: ", "[tool result] ")):
        lines = pieces.pop(0).split("\n")
        first = next((k for k, line in enumerate(lines) if line.strip()), None)
        if first is not None:
            out.append(("Agent", "\n".join(lines[first:]).strip("\n")))
    for piece in pieces:
        if piece.startswith("User: "):
            out.append(("User", piece[6:].strip("\n")))
        elif piece.startswith("Agent: "):
            head = piece.partition("\n")[0]
            call = head.startswith("Agent: [called tool ") and head.endswith("]")
            out.append(("Call" if call else "Agent", piece[7:].strip("\n")))
        else:
            out.append(("Tool", piece[14:].strip("\n")))
    return out


def _parse_own_summary(summary: str) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """Artifacts and notes of a summary this distiller wrote (anything else: all notes)."""
    arts: dict[str, list[str]] = {c: [] for c in _LABELS}
    notes: list[tuple[str, str]] = []
    in_notes = False
    for line in summary.splitlines():
        head, sep, rest = line.partition(": ")
        if not in_notes and sep and head in _LABEL_OF:
            values = _QUOTED.findall(rest)
            if "\u02cb" in rest:
                values = [x.replace("\u02cb", "`") for x in values]
            arts[_LABEL_OF[head]].extend(values)
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


class _Prior:
    """What a previous summary brings to the next fold, never changed: its notes and its
    artifacts per category (in `_LABELS` order; a position counts through them all), with
    each one's index in its category, its cost in the block (length + 4), the running
    costs before each position, each category's (start, end) positions and the sum of
    the costs. An index is stored plus the category's ``base`` (so that a fold that drops
    the oldest of a category shifts the rest by changing one number). ``index``, ``base``
    and ``cost`` may be given: the fold that wrote the summary knows them."""

    __slots__ = ("notes", "kept", "index", "base", "cost", "costs", "before", "bounds", "length")

    def __init__(
        self,
        kept: dict[str, list[str]],
        notes: list[tuple[str, str]],
        index: dict[str, dict[str, int]] | None = None,
        base: dict[str, int] | None = None,
        cost: dict[str, list[int]] | None = None,
    ) -> None:
        self.notes = notes
        self.kept = kept
        self.index = {c: dict(zip(vs, count())) for c, vs in kept.items()} if index is None else index
        self.base = dict.fromkeys(kept, 0) if base is None else base
        self.cost = {c: list(map((4).__add__, map(len, vs))) for c, vs in kept.items()} if cost is None else cost
        self.bounds: dict[str, tuple[int, int]] = {}
        start = 0
        for c, vs in kept.items():
            self.bounds[c] = (start, start + len(vs))
            start += len(vs)
        self.costs = list(chain.from_iterable(self.cost.values()))
        self.before = [0, *accumulate(self.costs)]
        self.length = self.before[-1]

    def once(self) -> bool:
        """Whether no category lists a value twice (ranking by position needs that)."""
        return all(len(self.index[c]) == len(vs) for c, vs in self.kept.items())


_NO_PRIOR = _Prior({c: [] for c in _LABELS}, [])
_Written = tuple[
    dict[str, list[str]], list[tuple[str, str]], dict[str, dict[str, int]], dict[str, int], dict[str, list[int]]
]
"""A summary's artifacts per category, its notes, and the artifacts' index (with its base)
and cost per category."""
_WRITTEN: OrderedDict[str, _Written] = OrderedDict()
"""What the last summaries the distillers wrote hold, by their text: the previous summary
comes back in the next request, and reading it back would find the same. (Every step on it
is one call, so replays in threads share it safely.)"""
_WRITTEN_SIZE = 64


def _remember(summary: str, lines: int, block: str, written: _Written) -> None:
    """Remember what `_parse_own_summary` would read back from ``summary``, when it would:
    no value or note broke a line (the summary has the ``lines`` written) and no value held
    the backtick's stand-in "\u02cb" (reading turns every one into a backtick)."""
    if "\u02cb" in block or len(summary.splitlines()) != lines:
        return
    _WRITTEN[summary] = written
    if len(_WRITTEN) > _WRITTEN_SIZE:
        _WRITTEN.popitem(last=False)


def _prior_state(summary: str) -> _Prior | None:
    """The previous summary's `_Prior`, from what this distiller remembers writing or else
    read back (None when it lists a value twice, which the fold by position cannot rank)."""
    written = _WRITTEN.get(summary)
    state = _Prior(*written) if written is not None else _Prior(*_parse_own_summary(summary))
    return state if state.once() else None


def _render(by: dict[str, Collection[str]]) -> str:
    """The artifact block: one line per category, the values in backticks (a backtick in a
    value written as "\u02cb")."""
    lines = []
    for c, vs in by.items():
        if not vs:
            continue
        body = "`, `".join(vs)
        if body.count("`") != 2 * (len(vs) - 1):  # rare: a value holds a backtick
            body = "`, `".join(v.replace("`", "\u02cb") for v in vs)
        lines.append(f"{_LABELS[c]}: `{body}`")
    return "\n".join(lines)


def _rendered_length(by: dict[str, Collection[str]]) -> int:
    """``len(_render(by))`` without writing it: a long session's artifacts are mostly over
    ``max_chars``, and then only the ones kept are written out. Per category "Label: " and
    "`v`" joined by ", "; categories joined by a newline; "\u02cb" for "`" keeps the length."""
    n = 0
    lines = 0
    for c, vs in by.items():
        if vs:
            n += len(_LABELS[c]) + sum(map(len, vs)) + 4 * len(vs)
            lines += 1
    return n + lines - 1 if lines else 0


@functools.lru_cache(maxsize=8192)
def _mentions(text: str) -> tuple[tuple[tuple[str, str], ...], tuple[int, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """The artifacts of ``text`` (not decisions) as (category, value) keys in `_LABELS`
    order, the offset of each one's last mention, and the values per category. Cached: a
    fold reads every previous note again."""
    found = _extract_ordered(text, decisions=False)
    keys: list[tuple[str, str]] = []
    offsets: list[int] = []
    per_category = []
    for category in _LABELS:
        values = found[category]
        if values:
            per_category.append((category, tuple(values)))
            keys.extend(zip(repeat(category), values))
            offsets.extend(map(text.rfind, values))
    return tuple(keys), tuple(offsets), tuple(per_category)


@functools.lru_cache(maxsize=8192)
def _clipped_sentences(text: str, clip: int) -> tuple[str, ...]:
    return tuple(_clip(s, clip) for s in _sentences(text))


@functools.lru_cache(maxsize=1 << 14)
def _features(text: str) -> tuple[set[str], str, float, bool, bool]:
    """What a sentence's salience needs from its text alone: its content words (the set
    itself, so a sum over it runs in the same order every time; never changed), its
    lower-cased text (repeats are dropped), the artifact bonus, and whether it states a
    decision and reads as an error. Cached: a fold scores the previous notes again, and
    the replays of one conversation score the same sentences."""
    found = _extract_ordered(text, decisions=False)
    return (content_words(text), text.lower(), 1.5 * min(3, sum(len(v) for v in found.values())),
            bool(_DECISION.search(text)), bool(_ERRORISH.search(text)))  # fmt: skip

# -- the two halves of `ExtractiveDistiller._keep`. A position counts through the previous summary's
# artifacts in `_LABELS` order; a cost is an artifact's length in the block plus 4 ("`" twice, ", ").


def _choose(state: _Prior, ranked: list[tuple[str, str]], again_at: list[int],
            room: int) -> tuple[list[tuple[str, str]], list[int], int]:  # fmt: skip
    """(the ``ranked`` kept, the positions below ``cut`` the greedy pass kept, cut): the newest
    mentioned that fit ``room``; when all do, the run of the previous summary's others from ``cut``
    on that still fits (bisection over its running costs); then greedily the rest (the mentioned,
    then the others before cut, newest first) until not even the cheapest would fit."""
    ranked_costs = list(map((4).__add__, map(len, map(itemgetter(1), ranked))))
    fit = bisect_right(list(accumulate(ranked_costs)), room)
    keep = ranked[:fit]
    used = sum(ranked_costs[:fit])
    costs, before = state.costs, state.before
    cut = k = len(costs)  # the previous summary's artifacts not mentioned again from cut on are kept
    if fit == len(ranked):
        left = room - used
        hi = k
        for x in chain(reversed(again_at), (-1,)):
            span = before[hi] - before[x + 1]
            if span <= left:
                left -= span
                hi = x
                continue
            cut = bisect_left(before, before[hi] - left, x + 1, hi)
            left -= before[hi] - before[cut]
            break
        else:
            cut = 0
        used = room - left
    rest_costs = ranked_costs[fit:]
    lows, lo = [], 0  # the cheapest of each run of others before cut, between the mentioned again
    for x in again_at:
        if x >= cut:
            break
        if x > lo:
            lows.append(min(costs[lo:x]))
        lo = x + 1
    if cut > lo:
        lows.append(min(costs[lo:cut]))
    extra: list[int] = []
    if rest_costs or lows:
        cheapest = min(min(rest_costs, default=_SPAN), min(lows, default=_SPAN))
        for key, cost in zip(ranked[fit:], rest_costs):
            if used + cheapest > room:
                return keep, extra, cut
            if used + cost <= room:
                keep.append(key)
                used += cost
        again_set = set(again_at)
        for p in range(cut - 1, -1, -1):
            if p in again_set:
                continue
            if used + cheapest > room:
                break
            if used + costs[p] <= room:
                extra.append(p)
                used += costs[p]
    return keep, extra, cut


def _carry(
    state: _Prior, below: list[int], cut: int, new_by: dict[str, list[str]], kept_new: Collection[tuple[str, str]]
) -> tuple[dict[str, list[str]], dict[str, dict[str, int]], dict[str, int], dict[str, list[int]]]:
    """`ExtractiveDistiller._keep`'s result but the omitted count: per category, the kept in the
    order of first mention (those before ``cut`` kept, ``below``, first; the run from ``cut`` on
    keeping its entries, shifted by the base; then the new ones kept), their index, base, costs."""
    index, base, prior, costs = state.index, state.base, state.kept, state.costs
    kept: dict[str, list[str]] = {}
    next_index: dict[str, dict[str, int]] = {}
    next_base: dict[str, int] = {}
    next_cost: dict[str, list[int]] = {}
    for c, (s, e) in state.bounds.items():
        vs = prior[c]
        out = [vs[p - s] for p in below if s <= p < e]
        if cut >= e:  # none kept but those before cut
            cs = [costs[p] for p in below if s <= p < e]
            next_index[c] = dict(zip(out, count()))
            next_base[c] = 0
        elif out or cut > s:
            # the ones before cut leave the index and the kept of them come back first
            cs = [costs[p] for p in below if s <= p < e]
            cs += costs[cut:e]
            shift = next_base[c] = base[c] + (cut - s) - len(out)
            ix = next_index[c] = index[c].copy()
            for v in vs[: cut - s]:
                del ix[v]
            ix.update(zip(out, count(shift)))
            out += vs[cut - s :]
        else:  # the whole category kept, each where it was
            out = vs.copy()
            cs = state.cost[c].copy()
            next_index[c] = index[c].copy()
            next_base[c] = base[c]
        if new_by[c] and kept_new:
            added = [v for v in new_by[c] if (c, v) in kept_new]
            next_index[c].update(zip(added, count(next_base[c] + len(out))))
            out += added
            cs += map((4).__add__, map(len, added))
        kept[c] = out
        next_cost[c] = cs
    return kept, next_index, next_base, next_cost


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
        state = _prior_state(prior) if prior else _NO_PRIOR
        if state is None:  # a previous summary that lists a value twice: not one this wrote
            return self._fold_any(prior, segments)
        prior_notes = state.notes

        # the artifacts mentioned in the previous notes and the excerpt, with the place of
        # their last mention (segment, offset) as one int that sorts the same,
        # (segment + 1) * _SPAN + offset; the previous summary's others rank by their
        # position in it, below every mention: recency decides which go when they do not
        # all fit. The dict's order is the order of first mention.
        mentioned: dict[tuple[str, str], int] = {}
        for seg, text in enumerate(chain(map(itemgetter(1), prior_notes), map(itemgetter(1), segments))):
            keys, offsets, _ = _mentions(text)
            if keys:
                mentioned.update(zip(keys, map(((seg + 1) * _SPAN).__add__, offsets)))

        kept, omitted, index, base, cost = self._keep(state, mentioned)
        artifact_block = _render(kept)
        return self._finish(artifact_block, omitted, prior_notes, segments, (kept, index, base, cost))

    def _finish(
        self,
        artifact_block: str,
        omitted: int,
        prior_notes: list[tuple[str, str]],
        segments: list[tuple[str, str]],
        written: tuple[dict[str, list[str]], dict[str, dict[str, int]], dict[str, int], dict[str, list[int]]]
        | None = None,
    ) -> str:
        """The summary: the artifact block, what it left out, and the notes that fit. With
        ``written`` (the block's values, their index and costs per category), remembers them for
        when it comes back as the previous summary."""
        budget = self.max_chars - len(artifact_block) - len(_NOTES) - 2
        if omitted:
            budget = 0
        notes = self._select(*self._candidates(prior_notes, segments), budget) if budget > 0 else []
        parts = [artifact_block] if artifact_block else []
        if omitted:
            parts.append(f"({omitted} older artifacts omitted)")
        if notes:
            parts.append(_NOTES)
            parts.extend(f"- {speaker}: {text}" for speaker, text in notes)
        summary = "\n".join(parts)
        if written is not None and summary:
            kept, index, base, cost = written
            lines = len(parts) - bool(artifact_block) + sum(1 for vs in kept.values() if vs)
            _remember(summary, lines, artifact_block, (kept, notes, index, base, cost))
        return summary

    def _keep(
        self, state: _Prior, mentioned: dict[tuple[str, str], int]
    ) -> tuple[dict[str, list[str]], int, dict[str, dict[str, int]], dict[str, int], dict[str, list[int]]]:
        """The artifacts the block lists, per category in their order, how many older ones
        it leaves out, and, per category, the kept ones' index, its base and their costs.
        All of them when they fit ``max_chars``; else the most recently mentioned that fit
        (newest first; ties to the first mentioned), then greedily the ones that still fit,
        until not even the cheapest of the rest would.

        The previous summary's artifacts not mentioned again keep their order, newest
        last, so only the mentioned ones are sorted; the run of the rest that fits is found
        by bisection over the previous summary's running costs."""
        index, base, prior = state.index, state.base, state.kept
        again: list[tuple[str, str]] = []  # mentioned again, in the order of first mention
        new: list[tuple[str, str]] = []
        new_by: dict[str, list[str]] = {c: [] for c in _LABELS}
        for key in mentioned:
            if key[1] in index[key[0]]:
                again.append(key)
            else:
                new.append(key)
                new_by[key[0]].append(key[1])
        length = state.length + sum(map(len, map(itemgetter(1), new))) + 4 * len(new)
        lines = [c for c in _LABELS if new_by[c] or prior[c]]
        length += sum(len(_LABELS[c]) for c in lines) + len(lines) - 1 if lines else 0
        if length <= self.max_chars:
            next_index, next_cost = {}, {}
            for c in _LABELS:
                next_index[c] = index[c].copy()
                next_cost[c] = state.cost[c].copy()
                if new_by[c]:
                    next_index[c].update(zip(new_by[c], count(base[c] + len(prior[c]))))
                    next_cost[c] += map((4).__add__, map(len, new_by[c]))
            return {c: prior[c] + new_by[c] for c in _LABELS}, 0, next_index, base, next_cost
        start = {c: s - base[c] for c, (s, _) in state.bounds.items()}
        at = {key: start[key[0]] + index[key[0]][key[1]] for key in again}
        again.sort(key=at.__getitem__)  # the order of first mention: the previous summary's first
        # newest mention first; the sort is stable (reverse=True included), so ties go to
        # the first in the order of first mention
        ranked = sorted(again + new, key=mentioned.__getitem__, reverse=True)
        room = self.max_chars - 40 - 15 * len(_LABELS)
        keep, extra, cut = _choose(state, ranked, list(map(at.__getitem__, again)), room)
        # back to the order of first mention, per category: the previous summary's kept
        # (those before cut that were kept, then all from cut on: when any artifact
        # mentioned again is left out, cut is past the end), then the new ones kept
        kept_again = {at[key] for key in keep if key in at}
        below = sorted(chain(extra, (p for p in kept_again if p < cut)))
        kept_new = set(keep).difference(at) if len(keep) > len(kept_again) else ()
        kept, next_index, next_base, next_cost = _carry(state, below, cut, new_by, kept_new)
        return kept, len(state.costs) + len(new) - sum(map(len, kept.values())), next_index, next_base, next_cost

    def _fold_any(self, prior: str, segments: list[tuple[str, str]]) -> str:
        """The fold for a previous summary whose artifacts repeat (one this distiller did
        not write): every artifact's last mention in one dict, sorted whole."""
        prior_arts, prior_notes = _parse_own_summary(prior)
        last_seen: dict[tuple[str, str], int] = {}
        by: dict[str, dict[str, None]] = {c: {} for c in _LABELS}  # the same, per category
        k = 0
        for category, values in prior_arts.items():
            if values:
                last_seen.update(zip(zip(repeat(category), values), range(k, k + len(values))))
                by[category] = dict.fromkeys(values)
                k += len(values)
        for seg, text in enumerate([t for _, t in prior_notes] + [t for _, t in segments]):
            keys, offsets, per_category = _mentions(text)
            if keys:
                last_seen.update(zip(keys, map(((seg + 1) * _SPAN).__add__, offsets)))
                for category, values in per_category:
                    by[category].update(zip(values, repeat(None)))
        artifact_block, omitted = self._artifact_block(by, last_seen)
        return self._finish(artifact_block, omitted, prior_notes, segments)

    def _candidates(
        self, prior_notes: list[tuple[str, str]], segments: list[tuple[str, str]]
    ) -> tuple[list[str], list[str], int]:
        """The sentences a summary may quote (clipped), their speakers, and how many of them
        come first from the previous notes; the excerpt's follow in order."""
        clip = self.max_sentence_chars
        texts = [_clip(text, clip) for _, text in prior_notes]
        speakers = [speaker for speaker, _ in prior_notes]
        for speaker, text in segments:
            if speaker == "Call":
                continue  # "[called tool X] {...}": its artifacts are listed already
            clipped = _clipped_sentences(text, clip)
            texts.extend(clipped)
            speakers.extend(repeat(speaker, len(clipped)))
        return texts, speakers, len(prior_notes)

    def _artifact_block(self, by: dict[str, dict[str, None]], last_seen: dict[tuple[str, str], int]) -> tuple[str, int]:
        if _rendered_length(by) <= self.max_chars:
            return _render(by), 0
        # keep the most recently mentioned artifacts that fit, in their original order (the
        # order of first mention, which is last_seen's): newest mention first, and the sort
        # being stable (reverse=True included), ties go to the first mentioned
        order = list(last_seen)
        n = len(order)
        keys = sorted(range(n), key=list(last_seen.values()).__getitem__, reverse=True)
        room = self.max_chars - 40 - 15 * len(_LABELS)
        lengths = list(map(len, map(itemgetter(1), order)))
        costs = list(map((4).__add__, map(lengths.__getitem__, keys)))
        # while the running total fits, every one is kept; after that, the greedy pass skips
        # what does not fit, and stops once not even the cheapest of the rest would
        fit = bisect_right(list(accumulate(costs)), room)
        keep = keys[:fit]
        used = sum(costs[:fit])
        if fit < n:
            cheapest = min(costs[fit:])
            for i in range(fit, n):
                if used + cheapest > room:
                    break
                if used + costs[i] <= room:
                    keep.append(keys[i])
                    used += costs[i]
        kept: dict[str, list[str]] = {c: [] for c in _LABELS}
        # grouped by category (a stable sort keeps each one's values in their order)
        by_category = sorted(map(order.__getitem__, sorted(keep)), key=itemgetter(0))
        for category, group in groupby(by_category, key=itemgetter(0)):
            kept[category] = list(map(itemgetter(1), group))
        return _render(kept), n - len(keep)

    def _select(self, texts: list[str], speakers: list[str], priors: int, budget: int) -> list[tuple[str, str]]:
        """(speaker, text) of the most salient sentences that fit ``budget``, in order; the
        first ``priors`` are the previous summary's notes."""
        if budget <= 0 or not texts:
            return []
        features = list(map(_features, texts))
        tf = Counter(chain.from_iterable(f[0] for f in features))
        # a word's weight, log1p of its count, taken once per distinct word
        weight = dict(zip(tf, map(math.log1p, tf.values()))).__getitem__
        fsum, sqrt = math.fsum, math.sqrt
        seen_text: set[str] = set()
        ranked: list[tuple[float, int]] = []  # (-score, position)
        # words is a set: fsum makes the score independent of its iteration order, which
        # changes with PYTHONHASHSEED, so the summaries are the same in every process
        for i, (words, key, artifacts, decision, error) in enumerate(features):
            if key in seen_text:
                continue  # a repeat
            seen_text.add(key)
            score = fsum(map(weight, words)) / sqrt(1 + len(words))
            score += artifacts
            if decision:
                score += 10.0  # decisions and constraints go first: they are what a summary is for
            if error:
                score += 2.0
            speaker = speakers[i]
            if speaker == "User":
                score += 1.5
            elif speaker == "Tool" and not error:
                score -= 1.5
            if len(words) < 3:
                score -= 1.5
            if i < priors:
                score += 0.5
            ranked.append((-score, i))
        ranked.sort()
        costs = [len(texts[i]) + len(speakers[i]) + 5 for _, i in ranked]
        cheapest = list(accumulate(reversed(costs), min))[::-1]
        chosen: list[int] = []
        used = 0
        for k, (_, i) in enumerate(ranked):
            if used + cheapest[k] > budget:
                break  # not even the shortest one left fits
            if used + costs[k] <= budget:
                chosen.append(i)
                used += costs[k]
        return [(speakers[i], texts[i]) for i in sorted(chosen)]
