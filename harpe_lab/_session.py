"""The provider session: what the provider has received for the current request — the last
rendering a strategy produced plus every message appended since — with running sums, so a
request costs O(messages added), not O(messages sent).

The session holds that rendering as the strategy's own tuple (or, for a `deferred` request,
the strategy's own list, which only grows past it) and what was appended since as a list of
its own (`base` and `tail`); neither is ever changed in place, only replaced, so a recorded
request is ``(version, tail, len(tail))`` and no request copies the history. The
`version` is the base itself, or, when the base is an edit of the one before (stand-ins
put in place, as the edit policies do at many requests), a `Patch` of that one: a replay
then keeps a whole tuple only every `CHECKPOINT` edits, not one per edit, which a replay
of a long session would hold (and the garbage collector walk) by the million references.
`Sent` is that record, one entry per request, read back as `Rendered` requests.

Messages are told apart by the conversation's message ids: the engine hands the session a
map from each original message object to its turn (the engine first makes every position of
the conversation a distinct object, so a message object reused in two places is two
messages here). Messages a strategy made up (a summary message) belong to no turn.
"""

from __future__ import annotations

from itertools import compress, islice, repeat
from itertools import count as count_from
from operator import add, is_, is_not
from typing import Any, Mapping, Sequence

from ._checks import Invariants
from .messages import Message, Rendered, peek

__all__ = ["ProviderSession", "Patch", "Sent", "CHECKPOINT"]

CHECKPOINT = 16
"""At most this many edits in a row are kept as patches; the next one is kept whole."""


class Patch:
    """A rendering the session made by editing the one before: ``prev`` (a tuple or a
    `Patch`) followed by ``tail`` (the session's tail then, never appended to again), with
    the stand-in ``message`` at each ``(place, message)`` of ``places``, then ``appended``."""

    __slots__ = ("prev", "tail", "places", "appended", "depth")

    def __init__(self, prev: "tuple[Message, ...] | Patch", tail: list[Message], places: tuple[tuple[int, Message], ...],
                 appended: tuple[Message, ...]) -> None:
        self.prev = prev
        self.tail = tail
        self.places = places
        self.appended = appended
        self.depth = prev.depth + 1 if isinstance(prev, Patch) else 1

    def apply(self, prev: Sequence[Message]) -> list[Message]:
        """The rendering, given ``prev``'s messages."""
        out = list(prev)
        out += self.tail
        for place, message in self.places:
            out[place] = message
        out += self.appended
        return out


