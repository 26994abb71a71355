"""One row per replay: tokens, compactions, distill cost, overshoots, whether it kept a
budget, retention with its denominator, artifact retention and answer accuracy; and the
ranking "best at this budget" that leaves out the replays the budget did not bind.

The budget rule (`budget_fit`), in one sentence: a replay *meets* a budget when its largest
request is no more than `BUDGET_SLACK` (10%) above it. The slack is there because two kinds
of strategy overshoot by design, by a little: a reactive one (a high water: summarizing,
claude-code, clearing) sends the request that crosses the mark before it compacts, and a
target aimed at through an estimate (windowed's characters, chain's newest message kept
whole) lands a few tokens past it. A strategy that sends more than that does not meet the
budget, whatever the reason, and its note says which reason it is: it has no budget knob
(nothing it does depends on the budget), it cut nothing at that budget (a high water on a
chat with no tool results to clear), its limit is another number, or it cut but still went
over (a whole agent turn kept, a summary larger than the budget).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping

from ..conversation import Probe
from ..errors import EvaluationError
from ..messages import Message, Rendered
from ..summarize import ARTIFACT_CATEGORIES, ordered_artifacts
from ._answers import judge_agreement
from ._artifacts import _as_text, _Held, _retention
from ._passages import _message_by_id, _rendered_text
from ._probes import _probe_frame, _probes
from ._health import compaction_health
from ._instructions import instructions_totals
from ._needs import needs_totals
from ._retention import _retention_rows

__all__ = ["COMPARE_COLUMNS", "COMPARE_MEANINGS", "HEADLINE", "BUDGET_SLACK", "compare", "budget_fit",
           "rank_at_budget"]

BUDGET_SLACK = 0.10
"""How far above a budget a replay's largest request may go and still meet it (a share of
the budget): the request a reactive strategy sends before it compacts, an estimate's miss."""

HEADLINE = "retention"
"""The retention figure to quote and rank by; ``raw_retention`` and ``probe_retention`` are
secondary (see `COMPARE_MEANINGS`)."""

_CATEGORY_WORDS = {"files": "file paths", "commands": "commands", "numbers": "numbers", "urls": "URLs",
                   "identifiers": "identifiers", "decisions": "decisions"}  # fmt: skip

