"""A chat bound to a journal file: each turn bracketed, resumed from the journal, for a
notebook (``session.say``) and the command line (``harpe-lab chat``)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Iterable

from ..strategies.harpe import FullContext
from ..errors import AgentError
from ..journal import Journal, JsonlLogger, TurnData
from ..messages import Message
from ._brain import Brain
from ._events import Interact
from ._loop import answer_text, ask
from ._tools import Tool, _toolbox

__all__ = ["ChatSession", "chat"]


ContextFactory = Callable[[list], Any]


class ChatSession:
    """A chat bound to a journal file: each `say` is one bracketed turn.

    Made by `chat`; use as a context manager or call `close` to close the journal.
    ``context`` is the live context (resumed from the journal), ``turns`` what each `say`
    returned in this session.
    """

    def __init__(self, path: Path, brain: Brain, context: Any, tools: dict[str, Tool], interact: Any,
                 options: dict[str, Any], resumed: int) -> None:
        self.path = path
        self.brain = brain
        self.context = context
        self.interact = interact
        self.resumed = resumed
        """Messages of history read back from the journal when the session started."""
        self.turns: list[TurnData] = []
        self._tools = list(tools.values())
        self._options = options
        self._logger = JsonlLogger(path)
        self._journal = Journal(self._logger)

    def say(self, text: str, *, attachments: Iterable[Any] = ()) -> TurnData:
        """Ask one turn, bracketed in the journal (request ``{"text": text}``, response
        ``"turnEnd"``), and return its `TurnData`."""
        if not isinstance(text, str):
            raise AgentError(f"say takes the user's text as a str, got {type(text).__name__}")
        if self._logger.closed:
            raise AgentError(f"the chat on {str(self.path)!r} is closed; start a new one with chat(...)")
        self.interact.cancelled = False  # a Ctrl-C of the previous turn does not cancel this one
        self._journal.request({"text": text})
        try:
            data = ask(text, brain=self.brain, tools=self._tools, context=self.context, logger=self._logger,
                       attachments=attachments, interact=self.interact, **self._options)
        finally:
            # the bracket closes even when ask raised: Harpe reads such a turn as interrupted
            self._journal.response("turnEnd")
        self.turns.append(data)
        return data

    def close(self) -> None:
        """Close the journal file."""
        self._logger.close()

    def __enter__(self) -> "ChatSession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ChatSession({str(self.path)!r}, {self.brain!r}, {len(self.turns)} turns)"


def chat(
    path: Any,
    *,
    brain: Brain,
    context: ContextFactory | Any = None,
    tools: Iterable[Any] = (),
    input: Iterable[str] | None = None,
    output: Callable[[str], Any] | None = None,
    interact: Any = None,
    **options: Any,
) -> ChatSession:
    """A chat session writing the journal at ``path``, resumed when the file exists.

    ``context`` is a factory taking the resumed history (`Journal.load` of the file, ``[]``
    for a new one) and returning the context, e.g. ``lambda history: FullContext(system,
    history)``; default ``FullContext("", history)``. A ready context object is accepted
    only for a new journal (there is nothing to resume into it).

    In a notebook: ``session = chat(path, brain=...)`` then ``session.say("hi")``. With
    ``input`` (lines, e.g. ``sys.stdin``), each non-blank line is said in turn and
    ``output`` (default ``print``) gets the answer, ``[interrupted]`` or ``[failed: ...]``.
    ``options`` go to `ask` (``max_tool_rounds``, ``max_retries``, ``max_output_tokens``).
    """
    if not isinstance(brain, Brain):
        raise AgentError(f"brain must be a Brain, e.g. Brain('openai/gpt-4o-mini'), got {brain!r}")
    unknown = set(options) - {"max_tool_rounds", "max_retries", "max_output_tokens"}
    if unknown:
        raise AgentError(f"chat passes only max_tool_rounds, max_retries and max_output_tokens to ask, "
                         f"got {', '.join(sorted(unknown))}")
    p = Path(os.fspath(path))
    history: list[Message] = Journal.load(p) if p.is_file() and p.stat().st_size else []
    if context is None:
        ctx = FullContext("", history)
    elif callable(getattr(context, "begin_turn", None)):
        if history:
            raise AgentError(
                f"{str(p)!r} holds {len(history)} messages to resume, but a ready context cannot take them; "
                "pass a factory instead, e.g. context=lambda history: FullContext(system, history)"
            )
        ctx = context
    elif callable(context):
        ctx = context(history)
    else:
        raise AgentError(f"context must be a factory taking the resumed history, got {context!r}")
    session = ChatSession(p, brain, ctx, _toolbox(tools), Interact() if interact is None else interact,
                          options, len(history))
    if input is not None:
        show = print if output is None else output
        try:
            for line in input:
                text = line.rstrip("\r\n")
                if not text.strip():
                    continue
                data = session.say(text)
                if data.outcome == "answered":
                    show(answer_text(data))
                elif data.outcome == "failed":
                    show(f"[failed: {data.error}]")
                else:
                    show("[interrupted]")
        except BaseException:
            session.close()
            raise
    return session
