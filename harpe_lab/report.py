"""A static HTML report, and what every view shares: the glossary and one number format.

`GLOSSARY` defines each count once; ``docs/glossary.md`` holds the same table
(`glossary_markdown`, checked by a test), the report ends with it, and the widgets use it as
tooltips. `format_value` is the one number format: tokens and counts with thousands
separators, shares as percentages with one decimal, costs in dollars with four decimals,
missing values as "–". `totals_table` turns replays into the rows every table shows, all
from `harpe_lab.replay.totals` of each frame; `limit_table` lists the replays that went over
their declared limit, and how often.

Every piece of transcript-derived text goes through `harpe_lab.redact` (secrets become
markers, unless the report is written with ``redact=False``) and then ``html.escape``. The report is one
``index.html`` with PNG files beside it; its tables wrap to the page width (1,280 px screens
included) instead of scrolling.
"""

from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .evaluate import COMPARE_MEANINGS

__all__ = [
    "ReportSection",
    "write_report",
    "GLOSSARY",
    "COLUMN_LABELS",
    "glossary_markdown",
    "glossary_html",
    "format_value",
    "format_frame",
    "table_html",
    "totals_row",
    "totals_table",
    "RETENTION_SHOWN",
    "retention_by_category",
    "limit_table",
    "limit_sentence",
    "RANKING_SHOWN",
    "ranking_table",
    "compactions_table",
    "compare_columns_markdown",
]

GLOSSARY: tuple[tuple[str, str], ...] = (
    ("request", "One model call. A turn makes one request per assistant reply; the replay builds each request "
                "as the strategy would have sent it."),
    ("input_tokens", "Tokens of the whole request as the replay's counter prices them: system prompt, tool "
                     "schemas, every message and the chat overhead. Tokens sent = their sum over all requests; "
                     "largest request = their maximum."),
    ("system_tokens", "Component of input_tokens: the base system prompt, the tool schemas and the reply priming."),
    ("summary_tokens", "Component of input_tokens: summary text, in the system prompt or in messages the strategy "
                       "made up."),
    ("history_tokens", "Component of input_tokens: original messages of earlier turns."),
    ("turn_tokens", "Component of input_tokens: original messages of the current turn. The four components add "
                    "up to input_tokens."),
    ("compacted", "The request is not the previous request plus the new messages: the strategy removed or "
                  "replaced something it had sent (a cut, a new summary, a changed system prompt). Compactions = "
                  "the number of compacted requests; a ▼ marker in the plots."),
    ("summarized", "A summary was produced before this request (the strategy folded messages into it). "
                   "Usually the same request is compacted; not when the fold changed nothing the provider had "
                   "received. Summaries = the number of summarized requests; a ○ marker in the plots."),
    ("messages_dropped", "Messages the full history held at this request that the request did not carry "
                         "verbatim (summarized or left out). Most dropped = the maximum over the requests."),
    ("overshoot_tokens", "Input tokens above the strategy's declared limit, whatever its kind: a budget (a "
                         "promise the engine enforces), a high water (compact after the provider reports more), "
                         "a target (aimed at by an estimate). 0 for a strategy that declares no limit. "
                         "Overshoots = requests with overshoot_tokens above 0; worst overshoot = the maximum."),
    ("refused", "The strategy raised instead of replaying (a budget it cannot keep, say): it has no row in the "
                "tables, only its error."),
    ("distill_calls", "Calls the strategy made to its distiller (the summarizer) while preparing the request. "
                      "Distill tokens = their input plus output tokens."),
    ("cached_prefix_tokens", "Tokens of the longest prefix the request shares with the previous one, which a "
                             "provider's prompt cache can serve. Cached prefix = their sum over all requests as a "
                             "share of tokens sent."),
    ("cost_usd", "Price of the request without prompt caching: input tokens, reply and distill tokens at the "
                 "model's prices. Missing (–) when no pricing was given."),
    ("cache_read_tokens", "Of input_tokens, the tokens the provider serves from its prompt cache, by its rule "
                          "(harpe_lab.models.PromptCache): what it held from the previous request — all of it when "
                          "the request extends it; after a change, only the system prompt and tools on Anthropic, "
                          "the shared prefix in 128-token steps on OpenAI — and nothing below the provider's minimum "
                          "or when the recorded time since the previous request exceeds its TTL. 0 without pricing. "
                          "Cache reads = their sum over all requests."),
    ("cache_write_tokens", "Of input_tokens, the tokens the provider charges as a cache write: on Anthropic all "
                           "that was not read (1.25× the input price, 2× for the one-hour cache); 0 where writes "
                           "are not charged (OpenAI) and below the minimum. Cache writes = their sum over all "
                           "requests."),
    ("cost_usd_cached", "Price of the request with prompt caching: cache_read_tokens at the cache-read price, "
                        "cache_write_tokens at the cache-write price, the rest of the input at the input price, "
                        "the reply and distill calls as in cost_usd."),
    ("distill_cost_usd", "The distill calls' part of cost_usd and cost_usd_cached: their input and output tokens "
                         "at the model's prices, never cached. Distill cost = their sum over all requests."),
    ("retention", "Of the probes (questions about the conversation) whose answer the full history holds — "
                  "findable by the offline matcher in what FullContext sends — the share the strategy's request "
                  "still holds: evidence sent verbatim, or the answer findable in what was sent, summary included. "
                  "1.0 under FullContext by construction. Shown with its denominator, n findable of m probes."),
    ("verbatim", "Share of the findable probes kept word for word; only in summary = found only in the summary; "
                 "lost = neither. The three add up to 1, and retention = verbatim + only in summary."),
    ("needs_judge", "Probes whose answer is not findable even in the full history (a judgement, a count, a "
                    "date difference): only a model judge (answer_probes) can score them; never counted as lost."),
    ("artifact_retention", "Share of the full history's artifacts (file paths, commands, numbers, URLs, identifiers, decisions) that the last request "
                           "still holds, in its messages or its summary."),
    ("budget_met", COMPARE_MEANINGS["budget_met"]),
    ("rank", "Place in the ranking at a budget by retention, among the strategies that kept the budget (budget_met): "
             "1 for the best; equal retention goes to fewer tokens sent, and equal both share a rank."),
)
"""Each count or column, defined once: (name, definition)."""

