"""Aider chat histories (``.aider.chat.history.md``, written in the folder Aider ran in).

Aider appends Markdown to one file per project (``aider/io.py``): each run starts with
``# aider chat started at <time>``; each user input is written as ``#### <line>`` lines
(one per input line, each ending in two spaces; an empty input as ``#### <blank>``); each
model reply as plain text; and everything Aider itself prints as ``> <message>`` lines
ending in two spaces — a message with several lines carries the ``> `` on its first line
only, and ends at the first line that ends in two spaces. Read from that format:

* **One conversation per run.** Each ``# aider chat started`` block is a conversation (id: the
  time as written); text before the first header (the file was cut) is one more, with
  ``metadata["partial"]``. ``metadata["session"]`` is the 1-based number of the header that
  opens it (0 for that preamble). A run with no input and no reply (Aider started and
  quit) is not a conversation; the gaps in ``session`` show where one was. Use ``index=``
  (a position or the start time) or `load_aider_all`.
* **Turns.** A user input starts a turn, its text as typed (``/ask …`` included). An input
  starting with ``/`` that no reply follows is a command (``/add``, ``/drop``, ``/run`` …), not
  sent to the model: it goes to ``metadata["commands"]`` (line, text, and Aider's messages
  after it) instead. Other inputs with no reply stay turns (the request was made; nothing
  came back) with ``turn.metadata["no_reply"]``.
* **Replies.** The text between an input (or Aider's messages) and the next ``>`` or ``####``
  line is one `AssistantMessage`. A turn may hold several replies in a row: Aider's
  reflections (lint or test errors, files the model asked for) and architect mode's editor
  send user messages Aider does not write to the history.
* **Usage.** Each ``> Tokens: 2.3k sent, 1.1k cache write, 4.1k cache hit, 150 received.
  Cost: $0.01 message, $0.05 session.`` message (``show_usage_report``) is the usage row of
  the reply before it (an empty reply when there is none: the call returned nothing).
  ``sent`` is the whole prompt, cached parts included (Aider adds the cache writes to
  ``prompt_tokens``); ``cache hit`` (older: ``cached``) is ``cache_read_tokens``, ``cache
  write`` is ``cache_write_tokens``. Aider rounds what it prints: ``1.2k`` means 1,200 (the
  true count is within ±50), ``12k`` means 12,000 (±500); counts under 1,000 and older
  files' ``5,244`` are exact. The row's model is the main model named last before it.
* **Cost.** A turn's ``metadata["cost_usd"]`` has one entry per reply: the cost Aider printed
  for that call (older files print it per ``request``; newer ones print the running total of
  the ``message``, so a reply's share is the difference from the previous reply of the same
  input), ``None`` when no cost was printed. Aider prints two decimals from $0.01 up.
  ``metadata["session_cost_usd"]`` is the last session total printed.
* **Aider's own messages.** Those after the header and before the first input are
  ``metadata["announcements"]``; later ones go to the turn's ``metadata["tool_output"]``
  (never message text: the model does not see them). The version (``> Aider v0.86.2``) and
  the models (``> Model: X with diff edit format``, ``> Main model: X …``, ``> Weak model: Y``,
  ``> Editor model: Z …``, older ``> Models: X with diff edit format, weak model Y``) are
  read from any of them into ``metadata["aider_version"]``, ``["models"]`` (main models in
  order), ``["weak_models"]`` and ``["editor_models"]``.

Message ids are ``"l<line>"``, the line where the message starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from ..conversation import Conversation
from ..errors import ImportFormatError
from ..messages import AssistantMessage, Usage, UserInput
from ._common import Format, Source, TurnBuilder, conversation, format_error, read_source

__all__ = ["load_aider", "load_aider_all"]

NAME = "aider"
_HEADER = re.compile(r"^# aider chat started at (.*?)\s*$")
_ANY_HEADER = re.compile(r"^# aider chat started at ", re.M)
_COUNT = r"(\d[\d,]*(?:\.\d+)?k?)"
_PART = re.compile(_COUNT + r" (sent|cache write|cache hit|cached|received)\b")
_COST = re.compile(r"Cost: \$(\d+(?:\.\d+)?) (message|request), \$(\d+(?:\.\d+)?) session\.")
_MODEL = re.compile(r"^(Main model|Model|Models|Editor model|Weak model): (.+?)(?: with .*)?$")
_WEAK_IN_MODELS = re.compile(r", weak model (\S+)")
_VERSION = re.compile(r"^Aider v(\S+)$")


def load_aider(path: Any, *, index: int | str = 0) -> Conversation:
    """Read one run of an Aider chat history (``index``: a position among the runs that
    hold a conversation, or the run's start time as its header writes it)."""
    return FORMAT.load(path, index=index)


def load_aider_all(path: Any) -> list[Conversation]:
    """Read every run of an Aider chat history that holds a conversation."""
    return FORMAT.load_all(path)


def history_source(path: Any) -> Source:
    """A `Source` for ``path``: an Aider history read as text, or (for any other file) what
    `read_source` makes of it, with its usual errors."""
    if isinstance(path, Source):
        return path
    text = _text(path)
    if text is not None and _ANY_HEADER.search(text):
        return Source(Path(path).expanduser(), text)
    try:
        return read_source(path)
    except ImportFormatError:
        if not text or not text.strip():
            raise
        raise format_error(Path(path).expanduser(), None, "not an Aider chat history (no '# aider chat started "
                           "at' line), nor JSON; pass the project's .aider.chat.history.md") from None


def markdown_source(path: Any) -> Source | None:
    """``path`` as a text `Source` when it is readable UTF-8 text holding a ``# aider chat
    started at`` header, else ``None`` (the caller reports the usual error)."""
    text = _text(path)
    return Source(Path(path).expanduser(), text) if text is not None and _ANY_HEADER.search(text) else None


def _text(path: Any) -> str | None:
    p = Path(path).expanduser()
    if not p.is_file():
        return None
    try:
        return p.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None


def sniff(src: Source) -> str | None:
    """``None`` when the file is an Aider chat history, else why not."""
    if src.doc is not None or src.records is not None:
        return "a JSON file, not an Aider chat history (Markdown)"
    if not _ANY_HEADER.search(src.text):
        return "no '# aider chat started at' line"
    return None


# -- lines to events --------------------------------------------------------------------


@dataclass
class _Event:
    kind: str  # input | reply | note (one of Aider's own messages)
    line: int
    text: str


@dataclass
class _Session:
    number: int  # the header's 1-based number, 0 for text before the first header
    started: str
    events: list[_Event] = field(default_factory=list)


def _user_text(line: str) -> str:
    text = line[5:] if line.startswith("#### ") else line[4:]
    text = text[:-2] if text.endswith("  ") else text
    return "" if text == "<blank>" else text


def _events(lines: list[tuple[int, str]]) -> Iterator[_Event]:
    """Aider's writes, recovered from the lines of one run (see the module doc)."""
    reply: _Event | None = None
    note: _Event | None = None  # one of Aider's messages whose last line is still to come
    last_input: _Event | None = None  # the input the previous line belonged to
    for lineno, line in lines:
        if note is not None:
            if line.startswith("#### ") or line.startswith("# aider chat started at "):
                yield note
                note = None
            else:
                note.text += "\n" + line
                if line.endswith("  "):
                    note.text = note.text[:-2]
                    yield note
                    note = None
                continue
        is_user = line.startswith("####") and line[4:5] in ("", " ")
        is_note = line.startswith("> ") or line.rstrip() == ">"
        if is_user and (reply is None or line.endswith("  ")):
            if reply is not None:
                yield reply
                reply = None
            if last_input is not None and last_input.line + last_input.text.count("\n") + 1 == lineno:
                last_input.text += "\n" + _user_text(line)
            else:
                if last_input is not None:
                    yield last_input
                last_input = _Event("input", lineno, _user_text(line))
            continue
        if last_input is not None:
            yield last_input
            last_input = None
        if is_note and (reply is None or line.endswith("  ") or line.startswith("> Tokens: ")):
            if reply is not None:
                yield reply
                reply = None
            body = line[2:] if line.startswith("> ") else ""
            if line.endswith("  ") or not body:
                yield _Event("note", lineno, body[:-2] if body.endswith("  ") else body.rstrip())
            else:
                note = _Event("note", lineno, body)
            continue
        if not line.strip():
            if reply is not None:
                reply.text += "\n"
            continue
        if reply is None:
            reply = _Event("reply", lineno, line)
        else:
            reply.text += "\n" + line
    for pending in (last_input, reply, note):
        if pending is not None:
            yield pending


def _makes_a_conversation(event: _Event) -> bool:
    """Whether ``event`` makes its run a conversation: a reply, a model call, or an input
    that is not a command."""
    if event.kind == "input":
        return not event.text.startswith("/")
    return event.kind == "reply" or event.text.startswith("Tokens: ")


def _sessions(src: Source) -> list[_Session]:
    reason = sniff(src)
    if reason is not None:
        raise src.error(None, f"not an Aider chat history: {reason}")
    sessions = [_Session(0, "before the first header")]
    current: list[tuple[int, str]] = []
    chunks: list[list[tuple[int, str]]] = [current]
    for lineno, line in enumerate(src.text.splitlines(), 1):
        header = _HEADER.match(line)
        if header:
            sessions.append(_Session(len(sessions), header.group(1)))
            current = []
            chunks.append(current)
        else:
            current.append((lineno, line.rstrip("\r")))
    for session, chunk in zip(sessions, chunks):
        session.events = list(_events(chunk))
    kept = [s for s in sessions if any(_makes_a_conversation(e) for e in s.events)]
    if not kept:
        runs = len(sessions) - 1
        raise src.error(None, f"holds {runs} Aider run{'' if runs == 1 else 's'} and none has a reply or a user "
                              "input other than a command")
    return kept


# -- events to a conversation -----------------------------------------------------------


def _count(raw: str) -> int:
    """``"2.3k"`` → 2300, ``"12k"`` → 12000, ``"5,244"`` → 5244."""
    raw = raw.replace(",", "")
    if raw.endswith("k"):
        return round(float(raw[:-1]) * 1000)
    return int(float(raw))


def _tokens(text: str, src: Source, line: int) -> tuple[dict[str, int], tuple[str, float, float] | None]:
    """The counts and (``message``/``request``, cost, session total) of a Tokens message."""
    flat = " ".join(text.split("\n"))
    counts: dict[str, int] = {}
    for part in flat[len("Tokens: "):].split(", "):
        m = _PART.match(part.strip())
        if m is None:
            raise src.error(line, f"cannot read {part.strip()[:40]!r} in the 'Tokens:' line; expected '<count> sent', "
                                  "'<count> cache hit', '<count> cache write', then '<count> received'")
        counts[m.group(2)] = _count(m.group(1))
        if m.group(2) == "received":
            break
    if "sent" not in counts or "received" not in counts:
        raise src.error(line, f"the 'Tokens:' line lacks '<count> sent' or '<count> received': {flat[:80]!r}")
    cost = _COST.search(flat)
    return counts, (cost.group(2), float(cost.group(1)), float(cost.group(3))) if cost else None


class _Folder:
    """Builds one conversation from one run's events."""

    def __init__(self, src: Source, session: _Session) -> None:
        self.src = src
        self.session = session
        self.builder = TurnBuilder()
        self.reply: _Event | None = None
        self.pending: _Event | None = None  # an input whose first reply has not come yet
        self.model = ""
        self.meta: dict[str, Any] = {"session": session.number, "started": "" if session.number == 0 else
                                     session.started, "models": [], "weak_models": [], "editor_models": []}
        self.announcements: list[str] = []
        self.commands: list[dict[str, Any]] = []
        self.held: list[str] = []  # Aider's messages printed while an input waits for its reply
        self.message_cost = 0.0  # the running 'message' cost printed so far for this input

    def start_pending(self, **metadata: Any) -> None:
        event, self.pending = self.pending, None
        if event is not None:
            if self.held:
                metadata["tool_output"] = self.held
            self.builder.user(UserInput(event.text), f"l{event.line}", **metadata)
            self.held = []

    def drop_pending(self) -> None:
        """The pending input got no reply: a command, or a turn with nothing back."""
        event = self.pending
        if event is None:
            return
        if event.text.startswith("/"):
            self.commands.append({"line": event.line, "text": event.text, "output": self.held})
            self.pending, self.held = None, []
            return
        self.start_pending(no_reply=True)

    def flush(self, usage: Usage | None = None, cost: float | None = None, line: int | None = None) -> None:
        reply, self.reply = self.reply, None
        if reply is None and usage is None:
            return
        self.start_pending()
        ident = f"l{reply.line}" if reply is not None else f"l{line}"
        self.builder.assistant(AssistantMessage(reply.text.strip() if reply is not None else ""), ident, usage)
        turn = self.builder.current
        assert turn is not None
        turn.metadata.setdefault("cost_usd", []).append(cost)

    def note(self, event: _Event) -> None:
        text = event.text
        self.models_from(text)
        if text.startswith("Tokens: "):
            counts, cost = _tokens(text, self.src, event.line)
            usage = Usage(input_tokens=counts["sent"], output_tokens=counts.get("received", 0),
                          cache_read_tokens=counts.get("cache hit", counts.get("cached", 0)),
                          cache_write_tokens=counts.get("cache write", 0), model=self.model)
            share = None
            if cost is not None:
                kind, value, session_total = cost
                share = value if kind == "request" else round(max(value - self.message_cost, 0.0), 6)
                self.message_cost = value if kind == "message" else self.message_cost
                self.meta["session_cost_usd"] = session_total
            self.flush(usage, share, event.line)
            return
        self.flush()
        turn = self.builder.current
        if self.pending is not None:
            self.held.append(text)
        elif turn is None:
            self.announcements.append(text)
        else:
            turn.metadata.setdefault("tool_output", []).append(text)

    def models_from(self, text: str) -> None:
        version = _VERSION.match(text)
        if version:
            self.meta.setdefault("aider_version", version.group(1))
            return
        m = _MODEL.match(text)
        if m is None:
            return
        role, name = m.group(1), m.group(2).strip().rstrip("⚡").strip()
        bucket = {"Weak model": "weak_models", "Editor model": "editor_models"}.get(role, "models")
        if bucket == "models":
            self.model = name
        if name not in self.meta[bucket]:
            self.meta[bucket].append(name)
        weak = _WEAK_IN_MODELS.search(text) if role == "Models" else None
        if weak and weak.group(1) not in self.meta["weak_models"]:
            self.meta["weak_models"].append(weak.group(1))

    def build(self) -> Conversation:
        for event in self.session.events:
            if event.kind == "input":
                self.flush()
                self.drop_pending()
                self.pending = event
                self.message_cost = 0.0  # Aider's 'message' cost starts again with each input
            elif event.kind == "reply":
                self.flush()
                self.reply = event
            else:
                self.note(event)
        self.flush()
        self.drop_pending()
        meta = dict(self.meta)
        if self.session.number == 0:
            meta["partial"] = True
        if self.announcements:
            meta["announcements"] = self.announcements
        if self.commands:
            meta["commands"] = self.commands
        ident = self.session.started
        return conversation(self.builder.build(), id=ident, source=self.src.path, format=NAME, metadata=meta)


def _convert(src: Source, session: _Session) -> Conversation:
    return _Folder(src, session).build()


FORMAT = Format(NAME, "an Aider chat history", sniff, lambda src, s, _k: _convert(src, s), items=_sessions,
                ident=lambda _src, s, _k: s.started, what="sessions", read=history_source)
