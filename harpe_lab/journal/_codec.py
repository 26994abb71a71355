"""The message and usage codec (§2.3, §2.5): `encode_message` for the writer, and the
decoders the readers use — strict for four-key lines (Harpe's newest decoder), lenient for
older generations."""

from __future__ import annotations

from typing import Any, Mapping

from ..errors import JournalError
from ..messages import AssistantMessage, Attachment, Message, ToolCall, ToolResult, ToolResults, Usage, UserInput
from ._events import USAGE
from ._problems import Bad, Inexact, show

__all__ = [
    "encode_message", "decode_message", "message", "common", "usage", "common_usage", "as_user", "carries_tokens",
    "payload", "error_detail", "inexact", "calls_inexact", "CONTAINERS", "EXACT_LIMIT", "BARE", "bare"
]

# --- exact numbers -------------------------------------------------------------------------

EXACT_LIMIT = 2.0 ** 63
CONTAINERS = frozenset((dict, list, float))


def inexact(value: Any) -> bool:
    """Whether ``value`` holds a float orjson may have made from an integer literal outside
    the 64-bit range (it does so silently); ``json`` then re-reads the line exactly."""
    t = type(value)
    if t is float:
        return not -EXACT_LIMIT < value < EXACT_LIMIT
    if t is dict:
        for v in value.values():
            if type(v) in CONTAINERS and inexact(v):
                return True
    elif t is list:
        for v in value:
            if type(v) in CONTAINERS and inexact(v):
                return True
    return False


def calls_inexact(calls: tuple[ToolCall, ...]) -> bool:
    """Whether a call's input may hold an inexact number (see `inexact`)."""
    for c in calls:
        payload = c.input
        if type(payload) is dict:  # the usual case, walked here: once per call read
            for v in payload.values():
                if type(v) in CONTAINERS and inexact(v):
                    return True
        elif inexact(payload):
            return True
    return False


# --- encoding -------------------------------------------------------------------------------


def _attachment_dict(a: Attachment) -> dict[str, Any]:
    return {"name": a.name, "size": a.size, "mime": a.mime, "path": a.path}


def encode_message(message: Message) -> dict[str, Any]:
    """The ``harpe.turn.message`` fields for a message (§2.3). Tool-call inputs must be
    JSON objects (Harpe's decoder rejects anything else)."""
    if isinstance(message, UserInput):
        return {"role": "user", "text": message.text,
                "attachments": [_attachment_dict(a) for a in message.attachments]}
    if isinstance(message, AssistantMessage):
        calls = []
        for c in message.calls:
            if not isinstance(c.input, Mapping):
                raise JournalError(
                    f"tool call {c.id!r} ({c.name}) has input {show(c.input)}; Harpe journals hold "
                    "call inputs as JSON objects — wrap the value, e.g. {\"value\": ...}"
                )
            calls.append({"id": c.id, "name": c.name, "input": dict(c.input)})
        return {"role": "assistant", "text": message.text, "calls": calls}
    if isinstance(message, ToolResults):
        return {"role": "tool_results", "results": [
            {"id": r.id, "content": r.content, "attachments": [_attachment_dict(a) for a in r.attachments],
             "success": r.success}
            for r in message.results
        ]}
    raise TypeError(f"not a harpe_lab message: {message!r}")


# --- decoding -------------------------------------------------------------------------------

_KIND_NAMES = {str: "a string", int: "an integer", bool: "a boolean", list: "a list", dict: "an object"}


def _get(d: Mapping[str, Any], key: str, kind: type, strict: bool, default: Any, where: str) -> Any:
    value = d.get(key)
    if value is None:
        if strict:
            raise Bad(f"{where}'{key}' is missing; expected {_KIND_NAMES[kind]}")
        return default
    if kind is int:
        if type(value) is float and value.is_integer():
            if -2.0 ** 53 < value < 2.0 ** 53:  # exactly an integer
                return int(value)
            raise Inexact(f"{where}'{key}' must be an integer, got {show(value)}")
        if type(value) is not int:
            raise Bad(f"{where}'{key}' must be an integer, got {show(value)}")
        return value
    if type(value) is not kind:
        raise Bad(f"{where}'{key}' must be {_KIND_NAMES[kind]}, got {show(value)}")
    return value


def _attachments(items: list, strict: bool, where: str) -> tuple[Attachment, ...]:
    out = []
    for i, a in enumerate(items):
        at = f"{where}attachment {i}: "
        if type(a) is not dict:
            raise Bad(f"{at}expected an object {{name, size, mime, path}}, got {show(a)}")
        out.append(Attachment(
            _get(a, "name", str, strict, "", at),
            _get(a, "size", int, strict, 0, at),
            _get(a, "mime", str, strict, "", at),
            # ≤0.4 attachments say {inline: bool} instead of a path
            _get(a, "path", str, strict and "inline" not in a, "", at),
        ))
    return tuple(out)


