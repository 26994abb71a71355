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
from .show import request_preview, show_request

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
_COST_COLUMNS = (("cache_read_tokens", "cache read", tokens), ("cache_write_tokens", "cache write", tokens),
                 ("cost_usd", "cost", usd), ("cost_usd_cached", "cost cached", usd))

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
_NEEDS_TOTALS = [("needs", "needed next: references to earlier things", tokens),
                 ("needs_kept", "needed next: kept in the request", tokens),
                 ("needs_in_summary", "needed next: only in the summary", tokens),
                 ("needs_lost", "needed next: lost", tokens),
                 ("needs_kept_share", "needed next: kept share", share),
                 ("instructions", "instructions the user gave", tokens),
                 ("instructions_kept_share", "instructions still sent or in the summary", share)]
_COST_TOTALS = (("cache_read_tokens_sum", "cache reads (tokens)", tokens),
                ("cache_write_tokens_sum", "cache writes (tokens)", tokens),
                ("cost_usd", "cost (USD)", usd), ("cost_usd_cached", "cost with prompt caching (USD)", usd))


# --- the preset registry ------------------------------------------------------------------


def _preset(name: str) -> Any:
    """The registry's preset ``name``; a typo is a usage error listing the names, closest first."""
    from ..presets import PRESETS

    preset = PRESETS.get(name)
    if preset is None:
        close = difflib.get_close_matches(name, list(PRESETS), n=3, cutoff=0.5)
        hint = f"did you mean {', '.join(close)}? " if close else ""
        raise UsageError(f"unknown strategy {name!r}; {hint}choose one of: {', '.join(PRESETS)} "
                         "(`harpe-lab replay --list` describes them)")
    return preset


def _range(knob: Any) -> str:
    high = "no limit" if knob.maximum is None else f"{knob.maximum:,}"
    return f"{knob.minimum:,} to {high}"


def list_presets(out: Any = None) -> None:
    """Print every preset: name, family and one-line description, then its knobs with
    unit, default and range (the one ``--budget`` sets is marked), then its caveat and its
    source."""
    from ..presets import PRESETS

    out = out or sys.stdout
    width = max(len(name) for name in PRESETS)
    family = max(len(p.family) for p in PRESETS.values())
    for p in PRESETS.values():
        print(f"{p.name:<{width}}  {p.family:<{family}}  {p.description}", file=out)
        indent = " " * (width + 4)
        budget, window = p.budget_knob, p.window_knob
        for k in p.knobs:
            default = "derived" if k.default is None else f"{k.default:,}"
            flag = "  [--budget]" if budget is not None and k.name == budget.name else \
                "  [--window]" if window is not None and k.name == window.name else ""
            scales = "; scales with the conversation" if k.scales else ""
            print(f"{indent}{k.name} ({k.unit}): default {default}, range {_range(k)}{scales}{flag}", file=out)
            if k.help:
                print(f"{indent}    {k.help}", file=out)
        if p.note:
            print(f"{indent}note: {p.note}", file=out)
        print(f"{indent}source: {p.source.replace('`', '')}", file=out)
        if not p.knobs:
            print(f"{indent}no knobs: --budget does not apply", file=out)
    print("\n--budget N sets the knob marked [--budget]; the other knobs keep their defaults. The knob marked "
          "[--window], the model's context window, is set to the window of the recording's model when the recording "
          "declares one (--window N to change it); its default applies when it declares none.", file=out)


# --- loading --------------------------------------------------------------------------------


def _load(path: str, index: str | None = None) -> Any:
    from ..importers import FORMATS, detect_format, load_any, read_transcript

    src = read_transcript(path)  # missing, folder, empty, binary: one-line errors of their own
    try:
        detect_format(src)
    except ImportFormatError as err:
        raise ImportFormatError(
            f"{path}: not a transcript in any format harpe_lab reads ({', '.join(FORMATS)}); convert it to "
            "OpenAI chat messages (a JSON list of {\"role\", \"content\"} objects), or run again with "
            "--traceback to see why each format did not fit"
        ) from err
    which = None if index is None else int(index) if re.fullmatch(r"-?\d+", index.strip()) else index
    return load_any(src, index=which)