COMPARE_MEANINGS: Mapping[str, str] = {
    "conversation": "The replayed conversation's id.",
    "strategy": "The replay's name: a preset, or preset@budget.",
    "requests": "Model calls replayed.",
    "input_tokens_sum": "Tokens sent: input tokens summed over all requests.",
    "input_tokens_median": "Input tokens of the median request.",
    "input_tokens_max": "Input tokens of the largest request.",
    "compactions": "Requests that removed or replaced something the previous request sent (compacted).",
    "distill_calls": "Calls the strategy made to its distiller (the summarizer).",
    "distill_tokens": "Input plus output tokens of those calls.",
    "distill_cost_usd": "Their cost: at the replay's own prices when it was priced, else at compare's pricing, "
                        "else NaN.",
    "overshoots": "Requests above the strategy's own declared limit (0 for a strategy that declares none).",
    "overshoot_tokens_max": "The largest of those overshoots, in tokens.",
    "budget_met": "Whether the strategy kept the budget it is compared at (compare's budget=N): its largest "
                  "request is at most N plus 10% (BUDGET_SLACK), which admits the request a reactive strategy sends "
                  "before it compacts and an estimate's miss; NaN when compared at no budget. A ranking \"best at "
                  "a budget\" leaves out the strategies where it is false and shows their budget_note.",
    "budget_note": "With a budget: why it did not apply or was not met ('sends up to 23,843 — no budget knob', "
                   "'… — cut nothing at 8,000'); empty when the strategy's limit is the budget and it was met.",
    "probes": "Probes judged (m): those given to compare, else the conversation's.",
    "findable": "Probes whose answer the offline matcher finds in the full history at their request (n).",
    "needs_judge": "m − n: probes only a model judge can score; never counted as lost.",
    "raw_retention": "Secondary to retention: known ÷ m, counting in its denominator the probes even the full "
                     "history cannot answer offline, so it is below 1.0 even for FullContext.",
    "retention": "The headline figure: known ÷ n — of what the full history let the model know, the share this "
                 "strategy's request still held (evidence sent verbatim, or the answer findable in what was sent, "
                 "summary included). 1.0 for FullContext by construction.",
    "verbatim": "Of the n findable probes, the share kept word for word.",
    "only_in_summary": "Of the n findable probes, the share found only in the summary.",
    "lost": "Of the n findable probes, the share neither kept nor summarized; verbatim + only_in_summary + lost = 1.",
    "retention_denominator": '"n findable of m probes", to show beside retention.',
    "probe_retention": "Secondary to retention: of the probes that name evidence messages, the share whose "
                       "evidence was all sent verbatim; no credit for a summary or for the answer said elsewhere.",
    "answer_in_summary": "Share of probes whose answer is findable in the summary.",
    "artifact_retention": "Share of the full history's artifacts (file paths, commands, numbers, URLs, identifiers, "
                          "decisions) that the last request still holds, in its messages or its summary.",
    **{f"artifacts_{c}": f"artifact_retention for {_CATEGORY_WORDS.get(c, c)} only." for c in ARTIFACT_CATEGORIES},
    "needs": "Needed-next references: what the recorded replies named (files, symbols, commands, values) that "
             "occurred earlier in the session, summed over the requests (needed_next).",
    "needs_kept": "Of the needs, those still in the request (a message sent verbatim or rewritten).",
    "needs_in_summary": "Of the needs, those found only in the summary the context held.",
    "needs_lost": "Of the needs, those the request no longer held: the agent would have had to guess or fetch them "
                  "again.",
    "needs_kept_share": "needs_kept / needs: 1.0 for FullContext by construction; NaN when the session has none "
                        "(no recorded replies, or none naming anything seen before).",
    "instructions": "Instructions the user gave: the ask and every directive sentence of the typed prompts "
                    "(instructions_kept).",
    "instructions_verbatim_share": "Over the requests after each instruction, the share where it was sent verbatim.",
    "instructions_kept_share": "The same, verbatim or paraphrased in the summary (most of its content words).",
    "instructions_lost": "Instruction-requests where the instruction was neither sent nor in the summary.",
    "inflations": "Requests where a summary was made that were not smaller than the request before them: a "
                  "compaction that did not shrink what was sent (compaction_health).",
    "short_summaries": "Requests where a summary was made from fewer than 50 tokens of summarizer output.",
    "distill_fallbacks": "Times the summarizer gave no summary and said why (DistillFallback events).",
    "answer_accuracy": "Mean context_correct of the answers given (answer_probes): the model's answers under this "
                       "strategy; NaN without answers.",
    "answer_accuracy_full": "Mean full_correct of the same answers: under the full history.",
    "answer_retention": "Mean context_correct over the n findable probes: the model's answers with retention's "
                        "denominator.",
    "judge_agreement": "How often the model judge agrees with the offline matcher on the full history "
                       "(judge_agreement \"full\").",
}  # fmt: skip
"""Each column of `compare`'s frame, one meaning each (also ``frame.attrs["columns"]`` and
``docs/glossary.md``)."""

COMPARE_COLUMNS = tuple(COMPARE_MEANINGS)


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
    budget: int | None = None,
) -> Any:
    """One row per replay, columns `COMPARE_COLUMNS`; ``frame.attrs["columns"]`` says what
    each means (`COMPARE_MEANINGS`), ``frame.attrs["headline"]`` names the retention figure
    to quote (``"retention"``: of what the full history let the model know, the share the
    strategy still held; ``raw_retention`` and ``probe_retention`` are secondary), and
    ``frame.attrs["budget"]`` is ``budget``.

    ``probes`` replace the conversations' own. ``answers``: frames from `answer_probes`
    (one, concatenated, or a list), matched by conversation and strategy. ``pricing`` (a
    model name or `harpe_lab.replay.Pricing`) prices the distill calls of replays that
    were not priced.

    ``budget``: the budget in tokens the replays are compared at. Each row then says
    whether the replay kept it (``budget_met``, by `budget_fit`: its largest request at
    most `BUDGET_SLACK` above it) and, when the budget did not apply or was not met, why
    (``budget_note``: "sends up to 23,843 — no budget knob", "sends up to 23,843 — cut
    nothing at 8,000"). `rank_at_budget` ranks the rows that kept it. Without ``budget``
    the two columns are NaN and "".

    Per probe category, use `retention`.
    """
    import pandas as pd

    from ..models import Pricing

    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget <= 0):
        raise EvaluationError(f"budget must be a whole number of tokens above 0, like 8000, but {budget!r} was passed")
    replays = list(replays)
    price = Pricing.for_model(pricing) if isinstance(pricing, str) else pricing
    if answers is not None and not isinstance(answers, pd.DataFrame):
        answers = pd.concat(list(answers), ignore_index=True) if len(answers) else None
    fixed_probes = None if probes is None else list(probes)
    full_cache: dict[int, tuple[Any, dict[str, Message]]] = {}
    full_haystacks: dict = {}
    rows = []
    for rp in replays:
        row = _size_columns(rp, price)
        if budget is None:
            row["budget_met"], row["budget_note"] = math.nan, ""
        else:
            row["budget_met"], row["budget_note"] = budget_fit(rp, budget)
        findable_ids = _probe_columns(row, rp, _probes(rp, fixed_probes), full_haystacks)
        row.update(_artifact_columns(rp, full_cache))
        row.update(needs_totals(rp))
        row.update(instructions_totals(rp))
        health = compaction_health(rp)
        row.update({k: len(health[k]) for k in ("inflations", "short_summaries", "distill_fallbacks")})
        row.update(_answer_columns(rp, answers, findable_ids))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(COMPARE_COLUMNS))
    frame.attrs.update(columns=dict(COMPARE_MEANINGS), headline=HEADLINE, budget=budget)
    return frame


