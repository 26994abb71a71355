"""Judging a replay against the full history: probes, artifacts, answers, and a comparison.

=========================  ================================================================
`probe_retention`          per probe: was its evidence still sent verbatim, is its answer
                           findable (`harpe_lab.findable`) in the summary, in the request,
                           in the full history; known or not; kept verbatim, only in the
                           summary, lost — or needing a model judge
`retention`                known ÷ findable under the full history, per replay and probe
                           category ("n findable of m probes"): 1.0 for `FullContext`
`artifact_retention`       the share of the full history's file paths, commands, numbers,
                           URLs, identifiers and decisions a context (or summary) still holds
`answer_probes`            asks each probe's question under the strategy's context and under
                           the full history through litellm, scores the replies, and reports
                           the model's agreement with the matcher (`judge_agreement`)
`compare`                  one row per replay: tokens, compactions, distill cost, overshoots,
                           relative retention with its denominator, artifact retention,
                           answer accuracy
`message_passages`         a conversation's messages as the matcher reads them: with the
                           session day they were said on and the speaker
=========================  ================================================================

A probe (`harpe_lab.conversation.Probe`) is asked at turn ``asked_at``; its request is the
first request of that turn. Importers of question-answering datasets (LoCoMo, LongMemEval)
ask their probes after the last turn (``asked_at == len(turns)``), where a replay makes no
request: replay `with_probe_turn` (conversation) instead, which adds one empty final turn so
the strategy renders the context the question would be asked in.

Reads `harpe_lab.replay.Replay` objects only; pandas is imported on first use.
"""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Mapping, Sequence

from .conversation import Conversation, Probe, Turn
from .errors import EvaluationError, ModelError
from .findable import Finding, Haystack, Passage, parse_timestamp
from .messages import Message, Rendered, UserInput, strip_harpe_keys, to_openai
from .models import CachedModel, Completion
from .summarize import ARTIFACT_CATEGORIES, content_words, messages_text, ordered_artifacts

__all__ = [
    "EvaluationError",
    "with_probe_turn",
    "probe_request",
    "probe_retention",
    "retention",
    "message_passages",
    "RETENTION_COLUMNS",
    "artifact_retention",
    "answer_probes",
    "judge_agreement",
    "compare",
    "normalize_answer",
    "answer_f1",
    "PROBE_COLUMNS",
    "ANSWER_COLUMNS",
    "COMPARE_COLUMNS",
    "ANSWER_PROMPT",
    "JUDGE_SYSTEM",
    "PROBE_TURN_ID",
]

PROBE_TURN_ID = "probe"
"""Message id of the empty input `with_probe_turn` appends."""

ANSWER_PROMPT = (
    "Answer the question using only the conversation above. Reply with the answer alone, as briefly "
    "as possible. If the conversation does not say, reply: Not mentioned in the conversation.\n\n"
    "Question: {question}"
)
"""The user message `answer_probes` appends (``{question}`` is filled in)."""

JUDGE_SYSTEM = (
    "You grade answers to questions about a conversation. Compare the candidate answer with the "
    "reference answer. Reply with exactly one word: CORRECT if the candidate gives the same answer "
    "as the reference (paraphrase and extra detail are fine), INCORRECT otherwise."
)
"""The judge's system prompt; its user message holds the question, reference and candidate."""

PROBE_COLUMNS = (
    "conversation", "strategy", "probe_id", "question", "answer", "category", "asked_at", "request",
    "tokens_at_probe", "evidence", "evidence_sent", "evidence_summarized", "evidence_in_context",
    "answer_in_summary", "answer_in_context", "findable_full", "known", "kept_as",
)  # fmt: skip

ANSWER_COLUMNS = (
    "conversation", "strategy", "probe_id", "question", "answer", "category", "request", "tokens_at_probe",
    "context_reply", "full_reply", "context_exact", "full_exact", "context_match", "full_match",
    "context_f1", "full_f1", "context_judge", "full_judge", "context_correct", "full_correct",
    "answer_in_context", "findable_full", "known",
    "input_tokens", "output_tokens", "cost_usd", "cached", "error",
)  # fmt: skip

