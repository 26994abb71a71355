"""The provider session: what the provider has received for the current request — the last
rendering a strategy produced plus every message appended since — with running sums, so a
request costs O(messages added), not O(messages sent).

Messages are told apart by the conversation's message ids: the engine hands the session a
map from each original message object to its turn (the engine first makes every position of
the conversation a distinct object, so a message object reused in two places is two
messages here). Messages a strategy made up (a summary message) belong to no turn.
"""

from __future__ import annotations

from itertools import islice
from operator import is_
from typing import Any, Mapping

from ._checks import Invariants
from .messages import Message

__all__ = ["ProviderSession"]


class ProviderSession:
    """The provider session of one replay. ``owner`` maps ``id()`` of each original message
    to its turn; ``count`` prices a message."""

    __slots__ = ("messages", "system", "_tok", "_syn", "_org", "_owner", "_count", "turn_tokens", "shared")

    def __init__(self, owner: Mapping[int, int], count: Any) -> None:
        self.messages: list[Message] = []
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
        owner = self._owner.get(id(m))
        self._tok.append(self.tokens + n)
        self._syn.append(self.made_up_tokens + (n if owner is None else 0))
        self._org.append(self.originals + (owner is not None))
        self.messages.append(m)
        self.turn_tokens = self.turn_tokens + n if owner == turn else 0

    def _push(self, m: Message) -> None:
        n = self._count(m)
        original = self._owner.get(id(m)) is not None
        self._tok.append(self.tokens + n)
        self._syn.append(self.made_up_tokens + (0 if original else n))
        self._org.append(self.originals + original)
        self.messages.append(m)

    def sent(self) -> None:
        """A request went out: the next one shares all of it so far."""
        self.shared = len(self.messages)

    def adopt(self, system: str, new: tuple[Message, ...], turn: int, i: int, checks: Invariants) -> None:
        """Make the rendering ``(system, new)`` the session, reusing the sums of the part it
        shares with the old one, and check the invariants on what is new."""
        checks.not_empty(new, i)
        old = self.messages
        if len(new) >= len(old) and all(map(is_, new, old)):
            k = len(old)
        else:
            k = 0
            limit = min(len(old), len(new))
            while k < limit and old[k] is new[k]:
                k += 1
        self.shared = min(self.shared, k)
        # A window that slid: after the common prefix — and at most one new message, a summary
        # that replaced or preceded the old one — new goes on with old's messages from some
        # j on, to old's end. Their sums are old's, rebased: a slide costs no recount.
        c, j = k, -1
        for c in (k, k + 1):
            if c >= len(new) or k >= len(old) - 1:
                break
            first = new[c]
            for at in range(k, len(old)):
                if old[at] is first:
                    j = at
                    break
            if j > k or (j == k and c > k):
                block = len(old) - j
                if len(new) - c >= block and all(map(is_, islice(new, c, None), islice(old, j, None))):
                    break
            j = -1
        if j >= 0:
            kept = c + len(old) - j
            # the pairs inside the prefix and the block were checked when they were sent; only
            # where they meet what is new (the block's first call may be gone) are they not
            checks.pairs_kept(new, i, max(0, k - 1), c + 1)
            checks.pairs_kept(new, i, max(c + 1, kept - 1))
            tok, syn, org = self._tok, self._syn, self._org
            base_t, base_s, base_o = (tok[j - 1], syn[j - 1], org[j - 1]) if j else (0, 0, 0)
            block_t, block_s, block_o = tok[j:], syn[j:], org[j:]
            del tok[k:], syn[k:], org[k:]
            self.messages = old[:k]  # recorded requests still refer to old: a new list
            for m in new[k:c]:
                self._push(m)
            at_t, at_s, at_o = self.tokens - base_t, self.made_up_tokens - base_s, self.originals - base_o
            tok.extend([v + at_t for v in block_t])
            syn.extend([v + at_s for v in block_s])
            org.extend([v + at_o for v in block_o])
            self.messages.extend(old[j:])
            k = kept
        else:
            checks.pairs_kept(new, i, max(0, k - 1))
            del self._tok[k:], self._syn[k:], self._org[k:]
            if k < len(old):
                self.messages = old[:k]  # recorded requests still refer to old: a new list
        self.system = system
        count, owner_of = self._count, self._owner.get
        tok, syn, org = self.tokens, self.made_up_tokens, self.originals
        for m in new[k:]:
            n = count(m)
            tok += n
            if owner_of(id(m)) is None:
                syn += n
            else:
                org += 1
            self._tok.append(tok)
            self._syn.append(syn)
            self._org.append(org)
        self.messages.extend(new[k:])
        trailing = 0
        for m in reversed(new):
            if owner_of(id(m)) != turn:
                break
            trailing += count(m)
        self.turn_tokens = trailing