# -- compare's columns, one group each (`COMPARE_MEANINGS` says what each means) ---------------


def _size_columns(rp: Any, price: Any) -> dict[str, Any]:
    """What the replay sent and what its compactions cost: the distill calls at the replay's
    own prices, else at ``price``, else NaN."""
    f = rp.requests
    t = rp.totals()
    n = len(f)
    priced = float(f["distill_cost_usd"].sum(min_count=1)) if "distill_cost_usd" in f.columns else math.nan
    if not math.isnan(priced):  # the replay was priced
        dcost = priced
    elif price is not None:
        dcost = float(f["distill_input_tokens"].sum() * price.input + f["distill_output_tokens"].sum() * price.output)
    else:
        dcost = math.nan
    return {
        "conversation": rp.conversation.id, "strategy": rp.strategy, "requests": n,
        "input_tokens_sum": int(f["input_tokens"].sum()) if n else 0,
        "input_tokens_median": float(f["input_tokens"].median()) if n else math.nan,
        "input_tokens_max": int(f["input_tokens"].max()) if n else 0,
        "compactions": t.get("compactions", 0), "distill_calls": t.get("distill_calls", 0),
        "distill_tokens": t.get("distill_tokens", 0), "distill_cost_usd": dcost,
        "overshoots": t.get("overshoots", 0), "overshoot_tokens_max": t.get("overshoot_tokens_max", 0),
    }  # fmt: skip


def _probe_columns(row: dict[str, Any], rp: Any, ps: list[Probe], full_haystacks: dict) -> set[str]:
    """The probes' retention columns, written into ``row``; returns the ids of the probes
    the full history makes findable (the answers' denominator)."""
    row["probes"] = len(ps)
    if not ps:
        row.update(findable=0, needs_judge=0, retention_denominator="0 findable of 0 probes")
        for k in ("raw_retention", "retention", "verbatim", "only_in_summary", "lost", "probe_retention",
                  "answer_in_summary"):  # fmt: skip
            row[k] = math.nan
        return set()
    pr = _probe_frame(rp, ps, full_haystacks)
    r = _retention_rows(pr, {}, "all")
    for k in ("findable", "needs_judge", "raw_retention", "retention", "verbatim", "only_in_summary", "lost"):
        row[k] = r[k]
    row["retention_denominator"] = r["denominator"]
    row["probe_retention"] = _mean(pr["evidence_in_context"])
    row["answer_in_summary"] = _mean(pr["answer_in_summary"])
    return set(pr.loc[pr["findable_full"].fillna(False).astype(bool), "probe_id"])


def _artifact_columns(rp: Any, full_cache: dict[int, tuple[Any, dict[str, Message]]]) -> dict[str, Any]:
    """The share of the full history's artifacts the last request still held, per category;
    the full history's artifacts are cached per conversation and set of ids, as replays of
    one conversation share them."""
    n = len(rp.requests)
    conv = rp.conversation
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
    return {"artifact_retention": ret["all"], **{f"artifacts_{c}": ret[c] for c in ARTIFACT_CATEGORIES}}


def _answer_columns(rp: Any, answers: Any, findable_ids: set[str]) -> dict[str, Any]:
    """The model's answers for this replay (matched by conversation and strategy), NaN
    without any."""
    row = dict.fromkeys(("answer_accuracy", "answer_accuracy_full", "answer_retention", "judge_agreement"), math.nan)
    if answers is None or not len(answers):
        return row
    mine = answers[(answers["strategy"] == rp.strategy) & (answers["conversation"] == rp.conversation.id)]
    if len(mine):
        row["answer_accuracy"] = _mean(mine["context_correct"])
        row["answer_accuracy_full"] = _mean(mine["full_correct"])
        if "probe_id" in mine.columns:
            row["answer_retention"] = _mean(mine.loc[mine["probe_id"].isin(findable_ids), "context_correct"])
        if {"findable_full", "answer_in_context"} <= set(mine.columns):
            row["judge_agreement"] = judge_agreement(mine)["full"]
    return row


