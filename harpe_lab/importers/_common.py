"""What every importer shares: reading a file once as JSON or JSON Lines, locating a bad
record in an error message, and folding a message stream into turns.

A source file is parsed once into a `Source`; format sniffers and importers then look at
its ``doc`` (the whole file as one JSON value) or its ``records`` (one JSON value per
non-blank line), whichever the file is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..conversation import Conversation, Probe, RecordedCompaction, Turn
from ..errors import ConversationIndexError, ImportFormatError
from ..messages import AssistantMessage, Attachment, Message, ToolResult, ToolResults, Usage, UserInput, parse_arguments

__all__ = [
    "Format",
    "freeze",
    "Source",
    "read_source",
    "document_items",
    "checked_items",
    "item_where",
    "format_error",
    "TurnBuilder",
    "pair_results",
    "MISSING_RESULT",
    "conversation",
    "get",
    "select",
    "text_of",
    "parse_arguments",
]

_MISSING = object()


def freeze(value: Any) -> Any:
    """``value`` made read-only all the way down: mappings become `MappingProxyType`, lists
    tuples. Metadata handed out by a frozen `Conversation` must not be changeable."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


@dataclass
class Source:
    """A transcript file parsed once.

    ``doc`` is the whole file as one JSON value (``None`` when the file is not a single JSON
    value); ``records`` is one ``(line number, value)`` per non-blank line when every line is
    JSON (``None`` otherwise, with ``records_error`` saying which line was not).
    """

    path: Path
    text: str
    doc: Any = None
    doc_error: str = ""
    records: list[tuple[int, Any]] | None = None
    records_error: str = ""

    @property
    def name(self) -> str:
        return str(self.path)

    def error(self, where: str | int | None, message: str) -> ImportFormatError:
        """An `ImportFormatError` located at ``where`` (a line number or a record path)."""
        return format_error(self.path, where, message)


def format_error(path: Any, where: str | int | None, message: str) -> ImportFormatError:
    """``ImportFormatError("path:where: message")``; an int ``where`` is a 1-based line."""
    if where is None or where == "":
        return ImportFormatError(f"{path}: {message}")
    if isinstance(where, int):
        return ImportFormatError(f"{path}:{where}: {message}")
    return ImportFormatError(f"{path}: {where}: {message}")


def read_source(path: Any) -> Source:
    """Read ``path`` and parse it as one JSON value and, failing or besides that, as JSON
    Lines. Raises `FileNotFoundError` for a missing file and `ImportFormatError` when it is
    neither (naming the line that broke JSON Lines parsing). A `Source` is returned as is,
    so a file sniffed once is not parsed again."""
    if isinstance(path, Source):
        return path
    p = Path(path).expanduser()
    if p.is_dir():
        raise ImportFormatError(f"{p}: is a folder; pass one transcript file inside it "
                               "(harpe_lab.importers.discover() lists the sessions on this machine)")
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: no such transcript file; check the path") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise ImportFormatError(
            f"{p}: not UTF-8 text (byte {e.start}; a binary file?); transcripts are JSON or JSON Lines"
        ) from None
    src = Source(p, text)
    stripped = text.strip()
    if not stripped:
        raise ImportFormatError(f"{p}: the file is empty; a transcript is JSON or JSON Lines")
    try:
        src.doc = json.loads(stripped)
    except json.JSONDecodeError as e:
        src.doc_error = f"line {e.lineno}: {e.msg}"
    # A single JSON object on one line is also a one-record JSON Lines file; a pretty-printed
    # document is not (its first line alone is not JSON), which is what records_error says.
    if src.doc is not None and "\n" not in stripped:
        # one line holding one value: it is also a one-record JSON Lines file; parse once
        lineno = next(k for k, line in enumerate(text.splitlines(), 1) if line.strip())
        src.records = [(lineno, src.doc)]
        return src
    records: list[tuple[int, Any]] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            records.append((lineno, json.loads(line)))
        except json.JSONDecodeError as e:
            src.records_error = f"line {lineno}: not JSON ({e.msg} at column {e.colno})"
            records = []
            break
    else:
        src.records = records
    if src.doc is None and src.records is None:
        raise ImportFormatError(
            f"{p}: neither a JSON document ({src.doc_error}) nor JSON Lines ({src.records_error}); "
            "fix the line named, or check the file was not truncated"
        )
    return src


