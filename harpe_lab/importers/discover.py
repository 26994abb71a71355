"""Find the agent sessions recorded on this machine.

Claude Code keeps sessions in ``~/.claude/projects/<project>/<session id>.jsonl`` (subagents
in ``<session id>/subagents/agent-*.jsonl``; ``$CLAUDE_CONFIG_DIR`` moves ``~/.claude``).
Codex CLI keeps them in ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`` (``$CODEX_HOME``
moves ``~/.codex``). Nothing is read but the folder listing and file sizes and dates.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["SessionFile", "SessionList", "discover"]


@dataclass(frozen=True)
class SessionFile:
    """One recorded session file; load it with ``load_any(session.path)``."""

    path: Path
    tool: str
    """``"claude_code"`` or ``"codex"`` (the `load_any` format name)."""
    project: str
    """Claude Code's project folder name (the cwd with ``/`` as ``-``); Codex: ``YYYY/MM/DD``."""
    session_id: str
    size: int
    """Bytes."""
    modified: datetime
    """Last write, UTC."""
    subagent: bool = False
    """A Claude Code subagent file (``agent-*.jsonl``) rather than a main session."""


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


def discover(*, home: Any = None, subagents: bool = False) -> SessionList:
    """List the Claude Code and Codex CLI sessions under ``home`` (default: the user's home).

    Subagent files are left out unless ``subagents`` is true. Returns a `SessionList`
    (newest first); ``.to_frame()`` turns it into a DataFrame. An absent tool folder gives
    no rows, not an error.
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
    found.sort(key=lambda s: (s.modified, str(s.path)), reverse=True)
    return SessionList(found)
