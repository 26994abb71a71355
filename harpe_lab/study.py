"""Strategies on your own sessions: compare several on all of them, tune one's knob.

`compare_sessions` replays every session under every strategy (and budget) with the numbers
a user can trust by default: each session measured with `harpe_lab.measure.measure` — a
counter calibrated on its own recorded usage (sessions without usage share a fit pooled over
the others), prices by each call's recorded model — and each preset's window knob set to the
window of the session's model (`harpe_lab.recorded.model_window`). One row per (session,
strategy, budget); the columns are documented in ``frame.attrs["columns"]``.

`tune` searches one knob of one preset over all sessions — a coarse grid between ``lo`` and
``hi``, then a finer one around the best — and recommends the value that minimises the
objective (cost with caching, or tokens sent) under the constraints (a least retention, no
request over the limit). Retention is the probes' where the sessions have probes, else the
needed-next kept share (`harpe_lab.evaluate.needed_next`): what the agent's own next replies
needed that the requests still held. `agent_setting` turns the recommendation into the agent's own
configuration where the agent has one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

from .conversation import Conversation
from .errors import HarpeLabError, StrategyError

__all__ = ["compare_sessions", "totals_by_strategy", "tune", "Tuning", "agent_setting", "STUDY_COLUMNS",
           "load_sessions"]

STUDY_COLUMNS: dict[str, str] = {
    "session": "The session's conversation id.",
    "strategy": "The preset replayed.",
    "budget": "The budget it was replayed at (its budget knob; NaN: the preset's defaults).",
    "requests": "Model calls replayed.",
    "input_tokens_sum": "Input tokens sent over all requests, as the session's calibrated counter counts them.",
    "input_tokens_max": "The largest request.",
    "cost_usd": "Cost without prompt caching, each call priced by its recorded model.",
    "cost_usd_cached": "Cost with prompt caching, as the provider would have billed it.",
    "compactions": "Requests that were not the previous request plus new messages (the strategy cut or replaced).",
    "first_compaction": "The request where the replay first compacted (NaN: never).",
    "recorded_compactions": "Compactions the session's own agent made.",
    "recorded_first_compaction": "The request after the agent's first compaction (NaN: none).",
    "overshoots": "Requests above the strategy's declared limit.",
    "distill_calls": "Summarizer calls the strategy made.",
    "retention": "Of the probes findable in the full history, the share the requests still held (NaN: the "
                 "session has no probes).",
    "needs": "Needed-next references: what the recorded replies named that occurred earlier in the session.",
    "needs_kept": "Of the needs, those still in the request (a message sent verbatim or rewritten).",
    "needs_lost": "Of the needs, those the request no longer held (evaluate.needed_next).",
    "needs_kept_share": "Of the needs, the share still in the request: 1.0 for the full history; the retention of "
                        "sessions without probes.",
    "lost_example": "The first lost need: which request needed what, and where the message holding it went.",
    "budget_met": "Whether the strategy kept the budget (evaluate.budget_fit); NaN without a budget.",
    "budget_note": "Why a budget did not apply or was not met ('sends up to 23,843 — no budget knob'), or why the "
                   "strategy refused the session ('refused: ...': what it must keep does not fit its budget).",
    "refused": "Why the strategy could not replay the session (its budget cannot hold what it must keep); empty "
               "when it replayed.",
    "counter": "How the session was counted: calibrated, pooled, or the tokenizer alone.",
    "calibration_error": "The calibrated counter's median error on the session's recorded requests.",
    "pricing": "The models the session was priced by.",
}


def load_sessions(sources: Iterable[Any]) -> list[Conversation]:
    """Conversations from paths (a file of several gives all of them) or Conversations."""
    from .importers import load_all, load_any

    out: list[Conversation] = []
    for s in sources:
        if isinstance(s, Conversation):
            out.append(s)
            continue
        try:
            out.extend(load_all(s))
        except HarpeLabError:
            out.append(load_any(s))
    if not out:
        raise HarpeLabError("no sessions given: pass session files, folders' files or Conversations")
    ids = [c.id for c in out]
    if len(set(ids)) < len(ids):  # the same id twice (a session copied): tell them apart
        out = [c.with_(id=f"{c.id}#{k}") if ids.count(c.id) > 1 else c for k, c in enumerate(out)]
    return out


@dataclass(frozen=True)
class _Preset:
    """A preset built per session: its counter, system prompt and its model's window (a module
    level class, so a dask worker can unpickle it)."""

    name: str
    knobs: tuple[tuple[str, int], ...] = ()
    window: int | None = None
    distill: Any = None

    def __call__(self, conversation: Conversation, counter: Any, budget: int | None = None) -> Any:
        from .presets import get_preset, make_strategy
        from .recorded import model_window

        preset = get_preset(self.name)
        knobs = preset.at_window(dict(self.knobs), self.window or model_window(conversation))
        budget = knobs.pop("budget", budget)
        return make_strategy(self.name, budget=budget, counter=counter, system=conversation.system,
                             distill=self.distill, **knobs)()


@dataclass(frozen=True)
class _Facts:
    """Per replay, beside its totals: where it compacted, whether the budget bound, retention.
    A preset without a budget knob is replayed once and judged at every budget
    (``fits``: budget → ``(met, note)``)."""

    budgets: tuple[int, ...] = ()

    def __call__(self, replay: Any, params: dict[str, Any]) -> dict[str, Any]:
        from .evaluate import budget_fit
        from .recorded import recorded

        f = replay.requests
        compacted = f.loc[f["compacted"], "request"]
        rec = recorded(replay.conversation).compactions
        budget = params.get("budget")
        met, note = budget_fit(replay, budget) if budget is not None else (math.nan, "")
        from .evaluate import lost_needs, needs_totals

        needs = needs_totals(replay)
        example = ""
        if needs["needs_lost"]:
            row = lost_needs(replay).iloc[0]
            how = "folded into the summary" if row["how"] == "summarized" else "dropped or rewritten"
            example = (f"request {row['request']} needed {row['reference']!r} ({row['kind']}); the message that "
                       f"held it was {how} at request {row['replaced_at']}")
        retention = math.nan
        if replay.conversation.probes:
            from .evaluate import retention as probe_retention

            retention = float(probe_retention(replay, by_category=False)["retention"].iloc[0])
        return {
            "first_compaction": int(compacted.iloc[0]) if len(compacted) else math.nan,
            "recorded_compactions": len(rec), "recorded_first_compaction": rec[0].request if rec else math.nan,
            "retention": retention, "needs": needs["needs"], "needs_kept": needs["needs_kept"],
            "needs_lost": needs["needs_lost"],
            "needs_kept_share": needs["needs_kept_share"], "lost_example": example, "budget_met": met,
            "budget_note": note,
            "fits": {} if budget is not None else {b: budget_fit(replay, b) for b in self.budgets},
            "sizes": tuple(int(x) for x in f["input_tokens"]), "compacted_at": tuple(int(x) for x in compacted),
        }


@dataclass(frozen=True)
class _Measurer:
    """A session's `Measure` (its counter calibrated on it, its prices): what a compare's
    sweep prepares where each session's replays run (`sweep`'s ``prepare``)."""

    counter: Any
    calibrate: bool
    pricing: Any

    def __call__(self, conversation: Conversation) -> Any:
        from .measure import measure

        return measure(conversation, counter=self.counter, calibrate=self.calibrate, pricing=self.pricing)


def _measures(conversations: Sequence[Conversation], *, counter: Any, calibrate: bool,
              pricing: Any) -> dict[str, Any]:
    """Each session's `Measure`; sessions without usage share a fit pooled over the rest."""
    measurer = _Measurer(counter, calibrate, pricing)
    out = {c.id: measurer(c) for c in conversations}
    out.update(_pooled(conversations, out, calibrate))
    return out


