"""Pictures of replays: token use per request, strategies overlaid, sweeps, context maps.

Every function takes ``ax=None`` (a new figure is made when it is None) and returns the
`matplotlib.axes.Axes` it drew on. matplotlib is imported on first use, never at import.

The artists a reader (or a test) may want to find carry a ``gid``:

==================  ======================================================================
``high_water``      the strategy's declared limit (labelled by its kind: high water, budget,
                    target), or the ``high_water`` passed; ``low_water``, ``limit`` likewise
``compactions``     one `Line2D` with a marker on every request the frame marks ``compacted``
``recorded_compactions``  one `Line2D` with a marker on every compaction the *recording's* agent
                    made (`harpe_lab.recorded.RecordedPoint`), half a request before the first
                    request sent after it, at the input tokens it compacted at; its dashed
                    stem (``recorded_compactions:stem``) runs down to the axis
``summaries``       one `Line2D` with a marker on every request the frame marks ``summarized``
``overshoot``       vertical segments from the limit up to each overshooting request
``off_scale``       the text naming the marks too far above the data to draw (see below)
``band:<part>``     the stacked bands ``system``, ``summary``, ``history``, ``turn``
``pareto``          the Pareto front of `plot_sweep`
``context_map``     the image of `plot_context_map`
==================  ======================================================================

The y-axis fits the data: a mark (limit, water mark) up to `FAR_ABOVE` times the largest
request is drawn as a line; one further up is named in the ``off_scale`` text at the top of
the axes instead of squeezing the data into the bottom of the picture.

Counts mean what ``docs/glossary.md`` says, and come from the request frame: a compaction
marker is a ``compacted`` request, a summary marker a ``summarized`` one, a red segment a
request with ``overshoot_tokens`` above 0 (when the drawn mark is the strategy's limit). The
recorded compactions come from the recording itself (``recorded=``): what the agent did,
beside what the replayed strategy would have done.

`TokenUsePlot` is the object behind `plot_token_use`; the widgets keep one and call
`TokenUsePlot.update` so a slider move changes data, not artists.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping, Sequence

from ..errors import HarpeLabError

__all__ = [
    "plot_token_use",
    "plot_strategies",
    "plot_sweep",
    "plot_context_map",
    "TokenUsePlot",
    "compaction_requests",
    "summary_requests",
    "FAR_ABOVE",
    "pareto_front",
    "BAND_COLUMNS",
    "STATE_COLORS",
    "plot_compaction_triggers",
    "plot_session_peaks",
    "plot_sessions",
    "plot_session_sizes",
]

BAND_COLUMNS = ("system_tokens", "summary_tokens", "history_tokens", "turn_tokens")
"""The request-frame columns stacked by `plot_token_use`; they add up to ``input_tokens``."""

_BAND_LABELS = ("system + tools", "summary", "earlier turns", "current turn")
_BAND_COLORS = ("#9e9e9e", "#8e6cc4", "#4c8fd6", "#f2a541")

FAR_ABOVE = 1.5
"""A mark higher than this many times the largest request is named, not drawn."""

_LIMIT_LABELS = {"high_water": "high water", "budget": "budget", "target": "target"}
_COMPACTED = dict(ls="none", marker="v", ms=8, color="black", label="compacted")
_SUMMARIZED = dict(ls="none", marker="o", ms=9, mfc="none", mec="#8e6cc4", mew=1.8, label="summary made")
_RECORDED_COLOR = "#d81b60"
_RECORDED = dict(ls="none", marker="X", ms=9, color=_RECORDED_COLOR, mec="white", mew=0.8,
                 label="recorded compaction")  # fmt: skip

STATE_COLORS = {"not yet": "#ffffff", "sent": "#2e7d32", "summarized": "#f2a541", "dropped": "#c62828"}
"""Colours of `plot_context_map`, by message state (``not yet`` = not yet in the history)."""


def _choice_error(param: str, options: Iterable[Any], value: Any) -> HarpeLabError:
    return HarpeLabError(f"`{param}` must be one of {list(options)}, but {value!r} was passed.")


def _plain(text: str) -> str:
    """Text shown literally: a ``$`` in a conversation id must not start mathtext."""
    return str(text).replace("$", r"\$")


def _new_axes(ax: Any, figsize: tuple[float, float] = (9, 4)) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _check_replay(replay: Any, param: str = "replay") -> None:
    if not (hasattr(replay, "requests") and hasattr(replay, "events")):
        raise HarpeLabError(
            f"`{param}` must be a harpe_lab Replay (the result of harpe_lab.replay.replay), "
            f"but {type(replay).__name__} was passed."
        )


def _flags(frame: Any, column: str) -> list[int]:
    flags = frame[column]
    return [int(i) for i in flags.index[flags.to_numpy(dtype=bool)]]


def _flagged(replay: Any, column: str) -> list[int]:
    _check_replay(replay)
    return _flags(replay.requests, column)


def compaction_requests(replay: Any) -> list[int]:
    """The index of every request the frame marks ``compacted`` (the strategy removed or
    replaced something it had sent): one marker each, ``totals()["compactions"]`` of them."""
    return _flagged(replay, "compacted")


def summary_requests(replay: Any) -> list[int]:
    """The index of every request the frame marks ``summarized`` (a summary was produced
    before it): ``totals()["summaries"]`` of them."""
    return _flagged(replay, "summarized")


def _fit_marks(ax: Any, data_max: float, marks: Sequence[tuple[Any, float | None, str]], text: Any) -> float:
    """Show each ``(line, value, name)`` mark near the data as its line, and name the ones
    more than `FAR_ABOVE` times ``data_max`` in ``text`` (hiding their lines); return the
    top of the y-axis."""
    top = data_max
    far = []
    for line, value, name in marks:
        if value is None:
            line.set_visible(False)
            continue
        if data_max > 0 and value > FAR_ABOVE * data_max:
            line.set_visible(False)
            far.append(f"{_plain(name)} {value:,.0f} (×{value / data_max:.1f})")
        else:
            line.set_visible(True)
            top = max(top, value)
    text.set_text(("↑ above the plot: " + ", ".join(far)) if far else "")
    text.set_visible(bool(far))
    return max(top, 1.0) * 1.08


def _thousands(ax: Any) -> None:
    """Token ticks as the tables write tokens: 12,000."""
    from matplotlib.ticker import StrMethodFormatter

    ax.yaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))


def _off_scale_text(ax: Any) -> Any:
    return ax.text(0.99, 0.97, "", transform=ax.transAxes, ha="right", va="top", fontsize=8, color="#333333",
                   gid="off_scale", visible=False, zorder=6,
                   bbox=dict(boxstyle="round,pad=0.25", fc="white", ec="#bbbbbb", alpha=0.9))  # fmt: skip


def _band_verts(x: Any, lo: Any, hi: Any) -> Any:
    """The outline of a band between ``lo`` and ``hi`` drawn as steps centred on ``x``
    (each request is one step wide), as one polygon for a PolyCollection."""
    import numpy as np

    n = len(x)
    if n == 0:
        return np.zeros((0, 2))
    edges = np.repeat(np.arange(n + 1, dtype=float) - 0.5, 2)[1:-1] + x[0]
    top = np.repeat(hi, 2)
    bottom = np.repeat(lo, 2)
    return np.column_stack([np.concatenate([edges, edges[::-1]]), np.concatenate([top, bottom[::-1]])])


def _recorded_points(recorded: Any) -> tuple[tuple[int, int | None], ...]:
    """``(request, tokens_before)`` of each recorded compaction in ``recorded``: a
    `harpe_lab.recorded.Recorded`, a sequence of `harpe_lab.recorded.RecordedPoint`, or None."""
    from ..recorded import Recorded, RecordedPoint

    if recorded is None:
        return ()
    points = recorded.compactions if isinstance(recorded, Recorded) else recorded
    if isinstance(points, (str, bytes)) or not isinstance(points, Iterable):
        raise HarpeLabError(f"`recorded` must be a harpe_lab.recorded.Recorded or a sequence of RecordedPoint, "
                            f"but {type(recorded).__name__} was passed.")  # fmt: skip
    out = []
    for p in points:
        if not isinstance(p, RecordedPoint):
            raise HarpeLabError(f"`recorded` must hold harpe_lab.recorded.RecordedPoint items, "
                                f"but {type(p).__name__} was passed.")  # fmt: skip
        out.append((p.request, p.tokens_before))
    return tuple(out)


def _recorded_xy(points: Sequence[tuple[int, int | None]], total: Any) -> tuple[list[float], list[float]]:
    """Where each recorded compaction is drawn: between the last request before it and the
    first after it, at the tokens it compacted at (else the replay's request before it).
    Compactions after the replay's last request are left out."""
    xs, ys = [], []
    for request, before in points:
        if not 0 < request <= len(total):
            continue
        xs.append(request - 0.5)
        ys.append(float(before) if before else float(total[request - 1]))
    return xs, ys


_LEGEND = ("outside", "inside", None)


class TokenUsePlot:
    """The artists of one `plot_token_use` picture, updated in place by `update`.

    Built once on ``ax``; each `update` replaces the bands' vertices and the lines' data,
    so an interactive redraw costs a render, not a rebuild. ``legend`` puts the legend to
    the right of the axes (``"outside"``), in their upper left corner (``"inside"``), or
    nowhere (``None``).
    """

    def __init__(self, ax: Any, *, legend: str | None = "outside") -> None:
        from matplotlib.collections import LineCollection, PolyCollection

        if legend not in _LEGEND:
            raise _choice_error("legend", _LEGEND, legend)
        self.ax = ax
        self.legend = legend
        self.bands = []
        for col, label, color in zip(BAND_COLUMNS, _BAND_LABELS, _BAND_COLORS):
            band = PolyCollection([], facecolors=color, edgecolors="none", alpha=0.85, label=label)
            band.set_gid("band:" + col.removesuffix("_tokens"))
            ax.add_collection(band)
            self.bands.append(band)
        self.high = ax.axhline(0, color="#c62828", lw=1.4, ls="--", label="high water", gid="high_water", visible=False)
        self.low = ax.axhline(0, color="#2e7d32", lw=1.2, ls=":", label="low water", gid="low_water", visible=False)
        self.limit = ax.axhline(0, color="black", lw=1.4, label="model limit", gid="limit", visible=False)
        self.overshoot = LineCollection([], colors="#c62828", linewidths=2.5, label="overshoot")
        self.overshoot.set_gid("overshoot")
        ax.add_collection(self.overshoot)
        (self.compactions,) = ax.plot([], [], gid="compactions", zorder=5, **_COMPACTED)
        (self.summaries,) = ax.plot([], [], gid="summaries", zorder=5, **_SUMMARIZED)
        self.recorded_stems = LineCollection([], colors=_RECORDED_COLOR, linewidths=1.1, linestyles="--", zorder=4)
        self.recorded_stems.set_gid("recorded_compactions:stem")
        ax.add_collection(self.recorded_stems)
        (self.recorded,) = ax.plot([], [], gid="recorded_compactions", zorder=6, **_RECORDED)
        self.off_scale = _off_scale_text(ax)
        self.cursor = ax.axvline(0, color="#555555", lw=1, visible=False, gid="cursor")
        ax.set_xlabel("request")
        ax.set_ylabel("input tokens")
        _thousands(ax)
        ax.grid(axis="y", alpha=0.3)
        self._legend = None
        self._shown: tuple | None = None  # (replay, marks) the artists show, but for the cursor
        self._version = 0  # counts the updates that changed more than the cursor

    def update(self, replay: Any, *, high_water: int | None = None, low_water: int | None = None,
               limit: int | str | None = None, cursor: int | None = None, limit_label: str | None = None,
               recorded: Any = None) -> None:
        """Show ``replay`` (marks and ``recorded`` as in `plot_token_use`; ``cursor`` draws a
        vertical line at that request; ``limit_label`` names the limit line in the legend).
        Given the replay and marks of the last update again, it only moves the cursor."""
        import numpy as np

        _check_replay(replay)
        points = _recorded_points(recorded)
        marks = (*((type(v), v) for v in (high_water, low_water, limit, limit_label)), points)
        if self._shown is not None and self._shown[0] is replay and self._shown[1] == marks:
            self._move_cursor(cursor)  # stepping through requests: only the cursor moves
            return
        self._shown = None  # until this update is through
        frame = replay.requests
        x = frame["request"].to_numpy(dtype=float) if len(frame) else np.zeros(0)
        base = np.zeros(len(x))
        for band, col in zip(self.bands, BAND_COLUMNS):
            top = base + frame[col].to_numpy(dtype=float)
            band.set_verts([_band_verts(x, base, top)] if len(x) else [])
            base = top
        total = frame["input_tokens"].to_numpy(dtype=float)

        from ..replay import Replay

        declared = replay.limit if isinstance(replay, Replay) else None  # the strategy's declared Limit
        if high_water is None and declared is not None:
            high, high_name = declared.tokens, _LIMIT_LABELS.get(declared.kind, declared.kind)
        else:
            high, high_name = high_water, "high water"
        for value, name in ((high_water, "high_water"), (low_water, "low_water")):
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
                raise HarpeLabError(f"`{name}` must be a token count >= 0, but {value!r} was passed.")
        self.high.set_label(high_name)
        for line, value in ((self.high, high), (self.low, low_water)):
            if value is not None:
                line.set_ydata([value, value])
        from ..models import model_input_limit

        cap = None if limit is None else model_input_limit(limit)
        cap_name = limit_label or (f"model limit ({limit})" if isinstance(limit, str) else "limit")
        if cap is not None:
            self.limit.set_ydata([cap, cap])
            self.limit.set_label(_plain(cap_name))

        # overshoot against the drawn mark, so what is red is what sits above the line; with
        # the strategy's own limit these are the requests with overshoot_tokens > 0
        if high is not None and len(x):
            over = total > high
            self.overshoot.set_segments([[(xi, high), (xi, yi)] for xi, yi in zip(x[over], total[over])])
        else:
            self.overshoot.set_segments([])
        for line, at in ((self.compactions, _flags(frame, "compacted")), (self.summaries, _flags(frame, "summarized"))):
            line.set_data(np.asarray(at, dtype=float), total[at] if at else np.zeros(0))
        rx, ry = _recorded_xy(points, total)
        self.recorded.set_data(np.asarray(rx, dtype=float), np.asarray(ry, dtype=float))
        self.recorded_stems.set_segments([[(xi, 0.0), (xi, yi)] for xi, yi in zip(rx, ry)])
        self._move_cursor(cursor)

        data_max = max([float(total.max()) if len(total) else 0.0, *ry])
        top = _fit_marks(self.ax, data_max, [(self.high, high, high_name), (self.low, low_water, "low water"),
                                             (self.limit, cap, cap_name)], self.off_scale)  # fmt: skip
        self.ax.set_xlim(-0.5, max(0.5, len(x) - 0.5))
        self.ax.set_ylim(0, top)
        self.ax.set_title(_plain(f"{replay.conversation.id} — {replay.strategy}"), fontsize=10)
        self._refresh_legend()
        self._shown = (replay, marks)
        self._version += 1

    def _move_cursor(self, cursor: int | None) -> None:
        self.cursor.set_visible(cursor is not None)
        if cursor is not None:
            self.cursor.set_xdata([cursor, cursor])

    def _refresh_legend(self) -> None:
        if self.legend is None:
            return
        handles = [b for b in self.bands]
        handles += [a for a in (self.high, self.low, self.limit) if a.get_visible()]
        if self.overshoot.get_paths():  # one path per segment; get_segments would rebuild them all
            handles.append(self.overshoot)
        handles += [m for m in (self.compactions, self.summaries, self.recorded) if len(m.get_xdata())]
        labels = [h.get_label() for h in handles]
        key = tuple(labels)
        if self._legend is not None and getattr(self, "_legend_key", None) == key:
            return
        if self._legend is not None:
            self._legend.remove()
        if self.legend == "outside":
            self._legend = self.ax.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.01, 1.0),
                                          fontsize=8, frameon=False)  # fmt: skip
        else:
            self._legend = self.ax.legend(handles, labels, loc="upper left", fontsize=8, ncols=2, framealpha=0.8)
        self._legend_key = key

    def _changing(self) -> tuple[list[Any], list[Any]]:
        """The artists `update` moves other than the title, the x range and the legend, in
        the order the axes draw them (by zorder, ties in child order): those drawn before
        the cursor, then the cursor and those drawn after it.

        Everything else stays put while only data and marks move, so the widgets draw it
        once, keep its pixels, and draw just these over them (see `_still`); the first
        list changes only when ``_version`` does, so stepping the cursor redraws the second
        alone. The y axis is here because its range follows the data; the spines because
        the bands end under them. An ``"inside"`` legend sits over the data, so it is drawn
        with it.
        """
        moving = {*self.bands, self.high, self.low, self.limit, self.overshoot, self.compactions, self.summaries,
                  self.recorded_stems, self.recorded, self.off_scale, self.cursor, self.ax.yaxis,
                  *self.ax.spines.values()}  # fmt: skip
        if self.legend == "inside" and self._legend is not None:
            moving.add(self._legend)
        order = [a for a in sorted(self.ax.get_children(), key=lambda a: a.zorder) if a in moving]
        cut = order.index(self.cursor)
        return order[:cut], order[cut:]

    def _still(self) -> tuple:
        """What the artists outside `_changing` show: when it is unchanged, so are their pixels."""
        return (self.ax.get_title(), self.ax.get_xlim(), tuple(self.ax.get_position().bounds),
                getattr(self, "_legend_key", None), id(self._legend))


