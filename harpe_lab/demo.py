"""The main job (`make demo`, `harpe-lab demo`): replay every bundled dataset under every
preset of the registry (those with a budget knob at three budgets), print a comparison
table, and write ``out/report/``.

The strategies come from `harpe_lab.presets.PRESETS`: a preset with a budget knob
(`Preset.budget_knob`) runs at each budget, set on that knob; one without runs once. Every
number in the tables is `harpe_lab.replay.totals` of a replay's frame, in the report's one
number format.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from .presets import PRESETS, get_preset

__all__ = ["run_demo", "demo_replays", "DemoRun", "DEMO_STRATEGIES", "DEMO_FRACTIONS", "DEMO_DETAIL",
           "DEMO_PRICING", "TABLE_COLUMNS"]  # fmt: skip

DEMO_STRATEGIES: tuple[str, ...] = tuple(PRESETS)
"""Every preset in the registry."""
DEMO_FRACTIONS = (0.25, 0.5, 0.75)
"""Budgets are these fractions of the largest request the full history needs, so every
dataset, short or long, is squeezed the same way."""
DEMO_DETAIL: tuple[str, ...] = ("summarizing", "sliding")
"""Presets drawn in detail (token use by component, what the model saw) at the middle budget."""
DEMO_PRICING = "gpt-4o"
"""The model whose prices (litellm's offline table) fill the cost columns."""

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


def demo_replays(conversation: Any, *, counter: Any, fractions: Sequence[float] = DEMO_FRACTIONS,
                 strategies: Sequence[str] = DEMO_STRATEGIES, pricing: Any = None) -> DemoRun:
    """Replay ``conversation`` under each of ``strategies`` (preset names): those with a
    budget knob at each budget (``fractions`` of the full history's largest request, set on
    the knob), the others once. A strategy that raises a `HarpeLabError` is *refused*."""
    from .errors import HarpeLabError
    from .replay import replay

    presets = [get_preset(name) for name in strategies]
    full = replay(conversation, get_preset("full").build(system=conversation.system, counter=counter),
                  counter=counter, name="full", pricing=pricing)  # fmt: skip
    run = DemoRun(peak=int(full.requests["input_tokens"].max()) if len(full) else 0)
    run.budgets = [max(500, int(round(run.peak * f, -2))) for f in fractions]
    for preset in presets:
        knob = preset.budget_knob
        settings = [(preset.name, {})] if knob is None else [(f"{preset.name}@{b}", {knob.name: b}) for b in run.budgets]
        for label, knobs in settings:
            try:
                factory = preset.build(counter=counter, system=conversation.system, **knobs)
                run.replays[label] = replay(conversation, factory, counter=counter, name=label, pricing=pricing)
            except HarpeLabError as exc:  # a budget it cannot keep, a budget with no room for messages, ...
                run.refused.append((label, f"{type(exc).__name__}: {exc}"))
    return run


def run_demo(out: str | Path = "out/report", *, fractions: tuple[float, ...] = DEMO_FRACTIONS,
             datasets: tuple[str, ...] | None = None, strategies: Sequence[str] = DEMO_STRATEGIES,
             pricing: str | None = DEMO_PRICING, echo: Any = print) -> Path:
    """Replay the bundled datasets and write the report; return the path of ``index.html``.
    ``pricing`` (a model in litellm's offline price table, or ``None``) fills the cost columns."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from . import datasets as bundled
    from .evaluate import compare, retention, with_probe_turn
    from .plots import plot_context_map, plot_strategies, plot_token_use
    from .models import Pricing
    from .report import (ReportSection, format_frame, limit_sentence, limit_table, retention_by_category,
                         totals_table, write_report)
    from .tokens import TiktokenCounter

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    counter = TiktokenCounter("cl100k_base")
    price = Pricing.for_model(pricing) if pricing is not None else None
    names = datasets or tuple(bundled.list_datasets())
    strategies = tuple(strategies)
    for name in strategies:
        get_preset(name)
    sections, over, refused_all = [], [], []
    started = time.perf_counter()
    for name in names:
        # probes are asked after the last turn: an empty final turn renders that context
        conversation = with_probe_turn(bundled.load(name))
        s = conversation.summary()
        echo(f"\n== {name}: {s['turns']} turns, {s['messages']} messages, {s['tool_calls']} tool calls, "
             f"{s['probes']} probes")
        run = demo_replays(conversation, counter=counter, fractions=fractions, strategies=strategies, pricing=price)
        echo(f"largest full-history request: {run.peak:,} tokens; budgets {', '.join(f'{b:,}' for b in run.budgets)}")
        replays = run.replays
        table = totals_table(replays, compare(list(replays.values())) if replays else None)
        echo(format_frame(table, TABLE_COLUMNS[0][1]).to_string(index=False))
        limits = limit_table(replays)
        section = ReportSection(name, bundled.describe(name).title)
        lines = [limit_sentence(row) for _, row in limits.iterrows()]
        over += [f"{name}: {line}" for line in lines]
        refused_all += [f"{name}: {label} — {reason}" for label, reason in run.refused]
        for line in lines:
            echo(line)
        for label, reason in run.refused:
            echo(f"{label}: refused — {reason}")
        for caption, columns in TABLE_COLUMNS:
            section.tables.append((caption, table[[c for c in columns if c in table.columns]]))
        by_category = retention_by_category(retention(list(replays.values()))) if replays else None
        if by_category is not None and len(by_category.columns) > 2:  # more than one category
            section.tables.append(("Retention per probe category: known / findable under the full history",
                                   by_category))
        if len(limits):
            section.tables.append(("Over the limit: requests above the strategy's declared limit", limits))
        mid = run.budgets[len(run.budgets) // 2] if run.budgets else None

        def at_mid(preset: str) -> str:
            return preset if get_preset(preset).budget_knob is None else f"{preset}@{mid}"

        colors = {label: f"C{strategies.index(label.split('@')[0]) % 10}" for label in replays}  # per preset
        figures = [("tokens per request, all strategies at the middle budget",
                    lambda ax: plot_strategies({k: r for k, r in replays.items() if "@" not in k or k.endswith(f"@{mid}")},
                                               ax=ax, limit=mid, colors=colors))]  # fmt: skip
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
        sections.append(section)
    first = ReportSection(
        "Over the limit, and refused",
        "Every strategy that sent a request above its declared limit (a budget, a high water or a target), and "
        "how often; then every strategy that raised instead of replaying. Counts are from each replay's frame "
        "(see the glossary).",
        bullets=[("Strategies that go over their limit", over or ["none: every request kept its strategy's limit"]),
                 ("Strategies that refused (raised)", refused_all or ["none"])],
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
        "labelled preset@budget.",
        bullets=[("Presets", [_preset_line(get_preset(name)) for name in strategies])],
    )
    priced = f"costs at {pricing} prices" if pricing is not None else "no pricing (costs are –)"
    index = write_report(
        out, "harpe_lab demo: context strategies on the bundled datasets", [first, presets, legend, *sections],
        intro=f"Budgets are {', '.join(f'{f:.0%}' for f in fractions)} of each dataset's largest full-history "
              f"request, set on each preset's budget knob; counter {counter.name}; {priced}; "
              f"{time.perf_counter() - started:.1f} s to replay and draw.",
    )  # fmt: skip
    echo(f"\nreport written to {index}")
    return index
