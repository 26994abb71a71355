"""The main job (`make demo`, `harpe-lab demo`): replay every bundled dataset (or your own
recordings) under every preset of the registry (those with a budget knob at three budgets),
print a comparison table, and write ``out/report/``.

The strategies come from `harpe_lab.presets.PRESETS`: a preset with a budget knob
(`Preset.budget_knob`) runs at each budget, set on that knob; one without runs once. Every
number in the tables is `harpe_lab.replay.totals` of a replay's frame, in the report's one
number format.

Each conversation is measured as `harpe-lab replay` measures it (`demo_measure`, which is
`harpe_lab.measure.measure`): a counter calibrated on the recording's provider usage when it
has some, said to be uncalibrated when it has none; each call priced by its recorded model.
So a preset's row in the report holds the numbers the CLI prints for the same recording.
Each conversation's section starts with those header lines; a recording whose agent
compacted also gets every preset at its own defaults (labelled by its name alone, as
``--strategy NAME`` without ``--budget``) and a table of the replayed compactions against
the recorded ones. At each budget the strategies that kept it are ranked by the headline
retention (`harpe_lab.evaluate.rank_at_budget`); those that did not are listed under them
with why ("sends up to 16,527 — no budget knob").
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .presets import PRESETS, get_preset

__all__ = ["run_demo", "demo_replays", "demo_measure", "DemoRun", "DEMO_STRATEGIES", "DEMO_FRACTIONS",
           "DEMO_DETAIL", "DEMO_PRICING", "TABLE_COLUMNS"]  # fmt: skip

DEMO_STRATEGIES: tuple[str, ...] = tuple(PRESETS)
"""Every preset in the registry."""
DEMO_FRACTIONS = (0.25, 0.5, 0.75)
"""Budgets are these fractions of the largest request the full history needs, so every
dataset, short or long, is squeezed the same way."""
DEMO_DETAIL: tuple[str, ...] = ("summarizing", "sliding")
"""Presets drawn in detail (token use by component, what the model saw) at the middle budget."""
DEMO_PRICING = "gpt-4o"
"""The model whose prices (litellm's offline table) fill the cost columns of a recording
that names no model (two of the bundled datasets); one that does is priced per call."""

TABLE_COLUMNS = (
    ("Tokens and counts", ("strategy", "requests", "input_tokens_sum", "input_tokens_median", "input_tokens_max",
                           "compactions", "summaries", "overshoots", "overshoot_tokens_max", "messages_dropped_max")),
    ("Summaries, cache and cost", ("strategy", "distill_calls", "distill_tokens", "cached_prefix_share",
                                   "cache_read_tokens_sum", "cache_write_tokens_sum", "cost_usd", "cost_usd_cached")),
    ("What the model could still know: retention relative to the full history",
     ("strategy", "retention", "retention_denominator", "verbatim", "only_in_summary", "lost", "needs_judge",
      "artifact_retention")),
)  # fmt: skip
"""The report's tables for each dataset: (caption, columns); two narrow tables fit a
1,280 px screen where one wide one would not."""

for _name in (*DEMO_STRATEGIES, *DEMO_DETAIL):
    get_preset(_name)  # a renamed preset fails here, at import, not in the middle of a run


@dataclass
class DemoRun:
    """The replays of one conversation: label → `Replay` (``full``, ``windowed@4000``, …),
    the labels that raised with their error, the budgets and the full history's peak."""

    replays: dict[str, Any] = field(default_factory=dict)
    refused: list[tuple[str, str]] = field(default_factory=list)
    budgets: list[int] = field(default_factory=list)
    peak: int = 0


def _preset_line(preset: Any) -> str:
    knobs = ("Knobs: " + ", ".join(f"{k.name} ({k.unit})" for k in preset.knobs)) if preset.knobs else "No knobs"
    budget = preset.budget_knob
    budget = f"; the budget sets {budget.name}" if budget is not None and budget.name != "budget" else ""
    limit = f"; declares a {preset.limit_kind.replace('_', ' ')} limit" if preset.limit_kind else "; declares no limit"
    note = f". Note: {preset.note}" if preset.note else ""
    return f"{preset.name} ({preset.family}): {preset.description}. {knobs}{budget}{limit}{note}."


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def demo_measure(conversation: Any, *, pricing: Any = "auto") -> Any:
    """How the demo measures ``conversation``: `harpe_lab.measure.measure` with its defaults,
    as `harpe-lab replay` does, except that with ``pricing="auto"`` a recording that names no
    model the price table knows is priced as `DEMO_PRICING` (so every table has costs).
    ``pricing``: ``"auto"``, a model name (every call as that model) or ``None`` (no costs)."""
    from .measure import measure
    from .models import AutoPricing

    return measure(conversation, pricing=AutoPricing(DEMO_PRICING) if pricing == "auto" else pricing)


def demo_replays(conversation: Any, *, counter: Any, fractions: Sequence[float] = DEMO_FRACTIONS,
                 strategies: Sequence[str] = DEMO_STRATEGIES, pricing: Any = None,
                 defaults: bool = False) -> DemoRun:
    """Replay ``conversation`` under each of ``strategies`` (preset names): those with a
    budget knob at each budget (``fractions`` of the full history's largest request, set on
    the knob) — and with ``defaults`` also once at their own defaults, labelled by the name
    alone — the others once. A strategy that raises a `HarpeLabError` is *refused*."""
    from .errors import HarpeLabError
    from .recorded import model_window
    from .replay import replay

    presets = [get_preset(name) for name in strategies]
    window = model_window(conversation)  # a window knob takes it, as compare and the widgets set it
    history = get_preset("full")
    full = replay(conversation, history.build(system=conversation.system, counter=counter),
                  counter=counter, name=history.name, pricing=pricing)  # fmt: skip
    run = DemoRun(peak=int(full.requests["input_tokens"].max()) if len(full) else 0)
    run.budgets = [max(500, int(round(run.peak * f, -2))) for f in fractions]
    for preset in presets:
        knob = preset.budget_knob
        settings = [(preset.name, {})] if knob is None or defaults else []
        if knob is not None:
            settings += [(f"{preset.name}@{b}", {knob.name: b}) for b in run.budgets]
        for label, knobs in settings:
            try:
                if preset is history:
                    run.replays[label] = full  # the same replay: built alike, run once
                    continue
                factory = preset.build(counter=counter, system=conversation.system, **preset.at_window(knobs, window))
                run.replays[label] = replay(conversation, factory, counter=counter, name=label, pricing=pricing)
            except HarpeLabError as exc:  # a budget it cannot keep, a budget with no room for messages, ...
                run.refused.append((label, f"{type(exc).__name__}: {exc}"))
    return run


def _at_budget(replays: dict[str, Any], budget: int) -> dict[str, Any]:
    """The replays that ran at ``budget``: ``preset@budget``, and the presets without a
    budget knob (whatever the budget, they send the same)."""
    return {label: r for label, r in replays.items()
            if label.endswith(f"@{budget}") or ("@" not in label and get_preset(label).budget_knob is None)}


def _measure_lines(m: Any) -> list[str]:
    """`Measure.lines`, saying that a recording with usage recorded no compaction."""
    lines = m.lines()
    rec = m.recorded
    if rec is not None and len(rec.calls) and not rec.compactions:
        lines.insert(3, "recorded compactions: none")
    return lines


def _summarizer_failures() -> Any:
    """Every distilling preset under a summarizer that fails five ways: what it does, in red
    where history is lost, and where that differs from its source."""
    from .evaluate import LOSING_OUTCOMES, failing_summarizer_table
    from .report import ReportSection

    table = failing_summarizer_table()
    shown = table.assign(outcome=[o if same else f"{o} (source: {src})" for o, same, src in
                                  zip(table["outcome"], table["matches_source"], table["source_outcome"])])
    grid = shown.pivot(index="preset", columns="failure", values="outcome").reset_index()
    grid = grid[["preset", *[f for f in ("raises", "none", "empty", "error", "inflated") if f in grid.columns]]]
    grid.columns = ["strategy", "summarizer raises", "returns None", "returns \"\"", "returns an error message",
                    "returns more than given"][: len(grid.columns)]
    return ReportSection(
        "When the summarizer fails",
        "Each preset that calls a summarizer, replayed with one that fails its first three calls in each way, then "
        "works: keeps (the history waits for the next try), drops (history gone, nothing in its place), error "
        "summary (the error text sent as the summary), inflated (the request grew), falls back (cut without a "
        "summary), raises (the replay stops). In red: history lost — each such row is its source's own behaviour "
        "unless it says otherwise (docs/strategies.md, 'When the summarizer fails').",
        tables=[("Outcome per preset and failure", grid)], flagged=frozenset(LOSING_OUTCOMES), folded=True)


def _describe(conversation: Any) -> str:
    meta = conversation.metadata
    s = conversation.summary()
    return (f"{meta.get('format', 'conversation')} {conversation.id!r}: {s['turns']:,} turns, {s['messages']:,} "
            f"messages, {s['tool_calls']:,} tool calls")  # fmt: skip


def run_demo(out: str | Path = "out/report", *, fractions: tuple[float, ...] = DEMO_FRACTIONS,
             datasets: tuple[str, ...] | None = None, conversations: Mapping[str, Any] | None = None,
             strategies: Sequence[str] = DEMO_STRATEGIES, pricing: str | None = "auto",
             echo: Any = print) -> Path:
    """Replay the bundled datasets (``datasets``: their names, default all) and
    ``conversations`` (label → `Conversation`, e.g. ``{"my session": load_any(path)}``; with
    them, only the ``datasets`` named are added) and write the report; return the path of
    ``index.html``. ``pricing`` as in `demo_measure`: ``"auto"`` prices each call by its
    recorded model (`DEMO_PRICING` where none is named), a model name prices every call as
    that model, ``None`` fills no cost."""
    import matplotlib

    matplotlib.use("Agg")  # before pyplot is imported anywhere below: no window, only files

    from . import datasets as bundled

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if datasets is None and conversations is None:
        datasets = tuple(bundled.list_datasets())
    sources: list[tuple[str, Any, str]] = [(name, bundled.load(name), bundled.describe(name).title)
                                           for name in datasets or ()]  # fmt: skip
    sources += [(label, c, _describe(c)) for label, c in (conversations or {}).items()]
    strategies = tuple(strategies)
    for name in strategies:
        get_preset(name)
    found = _Found()
    started = time.perf_counter()
    for name, loaded, title in sources:
        found.sections.append(_conversation_section(name, loaded, title, found, out=out, fractions=fractions,
                                                    strategies=strategies, pricing=pricing, echo=echo))  # fmt: skip
    what = " and ".join(w for w, given in (("the bundled datasets", datasets), ("your recordings", conversations))
                        if given)  # fmt: skip
    index = _write(out, what, found, strategies=strategies, fractions=fractions, pricing=pricing,
                   started=started)  # fmt: skip
    echo(f"\nreport written to {index}")
    return index


@dataclass(frozen=True, kw_only=True)
class _Found:
    """What the conversations' sections found that the report's first sections gather (its
    lists grow as each conversation is replayed)."""

    sections: list[Any] = field(default_factory=list)
    over: list[str] = field(default_factory=list)  # "conversation: strategy went over its limit …"
    refused: list[str] = field(default_factory=list)  # "conversation: label — why it raised"
    answers: list[dict[str, Any]] = field(default_factory=list)  # the best at each budget


def _conversation_section(name: str, loaded: Any, title: str, found: _Found, *, out: Path,
                          fractions: tuple[float, ...], strategies: tuple[str, ...], pricing: str | None,
                          echo: Any) -> Any:  # fmt: skip
    """One conversation: measured, replayed under every preset, its tables echoed and put in
    its section with its pictures; what goes over or is refused is added to ``found``."""
    from .evaluate import compare, retention, with_probe_turn
    from .report import (ReportSection, compactions_table, format_frame, limit_sentence, limit_table,
                         retention_by_category, totals_table)  # fmt: skip

    m = demo_measure(loaded, pricing=pricing)
    # probes are asked after the last turn: an empty final turn renders that context
    conversation = with_probe_turn(loaded)
    s = conversation.summary()
    echo(f"\n== {name}: {s['turns']} turns, {s['messages']} messages, {s['tool_calls']} tool calls, "
         f"{s['probes']} probes")
    measured = _measure_lines(m)
    for line in measured:
        echo(line)
    recorded = m.recorded
    compacted = recorded is not None and bool(recorded.compactions)
    run = demo_replays(conversation, counter=m.counter, fractions=fractions, strategies=strategies,
                       pricing=m.pricing, defaults=compacted)  # fmt: skip
    echo(f"largest full-history request: {run.peak:,} tokens; budgets {', '.join(f'{b:,}' for b in run.budgets)}")
    replays = run.replays
    judged = compare(list(replays.values())) if replays else None
    table = totals_table(replays, judged)
    echo(format_frame(table, TABLE_COLUMNS[0][1]).to_string(index=False))
    limits = limit_table(replays)
    section = ReportSection(name, title, bullets=[("How it was measured (as harpe-lab replay measures it)",
                                                   measured)])  # fmt: skip
    lines = [limit_sentence(row) for _, row in limits.iterrows()]
    found.over.extend(f"{name}: {line}" for line in lines)
    found.refused.extend(f"{name}: {label} — {reason}" for label, reason in run.refused)
    for line in lines:
        echo(line)
    for label, reason in run.refused:
        echo(f"{label}: refused — {reason}")
    for caption, columns in TABLE_COLUMNS:
        section.tables.append((caption, table[[c for c in columns if c in table.columns]]))
    if compacted:
        section.tables.append((
            "Compactions: each preset at its defaults against what the recording's agent did (cost with "
            f"caching up to request {recorded.compactions[0].request - 1:,}, before the first recorded "
            "compaction, where the two histories part)",
            compactions_table({k: r for k, r in replays.items() if "@" not in k}, recorded)))
    by_category = retention_by_category(retention(list(replays.values()))) if replays else None
    if by_category is not None and len(by_category.columns) > 2:  # more than one category
        section.tables.append(("Retention per probe category: known / findable under the full history",
                               by_category))
    if judged is not None:
        found.answers.extend(_rankings(section, name, run, judged, echo))
    if len(limits):
        section.tables.append(("Over the limit: requests above the strategy's declared limit", limits))
    _draw_figures(section, name, run, strategies, out)
    return section


def _rankings(section: Any, name: str, run: DemoRun, judged: Any, echo: Any) -> list[dict[str, Any]]:
    """At each budget, the strategies that kept it ranked by retention (a table in
    ``section``, the best echoed); returns the best rows for the report's answer."""
    from .evaluate import BUDGET_SLACK, budget_fit, rank_at_budget
    from .report import format_value, ranking_table

    replays = run.replays
    labels = list(replays)
    by = "retention" if judged["retention"].notna().any() else "artifact_retention"
    answers: list[dict[str, Any]] = []
    for budget in run.budgets:
        mine = _at_budget(replays, budget)
        rows = judged.iloc[[labels.index(k) for k in mine]].copy()
        fits = [budget_fit(r, budget) for r in mine.values()]
        rows["budget_met"], rows["budget_note"] = [f[0] for f in fits], [f[1] for f in fits]
        ranked = rank_at_budget(rows, by=by)
        section.tables.append((
            f"Best at {budget:,} tokens by {by.replace('_', ' ')}: the strategies that kept the budget "
            f"(largest request at most {BUDGET_SLACK:.0%} above it), then those that did not, with why",
            ranking_table(ranked), "budget_note"))
        top = ranked[ranked["rank"] == 1]
        kept_out = int((~ranked["budget_met"].astype(bool)).sum())
        if len(top):
            answers += [{"conversation": name, "budget": budget, "strategy": r["strategy"], by: r[by],
                         "input_tokens_sum": r["input_tokens_sum"]} for _, r in top.iterrows()]
            best = ", ".join(f"{r['strategy']} {format_value(by, r[by])}" for _, r in top.iterrows())
            echo(f"best at {budget:,} by {by.replace('_', ' ')}: {best}; {kept_out} kept out of the ranking "
                 "(no budget knob, cut nothing, or over the budget)")
    return answers


def _draw_figures(section: Any, name: str, run: DemoRun, strategies: tuple[str, ...], out: Path) -> None:
    """The pictures at the middle budget, written beside the report and listed in ``section``."""
    import matplotlib.pyplot as plt

    from .plots import plot_context_map, plot_strategies, plot_token_use

    replays = run.replays
    mid = run.budgets[len(run.budgets) // 2] if run.budgets else None

    def at_mid(preset: str) -> str:
        return preset if get_preset(preset).budget_knob is None else f"{preset}@{mid}"

    colors = {label: f"C{strategies.index(label.split('@')[0]) % 10}" for label in replays}  # per preset
    figures = [("tokens per request, all strategies at the middle budget",
                lambda ax: plot_strategies(_at_budget(replays, mid), ax=ax, limit=mid, colors=colors))]  # fmt: skip
    for preset in DEMO_DETAIL:
        label = at_mid(preset)
        if label in replays:
            figures.append((f"{label}: token use by component", lambda ax, r=replays[label]: plot_token_use(r, ax=ax)))
            figures.append((f"{label}: what the model saw", lambda ax, r=replays[label]: plot_context_map(r, ax=ax)))
    for caption, draw in figures:
        fig, ax = plt.subplots(figsize=(10, 4.2), dpi=100)
        draw(ax)
        fig.tight_layout()
        file = f"{_slug(name)}_{_slug(caption)[:40]}.png"
        fig.savefig(out / file)
        plt.close(fig)
        section.images.append((caption, file))


def _write(out: Path, what: str, found: _Found, *, strategies: tuple[str, ...], fractions: tuple[float, ...],
           pricing: str | None, started: float) -> Path:  # fmt: skip
    """The report: the answer and how to read it first, then the conversations, then the
    strategies, the summarizer failures and what went over or raised."""
    import pandas as pd

    from .report import ReportSection, write_report

    answer = ReportSection(
        "The answer",
        "For each conversation and budget, the strategy that kept the most of what the full history let the model "
        "know (retention; artifact retention where the conversation has no probes) among those that kept the "
        "budget; the others are left out of the ranking, each with why, in the conversation's section below.",
        tables=[("Best at each budget", pd.DataFrame(found.answers))] if found.answers else [],
    )  # fmt: skip
    first = ReportSection(
        "Over the limit, and refused", folded=True, description=
        "Every strategy that sent a request above its declared limit (a budget, a high water or a target), and "
        "how often; then every strategy that raised instead of replaying. Counts are from each replay's frame "
        "(see the glossary).",
        bullets=[("Strategies that go over their limit", found.over or ["none: every request kept its strategy's limit"]),
                 ("Strategies that refused (raised)", found.refused or ["none"])],
    )  # fmt: skip
    legend = ReportSection(
        "How to read the pictures",
        "Stacked bands: the parts of each request (system and tools, summary, earlier turns, current turn). "
        "▼ a compacted request (the strategy removed or replaced something it had sent); ○ a summary was made "
        "before the request; red segments: tokens above the strategy's limit; dashed lines: limits and water "
        "marks (a mark far above the data is named in the corner instead of drawn). Each picture has its legend.",
    )  # fmt: skip
    presets = ReportSection(
        "The strategies",
        "Every preset of the registry (harpe_lab.presets.PRESETS) ran; those with a budget knob at each budget, "
        "labelled preset@budget, and on a recording whose agent compacted also once at their own defaults, "
        "labelled by the name alone (as harpe-lab replay --strategy NAME runs them).",
        bullets=[("Presets", [_preset_line(get_preset(name)) for name in strategies])],
    )
    health = _summarizer_failures()
    priced = {"auto": f"each call priced by the model the recording names for it ({DEMO_PRICING} where it names "
                      "none)", None: "no pricing (costs are –)"}.get(pricing, f"costs at {pricing} prices")
    return write_report(
        out, f"harpe_lab demo: context strategies on {what}",
        [answer, legend, *found.sections, presets, health, first],
        intro=f"Budgets are {', '.join(f'{f:.0%}' for f in fractions)} of each dataset's largest full-history "
              f"request, set on each preset's budget knob; each conversation measured as harpe-lab replay measures "
              f"it — counts calibrated on the recording's provider usage where it has some, the tokenizer's "
              f"uncalibrated estimate where it has none (each section says which); {priced}; "
              f"{time.perf_counter() - started:.1f} s to replay and draw.",
    )  # fmt: skip
