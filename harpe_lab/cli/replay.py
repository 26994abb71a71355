"""``harpe-lab replay PATH --strategy NAME --budget N``: one strategy over one recording.

Prints one row per model request, then the totals; ``--format json|csv`` for scripts;
``--list`` for the strategies the preset registry offers, with their knobs.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import re
import sys
from typing import Any

from ..errors import BudgetError, ImportFormatError, StrategyError
from . import UsageError
from ._table import plain, render, share, tokens, usd

__all__ = ["cli_replay", "list_presets"]

# the request-frame columns the CLI shows, with their table headers and formats
_COLUMNS = (
    ("request", "#", plain),
    ("turn", "turn", plain),
    ("step", "step", plain),
    ("input_tokens", "input tokens", tokens),
    ("recorded_input_tokens", "recorded", tokens),
    ("messages_sent", "sent", plain),
    ("messages_dropped", "dropped", plain),
    ("compacted", "compacted", plain),
    ("overshoot_tokens", "overshoot", tokens),
    ("distill_calls", "distills", plain),
    ("cached_prefix_tokens", "cached prefix", tokens),
)
_COST_COLUMNS = (("cost_usd", "cost", usd), ("cost_usd_cached", "cost cached", usd))

_TOTALS = (
    ("requests", "requests", plain),
    ("input_tokens_sum", "input tokens, all requests", tokens),
    ("input_tokens_median", "input tokens, median", tokens),
    ("input_tokens_p90", "input tokens, 90th percentile", tokens),
    ("input_tokens_max", "input tokens, largest request", tokens),
    ("compactions", "compactions", plain),
    ("overshoots", "requests over the limit", plain),
    ("overshoot_tokens_max", "largest overshoot (tokens)", tokens),
    ("messages_dropped_max", "most messages dropped", plain),
    ("distill_calls", "distill calls", plain),
    ("distill_tokens", "distill tokens", tokens),
    ("cached_prefix_share", "cached prefix share", share),
)
_COST_TOTALS = (("cost_usd", "cost (USD)", usd), ("cost_usd_cached", "cost with prompt caching (USD)", usd))


# --- the preset registry ------------------------------------------------------------------


def _names() -> list[str]:
    from .. import presets

    registry = getattr(presets, "PRESETS", None)
    return list(registry) if registry is not None else list(presets.STRATEGIES)


def _preset(name: str) -> Any:
    """The registry's preset ``name`` (``None`` while the registry has no `Preset` records);
    a typo is a usage error listing the names, closest first."""
    from .. import presets

    names = _names()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UsageError(f"unknown strategy {name!r}; {hint}choose one of: {', '.join(names)} "
                         "(`harpe-lab replay --list` describes them)")
    get = getattr(presets, "get_preset", None)
    return get(name) if get is not None else None


def _budget_default(preset: Any) -> int | None:
    if preset is None:
        from ..presets import DEFAULT_BUDGET

        return DEFAULT_BUDGET
    for knob in preset.knobs:
        if knob.name == "budget":
            return knob.default
    return None


def _range(knob: Any) -> str:
    low = "-∞" if knob.minimum is None else plain(knob.minimum)
    high = "∞" if knob.maximum is None else plain(knob.maximum)
    return f"{low}–{high}"


def list_presets(out: Any = None) -> None:
    """Print every preset: name, family, one-line description, then its knobs with unit,
    default and range."""
    out = out or sys.stdout
    from .. import presets

    registry = getattr(presets, "PRESETS", None)
    if registry is None:  # the registry is still a list of names
        print("\n".join(presets.STRATEGIES), file=out)
        return
    rows = [(p.name, p.family, p.description) for p in registry.values()]
    width = max(len(r[0]) for r in rows)
    fam = max(len(r[1]) for r in rows)
    for p in registry.values():
        print(f"{p.name:<{width}}  {p.family:<{fam}}  {p.description}", file=out)
        for k in p.knobs:
            scales = ", scales with the conversation" if k.scales else ""
            print(f"{'':<{width}}    --{k.name} ({k.unit}): default {plain(k.default)}, range {_range(k)}{scales}"
                  if k.name == "budget" else
                  f"{'':<{width}}    {k.name} ({k.unit}): default {plain(k.default)}, range {_range(k)}{scales}",
                  file=out)
    print("\nOn the command line, --budget sets a preset's budget knob; the other knobs keep their defaults.",
          file=out)


# --- loading --------------------------------------------------------------------------------


def _counter(name: str) -> Any:
    from ..tokens import ApproxCounter, BytesCounter, TiktokenCounter

    if name == "bytes":
        return BytesCounter()
    if name == "approx":
        return ApproxCounter()
    return TiktokenCounter(name)


def _load(path: str) -> Any:
    from ..importers import FORMATS, detect_format, load_any
    from ..importers._common import read_source

    src = read_source(path)  # missing, folder, empty, binary: one-line errors of their own
    try:
        detect_format(src)
    except ImportFormatError as err:
        raise ImportFormatError(
            f"{path}: not a transcript in any format harpe_lab reads ({', '.join(FORMATS)}); convert it to "
            "OpenAI chat messages (a JSON list of {\"role\", \"content\"} objects), or run again with "
            "--traceback to see why each format did not fit"
        ) from err
    return load_any(src)


_ADVICE = re.compile(r"\.\s+(Raise|Lower|Pass|Increase|Use|Shorten|Unpin)\b.*$", re.S)


def _replay(args: argparse.Namespace, conversation: Any, counter: Any, pricing: Any) -> Any:
    from ..presets import make_strategy
    from ..replay import replay

    try:
        factory = make_strategy(args.strategy, budget=args.budget, counter=counter, system=conversation.system)
        return replay(conversation, factory, counter=counter, pricing=pricing, name=args.strategy)
    except BudgetError as err:
        what = _ADVICE.sub(".", " ".join(str(err).split()))
        budget = f"--budget {args.budget:,}" if args.budget else "its default budget"
        raise BudgetError(f"{args.path}: {args.strategy} at {budget} cannot keep what it must: {what} "
                          "Raise --budget or choose another strategy (`harpe-lab replay --list`).") from err


# --- output ---------------------------------------------------------------------------------


def _clean(value: Any) -> Any:
    """A value JSON can hold: NaN becomes null, numpy scalars become Python numbers."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _describe(conversation: Any) -> str:
    meta = conversation.metadata
    variant = f", {meta['variant']} variant" if meta.get("variant") else ""
    return f"{meta.get('format', '?')}{variant}, conversation {conversation.id!r}, {len(conversation.turns):,} turns"