def document_items(src: "Source") -> list[Any] | str:
    """The records of a file holding one JSON document: its list, or its one object as a
    list of one. A str says why the file is not that."""
    doc = src.doc
    if doc is None:
        return "a JSON Lines file, not one JSON document"
    if isinstance(doc, Mapping):
        return [doc]
    if not isinstance(doc, list):
        return f"the file holds a JSON {type(doc).__name__}, not a list or object"
    return list(doc) or "the top-level list is empty"


def item_where(doc: Any, k: int) -> str:
    """How an error names record ``k`` of a document from `document_items`."""
    return "the top-level object" if isinstance(doc, Mapping) else f"record {k}"


def checked_items(src: "Source", sniff: Callable[["Source"], str | None], name: str) -> list[Any]:
    """`document_items` of a file ``sniff`` accepts; else an error naming the file."""
    reason = sniff(src)
    if reason is not None:
        raise src.error(None, f"not a {name} file: {reason}")
    return document_items(src)  # type: ignore[return-value]


def select(items: Sequence[Any], index: int | str, ident: Callable[[Any, int], str], path: Any, what: str) -> int:
    """The position of the item ``index`` names: an int position (negative counts from the
    end) or an item id as ``ident(item, position)`` gives it."""
    n = len(items)
    if isinstance(index, bool) or not isinstance(index, (int, str)):
        raise TypeError(f"index must be an int position or a str id, but {index!r} was passed")
    if isinstance(index, int):
        if -n <= index < n:
            return index % n
        raise ConversationIndexError(f"{path}: index {index} is out of range; the file holds {n} {what} "
                                     f"(positions 0 to {n - 1}; ids: {_ids(items, ident)})")
    for i, item in enumerate(items):
        if ident(item, i) == index:
            return i
    one = what[:-1] if what.endswith("s") else what
    raise ConversationIndexError(f"{path}: no {one} with id {index!r}; the file holds {n} {what}, "
                                 f"ids: {_ids(items, ident)} (or a position 0 to {n - 1})")


def _position(_src: "Source", _item: Any, k: int) -> str:
    return str(k)


@dataclass(frozen=True)
class Format:
    """A transcript format, declared once by its importer: `load_any`'s detection, the
    importer's ``load_X(path, index=)`` and ``load_X_all(path)`` all follow from it.

    ``sniff(src)`` is ``None`` for a file in the format, else why not; ``items(src)`` the
    conversations a file holds, raw, its own errors naming the file (``None``: a file is one
    conversation, read once ``sniff`` accepts it); ``convert(src,
    item, k)`` one of them as a `Conversation` (``item`` is ``None`` for a one-conversation
    file); ``ident(src, item, k)`` the id ``index=`` may name it by; ``what`` what the items
    are called in an error; ``read(path)`` the file as a `Source`."""

    name: str
    title: str
    """What such a file is, for people: ``"a Claude Code session"``."""
    sniff: Callable[["Source"], str | None]
    convert: Callable[["Source", Any, int], Conversation]
    items: Callable[["Source"], Sequence[Any]] | None = None
    ident: Callable[["Source", Any, int], str] = _position
    what: str = "conversations"
    read: Callable[[Any], "Source"] = field(default=lambda path: read_source(path))

    def load(self, path: Any, *, index: int | str | None = None) -> Conversation:
        """One conversation of the file at ``path``: ``index`` is a position or an id (the
        first by default)."""
        src = self.read(path)
        if self.items is None:
            if index not in (0, None):
                raise ConversationIndexError(f"{src.path}: holds one conversation; index {index!r} does not apply "
                                             "(leave it out, or pass 0)")
            return self._one(src)
        items = self.items(src)
        i = select(items, 0 if index is None else index, lambda item, k: self.ident(src, item, k), src.path, self.what)
        return self.convert(src, items[i], i)

    def load_all(self, path: Any) -> list[Conversation]:
        """Every conversation of the file at ``path``."""
        src = self.read(path)
        if self.items is None:
            return [self._one(src)]
        return [self.convert(src, item, k) for k, item in enumerate(self.items(src))]

    def _one(self, src: "Source") -> Conversation:
        reason = self.sniff(src)
        if reason is not None:
            raise src.error(None, f"not {self.title}: {reason}")
        return self.convert(src, None, 0)


def _ids(items: Sequence[Any], ident: Callable[[Any, int], str], shown: int = 10) -> str:
    ids = ", ".join(repr(ident(items[i], i)) for i in range(min(len(items), shown)))
    return ids + (f", … ({len(items) - shown:,} more)" if len(items) > shown else "")