def _swept(convs: list[Conversation], run: Any, measurer: _Measurer, calibrate: bool) -> tuple[Any, dict[str, Any]]:
    """The sweep's frame and each session's `Measure`. The sessions with usage to fit a
    counter on are measured where their replays run (``run(sessions, None)``: each counted
    once, in parallel); the others wait for the fit pooled over them (``run(sessions,
    measures)``), and so does one whose fit failed, replayed again."""
    import pandas as pd

    fits = [c for c in convs if not calibrate or _has_usage(c)]
    frame = run(fits, None) if fits else pd.DataFrame({"conversation": []})
    made = frame.attrs.get("prepared", {})
    measures = {c.id: made[c.id] if c.id in made else measurer(c) for c in convs}
    measures.update(_pooled(convs, measures, calibrate))
    again = [c for c in convs if c.id not in made or measures[c.id] is not made[c.id]]
    if again:
        frame = pd.concat([frame[~frame["conversation"].isin([c.id for c in again])], run(again, measures)],
                          ignore_index=True)
    return frame, measures


def _has_usage(conversation: Conversation) -> bool:
    return any(u is not None and u.input_tokens > 0 for turn in conversation.turns for u in turn.usage)


def _pooled(conversations: Sequence[Conversation], measures: Mapping[str, Any], calibrate: bool) -> dict[str, Any]:
    """The measures of the sessions without usage to fit on, with a fit pooled over the
    sessions that had it (none when every session, or none, was fitted)."""
    from .calibrate import calibrate as fit

    fitted = [c for c in conversations if measures[c.id].calibration is not None]
    bare = [c for c in conversations if measures[c.id].calibration is None and not measures[c.id].calibrated]
    if not (calibrate and fitted and bare):
        return {}
    import dataclasses
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pooled = fit(fitted, measures[fitted[0].id].calibration.counter.base)
    return {c.id: dataclasses.replace(measures[c.id], counter=pooled.counter, calibration=pooled,
                                      counter_name=f"{measures[c.id].counter_name} (fit pooled over "
                                                   f"{_count(len(fitted), 'session')})", uncalibrated_why="")
            for c in bare}