def cli_replay(args: argparse.Namespace) -> int:
    """Replay ``args.path`` under ``args.strategy`` and print the request table and totals."""
    if args.list:
        list_presets()
        return 0
    if args.path is None:
        raise UsageError("give the PATH of a transcript to replay, or --list to see the strategies")
    preset = _preset(args.strategy)
    if preset is not None and preset.limit_kind is None and args.budget is not None:
        raise UsageError(f"--budget does not apply to the {args.strategy!r} strategy (it has no limit); "
                         "drop --budget or choose a strategy with one (`harpe-lab replay --list`)")
    pricing = None
    if args.pricing is not None:
        from ..pricing import Pricing

        try:
            pricing = Pricing.for_model(args.pricing)
        except StrategyError as err:
            raise UsageError(f"--pricing: {' '.join(str(err).split())}") from err
    counter = _counter(args.counter)
    conversation = _load(args.path)
    result = _replay(args, conversation, counter, pricing)

    frame = result.requests
    columns = list(_COLUMNS) + (list(_COST_COLUMNS) if pricing is not None else [])
    totals_spec = list(_TOTALS) + (list(_COST_TOTALS) if pricing is not None else [])
    totals = result.totals()
    budget = args.budget if args.budget is not None else (
        _budget_default(preset) if preset is None or preset.limit_kind is not None else None)

    if args.format == "csv":
        frame[[c for c, _, _ in columns]].to_csv(sys.stdout, index=False)
        return 0
    if args.format == "json":
        doc = {
            "path": args.path,
            "format": conversation.metadata.get("format"),
            "variant": conversation.metadata.get("variant"),
            "conversation": conversation.id,
            "strategy": args.strategy,
            "budget": budget,
            "counter": args.counter,
            "pricing": args.pricing,
            "totals": {k: _clean(totals[k]) for k, _, _ in totals_spec if k in totals},
            "requests": [{c: _clean(v) for c, v in zip([c for c, _, _ in columns], row)}
                         for row in frame[[c for c, _, _ in columns]].itertuples(index=False)],
        }
        print(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
        return 0

    limit = f" at a budget of {budget:,} tokens" if budget is not None else ""
    price = f" · priced as {pricing.model}" if pricing is not None else " · no pricing (add --pricing MODEL)"
    print(f"{args.path}: {_describe(conversation)}")
    print(f"strategy {args.strategy}{limit} · counter {args.counter}{price}")
    print()
    rows = [[fmt(v) for (_, _, fmt), v in zip(columns, row)]
            for row in frame[[c for c, _, _ in columns]].itertuples(index=False)]
    print(render([h for _, h, _ in columns], rows))
    print()
    label = max(len(lbl) for _, lbl, _ in totals_spec)
    for key, lbl, fmt in totals_spec:
        if key in totals:
            print(f"{lbl:>{label}}: {fmt(totals[key])}")
    return 0