class ProviderSession:
    """The provider session of one replay. ``owner`` maps ``id()`` of each original message
    to its turn; ``count`` prices a message."""

    __slots__ = ("base", "_nbase", "tail", "version", "system", "_tok", "_syn", "_org", "_owner", "_count",
                 "turn_tokens", "shared", "_held", "_left")

    def __init__(self, owner: Mapping[int, int], count: Any) -> None:
        self.base: Sequence[Message] = ()
        """The last rendering adopted, its first `_nbase` messages: the strategy's tuple, or
        the list of a `deferred` request (which its strategy only appends to), never copied."""
        self._nbase = 0
        self.tail: list[Message] = []
        """The messages appended since; a new list at every adoption."""
        self.version: tuple[Message, ...] | Patch = ()
        """How a recorded request refers to `base`: the tuple itself, or a `Patch`."""
        self.system = ""
        # _tok[k] / _syn[k] / _org[k]: tokens, made-up tokens and original messages in messages[: k + 1]
        self._tok: list[int] = []
        self._syn: list[int] = []
        self._org: list[int] = []
        self._owner = owner
        self._count = count
        self.turn_tokens = 0
        """Tokens of the trailing run of the current turn's messages."""
        self.shared = 0
        """Leading messages identical to the previous request's."""
        # id() of each original message the session holds -> how many times; and those whose
        # count fell to 0 since `gone` was last asked (a fold is then O(what left), not
        # O(what the session holds): Codex may fold at every request, keeping 1,000 messages)
        self._held: dict[int, int] = {}
        self._left: set[int] = set()

    @property
    def length(self) -> int:
        return self._nbase + len(self.tail)

    @property
    def messages(self) -> tuple[Message, ...]:
        """The whole session as one tuple (O(messages): for checks and folds, not per request)."""
        base = self.base
        if type(base) is not tuple:  # a deferred request's list, which may have grown since
            base = tuple(base[: self._nbase])
        return base + tuple(self.tail) if self.tail else base

    def gone(self, keys: Mapping[int, Any]) -> set[int]:
        """Which of ``keys`` (``id()`` of original messages the session has held) it no longer
        holds: of those that left it since the last call, the ones not back."""
        left, held = self._left, self._held
        out = {k for k in left if not held.get(k) and k in keys}
        left.clear()
        return out

    def _enter(self, m: Message) -> None:
        k = id(m)
        if k in self._owner:
            held = self._held
            held[k] = held.get(k, 0) + 1

    def _leave(self, m: Message) -> None:
        k = id(m)
        held = self._held
        n = held.get(k)
        if n is not None:
            if n == 1:
                del held[k]
                self._left.add(k)
            else:
                held[k] = n - 1

    def _leave_all(self, ms: Any) -> None:
        """`_leave` each of ``ms``: in C when each original among them is held once, as one is
        unless a strategy sent it twice (a compaction may drop thousands at once)."""
        held = self._held
        keys = list(map(id, ms))
        counts = list(map(held.get, keys))
        if counts.count(1) + counts.count(None) < len(counts):
            for m in ms:
                self._leave(m)
            return
        self._left.update(compress(keys, map(held.pop, keys, repeat(None))))

    def _at(self, k: int) -> Message:
        n = self._nbase
        return self.base[k] if k < n else self.tail[k - n]

    @property
    def tokens(self) -> int:
        return self._tok[-1] if self._tok else 0

    @property
    def made_up_tokens(self) -> int:
        return self._syn[-1] if self._syn else 0

    @property
    def originals(self) -> int:
        return self._org[-1] if self._org else 0

    def prefix_tokens(self, k: int) -> int:
        return self._tok[k - 1] if k else 0

    def append(self, m: Message, turn: int) -> None:
        n = self._count(m)
        key = id(m)
        owner = self._owner.get(key)
        if owner is not None:
            held = self._held
            held[key] = held.get(key, 0) + 1
        tok = self._tok
        if tok:  # `_grow`, written out: this runs once per message of the recording
            tok.append(tok[-1] + n)
            syn = self._syn
            syn.append(syn[-1] + (n if owner is None else 0))
            org = self._org
            org.append(org[-1] + (owner is not None))
        else:
            self._grow(n, owner is not None)
        self.tail.append(m)
        self.turn_tokens = self.turn_tokens + n if owner == turn else 0

    def _push(self, m: Message) -> None:
        self._enter(m)
        self._grow(self._count(m), self._owner.get(id(m)) is not None)

    def _grow(self, n: int, original: bool) -> None:
        """The sums of one more message of ``n`` tokens (once per message appended, so the
        lists are read here rather than through the properties)."""
        tok, syn, org = self._tok, self._syn, self._org
        if tok:
            tok.append(tok[-1] + n)
            syn.append(syn[-1] + (0 if original else n))
            org.append(org[-1] + original)
        else:
            tok.append(n)
            syn.append(0 if original else n)
            org.append(int(original))

    def sent(self) -> None:
        """A request went out: the next one shares all of it so far."""
        self.shared = self.length

    def _take(self, new: Sequence[Message], places: Sequence[int] = (), appended: int = 0,
              rendered: Rendered | None = None) -> None:
        """``new`` is the session now (its sums already are): a tuple, or ``rendered``'s
        list (`peek`). ``places``: ``new`` is the session with stand-ins there, followed by
        its last ``appended`` messages."""
        old = self.version
        n = len(new)
        if places and (not isinstance(old, Patch) or old.depth < CHECKPOINT):
            self.version = Patch(old, self.tail, tuple((p, new[p]) for p in places), tuple(new[n - appended :]))
        else:  # a checkpoint: the tuple itself
            self.version = new if rendered is None else rendered.messages
        self.base, self._nbase = new, n
        self.tail = []  # recorded requests still refer to the old tail

    def adopt(self, rendered: Rendered, turn: int, i: int, checks: Invariants,
              edits: tuple[int, ...] | None = None) -> None:
        """Make the request ``rendered`` the session, reusing the sums of the part it shares
        with the old one, and check the invariants on what is new. ``edits`` is the
        strategy's `Compaction.edits`: when given, the request is the session followed by
        what was appended since, except at those positions, and nothing else is compared
        (nor, when the strategy defers it, is the request's tuple built)."""
        new = peek(rendered)
        checks.not_empty(new, i)
        if edits is None or not self._edit(new, rendered, i, checks, edits):
            new = rendered.messages
            if not isinstance(new, tuple):  # a strategy's own request type
                new = tuple(new)
            self._rebuild(new, i, checks)
        self.system = rendered.system
        count, owner_of = self._count, self._owner.get
        trailing = 0
        for m in reversed(new):
            if owner_of(id(m)) != turn:
                break
            trailing += count(m)
        self.turn_tokens = trailing

    def _edit(self, new: Sequence[Message], rendered: Rendered, i: int, checks: Invariants,
              edits: tuple[int, ...]) -> bool:
        """Apply a strategy's promised edits in O(edits + appended + messages after the
        first edit); False (nothing changed) when the promise is visibly broken at its ends.
        ``new`` is ``rendered``'s messages, read (`peek`): the session may keep it as its
        base, but builds the tuple only for a checkpoint."""
        at = self._at
        n = self._nbase + len(self.tail)
        if len(new) < n or (n and (n - 1) not in edits and new[n - 1] is not at(n - 1)):
            return False
        if edits:
            places = sorted({p for p in edits if p < n})
            if places and places[0] < 0:
                return False
            places = [p for p in places if new[p] is not at(p)]
        else:  # the request only grew: the common case
            places = []
        if places:
            count, owner_of = self._count, self._owner.get
            tok, syn, org = self._tok, self._syn, self._org
            shifts = []
            dt = ds = do = 0
            for p in places:
                before_t, before_s, before_o = (tok[p - 1], syn[p - 1], org[p - 1]) if p else (0, 0, 0)
                was_t, was_s, was_o = tok[p] - before_t, syn[p] - before_s, org[p] - before_o
                self._leave(at(p))
                m = new[p]
                self._enter(m)
                t = count(m)
                original = owner_of(id(m)) is not None
                dt += t - was_t
                ds += (0 if original else t) - was_s
                do += original - was_o
                shifts.append((dt, ds, do))
            for (p, stop), (dt, ds, do) in zip(zip(places, places[1:] + [n]), shifts):
                if dt:
                    tok[p:stop] = map(add, tok[p:stop], repeat(dt))
                if ds:
                    syn[p:stop] = map(add, syn[p:stop], repeat(ds))
                if do:
                    org[p:stop] = map(add, org[p:stop], repeat(do))
            self.shared = min(self.shared, places[0])
            for p in places:
                checks.pairs_kept(new, i, max(0, p - 1), p + 2)
        checks.pairs_kept(new, i, max(0, n - 1))
        for m in new[n:]:
            self._push(m)
        if places:
            self._take(new, places, len(new) - n, rendered)
        else:  # new is the session followed by new[n:]: the session goes on
            self.tail.extend(new[n:])
        return True

    def _rebuild(self, new: tuple[Message, ...], i: int, checks: Invariants) -> None:
        """Find what ``new`` shares with the session by comparing them, and rebuild the rest."""
        old = self.messages
        self._take(new)
        # the common prefix: the first place where they differ, found in C
        k = next(compress(count_from(), map(is_not, new, old)), min(len(old), len(new)))
        self.shared = min(self.shared, k)
        tok, syn, org = self._tok, self._syn, self._org
        before = (tok[k - 1], syn[k - 1], org[k - 1]) if k else (0, 0, 0)
        old_t, old_s, old_o = tok[k:], syn[k:], org[k:]  # old's sums past the prefix
        del tok[k:], syn[k:], org[k:]
        # After the prefix, new may hold runs of old's messages again, in old's order: a window
        # that slid (a summary, or turns taken back in, then old's newest messages), or the
        # user messages a compaction kept (Codex's, at every request when it thrashes). A run's
        # sums are old's, rebased: only what is new is counted. Runs are found in C, where the
        # first original message after the last run stands in old (with, in all, at most about
        # twice the messages of both compared), and how far the two agree from there.
        count, owner_of = self._count, self._owner.get
        enter = self._enter
        n, n_old = len(new), len(old)
        scans = 2 * (n_old - k) + n
        j = k  # where in old a run is looked for from
        unchecked = max(0, k - 1)  # the pairs from here on were not checked when old was sent
        t, s, o = before
        p = k
        while p < n:
            m = new[p]
            original = owner_of(id(m)) is not None
            e = -1
            if j < n_old:
                if old[j] is m:
                    e = j
                elif scans > 0 and original:
                    stop = min(n_old, j + scans)
                    e = next(compress(count_from(j), map(is_, islice(old, j, stop), repeat(m))), -1)
                    scans -= (e if e >= 0 else stop) - j
            if e < 0:
                n_m = count(m)
                t += n_m
                if not original:
                    s += n_m
                else:
                    o += 1
                    enter(m)
                tok.append(t)
                syn.append(s)
                org.append(o)
                p += 1
                continue
            # a run of one message (each user message Codex keeps, when they stood between
            # replies) is told apart and taken without the machinery of a long one
            long = p + 1 < n and e + 1 < n_old and new[p + 1] is old[e + 1]
            run = next(compress(count_from(), map(is_not, islice(new, p, None), islice(old, e, None))),
                       min(n - p, n_old - e)) if long else 1
            # the pairs inside a run were checked when old was sent; only where it meets what
            # is new (its first call's results, its last results' call may be gone) are they not
            checks.pairs_kept(new, i, unchecked, p + 1)
            unchecked = max(p + 1, p + run - 1)
            a = e - k
            base_t, base_s, base_o = (old_t[a - 1], old_s[a - 1], old_o[a - 1]) if a else before
            if long:
                tok.extend(map(add, old_t[a : a + run], repeat(t - base_t)))
                syn.extend(map(add, old_s[a : a + run], repeat(s - base_s)))
                org.extend(map(add, old_o[a : a + run], repeat(o - base_o)))
                t, s, o = tok[-1], syn[-1], org[-1]
            else:
                t += old_t[a] - base_t
                s += old_s[a] - base_s
                o += old_o[a] - base_o
                tok.append(t)
                syn.append(s)
                org.append(o)
            if e > j:  # what old held between the last run and this one
                self._leave_all(old[j:e])
            p += run
            j = e + run
        self._leave_all(old[j:])
        checks.pairs_kept(new, i, unchecked)