COMPARE_COLUMNS = (
    "conversation", "strategy", "requests", "input_tokens_sum", "input_tokens_median", "input_tokens_max",
    "compactions", "distill_calls", "distill_tokens", "distill_cost_usd", "overshoots", "overshoot_tokens_max",
    "probes", "findable", "needs_judge", "raw_retention", "retention", "verbatim", "only_in_summary", "lost",
    "retention_denominator", "probe_retention", "answer_in_summary", "artifact_retention",
    *(f"artifacts_{c}" for c in ARTIFACT_CATEGORIES), "answer_accuracy", "answer_accuracy_full",
    "answer_retention", "judge_agreement",
)  # fmt: skip


# --- locating probes ---------------------------------------------------------------------


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


# --- answers -----------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(?:a|an|the)\b")
_PUNCT = str.maketrans({c: " " for c in string.punctuation + "“”‘’—–…"})


def normalize_answer(text: Any) -> str:
    """Lower case, accents folded, punctuation and articles (a, an, the) removed, whitespace
    collapsed — SQuAD's normalisation, used by every answer comparison here."""
    s = unicodedata.normalize("NFKD", str(text))
    s = "".join(c for c in s if not unicodedata.combining(c)).lower()
    s = s.translate(_PUNCT)
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def _contains(haystack_norm: str, answer_norm: str) -> bool:
    return bool(answer_norm) and f" {answer_norm} " in f" {haystack_norm} "


def answer_f1(reply: str, answer: str) -> float:
    """Token F1 between the normalised reply and answer (SQuAD)."""
    a, b = normalize_answer(reply).split(), normalize_answer(answer).split()
    if not a or not b:
        return float(a == b)
    common = sum((Counter(a) & Counter(b)).values())
    if common == 0:
        return 0.0
    p, r = common / len(a), common / len(b)
    return 2 * p * r / (p + r)


# --- passages: what the matcher reads ----------------------------------------------------

_DATE_KEYS = ("date_time", "date", "timestamp")


def message_passages(conversation: Conversation, ids: Iterable[str] | None = None) -> list[Passage]:
    """One `harpe_lab.findable.Passage` per message (``ids``, default: every message, in
    conversation order): its text (`harpe_lab.summarize.messages_text`), the day its turn was
    said on when the turn's metadata holds a session timestamp (``date_time`` for LoCoMo,
    ``date`` for LongMemEval), and the speaker's name when the conversation's metadata names
    the two speakers (LoCoMo's ``speaker_a`` plays the user, ``speaker_b`` the assistant)."""
    if not isinstance(conversation, Conversation):
        raise TypeError(f"message_passages takes a Conversation, got {type(conversation).__name__}")
    meta = conversation.metadata
    speakers = {"user": str(meta.get("speaker_a") or ""), "assistant": str(meta.get("speaker_b") or "")}
    where: dict[str, tuple[Message, Any, str]] = {}
    for turn in conversation.turns:
        day = next((d for k in _DATE_KEYS if (d := parse_timestamp(turn.metadata.get(k))) is not None), None)
        for j, (m, mid) in enumerate(zip(turn.all_messages, turn.ids)):
            speaker = speakers["user"] if j == 0 else speakers["assistant"] if m.role == "assistant" else ""
            where[mid] = (m, day, speaker)
    wanted = conversation.message_ids() if ids is None else list(ids)
    missing = [i for i in wanted if i not in where]
    if missing:
        raise EvaluationError(f"conversation {conversation.id!r} has no message {missing[0]!r}")
    out = []
    for mid in wanted:
        m, day, speaker = where[mid]
        out.append(Passage(messages_text([m]), day, speaker))
    return out


# --- probe retention ---------------------------------------------------------------------


def _message_by_id(conversation: Conversation) -> dict[str, Message]:
    return {mid: m for turn in conversation.turns for m, mid in zip(turn.all_messages, turn.ids)}


def _rendered_text(replay: Any, i: int) -> str:
    """What request ``i`` holds as text: its system prompt (a summary included), the summary
    the context held when not already in it, and its messages."""
    rendered = replay.rendered(i)
    text = messages_text(rendered)
    summary = replay.summary(i)
    if summary and summary not in rendered.system:
        text = summary + "\n\n" + text
    return text


