"""The pictures of a folder of sessions: where each agent compacted as a share of its window,
each session's peak against its window, and one session's request sizes under several
strategies with the replayed and recorded compactions."""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

from . import _new_axes, _plain, _thousands

__all__ = ["plot_compaction_triggers", "plot_session_peaks", "plot_sessions", "plot_session_sizes"]


def plot_compaction_triggers(frame: Any, ax: Any = None) -> Any:
    """Where each agent compacted, as a share of its declared window, by agent and version
    (``frame``: `harpe_lab.sessions.sessions_frame`, its ``attrs["compactions"]``). A spread
    of points at one version is the trigger users see "vary from 70% to 98%"."""
    from ..sessions import compactions_frame

    points = compactions_frame(frame)
    ax = _new_axes(ax, (7, 3.6))
    data = points.dropna(subset=["share_of_window"])
    labels = sorted({f"{a} {v}".strip() for a, v in zip(data["agent"], data["version"])})
    for k, label in enumerate(labels):
        part = data[[f"{a} {v}".strip() == label for a, v in zip(data["agent"], data["version"])]]
        ax.scatter(part["share_of_window"] * 100, [k] * len(part), s=40, alpha=0.75, label=None)
    ax.set_yticks(range(len(labels)), [_plain(x) for x in labels] or [])
    ax.set_xlabel("tokens before the compaction, % of the declared window")
    ax.set_xlim(0, 105)
    ax.set_title(f"{len(data):,} recorded compactions" if len(data) else "no recorded compaction")
    ax.grid(alpha=0.3, axis="x")
    return ax


def plot_session_peaks(frame: Any, ax: Any = None) -> Any:
    """Each session's largest request against its declared window, one bar per session,
    largest first (``frame``: `harpe_lab.sessions.sessions_frame`)."""
    ax = _new_axes(ax, (7, 3.6))
    data = frame.sort_values("peak_input_tokens", ascending=False).head(40)
    stems = [str(p).rsplit("/", 1)[-1].rsplit(".", 1)[0] for p in data["path"]]
    names = [_plain(s if len(s) <= 18 else f"{s[:8]}…{s[-8:]}") for s in stems]
    ax.bar(range(len(data)), data["peak_input_tokens"], color="#4c8fd6", label="peak input")
    windows = data["window"].astype(float)
    ax.scatter(range(len(data)), windows, marker="_", s=200, color="black", label="declared window")
    ax.set_xticks(range(len(data)), names, rotation=60, ha="right", fontsize=7)
    ax.set_ylabel("tokens")
    _thousands(ax)
    ax.legend(fontsize=8)
    return ax


def plot_sessions(frame: Any, path: Any) -> Any:
    """`plot_compaction_triggers` and `plot_session_peaks` side by side, saved to ``path``
    (the ``--plot`` of ``harpe-lab sessions``); returns the figure."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.2), layout="constrained")
    plot_compaction_triggers(frame, left)
    plot_session_peaks(frame, right)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return fig


def plot_session_sizes(sizes: Mapping[str, Sequence[float]], *, replayed: Mapping[str, Sequence[int]] = {},
                       recorded: Sequence[tuple[int, int | None]] = (), title: str = "", ax: Any = None) -> Any:
    """One session's request sizes under each strategy (``sizes``: label → input tokens per
    request), each strategy's replayed compactions (``replayed``: label → request indices)
    marked on its line, and the session's recorded compactions (``recorded``: ``(request,
    tokens before)``) as black crosses."""
    ax = _new_axes(ax, (9, 3.6))
    for label, ys in sizes.items():
        (line,) = ax.plot(range(len(ys)), ys, lw=1.2, label=_plain(label))
        marks = [i for i in replayed.get(label, ()) if 0 <= i < len(ys)]
        if marks:
            ax.plot(marks, [ys[i] for i in marks], ls="none", marker="v", ms=7, color=line.get_color())
    if recorded:
        xs = [r for r, _ in recorded]
        ys = [t if t is not None else math.nan for _, t in recorded]
        ax.plot(xs, ys, ls="none", marker="X", ms=10, color="black", label="recorded compaction")
    ax.set_xlabel("request")
    ax.set_ylabel("input tokens")
    if title:
        ax.set_title(_plain(title), fontsize=10)
    _thousands(ax)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncols=2)
    return ax