def plot_token_use(replay: Any, *, high_water: int | None = None, low_water: int | None = None,
                   limit: int | str | None = None, recorded: Any = None, ax: Any = None) -> Any:
    """Input tokens of every request, stacked by part (system and tools, summary, earlier
    turns, current turn), with the water marks, the compactions and the overshoot.

    ``high_water`` defaults to the strategy's declared limit (``replay.limit``); requests
    above it are highlighted in red. ``low_water`` adds a second line. ``limit`` draws the
    model's context limit: a token count, or a model name looked up in litellm's offline
    model table. Each ``compacted`` request is one marker on the ``compactions`` line, each
    ``summarized`` one on the ``summaries`` line; every marker has a legend entry. Marks far
    above the data are named at the top instead of drawn (`FAR_ABOVE`).

    ``recorded`` (a `harpe_lab.recorded.Recorded`, e.g. ``measure(conversation).recorded``, or
    its ``compactions``) adds what the recording's agent really did: an ✕ on a dashed stem at
    each recorded compaction, half a request before the first request sent after it, at the
    input tokens the provider reported when it compacted.
    """
    _check_replay(replay)
    ax = _new_axes(ax)
    TokenUsePlot(ax).update(replay, high_water=high_water, low_water=low_water, limit=limit, recorded=recorded)
    return ax


