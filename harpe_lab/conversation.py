"""The recorded conversation every importer produces and every replay consumes.

A `Conversation` is a sequence of `Turn` s. A turn holds the user's input, the messages the
agent produced in it (assistant replies and tool results, in order), its outcome, the usage
the provider reported for each model reply, and one stable id per message. Importers may
also attach `Probe` s (questions whose answers lie in earlier messages) and
`RecordedCompaction` s (where the recording agent itself compacted, with its summary).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Iterator, Literal, Mapping

from .messages import AssistantMessage, Message, ToolResults, Usage, UserInput

__all__ = ["Turn", "Conversation", "Probe", "RecordedCompaction", "Outcome"]

Outcome = Literal["answered", "interrupted", "failed"]
_OUTCOMES = ("answered", "interrupted", "failed")


def _freeze(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if not isinstance(value, tuple):
        object.__setattr__(obj, name, tuple(value))


def _thaw(value: Any) -> Any:
    """``value`` with every read-only mapping view in it made a dict again (views do not pickle)."""
    if isinstance(value, Mapping):
        return {k: _thaw(v) for k, v in value.items()}
    if type(value) in (list, tuple):
        return type(value)(_thaw(v) for v in value)
    return value


def _frozen_mapping(obj: object, name: str) -> None:
    value = getattr(obj, name)
    if not isinstance(value, MappingProxyType):
        object.__setattr__(obj, name, MappingProxyType(dict(value)))


@dataclass(frozen=True)
class Probe:
    """A question asked at turn ``asked_at`` whose ``answer`` lies in the ``evidence``
    messages (ids); the replay can tell whether that evidence was still in context."""

    id: str
    asked_at: int
    question: str
    answer: str
    evidence: tuple[str, ...] = ()
    category: str = ""

    def __post_init__(self) -> None:
        _freeze(self, "evidence")


@dataclass(frozen=True)
class RecordedCompaction:
    """A compaction the recording agent performed in turn ``turn``: at its start when
    ``message`` is None, else after the turn's first ``message`` messages (input included;
    agents such as Claude Code compact between tool rounds). ``summary`` is the text it
    carried forward ("" when not recorded); ``pre_tokens`` the size it reported."""

    turn: int
    summary: str = ""
    pre_tokens: int | None = None
    trigger: str = ""
    message: int | None = None


@dataclass(frozen=True)
class Turn:
    """One user input and what the agent produced for it.

    ``ids`` has one id per message of `all_messages` (input first). ``usage`` has one entry
    per recorded model reply, in order; it is empty when the source recorded none.
    """

    input: UserInput
    messages: tuple[Message, ...] = ()
    outcome: Outcome = "answered"
    error: str = ""
    usage: tuple[Usage, ...] = ()
    ids: tuple[str, ...] = ()
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        _freeze(self, "messages")
        _freeze(self, "usage")
        _freeze(self, "ids")
        _frozen_mapping(self, "metadata")
        if not isinstance(self.input, UserInput):
            raise TypeError(f"Turn.input must be a UserInput, got {type(self.input).__name__}")
        for m in self.messages:
            if not isinstance(m, (AssistantMessage, ToolResults)):
                raise TypeError(
                    f"Turn.messages holds assistant replies and tool results only, got {type(m).__name__}"
                )
        if self.outcome not in _OUTCOMES:
            raise ValueError(f"outcome must be one of {_OUTCOMES}, but {self.outcome!r} was passed")
        if self.ids and len(self.ids) != 1 + len(self.messages):
            raise ValueError(f"a turn with {1 + len(self.messages)} messages needs as many ids, got {len(self.ids)}")

    @property
    def all_messages(self) -> tuple[Message, ...]:
        """The input followed by the turn's messages."""
        return (self.input, *self.messages)

    def __reduce__(self) -> tuple:
        # the read-only metadata view cannot be pickled; process pools need turns that can
        return (Turn, (self.input, self.messages, self.outcome, self.error, self.usage, self.ids, _thaw(self.metadata)))