_ALL_SURFACES = ("Every surface uses these definitions: the request frame (`Replay.requests`), "
                 "`harpe_lab.replay.totals`, the Explorer's labels and table, the Compare table, the plots' "
                 "markers and the report.")  # fmt: skip

COLUMN_LABELS: dict[str, str] = {
    "strategy": "strategy",
    "requests": "requests",
    "input_tokens_sum": "tokens sent",
    "input_tokens_median": "median request",
    "input_tokens_p90": "90th pct request",
    "input_tokens_max": "largest request",
    "compactions": "compactions",
    "summaries": "summaries",
    "overshoots": "overshoots",
    "overshoot_tokens_max": "worst overshoot",
    "messages_dropped_max": "most dropped",
    "distill_calls": "distill calls",
    "distill_tokens": "distill tokens",
    "cached_prefix_share": "cached prefix",
    "probe_retention": "probe retention",
    "retention": "retention",
    "retention_denominator": "of",
    "verbatim": "verbatim",
    "only_in_summary": "only in summary",
    "lost": "lost",
    "needs_judge": "need a judge",
    "artifact_retention": "artifact retention",
    "cost_usd": "cost",
    "cost_usd_cached": "cost with cache",
    "cache_read_tokens_sum": "cache reads",
    "cache_write_tokens_sum": "cache writes",
    "distill_cost_usd": "distill cost",
    "limit": "limit",
    "overshoot_share": "share of requests",
    "error": "error",
    "rank": "rank",
    "budget_note": "why not ranked",
    "compacted_at": "compacted at request",
    "against_recorded": "against the recorded",
    "cost_usd_cached_before": "cost with cache before it",
}
"""Table headers, by column."""

_SHARES = {"cached_prefix_share", "probe_retention", "artifact_retention", "answer_in_summary", "raw_retention",
           "retention", "overshoot_share", "answer_accuracy", "answer_accuracy_full", "answer_retention",
           "verbatim", "only_in_summary", "lost", "judge_agreement", "needs_kept_share", "instructions_kept_share",
           "instructions_verbatim_share", "cache_hit_share"}  # fmt: skip


