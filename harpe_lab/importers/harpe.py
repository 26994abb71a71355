"""Harpe journals (every generation) to and from `Conversation`.

`load_harpe` reads a journal with `harpe_lab.journal.Journal` — the turns Harpe itself
would read back, one `Turn` per `TurnRecord` — and keeps what a replay needs: the input,
the messages kept, the outcome and error, and one `Usage` per model reply of the turn's
own (subagent replies are counted in ``metadata["nested_usage"]``). `to_journal` writes
any conversation as a newest-generation (G5) journal that Harpe could resume from.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from .._text import message_chars
from ..conversation import Conversation, Turn
from ..errors import JournalError
from ..journal import Journal, JsonlLogger, TurnLog, TurnRecord
from ..messages import AssistantMessage, Usage

__all__ = ["load_harpe", "to_journal"]

_DAY = re.compile(r"\d{4}")
_TWO = re.compile(r"\d{2}")
_CLOCK = re.compile(r"\d{2}-\d{2}-\d{2}")
_HEX16 = re.compile(r"[0-9a-f]{16}")


def _conversation_id(path: Path) -> str:
    """The file's stem; for Harpe's ``logs/sessions/YYYY/MM/DD/HH-MM-SS.jsonl`` the date
    is included, since the stem alone repeats every day."""
    parts = path.parts
    if (len(parts) >= 4 and _CLOCK.fullmatch(path.stem) and _DAY.fullmatch(parts[-4])
            and _TWO.fullmatch(parts[-3]) and _TWO.fullmatch(parts[-2])):
        return f"{parts[-4]}-{parts[-3]}-{parts[-2]}T{path.stem}"
    return path.stem


def _turn(record: TurnRecord) -> Turn:
    data = record.data
    metadata = {
        "request": record.request,
        "response": record.response,
        "turn_id": record.turn_id,
        "terminated": record.terminated,
        "lines": record.lines,
        "started": record.started,
        "ended": record.ended,
        "nested_usage": record.nested_usage,
    }
    return Turn(data.input, data.messages, data.outcome, data.error, record.usage, (), metadata)


def _cap(turns: list[Turn], max_chars: int) -> list[Turn]:
    """Harpe's resume cap applied to whole turns: drop the oldest while more than one is
    left and the total (Harpe's character measure) exceeds ``max_chars``. A turn measures
    what Harpe's resumed history holds of it (§3.6): its input, and its messages only when
    it was answered — the same rule as `Journal.load`."""
    sizes = [message_chars(t.input) + (sum(map(message_chars, t.messages)) if t.outcome == "answered" else 0)
             for t in turns]
    total = sum(sizes)
    first = 0
    while len(turns) - first > 1 and total > max_chars:
        total -= sizes[first]
        first += 1
    return turns[first:]


def load_harpe(path: Any, *, errors: str = "strict", max_chars: int | None = None) -> Conversation:
    """Read a Harpe journal of any generation into a `Conversation`.

    One `Turn` per record `harpe_lab.journal.Journal.records` reads (bracketed turns;
    for legacy unbracketed journals and SessionLogs, see that module): input, messages
    kept, outcome, error, and ``usage`` = one row per model reply of the turn itself.
    ``Turn.metadata`` holds the driver's ``request``/``response`` payloads, the
    ``turn_id``, whether the turn was ``terminated``, its ``lines``, ``started``/``ended``
    times and the subagents' ``nested_usage``. ``Conversation.metadata`` holds
    ``format="harpe"``, the ``generations`` seen, the ``reader`` used, and the
    ``problems`` (bad lines skipped with ``errors="skip"``) and ``notes`` as strings.

    ``max_chars`` keeps only the newest whole turns whose messages fit (Harpe's resume
    cap and character measure; the newest turn is always kept). Raises
    `harpe_lab.errors.MissingJournalError` for a missing file and `JournalError` for a
    bad line (unless ``errors="skip"``).
    """
    if max_chars is not None and (not isinstance(max_chars, int) or isinstance(max_chars, bool) or max_chars < 0):
        raise ValueError(f"max_chars must be None or an int >= 0, got {max_chars!r}")
    p = Path(os.fspath(path))
    records = Journal.records(p, errors=errors)
    turns = [_turn(r) for r in records]
    dropped = 0
    if max_chars is not None:
        kept = _cap(turns, max_chars)
        dropped, turns = len(turns) - len(kept), kept
    metadata = {
        "format": "harpe",
        "generations": records.generations,
        "reader": records.reader,
        "problems": tuple(str(x) for x in records.problems),
        "notes": tuple(str(x) for x in records.notes),
        "dropped_turns": dropped,
    }
    return Conversation(tuple(turns), id=_conversation_id(p), source=str(path), metadata=metadata)


def to_journal(conversation: Conversation, path: Any, *, clock: Any = None) -> Path:
    """Write ``conversation`` as a G5 Harpe journal at ``path`` (which must not exist) and
    return the path.

    Each turn is a bracket — request ``{"text": <input text>}``, response ``"turnEnd"`` —
    around the records ``Agent.ask`` writes: the user message, then per model reply
    ``harpe.model.replied`` + ``harpe.metering.usage`` (from ``Turn.usage``, in order)
    and the assistant message, the tool results, and the terminator. An interrupted turn
    that kept messages is written without a terminator (Harpe reads that back as
    interrupted with its messages); a turn's ``metadata["turn_id"]`` is reused when it is
    a Harpe turn id.

    What a journal cannot hold is not written: the system prompt, probes, compactions,
    message ids and ``pinned`` flags. Harpe drops a failed turn's messages when reading,
    so those do not come back either. Tool-call inputs must be JSON objects.
    """
    if not isinstance(conversation, Conversation):
        raise TypeError(f"to_journal writes a Conversation, got {type(conversation).__name__}")
    p = Path(os.fspath(path))
    if p.exists():
        raise JournalError("already exists; to_journal writes a new journal — remove it or choose another path",
                           path=p)
    with JsonlLogger(p, clock=clock) as logger:
        journal = Journal(logger)
        for turn in conversation.turns:
            _write_turn(journal, turn)
    return p


def _write_turn(journal: Journal, turn: Turn) -> None:
    turn_id = turn.metadata.get("turn_id")
    journal.request({"text": turn.input.text})
    log = TurnLog(journal.logger, turn_id if isinstance(turn_id, str) and _HEX16.fullmatch(turn_id) else None)
    log.user(turn.input)
    usage = list(turn.usage)

    def reply(u: Usage) -> None:
        log.model_replied(u.provider, u.model)
        log.usage(u)

    for message in turn.messages:
        if isinstance(message, AssistantMessage):
            if usage:
                reply(usage.pop(0))
            log.assistant(message)
        else:
            log.tool_results(message)
    for u in usage:  # replies whose message was not kept
        reply(u)
    if turn.outcome == "answered":
        log.answered()
    elif turn.outcome == "failed":
        log.failed(turn.error)
    elif not turn.messages:
        log.interrupted()
    journal.response("turnEnd")
