"""Instructions kept: what the user asked, required or forbade, still in front of the model.

The *instructions* of a session are the sentences of the user's typed prompts (not tool
results, not messages an agent wrote in the user's name such as Claude Code's
``<command-…>`` and ``<local-command-…>`` records or a background task's notification): each
prompt's first sentence (the ask) and every sentence with a directive cue — must, never,
always, don't, do not, should, make sure, ensure, avoid, only, instead, required, please.
At every later request each instruction is

* **verbatim** — the prompt that gave it is sent unchanged, or its sentence is in the request;
* **in the summary** — not verbatim, but the summary the context held carries at least
  `PARAPHRASE` of its content words (a paraphrase, as Claude Code's summaries write them);
* **lost** — neither.

Codex keeps the newest user messages verbatim when it compacts; Claude Code's summary
paraphrases them: `instructions_kept` shows the difference on a session.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Instruction", "session_instructions", "instructions_kept", "instructions_totals", "PARAPHRASE"]

PARAPHRASE = 0.6
"""Share of an instruction's content words a summary must hold to carry it."""

_CUE = re.compile(r"\b(?:must|never|always|don'?t|do not|should(?:n'?t)?|make sure|ensure|avoid|only|instead|"
                  r"required?|please|no longer|stop)\b", re.I)
_SENTENCE = re.compile(r"(?:[^.!?\n]|[.!?](?=[^\s.!?]))+[.!?]*")  # a dot inside a word (app.py) ends nothing
_AGENT_WRITTEN = ("<command-", "<local-command-", "<task-notification>", "[Request interrupted", "Caveat:",
                  "<system-reminder>", "This session is being continued")


@dataclass(frozen=True)
class Instruction:
    """One sentence of a typed prompt: the message it came from and its text."""

    message: str
    turn: int
    text: str


def _sentences(text: str) -> list[str]:
    out = []
    for k, m in enumerate(_SENTENCE.finditer(text)):
        s = " ".join(m.group(0).split())
        if len(s) >= 12 and (k == 0 or _CUE.search(s)):
            out.append(s)
    return out


def session_instructions(conversation: Any) -> list[Instruction]:
    """Every instruction of the session, in order (see the module doc)."""
    out = []
    for t, turn in enumerate(conversation.turns):
        text = turn.input.text.strip()
        if not text or text.startswith(_AGENT_WRITTEN) or turn.metadata.get("synthetic_input") \
                or turn.metadata.get("probe_turn"):
            continue
        out += [Instruction(turn.ids[0], t, s) for s in _sentences(text)]
    return out


def instructions_kept(replay: Any) -> Any:
    """Per request: ``request, instructions`` (given before it), ``verbatim, in_summary,
    lost`` and ``kept_share`` ((verbatim + in_summary) ÷ instructions; NaN with none)."""
    import pandas as pd

    from ..summarize import content_words

    given = session_instructions(replay.conversation)
    words = {ins: content_words(ins.text) for ins in given}
    f = replay.requests
    rows = []
    for i in range(len(replay)):
        turn = int(f["turn"].iloc[i])
        before = [ins for ins in given if ins.turn < turn]
        if not before:
            rows.append((i, 0, 0, 0, 0, math.nan))
            continue
        sent = set(replay.sent_ids(i))
        text: str | None = None
        summary_words = content_words(replay.summary(i) or "")
        verbatim = in_summary = 0
        for ins in before:
            if ins.message in sent:
                verbatim += 1
                continue
            if text is None:
                from ._passages import _rendered_text

                text = " ".join(_rendered_text(replay, i).split())
            if ins.text in text:
                verbatim += 1
            elif words[ins] and len(words[ins] & summary_words) >= PARAPHRASE * len(words[ins]):
                in_summary += 1
        n = len(before)
        rows.append((i, n, verbatim, in_summary, n - verbatim - in_summary, (verbatim + in_summary) / n))
    return pd.DataFrame(rows, columns=["request", "instructions", "verbatim", "in_summary", "lost", "kept_share"])


def instructions_totals(replay: Any) -> dict[str, float]:
    """``instructions`` (given in the session), and over the requests that had any:
    ``instructions_verbatim_share``, ``instructions_kept_share`` (verbatim or in the
    summary) and ``instructions_lost`` (instruction-requests lost)."""
    f = instructions_kept(replay)
    has = f[f["instructions"] > 0]
    total = int(has["instructions"].sum())
    return {
        "instructions": len(session_instructions(replay.conversation)),
        "instructions_verbatim_share": float(has["verbatim"].sum() / total) if total else math.nan,
        "instructions_kept_share": float((has["verbatim"].sum() + has["in_summary"].sum()) / total) if total else math.nan,
        "instructions_lost": int(has["lost"].sum()),
    }
