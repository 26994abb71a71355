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
.harpe-summary td, .harpe-summary th { padding: 1px 8px; text-align: right; }
.harpe-compare-table td:first-child, .harpe-compare-table th:first-child { text-align: left; }
.harpe-compare-table td.span { text-align: left; color: #8e1b1b; white-space: normal; }
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


def _snippet(text: str, limit: int = _SNIPPET) -> str:
    if len(text) <= limit:
        return html.escape(text)
    return html.escape(text[:limit]) + f" <i>… ({len(text) - limit:,} more characters)</i>"


def render_request_html(replay: Any, i: int) -> str:
    """Request ``i`` of ``replay`` as HTML: the system prompt (with any summary), then every
    message the full history held, marked sent, summarized or dropped. Runs of messages
    that were not sent collapse to one line; all transcript text is escaped."""
    if not 0 <= i < len(replay):
        raise HarpeLabError(f"`request` must be in 0..{len(replay) - 1}, but {i!r} was passed.")
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
    parts.append("</div>")
    return "".join(parts)


_STAT_ROWS = (("requests", "requests"), ("input_tokens_sum", "tokens sent"), ("input_tokens_max", "largest request"),
              ("compactions", "compactions"), ("summaries", "summaries"), ("overshoots", "overshoots"),
              ("overshoot_tokens_max", "worst overshoot"), ("distill_calls", "distill calls"),
              ("cached_prefix_share", "cached prefix"))  # fmt: skip
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
