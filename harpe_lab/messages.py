"""Harpe's message model: what a context holds and what a model request carries.

The three message kinds mirror Harpe's (`UserInput`, `AssistantMessage`, `ToolResults`);
each has a ``role`` tag. All records are frozen; sequences given as lists are stored as
tuples so a message can never be changed behind a context's back.

`to_openai` and `from_openai` convert a `Rendered` request to and from OpenAI
chat-completions message dicts, the field's lingua franca. Fields OpenAI has no place for
(attachments, ``pinned``, a failed tool result) travel in an extra ``"harpe"`` key that is
present only when a field differs from its default, so the round trip is lossless;
`strip_harpe_keys` removes it before a request goes to a provider.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar, Iterable, Mapping, Sequence, Union

__all__ = [
    "Attachment",
    "UserInput",
    "ToolCall",
    "AssistantMessage",
    "ToolResult",
    "ToolResults",
    "Message",
    "Rendered",
    "deferred",
    "peek",
    "Usage",
    "to_openai",
    "from_openai",
    "strip_harpe_keys",
    "parse_arguments",
]


def _tuple(obj: object, name: str, value: object) -> None:
    if not isinstance(value, tuple):
        object.__setattr__(obj, name, tuple(value))  # type: ignore[arg-type]


@dataclass(frozen=True)
class Attachment:
    """A file given with a user input or produced by a tool. Bytes never enter the log."""

    name: str
    size: int
    """Size in bytes."""
    mime: str
    path: str
    """Absolute path on the host that recorded it."""


@dataclass(frozen=True)
class UserInput:
    """What the user said to start a turn."""

    text: str
    attachments: tuple[Attachment, ...] = ()
    pinned: bool = False
    """A pinned message survives every windowing strategy that honours pins (orion)."""
    role: ClassVar[str] = "user"

    def __post_init__(self) -> None:
        _tuple(self, "attachments", self.attachments)


@dataclass(frozen=True)
class ToolCall:
    """One tool call requested by the model. ``input`` is the parsed argument object."""

    id: str
    name: str
    input: Any = field(default_factory=dict)


@dataclass(frozen=True)
class AssistantMessage:
    """A model reply: its text exactly as returned, and any tool calls."""

    text: str
    calls: tuple[ToolCall, ...] = ()
    pinned: bool = False
    role: ClassVar[str] = "assistant"

    def __post_init__(self) -> None:
        _tuple(self, "calls", self.calls)


@dataclass(frozen=True)
class ToolResult:
    """The result of one tool call; ``id`` is the call's id."""

    id: str
    content: str
    attachments: tuple[Attachment, ...] = ()
    success: bool = True

    def __post_init__(self) -> None:
        _tuple(self, "attachments", self.attachments)


@dataclass(frozen=True)
class ToolResults:
    """All results of one tool round, in call order."""

    results: tuple[ToolResult, ...]
    pinned: bool = False
    role: ClassVar[str] = "tool_results"

    def __post_init__(self) -> None:
        _tuple(self, "results", self.results)


Message = Union[UserInput, AssistantMessage, ToolResults]


@dataclass(frozen=True)
class Rendered:
    """One model request as a context renders it: a system prompt and the messages.

    ``messages`` is always a tuple. A strategy that sends its whole history may hand out a
    request whose tuple is built the first time ``messages`` is read (`deferred`): a replay
    reads only what a request appended, and building the tuple of a long history at every
    request would cost more than the rest of the request."""

    system: str
    messages: tuple[Message, ...] = ()

    def __post_init__(self) -> None:
        _tuple(self, "messages", self.messages)


class _Deferred(Rendered):
    """A `Rendered` whose messages are the first ``length`` of a list its strategy only
    appends to (it replaces the list, never changes it in place): the tuple is built when
    first read. It compares, hashes, prints, copies and pickles as the `Rendered` it is."""

    def _messages(self) -> tuple[Message, ...]:
        d = self.__dict__
        built = d.get("_built")
        if built is None:
            source = d.get("_source")
            if source is None:  # another thread built it just now
                return d["_built"]
            items, length = source
            built = d["_built"] = tuple(items) if len(items) == length else tuple(items[:length])
            d.pop("_source", None)  # the strategy's list is not held any longer than it
        return built

    def _set_messages(self, value: tuple[Message, ...]) -> None:
        # only the dataclass's __init__ gets here (dataclasses.replace); the instance is frozen
        self.__dict__["_built"] = value

    messages = property(_messages, _set_messages)  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Rendered):
            return self.system == other.system and self.messages == other.messages
        return NotImplemented

    def __hash__(self) -> int:
        return hash((self.system, self.messages))

    def __repr__(self) -> str:
        return f"Rendered(system={self.system!r}, messages={self.messages!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return Rendered, (self.system, self.messages)


def deferred(system: str, items: list[Message]) -> Rendered:
    """The request ``Rendered(system, tuple(items))`` with ``items`` as they are now, its
    tuple built when first read. ``items`` must only ever be appended to from now on."""
    r = object.__new__(_Deferred)
    r.__dict__.update(system=system, _source=(items, len(items)))
    return r


def peek(rendered: Rendered) -> Sequence[Message]:
    """The request's messages without building a deferred request's tuple: the strategy's
    own list, when it holds exactly them still (read it, never keep or change it)."""
    source = getattr(rendered, "__dict__", {}).get("_source")
    if source is not None and len(source[0]) == source[1]:
        return source[0]
    return rendered.messages