def _as_named(replays: Any) -> list[tuple[str, Any]]:
    if isinstance(replays, Mapping):
        items = list(replays.items())
    else:
        items = [(getattr(r, "strategy", str(k)), r) for k, r in enumerate(replays)]
    if not items:
        raise HarpeLabError("`replays` must hold at least one Replay, but an empty collection was passed.")
    for name, r in items:
        _check_replay(r, f"replays[{name!r}]")
    return items


def plot_strategies(replays: Sequence[Any] | Mapping[str, Any], ax: Any = None, *, limit: int | None = None,
                    limit_label: str = "budget", colors: Mapping[str, Any] | None = None) -> Any:
    """Input tokens per request of several replays overlaid, one line each, with a marker
    on each ``compacted`` request (▼) and each ``summarized`` one (○). ``replays`` is a
    sequence (labelled by strategy name) or a mapping of label → Replay. ``limit`` draws a
    horizontal line (named in the ``off_scale`` text when far above the data). ``colors``
    (label → colour) keeps a strategy's colour when others are left out."""
    from matplotlib.lines import Line2D

    items = _as_named(replays)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, (int, float)) or limit <= 0):
        raise HarpeLabError(f"`limit` must be a positive token count, but {limit!r} was passed.")
    ax = _new_axes(ax)
    data_max, any_cut, any_summary = 0.0, False, False
    for name, r in items:
        frame = r.requests
        y = frame["input_tokens"].to_numpy(dtype=float)
        color = None if colors is None else colors.get(name)
        (line,) = ax.plot(frame["request"], y, lw=1.4, label=_plain(name), gid=f"strategy:{name}", color=color)
        data_max = max(data_max, float(y.max()) if len(y) else 0.0)
        at = _flags(frame, "compacted")
        if at:
            any_cut = True
            ax.plot(at, y[at], **{**_COMPACTED, "ms": 6, "color": line.get_color(), "label": "_nolegend_"},
                    gid=f"compactions:{name}")  # fmt: skip
        made = _flags(frame, "summarized")
        if made:
            any_summary = True
            ax.plot(made, y[made], **{**_SUMMARIZED, "ms": 7, "mec": line.get_color(), "label": "_nolegend_"},
                    gid=f"summaries:{name}")  # fmt: skip
    limit_line = ax.axhline(limit or 0, color="black", lw=1, ls="--", gid="limit", label=_plain(limit_label))
    top = _fit_marks(ax, data_max, [(limit_line, limit, limit_label)], _off_scale_text(ax))
    ax.set_xlabel("request")
    ax.set_ylabel("input tokens")
    _thousands(ax)
    ax.set_ylim(0, top)
    ax.grid(axis="y", alpha=0.3)
    handles = [h for h in ax.get_lines() if (h.get_gid() or "").startswith("strategy:")]
    if limit_line.get_visible():
        handles.append(limit_line)
    # one legend entry per marker kind, in neutral colours: each line's markers take its colour
    if any_cut:
        handles.append(Line2D([], [], **{**_COMPACTED, "color": "#444444"}))
    if any_summary:
        handles.append(Line2D([], [], **{**_SUMMARIZED, "mec": "#444444"}))
    # beside the axes, so it never hides a line
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


