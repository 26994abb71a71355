"""The provider session: what the provider has received for the current request — the last
rendering a strategy produced plus every message appended since — with running sums, so a
request costs O(messages added), not O(messages sent).

Messages are told apart by the conversation's message ids: the engine hands the session a
map from each original message object to its turn (the engine first makes every position of
the conversation a distinct object, so a message object reused in two places is two
messages here). Messages a strategy made up (a summary message) belong to no turn.
"""

from __future__ import annotations

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
        # A window that slid dropped old's first `shift` messages and kept the rest, in
        # order, at the front of new: their sums are old's, less what was dropped.
        shift = 0
        if k == 0 and len(old) > 1:
            first = new[0]
            for j, m in enumerate(old):
                if m is first:
                    if j and len(new) >= len(old) - j and all(map(is_, new, old[j:])):
                        shift = j
                    break
        if shift:
            kept = len(old) - shift
            # the pairs inside the kept run were checked when they were sent; only its
            # first message (its call may be gone) and its end (what follows is new) are not
            checks.pairs_kept(new, i, 0, 1)
            checks.pairs_kept(new, i, max(1, kept - 1))
            base_t, base_s, base_o = self._tok[shift - 1], self._syn[shift - 1], self._org[shift - 1]
            self._tok = [v - base_t for v in self._tok[shift:]]
            self._syn = [v - base_s for v in self._syn[shift:]]
            self._org = [v - base_o for v in self._org[shift:]]
            self.messages = old[shift:]  # recorded requests still refer to old: a new list
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