def _measure(args: argparse.Namespace, conversation: Any) -> Any:
    """The counter and prices the replay uses (`harpe_lab.measure`: calibrated, priced per call)."""
    from ..measure import measure

    pricing = None if args.pricing == "none" else args.pricing
    try:
        return measure(conversation, counter=args.counter, calibrate=not args.no_calibrate, pricing=pricing)
    except StrategyError as err:  # an unknown model name
        raise UsageError(f"--pricing: {' '.join(str(err).split())}") from err


_ADVICE = re.compile(r"\.\s+(Raise|Lower|Pass|Increase|Use|Shorten|Unpin)\b.*$", re.S)


def _knobs(args: argparse.Namespace, preset: Any) -> dict[str, str]:
    """``--set NAME=VALUE`` options as knob values (checked by the preset when it builds)."""
    knobs: dict[str, str] = {}
    for item in args.knobs:
        name, sep, value = item.partition("=")
        name = name.strip().replace("-", "_")
        if not sep or not name or not value.strip():
            raise UsageError(f"--set takes KNOB=VALUE, e.g. --set n=50, but {item!r} was passed")
        if name not in {k.name for k in preset.knobs}:
            names = ", ".join(k.name for k in preset.knobs) or "none"
            raise UsageError(f"--set {item}: the {preset.name!r} strategy has no knob {name!r}; its knobs: {names}")
        if preset.budget_knob is not None and name == preset.budget_knob.name and args.budget is not None:
            raise UsageError(f"--set {item} and --budget both set {name}; give one of them")
        knobs[name] = value.strip()
    return knobs


def _knob_values(args: argparse.Namespace, preset: Any) -> dict[str, int]:
    knobs: dict[str, int] = {}
    for name, text in _knobs(args, preset).items():
        try:
            knobs[name] = _whole_number(text)
        except ValueError:
            raise UsageError(f"--set {name}={text}: must be a whole number") from None
    return knobs


def _window(args: argparse.Namespace, preset: Any, knobs: dict[str, int], conversation: Any) -> tuple[int | None, str]:
    """The window the strategy's window knob is set to and where it comes from (``None``:
    the knob's own default, or a strategy without one), as compare and the widgets set it."""
    k = preset.window_knob
    if k is None:
        return None, ""
    if k.name in knobs:
        return knobs[k.name], f"given with --set {k.name}="
    if args.window is not None:
        return args.window, "given with --window"
    from ..recorded import model_window

    model = model_window(conversation)
    if model:
        return model, "the model's window, as the recording declares it; --window N to change it"
    return None, f"the strategy's default, {k.default:,}: the recording declares no window; --window N to set it"


def _factory(args: argparse.Namespace, knobs: dict[str, int], conversation: Any, counter: Any) -> Any:
    from ..presets import make_strategy

    try:
        return make_strategy(args.strategy, budget=args.budget, counter=counter, system=conversation.system,
                             **knobs)
    except BudgetError:
        raise
    except StrategyError as err:  # a knob value out of its range
        raise UsageError(f"{args.strategy}: {' '.join(str(err).split())}") from err


def _whole_number(text: str) -> int:
    """``"50"``, ``"8_000"``, ``"8,000"``, ``"50.0"`` → an int; ValueError otherwise (the range
    is the preset's to check)."""
    value = float(text.replace("_", "").replace(",", ""))
    if not math.isfinite(value) or value != int(value):
        raise ValueError(text)
    return int(value)