def _lines(text: str) -> list[Passage]:
    """A summary or system prompt as passages, one per non-empty line, so its words are
    matched line by line as a message's are."""
    return [Passage(line) for line in (x.strip() for x in (text or "").splitlines()) if line]


class _Views:
    """What one replay's requests held, as matcher haystacks, built once per request.

    ``full`` is shared by the replays of one call (`compare`, `retention`): every replay of a
    conversation has the same full history, so its haystacks are built once per call."""

    def __init__(self, replay: Any, full: dict[tuple[int, tuple[str, ...]], Haystack] | None = None) -> None:
        self.replay = replay
        conv = replay.conversation
        self.by_id = _message_by_id(conv)
        ids = conv.message_ids()
        self.passage = dict(zip(ids, message_passages(conv, ids)))
        self._sent: dict[int, tuple[Haystack, Haystack]] = {}
        self._full = {} if full is None else full

    def sent(self, i: int) -> tuple[Haystack, Haystack]:
        """(everything request ``i`` held, its summary alone)."""
        if i not in self._sent:
            rp = self.replay
            rendered = rp.rendered(i)
            sent = rp.sent_ids(i)
            originals = {id(self.by_id[mid]) for mid in sent}
            summary = rp.summary(i)
            passages = [self.passage[mid] for mid in sent] + _lines(rendered.system)
            if summary and summary not in rendered.system:
                passages += _lines(summary)
            for m in rendered.messages:
                if id(m) not in originals:  # a strategy's own message, e.g. a summary turn
                    passages += _lines(messages_text([m]))
            self._sent[i] = (Haystack(passages), Haystack(_lines(summary)))
        return self._sent[i]

    def full(self, i: int) -> Haystack:
        """Everything the full history held at request ``i`` (system prompt included)."""
        conv = self.replay.conversation
        # the conversation object is alive for the whole call, so its id is a safe key
        key = (id(conv), tuple(self.replay.available_ids(i)))
        if key not in self._full:
            self._full[key] = Haystack([self.passage[mid] for mid in key[1]] + _lines(conv.system))
        return self._full[key]


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


# --- artifact retention ------------------------------------------------------------------


def _as_text(source: Any) -> str:
    if isinstance(source, Conversation):
        body = messages_text(source.messages())
        return source.system + "\n\n" + body if source.system else body
    if isinstance(source, (str, Rendered)):
        return messages_text(source)
    if isinstance(source, Iterable):
        return messages_text(list(source))
    raise TypeError(f"expected messages, a Rendered, a Conversation or a str, got {type(source).__name__}")


def _canon_number(s: str) -> str:
    return re.sub(r"\s+", "", s).lower()


class _Held:
    """A kept text, prepared once for many artifact lookups."""

    def __init__(self, text: str) -> None:
        self.text = " ".join(text.split())
        found = ordered_artifacts(text, decisions=False)
        self.numbers = {_canon_number(n) for n in found["numbers"]}
        self._words: set[str] | None = None

    @property
    def words(self) -> set[str]:
        if self._words is None:
            self._words = content_words(self.text)
        return self._words

    def holds(self, category: str, value: str) -> bool:
        if value in self.text:
            return True
        if category == "numbers":
            return _canon_number(value) in self.numbers
        if category == "decisions":
            # paraphrase-tolerant: most of the sentence's content words are still there
            words = content_words(value)
            return bool(words) and len(words & self.words) >= 0.6 * len(words)
        return False


def _retention(full: Mapping[str, Sequence[str]], held: _Held) -> dict[str, float]:
    out: dict[str, float] = {}
    total = kept = 0
    for category in ARTIFACT_CATEGORIES:
        values = list(full[category])
        k = sum(held.holds(category, v) for v in values)
        out[category] = k / len(values) if values else math.nan
        total += len(values)
        kept += k
    out["all"] = kept / total if total else math.nan
    return out