@dataclass(frozen=True)
class Conversation:
    """A recorded conversation, ready to replay.

    ``id`` names it in frames; ``source`` says where it came from (a path or a dataset
    name); ``metadata`` holds what the importer knew (format, model, system prompt, ...).
    Turns without ids get ``"<turn>.<index>"`` ids (``"3.0"`` is turn 3's input).
    """

    turns: tuple[Turn, ...]
    id: str = "conversation"
    source: str = ""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    probes: tuple[Probe, ...] = ()
    compactions: tuple[RecordedCompaction, ...] = ()
    system: str = ""
    """The system prompt the recording agent used, when known."""

    def __post_init__(self) -> None:
        _freeze(self, "turns")
        _freeze(self, "probes")
        _freeze(self, "compactions")
        _frozen_mapping(self, "metadata")
        turns = []
        for t, turn in enumerate(self.turns):
            if not isinstance(turn, Turn):
                raise TypeError(f"Conversation.turns holds Turn objects, got {type(turn).__name__} at {t}")
            if not turn.ids:
                ids = tuple(f"{t}.{j}" for j in range(1 + len(turn.messages)))
                turn = Turn(turn.input, turn.messages, turn.outcome, turn.error, turn.usage, ids, turn.metadata)
            turns.append(turn)
        object.__setattr__(self, "turns", tuple(turns))
        seen: set[str] = set()
        for turn in turns:
            for mid in turn.ids:
                if mid in seen:
                    raise ValueError(f"message id {mid!r} appears twice in conversation {self.id!r}")
                seen.add(mid)

    def __len__(self) -> int:
        return len(self.turns)

    def __reduce__(self) -> tuple:
        # see Turn.__reduce__
        return (Conversation, (self.turns, self.id, self.source, _thaw(self.metadata), self.probes,
                               self.compactions, self.system))

    def __iter__(self) -> Iterator[Turn]:
        return iter(self.turns)

    def messages(self) -> list[Message]:
        """Every message in order, inputs included."""
        return [m for turn in self.turns for m in turn.all_messages]

    def message_ids(self) -> list[str]:
        """The id of every message, parallel to `messages`."""
        return [i for turn in self.turns for i in turn.ids]

    def message_index(self) -> dict[str, tuple[int, int]]:
        """Map a message id to (turn index, position within the turn's `all_messages`)."""
        return {mid: (t, j) for t, turn in enumerate(self.turns) for j, mid in enumerate(turn.ids)}

    def with_(self, **changes: Any) -> "Conversation":
        """A copy with some fields replaced."""
        fields = dict(
            turns=self.turns, id=self.id, source=self.source, metadata=self.metadata,
            probes=self.probes, compactions=self.compactions, system=self.system,
        )
        fields.update(changes)
        return Conversation(**fields)

    def summary(self) -> dict[str, int]:
        """Counts a user wants first: turns, messages, tool calls, recorded usage rows."""
        msgs = self.messages()
        return {
            "turns": len(self.turns),
            "messages": len(msgs),
            "tool_calls": sum(len(m.calls) for m in msgs if isinstance(m, AssistantMessage)),
            "tool_results": sum(len(m.results) for m in msgs if isinstance(m, ToolResults)),
            "usage_rows": sum(len(t.usage) for t in self.turns),
            "probes": len(self.probes),
        }

    def models(self) -> dict[str, int]:
        """The models the recording names in its usage, with how many replies each made,
        most first (``{}`` when it names none)."""
        calls: dict[str, int] = {}
        for turn in self.turns:
            for u in turn.usage:
                if u.model and u.model != "<synthetic>":  # Claude Code's stand-in for a reply no model wrote
                    calls[u.model] = calls.get(u.model, 0) + 1
        return dict(sorted(calls.items(), key=lambda kv: -kv[1]))

    def __repr__(self) -> str:
        s = self.summary()
        return f"Conversation({self.id!r}, {s['turns']} turns, {s['messages']} messages)"
