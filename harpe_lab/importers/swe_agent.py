"""SWE-agent trajectories (``.traj``): an agent fixing a repository through shell-like
commands.

A ``.traj`` file is one JSON object with a ``history`` (the chat the model saw) and a
``trajectory`` (one step per action). The history is read when present:

* ``system`` messages form the system prompt;
* user messages before the agent's first reply start turns (the demonstration, marked
  ``metadata["demo"]``, and the task);
* in function-calling runs, assistant ``tool_calls`` and ``tool`` messages are read as they
  are;
* in classic runs the agent's command is the ``action`` of its reply and the environment
  answers with a user message (the observation). The reply becomes an assistant message
  with the ``thought`` as text and one tool call — name the command's first word, input
  ``{"command": action}``, id ``"h<index>"`` — and the observation its result, so a run is
  one turn of tool rounds, as it is for the agent.

Without a history the ``trajectory`` steps are read the same way after a synthetic input.
Message ids are ``"h<index>"`` into ``history`` (``"t<index>"`` into ``trajectory``).
``metadata`` keeps ``exit_status``, ``submission`` and ``model_stats`` (totals only, so
no usage rows).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..conversation import Conversation
from ..messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from ._common import Format, Source, TurnBuilder, conversation, parse_arguments, text_of

__all__ = ["load_swe_agent"]

NAME = "swe_agent"


def load_swe_agent(path: Any) -> Conversation:
    """Read a SWE-agent ``.traj`` file."""
    return FORMAT.load(path)


def _convert(src: Source, _item: Any = None, _k: int = 0) -> Conversation:
    doc = src.doc
    history = doc.get("history") or []
    if history:
        turns, system, agents = _from_history(src, history)
    else:
        turns, system, agents = _from_trajectory(src, doc["trajectory"]), "", []
    info = doc.get("info") if isinstance(doc.get("info"), Mapping) else {}
    meta: dict[str, Any] = {key: info[key] for key in ("exit_status", "submission", "model_stats") if key in info}
    if doc.get("environment"):
        meta["environment"] = doc["environment"]
    if agents:
        meta["agents"] = agents
    return conversation(turns, id=src.path.stem, source=src.path, format=NAME, metadata=meta, system=system)


def sniff(src: Source) -> str | None:
    """``None`` when the file is a SWE-agent trajectory, else why not."""
    doc = src.doc
    if doc is None:
        return "a JSON Lines file, not one JSON document"
    if not isinstance(doc, Mapping):
        return "not a JSON object with 'history' or 'trajectory'"
    history = doc.get("history")
    if isinstance(history, list) and history:
        for k, m in enumerate(history):
            if not isinstance(m, Mapping) or "role" not in m or "content" not in m:
                return f"history[{k}]: not a {{'role', 'content'}} message"
        if not any(isinstance(m, Mapping) and ("action" in m or "agent" in m) for m in history):
            return "no history message has an 'action' or 'agent' key"
        return None
    steps = doc.get("trajectory")
    if isinstance(steps, list) and steps:
        for k, s in enumerate(steps):
            if not isinstance(s, Mapping) or "action" not in s or "observation" not in s:
                return f"trajectory[{k}]: not an {{'action', 'observation'}} step"
        return None
    return "the object has no non-empty 'history' or 'trajectory' list"


def _command_name(action: str) -> str:
    words = action.strip().split()
    return words[0] if words else "action"


def _from_history(src: Source, history: list[Mapping[str, Any]]) -> tuple[list, str, list[str]]:
    builder = TurnBuilder()
    system: list[str] = []
    agents: list[str] = []
    pending_action = ""  # id of the classic reply waiting for its observation
    for i, m in enumerate(history):
        role = m["role"]
        mid = f"h{i}"
        agent = m.get("agent")
        if agent and agent not in agents:
            agents.append(str(agent))
        text, files = text_of(m.get("content"))
        if role == "system":
            system.append(text)
            pending_action = ""
        elif role == "assistant":
            tool_calls = m.get("tool_calls") or []
            action = m.get("action")
            if tool_calls:
                calls = [
                    ToolCall(str(c.get("id", "")), str((c.get("function") or {}).get("name", "")),
                             parse_arguments((c.get("function") or {}).get("arguments")))
                    for c in tool_calls
                ]
                builder.assistant(AssistantMessage(text, tuple(calls)), mid)
                pending_action = ""
            elif isinstance(action, str) and action.strip():
                thought = m.get("thought")
                reply = thought if isinstance(thought, str) else text
                call = ToolCall(mid, _command_name(action), {"command": action})
                builder.assistant(AssistantMessage(reply, (call,)), mid)
                pending_action = mid
            else:
                builder.assistant(AssistantMessage(text), mid)
                pending_action = ""
        elif role == "tool":
            ids = m.get("tool_call_ids") or [m.get("tool_call_id", "")]
            results = tuple(ToolResult(str(cid), text, files) for cid in ids[:1])
            builder.results(ToolResults(results), mid)
            pending_action = ""
        elif role == "user":
            if pending_action:
                builder.results(ToolResults((ToolResult(pending_action, text, files),)), mid)
                pending_action = ""
            else:
                meta = {"demo": True} if m.get("is_demo") else {}
                builder.user(UserInput(text, files), mid, **meta)
        else:
            raise src.error(f"history[{i}]", f"unknown role {role!r}; expected system, user, assistant or tool")
    return builder.build(), "\n\n".join(system), agents


def _from_trajectory(src: Source, steps: list[Mapping[str, Any]]) -> list:
    builder = TurnBuilder()
    for i, s in enumerate(steps):
        mid = f"t{i}"
        action = str(s.get("action", ""))
        thought = s.get("thought")
        reply = thought if isinstance(thought, str) else str(s.get("response", ""))
        builder.assistant(AssistantMessage(reply, (ToolCall(mid, _command_name(action), {"command": action}),)), mid)
        builder.results(ToolResults((ToolResult(mid, str(s.get("observation", ""))),)), f"{mid}:result")
    return builder.build()


FORMAT = Format(NAME, "a SWE-agent trajectory", sniff, _convert)