def artifact_retention(full_history: Any, rendered: Any) -> dict[str, float]:
    """The share of the full history's artifacts (`harpe_lab.summarize.extract_artifacts`)
    that ``rendered`` still holds, per category of `ARTIFACT_CATEGORIES`, plus ``"all"``
    (over every artifact). NaN for a category the full history has none of.

    Both arguments may be messages, a `Rendered` request, a `Conversation` or a str (a
    summary, say). An artifact is held when its text occurs in ``rendered`` (whitespace
    normalised); numbers also match with the unit spacing changed (``512MB``); a decision
    sentence counts as held when 60% of its content words are present — a
    paraphrase-tolerant approximation.
    """
    full = ordered_artifacts(_as_text(full_history))
    return _retention(full, _Held(_as_text(rendered)))


# --- answer checks through a model -------------------------------------------------------


def _question_messages(messages: Sequence[Message], question: str, probe_input: Message | None) -> list[Message]:
    prompt = UserInput(ANSWER_PROMPT.format(question=question))
    out = list(messages)
    if out and isinstance(out[-1], UserInput) and (out[-1] is probe_input or out[-1].text.strip() == question.strip()):
        out[-1] = prompt  # the placeholder of a probe turn, or the question itself: replace
    else:
        out.append(prompt)
    return out


@dataclass
class _Job:
    """One distinct answer request, shared by every probe view that sends it."""

    messages: list[dict[str, Any]]
    completion: Completion | None = None
    error: str = ""


def _judge_messages(question: str, answer: str, reply: str) -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"Question: {question}\nReference answer: {answer}\nCandidate answer: {reply}"},
    ]


def _verdict(judge: CachedModel, text: str) -> bool:
    word = re.sub(r"[^A-Z]", "", text.strip().split()[0].upper()) if text.strip() else ""
    if word in ("CORRECT", "INCORRECT"):
        return word == "CORRECT"
    raise ModelError(f"judge {judge.model!r} replied {text[:80]!r}; expected CORRECT or INCORRECT")