def decode_message(fields: Mapping[str, Any], *, strict: bool = True) -> Message:
    """Decode ``harpe.turn.message`` fields (§2.3) into a `UserInput`, `AssistantMessage`
    or `ToolResults`.

    ``strict`` (Harpe's newest decoder): every key must be present with its type and the
    role must be ``user``, ``assistant`` or ``tool_results``. Lenient (older decoders):
    missing keys default to ``""``/``0``/``[]``, ``success`` to true, ``media`` is read as
    ``attachments``, and any other role is read as tool results. A present key of the
    wrong type is rejected either way: `JournalError` says which key was wrong.
    """
    try:
        return message(fields, strict)
    except Bad as bad:
        raise JournalError(bad.reason) from None


# --- building messages ----------------------------------------------------------------------
#
# The readers build a message object per record they read, and the frozen dataclasses'
# ``__init__`` (one ``object.__setattr__`` per field, then ``__post_init__``) costs more than
# decoding the record's fields: a quarter of a journal read. The fast paths below build them
# as ``copy.copy`` does — a bare instance given its ``__dict__`` — with values already in
# their final form (tuples, no defaults left out). `BARE` checks once that this gives the
# same objects as the constructors; if a class ever changes (slots, a new field), it is off
# and every message is built by its constructor.

_new = object.__new__
_set_dict = object.__setattr__


def bare(cls: type, values: dict[str, Any]) -> Any:
    """An instance of the dataclass ``cls`` with ``values`` as its ``__dict__``, built
    without ``__init__`` (the values must be complete and final)."""
    obj = _new(cls)
    _set_dict(obj, "__dict__", values)
    return obj


def _bare_matches() -> bool:
    try:
        samples = (
            (UserInput("t"), UserInput, {"text": "t", "attachments": (), "pinned": False}),
            (ToolCall("i", "n", {}), ToolCall, {"id": "i", "name": "n", "input": {}}),
            (AssistantMessage("t", ()), AssistantMessage, {"text": "t", "calls": (), "pinned": False}),
            (ToolResult("i", "c", (), True), ToolResult, {"id": "i", "content": "c", "attachments": (), "success": True}),
            (ToolResults(()), ToolResults, {"results": (), "pinned": False}),
            (Usage(1, 2, 3, 4, "p", "m"), Usage, {"input_tokens": 1, "output_tokens": 2, "cache_read_tokens": 3,
                                                  "cache_write_tokens": 4, "provider": "p", "model": "m"}),
        )
        return all(vars(made) == values and bare(cls, dict(values)) == made for made, cls, values in samples)
    except (TypeError, AttributeError):  # slots, or a constructor that wants more
        return False


BARE = _bare_matches()
"""Whether messages and usage rows may be built bare (see above)."""


def message(fields: Mapping[str, Any], strict: bool) -> Message:
    """Decode a message; `Bad` when malformed. `common` takes the complete, well-typed
    shapes (where strict and lenient agree); anything else, including every error, goes
    through `_message_checked`."""
    m = common(fields) if BARE else None
    return _message_checked(fields, strict) if m is None else m


def common(fields: Mapping[str, Any]) -> Message | None:
    """The message, when ``fields`` has one of the common shapes (every key present and
    well typed, no attachments), built bare; otherwise ``None`` (never an error: `message`
    says what is wrong). Only when `BARE`."""
    try:
        role = fields["role"]
        if role == "tool_results":
            results = fields["results"]
            if type(results) is list:
                out = []
                for r in results:  # a non-object raises TypeError: the checked path says why
                    rid, content, atts, ok = r["id"], r["content"], r["attachments"], r["success"]
                    if (type(rid) is not str or type(content) is not str or type(ok) is not bool
                            or type(atts) is not list or atts):
                        return None
                    m = _new(ToolResult)
                    _set_dict(m, "__dict__", {"id": rid, "content": content, "attachments": (), "success": ok})
                    out.append(m)
                m = _new(ToolResults)
                _set_dict(m, "__dict__", {"results": tuple(out), "pinned": False})
                return m
        elif role == "assistant":
            text, calls = fields["text"], fields["calls"]
            if type(text) is str and type(calls) is list:
                out = []
                for c in calls:
                    cid, name, payload = c["id"], c["name"], c["input"]
                    if type(cid) is not str or type(name) is not str or type(payload) is not dict:
                        return None
                    m = _new(ToolCall)
                    _set_dict(m, "__dict__", {"id": cid, "name": name, "input": payload})
                    out.append(m)
                m = _new(AssistantMessage)
                _set_dict(m, "__dict__", {"text": text, "calls": tuple(out), "pinned": False})
                return m
        elif role == "user":
            text, atts = fields["text"], fields["attachments"]
            if type(text) is str and type(atts) is list and not atts:
                m = _new(UserInput)
                _set_dict(m, "__dict__", {"text": text, "attachments": (), "pinned": False})
                return m
    except (KeyError, TypeError):
        pass
    return None


