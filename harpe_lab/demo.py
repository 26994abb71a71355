"""The main job (`make demo`, `harpe-lab demo`): replay every bundled dataset under six
strategies at three budgets, print a comparison table, and write ``out/report/``."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

__all__ = ["run_demo", "cli_demo", "DEMO_STRATEGIES", "DEMO_BUDGETS"]

DEMO_STRATEGIES = ("full", "windowed", "summarizing", "sliding", "summarize-window", "chain")
DEMO_BUDGETS = (2_000, 4_000, 8_000)


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in text).strip("_")


def run_demo(out: str | Path = "out/report", *, budgets: tuple[int, ...] = DEMO_BUDGETS,
             datasets: tuple[str, ...] | None = None, echo: Any = print) -> Path:
    """Replay the bundled datasets and write the report; return the path of ``index.html``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import pandas as pd

    from . import datasets as bundled
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
        replays = {}
        for budget in budgets:
            for strategy in DEMO_STRATEGIES:
                if strategy == "full" and budget != budgets[0]:
                    continue
                label = strategy if strategy == "full" else f"{strategy}@{budget}"
                factory = make_strategy(strategy, budget=budget, counter=counter, system=conversation.system)
                replays[label] = replay(conversation, factory, counter=counter, name=label)
        table = compare(list(replays.values()))
        shown = [c for c in ("strategy", "requests", "input_tokens_sum", "input_tokens_median", "input_tokens_max",
                             "compactions", "distill_calls", "overshoots", "probe_retention", "artifact_retention")
                 if c in table.columns]
        with pd.option_context("display.width", 200, "display.max_columns", 20):
            echo(table[shown].to_string(index=False))
        section = ReportSection(f"{name}", bundled.describe(name).splitlines()[0] if bundled.describe(name) else "")
        section.tables.append(("Strategies compared", table[shown]))
        mid = budgets[len(budgets) // 2]
        figures = [
            ("tokens per request, all strategies at the middle budget",
             lambda ax: plot_strategies([r for k, r in replays.items() if k == "full" or k.endswith(f"@{mid}")], ax=ax)),
            (f"summarizing@{mid}: token use by component",
             lambda ax: plot_token_use(replays[f"summarizing@{mid}"], ax=ax)),
            (f"summarizing@{mid}: what the model saw",
             lambda ax: plot_context_map(replays[f"summarizing@{mid}"], ax=ax)),
            (f"sliding@{mid}: what the model saw", lambda ax: plot_context_map(replays[f"sliding@{mid}"], ax=ax)),
        ]
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
        intro=f"Budgets {', '.join(map(str, budgets))} tokens; counter {counter.name}; "
              f"{time.perf_counter() - started:.1f} s to replay and draw.",
    )
    echo(f"\nreport written to {index}")
    return index


def cli_demo(args: Any) -> int:
    run_demo(args.out)
    return 0
