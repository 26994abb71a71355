"""How a request and its numbers look as HTML: every piece of transcript text escaped."""

from __future__ import annotations

import html
from typing import Any, Mapping

from ..errors import HarpeLabError
from .._text import message_parts
from ..messages import Message

__all__ = ["render_request_html"]


_MAX_SHOWN_SENT = 60  # the request view lists at most this many verbatim messages
_SNIPPET = 600  # characters of each message shown in the request view

_CSS = """
<style>
.harpe-request { font: 12px/1.35 ui-monospace, SFMono-Regular, Menlo, monospace; max-height: 420px;
  overflow-y: auto; border: 1px solid #ddd; padding: 6px; background: #fcfcfc; }
.harpe-request .msg { margin: 3px 0; padding: 3px 6px; border-left: 4px solid #2e7d32; white-space: pre-wrap;
  word-break: break-word; }
.harpe-request .msg.summarized { border-color: #f2a541; color: #8a6d3b; }
.harpe-request .msg.dropped { border-color: #c62828; color: #999; text-decoration: line-through; }
.harpe-request .msg.system, .harpe-request .msg.synthetic { border-color: #8e6cc4; }
.harpe-request .tag { font-weight: bold; margin-right: 6px; }
.harpe-summary { line-height: 1.35; }
.harpe-summary td, .harpe-summary th { padding: 1px 8px; text-align: right; line-height: 1.35; }
.harpe-compare-table td:first-child, .harpe-compare-table th:first-child { text-align: left; }
.harpe-compare-table td.span { text-align: left; color: #8e1b1b; white-space: normal; }
.harpe-measure { font: 12px/1.4 system-ui, sans-serif; color: #444; margin: 2px 0 6px; }
.harpe-measure div { white-space: normal; overflow-wrap: anywhere; }
.harpe-measure .note { color: #8a6d3b; }
.harpe-message { font: 13px/1.4 system-ui, sans-serif; color: #8a4b00; background: #fff4e0;
  border-left: 4px solid #f2a541; padding: 4px 8px; margin: 4px 0; white-space: normal; }
.harpe-error-box { border: 1px solid #c62828; background: #fdecea; color: #8e1b1b; padding: 10px 12px;
  font: 13px/1.4 system-ui, sans-serif; white-space: pre-wrap; word-break: break-word; }
</style>
"""


_SHOWN = {"text": "{}", "call": "→ {}", "result": "{}", "failed": "[failed] {}"}


def _shown_text(message: Message) -> str:
    """A message as the request view shows it: its parts (`harpe_lab._text.message_parts`),
    calls marked ``→``, failed results ``[failed]``. Not escaped."""
    return "\n".join(_SHOWN[kind].format(text) for kind, text in message_parts(message))


def _role(message: Message) -> str:
    return {"user": "user", "assistant": "assistant", "tool_results": "tool"}.get(getattr(message, "role", ""), "?")


def _cut(text: str, limit: int = _SNIPPET) -> str:
    if len(text) <= limit:
        return html.escape(text)
    return html.escape(text[:limit]) + f" <i>… ({len(text) - limit:,} more characters)</i>"


