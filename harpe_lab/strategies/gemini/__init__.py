"""Gemini CLI's context management: chat compression (`ChatCompression`) and tool-output
masking (`ToolOutputMasking`).

Sources read: google-gemini/gemini-cli at commit 5411f113cafae26161b4969b0237b8e1e024e2c2
(2026-08-21), all under ``packages/core/src/``:

* the trigger — ``context/chatCompressionService.ts`` (``ChatCompressionService.compress``):
  nothing happens while ``chat.getLastPromptTokenCount() < threshold * tokenLimit(model)``;
  ``DEFAULT_COMPRESSION_TOKEN_THRESHOLD = 0.5``, and ``core/tokenLimits.ts`` gives every
  Gemini 2.5/3 model ``1_048_576``. The count is the last reply's reported
  ``promptTokenCount`` (``core/geminiChat.ts``), replaced by an estimate of the history
  whenever the history is replaced (a new chat after a compression, ``setHistory``).
* when — ``core/client.ts`` (``processTurn``): ``tryCompressChat`` runs before *every* model
  call, the ones that send tool results back included, on the chat history *before* the
  request being sent (the new user message, or the function responses) is added to it. That
  request then follows whatever history the compression left.
* the pre-pass — ``truncateHistoryToBudget``: newest first, function responses are kept whole
  while their estimated tokens total at most ``COMPRESSION_FUNCTION_RESPONSE_TOKEN_BUDGET =
  50_000``; every older one is saved to a file and replaced by ``formatTruncatedToolOutput``
  (``utils/fileUtils.ts``): an output longer than ``truncateToolOutputThreshold`` (40,000
  characters, ``config/config.ts``) keeps its first 20% and last 80% of that, under a header
  naming the file (the comment says "last 30 lines"; the code cuts characters). A shorter
  output is kept as it is, but still counts against the budget.
* the split — ``findCompressSplitPoint(history, 1 - 0.3)``: the newest ~30% of the history,
  measured in ``JSON.stringify`` characters of each ``Content``, is kept; the cut lands only
  before a user message that is not a function response. Everything is compressed when the
  history ends with a model message without a function call; when no user message lies past
  70% of the characters, the cut is the last one before it (possibly 0: nothing to compress,
  so a single long agent turn is never compressed).
* the summary — two calls: the history to compress (the original, or the truncated one when
  the original is over the model's window) with an instruction to write a ``<state_snapshot>``
  (to integrate the previous one, when the history holds one), then the same history, that
  answer, and "Critically evaluate the <state_snapshot> you just generated…" — the second
  answer, trimmed, is the summary (the first one when the second is empty).
* the result — ``[user: summary, model: "Got it. Thanks for the additional context!",
  …the kept 30%, truncated]``. Its estimate (``utils/tokenCalculation.ts``,
  ``estimateTokenCountSync``) is compared with the count that triggered it: a larger one
  is ``COMPRESSION_FAILED_INFLATED_TOKEN_COUNT``, the history is left as it was, and
  ``client.ts`` latches ``hasFailedCompressionAttempt``: every later automatic attempt only
  truncates (``CONTENT_TRUNCATED`` when the truncated history's estimate is below the count)
  and never summarizes again, until a new chat. An empty summary is
  ``COMPRESSION_FAILED_EMPTY_SUMMARY``: nothing changes, nothing latches.
* masking — ``context/toolOutputMaskingService.ts``, run by ``client.ts`` right after the
  compression check, on the same history: newest first, skipping the history's last message
  (``protectLatestTurn``), exempt tools and outputs already masked, function responses fill
  a 50,000-token "protected" window (``DEFAULT_TOOL_PROTECTION_THRESHOLD``); the one that
  crosses it and every older one are prunable, and all of them are masked only when they
  total at least 30,000 tokens (``DEFAULT_MIN_PRUNABLE_TOKENS_THRESHOLD``). A masked output
  becomes ``<tool_output_masked>{preview}…</tool_output_masked>``: the shell tool's Output
  section cut to 10 head and 10 tail lines (its other sections whole), any other tool's
  pretty-printed response cut to 250 head and 250 tail characters. An output is masked only
  when that saves tokens; a masked output is never looked at again, so the prefix changes
  only at each batch.

Mapped onto harpe_lab's messages: a `UserInput` is a user ``Content`` with one text part; an
`AssistantMessage` a model ``Content`` (its text, then one ``functionCall`` per call); a
`ToolResults` a user ``Content`` of ``functionResponse`` parts, each ``{"output": content}``
named after its call's tool (a failed result too). The history a check sees is the
transcript without its last message when that is the request's own (a turn's input, or the
tool results being sent back). Character and token estimates are Gemini's own formulas
over that serialization (ids left out; the engine prices what is sent with the replay's
counter, so only *where* Gemini cuts depends on them).

Not modelled: the environment context Gemini puts at the head of every new chat; the
execution-time truncation of shell output (the recordings hold what the tools returned);
the experimental ``generalist`` profile; manual ``/compress``; the files themselves (a
truncated or masked output names the file Gemini would have written, without the random
suffix a masked one's name gets). The summary comes from the distiller given, asked with
Harpe's distill request and our own words for Gemini's snapshot prompt; a summary without
``<state_snapshot>`` tags is sent wrapped in them.

Layout (one concept per module, each importing only those above it):

* ``_measures``: Gemini's character and token estimates of its history (`estimate_tokens`)
* ``_shared``: what both contexts use — the saved-output directory, argument checks, where
  the history ends, the edits a request reports
* ``_compression``: `ChatCompression`, `ChatCompressionContext`, `Compression` and the
  truncation, split and snapshot they rest on
* ``_masking``: `ToolOutputMasking`, `ToolOutputMaskingContext`, `OutputsMasked`, `masked_output`
"""