_TEXT = {"error", "limit", "budget_note", "compacted_at", "against_recorded", "lost_example"}
"""Columns of free text: wrapped anywhere, left-aligned."""


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_value(column: str, value: Any) -> str:
    """``value`` of ``column`` in the one format every view uses: ``12,345`` (tokens,
    counts), ``45.3%`` (shares), ``$0.0123`` (costs), ``–`` (missing); text as is."""
    if _is_missing(value):
        return "–"
    if isinstance(value, str):
        return value
    if not isinstance(value, (int, float)) and hasattr(value, "item"):
        value = value.item()  # a numpy scalar
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, (int, float)):
        return str(value)
    if column.endswith("_usd") or column.endswith("_usd_cached") or column.startswith("cost"):
        return f"${value:,.4f}"
    if column in _SHARES or column.startswith("artifacts_"):
        return f"{value * 100:.1f}%"
    return f"{int(round(value)):,}"


def format_frame(frame: Any, columns: Sequence[str] | None = None) -> Any:
    """A copy of ``frame`` (only ``columns``, in that order) as formatted strings, headed by
    `COLUMN_LABELS`."""
    cols = [c for c in (columns or list(frame.columns)) if c in frame.columns]
    out = frame[cols].copy().astype(object)
    for c in cols:
        out[c] = [format_value(c, v) for v in frame[c]]
    return out.rename(columns={c: COLUMN_LABELS.get(c, c.replace("_", " ")) for c in cols})


def table_html(frame: Any, columns: Sequence[str] | None = None, *, classes: str = "harpe-table",
               span: str | None = None, clean: Callable[[str], str] = str,
               flagged: frozenset[str] = frozenset()) -> str:
    """``frame`` as an escaped HTML table in the shared number format; each header carries
    its glossary definition as a tooltip when it has one. A row whose ``span`` column holds
    text (an error, say) shows that text across every column after the first instead of its
    values; ``span`` is not a column of its own. ``clean`` is applied to every cell's text
    before it is escaped (the report's redaction); a cell whose text is in ``flagged`` is
    shown in red."""
    cols = [c for c in (columns or list(frame.columns)) if c in frame.columns and c != span]
    shown = format_frame(frame, cols)
    defs = dict(GLOSSARY)
    alias = {"compactions": "compacted", "summaries": "summarized", "overshoots": "overshoot_tokens",
             "overshoot_tokens_max": "overshoot_tokens", "input_tokens_sum": "input_tokens",
             "input_tokens_median": "input_tokens", "input_tokens_p90": "input_tokens", "input_tokens_max": "input_tokens",
             "messages_dropped_max": "messages_dropped", "distill_tokens": "distill_calls",
             "cached_prefix_share": "cached_prefix_tokens", "error": "refused",
             "cache_read_tokens_sum": "cache_read_tokens", "cache_write_tokens_sum": "cache_write_tokens",
             "budget_note": "budget_met", "compacted_at": "compacted", "against_recorded": "compacted",
             "cost_usd_cached_before": "cost_usd_cached"}  # fmt: skip
    head = []
    for c, label in zip(cols, shown.columns):
        tip = defs.get(alias.get(c, c))
        title = f" title='{html.escape(tip, quote=True)}'" if tip else ""
        head.append(f"<th data-column='{html.escape(c, quote=True)}'{title}>{html.escape(str(label))}</th>")
    rows = []
    spans = list(frame[span]) if span is not None and span in frame.columns else [None] * len(shown)
    for (_, row), text in zip(shown.iterrows(), spans):
        if isinstance(text, str) and text:
            cells = _cell(cols[0], clean(str(row.iloc[0]))) + (f"<td class='text span' colspan='{len(cols) - 1}'>"
                                                              f"{html.escape(clean(text))}</td>")  # fmt: skip
        else:
            cells = "".join(_cell(c, clean(str(v)), str(v).split(" (")[0] in flagged) for c, v in zip(cols, row))
        rows.append(f"<tr>{cells}</tr>")
    return (f"<table class='{html.escape(classes, quote=True)}'><thead><tr>{''.join(head)}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")  # fmt: skip


def _cell(column: str, text: Any, flagged: bool = False) -> str:
    """One escaped cell; a strategy label may break after its ``@``, free text anywhere."""
    body = html.escape(str(text))
    if flagged:
        return f"<td class='loss'>{body}</td>"
    if column == "strategy":
        return f"<td>{body.replace('@', '@<wbr>')}</td>"
    if column in _TEXT:
        return f"<td class='text'>{body}</td>"
    if column not in COLUMN_LABELS:  # e.g. a probe category: short, may wrap at its spaces
        return f"<td class='free'>{body}</td>"
    return f"<td>{body}</td>"