def render_request_html(replay: Any, i: int, *, redact: bool = True) -> str:
    """Request ``i`` of ``replay`` as HTML: the system prompt (with any summary), then every
    message the full history held, marked sent, summarized or dropped. Runs of messages
    that were not sent collapse to one line; all transcript text is escaped, after its
    secrets are redacted (`harpe_lab.redact`; ``redact=False`` shows them, and says so)."""
    from ..redact import Redactor

    if not 0 <= i < len(replay):
        raise HarpeLabError(f"`request` must be in 0..{len(replay) - 1}, but {i!r} was passed.")
    tally = Redactor(enabled=redact).tally()

    def _snippet(text: str, limit: int = _SNIPPET) -> str:  # redacted whole, then cut: no secret cut in half
        return _cut(tally(text), limit)

    conversation = replay.conversation
    by_id = {mid: m for t in conversation.turns for m, mid in zip(t.all_messages, t.ids)}
    rendered = replay.rendered(i)
    kept = replay.kept(i)
    original = {id(m) for m in by_id.values()}
    parts = [_CSS, '<div class="harpe-request">']
    parts.append(f'<div class="msg system"><span class="tag">system</span>{_snippet(rendered.system, 1200)}</div>')
    synthetic = [m for m in rendered.messages if id(m) not in original]
    for m in synthetic:
        parts.append(f'<div class="msg synthetic"><span class="tag">synthetic {_role(m)}</span>'
                     f"{_snippet(_shown_text(m))}</div>")  # fmt: skip
    items = list(kept.items())
    sent_total = sum(state == "sent" for _, state in items)
    skip_sent = max(0, sent_total - _MAX_SHOWN_SENT)  # the oldest sent ones collapse too
    run: list[str] = []
    run_state = ""

    def flush() -> None:
        if not run:
            return
        first, last = html.escape(run[0]), html.escape(run[-1])
        span = first if len(run) == 1 else f"{first} … {last}"
        css, tag = ("sent", "sent, not listed") if run_state == "hidden" else (run_state, run_state)
        parts.append(f'<div class="msg {css}"><span class="tag">{tag}</span>'
                     f"{len(run)} message{'s' * (len(run) != 1)} ({span})</div>")  # fmt: skip
        run.clear()

    seen_sent = 0
    for mid, state in items:
        if state == "sent":
            seen_sent += 1
            if seen_sent > skip_sent:
                flush()
                m = by_id[mid]
                parts.append(f'<div class="msg sent"><span class="tag">{_role(m)} {html.escape(mid)}</span>'
                             f"{_snippet(_shown_text(m))}</div>")  # fmt: skip
                continue
            state = "hidden"
        if run and run_state != state:
            flush()
        run_state = state
        run.append(mid)
    flush()
    note = tally.header() if redact else "redaction off: secrets are shown as they are"
    parts.append(f'<div class="note">secrets: {html.escape(note)}</div></div>')
    return "".join(parts)


_STAT_ROWS = (("requests", "requests"), ("input_tokens_sum", "tokens sent"), ("input_tokens_max", "largest request"),
              ("compactions", "compactions"), ("summaries", "summaries"), ("overshoots", "overshoots"),
              ("overshoot_tokens_max", "worst overshoot"), ("distill_calls", "distill calls"),
              ("cached_prefix_share", "cached prefix"), ("cost_usd_cached", "cost with caching"),
              ("cost_usd", "cost without caching"))  # fmt: skip
_COUNTS = ("compactions", "summaries", "overshoots")
"""The counts the Explorer's header shows, next to its stats table."""


def _summary_html(totals: Mapping[str, Any]) -> str:
    """The stats table: one row per `_STAT_ROWS` key (``data-key``), in the shared format."""
    from ..report import format_value

    cells = "".join(f"<tr data-key='{k}'><th>{html.escape(label)}</th><td>{html.escape(format_value(k, totals.get(k)))}</td></tr>"
                    for k, label in _STAT_ROWS)  # fmt: skip
    return f'{_CSS}<table class="harpe-summary">{cells}</table>'


def _error_html(what: str, exc: BaseException) -> str:
    return (f"{_CSS}<div class='harpe-error-box'><b>{html.escape(what)}</b><br>"
            f"{html.escape(type(exc).__name__)}: {html.escape(str(exc))}</div>")  # fmt: skip


def _measure_html(lines: list[str]) -> str:
    """The header lines of a `harpe_lab.measure.Measure` (what counter, what prices, what the
    recording says happened), one ``div`` each, escaped; warnings and notes stand out."""
    facts = ("counter", "prices", "recorded")
    rows = "".join(f"<div>{html.escape(line)}</div>" if line.startswith(facts)
                   else f"<div class='note'>{html.escape(line)}</div>" for line in lines)  # fmt: skip
    return f"{_CSS}<div class='harpe-measure'>{rows}</div>"


def _message_html(text: str) -> str:
    """A message to the person at the controls (a typed value out of range, say), escaped;
    empty when there is nothing to say."""
    return f"{_CSS}<div class='harpe-message'>{html.escape(text)}</div>" if text else ""


