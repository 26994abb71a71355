"""The one error hierarchy of harpe_lab.

::

    HarpeLabError
     ├── JournalError      (also FileNotFoundError when the journal is missing)
     ├── StrategyError     (also ValueError: a strategy was configured or behaved wrongly)
     │    └── BudgetError  (what must be kept does not fit the budget)
     ├── ImportFormatError (also ValueError: a transcript in no known format)
     ├── ConversationIndexError (also IndexError and KeyError: no such conversation in a file)
     ├── EvaluationError   (also ValueError: a probe does not fit the replay it is applied to)
     ├── AgentError        (also ValueError: ask/chat was given something it cannot use)
     ├── RedactionError    (also ValueError: a redactor configured with a bad value)
     └── ModelError        (a model call through litellm failed)

Every message says what was wrong and how to fix it.
"""

from __future__ import annotations

__all__ = [
    "HarpeLabError",
    "JournalError",
    "MissingJournalError",
    "StrategyError",
    "BudgetError",
    "ImportFormatError",
    "ConversationIndexError",
    "ModelError",
    "EvaluationError",
    "AgentError",
    "RedactionError",
]


class HarpeLabError(Exception):
    """Root of every error harpe_lab raises on purpose."""


class JournalError(HarpeLabError):
    """A journal could not be read or written.

    ``path`` and ``line`` (1-based, ``None`` when the whole file is at fault) locate the
    problem; ``event`` names the record's event when it was known.
    """

    def __init__(self, message: str, *, path: object = None, line: int | None = None,
                 event: str | None = None) -> None:
        self.path = None if path is None else str(path)
        self.line = line
        self.event = event
        where = ""
        if self.path is not None:
            where = f"{self.path}:{line}: " if line is not None else f"{self.path}: "
        about = f"({event}) " if event else ""
        super().__init__(f"{where}{about}{message}")
        self.reason = message


class MissingJournalError(JournalError, FileNotFoundError):
    """The journal file does not exist (a ``JournalError`` and a ``FileNotFoundError``)."""


class StrategyError(HarpeLabError, ValueError):
    """A strategy was configured with a bad value, or broke an invariant during a replay."""


class BudgetError(StrategyError):
    """What a strategy must always keep does not fit in its token budget."""


class ImportFormatError(HarpeLabError, ValueError):
    """A transcript file is in no format harpe_lab knows, or is malformed for its format."""


class ConversationIndexError(HarpeLabError, IndexError, KeyError):
    """``index=`` names no conversation of a multi-conversation file (the message lists the ids)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ModelError(HarpeLabError):
    """A model call made through litellm failed in a way the caller must see."""


class EvaluationError(HarpeLabError, ValueError):
    """A probe or an evaluation input does not fit the replay it is applied to."""


class AgentError(HarpeLabError, ValueError):
    """`ask` or `chat` was given something it cannot use: a tool it cannot describe, an
    attachment that is not a file, a bad option."""


class RedactionError(HarpeLabError, ValueError):
    """A `harpe_lab.redact.Redactor` was configured with a bad value."""
