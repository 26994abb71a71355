"""Laser's context policies: pure functions from a message list to the messages a model sees.

A *policy* is a frozen, validated callable ``policy(messages) -> tuple[Message, ...]``:

* `LastN` keeps the last ``n`` messages;
* `TokenBudget` keeps the newest messages whose estimated tokens fit ``max_tokens``
  (always at least one);
* `Chain` applies policies in order, each to the previous one's output.

Every policy here keeps a *tail* of its input, and a tail can begin with tool results
whose call was cut off — a request no provider accepts. So a window never starts with
`ToolResults`: its start moves forward past them. If that would leave nothing (the tail
was only tool results), it moves back instead, to the assistant message that made the
calls; that is the one case where a policy returns more than ``n`` messages or more than
its budget. Policies never mutate their input, and applying one to its own output changes
nothing.

Around them: `block` (the last messages as one text block), `assemble` (apply a policy
and record a `Manifest` of what the model received), `fold` with bounds (`Last`,
`After`, `UpTo`, `Whole`) over a message log, `Memory` (facts a ``remember`` tool
recorded, folded from the log), and `PolicyContext`, which runs any policy through
Harpe's context lifecycle for `harpe_lab.replay.replay`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import chain
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar, Union

from ..protocol import Compaction, Limit
from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput
from ..tokens import BytesCounter

__all__ = [
    "Policy",
    "LastN",
    "TokenBudget",
    "MessagePrice",
    "Chain",
    "message_text",
    "block",
    "Manifest",
    "assemble",
    "Checkpoint",
    "Bound",
    "Last",
    "After",
    "UpTo",
    "Whole",
    "fold",
    "Memory",
    "PolicyContext",
]

Policy = Callable[[Sequence[Message]], Sequence[Message]]
"""A context policy: messages in, the messages a model receives out (a subsequence)."""

_MESSAGE_TYPES = (UserInput, AssistantMessage, ToolResults)
_MEMO_SIZE = 1 << 17


def _check_int(name: str, value: object, minimum: int) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise StrategyError(f"{name} must be an int >= {minimum}, got {value!r}")


def _seq(messages: Iterable[Message]) -> Sequence[Message]:
    return messages if isinstance(messages, (list, tuple)) else tuple(messages)


def _valid_start(messages: Sequence[Message], start: int) -> int:
    """Move a tail's start so the tail does not begin with orphan tool results."""
    end = len(messages)
    s = start
    while s < end and isinstance(messages[s], ToolResults):
        s += 1
    if s < end or start >= end:
        return s
    # Only tool results were left: reach back to the call they answer instead.
    s = start
    while s > 0 and isinstance(messages[s], ToolResults):
        s -= 1
    return s


def message_text(message: Message) -> str:
    """The text Laser estimates and `block` shows for a message.

    * user input: its text;
    * assistant: its text, then one line per tool call, ``name(arguments)`` with the
      arguments as JSON (``json.dumps(input, ensure_ascii=False)``), lines
      joined by ``"\\n"`` (the text line is left out when empty);
    * tool results: the contents of the results, joined by ``"\\n"``.

    Attachments are not text and are left out.
    """
    if isinstance(message, UserInput):
        return message.text
    if isinstance(message, AssistantMessage):
        lines = [message.text] if message.text else []
        lines.extend(f"{c.name}({json.dumps(c.input, ensure_ascii=False)})" for c in message.calls)
        return "\n".join(lines)
    if isinstance(message, ToolResults):
        return "\n".join(r.content for r in message.results)
    raise TypeError(f"not a harpe_lab message: {message!r}")


# --- policies -----------------------------------------------------------------------------


@dataclass(frozen=True)
class LastN:
    """Keep the last ``n`` messages (never starting with orphan tool results)."""

    n: int

    def __post_init__(self) -> None:
        _check_int("n", self.n, 1)

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        seq = _seq(messages)
        return tuple(seq[_valid_start(seq, max(0, len(seq) - self.n)) :])


@dataclass(frozen=True)
class MessagePrice:
    """A `TokenBudget` estimator that prices each whole message with a harpe_lab counter,
    chat overhead included — the replay's own measure — instead of Laser's text estimate."""

    counter: Any

    def __post_init__(self) -> None:
        if not callable(getattr(self.counter, "count_message", None)):
            raise StrategyError(f"counter must have count_message (e.g. harpe_lab.TiktokenCounter()), got {self.counter!r}")

    def count(self, text: str) -> int:
        return int(self.counter.count(text))

    def price(self, message: Message) -> int:
        return int(self.counter.count_message(message))