def compare_sessions(sources: Iterable[Any], strategies: Sequence[str], *, budgets: Sequence[int] | None = None,
                     knobs: Mapping[str, int] | None = None, pricing: Any = "auto", window: int | None = None,
                     counter: Any = "cl100k_base", calibrate: bool = True, workers: int | None = None,
                     executor: Any = None, progress: bool = True, measures: Mapping[str, Any] | None = None,
                     distill: Any = None) -> Any:
    """Every session under every preset in ``strategies`` (at each of ``budgets``; a preset
    without a budget knob runs once, at its defaults); one row per replay (`STUDY_COLUMNS`).
    ``knobs`` sets other knobs by name for every preset that has them; ``window`` overrides
    the window of each session's model; ``distill`` is the summarizer of the presets that
    call one (the offline `ExtractiveDistiller` when ``None``; an `LLMDistiller` with its
    disk cache for a model's summaries). ``frame.attrs["measures"]`` holds each session's
    `Measure`."""
    import pandas as pd

    from .presets import get_preset
    from .sweep import PerConversation, PerStrategy, sweep

    from .evaluate import with_probe_turn

    # a probe asked after the last turn is judged at a request made for it
    convs = [with_probe_turn(c) if c.probes else c for c in load_sessions(sources)]
    if not strategies:
        raise StrategyError("compare needs at least one strategy (`harpe-lab replay --list` names them)")
    presets = [get_preset(name) for name in strategies]
    knobs = dict(knobs or {})
    for name, value in knobs.items():
        if not any(name in {k.name for k in p.knobs} for p in presets):
            raise StrategyError(f"no strategy of {list(strategies)} has a knob {name!r}")
    facts = _Facts(tuple(budgets or ()))
    chosen = {p.name: _Preset(p.name, tuple((k, v) for k, v in knobs.items() if k in {x.name for x in p.knobs}),
                              window, distill) for p in presets}
    grid = PerStrategy({p.name: {"budget": list(budgets)} for p in presets if p.budget_knob is not None}) \
        if budgets else None

    measurer = _Measurer(counter, calibrate, pricing)

    def run(sessions: list[Conversation], given: Mapping[str, Any] | None) -> Any:
        how = dict(prepare=measurer) if given is None else dict(
            counter=PerConversation({c.id: given[c.id].counter for c in sessions}),
            pricing=PerConversation({c.id: given[c.id].pricing for c in sessions}))
        return sweep(sessions, chosen, grid, workers=workers, executor=executor, progress=progress, extra=facts, **how)

    if measures is not None:  # `tune` measures once for all its runs
        frame = run(convs, measures)
    else:
        frame, measures = _swept(convs, run, measurer, calibrate)
    if "budget" not in frame:
        frame["budget"] = math.nan
    rows, sizes, compacted_at = [], {}, {}
    for row in frame.to_dict("records"):  # a preset with no budget knob, judged at each budget
        label = row["strategy"] if "budget" not in row or _missing(row["budget"]) else \
            f"{row['strategy']}@{int(row['budget']):,}"
        if isinstance(row.get("refused"), str):
            rows.append({**row, "budget_met": False, "budget_note": f"refused: {row['refused']}"})
            continue
        sizes[(row["conversation"], label)] = row.pop("sizes")
        compacted_at[(row["conversation"], label)] = row.pop("compacted_at")
        fits = row.pop("fits")
        if fits:
            rows += [{**row, "budget": b, "budget_met": met, "budget_note": note} for b, (met, note) in fits.items()]
        else:
            rows.append(row)
    frame = pd.DataFrame(rows)
    frame = frame.rename(columns={"conversation": "session"})
    frame["counter"] = [measures[s].counter_line().removeprefix("counter: ") for s in frame["session"]]
    frame["calibration_error"] = [measures[s].calibration.error_after if measures[s].calibration else math.nan
                                  for s in frame["session"]]
    frame["pricing"] = [measures[s].pricing.model if measures[s].pricing is not None else ""
                        for s in frame["session"]]
    order = {name: k for k, name in enumerate(strategies)}
    frame = frame.sort_values(["session", "strategy", "budget"], key=lambda col: col.map(order)
                              if col.name == "strategy" else col, kind="stable").reset_index(drop=True)
    # every column, even where every replay was refused (then its numbers are NaN)
    frame = frame.reindex(columns=list(STUDY_COLUMNS))
    frame.attrs.update(columns=dict(STUDY_COLUMNS), measures=measures, strategies=list(strategies),
                       budgets=list(budgets or []), sizes=sizes, compacted_at=compacted_at)
    return frame


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def totals_by_strategy(frame: Any) -> Any:
    """The answer first: per strategy (and budget), sums over all sessions."""
    keys = ["strategy", "budget"]
    g = frame.groupby(keys, dropna=False, sort=False)

    def total(s: Any) -> Any:  # NaN where every replay was refused: no number, not 0
        return s.sum(min_count=1)

    out = g.agg(sessions=("session", "nunique"), input_tokens_sum=("input_tokens_sum", total),
                cost_usd=("cost_usd", total), cost_usd_cached=("cost_usd_cached", total),
                compactions=("compactions", total), recorded_compactions=("recorded_compactions", total),
                overshoots=("overshoots", total), retention=("retention", "mean"), needs=("needs", total),
                needs_kept=("needs_kept", total), needs_lost=("needs_lost", total),
                refused=("refused", lambda s: int(s.map(lambda v: isinstance(v, str)).sum())))
    out["needs_kept_share"] = out["needs_kept"] / out["needs"].where(out["needs"] > 0)
    out["budget_met"] = g["budget_met"].agg(lambda s: bool(s.fillna(True).astype(bool).all()))
    out["budget_note"] = [_note(part) for _, part in g]
    return out.reset_index()