def text_of(content: Any) -> tuple[str, tuple[Attachment, ...]]:
    """Text and image attachments of a message ``content``: a string, or a list of parts in
    OpenAI (``{"type": "text", "text"}``, ``image_url``) or Anthropic (``text``, ``image``)
    shape. Image bytes never enter a message; an attachment records their size."""
    if content is None:
        return "", ()
    if isinstance(content, str):
        return content, ()
    if isinstance(content, Mapping):
        content = [content]
    if not isinstance(content, list):
        return str(content), ()
    texts: list[str] = []
    files: list[Attachment] = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        if not isinstance(part, Mapping):
            texts.append(str(part))
            continue
        kind = part.get("type", "text")
        if kind in ("text", "input_text", "output_text"):
            texts.append(str(part.get("text", "")))
        elif kind in ("image", "image_url", "input_image"):
            files.append(_image_attachment(part, len(files)))
        elif kind == "document":
            files.append(_image_attachment(part, len(files), default_mime="application/pdf"))
        elif "text" in part:
            texts.append(str(part["text"]))
    return "\n\n".join(texts), tuple(files)


def _image_attachment(part: Mapping[str, Any], k: int, default_mime: str = "image/png") -> Attachment:
    source = part.get("source") or {}
    mime = default_mime
    size = 0
    url = ""
    if isinstance(source, Mapping):
        mime = str(source.get("media_type") or mime)
        data = source.get("data")
        if isinstance(data, str):
            size = len(data) * 3 // 4  # base64 → bytes
        url = str(source.get("url") or "")
    image_url = part.get("image_url")
    if isinstance(image_url, Mapping):
        url = str(image_url.get("url") or "")
    elif isinstance(image_url, str):
        url = image_url
    if url.startswith("data:"):
        head, _, data = url.partition(",")
        mime = head[5:].split(";")[0] or mime
        size = len(data) * 3 // 4
        url = ""
    ext = mime.rsplit("/", 1)[-1]
    return Attachment(name=f"{part.get('type', 'file')}-{k}.{ext}", size=size, mime=mime, path=url)


@dataclass
class _OpenTurn:
    input: UserInput
    input_id: str
    messages: list[Message] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    usage: list[Usage | None] = field(default_factory=list)
    outcome: str = "answered"
    error: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


class TurnBuilder:
    """Folds a stream of messages into `Turn` s: a turn starts at each user input.

    Messages that arrive before the first user input get a synthetic empty `UserInput`
    (``metadata["synthetic_input"] = True``, id ``"<first message id>:input"``), so nothing
    the source recorded is dropped and every turn still starts with an input.

    Usage is kept per assistant reply (``assistant(..., usage=...)``); a turn's ``usage``
    holds one row per reply when every reply recorded one, none when none did. When only
    some did, the rows cannot be matched to replies by position, so they are left out and
    the turn's ``metadata["usage_incomplete"]`` is set.
    """

    def __init__(self) -> None:
        self._turns: list[_OpenTurn] = []

    @property
    def current(self) -> _OpenTurn | None:
        return self._turns[-1] if self._turns else None

    def __len__(self) -> int:
        return len(self._turns)

    def user(self, message: UserInput, id: str, **metadata: Any) -> None:
        """Start a new turn with ``message`` as its input."""
        self._turns.append(_OpenTurn(message, str(id), metadata=dict(metadata)))

    def _ensure(self, id: str) -> _OpenTurn:
        if not self._turns:
            self.user(UserInput(""), f"{id}:input", synthetic_input=True)
        return self._turns[-1]

    def assistant(self, message: AssistantMessage, id: str, usage: Usage | None = None) -> None:
        turn = self._ensure(id)
        turn.messages.append(message)
        turn.ids.append(str(id))
        turn.usage.append(usage)

    def results(self, message: ToolResults, id: str) -> None:
        """Add a tool round's results; consecutive result messages are merged into one."""
        turn = self._ensure(id)
        if turn.messages and isinstance(turn.messages[-1], ToolResults):
            prev = turn.messages[-1]
            turn.messages[-1] = ToolResults(prev.results + message.results)
            return
        turn.messages.append(message)
        turn.ids.append(str(id))

    def build(self) -> list[Turn]:
        """The turns, with missing tool results filled in (see `pair_results`)."""
        out: list[Turn] = []
        for t in self._turns:
            metadata = dict(t.metadata)
            messages, ids, filled = pair_results(t.messages, t.ids)
            if filled:
                metadata["missing_tool_results"] = filled
            replies = t.usage  # one entry per assistant message, None when it recorded none
            usage: tuple[Usage, ...] = ()
            if replies and all(u is not None for u in replies):
                usage = tuple(replies)  # type: ignore[arg-type]
            elif any(u is not None for u in replies):
                metadata["usage_incomplete"] = True
            out.append(
                Turn(
                    input=t.input,
                    messages=tuple(messages),
                    outcome=t.outcome,  # type: ignore[arg-type]
                    error=t.error,
                    usage=usage,
                    ids=(t.input_id, *ids),
                    metadata={k: freeze(v) for k, v in metadata.items()},
                )
            )
        return out


