"""The recording as the engine replays it: each turn's model calls, and every message a
distinct object with its id, turn and tool pair."""

from __future__ import annotations

import copy
import weakref
from itertools import chain, count, repeat
from typing import Sequence

from ..conversation import Conversation
from ..messages import AssistantMessage, Message, ToolResults

__all__ = ["rounds", "recording", "Recording"]

_RECORDINGS: dict[int, "Recording"] = {}  # id(conversation) -> its recording, while it lives


def rounds(messages: Sequence[Message]) -> list[tuple[Message | None, list[Message]]]:
    """Split a turn's messages into model calls: (reply, messages appended after it)."""
    out: list[tuple[Message | None, list[Message]]] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            out.append((m, []))
        elif out:
            out[-1][1].append(m)
        else:  # tool results with no reply before them (a malformed source): keep them
            out.append((None, [m]))
    if out and out[-1][1]:
        # the recording stops after a tool round (the turn was cut short): the engine would
        # have sent the next request, so it is modelled, with no reply.
        out.append((None, []))
    return out


def recording(conversation: Conversation) -> "Recording":
    """``conversation``'s `Recording`, made once per conversation object and kept while it
    lives: every strategy replayed on a session reads the same (a compare replays each
    session under every preset)."""
    key = id(conversation)
    rec = _RECORDINGS.get(key)
    if rec is None or rec.source() is not conversation:
        rec = _RECORDINGS[key] = Recording(conversation)
        weakref.finalize(conversation, _RECORDINGS.pop, key, None)
    return rec


class Recording:
    """The conversation as the engine replays it: every message position a distinct object
    (a message object reused in two places is copied), with its id, turn and tool pair,
    and each turn's model calls. Read-only: replays share it (`recording`)."""

    __slots__ = ("source", "turns", "calls", "messages", "ids", "owner", "pairs", "models")

    def __init__(self, conversation: Conversation) -> None:
        self.source = weakref.ref(conversation)
        self.turns: list[tuple[Message, ...]] = [turn.all_messages for turn in conversation.turns]
        everything = list(chain.from_iterable(self.turns))
        keys = list(map(id, everything))
        if len(set(keys)) < len(keys):  # an object in two places: copy it where it comes again
            seen: set[int] = set()
            for t, msgs in enumerate(self.turns):
                fresh = []
                for m in msgs:
                    if id(m) in seen:
                        m = copy.copy(m)
                    seen.add(id(m))
                    fresh.append(m)
                self.turns[t] = tuple(fresh)
            everything = list(chain.from_iterable(self.turns))
            keys = list(map(id, everything))
        self.messages = everything
        """Every message position, in order."""
        self.ids: dict[int, str] = dict(zip(keys, chain.from_iterable(turn.ids for turn in conversation.turns)))
        self.owner: dict[int, int] = dict(
            zip(keys, chain.from_iterable(map(repeat, count(), map(len, self.turns)))))
        # a reply with calls and the results right after it (a turn starts with its input,
        # so no pair crosses turns)
        self.pairs: dict[int, tuple[Message, Message]] = {}
        for m, after in zip(everything, everything[1:]):
            if isinstance(after, ToolResults) and isinstance(m, AssistantMessage) and m.calls:
                self.pairs[id(m)] = self.pairs[id(after)] = (m, after)
        self.calls = [rounds(msgs[1:]) or [(None, [])] for msgs in self.turns]
        """Each turn's model calls (`rounds`; a turn with none still makes one request)."""
        self.models = conversation.models()
