"""Cline's context management: the SDK's compaction (`BasicCompaction`, `AgenticCompaction`)
and the VS Code extension's legacy context manager (`LegacyContextManager`).

Sources read, cline/cline at commit 21cb8d2525bcedf1f4b6890b27a74a14fe7451e4 (2026-08-22):

* ``sdk/packages/core/src/extensions/context/compaction.ts`` (``createContextCompactionPrepareTurn``)
  — when and how much. Before *every* model request (a turn's first and every one after a
  tool round) Cline estimates the whole request, ``ceil(len(JSON.stringify({systemPrompt,
  messages, tools})) / 3)`` (``@cline/shared`` ``estimateRequestInputTokens``,
  ``CHARS_PER_TOKEN = 3``), and compacts when that is ``>=`` the trigger, ``0.9 × maxInput``
  (``COMPACTION_TRIGGER_RATIO``). ``maxInput`` is the model's max input tokens (capped by its
  context window), or 90% of the window when only that is known, 128,000 when neither is
  (``compaction-shared.ts`` ``resolveEffectiveMaxInputTokens``). The target is
  ``floor(0.7 × trigger)`` (``DEFAULT_TARGET_RATIO``), or ``floor(0.5 × maxInput)`` once the
  messages hold 5 user→assistant alternations and the model reports a max output below
  ``maxInput`` (``resolveAutoRequestTargetTokens``), never above ``trigger - 1``. Both are
  translated to the messages' share by taking off the request's overhead (system prompt and
  tools: the whole request's estimate less the messages' own). A message weighs
  ``max(1, ceil(len(JSON.stringify(message)) / 3))`` (``createTokenEstimator``).
  ``/compact`` (``mode: "manual"``, what ``scripts/compact-session.ts`` runs) compacts
  regardless, to ``floor(min(message trigger, 0.5 × the messages' tokens))``.
* ``basic-compaction.ts`` (``runBasicCompaction``) — no model. Every typed user prompt is kept
  (text blocks trimmed, empty ones dropped), only the latest with its attached files and
  images; the latest turn keeps its newest messages within the target, the kept suffix
  starting at an assistant message; each older turn keeps its final assistant answer (the
  last assistant message of the turn without a tool call, if it has text) when it fits,
  newest turns first; everything else is dropped. The work dropped after a prompt becomes a
  ``<SYSTEM_NOTICE>`` text appended to it (``mergeAdjacentUserTurns``): the files read (with
  line ranges from ``read_files`` inputs), the files edited (line ranges from the numbered
  diff in the ``editor`` result), the commands run (cut at 100 characters), and, verbatim,
  whichever of the conversation's newest 3 assistant texts were dropped there
  (``PRESERVED_ASSISTANT_TEXT_COUNT``). Prompts left adjacent are merged into one, each gap
  bridged by its notice. What survives besides the prompts is frozen (``compaction:
  "preserved"``): a later compaction keeps it as it is. A budget projection
  (``budget-projection/project.ts``) is the safety valve when prompts and frozen messages
  alone exceed the trigger.
* ``agentic-compaction.ts`` (``runAgenticCompaction``) — the newest ``preserveRecentTokens``
  (20,000, capped by the message target) are kept, the cut moved back to the latest typed
  prompt and to a safe boundary (an assistant message or a typed prompt: never between a
  tool call and its result; ``findCutIndex``); the rest after the previous summary is sent to
  the model with ``buildSummaryRequest`` (the previous summary, the files read and edited,
  the conversation serialized with tool results cut to 2,000 characters) and the system
  prompt "Summarize the provided coding session into a concise continuation note with
  detailed next steps."; the reply (with a ``## Files`` section added when it has none)
  becomes one user message, ``"Context summary:\\n\\n" + summary``. An empty reply leaves the
  history as it was; a failing summarizer falls back to ``basic``.
* the legacy extension (``cline/cline@4619bb78^``,
  ``apps/vscode/src/core/context/context-management/ContextManager.ts`` and
  ``context-window-utils.ts``; ``core/prompts/responses.ts`` for the notices) — see
  `LegacyContextManager`.

Checked against Cline's own output: ``../shared/data/real/cline/`` holds a real session and
what ``compact-session.ts`` made of it; `BasicCompaction.compact_manually` produces every
message of ``basic.compaction.json``, text for text, and `AgenticCompaction` the messages
``agentic.compaction.json`` keeps (``tests/strategies/cline/test_cline.py``).

Mapped onto harpe_lab's messages: a `UserInput` is a typed prompt (its text split back into
the SDK's text blocks and ``file`` blocks, which Cline sends, and our importer renders, as
``<file_content path="…">\\n…\\n</file_content>`` joined by blank lines; its attachments are
image blocks); a `ToolResults` is a tool-result-only user message; the summary message this
module writes is the one user message that is neither. Estimates serialize each message as
the SDK stores it (``{"role", "content": [blocks]}``) in JavaScript string length; the ids,
timestamps, model info and metrics Cline also stores in each message are not known here, so
our estimates run a little lower than Cline's (about 150 characters a message).

Not modelled: Cline's compaction state projection across sessions; images' bytes (an image
counts nothing); thinking blocks (not message text here); the overflow-recovery mode (it
runs ``basic`` after the provider refused a request, which a replay never sees).
"""