from __future__ import annotations

from ._compression import (ACKNOWLEDGEMENT, COMPRESSION_SYSTEM, COMPRESSION_THRESHOLD, FUNCTION_RESPONSE_BUDGET,
                           PRESERVE_FRACTION, PROBE_PROMPT, TOKEN_LIMIT, TRUNCATE_CHARS, ChatCompression,
                           ChatCompressionContext, Compression, CompressionStatus, snapshot_message, split_point,
                           truncated_output)
from ._masking import (EXEMPT_TOOLS, MIN_PRUNABLE_TOKENS, PROTECT_TOKENS, SHELL_TOOL, OutputsMasked,
                       ToolOutputMasking, ToolOutputMaskingContext, masked_output)
from ._measures import estimate_tokens
from ._shared import OUTPUT_DIR

# the private helpers the single module held, still importable from here as they were
from ._compression import _ANCHOR_NEW, _ANCHOR_PREVIOUS, _SNAPSHOT_CLOSE, _SNAPSHOT_OPEN, _unwrapped  # noqa: F401
from ._masking import _MASK_OPEN, _MASK_TAG, _SHELL_SECTIONS, _is_masked, _shell_preview, _simple_preview  # noqa: F401
from ._measures import (_COMPACT_JSON, _FULL_HEURISTIC_CHARS, _PLAIN_BYTES, _SHORT_ESCAPES, _dumps,  # noqa: F401
                        _measure, _name_units, _quoted, _response_tokens, _text_estimate, _text_measure,
                        _tool_names, _units, _utf16)
from ._shared import _check_context, _check_fraction, _fraction_of, _history_end, _safe  # noqa: F401
from ...errors import StrategyError
from ...protocol import Distill
from .._preset import Factory, Knob, Preset, make_distiller
from typing import Any