def glossary_markdown() -> str:
    """The glossary as the Markdown table ``docs/glossary.md`` holds."""
    lines = ["| name | meaning |", "| --- | --- |"]
    lines += [f"| `{name}` | {text} |" for name, text in GLOSSARY]
    return "\n".join(lines) + "\n\n" + _ALL_SURFACES + "\n"


def compare_columns_markdown() -> str:
    """`harpe_lab.evaluate.compare`'s columns (`COMPARE_MEANINGS`) as the Markdown table
    ``docs/glossary.md`` holds, with which retention figure is the headline."""
    from .evaluate import COMPARE_MEANINGS, HEADLINE

    lines = [f"`compare(replays)` returns one row per replay; `frame.attrs[\"columns\"]` holds this table "
             f"and `frame.attrs[\"headline\"]` is `\"{HEADLINE}\"`: quote and rank by it. `raw_retention` and "
             "`probe_retention` are secondary: the first divides by every probe, even those the full history "
             "cannot answer offline; the second credits only evidence sent word for word.", "",
             "| column | meaning |", "| --- | --- |"]  # fmt: skip
    lines += [f"| `{name}` | {text} |" for name, text in COMPARE_MEANINGS.items()]
    return "\n".join(lines) + "\n"


def glossary_html() -> str:
    """The glossary as an HTML definition list (the report's last section)."""
    items = "".join(f"<dt><code>{html.escape(n)}</code></dt><dd>{html.escape(t)}</dd>" for n, t in GLOSSARY)
    note = re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(_ALL_SURFACES))
    return f"<dl class='glossary'>{items}</dl><p class='note'>{note}</p>"


# --- rows from replays ------------------------------------------------------------------------


def totals_row(label: str, replay: Any) -> dict[str, Any]:
    """``{"strategy": label, **totals(replay.requests)}``: the numbers a table shows for one
    replay, computed from its frame."""
    from .replay import totals

    return {"strategy": label, **totals(replay.requests)}


def totals_table(replays: Mapping[str, Any], retention: Any = None) -> Any:
    """One row per replay (label → Replay) from `totals_row`; ``retention`` (the
    `harpe_lab.evaluate.compare` frame of the same replays, in the same order) adds its
    retention columns (`RETENTION_SHOWN`)."""
    import pandas as pd

    frame = pd.DataFrame([totals_row(label, r) for label, r in replays.items()])
    if retention is not None and len(retention) == len(frame):
        for c in RETENTION_SHOWN:
            if c in retention.columns:
                frame[c] = list(retention[c])
    return frame


RETENTION_SHOWN = ("retention", "retention_denominator", "verbatim", "only_in_summary", "lost", "needs_judge",
                   "probe_retention", "artifact_retention")
"""The columns of `harpe_lab.evaluate.compare` the tables show."""


def retention_by_category(frame: Any) -> Any:
    """`harpe_lab.evaluate.retention`'s frame as one row per strategy and one column per
    probe category (``all`` first), each cell "45.3% (5 of 7)": retention with its
    denominator; "–" where no probe of the category is findable."""
    import pandas as pd

    rows: dict[str, dict[str, str]] = {}
    for _, r in frame.iterrows():
        n = r["findable"]
        # retention is over the findable probes only (known counts the others too)
        cell = "–" if not n else f"{format_value('retention', r['retention'])} ({round(r['retention'] * n)} of {n})"
        rows.setdefault(r["strategy"], {})[r["category"]] = cell
    table = pd.DataFrame.from_dict(rows, orient="index").fillna("–")
    table.index.name = "strategy"
    return table.reset_index()


def _limit_text(limit: Any) -> str:
    kind = {"high_water": "high water", "budget": "budget", "target": "target"}.get(limit.kind, limit.kind)
    return f"{kind} {limit.tokens:,}"


def limit_table(replays: Mapping[str, Any]) -> Any:
    """The replays that went over their declared limit: ``strategy, limit, overshoots,
    requests, overshoot_share, overshoot_tokens_max``, most frequent first."""
    import pandas as pd

    rows = []
    for label, r in replays.items():
        if r.limit is None:
            continue
        t = totals_row(label, r)
        if t.get("overshoots", 0) > 0:
            rows.append({"strategy": label, "limit": _limit_text(r.limit), "overshoots": t["overshoots"],
                         "requests": t["requests"], "overshoot_share": t["overshoots"] / t["requests"],
                         "overshoot_tokens_max": t["overshoot_tokens_max"]})  # fmt: skip
    columns = ["strategy", "limit", "overshoots", "requests", "overshoot_share", "overshoot_tokens_max"]
    frame = pd.DataFrame(rows, columns=columns)
    return frame.sort_values(["overshoot_share", "strategy"], ascending=[False, True], kind="stable").reset_index(drop=True)