def _replay(args: argparse.Namespace, factory: Any, conversation: Any, counter: Any, pricing: Any,
            budget: int | None) -> Any:
    from ..replay import replay

    try:
        return replay(conversation, factory, counter=counter, pricing=pricing, name=args.strategy)
    except BudgetError as err:
        what = _ADVICE.sub(".", " ".join(str(err).split()))
        at = f" at --budget {budget:,}" if budget is not None else ""
        raise BudgetError(f"{args.path}: {args.strategy}{at} cannot keep what it must: {what} "
                          "Raise --budget or choose another strategy (`harpe-lab replay --list`).") from err


def _against_recorded(frame: Any, m: Any) -> list[str]:
    """The replayed compactions beside the recorded ones, and the replay's cost beside the
    recorded cost up to the first recorded compaction (where the two histories part)."""
    replayed = [int(i) for i in frame.loc[frame["compacted"], "request"]]
    rec = m.recorded
    if rec is None or not len(rec.calls):
        return [f"replayed compactions: {_requests(replayed)}"]
    recorded = [c.request for c in rec.compactions]
    lines = [f"replayed compactions: {_requests(replayed)} · recorded: {_requests(recorded)}"]
    mine, theirs, _ = rec.against(frame)
    if not (math.isnan(mine) or math.isnan(theirs)) and theirs > 0:
        where = f"{'before the first recorded compaction' if recorded else 'over the whole session'} ({rec.compared()})"
        missed, extra = rec.missed()
        beside = ""
        if missed and not math.isnan(extra) and theirs > extra:
            beside = (f"; {mine / (theirs - extra) - 1:+.1%} against the bill less its {missed} recorded cache "
                      f"miss{'es' * (missed > 1)}")
        lines.append(f"cost with caching {where}: replayed ${mine:,.2f}, recorded ${theirs:,.2f} "
                     f"({mine / theirs - 1:+.1%}{beside})")
    return lines


def _requests(indices: list[int]) -> str:
    if not indices:
        return "none"
    from ..recorded import listed

    return f"{len(indices)} at request{'s' * (len(indices) > 1)} {listed(indices)}"


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
    knob = preset.budget_knob
    if knob is None and args.budget is not None:
        raise UsageError(f"--budget does not apply to the {args.strategy!r} strategy (it has no budget); "
                         "drop --budget or choose a strategy with one (`harpe-lab replay --list`)")
    knobs = _knob_values(args, preset)
    window_knob = preset.window_knob
    if args.window is not None and (window_knob is None or window_knob.name in knobs):
        raise UsageError(f"--window does not apply to the {args.strategy!r} strategy (it takes no context window); "
                         "drop --window" if window_knob is None else
                         f"--window and --set {window_knob.name}= both set the window; give one of them")
    budget = args.budget
    if knob is not None and budget is None:
        budget = knobs.get(knob.name, knob.default)
    conversation = _load(args.path, args.index)
    m = _measure(args, conversation)
    window = _window(args, preset, knobs, conversation)
    knobs = preset.at_window(knobs, window[0])
    factory = _factory(args, knobs, conversation, m.counter)
    result = _replay(args, factory, conversation, m.counter, m.pricing, budget)

    if args.show is not None and not 0 <= args.show < len(result):
        raise UsageError(f"--show {args.show}: the replay has requests 0 to {len(result) - 1}")
    frame = result.requests
    priced = m.pricing is not None
    columns = list(_COLUMNS) + (list(_COST_COLUMNS) if priced else [])
    totals_spec = list(_TOTALS) + (list(_COST_TOTALS) if priced else [])
    from ..evaluate import instructions_totals, needs_totals

    totals = {**result.totals(), **needs_totals(result), **instructions_totals(result)}
    totals_spec += _NEEDS_TOTALS
    against = _against_recorded(frame, m)

    from ..redact import Redactor

    tally = Redactor(enabled=not args.no_redact).tally()
    if args.show is not None and args.format == "csv":
        raise UsageError("--show prints one request: use it with --format table or json, not csv")
    if args.format == "csv":
        frame[[c for c, _, _ in columns]].to_csv(sys.stdout, index=False)
        return 0
    if args.format == "json":
        doc = _json_doc(args, conversation, budget, window, m, result, columns, tally)
        doc["totals"] = {k: _clean(totals[k]) for k, _, _ in totals_spec if k in totals}
        doc["requests"] = [{c: _clean(v) for c, v in zip([c for c, _, _ in columns], row)}
                           for row in frame[[c for c, _, _ in columns]].itertuples(index=False)]  # fmt: skip
        print(json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False))
        return 0
    _print_table(args, conversation, knob, budget, window, m, result, columns, tally)
    label = max(len(lbl) for _, lbl, _ in totals_spec)
    for key, lbl, fmt in totals_spec:
        if key in totals:
            print(f"{lbl:>{label}}: {fmt(totals[key])}")
    print()
    for line in against:
        print(line)
    return 0


