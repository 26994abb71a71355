"""The report of `harpe_lab.study.compare_sessions`: the answer first — per strategy, over all
sessions, what it sent, what it cost with and without caching, how often it compacted against
how often the agents did, and what it kept — then per session, then the plots, then the long
lists, folded.

Every piece of session text is escaped (`harpe_lab.report.write_report`); the report loads
nothing from the network: one ``index.html`` and its PNG files.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

__all__ = ["write_study_report"]

_TOTALS = ("strategy", "budget", "sessions", "input_tokens_sum", "cost_usd_cached", "cost_usd", "compactions",
           "recorded_compactions", "overshoots", "retention", "needs_kept_share", "budget_note")
_PER_SESSION = ("session", "strategy", "budget", "input_tokens_sum", "input_tokens_max", "cost_usd_cached",
                "compactions", "first_compaction", "recorded_first_compaction", "overshoots", "retention",
                "needs_kept_share", "budget_note")


def write_study_report(frame: Any, folder: Any, *, title: str = "Strategies on your sessions",
                       redact: bool = True) -> Path:
    """Write the report of a `compare_sessions` frame into ``folder``; returns ``index.html``.
    ``redact=False`` shows the sessions' text as it is (see `harpe_lab.report.write_report`)."""
    import matplotlib.pyplot as plt

    from .plots import plot_session_sizes, plot_sweep
    from .report import ReportSection, write_report
    from .study import totals_by_strategy

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    measures = frame.attrs.get("measures", {})
    totals = totals_by_strategy(frame)
    has_retention = totals["retention"].notna().any()
    best = _answer(totals, has_retention)
    sections = [ReportSection(
        "The answer", description=best,
        tables=[("Over all sessions, per strategy (and budget)", totals[[c for c in _TOTALS if c in totals]])],
    )]
    images = []
    fig, ax = plt.subplots(figsize=(7.5, 4.5), layout="constrained")
    shown = totals.assign(strategy=[_label(s, b) for s, b in zip(totals["strategy"], totals["budget"])])
    has_needs = totals["needs_kept_share"].notna().any()
    if has_retention or has_needs:
        measure = "retention" if has_retention else "needs_kept_share"
        plot_sweep(shown, "cost_usd_cached", measure, hue="strategy", ax=ax)
        ax.set_xlabel("cost with prompt caching, all sessions (USD)")
        ax.set_ylabel("retention (probes)" if has_retention else "needed next, kept share")
    else:
        plot_sweep(shown, "cost_usd_cached", "input_tokens_sum", hue="strategy", y_better="lower", ax=ax)
        ax.set_xlabel("cost with prompt caching, all sessions (USD)")
        ax.set_ylabel("input tokens sent, all sessions")
        ax.yaxis.set_major_formatter(lambda v, _: f"{v / 1e6:,.0f}M")
    fig.savefig(folder / "cost.png", dpi=100)
    plt.close(fig)
    against = ("retention" if has_retention else "the share of what the agent needed next that the requests still "
               "held" if has_needs else "tokens sent (nothing to measure retention by)")
    images.append((f"Cost with caching against {against}, one point per strategy and budget", "cost.png"))
    sizes = frame.attrs.get("sizes", {})
    for k, session in enumerate(dict.fromkeys(frame["session"])):
        m = measures.get(session)
        mine = {label: ys for (s, label), ys in sizes.items() if s == session}
        if not mine:
            continue
        replayed = {label: at for (s, label), at in frame.attrs.get("compacted_at", {}).items() if s == session}
        points = [(c.request, c.tokens_before) for c in m.recorded.compactions] if m and m.recorded else []
        fig, ax = plt.subplots(figsize=(10, 3.8), layout="constrained")
        plot_session_sizes(mine, replayed=replayed, recorded=points, title=session, ax=ax)
        name = f"session_{k}.png"
        fig.savefig(folder / name, dpi=90)
        plt.close(fig)
        images.append((f"{session}: request sizes under each strategy; ▼ where each compacted, ✕ where the agent "
                       "did", name))
    sections.append(ReportSection("Pictures", images=images))
    short = _short_ids(list(dict.fromkeys(frame["session"])))
    per = frame[[c for c in _PER_SESSION if c in frame.columns]].assign(session=frame["session"].map(short))
    sections.append(ReportSection(
        "Per session", description="Sessions by the start of their id (the full ids are below).",
        tables=[("Each session under each strategy", per)]))
    sections.append(ReportSection(
        "How each session was measured",
        bullets=[(session, m.lines()) for session, m in measures.items()]))
    lost = frame[frame.get("lost_example", "").astype(str) != ""] if "lost_example" in frame else frame.iloc[:0]
    if len(lost):
        sections.append(ReportSection(
            "What each strategy made the agent lose", folded=True,
            description="For each replay that lost something the agent's next reply needed, the first such "
                        "reference and where the message that held it went.",
            tables=[("The first lost reference per session and strategy",
                     lost.assign(session=lost["session"].map(short))[["session", "strategy", "budget", "needs_lost",
                                                                       "lost_example"]])]))
    over = frame[frame["overshoots"] > 0]
    if len(over):
        sections.append(ReportSection("Requests over the limit", folded=True, tables=[
            ("Replays with requests above their declared limit", over[["session", "strategy", "budget", "overshoots",
                                                                       "input_tokens_max"]])]))
    return write_report(folder, title, sections, intro=_intro(frame, measures), redact=redact)