def limit_sentence(row: Mapping[str, Any]) -> str:
    """One `limit_table` row as a sentence: "summarizing@5300 overshoots its high water
    5,300 in 99 of 185 requests (53.5%), by up to 961 tokens"."""
    return (f"{row['strategy']} overshoots its {row['limit']} in {format_value('overshoots', row['overshoots'])} "
            f"of {format_value('requests', row['requests'])} requests "
            f"({format_value('overshoot_share', row['overshoot_share'])}), by up to "
            f"{format_value('overshoot_tokens_max', row['overshoot_tokens_max'])} tokens")  # fmt: skip


RANKING_SHOWN = ("strategy", "rank", "retention", "retention_denominator", "input_tokens_max", "input_tokens_sum")
"""The columns `ranking_table` shows (the ranked-by figure in place of ``retention``)."""


def ranking_table(ranked: Any) -> Any:
    """`harpe_lab.evaluate.rank_at_budget`'s frame as the report shows it: `RANKING_SHOWN`
    (the figure it ranked by in place of ``retention``, its denominator only for the
    retention figures) and ``budget_note`` — the text `write_report` spreads across an
    unranked row (pass ``"budget_note"`` as the table's span)."""
    by = ranked.attrs.get("ranked_by", "retention")
    columns = [by if c == "retention" else c for c in RANKING_SHOWN]
    if "retention" not in by:
        columns.remove("retention_denominator")
    out = ranked[[c for c in columns if c in ranked.columns]].copy()
    out["budget_note"] = list(ranked["unranked"])
    return out


def _requests_text(requests: Sequence[int], shown: int = 8) -> str:
    if not len(requests):
        return "none"
    more = f", … ({len(requests) - shown:,} more)" if len(requests) > shown else ""
    return ", ".join(f"{r:,}" for r in requests[:shown]) + more


def compactions_table(replays: Mapping[str, Any], recorded: Any) -> Any:
    """What the recording's agent did beside what each replay (label → Replay) would have
    done. The first row is the recording itself (``recorded``); then one row per replay:
    ``compactions`` (compacted requests), ``compacted_at`` (their request numbers, the
    first eight), ``against_recorded`` (the k-th recorded compaction against the k-th
    replayed one, and how many requests later: "103 → 104 (+1)"; for the recording, its
    trigger and its tokens before and after) and ``cost_usd_cached_before``: the cost with
    caching of the requests before the first recorded compaction — where the recorded and
    the replayed histories part — or of every request when nothing was recorded compacting.
    ``recorded`` is `harpe_lab.recorded.recorded` of the conversation (or
    `Measure.recorded`); requests are numbered alike in both."""
    import pandas as pd

    points = list(recorded.compactions)
    rec_cost = recorded.against(next(iter(replays.values())).requests)[1] if replays else math.nan
    sizes = [f"{c.trigger + ' ' if c.trigger else ''}{_tokens_text(c.tokens_before)} → "
             f"{_tokens_text(c.tokens_after)} tokens" for c in points]  # fmt: skip
    rows = [{"strategy": "recorded", "compactions": len(points),
             "compacted_at": _requests_text([c.request for c in points]),
             "against_recorded": "; ".join(sizes) or "none", "cost_usd_cached_before": float(rec_cost)}]  # fmt: skip
    for label, r in replays.items():
        f = r.requests
        done = [int(i) for i in f.loc[f["compacted"], "request"]]
        # the k-th recorded compaction against the k-th replayed one
        near = [f"{c.request:,} → none" if k >= len(done)
                else f"{c.request:,} → {done[k]:,} ({done[k] - c.request:+,})" for k, c in enumerate(points)]  # fmt: skip
        before = recorded.against(f)[0]
        rows.append({"strategy": label, "compactions": len(done), "compacted_at": _requests_text(done),
                     "against_recorded": "; ".join(near) or "–", "cost_usd_cached_before": before})
    return pd.DataFrame(rows, columns=["strategy", "compactions", "compacted_at", "against_recorded",
                                       "cost_usd_cached_before"])  # fmt: skip