_BETTER = ("lower", "higher")


def pareto_front(frame: Any, x: str, y: str, *, x_better: str = "lower", y_better: str = "higher") -> Any:
    """The rows of ``frame`` no other row beats on both ``x`` and ``y``, sorted by ``x``."""
    for param, value in (("x_better", x_better), ("y_better", y_better)):
        if value not in _BETTER:
            raise _choice_error(param, _BETTER, value)
    data = frame[[x, y]].dropna()
    # sort best-x first; a row is on the front when its y beats every row before it
    sx = 1 if x_better == "lower" else -1
    sy = 1 if y_better == "higher" else -1
    order = sorted(data.index, key=lambda i: (sx * data.at[i, x], -sy * data.at[i, y]))
    keep, best = [], None
    for i in order:
        v = sy * data.at[i, y]
        if best is None or v > best:
            keep.append(i)
            best = v
    return frame.loc[keep].sort_values(x)


def plot_sweep(frame: Any, x: str, y: str, *, hue: str | None = None, x_better: str = "lower",
               y_better: str = "higher", ax: Any = None) -> Any:
    """A scatter of a sweep frame, ``y`` against ``x`` (e.g. probe retention against tokens
    sent), one colour per ``hue`` value, with the Pareto front drawn as a line.

    ``x_better`` / ``y_better`` say which direction is better (``"lower"`` or ``"higher"``;
    by default fewer tokens and more retention).
    """
    columns = list(getattr(frame, "columns", []))
    for param, value in (("x", x), ("y", y)):
        if value not in columns:
            raise _choice_error(param, columns, value)
    if hue is not None and hue not in columns:
        raise _choice_error("hue", columns, hue)
    front = pareto_front(frame, x, y, x_better=x_better, y_better=y_better)
    ax = _new_axes(ax, (7, 4.5))
    groups = [(None, frame)] if hue is None else list(frame.groupby(hue, sort=True))
    for key, part in groups:
        ax.scatter(part[x], part[y], s=28, alpha=0.8, label=None if key is None else _plain(str(key)))
    ax.plot(front[x], front[y], color="black", lw=1.2, marker="o", mfc="none", ms=10,
            label="Pareto front", gid="pareto")  # fmt: skip
    ax.set_xlabel(_plain(x))
    ax.set_ylabel(_plain(y))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, title=None if hue is None else _plain(hue), title_fontsize=8)
    return ax


