"""``harpe-lab compare`` and ``harpe-lab tune``: strategies on a user's own sessions.

``compare`` replays every session under every strategy (and budget), each session counted
with a counter calibrated on its own usage and priced by its own models, prints the totals
per strategy first and writes an HTML report (``--out``); ``tune`` searches one knob and
prints the agent's own setting for the value it recommends."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from ..errors import StrategyError
from . import UsageError
from ._table import plain, render, share, tokens, usd
from .replay import _preset, _whole_number

__all__ = ["cli_compare", "cli_tune"]


def _paths(args: argparse.Namespace) -> list[Any]:
    """The sessions: each PATH named (one that is not a session is an error), and every
    session in a folder (read here: a file there that is not one is named on stderr and
    skipped, as `harpe-lab sessions` does, so one stray file does not stop the rest)."""
    from ..errors import HarpeLabError
    from ..sessions import _candidates, _why
    from ..study import load_sessions

    named = {Path(p).expanduser() for p in args.paths if not Path(p).expanduser().is_dir()}
    out: list[Any] = []
    for path in _candidates(args.paths, subagents=False):
        if path in named:
            out.append(path)
            continue
        try:
            out += load_sessions([path])
        except (HarpeLabError, OSError, UnicodeDecodeError, ValueError) as err:
            print(f"skipped {path}: {_why(err)}", file=sys.stderr)
    if not out:
        raise UsageError("no sessions in the PATHs given")
    return out


def _sets(items: list[str]) -> dict[str, int]:
    knobs = {}
    for item in items:
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        try:
            knobs[name] = _whole_number(value) if sep else None
        except ValueError:
            knobs[name] = None
        if knobs[name] is None:
            raise UsageError(f"--set takes KNOB=VALUE with a whole number, e.g. --set n=50, but {item!r} was passed")
    return knobs


def _ints(text: str, option: str) -> list[int]:
    try:
        values = [_whole_number(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or any(v <= 0 for v in values):
        raise UsageError(f"{option} takes positive whole numbers separated by commas, e.g. 60000,120000, but "
                         f"{text!r} was passed")
    return values


def _executor(args: argparse.Namespace) -> Any:
    if args.dask is None:
        return None
    try:
        from distributed import Client
    except ImportError:
        raise UsageError("--dask needs dask's distributed: pip install 'harpe_lab[dask]'") from None
    return Client(args.dask)


def _pricing(args: argparse.Namespace) -> Any:
    if args.pricing in ("auto", "none"):
        return None if args.pricing == "none" else "auto"
    from ..models import Pricing

    try:
        Pricing.for_model(args.pricing)
    except StrategyError as err:
        raise UsageError(f"--pricing: {' '.join(str(err).split())}") from err
    return args.pricing


def cli_compare(args: argparse.Namespace) -> int:
    """Every session under every strategy; totals first, then the report."""
    from ..study import compare_sessions, totals_by_strategy

    names = [s.strip() for s in args.strategies.split(",") if s.strip()]
    if not names:
        raise UsageError("--strategies takes preset names separated by commas, e.g. full,claude-code,summarizing")
    for name in names:
        _preset(name)
    if args.budget is not None and args.budgets is not None:
        raise UsageError("give --budget N or --budgets A,B,C, not both")
    budgets = [args.budget] if args.budget is not None else _ints(args.budgets, "--budgets") if args.budgets else None
    frame = compare_sessions(_paths(args), names, budgets=budgets, knobs=_sets(args.knobs), pricing=_pricing(args),
                             window=args.window, workers=args.workers, executor=_executor(args),
                             progress=sys.stderr.isatty())
    totals = totals_by_strategy(frame)
    from ..redact import Redactor

    clean = Redactor(enabled=not args.no_redact)
    for column in ("lost_example", "budget_note"):  # the text columns that quote the sessions
        if column in frame:
            frame[column] = frame[column].map(lambda v: clean(v) if isinstance(v, str) else v)
    if args.format == "json":
        doc = {"totals": json.loads(totals.to_json(orient="records")),
               "sessions": json.loads(frame.drop(columns=[]).to_json(orient="records")),
               "measures": {s: m.as_dict() for s, m in frame.attrs["measures"].items()},
               "columns": frame.attrs["columns"]}
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    elif args.format == "csv":
        frame.to_csv(sys.stdout, index=False)
    else:
        for session, m in frame.attrs["measures"].items():
            print(f"{session}: {m.counter_line().removeprefix('counter: ')}; {m.pricing_line()}")
        print()
        headers = ["strategy", "budget", "sessions", "tokens sent", "cost cached", "cost", "compactions",
                   "recorded", "overshoots", "retention", "note"]
        rows = [[r.strategy, tokens(r.budget), plain(r.sessions), tokens(r.input_tokens_sum), usd(r.cost_usd_cached),
                 usd(r.cost_usd), plain(r.compactions), plain(r.recorded_compactions), plain(r.overshoots),
                 share(r.retention), r.budget_note or ""] for r in totals.itertuples()]
        print(render(headers, rows, left=(0, 10)))
    if args.out:
        from ..study_report import write_study_report

        out = Path(args.out)
        index = write_study_report(frame, out, redact=not args.no_redact)
        frame.to_csv(out / "compare.csv", index=False)
        print(f"wrote {index} and {out / 'compare.csv'}", file=sys.stderr)
    return 0


def cli_tune(args: argparse.Namespace) -> int:
    """Search one knob over all sessions; print the frontier and the recommended setting."""
    from ..study import tune

    preset = _preset(args.strategy)
    knob, lo, hi = None, None, None
    if args.knob:
        name, sep, span = args.knob.partition("=")
        low, sep2, high = span.partition(":")
        if not sep or not sep2:
            raise UsageError(f"--knob takes KNOB=LO:HI, e.g. --knob high_water=60000:180000, but {args.knob!r} "
                             "was passed")
        try:
            knob, lo, hi = name.strip().replace("-", "_"), _whole_number(low), _whole_number(high)
        except ValueError:
            raise UsageError(f"--knob {args.knob}: LO and HI must be whole numbers") from None
        if knob not in {k.name for k in preset.knobs}:
            raise UsageError(f"--knob {args.knob}: the {preset.name!r} strategy has no knob {knob!r}; its knobs: "
                             f"{', '.join(k.name for k in preset.knobs) or 'none'}")
    if args.min_retention is not None and not 0 <= args.min_retention <= 1:
        raise UsageError(f"--min-retention must be a share between 0 and 1, like 0.9, but {args.min_retention} "
                         "was passed")
    result = tune(_paths(args), args.strategy, knob=knob, lo=lo, hi=hi, objective=args.objective,
                  min_retention=args.min_retention, no_overshoot=args.no_overshoot, pricing=_pricing(args),
                  points=args.points,
                  workers=args.workers, progress=sys.stderr.isatty())
    f = result.frame
    headers = [result.knob, "cost cached", "tokens sent", "compactions", "overshoots", "retention", ""]
    front = set(result.frontier[result.knob])
    rows = [[tokens(r[result.knob]), usd(r["cost_usd_cached"]), tokens(r["input_tokens_sum"]), plain(r["compactions"]),
             plain(r["overshoots"]), share(r["retention"]),
             ("← recommended" if r[result.knob] == result.value else "frontier" if r[result.knob] in front
              else r["refused"] if isinstance(r["refused"], str) else "")]
            for _, r in f.iterrows()]
    print(render(headers, rows, left=(6,)))
    print()
    if result.value is None:
        print(f"no recommendation: {result.reason}")
        return 1
    print(f"recommended: {result.knob} = {result.value:,} ({result.reason})")
    setting = result.setting()
    if setting:
        print(setting)
    if args.plot:
        _plot(result, args.plot)
        print(f"wrote {args.plot}", file=sys.stderr)
    return 0


def _plot(result: Any, path: str) -> None:
    import matplotlib.pyplot as plt

    f = result.frame
    fig, ax = plt.subplots(figsize=(7, 4), layout="constrained")
    y = "retention" if f["retention"].notna().any() else "compactions"
    ax.plot(f[result.knob], f["cost_usd_cached"], marker="o", label="cost with caching")
    ax.axvline(result.value, color="black", ls="--", lw=1, label=f"recommended {result.value:,}")
    ax.set_xlabel(result.knob.replace("_", " "))
    ax.set_ylabel("cost with caching, all sessions (USD)")
    twin = ax.twinx()
    twin.plot(f[result.knob], f[y], color="#8e6cc4", marker=".", label=y)
    twin.set_ylabel(y)
    ax.legend(fontsize=8, loc="upper left")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    if math.isnan(result.frame["cost_usd_cached"].iloc[0]):
        print("note: the sessions name no model, so the cost is unknown; --pricing MODEL prices them", file=sys.stderr)