def common_usage(fields: Mapping[str, Any]) -> Usage | None:
    """A ``harpe.metering.usage`` row when every field is present and well typed, built
    bare; otherwise ``None`` (`usage` says what is wrong). Only when `BARE`."""
    try:
        i, o, r, w, provider, model = (fields["inputTokens"], fields["outputTokens"], fields["cacheReadTokens"],
                                       fields["cacheWriteTokens"], fields["provider"], fields["model"])
    except KeyError:
        return None
    if (type(i) is int and type(o) is int and type(r) is int and type(w) is int and type(provider) is str
            and type(model) is str):
        u = _new(Usage)
        _set_dict(u, "__dict__", {"input_tokens": i, "output_tokens": o, "cache_read_tokens": r,
                                  "cache_write_tokens": w, "provider": provider, "model": model})
        return u
    return None


def _message_checked(fields: Mapping[str, Any], strict: bool) -> Message:
    role = fields.get("role")
    if role is None and strict:
        raise Bad("'role' is missing; expected \"user\", \"assistant\" or \"tool_results\"")
    if role is not None and type(role) is not str:
        raise Bad(f"'role' must be a string, got {show(role)}")
    if role == "user" or (role is None and "results" not in fields and "calls" not in fields):
        return UserInput(_get(fields, "text", str, strict, "", ""),
                         _attachments(_get(fields, "attachments", list, strict, [], ""), strict, ""))
    if role == "assistant" or (role is None and "calls" in fields):
        calls = []
        for i, c in enumerate(_get(fields, "calls", list, strict, [], "")):
            at = f"call {i}: "
            if type(c) is not dict:
                raise Bad(f"{at}expected an object {{id, name, input}}, got {show(c)}")
            if strict:
                payload = _get(c, "input", dict, True, None, at)
            else:
                payload = c.get("input")
                payload = {} if payload is None else payload
            calls.append(ToolCall(_get(c, "id", str, strict, "", at), _get(c, "name", str, strict, "", at), payload))
        return AssistantMessage(_get(fields, "text", str, strict, "", ""), tuple(calls))
    if strict and role != "tool_results":
        raise Bad(f"'role' is {role!r}; expected \"user\", \"assistant\" or \"tool_results\"")
    results = []
    for i, r in enumerate(_get(fields, "results", list, strict, [], "")):
        at = f"result {i}: "
        if type(r) is not dict:
            raise Bad(f"{at}expected an object {{id, content, attachments, success}}, got {show(r)}")
        if strict:
            attachments = _get(r, "attachments", list, True, None, at)
        else:
            attachments = r.get("attachments")
            if attachments is None:
                attachments = _get(r, "media", list, False, [], at)
            elif type(attachments) is not list:
                raise Bad(f"{at}'attachments' must be a list, got {show(attachments)}")
        results.append(ToolResult(
            _get(r, "id", str, strict, "", at),
            _get(r, "content", str, strict, "", at),
            _attachments(attachments, strict, at),
            _get(r, "success", bool, strict, True, at),
        ))
    return ToolResults(tuple(results))


def as_user(fields: Mapping[str, Any]) -> dict[str, Any]:
    """A legacy ``harpe.turn.started`` carries the user message, whatever its role says."""
    return {**fields, "role": "user"}


def usage(event: str, fields: Mapping[str, Any], strict: bool) -> Usage:
    """A usage row: ``harpe.metering.usage`` is strict in four-key journals (Harpe's
    ``Usage.decode``); older token-carrying events are lenient."""
    if BARE:
        u = common_usage(fields)
        if u is not None:
            return u
    strict = strict and event == USAGE
    return Usage(
        input_tokens=_get(fields, "inputTokens", int, strict, 0, ""),
        output_tokens=_get(fields, "outputTokens", int, strict, 0, ""),
        cache_read_tokens=_get(fields, "cacheReadTokens", int, strict, 0, ""),
        cache_write_tokens=_get(fields, "cacheWriteTokens", int, strict, 0, ""),
        provider=_get(fields, "provider", str, strict, "", ""),
        model=_get(fields, "model", str, strict, "", ""),
    )


def carries_tokens(fields: Mapping[str, Any]) -> bool:
    return fields.get("inputTokens") is not None or fields.get("outputTokens") is not None


def payload(fields: Mapping[str, Any]) -> Any:
    """A bracket line's ``data`` (``""`` when absent)."""
    data = fields.get("data")
    return "" if data is None else data


def error_detail(fields: Mapping[str, Any]) -> str:
    """A ``harpe.turn.failed`` line's ``error`` (``""`` when absent)."""
    detail = fields.get("error")
    if detail is None:
        return ""
    if type(detail) is not str:
        raise Bad(f"'error' must be a string, got {show(detail)}")
    return detail