from __future__ import annotations

import math

# The package's modules, one concept each; every name the single module `cline.py` had is
# re-exported here, private ones included, so `from harpe_lab.strategies.cline import X` keeps working.
from ._measures import (  # noqa: F401
    CHARS_PER_TOKEN,
    COMMAND_CHARS,
    DEFAULT_MAX_INPUT,
    DUPLICATE_FILE_READ_NOTICE,
    LEGACY_TRUNCATION_NOTICE,
    LONG_CONVERSATION_TARGET_RATIO,
    MANUAL_TARGET_RATIO,
    MIN_SUMMARY_INPUT_TOKENS,
    PRESERVED_ASSISTANT_TEXTS,
    PRESERVE_RECENT_TOKENS,
    SUMMARY_SYSTEM,
    TARGET_RATIO,
    TOOL_RESULT_CHARS,
    TRIGGER_RATIO,
    _FILE_CLOSE,
    _FILE_OPEN,
    _MEMO_MAX,
    _PARSED,
    _PRESERVED,
    _SIZES,
    _SIZES_MAX,
    _SUMMARY,
    _USER_SIZES,
    _blocks,
    _estimate_chars,
    _is_typed,
    _join,
    _js_len,
    _json,
    _message_chars,
    _message_json,
    _pairs,
    _parse_blocks,
    _parsed,
    _request_frame_chars,
    _user_chars,
    _user_json,
    estimate_message,
)
from ._notice import (  # noqa: F401
    ToolActivity,
    _DIFF_LINE,
    _assistant_text,
    _collect_paths,
    _diff_range,
    _is_mapping,
    _js_number,
    _push,
    _sep,
    dropped_work_notice,
    tool_activity,
)
from ._projection import (  # noqa: F401
    _any_image,
    _drop_images,
    _first_user,
    _has_text,
    _latest_user,
    _project,
    _protected_tail,
    _tool_ids,
    _truncate_message,
    _truncate_text,
)
from ._basic import (  # noqa: F401
    _SANITIZED,
    _TEXT_ONLY,
    _basic,
    _basic_after,
    _merge,
    _sanitize_typed,
    _sanitized,
    _text_only,
    _with_notice,
    _without_attachments,
    _without_attachments_chars,
    settled_until,
)
from ._agentic import (  # noqa: F401
    _FILES_SECTION,
    _FILE_OPS,
    _NOTHING,
    _Summary,
    _cut_index,
    _cut_text,
    _ensure_files_section,
    _file_op_sets,
    _file_ops,
    _locale_key,
    _merge_unique,
    _message_file_ops,
    _safe_cut,
    _serialize,
    _sorted_ops,
    summary_message,
    summary_request,
)
from ._sdk import (  # noqa: F401
    AgenticCompaction,
    BasicCompaction,
    ClineCompacted,
    ClineContext,
    _SDKCompaction,
    _SummarizerFailed,
)
from ._legacy import (  # noqa: F401
    LegacyContext,
    LegacyContextManager,
    LegacyTruncated,
    _Block,
    _FILE_MENTION,
    _FINAL_FILE,
    _READ_HEADER,
    _mentions,
    _results_follow_calls,
    max_allowed_size,
)
from ...errors import StrategyError
from ...protocol import Distill
from .._preset import Factory, Knob, Preset, make_distiller
from typing import Any, Callable

__all__ = [
    "DEFAULT_MAX_INPUT",
    "TRIGGER_RATIO",
    "TARGET_RATIO",
    "LONG_CONVERSATION_TARGET_RATIO",
    "PRESERVE_RECENT_TOKENS",
    "PRESERVED_ASSISTANT_TEXTS",
    "SUMMARY_SYSTEM",
    "LEGACY_TRUNCATION_NOTICE",
    "DUPLICATE_FILE_READ_NOTICE",
    "estimate_message",
    "tool_activity",
    "ToolActivity",
    "dropped_work_notice",
    "summary_request",
    "summary_message",
    "max_allowed_size",
    "ClineCompacted",
    "BasicCompaction",
    "AgenticCompaction",
    "ClineContext",
    "LegacyContextManager",
    "LegacyContext",
    "LegacyTruncated",
    "PRESETS",
]


# --- presets ------------------------------------------------------------------------------