def _note(part: Any) -> str:
    """Over the sessions of one strategy and budget: in how many it refused the session, and
    in how many the budget did not bind; and why."""
    refused = part["refused"].map(lambda v: isinstance(v, str))
    said = ""
    if refused.any():  # the totals are over the other sessions only: say so first
        reasons = "; ".join(sorted(set(part.loc[refused, "refused"])))[:160]
        said = f"refused in {refused.sum()} of {_count(len(part), 'session')}: {reasons}"
        part = part[~refused]
    budget = _budget_note(part) if len(part) else ""
    return "; ".join(n for n in (said, budget) if n)


def _budget_note(part: Any) -> str:
    if part["budget"].isna().all():
        return ""
    missed = part[~part["budget_met"].fillna(True).astype(bool)]
    notes = [n for n in missed["budget_note"] if n] or [n for n in part["budget_note"] if n]
    if not notes:
        return ""
    reasons = sorted({n.split(" — ", 1)[1] if " — " in n else n.split("; ", 1)[0] for n in notes})
    peak = part["input_tokens_max"].max()
    sends = "" if math.isnan(peak) else f"; sends up to {int(peak):,}"
    kept = f"kept in {len(part) - len(missed)} of {_count(len(part), 'session')}: " if len(missed) else ""
    return f"{kept}{'; '.join(reasons)[:160]}{sends}"


def _count(n: int, what: str) -> str:
    return f"{n:,} {what}{'' if n == 1 else 's'}"


