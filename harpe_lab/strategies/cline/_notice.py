"""What the dropped work was: the files read and edited and the commands run that a basic
compaction's ``<SYSTEM_NOTICE>`` reports in place of the messages it drops."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from ...messages import AssistantMessage, Message, ToolResults
from ._measures import COMMAND_CHARS

__all__ = ["tool_activity", "ToolActivity", "dropped_work_notice"]

# --- what the dropped work was ---------------------------------------------------------------


@dataclass(frozen=True)
class ToolActivity:
    """``ToolActivitySummary``: files read and edited (with line ranges) and commands run, in
    the order first seen."""

    read_files: tuple[str, ...] = ()
    edited_files: tuple[str, ...] = ()
    commands: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.read_files or self.edited_files or self.commands)


def _is_mapping(value: Any) -> bool:
    # a dict first: isinstance against typing's Mapping goes through the ABC machinery
    return type(value) is dict or isinstance(value, Mapping)


def _collect_paths(value: Any) -> list[str]:
    """``collectPaths``: the paths in a tool input."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [p for item in value for p in _collect_paths(item)]
    if _is_mapping(value):
        paths: list[str] = []
        for key in ("path", "file_path", "target_file", "new_file_path", "old_file_path"):
            paths.extend(_collect_paths(value.get(key)))
        if isinstance(value.get("files"), list):
            for item in value["files"]:
                if _is_mapping(item):
                    paths.extend(_collect_paths(item.get("path")))
        if isinstance(value.get("file_paths"), list):
            paths.extend(_collect_paths(value["file_paths"]))
        return paths
    return []


def _js_number(value: Any) -> str | None:
    """A JSON number as JavaScript writes it in a template (``462``, ``1.5``); None when not one."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _push(entries: list[str], value: str) -> None:
    value = value.strip()
    if value and value not in entries:
        entries.append(value)


_DIFF_LINE = re.compile(r"(?:^|\n|\\n)[-+](\d+): ")


def _diff_range(content: str) -> tuple[int, int] | None:
    """``extractDiffLineRange``: the lowest and highest line numbered in an editor result's
    diff (``-467: …`` / ``+467: …``), read from its JSON ``result`` when it has one."""
    text = content
    try:
        parsed = json.loads(content)
    except ValueError:
        parsed = None
    if _is_mapping(parsed) and isinstance(parsed.get("result"), str):
        text = parsed["result"]
    lines = [int(m.group(1)) for m in _DIFF_LINE.finditer(text)]
    return (min(lines), max(lines)) if lines else None


def tool_activity(messages: Iterable[Message]) -> ToolActivity:
    """``summarizeToolActivity``: what Cline's tools did in ``messages``. ``read_files``
    inputs give the reads (``path:start-end`` when both lines are given), ``editor`` and
    ``apply_patch`` calls the edits (with the range of the numbered diff in their result,
    when the result is among ``messages``), ``run_commands`` the commands. Other tools'
    calls are not Cline's and add nothing."""
    reads: list[str] = []
    edits: list[str] = []
    commands: list[str] = []
    editing: dict[str, str] = {}
    for m in messages:
        if isinstance(m, AssistantMessage):
            for c in m.calls:
                data = c.input if _is_mapping(c.input) else {}
                if c.name == "read_files":
                    if isinstance(data.get("files"), list):
                        for f in data["files"]:
                            if _is_mapping(f):
                                path = f.get("path").strip() if isinstance(f.get("path"), str) else ""
                                if not path:
                                    continue
                                start, end = _js_number(f.get("start_line")), _js_number(f.get("end_line"))
                                _push(reads, f"{path}:{start}-{end}" if start is not None and end is not None
                                      else path)
                    else:
                        for p in _collect_paths(data):
                            _push(reads, p)
                elif c.name in ("editor", "apply_patch"):
                    paths = _collect_paths(data)
                    if paths:
                        editing[c.id] = paths[0]
                elif c.name == "run_commands":
                    for command in data.get("commands") if isinstance(data.get("commands"), list) else []:
                        if isinstance(command, str) and command.strip():
                            command = command.strip()
                            _push(commands, command if len(command) <= COMMAND_CHARS
                                  else command[:COMMAND_CHARS] + "...")
        elif isinstance(m, ToolResults):
            for r in m.results:
                path = editing.pop(r.id, None)
                if path is None:
                    continue
                lines = _diff_range(r.content)
                _push(edits, f"{path}:{lines[0]}-{lines[1]}" if lines else path)
    for path in editing.values():  # an edit whose result fell outside still counts
        _push(edits, path)
    return ToolActivity(tuple(reads), tuple(edits), tuple(commands))


def dropped_work_notice(activity: ToolActivity, responses: Sequence[str] = ()) -> str:
    """``buildDroppedWorkSummaryBlock``: the notice that stands for dropped work."""
    body = "\n\n".join([
        "Files read:\n" + "\n".join(activity.read_files),
        "Files edited:\n" + "\n".join(activity.edited_files),
        "Commands ran:\n" + "\n".join(activity.commands),
    ])
    said = f"\n\nYour recent responses:\n{chr(10).join(_sep(responses))}" if responses else ""
    return ("<SYSTEM_NOTICE>\nEarlier context was compacted. Summary of your actions after the request above:\n"
            f"{body}{said}</SYSTEM_NOTICE>")


def _sep(responses: Sequence[str]) -> list[str]:
    # responses.join("\n---\n"), split so that the f-string above stays readable
    out: list[str] = []
    for k, r in enumerate(responses):
        out.append(r if k == len(responses) - 1 else r + "\n---")
    return out


def _assistant_text(message: Message) -> str:
    """``assistantTextContent``: an assistant message's text, trimmed ("" when none)."""
    return message.text.strip() if isinstance(message, AssistantMessage) else ""