_STATES = ("not yet", "sent", "summarized", "dropped")


def plot_context_map(replay: Any, ax: Any = None) -> Any:
    """Which original message was in each request: rows are requests, columns the
    conversation's messages in order, each cell coloured sent, summarized, dropped or
    blank (not yet said). Drawn as one image, so 1,000 requests stay quick."""
    import numpy as np
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    _check_replay(replay)
    ids = replay.conversation.message_ids()
    tidy = replay.context_map()
    grid = np.zeros((max(1, len(replay)), max(1, len(ids))), dtype=np.uint8)
    if len(tidy):
        column = {mid: k for k, mid in enumerate(ids)}
        code = {s: k for k, s in enumerate(_STATES)}
        rows = tidy["request"].to_numpy()
        cols = tidy["message_id"].map(column).to_numpy()
        grid[rows, cols] = tidy["state"].map(code).to_numpy(dtype=np.uint8)
    ax = _new_axes(ax, (8, 5))
    cmap = ListedColormap([STATE_COLORS[s] for s in _STATES])
    ax.imshow(grid, cmap=cmap, vmin=-0.5, vmax=len(_STATES) - 0.5, aspect="auto",
              interpolation="nearest", origin="upper", gid="context_map")  # fmt: skip
    ax.set_xlabel("original message (conversation order)")
    ax.set_ylabel("request")
    ax.set_title(_plain(f"{replay.conversation.id} — {replay.strategy}: what each request carried"), fontsize=10)
    ax.legend(handles=[Patch(facecolor=STATE_COLORS[s], edgecolor="#999999", label=s) for s in _STATES[1:]],
              loc="lower left", fontsize=8, framealpha=0.9)  # fmt: skip
    return ax


# the pictures of a folder of sessions (harpe-lab sessions, notebook 07); they use the helpers above
from ._sessions import (plot_compaction_triggers, plot_session_peaks, plot_session_sizes,  # noqa: E402
                        plot_sessions)
