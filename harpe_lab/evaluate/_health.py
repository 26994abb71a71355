"""Compaction health: what a replay's compactions did wrong, and what each preset does when
its summarizer fails.

One replay (`compaction_health`, `health_frame`):

* an **inflation** — a request where a summary was made that is not smaller than the request
  before it: the compaction did not shrink what was sent (openai/codex#40619, 244,138 →
  258,400 tokens; google-gemini/gemini-cli#15225). Only requests where a summary was made
  count: an edit policy (masking, clearing) replaces old content while new content arrives,
  and comparing its requests says nothing about the edit;
* a **short summary** — a request where a summary was made whose distillers wrote fewer than
  `MIN_SUMMARY_TOKENS` tokens (the frame's ``distill_output_tokens`` at that request, or, for
  a summary written earlier that lands now, as Aider's does a turn late, at the last request
  that called the distiller). Not ``summary_tokens``: that counts the strategy's own wrapper
  around the summary too — around an empty one, 80 tokens of Codex's prefix, 59 of Claude
  Code's continuation, 50 of Goose's — so an empty summary would pass for a short one;
* a **distill fallback** — a `harpe_lab.summarize.DistillFallback` the replay recorded (a
  distiller that gave no summary and said why).

Every preset that calls a distiller (`failing_summarizer_table`): replayed on a conversation
that makes it compact, with a `FailingDistiller` that fails its first calls in one of
`SUMMARIZER_FAILURES` ways and then works, and classified into one of `FAILURE_OUTCOMES`
beside what its source does (`SOURCE_BEHAVIOUR`). The working summarizer writes down every
message tag (``[m:3.1]``, put at the head of each message of the conversation) it was given,
so whatever history the preset kept through the failure reaches a later summary, and what it
lost never comes back. See ``docs/strategies.md``, "When the summarizer fails".
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, NamedTuple

from .._text import message_text
from ..errors import EvaluationError, ModelError
from ..messages import AssistantMessage, Rendered, ToolResults, UserInput

__all__ = [
    "HEALTH_COLUMNS",
    "MIN_SUMMARY_TOKENS",
    "health_frame",
    "compaction_health",
    "SUMMARIZER_FAILURES",
    "FAILURE_OUTCOMES",
    "LOSING_OUTCOMES",
    "ERROR_TEXT",
    "FailingDistiller",
    "SourceBehaviour",
    "SOURCE_BEHAVIOUR",
    "FAILURE_KNOBS",
    "FAILURE_TABLE_COLUMNS",
    "FailureOutcome",
    "failure_conversation",
    "failure_outcome",
    "failing_summarizer_table",
]

MIN_SUMMARY_TOKENS = 50
"""A summary under this many tokens is *short*: an empty reply, an error line, a sentence.
The summaries agents really write run to hundreds or thousands of tokens (Claude Code's
recorded ones: 2,000 to 5,000); 50 is where a summary can no longer hold a task, its files
and its next step."""

HEALTH_COLUMNS = (
    "request", "turn", "input_tokens", "change_tokens", "compacted", "summarized", "inflation",
    "summary_tokens", "summary_written_tokens", "short_summary", "distill_calls", "distill_fallbacks",
)  # fmt: skip
_HEALTH_MEANINGS = {
    "change_tokens": "input tokens minus the previous request's (the first request: its own)",
    "inflation": "a summary was made and the request is not smaller than the one before it",
    "summary_written_tokens": "tokens the distiller wrote for the summary made before this request",
    "short_summary": f"a summary was made and its distiller wrote fewer than the minimum ({MIN_SUMMARY_TOKENS} by default)",
    "distill_fallbacks": "DistillFallback events recorded before this request",
}

SUMMARIZER_FAILURES = ("raises", "none", "empty", "error", "inflated")
"""How `FailingDistiller` fails: it raises `harpe_lab.errors.ModelError` (what
``LLMDistiller`` raises for a failed call); returns ``None`` (the lab's "no summary this time",
what ``LLMDistiller(on_error="skip")`` returns for a failed call); returns ``""`` (a reply
without text); returns `ERROR_TEXT` (an error message as if it were the summary, as LangChain's
middleware wrote one before langchain-ai/langchain#39268); returns more than it was given (its
whole request twice, between two markers)."""

FAILURE_OUTCOMES = ("keeps", "drops", "falls back", "error summary", "inflated", "raises")
"""What a preset does then: **keeps** the history (no message lost: nothing was cut, or what
was cut reached a later summary); **drops** it (messages gone, folded into the empty reply);
**falls back** to a cut of its own without a summary (a window, a notice, a deterministic
digest), losing messages; sends the **error summary** (the error text stands for the history);
sends an **inflated** summary; **raises** (the replay stops with the distiller's error)."""

LOSING_OUTCOMES = ("drops", "falls back", "error summary")
"""The outcomes that lose history."""

ERROR_TEXT = "Error: rate limit exceeded (429). Please retry after 20 seconds."
"""What the ``"error"`` failure returns as its summary."""
_ERROR_MARK = "rate limit exceeded (429)"  # in ERROR_TEXT and in the raised error's message
_INFLATED_MARK = "[this summary is longer than what it summarizes]"
_TAG = re.compile(r"\[m:[^\]\s]+\]")


def _request_text(rendered: Rendered) -> str:
    return rendered.system + "\n" + "\n".join(message_text(m) for m in rendered.messages)


# --- one replay ------------------------------------------------------------------------------


def health_frame(replay: Any, *, min_summary_tokens: int = MIN_SUMMARY_TOKENS) -> Any:
    """One row per request of ``replay`` (columns `HEALTH_COLUMNS`, meanings in
    ``frame.attrs["columns"]``): its size and change, whether a summary was made, whether
    that summary inflated the request or was short, and the distill fallbacks before it."""
    import pandas as pd

    from ..summarize import DistillFallback

    if isinstance(min_summary_tokens, bool) or not isinstance(min_summary_tokens, int) or min_summary_tokens < 0:
        raise EvaluationError(f"min_summary_tokens must be an int >= 0, got {min_summary_tokens!r}")
    f = replay.requests
    fallbacks = [0] * len(f)
    for e in replay.events:
        if isinstance(e.event, DistillFallback) and e.request < len(f):
            fallbacks[e.request] += 1
    rows = []
    prev_tokens = None
    written = 0  # what the last request that called the distiller got written
    for i in range(len(f)):
        tokens = int(f["input_tokens"].iloc[i])
        if int(f["distill_calls"].iloc[i]):
            written = int(f["distill_output_tokens"].iloc[i])
        summarized = bool(f["summarized"].iloc[i])
        change = tokens - (prev_tokens or 0)
        rows.append((
            i, int(f["turn"].iloc[i]), tokens, change, bool(f["compacted"].iloc[i]), summarized,
            summarized and prev_tokens is not None and change >= 0,
            int(f["summary_tokens"].iloc[i]), written if summarized else 0,
            summarized and written < min_summary_tokens, int(f["distill_calls"].iloc[i]), fallbacks[i],
        ))  # fmt: skip
        prev_tokens = tokens
    frame = pd.DataFrame(rows, columns=list(HEALTH_COLUMNS))
    frame.attrs["columns"] = dict(_HEALTH_MEANINGS)
    frame.attrs["min_summary_tokens"] = min_summary_tokens
    return frame


def compaction_health(replay: Any, *, min_summary_tokens: int = MIN_SUMMARY_TOKENS) -> dict[str, Any]:
    """The health of one replay's compactions (see the module doc)::

        {"requests": 54, "compactions": 11, "summaries": 9,
         "inflations": [12], "short_summaries": [30, 41],
         "distill_fallbacks": [ReplayEvent(...), ...], "min_summary_tokens": 50}

    ``inflations`` and ``short_summaries`` are request indices; ``distill_fallbacks`` the
    `harpe_lab.replay.ReplayEvent` s holding a `harpe_lab.summarize.DistillFallback`, in order.
    Under `FullContext` all three are empty."""
    from ..summarize import DistillFallback

    frame = health_frame(replay, min_summary_tokens=min_summary_tokens)
    return {
        "requests": len(frame),
        "compactions": int(frame["compacted"].sum()),
        "summaries": int(frame["summarized"].sum()),
        "inflations": [int(i) for i in frame.index[frame["inflation"]]],
        "short_summaries": [int(i) for i in frame.index[frame["short_summary"]]],
        "distill_fallbacks": [e for e in replay.events if isinstance(e.event, DistillFallback)],
        "min_summary_tokens": min_summary_tokens,
    }


# --- a failing summarizer ----------------------------------------------------------------------


class FailingDistiller:
    """A distiller that fails its first ``times`` calls the ``failure`` way
    (`SUMMARIZER_FAILURES`), then works: it returns ``"Kept: "`` and every message tag
    (``[m:…]``, see `failure_conversation`) its request holds, so a summary written after the
    failure carries every message the context still had. ``calls`` and ``failed`` count its
    calls; ``fresh()`` gives an unused one (presets build one per strategy)."""

    def __init__(self, failure: str, *, times: int = 3) -> None:
        if failure not in SUMMARIZER_FAILURES:
            raise EvaluationError(f"failure must be one of {list(SUMMARIZER_FAILURES)}, but {failure!r} was passed")
        if isinstance(times, bool) or not isinstance(times, int) or times < 0:
            raise EvaluationError(f"times must be an int >= 0, got {times!r}")
        self.failure = failure
        self.times = times
        self.calls = 0
        self.failed = 0

    def fresh(self) -> "FailingDistiller":
        return FailingDistiller(self.failure, times=self.times)

    def __call__(self, request: Rendered) -> str | None:
        self.calls += 1
        text = _request_text(request)
        if self.failed < self.times:
            self.failed += 1
            kind = self.failure
            if kind == "raises":
                raise ModelError(f"the server reported an error: {_ERROR_MARK}")
            if kind == "none":
                return None
            if kind == "empty":
                return ""
            if kind == "error":
                return ERROR_TEXT
            return f"{_INFLATED_MARK}\n{text}\n{text}\n{_INFLATED_MARK}"
        tags = list(dict.fromkeys(_TAG.findall(text)))
        return "Kept: " + (" ".join(tags) if tags else "nothing")

    def __repr__(self) -> str:
        return f"FailingDistiller({self.failure!r}, times={self.times}, {self.calls} calls)"


def _tagged(message: Any, mid: str) -> Any:
    tag = f"[m:{mid}] "
    if isinstance(message, UserInput):
        return dataclasses.replace(message, text=tag + message.text)
    if isinstance(message, AssistantMessage):
        return dataclasses.replace(message, text=tag + message.text) if message.text else message
    if isinstance(message, ToolResults) and message.results:
        first = dataclasses.replace(message.results[0], content=tag + message.results[0].content)
        return dataclasses.replace(message, results=(first, *message.results[1:]))
    return message


def failure_conversation(conversation: Any = None) -> Any:
    """``conversation`` (default: `harpe_lab.synth.synthesize` ``(24, seed=7, tool_rate=0.6,
    result_chars=600)``: 24 turns, 14 of them running tools) with a tag, ``[m:<message
    id>]``, at the head of every user input, every reply with text and the first result of
    every tool round. A summarizer that copies the tags it reads shows which messages a
    context still held."""
    from ..conversation import Turn
    from ..synth import synthesize

    if conversation is None:
        conversation = synthesize(24, seed=7, tool_rate=0.6, result_chars=600)
    turns = []
    for turn in conversation.turns:
        msgs = [_tagged(m, mid) for m, mid in zip(turn.all_messages, turn.ids)]
        turns.append(Turn(msgs[0], tuple(msgs[1:]), turn.outcome, turn.error, turn.usage, turn.ids, turn.metadata))
    return conversation.with_(turns=tuple(turns))


# --- what each source does ---------------------------------------------------------------------


@dataclass(frozen=True)
class SourceBehaviour:
    """What a preset's source does when its summarizer fails one way: the outcome (one of
    `FAILURE_OUTCOMES`) and what was read, where."""

    outcome: str
    what: str

    def __post_init__(self) -> None:
        if self.outcome not in FAILURE_OUTCOMES:
            raise EvaluationError(f"outcome must be one of {list(FAILURE_OUTCOMES)}, but {self.outcome!r} was passed")


_LAB_NONE = ("the source has no \"no summary\" answer (a failed call raises there: see the raises row); the lab's "
             "None means \"not this time\" (harpe_lab.protocol.Distill), so the history is kept and the fold tried "
             "again")
_BLIND = "it does not read the summary: any text becomes the summary"


def _source(raises: tuple[str, str], none: tuple[str, str], empty: tuple[str, str], error: tuple[str, str],
            inflated: tuple[str, str]) -> dict[str, SourceBehaviour]:
    return {k: SourceBehaviour(*v) for k, v in
            zip(SUMMARIZER_FAILURES, (raises, none, empty, error, inflated))}


SOURCE_BEHAVIOUR: Mapping[str, Mapping[str, SourceBehaviour]] = {
    "summarizing": _source(
        ("raises", "Harpe spec §4.7 (harpe-format.md): \"An exception from distill is not caught here (propagates "
                   "out of ask)\""),
        ("keeps", "§4.7: \"None → false, nothing changes (retried at the next boundary)\""),
        ("drops", "§4.7: \"Some(\\\"\\\") is accepted as-is: turns are dropped and, summary being empty, no block "
                  "is rendered\""),
        ("error summary", f"§4.7: Some(text) becomes the summary; {_BLIND}"),
        ("inflated", f"§4.7: Some(text) becomes the summary; {_BLIND}"),
    ),
    "summarize-window": _source(
        ("keeps", "orion's SummarizeWindow (harpe_lab.strategies.orion, its only source): when distill raises, the "
                  "request is the sliding window and a StrategyWarning says why; the fold is tried again at the "
                  "next compaction"),
        ("keeps", "orion: distill returning None falls back to the sliding window for that request; the fold is "
                  "tried again"),
        ("drops", "orion: an empty text is a summary: the pinned summary message holds nothing"),
        ("error summary", f"orion: {_BLIND}"),
        ("keeps", "orion: a summary too long to fit beside the latest turn falls back to the sliding window; the "
                  "fold is tried again"),
    ),
    "claude-code": _source(
        ("keeps", "Claude Code 2.1.88 services/compact/autoCompact.ts, autoCompactIfNeeded: `catch (error) { "
                  "logError(error) ... return { wasCompacted: false, consecutiveFailures: nextFailures } }`: the "
                  "history stays, the next model call tries again (3 failures in a row: not again this turn)"),
        ("keeps", "no \"no summary\" answer in Claude Code; a failed call is caught as in the raises row"),
        ("keeps", "compact.ts, compactConversation: `if (!summary) { ... throw new Error(`Failed to generate "
                  "conversation summary - response did not contain valid text content`) }`, caught by "
                  "autoCompactIfNeeded"),
        ("error summary", "compact.ts refuses a summary that startsWithApiErrorPrefix (\"API Error\", its own "
                          "failed-call text) and nothing else: \"Error: rate limit exceeded ...\" becomes the "
                          "summary"),
        ("inflated", "compact.ts checks no size: the summary is used, and the next check may compact again "
                     "(`willRetriggerNextTurn`)"),
    ),
    "openhands-summarizing": _source(
        ("raises", "OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py, get_condensation: "
                   "`response = self.llm.completion(...)` is not guarded; the agent controller puts the agent in "
                   "its error state"),
        ("keeps", _LAB_NONE),
        ("drops", "llm_summarizing_condenser.py: `summary = response.choices[0].message.content` goes into the "
                  "Condensation as it is; the forgotten events are gone and the summary event is empty"),
        ("error summary", f"llm_summarizing_condenser.py: {_BLIND}"),
        ("inflated", f"llm_summarizing_condenser.py: {_BLIND}"),
    ),
    "hybrid": _source(
        ("raises", "the-complexity-trap's SWE-agent fork, sweagent/agent/models.py, query_for_summary: `except "
                   "Exception as e: self.logger.error(f\"Error in summary query: {e}\"); raise`: the run stops"),
        ("keeps", _LAB_NONE),
        ("drops", "models.py: `summary = response.choices[0].message.content or \"\"`; history_processors.py "
                  "sends `f\"Checkpoint for the last {len(turns)} turns:\\n{summary_metadata.summary}\"` in place "
                  "of the turns"),
        ("error summary", f"models.py: {_BLIND}"),
        ("inflated", f"models.py: {_BLIND}"),
    ),
    "langchain-summarization": _source(
        ("raises", "langchain 1.5.2 agents/middleware/summarization.py: the summary model runs `with_retry` (3 "
                   "attempts), then the error propagates from before_model, the state untouched "
                   "(langchain-ai/langchain#39268; before it the error text became the summary, #38867)"),
        ("keeps", _LAB_NONE),
        ("drops", "summarization.py, _create_summary: `return response.text.strip()`; before_model returns "
                  "`RemoveMessage(id=REMOVE_ALL_MESSAGES)` and \"Here is a summary of the conversation to "
                  "date:\\n\\n\" with nothing after it (harpe_lab.peers.langchain runs it: the same)"),
        ("error summary", f"summarization.py: {_BLIND} (harpe_lab.peers.langchain runs it: the same)"),
        ("inflated", f"summarization.py: {_BLIND}"),
    ),
    "codex": _source(
        ("raises", "openai/codex codex-rs/core/src/compact.rs, run_compact_task_inner: after its retries `let "
                   "event = EventMsg::Error(...); ... return Err(e)`, before replace_history: the turn ends with "
                   "the error, the history untouched"),
        ("keeps", _LAB_NONE),
        ("drops", "compact.rs: `let summary_suffix = get_last_assistant_message_from_turn(...).unwrap_or_default(); "
                  "let summary_text = format!(\"{SUMMARY_PREFIX}\\n{summary_suffix}\")`: never empty, so \"(no "
                  "summary available)\" never applies; replace_history keeps the user messages and the bare prefix"),
        ("error summary", f"compact.rs: {_BLIND}"),
        ("inflated", f"compact.rs: {_BLIND} (openai/codex#40619: a /compact made the context larger)"),
    ),
    "cline-agentic": _source(
        ("falls back", "Cline SDK @21cb8d25, as harpe_lab.strategies.cline reads it: a failing summarizer falls back "
                       "to the deterministic basic compaction (not found in the later compaction.ts read, @01873ee2, "
                       "where nothing catches runAgenticCompaction's error)"),
        ("keeps", _LAB_NONE),
        ("keeps", "sdk/packages/core/src/extensions/context/agentic-compaction.ts: `if (!rawSummary.trim()) { "
                  "return undefined; }`: no compaction"),
        ("error summary", f"agentic-compaction.ts: {_BLIND}"),
        ("inflated", "agentic-compaction.ts: the summary is used; tokensAfter is only logged"),
    ),
    "aider": _source(
        ("drops", "aider/history.py, summarize_all: `except Exception as e: print(...)`, then `raise "
                  "ValueError(\"summarizer unexpectedly failed for all models\")`; base_coder.py's summarize_worker "
                  "catches it with summarized_done_messages still [] and summarize_end swaps that in: the history "
                  "is gone"),
        ("drops", "aider/models.py simple_send_with_retries returns None for a failed call; summarize_all then "
                  "raises ValueError, and the history is gone as in the raises row"),
        ("drops", "history.py: `if summary is not None: summary = prompts.summary_prefix + summary`: the empty "
                  "reply becomes the summary"),
        ("error summary", f"history.py: {_BLIND}"),
        ("inflated", f"history.py: {_BLIND}; a summary and tail still over the budget are summarized again, one "
                     "level deeper"),
    ),
    "gemini-compress": _source(
        ("raises", "packages/core/src/context/chatCompressionService.ts, compress: `await "
                   "config.getBaseLlmClient().generateContent(...)` is not guarded; the error ends the request"),
        ("keeps", _LAB_NONE),
        ("keeps", "chatCompressionService.ts: `if (!finalSummary) { ... COMPRESSION_FAILED_EMPTY_SUMMARY }`: the "
                  "history is left as it was"),
        ("error summary", "chatCompressionService.ts: a short text passes every check (not empty, fewer tokens "
                          "than before) and becomes the <state_snapshot>"),
        ("keeps", "chatCompressionService.ts: `if (newTokenCount > originalTokenCount) { ... "
                  "COMPRESSION_FAILED_INFLATED_TOKEN_COUNT }`: the history is left as it was, and from then on "
                  "only truncated (google-gemini/gemini-cli#15225, PR #16826)"),
    ),
    "opencode": _source(
        ("raises", "packages/opencode/src/session/message-v2.ts, filterCompacted: a summary counts only when "
                   "`msg.info.summary && msg.info.finish && !msg.info.error`; the failed compaction leaves the "
                   "history and the prompt loop stops with the error"),
        ("keeps", _LAB_NONE),
        ("drops", "message-v2.ts: a finished summary without text is a completed compaction; filterCompacted "
                  "sends it in place of the history before it"),
        ("error summary", f"session/compaction.ts: {_BLIND}"),
        ("inflated", f"session/compaction.ts: {_BLIND}"),
    ),
    "goose": _source(
        ("raises", "crates/goose/src/agents/agent.rs, as harpe_lab.strategies.goose reads it: a failed compaction "
                   "is reported and the turn given up, the history kept"),
        ("keeps", _LAB_NONE),
        ("drops", "crates/goose/src/context_mgmt/mod.rs, compact_messages, as harpe_lab.strategies.goose reads it: "
                  "the summary message replaces every agent-visible message, whatever it holds"),
        ("error summary", f"context_mgmt/mod.rs: {_BLIND}"),
        ("inflated", f"context_mgmt/mod.rs: {_BLIND}"),
    ),
    "roo": _source(
        ("raises", "src/core/condense/index.ts, summarizeConversation (read @04fc2a02): the summary stream is "
                   "iterated without a catch; the error leaves the condense"),
        ("keeps", _LAB_NONE),
        ("keeps", "condense/index.ts: `if (summary.length === 0) { ... errors.condense_failed }`; the sliding window "
                  "hides half the messages, and the next condense summarizes them too (getMessagesSinceLastSummary)"),
        ("error summary", f"condense/index.ts: {_BLIND}"),
        ("keeps", "condense/index.ts (@04fc2a02): `if (newContextTokens >= prevContextTokens) { ... "
                  "errors.condense_context_grew }`: refused, then the sliding window as for an empty summary "
                  "(not checked at @cb836567, the commit harpe_lab.strategies.roo reads)"),
    ),
    "anthropic-sdk-compaction": _source(
        ("raises", "anthropic-sdk-python src/anthropic/lib/tools/_beta_runner.py, _check_and_compact: "
                   "`self._client.beta.messages.create(...)` is not guarded; the tool runner raises"),
        ("keeps", _LAB_NONE),
        ("drops", "_beta_runner.py: `first_content = list(response.content)[0]` must be text, then every message "
                  "is replaced by one user message holding `first_content.text`, empty or not"),
        ("error summary", f"_beta_runner.py: {_BLIND}"),
        ("inflated", f"_beta_runner.py: {_BLIND}"),
    ),
}
"""For every preset that calls a distiller, what its source does for each of
`SUMMARIZER_FAILURES`. A preset missing here has no row in `failing_summarizer_table`."""

FAILURE_KNOBS: Mapping[str, Mapping[str, int]] = {
    "openhands-summarizing": {"max_size": 20},
    "hybrid": {"summarize_turns": 3, "keep_turns": 2, "window": 1_000},
    "langchain-summarization": {"keep": 6},
    "aider": {"history_tokens": 1_024},
}
"""Knobs (besides the budget) that make each preset compact early on `failure_conversation`;
hybrid's masking window is set past the conversation, so only its checkpoints cut."""

FAILURE_TABLE_COLUMNS = (
    "preset", "failure", "outcome", "loses_history", "lost", "at_risk", "at", "detail",
    "source_outcome", "source", "matches_source",
)  # fmt: skip


def _tags(rendered: Rendered) -> set[str]:
    return set(_TAG.findall(_request_text(rendered)))


class FailureOutcome(NamedTuple):
    """What a replay did after its distiller failed (`failure_outcome`)."""

    outcome: str
    """One of `FAILURE_OUTCOMES`."""
    lost: int
    """Messages (with a tag) of the request before the first compaction from the failure on
    that no later request holds, verbatim or in a summary."""
    at_risk: int
    """Messages (with a tag) of that request."""
    at: int
    """The request where the outcome shows (for ``"raises"``: where the distiller failed)."""
    detail: str


def failure_outcome(replay: Any, start: int) -> FailureOutcome:
    """What ``replay`` — of `failure_conversation`, with a `FailingDistiller` — did once its
    distiller failed, first while preparing request ``start``: the error text or the inflated
    summary sent (the first request from ``start`` on that holds it), else whether any
    message was lost from the first compaction from ``start`` on, and if so, whether the
    preset folded it into the failed reply (**drops**: a summary was made from a reply of
    ``None`` or ``""``) or cut it its own way (**falls back**). A replay that raised has no
    `Replay`: `failing_summarizer_table` records it as ``"raises"``."""
    f = replay.requests
    n = len(replay)
    texts = [_request_text(replay.rendered(k)) for k in range(start, n)]
    marked = {mark: next((start + j for j, t in enumerate(texts) if mark in t), None)
              for mark in (_ERROR_MARK, _INFLATED_MARK)}
    compacted = [k for k in range(start, n) if bool(f["compacted"].iloc[k])]
    at = compacted[0] if compacted else start
    at_risk = _tags(replay.rendered(at - 1)) if at > 0 else set()
    later: set[str] = set()
    for t in texts[at - start:]:
        later.update(_TAG.findall(t))
    lost = len(at_risk - later)
    tokens = f["input_tokens"]
    if marked[_ERROR_MARK] is not None:
        j = marked[_ERROR_MARK]
        return FailureOutcome("error summary", lost, len(at_risk), j,
                              f"request {j} sends the error text as the summary; {lost} of {len(at_risk)} messages "
                              "gone")
    if marked[_INFLATED_MARK] is not None:
        j = marked[_INFLATED_MARK]
        before = int(tokens.iloc[j - 1]) if j > 0 else 0
        return FailureOutcome("inflated", lost, len(at_risk), j,
                              f"request {j} sends the inflated summary: {before:,} → {int(tokens.iloc[j]):,} tokens")
    if not lost:
        if not compacted:
            return FailureOutcome("keeps", 0, len(at_risk), start, f"failed at request {start}; nothing cut after it")
        return FailureOutcome("keeps", 0, len(at_risk), at,
                              f"failed at request {start}; from request {at} on, every message of request {at - 1} "
                              "is sent or in a summary")
    # a fold made of no summary — the failed reply (None or ""), or nothing after a call that
    # raised (Aider swaps in the empty result) — is a drop; any other cut is the preset's own
    folded = bool(f["summarized"].iloc[at]) and not any(
        e.kind == "DistillCall" and start <= e.request <= at and e.event.reply for e in replay.events)
    if folded:
        return FailureOutcome("drops", lost, len(at_risk), at,
                              f"request {at}: {lost} of {len(at_risk)} messages gone, nothing in their place")
    return FailureOutcome("falls back", lost, len(at_risk), at,
                          f"request {at}: {lost} of {len(at_risk)} messages cut without a summary of them")


def failing_summarizer_table(
    presets: Iterable[str] | None = None,
    *,
    failures: Iterable[str] = SUMMARIZER_FAILURES,
    conversation: Any = None,
    counter: Any = None,
    budget: int = 2_000,
    times: int = 3,
) -> Any:
    """One row per (preset, failure): what the preset does when its summarizer fails that way,
    and what its source does (columns `FAILURE_TABLE_COLUMNS`).

    ``presets``: names in `harpe_lab.presets.PRESETS` that call a distiller (default: all of
    them; one without a `SOURCE_BEHAVIOUR` entry is refused). Each is built with ``budget``
    (its budget or high-water knob) and `FAILURE_KNOBS`, and replayed on `failure_conversation`
    (``conversation`` tagged, or the default one) with the replay's ``counter`` (default
    cl100k): once with a working `FailingDistiller` (``times=0``), to find the request ``at``
    which it first calls the distiller, then once per failure with a distiller failing its
    first ``times`` calls (three: a compaction that calls it more than once — Gemini CLI's
    summary and its check, LangChain's three attempts — sees only failures). ``lost`` counts the messages of the request before the first compaction
    from then on (``at_risk``) that no later request holds, verbatim or in a summary."""
    import pandas as pd

    from ..presets import PRESETS, make_strategy
    from ..replay import replay

    names = [n for n, p in PRESETS.items() if "distill" in p.needs] if presets is None else list(presets)
    for name in names:
        if name not in PRESETS or "distill" not in PRESETS[name].needs:
            raise EvaluationError(
                f"{name!r} is not a preset that calls a distiller; those are "
                f"{[n for n, p in PRESETS.items() if 'distill' in p.needs]}")
        if name not in SOURCE_BEHAVIOUR:
            raise EvaluationError(f"no source behaviour is written down for {name!r}: add it to SOURCE_BEHAVIOUR")
    failures = tuple(failures)
    for kind in failures:
        if kind not in SUMMARIZER_FAILURES:
            raise EvaluationError(f"failure must be one of {list(SUMMARIZER_FAILURES)}, but {kind!r} was passed")
    if counter is None:
        from ..tokens import TiktokenCounter

        counter = TiktokenCounter("cl100k_base")
    conv = failure_conversation(conversation)

    def run(name: str, distill: FailingDistiller) -> Any:
        knobs = dict(FAILURE_KNOBS.get(name, {}))
        factory = make_strategy(name, budget=knobs.pop("budget", budget), counter=counter,
                                system="You are an operations assistant.", distill=distill, **knobs)
        return replay(conv, factory, counter=counter, name=name)

    rows = []
    for name in names:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a distiller's fallback warns; the table reports it
            working = run(name, FailingDistiller("none", times=0)).requests
        calls = working.index[working["distill_calls"] > 0]
        if not len(calls):
            raise EvaluationError(f"{name!r} never called its distiller on this conversation at budget {budget:,}: "
                                  "lower the budget, or give it knobs in FAILURE_KNOBS")
        start = int(calls[0])
        for kind in failures:
            source = SOURCE_BEHAVIOUR[name][kind]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    result = run(name, FailingDistiller(kind, times=times))
            except Exception as error:  # noqa: BLE001 - the outcome is that it raised
                row = FailureOutcome("raises", 0, 0, start, f"{type(error).__name__}: {error}")
            else:
                row = failure_outcome(result, start)
            outcome, lost, at_risk, at, detail = row
            rows.append((name, kind, outcome, outcome in LOSING_OUTCOMES and lost > 0, lost, at_risk, at, detail,
                         source.outcome, source.what, outcome == source.outcome))
    return pd.DataFrame(rows, columns=list(FAILURE_TABLE_COLUMNS))