@dataclass(frozen=True)
class Usage:
    """Token usage a provider reported for one reply. ``input_tokens`` is the total input,
    cached parts included; the cache fields are parts of it (0 also means "not reported")."""

    input_tokens: int
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    provider: str = ""
    model: str = ""


# --- OpenAI chat-completions conversion -------------------------------------------------


def _attachment_dict(a: Attachment) -> dict[str, Any]:
    return {"name": a.name, "size": a.size, "mime": a.mime, "path": a.path}


def _attachments(items: Iterable[Mapping[str, Any]]) -> tuple[Attachment, ...]:
    return tuple(
        Attachment(str(a["name"]), int(a.get("size", 0)), str(a.get("mime", "")), str(a.get("path", "")))
        for a in items
    )


def to_openai(rendered: Rendered) -> list[dict[str, Any]]:
    """Convert a request to OpenAI chat-completions message dicts.

    The system prompt comes first (omitted when empty); each `ToolResults` becomes one
    ``tool`` message per result; tool-call arguments are JSON strings, as OpenAI sends them.
    """
    out: list[dict[str, Any]] = []
    if rendered.system:
        out.append({"role": "system", "content": rendered.system})
    for message in rendered.messages:
        if isinstance(message, UserInput):
            d: dict[str, Any] = {"role": "user", "content": message.text}
            extra = {}
            if message.attachments:
                extra["attachments"] = [_attachment_dict(a) for a in message.attachments]
            if message.pinned:
                extra["pinned"] = True
            if extra:
                d["harpe"] = extra
            out.append(d)
        elif isinstance(message, AssistantMessage):
            d = {"role": "assistant", "content": message.text}
            if message.calls:
                d["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": json.dumps(c.input, ensure_ascii=False)},
                    }
                    for c in message.calls
                ]
            if message.pinned:
                d["harpe"] = {"pinned": True}
            out.append(d)
        elif isinstance(message, ToolResults):
            for i, r in enumerate(message.results):
                d = {"role": "tool", "tool_call_id": r.id, "content": r.content}
                extra = {}
                if r.attachments:
                    extra["attachments"] = [_attachment_dict(a) for a in r.attachments]
                if not r.success:
                    extra["success"] = False
                if message.pinned and i == 0:
                    extra["pinned"] = True
                if extra:
                    d["harpe"] = extra
                out.append(d)
        else:
            raise TypeError(f"not a harpe_lab message: {message!r}")
    return out


def strip_harpe_keys(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Drop the ``"harpe"`` metadata key so the dicts are plain OpenAI messages."""
    return [{k: v for k, v in m.items() if k != "harpe"} for m in messages]


def _content_text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: keep the text ones
        return "".join(
            p.get("text", "") if isinstance(p, Mapping) else str(p)
            for p in content
            if not isinstance(p, Mapping) or p.get("type", "text") == "text"
        )
    return str(content)


def parse_arguments(raw: Any) -> Any:
    """A tool call's arguments as an object: JSON strings are parsed; text that is not JSON
    is kept under ``"_raw"`` rather than lost (models do emit such arguments)."""
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return {"_raw": raw}
    return raw


def from_openai(messages: Iterable[Mapping[str, Any]]) -> Rendered:
    """Convert OpenAI chat-completions message dicts to a `Rendered` request.

    System (and ``developer``) messages are joined into the system prompt; consecutive
    ``tool`` (and legacy ``function``) messages become one `ToolResults`; a legacy
    ``function_call`` becomes a `ToolCall` with an empty id.
    """
    system: list[str] = []
    out: list[Message] = []
    pending: list[ToolResult] = []
    pending_pinned = False

    def flush() -> None:
        nonlocal pending, pending_pinned
        if pending:
            out.append(ToolResults(tuple(pending), pinned=pending_pinned))
            pending, pending_pinned = [], False

    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or "role" not in m:
            raise ValueError(f"message {i} is not an OpenAI chat message (a dict with 'role'): {m!r}")
        role = m["role"]
        extra = m.get("harpe") or {}
        if role in ("tool", "function"):
            pending.append(
                ToolResult(
                    str(m.get("tool_call_id", "") or ""),
                    _content_text(m.get("content")),
                    _attachments(extra.get("attachments", ())),
                    bool(extra.get("success", True)),
                )
            )
            pending_pinned = pending_pinned or bool(extra.get("pinned", False))
            continue
        flush()
        if role in ("system", "developer"):
            system.append(_content_text(m.get("content")))
        elif role == "user":
            out.append(
                UserInput(
                    _content_text(m.get("content")),
                    _attachments(extra.get("attachments", ())),
                    pinned=bool(extra.get("pinned", False)),
                )
            )
        elif role == "assistant":
            calls = [
                ToolCall(
                    str(c.get("id", "") or ""),
                    str(c.get("function", {}).get("name", "")),
                    parse_arguments(c.get("function", {}).get("arguments")),
                )
                for c in (m.get("tool_calls") or ())
            ]
            fc = m.get("function_call")
            if fc:
                calls.append(ToolCall("", str(fc.get("name", "")), parse_arguments(fc.get("arguments"))))
            out.append(
                AssistantMessage(_content_text(m.get("content")), tuple(calls), pinned=bool(extra.get("pinned", False)))
            )
        else:
            raise ValueError(f"message {i} has an unknown role {role!r}; expected system, user, assistant or tool")
    flush()
    return Rendered("\n\n".join(system), tuple(out))
