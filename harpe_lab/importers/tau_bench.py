"""tau-bench trajectories: tool-using customer-service dialogues with a reward.

A tau-bench results file is a list of ``{"task_id", "trial", "reward", "info", "traj"}``;
``traj`` is a list of OpenAI chat messages (system policy, simulated user, agent tool
calls and tool results). Each trajectory becomes one conversation with id
``"task<task_id>-trial<trial>"``; use `load_tau_bench_all` or ``index=`` (a position or
that id). ``metadata`` keeps ``reward``, ``task_id``, ``trial``, the simulated user's
``instruction`` and the expected ``actions``. Message ids are ``"m<index>"`` into ``traj``.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..conversation import Conversation
from ._common import Format, Source, checked_items, conversation, document_items, item_where
from .openai import _check_messages, _turns

__all__ = ["load_tau_bench", "load_tau_bench_all"]

NAME = "tau_bench"


def load_tau_bench(path: Any, *, index: int | str = 0) -> Conversation:
    """Read one tau-bench trajectory."""
    return FORMAT.load(path, index=index)


def load_tau_bench_all(path: Any) -> list[Conversation]:
    """Read every trajectory of a tau-bench results file."""
    return FORMAT.load_all(path)


def sniff(src: Source) -> str | None:
    """``None`` when the file holds tau-bench trajectories, else why not."""
    doc = src.doc
    items = document_items(src)
    if isinstance(items, str):
        return items
    for k, t in enumerate(items):
        if not isinstance(t, Mapping) or "traj" not in t:
            return f"{item_where(doc, k)}: has no 'traj' list"
        bad = _check_messages(t["traj"], f"record {k} 'traj'")
        if bad:
            return bad
    return None


def _items(src: Source) -> list[Mapping[str, Any]]:
    return checked_items(src, sniff, "tau-bench")


def _ident(t: Mapping[str, Any], k: int) -> str:
    if "task_id" in t:
        return f"task{t['task_id']}-trial{t.get('trial', 0)}"
    return f"trajectory{k}"


def _convert(src: Source, t: Mapping[str, Any], k: int) -> Conversation:
    turns, system = _turns(src, t["traj"], f"record {k} traj")
    info = t.get("info") if isinstance(t.get("info"), Mapping) else {}
    task = info.get("task") if isinstance(info.get("task"), Mapping) else {}
    meta: dict[str, Any] = {
        "reward": t.get("reward"),
        "task_id": t.get("task_id"),
        "trial": t.get("trial"),
        "instruction": task.get("instruction", ""),
        "user_id": task.get("user_id", ""),
        "actions": task.get("actions", []),
    }
    return conversation(turns, id=_ident(t, k), source=src.path, format=NAME, metadata=meta, system=system)


FORMAT = Format(NAME, "a tau-bench trajectory file", sniff, _convert, items=_items,
                ident=lambda _src, t, k: _ident(t, k), what="trajectories")
