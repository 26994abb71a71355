"""One row per replay: tokens, compactions, distill cost, overshoots, retention with its
denominator, artifact retention and answer accuracy."""

from __future__ import annotations

import math
from typing import Any, Iterable

from ..conversation import Probe
from ..messages import Message, Rendered
from ..summarize import ARTIFACT_CATEGORIES, ordered_artifacts
from ._answers import judge_agreement
from ._artifacts import _as_text, _Held, _retention
from ._passages import _message_by_id, _rendered_text
from ._probes import _probe_frame, _probes
from ._retention import _retention_rows

__all__ = ["COMPARE_COLUMNS", "compare"]

COMPARE_COLUMNS = (
    "conversation", "strategy", "requests", "input_tokens_sum", "input_tokens_median", "input_tokens_max",
    "compactions", "distill_calls", "distill_tokens", "distill_cost_usd", "overshoots", "overshoot_tokens_max",
    "probes", "findable", "needs_judge", "raw_retention", "retention", "verbatim", "only_in_summary", "lost",
    "retention_denominator", "probe_retention", "answer_in_summary", "artifact_retention",
    *(f"artifacts_{c}" for c in ARTIFACT_CATEGORIES), "answer_accuracy", "answer_accuracy_full",
    "answer_retention", "judge_agreement",
)  # fmt: skip


def _mean(values: Any) -> float:
    """Mean of a (nullable) column, ``<NA>`` skipped; NaN when nothing is left."""
    values = values.dropna()
    return float(values.astype(float).mean()) if len(values) else math.nan


