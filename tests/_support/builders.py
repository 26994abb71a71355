"""Message builders: the one place the tests build `harpe_lab.messages` and conversation objects.

Each builder is a thin, literal spelling of the constructor, with the plainest default. Where
tests need another value (a tool name, a default text, the ids of numbered results), they say
it at the call, so that what a test sends is readable where it is asserted."""

from __future__ import annotations

from harpe_lab.conversation import Conversation, Turn
from harpe_lab.messages import AssistantMessage, Attachment, ToolCall, ToolResult, ToolResults, UserInput

# --- messages ----------------------------------------------------------------------------------


def user(text: str = "hi", *attachments: Attachment, pinned: bool = False) -> UserInput:
    return UserInput(text, tuple(attachments), pinned)


def reply(text: str = "", *calls: ToolCall, pinned: bool = False) -> AssistantMessage:
    """An assistant message: ``reply("done")``, ``reply("", call("c1"), call("c2"))``."""
    return AssistantMessage(text, tuple(calls), pinned)


def call(id: str, name: str = "bash", **input: object) -> ToolCall:
    """``call("c1", "read", path="a.py")``: the keywords are the call's input."""
    return ToolCall(id, name, dict(input))


def result(id: str, content: str = "", *attachments: Attachment, success: bool = True) -> ToolResult:
    return ToolResult(id, content, tuple(attachments), success)


def results(*pairs: tuple[str, str], success: bool = True, pinned: bool = False) -> ToolResults:
    """``results(("c1", "output"), ("c2", "more"))``: one result per ``(id, content)``."""
    return ToolResults(tuple(ToolResult(i, content, (), success) for i, content in pairs), pinned)


def results_for(*ids: str, content: str, success: bool = True, pinned: bool = False) -> ToolResults:
    """One result per id, every one ``content``: ``results_for("a", "b", content="r")``."""
    return ToolResults(tuple(ToolResult(i, content, (), success) for i in ids), pinned)


def numbered_results(*contents: str, prefix: str) -> ToolResults:
    """One result per content, for the calls ``<prefix>1``, ``<prefix>2``, …"""
    return ToolResults(tuple(ToolResult(f"{prefix}{k}", c) for k, c in enumerate(contents, 1)))


def image(name: str = "shot.png", size: int = 10) -> Attachment:
    return Attachment(name, size, "image/png", f"/tmp/{name}")


def round_trip(call_id: str, content: str, name: str = "bash", *, input: dict | None = None) -> list:
    """One tool round: a reply calling ``name`` with ``input`` (``{"cmd": "ls"}`` unless
    given), and its result."""
    return [reply("", call(call_id, name, **({"cmd": "ls"} if input is None else input))),
            results((call_id, content))]


def tool_session(rounds: int, output: str = "out {k}") -> list:
    """A task, then ``rounds`` tool rounds of one call each: call ``c<k>``, output ``output``
    formatted with ``k``."""
    msgs = [user("fix the bug")]
    for k in range(1, rounds + 1):
        msgs += round_trip(f"c{k}", output.format(k=k))
    return msgs


# --- turns and conversations ---------------------------------------------------------------------


def turn(text: str, *messages, outcome: str = "answered") -> Turn:
    """A turn: the user's ``text``, then ``messages``."""
    return Turn(UserInput(text), tuple(messages), outcome)


def chat(turns: int, size: int, *, id: str = "chat") -> Conversation:
    """``turns`` answered turns of one question and one answer, ``size`` characters of each
    beyond its ``question k: `` / ``answer k: `` head."""
    return Conversation(tuple(Turn(UserInput(f"question {k}: " + "q" * size),
                                   (AssistantMessage(f"answer {k}: " + "a" * size),)) for k in range(turns)), id=id)


def reading_turn(t: int, steps: int = 2, size: int = 400, text: str | None = None) -> Turn:
    """Turn ``t``: ``steps`` rounds of reading a file (call ``c<t>.<s>``, ``size`` characters
    back), then ``done <t>``."""
    msgs = []
    for s in range(steps):
        msgs.append(AssistantMessage(f"step {s}", (ToolCall(f"c{t}.{s}", "read", {"path": f"f{s}"}),)))
        msgs.append(ToolResults((ToolResult(f"c{t}.{s}", "x" * size),)))
    msgs.append(AssistantMessage(f"done {t}"))
    return Turn(UserInput(text or f"question {t}"), tuple(msgs))


def reading_conversation(turns: int, steps: int = 2, *, size: int = 400, cid: str = "synthetic") -> Conversation:
    """``turns`` reading turns (`reading_turn`)."""
    return Conversation(tuple(reading_turn(t, steps, size) for t in range(turns)), id=cid)
