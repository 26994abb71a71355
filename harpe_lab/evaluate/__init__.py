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
                           whether it kept a budget (``budget=``) and why not, relative
                           retention with its denominator, artifact retention, answer
                           accuracy; each column's meaning in ``frame.attrs["columns"]``
`budget_fit`               whether one replay kept a budget, and a note when it did not
                           apply or was not met ("sends up to 23,843 — no budget knob")
`rank_at_budget`           a `compare` frame at a budget, best first by the headline
                           retention, the replays that did not keep the budget unranked
`message_passages`         a conversation's messages as the matcher reads them: with the
                           session day they were said on and the speaker
`needed_next`,             needed-next retention on any recorded session: the references
`needs_totals`,            each recorded reply made to things seen earlier, kept / only in
`lost_needs`               the summary / lost at each request, and where each lost one left
`instructions_kept`,       what the user asked, required or forbade: sent verbatim, carried
`instructions_totals`      by the summary, or lost at each later request
=========================  ================================================================

A probe (`harpe_lab.conversation.Probe`) is asked at turn ``asked_at``; its request is the
first request of that turn. Importers of question-answering datasets (LoCoMo, LongMemEval)
ask their probes after the last turn (``asked_at == len(turns)``), where a replay makes no
request: replay `with_probe_turn` (conversation) instead, which adds one empty final turn so
the strategy renders the context the question would be asked in.

Modules: ``_probes`` (where a probe is asked, what its request knew), ``_passages`` (what the
matcher reads), ``_retention``, ``_artifacts``, ``_answers`` (model answers and the judge,
through `harpe_lab.models`), ``_compare``. Reads `harpe_lab.replay.Replay` objects only;
pandas is imported on first use.
"""


from __future__ import annotations

from ..errors import EvaluationError
from ._answers import ANSWER_COLUMNS, ANSWER_PROMPT, JUDGE_SYSTEM, answer_f1, answer_probes, judge_agreement, normalize_answer
from ._artifacts import artifact_retention
from ._compare import (BUDGET_SLACK, COMPARE_COLUMNS, COMPARE_MEANINGS, HEADLINE, budget_fit, compare,
                       rank_at_budget)
from ._health import (ERROR_TEXT, FAILURE_KNOBS, FAILURE_OUTCOMES, FAILURE_TABLE_COLUMNS, HEALTH_COLUMNS,
                      LOSING_OUTCOMES, MIN_SUMMARY_TOKENS, SOURCE_BEHAVIOUR, SUMMARIZER_FAILURES, FailingDistiller,
                      FailureOutcome, SourceBehaviour, compaction_health, failing_summarizer_table,
                      failure_conversation, failure_outcome, health_frame)
from ._instructions import instructions_kept, instructions_totals, session_instructions
from ._needs import (LOST_COLUMNS, NEEDS_COLUMNS, Need, lost_needs, needed_next, needs_totals, references,
                     session_needs)
from ._passages import message_passages
from ._probes import PROBE_COLUMNS, PROBE_TURN_ID, probe_request, probe_retention, with_probe_turn
from ._retention import RETENTION_COLUMNS, retention

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
    "budget_fit",
    "rank_at_budget",
    "normalize_answer",
    "answer_f1",
    "PROBE_COLUMNS",
    "ANSWER_COLUMNS",
    "COMPARE_COLUMNS",
    "COMPARE_MEANINGS",
    "HEADLINE",
    "BUDGET_SLACK",
    "ANSWER_PROMPT",
    "JUDGE_SYSTEM",
    "PROBE_TURN_ID",
    "needed_next",
    "needs_totals",
    "lost_needs",
    "session_needs",
    "references",
    "Need",
    "NEEDS_COLUMNS",
    "LOST_COLUMNS",
    "instructions_kept",
    "instructions_totals",
    "session_instructions",
    "compaction_health",
    "health_frame",
    "HEALTH_COLUMNS",
    "MIN_SUMMARY_TOKENS",
    "failing_summarizer_table",
    "FailingDistiller",
    "failure_conversation",
    "failure_outcome",
    "FailureOutcome",
    "SUMMARIZER_FAILURES",
    "FAILURE_OUTCOMES",
    "LOSING_OUTCOMES",
    "ERROR_TEXT",
    "SourceBehaviour",
    "SOURCE_BEHAVIOUR",
    "FAILURE_KNOBS",
    "FAILURE_TABLE_COLUMNS",
]
