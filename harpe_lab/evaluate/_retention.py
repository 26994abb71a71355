"""Retention relative to the full history, per replay and probe category."""

from __future__ import annotations

import math
from typing import Any, Iterable

from ..conversation import Probe
from ._probes import _probe_frame, _probes

__all__ = ["RETENTION_COLUMNS", "retention"]


RETENTION_COLUMNS = (
    "conversation", "strategy", "category", "probes", "findable", "needs_judge", "known", "raw_retention",
    "retention", "verbatim", "only_in_summary", "lost", "denominator",
)  # fmt: skip


def _retention_rows(pr: Any, keys: dict[str, Any], category: str) -> dict[str, Any]:
    m = len(pr)
    findable = pr["findable_full"].fillna(False).astype(bool)
    n = int(findable.sum())
    known = pr["known"].fillna(False).astype(bool)
    counts = pr.loc[findable, "kept_as"].value_counts()
    share = (lambda k: float(counts.get(k, 0)) / n) if n else (lambda k: math.nan)
    return {
        **keys, "category": category, "probes": m, "findable": n, "needs_judge": m - n,
        "known": int(known.sum()), "raw_retention": float(known.mean()) if m else math.nan,
        "retention": float(known[findable].mean()) if n else math.nan,
        "verbatim": share("verbatim"), "only_in_summary": share("summary"), "lost": share("lost"),
        "denominator": f"{n} findable of {m} probes",
    }  # fmt: skip


def retention(replays: Any, probes: Iterable[Probe] | None = None, *, by_category: bool = True) -> Any:
    """Retention relative to the full history, per replay and (``by_category``) per probe
    category, with an ``"all"`` row first. Columns:

    ===============  =================================================================
    probes           probes judged (m)
    findable         probes whose answer is findable in the full history at their
                     request (n): the denominator
    needs_judge      m − n: not findable even in the full history; only a model judge
                     (`answer_probes`) can score them — never counted as lost
    known            probes whose evidence was sent verbatim or whose answer is
                     findable in the request (summary included)
    raw_retention    known / m
    retention        known / n over the findable probes: "of what the full history let
                     the model know, how much did this request still hold". 1.0 under
                     `FullContext` by construction
    verbatim,        shares of the n findable probes kept word for word (evidence or
    only_in_summary, answer in a sent message), found only in the summary, or lost;
    lost             they add up to 1 and retention = verbatim + only_in_summary
    denominator      ``"n findable of m probes"``, to print beside the number
    ===============  =================================================================

    ``replays`` is one replay or several; ``probes`` as in `probe_retention`.
    """
    import pandas as pd

    if not isinstance(replays, (list, tuple)) and hasattr(replays, "conversation"):
        replays = [replays]
    fixed = None if probes is None else list(probes)
    rows = []
    full: dict = {}
    for rp in replays:
        ps = _probes(rp, fixed)
        pr = _probe_frame(rp, ps, full)
        keys = {"conversation": rp.conversation.id, "strategy": rp.strategy}
        rows.append(_retention_rows(pr, keys, "all"))
        if by_category:
            for cat in sorted(set(pr["category"])):
                rows.append(_retention_rows(pr[pr["category"] == cat], keys, cat))
    return pd.DataFrame(rows, columns=list(RETENTION_COLUMNS))

