"""Answer checks through a model: each probe's question asked under the strategy's context
and under the full history (`harpe_lab.models.CachedModel`), scored against the answer and,
optionally, by a model judge."""

from __future__ import annotations

import math
import re
import string
import unicodedata
from collections import Counter
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Iterable, Literal, Sequence

from ..conversation import Probe
from ..errors import EvaluationError, ModelError
from ..messages import Message, Rendered, UserInput, strip_harpe_keys, to_openai
from ..models import CachedModel, Completion
from ._passages import _message_by_id
from ._probes import _probes, probe_request, probe_retention

__all__ = [
    "ANSWER_PROMPT",
    "JUDGE_SYSTEM",
    "ANSWER_COLUMNS",
    "answer_probes",
    "judge_agreement",
    "normalize_answer",
    "answer_f1",
]

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

ANSWER_COLUMNS = (
    "conversation", "strategy", "probe_id", "question", "answer", "category", "request", "tokens_at_probe",
    "context_reply", "full_reply", "context_exact", "full_exact", "context_match", "full_match",
    "context_f1", "full_f1", "context_judge", "full_judge", "context_correct", "full_correct",
    "answer_in_context", "findable_full", "known",
    "input_tokens", "output_tokens", "cost_usd", "cached", "error",
)  # fmt: skip


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
    if on_error not in ("raise", "skip"):
        raise EvaluationError(f"on_error must be one of ['raise', 'skip'], but {on_error!r} was passed")
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
        raise EvaluationError(f"concurrency must be an int >= 1, got {concurrency!r}")
    probes = _probes(replay, probes)
    common = dict(cache_dir=cache_dir, cache=cache, timeout=timeout, retries=retries, temperature=temperature)
    answerer = CachedModel(model, max_tokens=max_tokens, **common, **litellm_kwargs)
    # a verdict is one word; a small cap keeps a chatty judge cheap (and its reply unparseable)
    grader = CachedModel(judge, max_tokens=16, **common, **litellm_kwargs) if judge is not None else None
    jobs, plan = _plan(replay, probes, answerer)
    _answer_all(replay, answerer, list(jobs.values()), concurrency, on_error, progress)
    verdicts = _judge_all(replay, grader, plan, jobs, concurrency, on_error, progress) if grader is not None else {}
    matcher = probe_retention(replay, probes).set_index("probe_id")
    rows = [_row(replay, p, i, ((kc, jobs[kc]), (kf, jobs[kf])), grader, verdicts, matcher) for p, i, kc, kf in plan]
    return _frame(rows, answerer, grader)


_Plan = list[tuple[Probe, int, str, str]]  # probe, request, context key, full key
_Verdicts = dict[tuple[str, str, str], tuple["bool | None", "Completion | None", str]]


def _plan(replay: Any, probes: Sequence[Probe], answerer: CachedModel) -> tuple[dict[str, _Job], _Plan]:
    """Each probe's two requests (its context, the full history), keyed by the answerer's
    cache key so that identical requests (a FullContext replay's two views) are one job."""
    conv = replay.conversation
    by_id = _message_by_id(conv)
    jobs: dict[str, _Job] = {}
    plan: _Plan = []
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
    return jobs, plan


def _answer_all(
    replay: Any, answerer: CachedModel, work: list[_Job], concurrency: int, on_error: str, progress: bool
) -> None:
    """Fill each job's completion (or, with ``on_error="skip"``, its error)."""
    from tqdm.auto import tqdm

    def run(job: _Job) -> None:
        try:
            job.completion = answerer.complete(job.messages, purpose="answer")
        except ModelError as e:
            if on_error == "raise":
                raise
            job.error = str(e)

    bar = tqdm(total=len(work), desc=f"answer_probes {replay.strategy}", disable=not progress, leave=False)
    _run_all(run, work, concurrency, bar)


def _judge_all(
    replay: Any,
    grader: CachedModel,
    plan: _Plan,
    jobs: dict[str, _Job],
    concurrency: int,
    on_error: str,
    progress: bool,
) -> _Verdicts:
    """The judge's verdict per (question, reference, reply) triple; probes sharing a reply
    share it, so each triple is graded once."""
    from tqdm.auto import tqdm

    verdicts: _Verdicts = {}
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
    return verdicts


def _view_scores(
    view: str,
    p: Probe,
    keyed: tuple[str, _Job],
    grader: CachedModel | None,
    verdicts: _Verdicts,
    used: dict[str, Completion],
    errors: list[str],
) -> dict[str, Any]:
    """One view's (``context`` or ``full``) scores of a probe; the completions it used go
    into ``used`` (keyed so that a shared one is counted once), its failures into ``errors``."""
    import pandas as pd

    k, job = keyed
    c = job.completion
    if c is None:
        errors.append(f"{view}: {job.error}")
        return {f"{view}_{s}": pd.NA for s in ("reply", "exact", "match", "f1", "judge", "correct")}
    used[k] = c
    a, r = normalize_answer(p.answer), normalize_answer(c.text)
    scores: dict[str, Any] = {f"{view}_reply": c.text, f"{view}_exact": bool(a) and a == r}
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
    return scores


def _row(
    replay: Any,
    p: Probe,
    i: int,
    views: tuple[tuple[str, _Job], tuple[str, _Job]],
    grader: CachedModel | None,
    verdicts: _Verdicts,
    matcher: Any,
) -> dict[str, Any]:
    """A probe's row of `ANSWER_COLUMNS`: both views' scores, the offline matcher's, and
    what its calls cost."""
    used: dict[str, Completion] = {}
    errors: list[str] = []
    scores = {
        **_view_scores("context", p, views[0], grader, verdicts, used, errors),
        **_view_scores("full", p, views[1], grader, verdicts, used, errors),
    }
    usages = [c.usage for c in used.values() if c.usage is not None]
    return {
        "conversation": replay.conversation.id, "strategy": replay.strategy, "probe_id": p.id,
        "question": p.question, "answer": p.answer, "category": p.category, "request": i,
        "tokens_at_probe": int(replay.requests["input_tokens"].iloc[i]),
        **scores,
        "answer_in_context": matcher.at[p.id, "answer_in_context"],
        "findable_full": matcher.at[p.id, "findable_full"], "known": matcher.at[p.id, "known"],
        "input_tokens": sum(u.input_tokens for u in usages),
        "output_tokens": sum(u.output_tokens for u in usages),
        "cost_usd": sum(c.cost_usd for c in used.values()) if used else math.nan,
        "cached": bool(used) and all(c.cached for c in used.values()),
        "error": "; ".join(errors),
    }  # fmt: skip


def _frame(rows: list[dict[str, Any]], answerer: CachedModel, grader: CachedModel | None) -> Any:
    """The rows as a frame with nullable booleans, the calls' totals and the agreement."""
    import pandas as pd

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