def answer_probes(
    replay: Any,
    probes: Iterable[Probe] | None = None,
    *,
    model: str,
    judge: str | None = None,
    concurrency: int = 4,
    cache_dir: Any = None,
    cache: bool = True,
    timeout: float = 120.0,
    retries: int = 2,
    max_tokens: int = 256,
    temperature: float | None = 0,
    on_error: Literal["raise", "skip"] = "raise",
    progress: bool = True,
    **litellm_kwargs: Any,
) -> Any:
    """Ask each probe's question twice through litellm — under the strategy's context (the
    probe's request, `probe_request`, with `ANSWER_PROMPT` appended as a user message; the
    empty input of a probe turn is replaced by it) and under the full history (every message
    the full history held then, with the conversation's system prompt) — and score both.

    Scores: ``*_exact`` (normalised reply equals the normalised answer), ``*_match`` (the
    normalised answer occurs in the normalised reply), ``*_f1`` (token F1), and with
    ``judge`` (a model name) ``*_judge``, the judge's CORRECT/INCORRECT verdict
    (`JUDGE_SYSTEM`). ``*_correct`` is the judge's verdict when there is one, else
    ``*_match``. Identical requests (e.g. a FullContext replay's two views) are sent once.

    Replies are capped at ``max_tokens`` (the judge's at 16) and sampled at ``temperature``
    (0 by default, for repeatable scores). Calls run on ``concurrency`` threads with a
    ``tqdm.auto`` progress bar, and are cached on disk
    (`harpe_lab.models.CachedModel`: same cache, key and secrecy rules as
    `LLMDistiller`; ``litellm_kwargs`` such as ``api_base``/``api_key`` are never written).
    Per probe: ``input_tokens``, ``output_tokens`` and ``cost_usd`` of its calls (judge
    included; cost NaN when litellm's price table does not know a model) and ``cached``
    (every call came from the cache). ``frame.attrs["totals"]`` sums the calls.

    ``on_error="raise"`` stops at the first failed call with `ModelError`; ``"skip"`` fills
    ``error`` and leaves that probe's scores ``<NA>``. Columns: `ANSWER_COLUMNS`.

    Beside the model's scores, each row has the offline matcher's (`probe_retention`):
    ``answer_in_context``, ``findable_full`` and ``known``, so the model is scored on the
    same denominator; ``frame.attrs["agreement"]`` is `judge_agreement` of the frame.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    if on_error not in ("raise", "skip"):
        raise EvaluationError(f"on_error must be one of ['raise', 'skip'], but {on_error!r} was passed")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise EvaluationError(f"concurrency must be an int >= 1, got {concurrency!r}")
    probes = _probes(replay, probes)
    conv = replay.conversation
    by_id = _message_by_id(conv)
    common = dict(cache_dir=cache_dir, cache=cache, timeout=timeout, retries=retries, temperature=temperature)
    answerer = CachedModel(model, max_tokens=max_tokens, **common, **litellm_kwargs)
    # a verdict is one word; a small cap keeps a chatty judge cheap (and its reply unparseable)
    grader = CachedModel(judge, max_tokens=16, **common, **litellm_kwargs) if judge is not None else None

    jobs: dict[str, _Job] = {}
    plan: list[tuple[Probe, int, str, str]] = []  # probe, request, context key, full key
    for p in probes:
        i = probe_request(replay, p)
        turn = conv.turns[p.asked_at]
        # only a probe turn's empty input is a placeholder; a real turn's input stays
        turn_input = turn.input if turn.metadata.get("probe_turn") else None
        rendered = replay.rendered(i)
        ctx = _question_messages(rendered.messages, p.question, turn_input)
        full_msgs = _question_messages([by_id[mid] for mid in replay.available_ids(i)], p.question, turn_input)
        keys = []
        for system, msgs in ((rendered.system, ctx), (conv.system, full_msgs)):
            oa = strip_harpe_keys(to_openai(Rendered(system, tuple(msgs))))
            k = answerer.key(oa)
            jobs.setdefault(k, _Job(oa))
            keys.append(k)
        plan.append((p, i, keys[0], keys[1]))
    work = list(jobs.values())

    def run(job: _Job) -> None:
        try:
            job.completion = answerer.complete(job.messages, purpose="answer")
        except ModelError as e:
            if on_error == "raise":
                raise
            job.error = str(e)

    bar = tqdm(total=len(work), desc=f"answer_probes {replay.strategy}", disable=not progress, leave=False)
    _run_all(run, work, concurrency, bar)

    # the judge grades (question, reference, reply) triples; probes sharing a reply share it
    verdicts: dict[tuple[str, str, str], tuple[bool | None, Completion | None, str]] = {}
    if grader is not None:
        triples = []
        for p, _, kc, kf in plan:
            for k in (kc, kf):
                job = jobs[k]
                if job.completion is not None:
                    t = (p.question, p.answer, job.completion.text)
                    if t not in verdicts:
                        verdicts[t] = (None, None, "")
                        triples.append(t)

        def grade(t: tuple[str, str, str]) -> None:
            try:
                c = grader.complete(_judge_messages(*t), purpose="judge")
                verdicts[t] = (_verdict(grader, c.text), c, "")
            except ModelError as e:
                if on_error == "raise":
                    raise
                verdicts[t] = (None, None, str(e))

        bar = tqdm(total=len(triples), desc=f"judge {replay.strategy}", disable=not progress, leave=False)
        _run_all(grade, triples, concurrency, bar)

    tokens = replay.requests["input_tokens"]
    matcher = probe_retention(replay, probes).set_index("probe_id")
    rows = []
    for p, i, kc, kf in plan:
        scores: dict[str, Any] = {}
        used: dict[str, Completion] = {}
        errors: list[str] = []
        for view, k in (("context", kc), ("full", kf)):
            job = jobs[k]
            c = job.completion
            if c is None:
                errors.append(f"{view}: {job.error}")
                scores.update({f"{view}_{s}": pd.NA for s in ("reply", "exact", "match", "f1", "judge", "correct")})
                continue
            used[k] = c
            a, r = normalize_answer(p.answer), normalize_answer(c.text)
            scores[f"{view}_reply"] = c.text
            scores[f"{view}_exact"] = bool(a) and a == r
            scores[f"{view}_match"] = _contains(r, a)
            scores[f"{view}_f1"] = answer_f1(c.text, p.answer)
            verdict: Any = pd.NA
            if grader is not None:
                v, jc, err = verdicts[(p.question, p.answer, c.text)]
                if jc is not None:
                    used["judge:" + jc.key] = jc
                    verdict = v
                else:
                    errors.append(f"{view} judge: {err}")
            scores[f"{view}_judge"] = verdict
            scores[f"{view}_correct"] = verdict if grader is not None else scores[f"{view}_match"]
        usages = [c.usage for c in used.values() if c.usage is not None]
        rows.append({
            "conversation": conv.id, "strategy": replay.strategy, "probe_id": p.id, "question": p.question,
            "answer": p.answer, "category": p.category, "request": i, "tokens_at_probe": int(tokens.iloc[i]),
            **scores,
            "answer_in_context": matcher.at[p.id, "answer_in_context"],
            "findable_full": matcher.at[p.id, "findable_full"], "known": matcher.at[p.id, "known"],
            "input_tokens": sum(u.input_tokens for u in usages),
            "output_tokens": sum(u.output_tokens for u in usages),
            "cost_usd": sum(c.cost_usd for c in used.values()) if used else math.nan,
            "cached": bool(used) and all(c.cached for c in used.values()),
            "error": "; ".join(errors),
        })  # fmt: skip
    frame = pd.DataFrame(rows, columns=list(ANSWER_COLUMNS))
    for col in ("context_exact", "full_exact", "context_match", "full_match", "context_judge", "full_judge",
                "context_correct", "full_correct", "answer_in_context", "findable_full", "known"):  # fmt: skip
        frame[col] = frame[col].astype("boolean")
    for col in ("context_f1", "full_f1"):
        frame[col] = pd.to_numeric(frame[col], errors="coerce").astype(float)
    totals = {"answer": answerer.totals()}
    if grader is not None:
        totals["judge"] = grader.totals()
    frame.attrs["totals"] = totals
    frame.attrs["agreement"] = judge_agreement(frame)
    return frame


def judge_agreement(answers: Any) -> dict[str, Any]:
    """How often the model's verdicts (``*_correct``: the judge's, else the reply match) agree
    with the offline matcher, on the probes both can score (neither is ``<NA>``):

    * ``"full"`` — ``full_correct`` (the model answered right from the full history) against
      ``findable_full`` (the matcher finds the answer in the full history);
    * ``"context"`` — ``context_correct`` against ``answer_in_context`` (… in the request);
    * ``"probes"`` — how many probes the ``"full"`` share is over, ``"context_probes"`` the
      other's; ``"judge_only"`` — probes the matcher cannot score that the model did.

    Shares are NaN when no probe is scored by both. ``answers`` is an `answer_probes` frame.
    """
    out: dict[str, Any] = {}
    for view, model_col, matcher_col in (("full", "full_correct", "findable_full"),
                                         ("context", "context_correct", "answer_in_context")):  # fmt: skip
        both = answers[[model_col, matcher_col]].dropna()
        agree = (both[model_col].astype(bool) == both[matcher_col].astype(bool))
        out[view] = float(agree.mean()) if len(both) else math.nan
        out["probes" if view == "full" else "context_probes"] = int(len(both))
    out["judge_only"] = int((answers["findable_full"].isna() & answers["full_correct"].notna()).sum())
    return out


def _run_all(fn: Any, items: Sequence[Any], concurrency: int, bar: Any) -> None:
    """Run ``fn`` over ``items`` on a bounded thread pool; the first exception cancels what
    has not started and is re-raised."""
    try:
        if concurrency == 1 or len(items) <= 1:
            for item in items:
                fn(item)
                bar.update(1)
            return
        with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="harpe-answer") as pool:
            futures = [pool.submit(fn, item) for item in items]
            for f in futures:
                f.add_done_callback(lambda _: bar.update(1))
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for f in pending:
                f.cancel()
            for f in futures:
                if f.done() and not f.cancelled() and f.exception() is not None:
                    raise f.exception()  # type: ignore[misc]
    finally:
        bar.close()


# --- compare -----------------------------------------------------------------------------


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
    distill_cost_usd            their cost: the frame's ``distill_cost_usd`` when the engine
                                records one, else priced with ``pricing`` (a model name or
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

    from .pricing import Pricing

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
        if "distill_cost_usd" in f.columns:
            dcost = float(f["distill_cost_usd"].sum())
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
