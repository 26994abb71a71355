"""Where a probe is asked, and what the request at that point still knew of its answer."""

from __future__ import annotations

from typing import Any, Iterable

from ..conversation import Conversation, Probe, Turn
from ..errors import EvaluationError
from ..findable import Finding
from ..messages import UserInput
from ._passages import _Views

__all__ = ["PROBE_TURN_ID", "PROBE_COLUMNS", "with_probe_turn", "probe_request", "probe_retention"]

PROBE_TURN_ID = "probe"
"""Message id of the empty input `with_probe_turn` appends."""

PROBE_COLUMNS = (
    "conversation", "strategy", "probe_id", "question", "answer", "category", "asked_at", "request",
    "tokens_at_probe", "evidence", "evidence_sent", "evidence_summarized", "evidence_in_context",
    "answer_in_summary", "answer_in_context", "findable_full", "known", "kept_as",
)  # fmt: skip


def with_probe_turn(conversation: Conversation) -> Conversation:
    """``conversation`` plus one empty, answered final turn (input id `PROBE_TURN_ID`) when a
    probe is asked after the last turn, so a replay renders the context that question would
    be asked in. Returned unchanged when no probe needs it."""
    if not isinstance(conversation, Conversation):
        raise TypeError(f"with_probe_turn takes a Conversation, got {type(conversation).__name__}")
    n = len(conversation.turns)
    late = [p for p in conversation.probes if p.asked_at > n]
    if late:
        raise EvaluationError(
            f"probe {late[0].id!r} of {conversation.id!r} is asked at turn {late[0].asked_at}, "
            f"after the end ({n} turns); asked_at must be at most {n}"
        )
    if not any(p.asked_at == n for p in conversation.probes):
        return conversation
    ids = set(conversation.message_ids())
    mid, k = PROBE_TURN_ID, 1
    while mid in ids:
        k += 1
        mid = f"{PROBE_TURN_ID}#{k}"
    turn = Turn(UserInput(""), (), "answered", ids=(mid,), metadata={"probe_turn": True})
    return conversation.with_(turns=(*conversation.turns, turn))


def probe_request(replay: Any, probe: Probe) -> int:
    """The index of the request a probe is judged at: the first request of turn ``asked_at``."""
    turns = replay.conversation.turns
    n = len(turns)
    if not isinstance(probe.asked_at, int) or probe.asked_at < 0 or probe.asked_at > n:
        raise EvaluationError(
            f"probe {probe.id!r} is asked at turn {probe.asked_at!r}, outside conversation "
            f"{replay.conversation.id!r} (turns 0..{n - 1})"
        )
    if probe.asked_at == n:
        raise EvaluationError(
            f"probe {probe.id!r} is asked after the last turn (asked_at={n}), where this replay made no "
            f"request; replay the conversation with its probe turn: "
            f"replay(with_probe_turn(conversation), factory, counter=...)"
        )
    requests = replay.turn_requests(probe.asked_at)
    if not len(requests):
        raise EvaluationError(f"the replay made no request in turn {probe.asked_at} (probe {probe.id!r})")
    return requests[0]


def _probes(replay: Any, probes: Iterable[Probe] | None) -> list[Probe]:
    out = list(replay.conversation.probes if probes is None else probes)
    bad = [p for p in out if not isinstance(p, Probe)]
    if bad:
        raise TypeError(f"probes must be harpe_lab.conversation.Probe objects, got {type(bad[0]).__name__}")
    return out


def _na(finding: Finding) -> Any:
    import pandas as pd

    return finding.found if finding.scorable else pd.NA


def probe_retention(replay: Any, probes: Iterable[Probe] | None = None) -> Any:
    """One row per probe (default: ``replay.conversation.probes``), judged at the probe's
    request (`probe_request`). Columns (`PROBE_COLUMNS`):

    ======================  ==========================================================
    conversation, strategy  the replay's
    probe_id, question,     the probe's
    answer, category,
    asked_at
    request                 the request index the probe is judged at
    tokens_at_probe         input tokens of that request
    evidence                number of evidence messages
    evidence_sent           how many were sent verbatim in that request
    evidence_summarized     how many had been folded into a summary by then
    evidence_in_context     every evidence message sent verbatim (``<NA>`` without evidence)
    answer_in_summary       the answer is findable (`harpe_lab.findable`) in the summary
                            held then
    answer_in_context       … anywhere in the request (system prompt, summary, messages)
    findable_full           … in the full history at that point: the denominator of
                            relative retention
    known                   the evidence was sent verbatim or the answer is findable in
                            the request
    kept_as                 ``"verbatim"`` (evidence sent, or the answer found in a sent
                            message), ``"summary"`` (found only in the summary), ``"lost"``;
                            ``"judge"`` when the answer is not findable even in the full
                            history — only a model judge can score it
    ======================  ==========================================================

    The matcher reads each message with the day its session was held (LoCoMo, LongMemEval)
    and the question, so relative dates and bare numbers are judged in context. Answers it
    cannot score (yes/no, "likely …", not-mentioned, an answer the question gives away) are
    ``<NA>`` in the ``answer_*`` and ``findable_full`` columns. The boolean columns are pandas
    nullable booleans: their mean skips ``<NA>``.
    """
    return _probe_frame(replay, probes, None)


def _probe_frame(replay: Any, probes: Iterable[Probe] | None, full: dict | None) -> Any:
    """`probe_retention`, sharing the full-history haystacks ``full`` across replays."""
    import pandas as pd

    probes = _probes(replay, probes)
    conv = replay.conversation
    known_ids = set(conv.message_ids())
    views = _Views(replay, full)
    rows = []
    kept_at: dict[int, dict[str, str]] = {}
    tokens = replay.requests["input_tokens"]
    for p in probes:
        unknown = [e for e in p.evidence if e not in known_ids]
        if unknown:
            raise EvaluationError(
                f"probe {p.id!r} names evidence {unknown[:5]} that conversation {conv.id!r} does not have"
            )
        i = probe_request(replay, p)
        if i not in kept_at:
            kept_at[i] = replay.kept(i)
        kept = kept_at[i]
        states = [kept.get(e, "unavailable") for e in p.evidence]
        sent = sum(s == "sent" for s in states)
        everything, summary = views.sent(i)
        in_context = everything.find(p.answer, p.question)
        in_summary = summary.find(p.answer, p.question)
        full = views.full(i).find(p.answer, p.question)
        verbatim = bool(states) and sent == len(states)
        known = verbatim or in_context.found
        if not full.found:
            kept_as = "judge"
        elif verbatim or (in_context.found and not in_summary.found):
            kept_as = "verbatim"
        elif in_summary.found:
            kept_as = "summary"
        else:
            kept_as = "lost"
        if not states and not in_context.scorable:
            known = pd.NA
        rows.append((
            conv.id, replay.strategy, p.id, p.question, p.answer, p.category, p.asked_at, i,
            int(tokens.iloc[i]), len(p.evidence), sent, sum(s == "summarized" for s in states),
            verbatim if states else pd.NA, _na(in_summary), _na(in_context), _na(full), known, kept_as,
        ))  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(PROBE_COLUMNS))
    for col in ("evidence_in_context", "answer_in_summary", "answer_in_context", "findable_full", "known"):
        frame[col] = frame[col].astype("boolean")
    return frame