def _cline_knobs() -> tuple[Knob, Knob, Knob]:
    return (Knob(name="high_water", unit="tokens", default=None, scales=True,
                 help="the trigger: Cline's estimate of the request (its JSON at 3 characters a token, system "
                      "prompt and tools included) at which it compacts, before sending; default 90% of window"),
            Knob(name="window", unit="tokens", default=128_000, minimum=1,
                 help="Cline's max input: the model's max input tokens (at most its context window), or 90% of "
                      "the window when only that is known, 128,000 when neither; a property of the model"),
            Knob(name="max_output", unit="tokens", default=None, minimum=1,
                 help="the model's max output tokens, when it reports one: below window, a conversation of 5 or "
                      "more exchanges is compacted to half of window instead of 70% of the trigger (default: not "
                      "reported)"))


def _cline(agentic: bool) -> Callable[..., Factory]:
    def build(*, system: str, tools: tuple, distill: Distill | None, high_water: int | None, window: int,
              max_output: int | None, preserve: int = 0, **_: Any) -> Factory:
        if high_water is not None and high_water > window:
            raise StrategyError(f"high_water must be at most window ({window:,}), got {high_water:,}: Cline "
                                "compacts below its max input; raise window")
        if not agentic:
            basic = BasicCompaction(max_input=window, trigger=high_water, max_output=max_output)
            return lambda: basic.context(system, tools=tools)
        config = AgenticCompaction(max_input=window, trigger=high_water, max_output=max_output,
                                   preserve_recent_tokens=preserve)
        # the summary is capped at DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS, 4,096 tokens: 12,288
        # characters at Cline's own 3 a token, a ninth of a character per token of the
        # default 115,200 trigger; a smaller trigger gets a summary in that proportion (a
        # larger one would leave summary and kept tail above the trigger, compacting again)
        make = make_distiller(distill, min(12_288, math.floor(config.trigger_tokens) // 9))
        return lambda: config.context(system, distill=make(), tools=tools)

    return build


def _cline_legacy(*, system: str, high_water: int | None, window: int, **_: Any) -> Factory:
    config = LegacyContextManager(context_window=window, max_allowed=high_water)
    return lambda: config.context(system)


PRESETS: tuple[Preset, ...] = (
    Preset(name="cline-basic", family="cline",
           source="Cline SDK (`cline/cline` @21cb8d25) `sdk/packages/core/src/extensions/context/compaction.ts`, "
                  "`basic-compaction.ts`, `compaction-shared.ts`, `budget-projection/project.ts`; reproduces "
                  "`sdk/packages/core/fixtures/session/basic.compaction.json`",
           description="Cline's basic compaction (no model): at 90% of max input, every typed prompt kept, older "
                       "turns' final answers, the latest turn's newest messages, and a notice of the files read and "
                       "edited and the commands run",
           knobs=_cline_knobs(),
           limit_kind="target", _make=_cline(False),
           note="decided before each request by Cline's own estimate (the request's JSON at 3 characters a token), "
                "not by reported usage; prompts are never dropped, so a long session's prompts alone can stay above "
                "the trigger"),
    Preset(name="cline-agentic", family="cline",
           source="Cline SDK (`cline/cline` @21cb8d25) `sdk/packages/core/src/extensions/context/compaction.ts`, "
                  "`agentic-compaction.ts`, `compaction-shared.ts`; checked on "
                  "`sdk/packages/core/fixtures/session/agentic.compaction.json`",
           description="Cline's agentic compaction (its default): at 90% of max input, the newest preserve tokens "
                       "verbatim and the rest, with the previous summary, summarized into one \"Context summary\" "
                       "message",
           knobs=(*_cline_knobs(),
                  Knob(name="preserve", unit="tokens", default=20_000, minimum=0, scales=True,
                       help="preserveRecentTokens: the newest messages kept verbatim (Cline's estimate), capped by "
                            "the target; the cut never passes the latest typed prompt or splits a tool round")),
           needs=frozenset({"distill"}), limit_kind="target", _make=_cline(True),
           note="the summarizer sees the folded messages with tool results cut to 2,000 characters; an empty "
                "summary leaves the history as it was, a failing summarizer falls back to cline-basic"),
    Preset(name="cline-legacy", family="cline",
           source="Cline VS Code extension (`cline/cline` @4619bb78^) "
                  "`apps/vscode/src/core/context/context-management/ContextManager.ts`, `context-window-utils.ts`, "
                  "`apps/vscode/src/core/prompts/responses.ts`",
           description="Cline's legacy context manager: once the last request used max_allowed tokens, earlier "
                       "reads of re-read files replaced by a notice; under 30% saved, half (or three quarters) of "
                       "the history after the first exchange deleted",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="maxAllowedSize: the previous request's input plus output tokens at which it acts; "
                            "default by the window table: 64k − 27k, 128k − 30k, 200k − 40k, else the larger of "
                            "window − 40k and 80% of window"),
                  Knob(name="window", unit="tokens", default=128_000, minimum=1,
                       help="the model's context window (128,000 when Cline does not know it); a property of the "
                            "model, not of the conversation")),
           limit_kind="high_water", _make=_cline_legacy,
           note="reactive: the request that crosses goes out; the deleted range only grows, and the first "
                "reply's text becomes the truncation notice; duplicate reads are recognized in Cline's own tool "
                "formats only"),
)