def _limit_text(limit: Any) -> str:
    return f"{limit.kind.replace('_', ' ')} {limit.tokens:,}"


def budget_fit(replay: Any, budget: int) -> tuple[bool, str]:
    """``(met, note)``: whether ``replay`` kept ``budget`` — its largest request at most
    `BUDGET_SLACK` (10%) above it — and, when the budget did not apply or was not met, why:

    ========================================  ==============================================
    the strategy declares no limit            "sends up to 23,843 — no budget knob" (met
                                              anyway: "no budget knob; sends up to 1,030,
                                              within 8,000")
    its limit is the budget, it cut nothing   "sends up to 23,843 — cut nothing at 8,000"
    its limit is the budget, it cut, but      "sends up to 19,167 — above 8,000 in 13 of 55
    sent more                                 requests"
    its limit is another number               "sends up to 165,839 — its limit is high water
                                              167,000, not 8,000" (when met: "its limit is
                                              high water 167,000, not 8,000")
    its limit is the budget and it was met    ""
    ========================================  ==============================================

    The slack admits the overshoot two kinds of strategy make by design (see the module
    doc): a reactive strategy's crossing request, an estimate's miss.
    """
    f = replay.requests
    n = len(f)
    if not n:
        return True, ""
    tokens = f["input_tokens"]
    peak = int(tokens.max())
    met = peak <= budget * (1 + BUDGET_SLACK)
    sends = f"sends up to {peak:,}"
    limit = replay.limit
    if limit is None:
        if met:
            within = "within" if peak <= budget else f"within {BUDGET_SLACK:.0%} of"
            return True, f"no budget knob; {sends}, {within} {budget:,}"
        return False, f"{sends} — no budget knob"
    if limit.tokens != budget:
        why = f"its limit is {_limit_text(limit)}, not {budget:,}"
        return met, why if met else f"{sends} — {why}"
    if met:
        return True, ""
    if not f["compacted"].any():
        return False, f"{sends} — cut nothing at {budget:,}"
    over = int((tokens > budget).sum())
    return False, f"{sends} — above {budget:,} in {over:,} of {n:,} requests"


def rank_at_budget(frame: Any, by: str = HEADLINE) -> Any:
    """The rows of a `compare` frame made with a ``budget``, best first within each
    conversation: those that kept the budget (``budget_met``) ranked by ``by`` (higher is
    better; ties broken by fewer tokens sent, and share a rank when both are equal), then
    those without a ``by`` value, then those that did not keep the budget — unranked, with
    their note. Adds ``rank`` (1 for the best; NaN when unranked) after ``strategy`` and
    ``unranked`` (why a row has no rank: its ``budget_note``, or "no <by> to rank by").
    """
    import pandas as pd

    if by not in frame.columns:
        raise EvaluationError(f"by must be one of {list(frame.columns)}, but {by!r} was passed")
    if "budget_met" not in frame.columns or frame["budget_met"].isna().any():
        raise EvaluationError("rank_at_budget needs a compare frame made at a budget: compare(replays, budget=N)")
    out = []
    for _, group in frame.groupby("conversation", sort=False):
        g = group.copy()
        met = g["budget_met"].astype(bool)
        value = pd.to_numeric(g[by], errors="coerce")
        ranked = met & value.notna()
        keys = pd.DataFrame({"v": -value[ranked], "t": g.loc[ranked, "input_tokens_sum"]})
        order = keys.sort_values(["v", "t"], kind="stable").index
        rank = pd.Series(math.nan, index=g.index)
        previous, r = None, 0
        for k, i in enumerate(order, start=1):
            key = (keys.at[i, "v"], keys.at[i, "t"])
            r = r if key == previous else k
            rank[i], previous = float(r), key
        g.insert(list(g.columns).index("strategy") + 1, "rank", rank)
        g["unranked"] = [
            "" if ok else (note if not m else f"no {by} to rank by")
            for ok, m, note in zip(ranked, met, g["budget_note"])
        ]
        tier = (~ranked).astype(int) + (~met).astype(int)  # 0 ranked, 1 no value, 2 not met
        g = g.assign(_tier=tier, _rank=rank.fillna(math.inf)).sort_values(["_tier", "_rank"], kind="stable")
        out.append(g.drop(columns=["_tier", "_rank"]))
    result = pd.concat(out) if out else frame.assign(rank=[], unranked=[])
    result.attrs.update(frame.attrs, ranked_by=by)
    return result.reset_index(drop=True)