@dataclass(frozen=True)
class TokenBudget:
    """Keep the newest messages whose estimates sum to at most ``max_tokens``, stopping at
    the first message that does not fit; the newest message is always kept.

    A message's estimate is ``estimator.count(message_text(message))`` — no per-message
    overhead — or, with a `MessagePrice` estimator, the counter's price of the whole message. With the default `BytesCounter` a plain text message costs
    ``ceil(len(text.encode("utf-8")) / 4)`` tokens.
    """

    max_tokens: int
    estimator: Any = field(default_factory=BytesCounter)
    """Anything with ``count(text) -> int``."""
    _memo: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_int("max_tokens", self.max_tokens, 1)
        # str, bytes, lists and tuples have a count method too, and would count the wrong thing
        if isinstance(self.estimator, (str, bytes, bytearray, list, tuple)) or not callable(
            getattr(self.estimator, "count", None)
        ):
            raise StrategyError(
                f"estimator must have count(text) -> int (e.g. harpe_lab.BytesCounter()), got {self.estimator!r}"
            )

    def __getstate__(self) -> dict[str, Any]:
        # The memo holds messages by id; it is neither portable nor worth shipping.
        return {"max_tokens": self.max_tokens, "estimator": self.estimator}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            object.__setattr__(self, name, value)
        object.__setattr__(self, "_memo", {})

    def estimate(self, message: Message) -> int:
        """Estimated tokens of one message (memoized per message object)."""
        hit = self._memo.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        if isinstance(self.estimator, MessagePrice):
            n = self.estimator.price(message)
        else:
            n = int(self.estimator.count(message_text(message)))
        if len(self._memo) >= _MEMO_SIZE:
            self._memo.clear()
        # The message is held so its id cannot be reused by another object.
        self._memo[id(message)] = (message, n)
        return n

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        seq = _seq(messages)
        start, used = len(seq), 0
        for i in range(len(seq) - 1, -1, -1):
            n = self.estimate(seq[i])
            if used + n > self.max_tokens and start < len(seq):
                break
            used += n
            start = i
        return tuple(seq[_valid_start(seq, start) :])


@dataclass(frozen=True)
class Chain:
    """Apply ``policies`` in order, each to the previous one's output."""

    policies: tuple[Policy, ...]

    def __post_init__(self) -> None:
        if isinstance(self.policies, (str, bytes)) or not isinstance(self.policies, Iterable):
            raise StrategyError(f"policies must be a list of policies, got {self.policies!r}")
        policies = tuple(self.policies)
        if not policies:
            raise StrategyError("policies must hold at least one policy, got []")
        for i, p in enumerate(policies):
            if not callable(p):
                raise StrategyError(f"policies[{i}] must be a callable policy, got {p!r}")
        object.__setattr__(self, "policies", policies)

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        out: Sequence[Message] = _seq(messages)
        for p in self.policies:
            out = tuple(p(out))
        return tuple(out)


def block(messages: Sequence[Message], n: int = 50, token_budget: int | None = None) -> str:
    """The `message_text` of the last ``n`` messages — within ``token_budget`` estimated
    tokens when given — joined by newlines: the messages
    ``Chain([LastN(n), TokenBudget(token_budget)])`` keeps."""
    policy: Policy = LastN(n) if token_budget is None else Chain([LastN(n), TokenBudget(token_budget)])
    return "\n".join(message_text(m) for m in policy(messages))


# --- manifests ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    """What a model received: input indices kept and dropped (and their ids, when given),
    and the estimated tokens of the kept messages."""

    kept: tuple[int, ...]
    dropped: tuple[int, ...]
    estimated_tokens: int
    kept_ids: tuple[str, ...] = ()
    dropped_ids: tuple[str, ...] = ()
    policy: str = ""
    """The policy's repr."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "policy": self.policy,
            "kept": list(self.kept),
            "dropped": list(self.dropped),
            "kept_ids": list(self.kept_ids),
            "dropped_ids": list(self.dropped_ids),
            "estimated_tokens": self.estimated_tokens,
        }


def _positions(seq: Sequence[Message], out: Sequence[Message], policy: object) -> list[int]:
    """Indices of ``out`` in ``seq``; ``out`` must be a non-empty subsequence (by identity)
    when ``seq`` is not empty. Walks from the end, so a tail costs O(len(out))."""
    kept: list[int] = []
    j = len(seq) - 1
    for m in reversed(out):
        while j >= 0 and seq[j] is not m:
            j -= 1
        if j < 0:
            raise StrategyError(
                f"policy {policy!r} returned a message that is not one of its inputs, or out of "
                f"order: {m!r:.120}; a policy must return a subsequence of the messages it is given"
            )
        kept.append(j)
        j -= 1
    if seq and not kept:
        raise StrategyError(f"policy {policy!r} returned no messages for {len(seq)}; a request cannot be empty")
    kept.reverse()
    return kept