class Sent(Sequence[Rendered]):
    """What each request sent, recorded in O(1): ``(version, tail, length, system)``, the
    request being ``version``'s messages followed by ``tail[:length]``.

    ``version`` is the rendering the provider session last adopted: the tuple itself, or a
    `Patch` of the one before. ``tail`` is what was appended
    since, a list that only grows until the next adoption starts a new one; so consecutive
    requests share both. A request's `Rendered` is built the first time it is asked for
    (and kept, so it is the same object every time).
    """

    __slots__ = ("_at", "_made", "_resolved")

    def __init__(self) -> None:
        self._at: list[tuple[tuple[Message, ...] | Patch, list[Message], int, str]] = []
        self._made: dict[int, Rendered] = {}
        # the last patches resolved, by id (the patch is held so its id stays unique): a
        # walk over the requests in order resolves each patch from the one before
        self._resolved: dict[int, tuple[Patch, tuple[Message, ...]]] = {}

    def add(self, version: tuple[Message, ...] | Patch, tail: list[Message], length: int, system: str) -> None:
        self._at.append((version, tail, length, system))

    def __len__(self) -> int:
        return len(self._at)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self._at))[i]]
        i = range(len(self._at))[i]  # negative indices, and IndexError, as a list has them
        made = self._made.get(i)
        if made is None:
            version, tail, length, system = self._at[i]
            base = version if isinstance(version, tuple) else self._resolve(version)
            made = self._made[i] = Rendered(system, base + tuple(tail[:length]) if length else base)
        return made

    def _resolve(self, patch: Patch) -> tuple[Message, ...]:
        resolved = self._resolved
        todo: list[Patch] = []
        at: tuple[Message, ...] | Patch = patch
        while isinstance(at, Patch):
            hit = resolved.get(id(at))
            if hit is not None and hit[0] is at:
                at = hit[1]
                break
            todo.append(at)
            at = at.prev
        messages = at
        for p in reversed(todo):
            messages = tuple(p.apply(messages))
        if len(resolved) >= 8:
            resolved.pop(next(iter(resolved)), None)
        resolved[id(patch)] = (patch, messages)
        return messages