def compare(
    replays: Iterable[Any],
    probes: Iterable[Probe] | None = None,
    *,
    answers: Any = None,
    pricing: Any = None,
) -> Any:
    """One row per replay (`COMPARE_COLUMNS`):

    ==========================  =========================================================
    conversation, strategy      the replay's
    requests                    model calls
    input_tokens_sum/median/max input tokens sent, over all requests
    compactions                 `ContextCompacted` events
    distill_calls/tokens        distill calls and their input + output tokens
    distill_cost_usd            their cost: the frame's ``distill_cost_usd`` when the replay
                                was priced, else priced with ``pricing`` (a model name or
                                `harpe_lab.replay.Pricing`), else NaN
    overshoots                  requests above the strategy's high water mark
    overshoot_tokens_max        the largest overshoot
    probes                      probes judged (``probes``, else the conversation's): m
    findable                    probes whose answer is findable in the full history: n
    needs_judge                 m − n, for a model judge; never counted as lost
    raw_retention, retention    known ÷ m, and known ÷ n (see `retention`): 1.0 for
                                `FullContext` by construction
    verbatim, only_in_summary,  where the n findable probes were kept; they add up to 1
    lost
    retention_denominator       ``"n findable of m probes"``, to show beside the number
    probe_retention             share of probes with evidence whose evidence was all sent
                                (mean `probe_retention` ``evidence_in_context``)
    answer_in_summary           share of probes whose answer is findable in the summary
    artifact_retention          share of the full history's artifacts the last request
                                holds (summary and messages), `artifact_retention` "all"
    artifacts_<category>        the same per category
    answer_accuracy(_full)      mean ``context_correct`` (``full_correct``) of ``answers``:
                                frames from `answer_probes` (one, concatenated, or a list),
                                matched by conversation and strategy; NaN without them
    answer_retention            mean ``context_correct`` over the n findable probes: the
                                model's answers with retention's denominator
    judge_agreement             `judge_agreement` ``"full"`` of those answers
    ==========================  =========================================================

    Per category, use `retention`.
    """
    import pandas as pd

    from ..models import Pricing

    replays = list(replays)
    price = Pricing.for_model(pricing) if isinstance(pricing, str) else pricing
    if answers is not None and not isinstance(answers, pd.DataFrame):
        answers = pd.concat(list(answers), ignore_index=True) if len(answers) else None
    fixed_probes = None if probes is None else list(probes)
    full_cache: dict[int, tuple[Any, dict[str, Message]]] = {}
    full_haystacks: dict = {}
    rows = []
    for rp in replays:
        f = rp.requests
        t = rp.totals()
        conv = rp.conversation
        n = len(f)
        priced = float(f["distill_cost_usd"].sum(min_count=1)) if "distill_cost_usd" in f.columns else math.nan
        if not math.isnan(priced):  # the replay was priced
            dcost = priced
        elif price is not None:
            dcost = float(f["distill_input_tokens"].sum() * price.input + f["distill_output_tokens"].sum() * price.output)
        else:
            dcost = math.nan
        row: dict[str, Any] = {
            "conversation": conv.id, "strategy": rp.strategy, "requests": n,
            "input_tokens_sum": int(f["input_tokens"].sum()) if n else 0,
            "input_tokens_median": float(f["input_tokens"].median()) if n else math.nan,
            "input_tokens_max": int(f["input_tokens"].max()) if n else 0,
            "compactions": t.get("compactions", 0), "distill_calls": t.get("distill_calls", 0),
            "distill_tokens": t.get("distill_tokens", 0), "distill_cost_usd": dcost,
            "overshoots": t.get("overshoots", 0), "overshoot_tokens_max": t.get("overshoot_tokens_max", 0),
        }  # fmt: skip
        ps = _probes(rp, fixed_probes)
        row["probes"] = len(ps)
        findable_ids: set[str] = set()
        if ps:
            pr = _probe_frame(rp, ps, full_haystacks)
            r = _retention_rows(pr, {}, "all")
            for k in ("findable", "needs_judge", "raw_retention", "retention", "verbatim", "only_in_summary", "lost"):
                row[k] = r[k]
            row["retention_denominator"] = r["denominator"]
            row["probe_retention"] = _mean(pr["evidence_in_context"])
            row["answer_in_summary"] = _mean(pr["answer_in_summary"])
            findable_ids = set(pr.loc[pr["findable_full"].fillna(False).astype(bool), "probe_id"])
        else:
            row.update(findable=0, needs_judge=0, retention_denominator="0 findable of 0 probes")
            for k in ("raw_retention", "retention", "verbatim", "only_in_summary", "lost", "probe_retention",
                      "answer_in_summary"):  # fmt: skip
                row[k] = math.nan
        if n:
            key = id(conv)
            if key not in full_cache:
                full_cache[key] = ({}, _message_by_id(conv))
            seen, by_id = full_cache[key]
            last = n - 1
            ids = tuple(rp.available_ids(last))
            if ids not in seen:
                seen[ids] = ordered_artifacts(_as_text(Rendered(conv.system, tuple(by_id[m] for m in ids))))
            ret = _retention(seen[ids], _Held(_rendered_text(rp, last)))
        else:
            ret = {c: math.nan for c in (*ARTIFACT_CATEGORIES, "all")}
        row["artifact_retention"] = ret["all"]
        for c in ARTIFACT_CATEGORIES:
            row[f"artifacts_{c}"] = ret[c]
        row["answer_accuracy"] = row["answer_accuracy_full"] = row["answer_retention"] = math.nan
        row["judge_agreement"] = math.nan
        if answers is not None and len(answers):
            mine = answers[(answers["strategy"] == rp.strategy) & (answers["conversation"] == conv.id)]
            if len(mine):
                row["answer_accuracy"] = _mean(mine["context_correct"])
                row["answer_accuracy_full"] = _mean(mine["full_correct"])
                if "probe_id" in mine.columns:
                    row["answer_retention"] = _mean(mine.loc[mine["probe_id"].isin(findable_ids), "context_correct"])
                if {"findable_full", "answer_in_context"} <= set(mine.columns):
                    row["judge_agreement"] = judge_agreement(mine)["full"]
        rows.append(row)
    return pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
