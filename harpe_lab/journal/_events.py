"""The names a journal is made of (§2): events, scopes, outcomes, generations, and the
*kind* of each event the turn logic reads."""

from __future__ import annotations

from typing import Literal

__all__ = [
    "REQUEST", "RESPONSE", "MESSAGE", "STARTED", "ANSWERED", "INTERRUPTED", "FAILED", "USAGE", "MODEL_SENT",
    "MODEL_REPLIED", "MODEL_FAILED", "MODEL_RETRIED", "MODEL_GAVE_UP", "SESSION_MESSAGE", "LEGACY_USAGE",
    "TURN_SCOPE", "CALL_SCOPE", "TURN_PREFIX", "Outcome", "OUTCOMES", "TERMINATOR_OUTCOME", "GENERATIONS", "Kind",
    "KIND"
]

REQUEST = "harpe.turn.request"
RESPONSE = "harpe.turn.response"
MESSAGE = "harpe.turn.message"
STARTED = "harpe.turn.started"
ANSWERED = "harpe.turn.answered"
INTERRUPTED = "harpe.turn.interrupted"
FAILED = "harpe.turn.failed"
USAGE = "harpe.metering.usage"
MODEL_SENT = "harpe.model.sent"
MODEL_REPLIED = "harpe.model.replied"
MODEL_FAILED = "harpe.model.failed"
MODEL_RETRIED = "harpe.model.retried"
MODEL_GAVE_UP = "harpe.model.gaveUp"
SESSION_MESSAGE = "harpe.sessionlog.message"
"""Synthetic event of a SessionLog line (Harpe never wrote it; the reader names them so)."""
LEGACY_USAGE = ("harpe.model", "harpe.models.replied", MODEL_REPLIED)
"""Older events that carry token counts (§2.5) when they have token fields."""

TURN_SCOPE = "harpe.turn.id"
CALL_SCOPE = "harpe.tools.call"
TURN_PREFIX = TURN_SCOPE + "="

Outcome = Literal["answered", "interrupted", "failed"]
OUTCOMES = ("answered", "interrupted", "failed")
TERMINATOR_OUTCOME = {ANSWERED: "answered", INTERRUPTED: "interrupted", FAILED: "failed"}
GENERATIONS = ("G1", "G2", "G3", "G4", "G4b", "G5", "SessionLog")


class Kind:
    """What the turn logic makes of an event: one dictionary lookup per line (`KIND`).
    Plain ints, ordered so that one comparison sorts a line: ``> RESPONSE`` is a record a
    turn reads (held in the open bracket's span), ``>= USAGE`` a usage row."""

    OTHER = 0
    REQUEST = 1
    RESPONSE = 2
    MESSAGE = 3
    STARTED = 4
    END = 5
    USAGE = 6
    OLD_USAGE = 7


KIND = {
    REQUEST: Kind.REQUEST,
    RESPONSE: Kind.RESPONSE,
    MESSAGE: Kind.MESSAGE,
    STARTED: Kind.STARTED,
    ANSWERED: Kind.END,
    INTERRUPTED: Kind.END,
    FAILED: Kind.END,
    USAGE: Kind.USAGE,
    **{name: Kind.OLD_USAGE for name in LEGACY_USAGE},
}