MISSING_RESULT = "(no result was recorded for this tool call)"


def pair_results(messages: Sequence[Message], ids: Sequence[str]) -> tuple[list[Message], list[str], int]:
    """Make every tool call answered by a result in the next message, as providers require.

    A call whose result the source never recorded (the agent was stopped mid-round, or the
    file ends there) gets a failed result with `MISSING_RESULT` as content, inserted where
    the results belong. Results are reordered into call order. Returns the messages, their
    ids, and how many results were filled in.
    """
    out: list[Message] = []
    out_ids: list[str] = []
    filled = 0
    i = 0
    n = len(messages)
    while i < n:
        m = messages[i]
        out.append(m)
        out_ids.append(ids[i])
        i += 1
        if not isinstance(m, AssistantMessage) or not m.calls:
            continue
        nxt = messages[i] if i < n else None
        got = list(nxt.results) if isinstance(nxt, ToolResults) else []
        by_id: dict[str, list[ToolResult]] = {}
        for r in got:
            by_id.setdefault(r.id, []).append(r)
        ordered: list[ToolResult] = []
        for call in m.calls:
            bucket = by_id.get(call.id)
            if bucket:
                ordered.append(bucket.pop(0))
            else:
                ordered.append(ToolResult(call.id, MISSING_RESULT, success=False))
                filled += 1
        # results for ids no call named (sources do reuse ids) stay, after the paired ones
        ordered.extend(r for bucket in by_id.values() for r in bucket)
        if isinstance(nxt, ToolResults):
            out.append(ToolResults(tuple(ordered), pinned=nxt.pinned))
            out_ids.append(ids[i])
            i += 1
        else:
            out.append(ToolResults(tuple(ordered)))
            out_ids.append(f"{ids[i - 1]}:results")
    return out, out_ids, filled


def conversation(
    turns: Iterable[Turn],
    *,
    id: str,
    source: Any,
    format: str,
    metadata: Mapping[str, Any] | None = None,
    probes: Iterable[Probe] = (),
    compactions: Iterable[RecordedCompaction] = (),
    system: str = "",
) -> Conversation:
    """A `Conversation` whose metadata names the ``format`` it was read from."""
    meta = {"format": format}
    meta.update({k: freeze(v) for k, v in (metadata or {}).items()})
    return Conversation(
        turns=tuple(turns), id=str(id), source=str(source), metadata=meta,
        probes=tuple(probes), compactions=tuple(compactions), system=system,
    )


def get(obj: Mapping[str, Any], key: str, kind: type | tuple[type, ...], src: Source, where: Any,
        default: Any = _MISSING) -> Any:
    """``obj[key]`` checked to be a ``kind``; a missing or mistyped value raises an error
    naming the record (``default`` is returned for a missing key when given)."""
    if key not in obj or obj[key] is None:
        if default is not _MISSING:
            return default
        raise src.error(where, f"missing {key!r}; expected a {_kind_name(kind)}")
    value = obj[key]
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise src.error(where, f"{key!r} must be a {_kind_name(kind)}, got {value!r}")
    if not isinstance(value, kind):
        raise src.error(where, f"{key!r} must be a {_kind_name(kind)}, got {type(value).__name__} {_short(value)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "object", list: "list", str: "string", int: "integer", float: "number", bool: "boolean"}
    if isinstance(kind, tuple):
        return " or ".join(names.get(k, k.__name__) for k in kind)
    return names.get(kind, kind.__name__)


def _short(value: Any, n: int = 60) -> str:
    s = json.dumps(value, ensure_ascii=False, default=str)
    return s if len(s) <= n else s[: n - 3] + "..."