_COMPARE_SHOWN = (
    # (frame column, header, which way is better: the best value is marked in bold)
    ("input_tokens_sum", "tokens sent", "lower"),
    ("input_tokens_max", "largest request", None),
    ("compactions", "compac\u00adtions", None),  # a soft hyphen: the longest header word may break
    ("overshoots", "over its limit", None),
    ("cached_prefix_share", "cached prefix", None),
    ("cost_usd_cached", "cost with caching", "lower"),
    ("retention", "retention", "higher"),
    ("needs_kept_share", "needed next", "higher"),
    ("artifact_retention", "artifacts kept", "higher"),
)
"""The Compare table's columns after the strategy (and the budget note); ``retention`` is
the frame's headline retention (``attrs["headline"]``); ``needs_kept_share`` is shown only
when the recorded replies name something seen earlier (``needs`` above 0)."""

_TIP_ALIASES = {"input_tokens_sum": "input_tokens", "input_tokens_max": "input_tokens", "compactions": "compacted",
                "overshoots": "overshoot_tokens", "cached_prefix_share": "cached_prefix_tokens"}  # fmt: skip

_COMPARE_CSS = """
<style>
.widget-html.harpe-compare-table > .widget-html-content { min-width: 0; max-width: 100%; }
.harpe-compare-scroll { max-width: 100%; overflow-x: auto; }
.harpe-compare-table { border-collapse: collapse; font: 12px/1.35 system-ui, sans-serif; }
.harpe-compare-table th { white-space: normal; vertical-align: bottom; max-width: 7.5em;
  border-bottom: 1px solid #ccc; }
.harpe-compare-table td { white-space: nowrap; }
.harpe-compare-table td:first-child { white-space: normal; min-width: 6em; }
.harpe-summary.harpe-compare-table td, .harpe-summary.harpe-compare-table th { padding: 1px 5px; }
.harpe-compare-table td.note, .harpe-compare-table th[data-column="budget_note"] { text-align: left; }
.harpe-compare-table td.note { white-space: normal; min-width: 12em; max-width: 16em; color: #8a4b00; }
.harpe-compare-table td.best { font-weight: bold; background: #e8f5e9; }
</style>
"""


def _best_rows(frame: Any, column: str, better: str, eligible: Any) -> set[int]:
    """The positions of the rows holding the best ``column`` value among ``eligible`` ones
    (ties all marked); none unless at least two eligible rows have a value."""
    import pandas as pd

    values = pd.to_numeric(frame[column], errors="coerce").where(eligible)
    if values.notna().sum() < 2:
        return set()
    best = values.min() if better == "lower" else values.max()
    if values.min() == values.max():
        return set()  # all equal: nothing stands out
    return {k for k, v in enumerate(values) if v == best}


def _denominator(row: Mapping[str, Any]) -> tuple[int, int] | None:
    """``(findable, probes)`` of a compare row, None when it has no such columns."""
    probes, findable = row.get("probes"), row.get("findable")
    if probes is None or findable is None or _missing(probes) or _missing(findable):
        return None
    return int(findable), int(probes)


def _retention_text(row: Mapping[str, Any], column: str, in_header: bool) -> str:
    """The headline retention with its denominator (unless ``in_header`` shows it once for
    every row), or why there is none: "no probes", "none findable of m"."""
    from ..report import format_value

    shares = _denominator(row)
    if shares is not None and shares[1] == 0:
        return "no probes"
    if shares is not None and shares[0] == 0:
        return f"none findable of {shares[1]:,}"
    text = format_value(column, row.get(column))
    if shares is not None and not in_header:
        text += f" ({shares[0]:,} of {shares[1]:,})"
    return text


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and value != value)


def _needs(row: Mapping[str, Any]) -> int:
    """The needed-next references of a compare row (0 when it has none, or no such column)."""
    needs = row.get("needs")
    return 0 if needs is None or _missing(needs) else int(needs)


def _needs_text(row: Mapping[str, Any], in_header: bool) -> str:
    """The needed-next kept share, with its "kept of needs" unless ``in_header`` says the
    number of needs once for every row."""
    share, needs = row.get("needs_kept_share"), _needs(row)
    if _missing(share) or not needs:
        return "–"
    text = f"{float(share) * 100:.1f}%"
    kept = row.get("needs_kept")
    return text if in_header or kept is None or _missing(kept) else f"{text} ({int(kept):,} of {needs:,})"


