"""Find the agent sessions recorded on this machine.

* Claude Code keeps sessions in ``~/.claude/projects/<project>/<session id>.jsonl`` (subagents
  in ``<session id>/subagents/agent-*.jsonl``; ``$CLAUDE_CONFIG_DIR`` moves ``~/.claude``).
* Codex CLI keeps them in ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`` (``$CODEX_HOME``
  moves ``~/.codex``).
* Gemini CLI keeps them in ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` (``.json`` before
  April 2026; ``<project>`` is the project root's hash or, in newer versions, a short name;
  subagents in ``chats/<parent session id>/<session id>.jsonl``; ``$GEMINI_CLI_HOME`` stands
  for the home folder), as its ``Storage.getProjectTempDir`` and ``ChatRecordingService`` say.
* The Cline SDK keeps them in ``~/.cline/data/sessions/<session id>/<session id>.messages.json``
  (subagents and team members as other ``*.messages.json`` files of that folder), as its
  ``resolveSessionDataDir`` says: ``$CLINE_SESSION_DATA_DIR``, else ``$CLINE_DATA_DIR/sessions``,
  else ``$CLINE_DIR/data/sessions``, else ``~/.cline/data/sessions``. (The Cline VS Code
  extension keeps its tasks elsewhere, in another format, which harpe_lab does not read.)
* Aider writes one ``.aider.chat.history.md`` per project, in the folder it ran in; there is
  no central list, so only the folders passed as ``folders`` are looked at.

Nothing is read but the folder listing and file sizes and dates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable

__all__ = ["SessionFile", "SessionList", "discover"]


@dataclass(frozen=True)
class SessionFile:
    """One recorded session file; load it with ``load_any(session.path)``."""

    path: Path
    tool: str
    """``"claude_code"``, ``"codex"``, ``"gemini_cli"``, ``"cline"`` or ``"aider"`` (the `load_any`
    format name)."""
    project: str
    """Claude Code's project folder name (the cwd with ``/`` as ``-``); Codex: ``YYYY/MM/DD``;
    Gemini CLI: its folder under ``~/.gemini/tmp``; Cline: ``""`` (the session's manifest
    names its cwd); Aider: the folder given."""
    session_id: str
    """Aider: the folder's name (its history file holds every run made there)."""
    size: int
    """Bytes."""
    modified: datetime
    """Last write, UTC."""
    subagent: bool = False
    """A subagent's file (Claude Code ``agent-*.jsonl``, a Gemini CLI or Cline subagent)
    rather than a main session."""


class SessionList(list):
    """A list of `SessionFile` s, newest first, that can become a DataFrame."""

    def to_frame(self) -> Any:
        """A pandas DataFrame with one row per session (pandas imported on first use)."""
        import pandas as pd

        columns = ["tool", "project", "session_id", "subagent", "size", "modified", "path"]
        rows = [{c: (str(getattr(s, c)) if c == "path" else getattr(s, c)) for c in columns} for s in self]
        return pd.DataFrame(rows, columns=columns)


def _stat(path: Path) -> tuple[int, datetime]:
    st = path.stat()
    return st.st_size, datetime.fromtimestamp(st.st_mtime, tz=timezone.utc)


def _claude_root(home: Path) -> Path:
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured) if configured else home / ".claude"


def _codex_root(home: Path) -> Path:
    configured = os.environ.get("CODEX_HOME")
    return Path(configured) if configured else home / ".codex"


def _gemini_root(home: Path) -> Path:
    configured = os.environ.get("GEMINI_CLI_HOME")
    return (Path(configured) if configured else home) / ".gemini"


def _cline_sessions(home: Path) -> Path:
    for variable, tail in (("CLINE_SESSION_DATA_DIR", ()), ("CLINE_DATA_DIR", ("sessions",)),
                           ("CLINE_DIR", ("data", "sessions"))):
        configured = os.environ.get(variable, "").strip()
        if configured:
            return Path(configured, *tail)
    return home / ".cline" / "data" / "sessions"


_AIDER_HISTORY = ".aider.chat.history.md"


def discover(*, home: Any = None, subagents: bool = False, folders: Iterable[Any] = ()) -> SessionList:
    """List the Claude Code, Codex CLI, Gemini CLI and Cline sessions under ``home`` (default:
    the user's home), and the Aider histories (``.aider.chat.history.md``) in ``folders``.

    Subagent files are left out unless ``subagents`` is true. Returns a `SessionList`
    (newest first); ``.to_frame()`` turns it into a DataFrame. An absent tool folder (or a
    folder with no Aider history) gives no rows, not an error.
    """
    base = Path(home).expanduser() if home is not None else Path.home()
    found: list[SessionFile] = []
    projects = _claude_root(base) / "projects"
    if projects.is_dir():
        for path in projects.glob("*/*.jsonl"):
            size, modified = _stat(path)
            found.append(SessionFile(path, "claude_code", path.parent.name, path.stem, size, modified))
        if subagents:
            for path in projects.glob("*/*/subagents/agent-*.jsonl"):
                size, modified = _stat(path)
                found.append(SessionFile(path, "claude_code", path.parents[2].name, path.parents[1].name, size,
                                         modified, subagent=True))
    sessions = _codex_root(base) / "sessions"
    if sessions.is_dir():
        for path in sessions.rglob("*.jsonl"):
            size, modified = _stat(path)
            rel = path.parent.relative_to(sessions)
            # rollout-2025-09-01T10-00-00-<uuid>.jsonl: the session id is the trailing uuid
            parts = path.stem.split("-")
            session_id = "-".join(parts[-5:]) if path.stem.startswith("rollout-") and len(parts) >= 10 else path.stem
            found.append(SessionFile(path, "codex", rel.as_posix(), session_id, size, modified))
    chats = _gemini_root(base) / "tmp"
    if chats.is_dir():
        for path in sorted(chats.glob("*/chats/session-*.json")) + sorted(chats.glob("*/chats/session-*.jsonl")):
            size, modified = _stat(path)
            found.append(SessionFile(path, "gemini_cli", path.parents[1].name, path.stem.rsplit("-", 1)[-1], size,
                                     modified))
        if subagents:
            for path in chats.glob("*/chats/*/*.jsonl"):
                size, modified = _stat(path)
                found.append(SessionFile(path, "gemini_cli", path.parents[2].name, path.stem, size, modified,
                                         subagent=True))
    cline = _cline_sessions(base)
    if cline.is_dir():
        for path in cline.glob("*/*.messages.json"):
            main = path.name == f"{path.parent.name}.messages.json"
            if main or subagents:
                size, modified = _stat(path)
                found.append(SessionFile(path, "cline", "", path.name[: -len(".messages.json")], size, modified,
                                         subagent=not main))
    for folder in folders:
        where = Path(folder).expanduser()
        path = where / _AIDER_HISTORY
        if path.is_file():
            size, modified = _stat(path)
            found.append(SessionFile(path, "aider", str(where), where.resolve().name, size, modified))
    found.sort(key=lambda s: (s.modified, str(s.path)), reverse=True)
    return SessionList(found)