def _tokens_text(tokens: int | None) -> str:
    return "?" if not tokens else f"{tokens:,}"


# --- the page --------------------------------------------------------------------------------

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
h1, h2, h3, p, li, figcaption { overflow-wrap: anywhere; }
.table { max-width: 100%; overflow-x: auto; }  /* a wide table scrolls in its box, never the page */
table { border-collapse: collapse; font-size: 0.82rem; margin: 1rem 0; max-width: 100%; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.45rem; text-align: right; }
th { background: #f4f4f4; vertical-align: bottom; font-weight: 600; }
td { font-variant-numeric: tabular-nums; }
td:first-child, th:first-child { text-align: left; }
td.text { text-align: left; overflow-wrap: anywhere; min-width: 12rem; }
td.free { text-align: left; }
td.loss { color: #b00020; font-weight: 600; text-align: left; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5rem 0; }
.note { color: #555; font-size: 0.9rem; }
ul.limits li { margin: 0.2rem 0; }
dl.glossary dt { font-weight: bold; margin-top: 0.6rem; } dl.glossary dd { margin-left: 1.5rem; }
"""


@dataclass
class ReportSection:
    """One part of the report."""

    title: str
    description: str = ""
    tables: list[tuple[Any, ...]] = field(default_factory=list)
    """(caption, DataFrame) pairs, shown in the shared number format (`format_frame`); a
    third item names a column of text shown across the row instead of its values where it
    is not empty (`table_html`'s ``span``)."""
    images: list[tuple[str, str]] = field(default_factory=list)
    """(caption, file name relative to the report folder) pairs."""
    bullets: list[tuple[str, list[str]]] = field(default_factory=list)
    """(caption, lines of text) pairs, shown as lists."""
    folded: bool = False
    """Shown closed (a ``<details>``), for the long lists a reader opens when needed."""
    flagged: frozenset[str] = frozenset()
    """Cell texts shown in red in this section's tables (e.g. an outcome that loses history)."""


def write_report(folder: str | Path, title: str, sections: Sequence[ReportSection], *, intro: str = "",
                 glossary: bool = True, redact: bool = True) -> Path:
    """Write ``index.html`` into ``folder`` and return its path; with ``glossary`` (the
    default) the page ends with `GLOSSARY`. With ``redact`` (the default) every text the
    page shows passes through `harpe_lab.redact.Redactor` first — secrets become ``[redacted
    <kind>, <N> chars]`` — and a line under the title says how many values were redacted, by
    kind ("redaction off" without it). Nothing on the page is loaded from the network."""
    from .redact import Redactor

    tally = Redactor(enabled=redact).tally()

    def esc(text: Any, quote: bool = False) -> str:
        return html.escape(tally(str(text)), quote=quote)

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    body = []
    if intro:
        body.append(f"<p class='note'>{esc(intro)}</p>")
    for s in sections:
        if s.folded:
            body.append(f"<details><summary><h2 style='display:inline'>{esc(s.title)}</h2></summary>")
        else:
            body.append(f"<h2>{esc(s.title)}</h2>")
        if s.description:
            body.append(f"<p class='note'>{esc(s.description)}</p>")
        for caption, lines in s.bullets:
            body.append(f"<h3>{esc(caption)}</h3>")
            items = "".join(f"<li>{esc(line)}</li>" for line in lines)
            body.append(f"<ul class='limits'>{items}</ul>")
        for caption, frame, *span in s.tables:
            body.append(f"<h3>{esc(caption)}</h3>")
            body.append(f"<div class='table'>{table_html(frame, span=span[0] if span else None, clean=tally, flagged=s.flagged)}</div>")
        for caption, name in s.images:
            body.append(
                f"<figure><img src='{html.escape(name, quote=True)}' alt='{esc(caption, quote=True)}'>"
                f"<figcaption>{esc(caption)}</figcaption></figure>"
            )
        if s.folded:
            body.append("</details>")
    if glossary:
        body.append("<h2 id='glossary'>Glossary</h2>")
        body.append(glossary_html())
    redaction = (tally.header() if redact else
                 "redaction off: secrets in the sessions' text are shown as they are (written with --no-redact)")
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f"<p class='note' id='redaction'>Secrets: {html.escape(redaction)}.</p>",
        *body,
        "</body></html>",
    ]
    path = folder / "index.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