def _short_ids(ids: list[str]) -> dict[str, str]:
    """The shortest prefix (8 characters at least) that tells the ids apart."""
    for n in range(8, max(map(len, ids), default=8) + 1):
        short = {i: i[:n] + ("…" if len(i) > n else "") for i in ids}
        if len(set(short.values())) == len(ids):
            return short
    return {i: i for i in ids}


def _label(strategy: str, budget: Any) -> str:
    return strategy if budget is None or (isinstance(budget, float) and math.isnan(budget)) else \
        f"{strategy}@{int(budget):,}"


def _answer(totals: Any, has_retention: bool) -> str:
    """One sentence: the cheapest strategy (with caching) among those that kept their budget on
    every session (a strategy that refused one is not among them: its totals miss it)."""
    kept = totals[totals["budget_met"].astype(bool)].dropna(subset=["cost_usd_cached"])
    if not len(kept):
        return ("No strategy replayed every session within the budget it was compared at; see the notes in the "
                "table.")
    row = kept.sort_values("cost_usd_cached").iloc[0]
    full = totals[totals["strategy"] == "full"]
    than = ""
    if len(full) and not math.isnan(float(full["cost_usd_cached"].iloc[0])):
        base = float(full["cost_usd_cached"].iloc[0])
        than = f" ({row['cost_usd_cached'] / base - 1:+.0%} against the full history's ${base:,.2f})"
    kept_text = f", keeping {row['retention']:.0%} of what the full history let the model know" \
        if has_retention and not math.isnan(row["retention"]) else ""
    if not kept_text and not math.isnan(row.get("needs_kept_share", math.nan)):
        kept_text = f", still holding {row['needs_kept_share']:.1%} of what the agent needed next"
    return (f"Cheapest with prompt caching among the strategies that kept their budget: "
            f"{_label(row['strategy'], row['budget'])}, ${row['cost_usd_cached']:,.2f} over {int(row['sessions'])} "
            f"session{'s' * (int(row['sessions']) > 1)}{than}{kept_text}.")


def _intro(frame: Any, measures: dict[str, Any]) -> str:
    calibrated = sum(m.calibrated for m in measures.values())
    return (f"{frame['session'].nunique()} sessions under {frame['strategy'].nunique()} strategies. Counts: a "
            f"counter calibrated on each session's recorded usage ({calibrated} of {len(measures)} sessions); "
            "costs: each call priced by the model that made it, from litellm's offline price table.")
