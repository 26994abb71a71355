"""The main job (`make demo`, `harpe-lab demo`): replay every bundled dataset under six
strategies at three budgets, print a comparison table, and write ``out/report/``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

__all__ = ["run_demo", "DEMO_STRATEGIES", "DEMO_FRACTIONS"]

DEMO_STRATEGIES = ("full", "windowed", "summarizing", "sliding", "summarize-window", "chain")
DEMO_FRACTIONS = (0.25, 0.5, 0.75)
"""Budgets are these fractions of the largest request the full history needs, so every
dataset, short or long, is squeezed the same way."""


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def run_demo(out: str | Path = "out/report", *, fractions: tuple[float, ...] = DEMO_FRACTIONS,
             datasets: tuple[str, ...] | None = None, echo: Any = print) -> Path:
    """Replay the bundled datasets and write the report; return the path of ``index.html``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from . import datasets as bundled
    from .errors import BudgetError
    from .evaluate import compare, with_probe_turn
    from .plots import plot_context_map, plot_strategies, plot_token_use
    from .presets import make_strategy
    from .replay import replay
    from .report import ReportSection, write_report
    from .tokens import TiktokenCounter

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    counter = TiktokenCounter("cl100k_base")
    names = datasets or tuple(bundled.list_datasets())
    sections = []
    started = time.perf_counter()
    for name in names:
        # probes are asked after the last turn: an empty final turn renders that context
        conversation = with_probe_turn(bundled.load(name))
        s = conversation.summary()
        echo(f"\n== {name}: {s['turns']} turns, {s['messages']} messages, {s['tool_calls']} tool calls, "
             f"{s['probes']} probes")
        full = replay(conversation, make_strategy("full", system=conversation.system), counter=counter, name="full")
        replays, refused = {"full": full}, []
        largest = int(full.requests["input_tokens"].max())
        budgets = [max(500, int(round(largest * f, -2))) for f in fractions]
        echo(f"largest full-history request: {largest} tokens; budgets {budgets}")
        for budget in budgets:
            for strategy in DEMO_STRATEGIES[1:]:
                label = f"{strategy}@{budget}"
                factory = make_strategy(strategy, budget=budget, counter=counter, system=conversation.system)
                try:
                    replays[label] = replay(conversation, factory, counter=counter, name=label)
                except BudgetError as exc:  # a strategy that promises a budget it cannot keep
                    refused.append((label, str(exc)))
        table = compare(list(replays.values()))
        shown = [c for c in ("strategy", "requests", "input_tokens_sum", "input_tokens_median", "input_tokens_max",
                             "compactions", "distill_calls", "overshoots", "probe_retention", "artifact_retention")
                 if c in table.columns]
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            echo(table[shown].to_string(index=False))
        for label, reason in refused:
            echo(f"{label}: cannot run — {reason}")
        section = ReportSection(name, bundled.describe(name).title)
        section.tables.append(("Strategies compared", table[shown]))
        if refused:
            section.tables.append(("Strategies that cannot keep their budget here",
                                   pd.DataFrame(refused, columns=["strategy", "reason"])))
        mid = budgets[len(budgets) // 2]
        figures = [
            ("tokens per request, all strategies at the middle budget",
             lambda ax: plot_strategies([r for k, r in replays.items() if k == "full" or k.endswith(f"@{mid}")], ax=ax)),
            (f"summarizing@{mid}: token use by component",
             lambda ax: plot_token_use(replays[f"summarizing@{mid}"], ax=ax)),
            (f"summarizing@{mid}: what the model saw",
             lambda ax: plot_context_map(replays[f"summarizing@{mid}"], ax=ax)),
        ]
        if f"sliding@{mid}" in replays:
            figures.append((f"sliding@{mid}: what the model saw",
                            lambda ax: plot_context_map(replays[f"sliding@{mid}"], ax=ax)))
        for caption, draw in figures:
            fig, ax = plt.subplots(figsize=(10, 4.2), dpi=100)
            draw(ax)
            fig.tight_layout()
            file = f"{_slug(name)}_{_slug(caption)[:40]}.png"
            fig.savefig(out / file)
            plt.close(fig)
            section.images.append((caption, file))
        sections.append(section)
    index = write_report(
        out, "harpe_lab demo: context strategies on the bundled datasets", sections,
        intro=f"Budgets are {', '.join(f'{f:.0%}' for f in fractions)} of each dataset's largest full-history "
              f"request; counter {counter.name}; "
              f"{time.perf_counter() - started:.1f} s to replay and draw.",
    )
    echo(f"\nreport written to {index}")
    return index