def _manifest(
    n: int, kept: Sequence[int], tokens: int, ids: Sequence[str] | None, policy: object
) -> "Manifest":
    keep = set(kept)
    dropped = tuple(i for i in range(n) if i not in keep)
    return Manifest(
        kept=tuple(kept),
        dropped=dropped,
        estimated_tokens=tokens,
        kept_ids=() if ids is None else tuple(ids[i] for i in kept),
        dropped_ids=() if ids is None else tuple(ids[i] for i in dropped),
        policy=repr(policy),
    )


def assemble(
    messages: Sequence[Message],
    policy: Policy,
    *,
    ids: Sequence[str] | None = None,
    estimator: Any = None,
) -> tuple[tuple[Message, ...], Manifest]:
    """Apply ``policy`` and record what the model receives.

    ``ids`` (one per message, e.g. ``conversation.message_ids()``) name the messages in the
    manifest; ``estimator`` (default `BytesCounter`) estimates the kept messages' tokens as
    `TokenBudget` does. Raises `StrategyError` when the policy returns anything but a
    non-empty subsequence of its input.
    """
    seq = tuple(messages)
    if ids is not None:
        ids = tuple(ids)
        if len(ids) != len(seq):
            raise StrategyError(f"ids must name every message: {len(seq)} messages but {len(ids)} ids")
    if not callable(policy):
        raise StrategyError(f"policy must be callable, got {policy!r}")
    estimator = BytesCounter() if estimator is None else estimator
    out = tuple(policy(seq))
    kept = _positions(seq, out, policy)
    tokens = sum(int(estimator.count(message_text(m))) for m in out)
    return out, _manifest(len(seq), kept, tokens, ids, policy)


# --- folds --------------------------------------------------------------------------------

Checkpoint = Union[int, Callable[[Message], bool]]
"""A message index (0-based, into the messages folded), or a predicate: the checkpoint is
then the *last* message for which it is true (the most recent checkpoint)."""


def _check_checkpoint(checkpoint: object) -> None:
    if isinstance(checkpoint, bool) or not (
        (isinstance(checkpoint, int) and checkpoint >= 0) or callable(checkpoint)
    ):
        raise StrategyError(
            f"checkpoint must be a message index >= 0 or a predicate Message -> bool, got {checkpoint!r}"
        )


def _find(messages: Sequence[Message], checkpoint: Checkpoint) -> int | None:
    if isinstance(checkpoint, int):
        if checkpoint >= len(messages):
            raise StrategyError(f"checkpoint index {checkpoint} is past the end of {len(messages)} messages")
        return checkpoint
    for i in range(len(messages) - 1, -1, -1):
        if checkpoint(messages[i]):
            return i
    return None


@dataclass(frozen=True)
class Last:
    """Fold only the last ``n`` messages."""

    n: int

    def __post_init__(self) -> None:
        _check_int("n", self.n, 1)

    def select(self, messages: Sequence[Message]) -> Sequence[Message]:
        return messages[max(0, len(messages) - self.n) :]


@dataclass(frozen=True)
class After:
    """Fold the messages after the checkpoint (not the checkpoint itself). When a
    predicate matches nothing, there was no checkpoint yet and every message is folded."""

    checkpoint: Checkpoint

    def __post_init__(self) -> None:
        _check_checkpoint(self.checkpoint)

    def select(self, messages: Sequence[Message]) -> Sequence[Message]:
        i = _find(messages, self.checkpoint)
        return messages if i is None else messages[i + 1 :]


@dataclass(frozen=True)
class UpTo:
    """Fold the messages up to and including the checkpoint. When a predicate matches
    nothing, the checkpoint has not been reached and nothing is folded."""

    checkpoint: Checkpoint

    def __post_init__(self) -> None:
        _check_checkpoint(self.checkpoint)

    def select(self, messages: Sequence[Message]) -> Sequence[Message]:
        i = _find(messages, self.checkpoint)
        return messages[:0] if i is None else messages[: i + 1]


@dataclass(frozen=True)
class Whole:
    """Fold every message."""

    def select(self, messages: Sequence[Message]) -> Sequence[Message]:
        return messages


Bound = Union[Last, After, UpTo, Whole]
_Acc = TypeVar("_Acc")