__all__ = [
    "TOKEN_LIMIT",
    "COMPRESSION_THRESHOLD",
    "PRESERVE_FRACTION",
    "FUNCTION_RESPONSE_BUDGET",
    "TRUNCATE_CHARS",
    "ACKNOWLEDGEMENT",
    "PROBE_PROMPT",
    "COMPRESSION_SYSTEM",
    "PROTECT_TOKENS",
    "MIN_PRUNABLE_TOKENS",
    "EXEMPT_TOOLS",
    "SHELL_TOOL",
    "OUTPUT_DIR",
    "estimate_tokens",
    "truncated_output",
    "split_point",
    "snapshot_message",
    "masked_output",
    "ChatCompression",
    "ChatCompressionContext",
    "Compression",
    "ToolOutputMasking",
    "ToolOutputMaskingContext",
    "OutputsMasked",
    "PRESETS",
]


# --- presets ------------------------------------------------------------------------------


def _gemini_compress(*, system: str, distill: Distill | None, high_water: int | None, window: int,
                     truncate_chars: int, **_: Any) -> Factory:
    if high_water is not None and high_water > window:
        raise StrategyError(f"high_water must be at most window ({window:,}), got {high_water:,}: Gemini's threshold "
                            "is a fraction of the window; raise window")
    threshold = COMPRESSION_THRESHOLD if high_water is None else high_water / window
    config = ChatCompression(window=window, threshold=threshold, truncate_chars=truncate_chars)
    # a state snapshot is dense but short: a few thousand tokens, well under what it replaces
    make = make_distiller(distill, min(12_000, config.trigger))
    return lambda: config.context(system, distill=make())


def _gemini_masking(*, system: str, protect: int, min_prunable: int, **_: Any) -> Factory:
    config = ToolOutputMasking(protect=protect, min_prunable=min_prunable)
    return lambda: config.context(system)


PRESETS: tuple[Preset, ...] = (
    Preset(name="gemini-compress", family="gemini-cli",
           source="Gemini CLI (`google-gemini/gemini-cli` @5411f113) `packages/core/src/context/"
                  "chatCompressionService.ts`, `packages/core/src/core/client.ts`, `packages/core/src/utils/fileUtils.ts`",
           description="Gemini CLI's chat compression: at half the window, all but the newest 30% of the history "
                       "(by characters, cut before a user message) becomes a <state_snapshot> message, written and "
                       "then checked by a second call",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="the trigger: the last reported prompt tokens at which Gemini compresses before the next "
                            "call; default: half of window (model.compressionThreshold 0.5)"),
                  Knob(name="window", unit="tokens", default=1_048_576, minimum=2,
                       help="tokenLimit(model): 1,048,576 for Gemini 2.5 and 3; a property of the model, not of the "
                            "conversation"),
                  Knob(name="truncate_chars", unit="characters", default=40_000, minimum=1,
                       help="truncateToolOutputThreshold: a function response past the newest 50,000 tokens keeps "
                            "its first 20% and last 80% of this")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_gemini_compress,
           note="reactive: the call that crosses the trigger goes out; two summarizer calls per compression; a "
                "compression that would not shrink the history is refused, and from then on only old function "
                "responses are truncated; a long agent turn holds no user message to cut before, so it is never "
                "compressed"),
    Preset(name="gemini-masking", family="gemini-cli",
           source="Gemini CLI (`google-gemini/gemini-cli` @5411f113) `packages/core/src/context/"
                  "toolOutputMaskingService.ts`",
           description="Gemini CLI's tool-output masking: past the newest protect tokens of tool output, once "
                       "min_prunable tokens can go, every older output is replaced by a head and tail preview",
           knobs=(Knob(name="protect", unit="tokens", default=50_000, minimum=0, scales=True,
                       help="the newest tool-output tokens never masked (Gemini's estimate: 4 characters a token)"),
                  Knob(name="min_prunable", unit="tokens", default=30_000, minimum=0, scales=True,
                       help="masking waits until the outputs past the protected ones come to this many tokens")),
           _make=_gemini_masking,
           note="batched: the cached prefix breaks once per batch, and what was masked stays masked; the request's "
                "own tool results are never masked; no limit declared"),
)
