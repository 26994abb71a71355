"""What the offline matcher reads: a conversation's messages as passages (with the day they
were said on and the speaker), and a replay's requests as haystacks."""

from __future__ import annotations

from typing import Any, Iterable

from ..conversation import Conversation
from ..errors import EvaluationError
from ..findable import Haystack, Passage, parse_timestamp
from ..messages import Message
from ..summarize import messages_text

__all__ = ["message_passages"]

_DATE_KEYS = ("date_time", "date", "timestamp")


def message_passages(conversation: Conversation, ids: Iterable[str] | None = None) -> list[Passage]:
    """One `harpe_lab.findable.Passage` per message (``ids``, default: every message, in
    conversation order): its text (`harpe_lab.summarize.messages_text`), the day its turn was
    said on when the turn's metadata holds a session timestamp (``date_time`` for LoCoMo,
    ``date`` for LongMemEval), and the speaker's name when the conversation's metadata names
    the two speakers (LoCoMo's ``speaker_a`` plays the user, ``speaker_b`` the assistant)."""
    if not isinstance(conversation, Conversation):
        raise TypeError(f"message_passages takes a Conversation, got {type(conversation).__name__}")
    meta = conversation.metadata
    speakers = {"user": str(meta.get("speaker_a") or ""), "assistant": str(meta.get("speaker_b") or "")}
    where: dict[str, tuple[Message, Any, str]] = {}
    for turn in conversation.turns:
        day = next((d for k in _DATE_KEYS if (d := parse_timestamp(turn.metadata.get(k))) is not None), None)
        for j, (m, mid) in enumerate(zip(turn.all_messages, turn.ids)):
            speaker = speakers["user"] if j == 0 else speakers["assistant"] if m.role == "assistant" else ""
            where[mid] = (m, day, speaker)
    wanted = conversation.message_ids() if ids is None else list(ids)
    missing = [i for i in wanted if i not in where]
    if missing:
        raise EvaluationError(f"conversation {conversation.id!r} has no message {missing[0]!r}")
    out = []
    for mid in wanted:
        m, day, speaker = where[mid]
        out.append(Passage(messages_text([m]), day, speaker))
    return out



def _message_by_id(conversation: Conversation) -> dict[str, Message]:
    return {mid: m for turn in conversation.turns for m, mid in zip(turn.all_messages, turn.ids)}


def _rendered_text(replay: Any, i: int) -> str:
    """What request ``i`` holds as text: its system prompt (a summary included), the summary
    the context held when not already in it, and its messages."""
    rendered = replay.rendered(i)
    text = messages_text(rendered)
    summary = replay.summary(i)
    if summary and summary not in rendered.system:
        text = summary + "\n\n" + text
    return text


def _lines(text: str) -> list[Passage]:
    """A summary or system prompt as passages, one per non-empty line, so its words are
    matched line by line as a message's are."""
    return [Passage(line) for line in (x.strip() for x in (text or "").splitlines()) if line]


class _Views:
    """What one replay's requests held, as matcher haystacks, built once per request.

    ``full`` is shared by the replays of one call (`compare`, `retention`): every replay of a
    conversation has the same full history, so its haystacks are built once per call."""

    def __init__(self, replay: Any, full: dict[tuple[int, tuple[str, ...]], Haystack] | None = None) -> None:
        self.replay = replay
        conv = replay.conversation
        self.by_id = _message_by_id(conv)
        ids = conv.message_ids()
        self.passage = dict(zip(ids, message_passages(conv, ids)))
        self._sent: dict[int, tuple[Haystack, Haystack]] = {}
        self._full = {} if full is None else full

    def sent(self, i: int) -> tuple[Haystack, Haystack]:
        """(everything request ``i`` held, its summary alone)."""
        if i not in self._sent:
            rp = self.replay
            rendered = rp.rendered(i)
            sent = rp.sent_ids(i)
            originals = {id(self.by_id[mid]) for mid in sent}
            summary = rp.summary(i)
            passages = [self.passage[mid] for mid in sent] + _lines(rendered.system)
            if summary and summary not in rendered.system:
                passages += _lines(summary)
            for m in rendered.messages:
                if id(m) not in originals:  # a strategy's own message, e.g. a summary turn
                    passages += _lines(messages_text([m]))
            self._sent[i] = (Haystack(passages), Haystack(_lines(summary)))
        return self._sent[i]

    def full(self, i: int) -> Haystack:
        """Everything the full history held at request ``i`` (system prompt included)."""
        conv = self.replay.conversation
        # the conversation object is alive for the whole call, so its id is a safe key
        key = (id(conv), tuple(self.replay.available_ids(i)))
        if key not in self._full:
            self._full[key] = Haystack([self.passage[mid] for mid in key[1]] + _lines(conv.system))
        return self._full[key]