def _compare_table_html(frame: Any) -> str:
    """The Compare table (see `harpe_lab.widgets.Compare`): a few well-named columns in a box
    that scrolls sideways when its area is narrower; headers wrap and carry the column's
    meaning as a tooltip; every value and text escaped."""
    import pandas as pd

    from ..report import GLOSSARY, format_value

    meanings = {**dict(GLOSSARY), **dict(frame.attrs.get("columns") or {})}
    headline = frame.attrs.get("headline")
    headline = headline if isinstance(headline, str) and headline in frame.columns else "retention"
    errors = frame["error"].fillna("").astype(str) if "error" in frame.columns else pd.Series([""] * len(frame))
    ran = errors == ""
    shown = []
    for column, header, better in _COMPARE_SHOWN:
        column = headline if column == "retention" else column
        if column not in frame.columns:
            continue
        if column.startswith("cost") and pd.to_numeric(frame[column], errors="coerce").isna().all():
            continue  # unpriced: no column of dashes
        if column == "needs_kept_share" and not any(_needs(row) for _, row in frame[ran.to_numpy()].iterrows()):
            continue  # the replies name nothing seen earlier (or there are none): nothing to measure
        shown.append((column, header, better))
    notes = (frame["budget_note"].fillna("").astype(str) if "budget_note" in frame.columns
             else pd.Series([""] * len(frame), index=frame.index))  # fmt: skip
    with_notes = bool((notes[ran] != "").any())
    eligible = ran.copy()
    if "budget_met" in frame.columns:
        met = frame["budget_met"]
        # compared at a budget: a strategy that did not keep it is not "best" at it
        eligible &= met.isna() | (met == True)  # noqa: E712 (a column of objects: True, False or NaN)
    best = {c: _best_rows(frame, c, b, eligible.to_numpy()) for c, _, b in shown if b is not None}

    # one conversation, one set of probes: the denominator is the same on every row, said once
    shares = {_denominator(row) for _, row in frame[ran.to_numpy()].iterrows()}
    common = next(iter(shares)) if len(shares) == 1 else None
    in_header = common is not None and common[0] > 0
    needs = {_needs(row) for _, row in frame[ran.to_numpy()].iterrows()}
    common_needs = next(iter(needs)) if len(needs) == 1 else 0

    def th(column: str, header: str) -> str:
        tip = meanings.get(column) or meanings.get(_TIP_ALIASES.get(column, ""), "")
        if column == "needs_kept_share":  # what a need is, then the share
            tip = " ".join(t for t in (meanings.get("needs", ""), tip) if t)
        title = f" title='{html.escape(tip, quote=True)}'" if tip else ""
        return f"<th data-column='{html.escape(column, quote=True)}'{title}>{html.escape(header)}</th>"

    head = [th("strategy", "strategy")] + ([th("budget_note", "budget")] if with_notes else [])
    head += [th(c, f"{h} ({common[0]:,} of {common[1]:,} findable)" if c == headline and in_header
                else f"{h} (of {common_needs:,})" if c == "needs_kept_share" and common_needs else h)
             for c, h, _ in shown]
    width = len(head)
    rows = []
    for k, (_, row) in enumerate(frame.iterrows()):
        name = f"<td>{html.escape(str(row.get('strategy', '')))}</td>"
        if not ran.iat[k]:
            rows.append(f"<tr>{name}<td class='text span' colspan='{width - 1}'>{html.escape(errors.iat[k])}</td></tr>")
            continue
        cells = [name]
        if with_notes:
            cells.append(f"<td class='note'>{html.escape(notes.iat[k])}</td>")
        for column, _, _ in shown:
            text = (_retention_text(row, column, in_header) if column == headline
                    else _needs_text(row, bool(common_needs)) if column == "needs_kept_share"
                    else format_value(column, row.get(column)))  # fmt: skip
            css = " class='best'" if k in best.get(column, ()) else ""
            cells.append(f"<td{css}>{html.escape(text)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return (f"{_CSS}{_COMPARE_CSS}<div class='harpe-compare-scroll'><table class='harpe-summary harpe-compare-table'>"
            f"<thead><tr>{''.join(head)}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>")  # fmt: skip
