"""Laser's `Memory`: facts an agent recorded with a ``remember`` tool, folded from its log."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, ToolResults
from ._folds import Bound, Whole, fold

__all__ = ["Memory"]

_MISSING: Any = object()


@dataclass(frozen=True)
class Memory:
    """Facts an agent recorded with a ``remember`` tool, folded from its message log.

    A fact is recorded by a call ``ToolCall(name=tool, input={"key": str, "value": ...})``
    once its result comes back successful; a call with no result (its round was cut off)
    or a failed one records nothing, and a later value for a key replaces an earlier one.
    Calls whose input has no string ``key`` are listed in ``skipped`` (call ids).

    A `Memory` is immutable: `remember` and `step` return a new one. `step` is the fold
    function, so ``fold(messages, Memory(), Memory.step, bound=...)`` is the memory as of
    any bound; `from_messages` and `from_conversation` do that.
    """

    facts: Mapping[str, Any] = field(default_factory=dict)
    tool: str = "remember"
    """The name of the tool that records facts."""
    pending: Mapping[str, tuple[str, Any]] = field(default_factory=dict)
    """Calls awaiting their result: call id -> (key, value)."""
    skipped: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.tool, str) or not self.tool:
            raise StrategyError(f"tool must be a non-empty tool name, got {self.tool!r}")
        for name in ("facts", "pending"):
            value = getattr(self, name)
            if not isinstance(value, Mapping):
                raise StrategyError(f"{name} must be a mapping, got {value!r}")
            if not isinstance(value, MappingProxyType):
                object.__setattr__(self, name, MappingProxyType(dict(value)))
        for key in self.facts:
            if not isinstance(key, str) or not key:
                raise StrategyError(f"fact keys must be non-empty strings, got {key!r}")
        object.__setattr__(self, "skipped", tuple(self.skipped))

    def remember(self, key: str, value: Any) -> "Memory":
        """A memory with ``key`` set to ``value``."""
        if not isinstance(key, str) or not key:
            raise StrategyError(f"key must be a non-empty string, got {key!r}")
        return Memory({**self.facts, key: value}, self.tool, self.pending, self.skipped)

    def recall(self, key: str, default: Any = _MISSING) -> Any:
        """The latest value remembered for ``key``; ``default`` (or `KeyError` naming the
        known keys) when there is none."""
        if key in self.facts:
            return self.facts[key]
        if default is not _MISSING:
            return default
        known = ", ".join(map(repr, sorted(self.facts))) or "none"
        raise KeyError(f"nothing remembered for {key!r}; known keys: {known}")

    def __contains__(self, key: object) -> bool:
        return key in self.facts

    def __len__(self) -> int:
        return len(self.facts)

    def step(self, message: Message) -> "Memory":
        """Fold one message into the memory (the function `fold` applies)."""
        if isinstance(message, AssistantMessage):
            calls = [c for c in message.calls if c.name == self.tool]
            if not calls:
                return self
            pending, skipped = dict(self.pending), list(self.skipped)
            for c in calls:
                data = c.input
                if isinstance(data, Mapping) and isinstance(data.get("key"), str) and data["key"]:
                    pending[c.id] = (data["key"], data.get("value"))
                else:
                    skipped.append(c.id)
            return Memory(self.facts, self.tool, pending, tuple(skipped))
        if isinstance(message, ToolResults) and self.pending:
            pending, facts = dict(self.pending), dict(self.facts)
            for r in message.results:
                recorded = pending.pop(r.id, None)
                if recorded is not None and r.success:
                    facts[recorded[0]] = recorded[1]
            return Memory(facts, self.tool, pending, self.skipped)
        return self

    @classmethod
    def from_messages(cls, messages: Sequence[Message], *, tool: str = "remember", bound: Bound = Whole()) -> "Memory":
        """The memory the messages ``bound`` selects record."""
        return fold(messages, cls(tool=tool), cls.step, bound=bound)

    @classmethod
    def from_conversation(cls, conversation: Any, *, tool: str = "remember", bound: Bound = Whole()) -> "Memory":
        """The memory a recorded `harpe_lab.conversation.Conversation` holds, from every
        turn's messages (a tool that ran in an interrupted turn still stored its fact)."""
        messages = getattr(conversation, "messages", None)
        if not callable(messages):
            raise StrategyError(f"from_conversation takes a Conversation, got {type(conversation).__name__}")
        return cls.from_messages(messages(), tool=tool, bound=bound)