def _cost_against(frame: Any, m: Any) -> dict[str, Any] | None:
    """The comparison the table's last line states, for scripts: the replay's cost with
    caching beside the recorded bill over the same recorded calls (`Recorded.against`)."""
    if m.recorded is None:
        return None
    mine, theirs, calls = m.recorded.against(frame)
    if math.isnan(mine) or math.isnan(theirs):
        return None
    missed, extra = m.recorded.missed()
    return {"replayed_usd": round(mine, 6), "recorded_usd": round(theirs, 6), "calls": calls,
            "until_request": m.recorded.compactions[0].request if m.recorded.compactions else None,
            "cache_misses": missed, "cache_misses_usd": None if math.isnan(extra) else round(extra, 6),
            "unrecorded_requests": m.recorded.unrecorded()}


def _json_doc(args: argparse.Namespace, conversation: Any, budget: int | None, window: tuple[int | None, str], m: Any,
              result: Any, columns: list, tally: Any) -> dict[str, Any]:  # fmt: skip
    """``--format json``'s document up to its totals and requests (the caller adds them
    last, where scripts expect them)."""
    frame = result.requests
    return {
        "path": args.path,
        "format": conversation.metadata.get("format"),
        "variant": conversation.metadata.get("variant"),
        "conversation": conversation.id,
        "strategy": args.strategy,
        "budget": budget,
        "window": window[0],
        **m.as_dict(),
        "replayed_compactions": [int(i) for i in frame.loc[frame["compacted"], "request"]],
        "cost_against_recorded": _cost_against(frame, m),
        **({"show": request_preview(result, args.show, m.counter, tally)} if args.show is not None else {}),
        "redaction": tally.header() if not args.no_redact else "redaction off",
    }


def _print_table(args: argparse.Namespace, conversation: Any, knob: Any, budget: int | None,
                 window: tuple[int | None, str], m: Any, result: Any, columns: list, tally: Any) -> None:  # fmt: skip
    """The table for people: what was replayed and how it was measured, then the request
    table (or, with ``--show``, the one request)."""
    limit = f" at {knob.name.replace('_', ' ')} {budget:,} {knob.unit}" if knob is not None and budget else ""
    print(f"{args.path}: {_describe(conversation)}")
    print(f"strategy {args.strategy}{limit}")
    if window[1]:
        print(f"window {window[0]:,} tokens ({window[1]})" if window[0] else f"window: {window[1]}")
    for line in m.lines():
        print(line)
    print()
    if args.show is not None:
        print(show_request(result, args.show, m.counter, tally))
        print(f"\nsecrets: {tally.header() if not args.no_redact else 'redaction off (--no-redact)'}")
    else:
        frame = result.requests
        rows = [[fmt(v) for (_, _, fmt), v in zip(columns, row)]
                for row in frame[[c for c, _, _ in columns]].itertuples(index=False)]
        print(render([h for _, h, _ in columns], rows))
    print()
