"""``harpe-lab replay PATH --strategy S --show N``: request N as the strategy would send it.

Each message of the request with its role, its size in the replay's tokens and whether it is
an original sent verbatim or one the strategy wrote (a summary, a stand-in, a rewritten tool
result); the summary the context held, in full; and what the full history held that the
request does not — folded into the summary or dropped — counted and listed. With the offline
distiller the preview is the same at every run. Every text passes through the redactor first
(unless ``--no-redact``)."""

from __future__ import annotations

from typing import Any, Callable

from ..messages import AssistantMessage, ToolResults, UserInput
from . import UsageError
from ._table import render, tokens

__all__ = ["show_request", "request_preview"]

PREVIEW_CHARS = 160


def _role(message: Any) -> str:
    if isinstance(message, UserInput):
        return "user"
    if isinstance(message, AssistantMessage):
        return "assistant" + (f" ({len(message.calls)} tool call{'s' * (len(message.calls) > 1)})" if message.calls
                              else "")
    if isinstance(message, ToolResults):
        return f"tool results ({len(message.results)})"
    return type(message).__name__


def _text(message: Any) -> str:
    if isinstance(message, UserInput):
        return message.text
    if isinstance(message, AssistantMessage):
        calls = "; ".join(f"{c.name}({', '.join(f'{k}={v!r}' for k, v in list(c.input.items())[:2])})"
                          if isinstance(c.input, dict) else c.name for c in message.calls)
        return " ".join(x for x in (message.text, calls) if x)
    if isinstance(message, ToolResults):
        return " | ".join(str(r.content) for r in message.results)
    return str(message)


def _one_line(text: str, width: int = PREVIEW_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def request_preview(replay: Any, i: int, counter: Any, clean: Callable[[str], str] = str) -> dict[str, Any]:
    """Request ``i`` of ``replay`` as data: its messages (role, tokens, original or written,
    a one-line preview), its summary, and what it left out of the full history."""
    n = len(replay)
    if not 0 <= i < n:
        raise UsageError(f"--show {i}: the replay has requests 0 to {n - 1}")
    row = replay.requests.iloc[i]
    rendered = replay.rendered(i)
    ids = replay.message_ids(i)
    kept = replay.kept(i)
    messages = [{"position": k, "id": mid, "role": _role(m), "tokens": counter.count_message(m),
                 "state": "original" if mid is not None else "written by the strategy",
                 "preview": clean(_one_line(_text(m)))}
                for k, (m, mid) in enumerate(zip(rendered.messages, ids))]
    left = {state: [mid for mid, s in kept.items() if s == state] for state in ("summarized", "dropped")}
    summary = replay.summary(i) or ""
    return {
        "request": i, "turn": int(row["turn"]), "step": int(row["step"]),
        "input_tokens": int(row["input_tokens"]), "system_tokens": int(row["system_tokens"]),
        "summary_tokens": int(row["summary_tokens"]), "compacted": bool(row["compacted"]),
        "summarized": bool(row["summarized"]), "system_chars": len(rendered.system),
        "summary": clean(summary), "messages": messages,
        "left_out": {"summarized": len(left["summarized"]), "dropped": len(left["dropped"]),
                     "ids": left["summarized"][:50] + left["dropped"][:50]},
    }


def show_request(replay: Any, i: int, counter: Any, clean: Callable[[str], str] = str) -> str:
    """`request_preview` as text for the terminal."""
    p = request_preview(replay, i, counter, clean)
    what = []
    if p["compacted"]:
        what.append("compacted here: the request is not the previous one plus new messages")
    if p["summarized"]:
        what.append("a summary was made before it")
    lines = [f"request {p['request']} (turn {p['turn']}, call {p['step']}): {p['input_tokens']:,} input tokens — "
             f"system and tools {p['system_tokens']:,}, summary {p['summary_tokens']:,}",
             *what, ""]
    rows = [[str(m["position"]), m["role"], tokens(m["tokens"]), m["state"], m["preview"]] for m in p["messages"]]
    lines.append(render(["#", "role", "tokens", "sent as", "text"], rows, left=(1, 3, 4)))
    lines.append("")
    left = p["left_out"]
    lines.append(f"left out of the full history: {left['summarized']:,} messages folded into the summary, "
                 f"{left['dropped']:,} dropped or rewritten")
    if p["summary"]:
        lines += ["", f"summary ({len(p['summary']):,} characters):", *("    " + x for x in p["summary"].splitlines())]
    return "\n".join(lines)