def fold(
    messages: Sequence[Message], init: _Acc, fn: Callable[[_Acc, Message], _Acc], *, bound: Bound = Whole()
) -> _Acc:
    """``fn(...fn(fn(init, m0), m1)..., mk)`` over the messages ``bound`` selects, oldest
    first. ``messages`` is not changed."""
    if not callable(fn):
        raise StrategyError(f"fn must be callable (acc, message) -> acc, got {fn!r}")
    if not isinstance(bound, (Last, After, UpTo, Whole)):
        raise StrategyError(f"bound must be Last(n), After(checkpoint), UpTo(checkpoint) or Whole(), got {bound!r}")
    acc = init
    for m in bound.select(_seq(messages)):
        acc = fn(acc, m)
    return acc


# --- memory -------------------------------------------------------------------------------

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


# --- the context --------------------------------------------------------------------------


def _continues(sent: tuple[Message, ...], since: list[Message], new: tuple[Message, ...]) -> bool:
    if len(new) != len(sent) + len(since):
        return False
    return all(a is b for a, b in zip(new, chain(sent, since)))


class PolicyContext:
    """Run a policy through Harpe's context lifecycle over a stored transcript.

    Every `compact` renders ``Rendered(base_system, policy(transcript))`` and reports
    ``compacted=True`` exactly when that is not the previous request followed by the
    messages appended since (the window moved). The policy's output is checked: a
    non-empty subsequence of the transcript that ends with its newest message.
    `manifest` records what the last request carried. `abort_turn` restores the
    transcript to before the turn plus its user input. ``limit`` declares the request size
    the policy aims at (a `harpe_lab.protocol.Limit`), for overshoot to be measured against.
    """

    def __init__(self, base_system: str, policy: Policy, *, initial: Iterable[Message] = (),
                 limit: Limit | None = None) -> None:
        if not isinstance(base_system, str):
            raise StrategyError(f"base_system must be a str, got {type(base_system).__name__}")
        if not callable(policy):
            raise StrategyError(f"policy must be callable messages -> messages, got {policy!r}")
        start = list(initial)
        for i, m in enumerate(start):
            if not isinstance(m, _MESSAGE_TYPES):
                raise TypeError(f"initial[{i}] is not a harpe_lab message: {m!r}")
        if limit is not None and not isinstance(limit, Limit):
            raise StrategyError(f"limit must be a harpe_lab.protocol.Limit or None, got {limit!r}")
        self.base_system = base_system
        self.policy = policy
        self.limit = limit
        self._transcript = start
        self._marked = list(start)
        self._turn_input: UserInput | None = None
        self._sent: tuple[Message, ...] = ()
        self._since: list[Message] = list(start)
        self._last: tuple[int, list[int]] = (0, [])  # transcript length and kept indices

    @property
    def transcript(self) -> tuple[Message, ...]:
        """The whole stored history (a copy)."""
        return tuple(self._transcript)

    def manifest(self, *, ids: Sequence[str] | None = None, estimator: Any = None) -> Manifest:
        """What the last request carried, as `assemble` records it (indices into the
        transcript as it was then; ``ids`` one per message of that transcript)."""
        n, kept = self._last
        if ids is not None and len(ids) < n:
            raise StrategyError(f"ids must name every message: {n} messages but {len(ids)} ids")
        estimator = BytesCounter() if estimator is None else estimator
        tokens = sum(int(estimator.count(message_text(m))) for m in self._sent)
        return _manifest(n, kept, tokens, ids, self.policy)

    def begin_turn(self, input: UserInput) -> None:
        if not isinstance(input, UserInput):
            raise TypeError(f"begin_turn takes a UserInput, got {type(input).__name__}")
        self._marked = list(self._transcript)
        self._turn_input = input
        self._transcript.append(input)
        self._since.append(input)

    def append(self, message: Message) -> None:
        if not isinstance(message, _MESSAGE_TYPES):
            raise TypeError(f"append takes a harpe_lab message, got {type(message).__name__}")
        self._transcript.append(message)
        self._since.append(message)

    def compact(self) -> Compaction:
        seq = tuple(self._transcript)
        out = tuple(self.policy(seq))
        kept = _positions(seq, out, self.policy)
        if seq and kept[-1] != len(seq) - 1:
            raise StrategyError(f"policy {self.policy!r} dropped the newest message; a request must end with it")
        compacted = not _continues(self._sent, self._since, out)
        self._sent, self._since, self._last = out, [], (len(seq), kept)
        return Compaction(Rendered(self.base_system, out), compacted)

    def observe(self, usage: Usage) -> None:
        pass

    def commit_turn(self) -> None:
        self._turn_input = None

    def abort_turn(self) -> None:
        self._transcript = self._marked + ([] if self._turn_input is None else [self._turn_input])
        self._turn_input = None
        self._since = []

    def __repr__(self) -> str:
        return f"PolicyContext({self.policy!r}, {len(self._transcript)} messages)"
