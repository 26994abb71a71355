"""Cache-aware cost, checked against what real Claude Code sessions recorded, and every
preset's cost with and without prompt caching.

Validation (`cache_validation`): each long real Claude Code session is replayed under
``full`` up to its first recorded compaction (after it, what Claude Code sent is no longer
the full history). Request sizes come from a counter calibrated on the session's own
recorded input totals (`harpe_lab.calibrate`): the fit sees only each request's total, never
how the provider split it, so what is checked is the cache model — which part of each
request is read from the cache, which part written, when an entry expires (the recorded
request times against the TTL the session reports). The model is the session's (priced as
``anthropic/<model>`` from litellm's offline table). Two figures per session:

* the median, over the requests that recorded a cache read, of
  ``|predicted − recorded| / recorded`` cache-read tokens (goal ≤ 3%);
* the total cost with caching, predicted against the recorded usage priced the same way
  (goal within 5%).

The same comparison with a counter calibrated on the *other* sessions (leave one session
out; no goal) shows how much a counter that has not seen the session adds: its size error
passes straight into the cache reads.

Where the recording breaks its own cache. In the three sessions (Claude Code 2.1.39, whole
files), every request whose recorded read falls below 90% of what the previous request
cached follows a compaction, a gap longer than the TTL, or a background task's
``<task-notification>`` written as a user record of its own (after the turn ended, or after
the user interrupted a tool call): 3 such breaks, and 4 such notifications, the fourth
(8463c716, after its compaction) reading everything. Each break read exactly the system
prompt and tools (21,460 / 21,478 tokens, as right after a compaction), nothing of the
messages — which only says the change came before the lookback's 20 blocks, not where. A notification that
arrives mid-turn is only queued (a ``queue-operation`` record) and changes nothing (4 of 4
read everything). Nothing else around the breaks differs from ordinary requests: no
``attachment`` or ``isMeta`` record, the same ``cwd``, ``gitBranch``, ``version``, model,
``thinkingMetadata`` and ``permissionMode``, no sidechain, gaps of 1–154 s, within the TTL;
the notification records themselves are identical in shape in the 3 breaks and the
one that did not break. `load_claude_code` records the signal (a turn's
``metadata["cache_resets"]``) and the replay reads only the system prompt and tools there;
up to the first compaction it fires once (258c7280), a break. Breaks the recording does not
signal would be counted (``self_broken``) and the error given without them; there are none.

The first request of each session read 11–18k tokens (17,842 in 258c7280 and 8463c716) that
another session had cached: the static system prompt and tools Claude Code shares across
sessions. Nothing in the file says so — each starts with a ``SessionStart:startup`` hook,
not a resume, its first record's parent is that hook's record, and no earlier session is
named — so the model writes them: $0.07–0.17 per session, 1.3–2.6% of the recorded cost,
most of the remaining (positive) error.

Presets (`preset_costs`): every preset of `harpe_lab.presets.PRESETS` on one real session
(the bundled ``coding_agent`` dataset when the real data is absent), the budget knob at half
of ``full``'s largest request, priced the same way: tokens sent, cache reads and writes,
cost without and with caching, and the cached cost against ``full``'s — below 1 where
breaking the cache pays.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import Goal, Row, log

__all__ = ["cache_validation", "preset_costs", "run", "REAL", "READ_GOAL", "COST_GOAL"]

REAL = Path(__file__).resolve().parents[2] / "shared" / "data" / "real" / "claude_code"
READ_GOAL = Goal("<=", 3, "%")
COST_GOAL = Goal("<=", 5, "%")
SECTION = "6 cache cost"
LOOKBACK = ("Anthropic's 20-block lookback is not modelled: after a change only the system prompt and tools are "
            "read, so strategies that change what they sent (masking, clearing) are priced at their worst.")


def long_sessions(folder: Path = REAL) -> list[Path]:
    """The real Claude Code sessions over 1 MB (three on this machine), by name."""
    return sorted(p for p in folder.glob("*-*-*-*-*.jsonl") if p.stat().st_size > 1_000_000) if folder.is_dir() else []


def _pricing(conversation: Any) -> Any:
    from harpe_lab.models import Pricing

    model = next((u.model for t in conversation.turns for u in t.usage if u.model), "")
    return Pricing.for_model(f"anthropic/{model}", cache_ttl=conversation.metadata.get("cache_ttl"))


def _calibrated(conversation: Any, base: Any) -> Any:
    from harpe_lab.calibrate import calibrate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a narrow fit's warning; the error is reported below
        return calibrate(conversation, base)


def cache_validation(conversation: Any, base_counter: Any, *, counter: Any = None) -> dict[str, Any]:
    """Predicted against recorded cache reads and cost for one Claude Code session (see the
    module doc): ``requests`` (up to the first compaction), ``compared`` (with a recorded
    read), ``read_error`` (median relative), ``cost_error`` (signed), ``self_broken`` (breaks
    the recording does not signal), ``resets_hit`` / ``resets_missed`` (signalled requests
    that did / did not break), ``cost_error_unbroken``, ``predicted_usd``, ``recorded_usd``, ``size_error`` (the
    counter's median relative error on the request totals), ``model``, ``ttl``. ``counter``
    replaces the one calibrated on the session itself (``base_counter`` fitted)."""
    from harpe_lab.calibrate import _before_first_compaction
    from harpe_lab.presets import PRESETS
    from harpe_lab.replay import replay

    if counter is None:
        counter = _calibrated(conversation, base_counter).counter
    price = _pricing(conversation)
    f = replay(conversation, PRESETS["full"].build(system=conversation.system, counter=counter), counter=counter,
               pricing=price).requests
    before = _before_first_compaction(conversation)
    keep = [before(t, s) and s < len(conversation.turns[t].usage)
            for t, s in zip(f["turn"], f["step"])]
    f = f[np.array(keep, dtype=bool)].reset_index(drop=True)
    usage = [conversation.turns[t].usage[s] for t, s in zip(f["turn"], f["step"])]
    read = np.array([u.cache_read_tokens for u in usage], float)
    write = np.array([u.cache_write_tokens for u in usage], float)
    total = np.array([u.input_tokens for u in usage], float)
    out = np.array([u.output_tokens for u in usage], float)
    recorded = ((total - read - write) * price.input + read * price.cache_read + write * price.cache_write
                + out * price.output)  # fmt: skip
    # the recording broke its own cached prefix: the read fell far short of what the previous
    # request had cached, although the gap was within the TTL
    prev_cached = np.concatenate([[np.nan], (read + write)[:-1]])
    times = [conversation.turns[t].metadata.get("request_times", ())[s] for t, s in zip(f["turn"], f["step"])]
    gaps = np.array([np.nan] + [b - a if a and b else np.nan for a, b in zip(times, times[1:])])
    broken = (read < 0.9 * prev_cached) & ~(gaps > price.cache.ttl)
    # the importer's recorded signal for such a break (a background task's notification
    # coming in as a prompt): breaks it explains are modelled, not set aside
    flagged = np.array([s in conversation.turns[t].metadata.get("cache_resets", ())
                        for t, s in zip(f["turn"], f["step"])], dtype=bool)
    self_broken = broken & ~flagged
    compared = read > 0
    err = np.abs(f["cache_read_tokens"].to_numpy()[compared] - read[compared]) / read[compared]
    predicted = f["cost_usd_cached"].to_numpy()
    ok = ~self_broken
    return {
        "requests": len(f), "compared": int(compared.sum()), "read_error": float(np.median(err)),
        "cost_error": float(predicted.sum() / recorded.sum() - 1), "self_broken": int(self_broken.sum()),
        "resets_hit": int((broken & flagged).sum()), "resets_missed": int((flagged & ~broken).sum()),
        "cost_error_unbroken": float(predicted[ok].sum() / recorded[ok].sum() - 1),
        "predicted_usd": float(predicted.sum()), "recorded_usd": float(recorded.sum()),
        "size_error": float(np.median(np.abs(f["input_tokens"].to_numpy() - total) / total)),
        "model": price.model, "ttl": price.cache.ttl,
    }  # fmt: skip


def preset_costs(conversation: Any, counter: Any, pricing: Any, presets: Any = None) -> Any:
    """One row per preset: ``preset, knobs, requests, input_tokens_sum, cache_read_tokens_sum,
    cache_write_tokens_sum, cost_usd, cost_usd_cached, cached_vs_full`` (or ``error`` when
    the preset refused)."""
    import pandas as pd

    from harpe_lab.errors import HarpeLabError
    from harpe_lab.presets import PRESETS
    from harpe_lab.replay import replay

    presets = dict(PRESETS if presets is None else presets)
    full = replay(conversation, presets["full"].build(system=conversation.system, counter=counter), counter=counter,
                  pricing=pricing, name="full")
    peak = int(full.requests["input_tokens"].max())
    base = full.totals()["cost_usd_cached"]
    rows = []
    for name, preset in presets.items():
        knob = preset.budget_knob
        knobs = {} if knob is None else {knob.name: max(knob.minimum, peak // 2)}
        label = ", ".join(f"{k}={v:,}" for k, v in knobs.items())
        try:
            rp = full if name == "full" else replay(
                conversation, preset.build(system=conversation.system, counter=counter, **knobs), counter=counter,
                pricing=pricing, name=name)
        except HarpeLabError as error:
            # the error's first sentence, whole: a cut in the middle of a number reads as a wrong number
            rows.append({"preset": name, "knobs": label, "error": f"{type(error).__name__}: {str(error).split('. ')[0]}"})
            continue
        t = rp.totals()
        rows.append({"preset": name, "knobs": label, "requests": t["requests"],
                     "input_tokens_sum": t["input_tokens_sum"], "cache_read_tokens_sum": t["cache_read_tokens_sum"],
                     "cache_write_tokens_sum": t["cache_write_tokens_sum"], "cost_usd": t["cost_usd"],
                     "cost_usd_cached": t["cost_usd_cached"], "cached_vs_full": t["cost_usd_cached"] / base})
    return pd.DataFrame(rows)


def _costs_markdown(frame: Any, source: str) -> str:
    head = ["preset", "knobs", "requests", "tokens sent", "cache reads", "cache writes", "cost, no caching",
            "cost, with caching", "with caching / full's"]
    lines = ["## Cost with and without prompt caching", "", source, "",
             "| " + " | ".join(head) + " |", "| " + " | ".join("---" for _ in head) + " |"]
    for r in frame.to_dict("records"):
        if isinstance(r.get("error"), str):
            lines.append(f"| {r['preset']} | {r['knobs']} | refused: {r['error']} |" + " |" * (len(head) - 3))
            continue
        lines.append(
            f"| {r['preset']} | {r['knobs']} | {int(r['requests']):,} | {int(r['input_tokens_sum']):,} | "
            f"{int(r['cache_read_tokens_sum']):,} | {int(r['cache_write_tokens_sum']):,} | ${r['cost_usd']:,.2f} | "
            f"${r['cost_usd_cached']:,.2f} | {r['cached_vs_full']:.2f} |"
        )
    ok = frame[frame["cost_usd"].notna()] if "cost_usd" in frame else frame.iloc[0:0]
    full = ok[ok["preset"] == "full"]
    if len(full):
        cheaper = ok["cost_usd"] < float(full["cost_usd"].iloc[0])
        pays = ok[cheaper & (ok["cached_vs_full"] < 1)]["preset"].tolist()
        lost = ok[cheaper & (ok["cached_vs_full"] >= 1)]["preset"].tolist()
        lines += ["", f"Cheaper than `full` with caching too (breaking the cache pays): {', '.join(pays) or 'none'}.",
                  f"Cheaper than `full` without caching but not with it (the lost reads cost more than what was "
                  f"removed): {', '.join(lost) or 'none'}."]
    return "\n".join(lines) + "\n"


def run(*, tiny: bool = False) -> tuple[list[Row], str]:
    """The validation rows and the presets' cost table (Markdown)."""
    from harpe_lab.importers import load_claude_code
    from harpe_lab.tokens import TiktokenCounter

    base = TiktokenCounter("cl100k_base")
    rows: list[Row] = []
    paths = long_sessions()
    if tiny:
        paths = paths[:1]
    for path in paths:
        conv = load_claude_code(path)
        v = cache_validation(conv, base)
        log(f"cache cost: {path.stem[:8]}: read error {v['read_error']:.2%}, cost error {v['cost_error']:+.2%}")
        rows.append(Row(SECTION, f"median cache-read error, Claude Code session {path.stem[:8]}",
                        100 * v["read_error"], unit="%", goal=READ_GOAL,
                        detail=(f"{v['compared']} of {v['requests']} requests up to the first compaction; counter "
                                f"calibrated on the session's recorded input totals ({v['size_error']:.1%} median "
                                f"size error); {v['model']}, TTL {v['ttl']:.0f} s")))
        broken = (f"; without the {v['self_broken']} request where Claude Code broke its own prefix unsignalled: "
                  f"{v['cost_error_unbroken']:+.1%}") if v["self_broken"] else ""
        if v["resets_hit"] or v["resets_missed"]:
            broken += (f"; requests answering a background task's notification prompt, priced as cache breaks: "
                       f"{v['resets_hit'] + v['resets_missed']}, of which {v['resets_hit']} broke it")
        rows.append(Row(SECTION, f"total cost error (with caching), Claude Code session {path.stem[:8]}",
                        100 * abs(v["cost_error"]), unit="%", goal=COST_GOAL,
                        detail=(f"predicted ${v['predicted_usd']:.2f} / recorded usage priced the same way "
                                f"${v['recorded_usd']:.2f} ({v['cost_error']:+.1%}){broken}")))
    if len(paths) > 1 and not tiny:
        # how much of the error a counter not fitted on the session adds (no goal)
        convs = {p: load_claude_code(p) for p in paths}
        for path, conv in convs.items():
            others = [c for q, c in convs.items() if q != path]
            v = cache_validation(conv, base, counter=_calibrated(others, base).counter)
            rows.append(Row(SECTION, f"median cache-read error, session {path.stem[:8]}, counter fitted on the "
                                     f"other sessions", 100 * v["read_error"], unit="%",
                            detail=(f"leave-one-session-out calibration: {v['size_error']:.1%} median size error; "
                                    f"total cost error {v['cost_error']:+.1%}")))
    if paths:
        conv = load_claude_code(paths[0])
        counter = _calibrated(conv, base).counter
        pricing = _pricing(conv)
        source = (f"Real Claude Code session `{paths[0].stem}` (whole session, {len(conv.turns)} turns), counter "
                  f"calibrated on its recorded input totals, priced as `{pricing.model}` with its recorded "
                  f"{pricing.cache.ttl:.0f} s cache TTL; budget knobs at half of `full`'s largest request. "
                  "The last column below 1: the strategy's cached cost beats `full`'s. " + LOOKBACK)
    else:
        from harpe_lab import datasets

        conv = datasets.load("coding_agent")
        counter, pricing = base, "anthropic/claude-sonnet-4-5"
        source = ("Bundled `coding_agent` dataset (the real sessions are absent), cl100k_base counter, priced as "
                  "`anthropic/claude-sonnet-4-5` (5-minute cache, no timestamps: nothing expires); budget knobs at "
                  "half of `full`'s largest request. " + LOOKBACK)
    if tiny:
        from harpe_lab import datasets

        conv, counter, pricing = datasets.load("coding_agent"), base, "anthropic/claude-sonnet-4-5"
        source = "Tiny run: bundled `coding_agent` dataset (figures meaningless)."
    frame = preset_costs(conv, counter, pricing)
    return rows, _costs_markdown(frame, source)