# --- tuning ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tuning:
    """What `tune` found: every value tried (``frame``; a value some session refused has no
    numbers, and ``refused`` says why), the Pareto frontier of cost against retention
    (``frontier``), the recommended value and why."""

    strategy: str
    knob: str
    value: int | None
    objective: str
    frame: Any
    frontier: Any
    reason: str

    window: int | None = None
    """The window of the sessions' model (the smallest; `harpe_lab.recorded.model_window`), at
    which their replays ran, for settings given as a share of it."""

    def setting(self) -> str:
        """The agent's own configuration for the recommended value (see `agent_setting`)."""
        if self.value is None:
            return ""
        values = {self.knob: self.value, **({"window": self.window} if self.window else {})}
        values.update({"context_window": self.window} if self.window else {})
        return agent_setting(self.strategy, values)


def tune(sources: Iterable[Any], strategy: str, *, knob: str | None = None, lo: int | None = None,
         hi: int | None = None, objective: str = "cost", min_retention: float | None = None,
         no_overshoot: bool = False, points: int = 8, knobs: Mapping[str, int] | None = None,
         pricing: Any = "auto", workers: int | None = None, executor: Any = None, progress: bool = True) -> Tuning:
    """Search ``knob`` of the preset ``strategy`` (default: its budget knob) between ``lo``
    and ``hi`` (default: its range up to the window of the sessions' model, or, where no
    session states one, up to the largest recorded request): ``points`` values
    spread evenly, then as many again between the best one's neighbours; recommend the value
    with the least ``objective`` (``"cost"``: cost with caching, ``"tokens"``: tokens sent)
    among those that keep ``min_retention`` (needs sessions with probes) and, with
    ``no_overshoot``, send no request over the limit."""
    import numpy as np
    import pandas as pd

    from .presets import get_preset
    from .recorded import model_window

    if objective not in ("cost", "tokens"):
        raise StrategyError(f"objective must be one of ['cost', 'tokens'], but {objective!r} was passed")
    preset = get_preset(strategy)
    target = _knob_to_tune(preset, strategy, knob)
    convs = load_sessions(sources)
    windows = [w for w in (model_window(c) for c in convs) if w]
    window = min(windows) if windows else None
    high = hi if hi is not None else (target.maximum or _top(preset, windows, convs, target))
    low = max(target.minimum, lo if lo is not None else high // 5)
    if not low < high:
        raise StrategyError(f"--knob {target.name}={low}:{high}: the range is empty; give LO < HI")
    column = "cost_usd_cached" if objective == "cost" else "input_tokens_sum"

    measures = _measures(convs, counter="cl100k_base", calibrate=True, pricing=pricing)

    requests = 0  # the requests a replay sends, over all sessions (the same at every value)

    def run(values: Sequence[int]) -> Any:
        nonlocal requests
        rows = []
        for v in values:
            f = compare_sessions(convs, [strategy], knobs={**(knobs or {}), target.name: int(v)}, pricing=pricing,
                                 workers=workers, executor=executor, progress=progress, measures=measures)
            refused = [r for r in f["refused"] if isinstance(r, str)]
            if refused:  # over fewer sessions its numbers would not compare: the value is out
                rows.append({target.name: int(v), "cost_usd_cached": math.nan, "input_tokens_sum": math.nan,
                             "retention": math.nan, "overshoots": math.nan, "compactions": math.nan,
                             "refused": f"refused by {len(refused)} of {_count(len(f), 'session')}: {refused[0]}"})
                continue
            requests = int(f["requests"].sum())
            needs, kept = f["needs"].sum(), f["needs_kept"].sum()
            share = f["retention"].mean() if f["retention"].notna().any() else (kept / needs if needs else math.nan)
            rows.append({target.name: int(v), "cost_usd_cached": f["cost_usd_cached"].sum(min_count=1),
                         "input_tokens_sum": int(f["input_tokens_sum"].sum()), "retention": share,
                         "overshoots": int(f["overshoots"].sum()), "compactions": int(f["compactions"].sum()),
                         "refused": None})
        return pd.DataFrame(rows)

    coarse = sorted({int(round(v)) for v in np.linspace(low, high, points)})
    tried = run(coarse)
    best = _best(tried, column, min_retention, no_overshoot)
    if best is not None:
        k = coarse.index(int(tried.loc[best, target.name]))
        left, right = coarse[max(k - 1, 0)], coarse[min(k + 1, len(coarse) - 1)]
        finer = sorted({int(round(v)) for v in np.linspace(left, right, points + 2)} - set(coarse))
        if finer:
            tried = pd.concat([tried, run(finer)], ignore_index=True)
        tried = tried.sort_values(target.name, ignore_index=True)
        best = _best(tried, column, min_retention, no_overshoot)
    frontier = _frontier(tried, column)
    if best is None:
        return Tuning(strategy, target.name, None, objective, tried, frontier,
                      _why_none(tried, column, f"between {low:,} and {high:,}", min_retention, no_overshoot), window)
    value = int(tried.loc[best, target.name])
    if tried[column].nunique(dropna=True) <= 1 and tried["compactions"].nunique() <= 1:
        return Tuning(strategy, target.name, None, objective, tried, frontier,
                      f"{target.name} changes nothing on these sessions between {low:,} and {high:,} (no value "
                      "compacts differently): there is nothing to tune here", window)
    priced = sum(m.pricing is not None for m in measures.values())
    reason = _why_best(objective, tried.loc[best, column], len(convs), priced, int(tried.loc[best, "overshoots"]),
                       requests)
    return Tuning(strategy, target.name, value, objective, tried, frontier, reason, window)


def _top(preset: Any, windows: Sequence[int], convs: Sequence[Conversation], target: Any) -> int:
    """Where a threshold's default range ends: below the sessions' window (a strategy may
    refuse the window itself). Where no session states one, at the largest request recorded
    (above it nothing compacts), below the window the preset then runs at; else ten times
    the knob's default."""
    if windows:
        return min(windows) - 1
    from .recorded import recorded

    peak = max((recorded(c).peak_input_tokens for c in convs), default=0)
    knob = preset.window_knob
    if knob is not None and knob.default and peak >= knob.default:
        peak = knob.default - 1
    return peak or 10 * (target.default or 1000)


def _why_none(tried: Any, column: str, span: str, min_retention: float | None, no_overshoot: bool) -> str:
    """Why no value is recommended: every one refused, none priced, or none kept the constraints."""
    ran = tried[tried["refused"].isna()]
    if not len(ran):
        return f"every value {span} was refused ({tried['refused'].iloc[0]})"
    if ran[column].isna().all():
        return "no session is priced: give --pricing MODEL, or tune for --objective tokens"
    why = []
    if min_retention is not None:
        why.append(f"retention ≥ {min_retention}")
    if no_overshoot:
        why.append("no overshoot")
    refused = f" ({len(tried) - len(ran)} refused)" if len(ran) < len(tried) else ""
    return f"no value {span} kept {' and '.join(why)}{refused}"


def _knob_to_tune(preset: Any, strategy: str, knob: str | None) -> Any:
    """The knob named, else the preset's budget knob; without either, an error naming the
    knobs there are."""
    target = preset.knob(knob) if knob else preset.budget_knob
    if target is None:
        if not preset.knobs:
            raise StrategyError(f"the {strategy!r} strategy has no knobs: there is nothing to tune")
        raise StrategyError(f"the {strategy!r} strategy has no budget knob; name the knob to tune with "
                            f"--knob KNOB=LO:HI, one of: {', '.join(k.name for k in preset.knobs)}")
    return target


def _why_best(objective: str, amount: Any, sessions: int, priced: int, overshoots: int, requests: int) -> str:
    """The recommendation's reason: the least cost (or tokens) and over how many sessions;
    and when every one of the ``requests`` went over the value, that the agent cannot keep it."""
    label = "cost with caching" if objective == "cost" else "tokens sent"
    shown = f"${amount:,.2f}" if objective == "cost" else f"{int(amount):,} tokens"
    over = _count(sessions, "session") + ("" if objective != "cost" or priced == sessions
                                          else f" ({priced} of them priced)")
    why = f"the least {label} over {over}: {shown}"
    if overshoots >= requests > 0:
        why += (f"; but every request went over it ({overshoots:,}): what a request sends even after compacting "
                "(the agent's system prompt and tools) is above it, so the agent cannot keep it; "
                "no_overshoot (--no-overshoot) keeps to values it can")
    return why


def _best(tried: Any, column: str, min_retention: float | None, no_overshoot: bool) -> int | None:
    """The row with the least ``column`` among those that keep the constraints; of equal
    ones, the one keeping more (retention), then the larger value (it compacts less)."""
    ok = tried[column].notna()
    if min_retention is not None:
        if tried["retention"].isna().all():
            raise HarpeLabError("--min-retention needs a retention measure: sessions with probes, or recorded "
                                "replies that name what they needed (needed-next); these have neither")
        ok &= tried["retention"] >= min_retention
    if no_overshoot:
        ok &= tried["overshoots"] == 0
    if not ok.any():
        return None
    candidates = tried[ok]
    least = candidates[column].min()
    ties = candidates[candidates[column] <= least * (1 + 1e-9)]
    key = ties["retention"].fillna(-1.0)
    ties = ties[key == key.max()]
    return int(ties.index[-1])  # the frame is in knob order: the largest value


def _frontier(tried: Any, column: str) -> Any:
    """The values no other value beats on both the objective and retention (a refused one is none)."""
    rows = tried[tried[column].notna()].sort_values(column, kind="stable")
    best_retention = -math.inf
    keep = []
    for i, r in rows.iterrows():
        ret = -1.0 if math.isnan(r["retention"]) else r["retention"]
        if ret > best_retention or not keep:
            keep.append(i)
            best_retention = ret
    return tried.loc[keep].reset_index(drop=True)


def agent_setting(strategy: str, values: Mapping[str, Any]) -> str:
    """The agent's own configuration for a preset's knob values, where the agent has one
    (``""`` otherwise)."""
    from .strategies.anthropic.claude_code import AUTOCOMPACT_BUFFER, CONTEXT_WINDOW, SUMMARY_OUTPUT_RESERVE

    if strategy == "claude-code" and "high_water" in values:
        window = int(values.get("context_window") or CONTEXT_WINDOW)
        effective = window - SUMMARY_OUTPUT_RESERVE
        pct = math.floor(100 * int(values["high_water"]) / effective)
        default = effective - AUTOCOMPACT_BUFFER
        if int(values["high_water"]) >= default:
            return (f"Claude Code: the default threshold ({default:,} tokens) already; "
                    "CLAUDE_AUTOCOMPACT_PCT_OVERRIDE can only lower it")
        return (f"export CLAUDE_AUTOCOMPACT_PCT_OVERRIDE={pct}   # Claude Code compacts at {pct}% of the "
                f"{effective:,}-token effective window: {math.floor(effective * pct / 100):,} tokens")
    if strategy == "gemini-compress" and "high_water" in values:
        window = int(values.get("window") or 1_048_576)
        share = int(values["high_water"]) / window
        return (f'"model": {{"compressionThreshold": {share:.2f}}}   # Gemini CLI settings.json: compress at '
                f"{share:.0%} of the {window:,}-token window")
    if strategy in ("cline-basic", "cline-agentic") and "high_water" in values:
        # the SDK has no trigger setting: it compacts at 90% of the model's max input, which a
        # provider's contextWindow sets (handler-factory.ts); the smallest window whose 90% reaches it
        high_water = int(values["high_water"])
        window = -(-high_water * 10 // 9)
        return (f'"contextWindow": {window}   # Cline: the provider\'s "settings" in ~/.cline/data/settings/'
                f"providers.json; compaction fires at 90% of it, {math.floor(window * 0.9):,} tokens")
    if strategy == "summarizing" and "high_water" in values:
        low = values.get("low_water")
        low_text = f", low_water_chars={int(low)}" if low else ""
        return f"SummarizingContext(system, high_water_tokens={int(values['high_water'])}{low_text})   # Harpe"
    if strategy == "langchain-summarization" and ("trigger" in values or "budget" in values):
        n = int(values.get("trigger") or values.get("budget"))
        return f'SummarizationMiddleware(model=..., trigger=("tokens", {n}))   # LangChain'
    for name, key, text in _AGENT_KNOBS:
        if strategy == name and key in values:
            return text.format(int(values[key]))
    return ""


# preset, knob, the agent's own setting (filled with the knob's value)
_AGENT_KNOBS = (
    ("codex", "high_water", 'model_auto_compact_token_limit = {}   # Codex: ~/.codex/config.toml'),
    ("aider", "history_tokens", "aider --max-chat-history-tokens {}"),
)
