"""The coding agents' presets: the compaction of Codex CLI, Cline, Aider, Gemini CLI,
OpenCode, Goose and Roo Code, and the providers' own (the Anthropic SDK's tool runner,
OpenAI Realtime's truncation)."""

from __future__ import annotations

import math
from typing import Any, Callable

from ..errors import StrategyError
from ..protocol import Distill
from ._common import _distiller, _fixed_tokens
from .registry import Factory, Knob, Preset

__all__ = ["AGENTS"]


def _codex(*, system: str, distill: Distill | None, high_water: int | None, window: int, user_tokens: int,
           reasoning: int, **_: Any) -> Factory:
    from ..strategies.codex import AUTO_COMPACT_PERCENT, Compact

    most = window * AUTO_COMPACT_PERCENT // 100
    if high_water is not None and high_water > most:
        raise StrategyError(f"high_water must be at most 90% of window ({most:,}), got {high_water:,}: Codex takes "
                            "the smaller of the two; raise window")
    config = Compact(window=window, token_limit=high_water, user_tokens=user_tokens, reasoning=reasoning)
    # a handoff summary is "concise, structured": the recorded compaction's item held about
    # 9,400 bytes by Codex's own estimate of it (13,412 encrypted bytes, 2,352 tokens)
    make = _distiller(distill, min(9_000, config.limit))
    return lambda: config.context(system, distill=make())


def _codex_truncation(*, system: str, max_tokens: int, **_: Any) -> Factory:
    from ..strategies.codex import ToolOutputTruncation

    policy = ToolOutputTruncation(max_tokens=max_tokens)
    return lambda: policy.context(system)


def _cline(agentic: bool) -> Callable[..., Factory]:
    def build(*, system: str, tools: tuple, distill: Distill | None, high_water: int | None, window: int,
              max_output: int | None, preserve: int = 0, **_: Any) -> Factory:
        from ..strategies.cline import AgenticCompaction, BasicCompaction

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
        make = _distiller(distill, min(12_288, math.floor(config.trigger_tokens) // 9))
        return lambda: config.context(system, distill=make(), tools=tools)

    return build


def _cline_legacy(*, system: str, high_water: int | None, window: int, **_: Any) -> Factory:
    from ..strategies.cline import LegacyContextManager

    config = LegacyContextManager(context_window=window, max_allowed=high_water)
    return lambda: config.context(system)


def _aider(*, counter: Any, system: str, distill: Distill | None, history_tokens: int | None, window: int,
           **_: Any) -> Factory:
    from ..strategies.aider import Aider

    config = Aider(window=window, history_tokens=history_tokens)
    # Aider asks for a brief summary: about half the history budget, at 4 characters a token
    make = _distiller(distill, int(config.budget) * 2)
    return lambda: config.context(system, counter=counter, distill=make())


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

def _gemini_compress(*, system: str, distill: Distill | None, high_water: int | None, window: int,
                     truncate_chars: int, **_: Any) -> Factory:
    from ..strategies.gemini import COMPRESSION_THRESHOLD, ChatCompression

    if high_water is not None and high_water > window:
        raise StrategyError(f"high_water must be at most window ({window:,}), got {high_water:,}: Gemini's threshold "
                            "is a fraction of the window; raise window")
    threshold = COMPRESSION_THRESHOLD if high_water is None else high_water / window
    config = ChatCompression(window=window, threshold=threshold, truncate_chars=truncate_chars)
    # a state snapshot is dense but short: a few thousand tokens, well under what it replaces
    make = _distiller(distill, min(12_000, config.trigger))
    return lambda: config.context(system, distill=make())


def _gemini_masking(*, system: str, protect: int, min_prunable: int, **_: Any) -> Factory:
    from ..strategies.gemini import ToolOutputMasking

    config = ToolOutputMasking(protect=protect, min_prunable=min_prunable)
    return lambda: config.context(system)


def _opencode(*, system: str, distill: Distill | None, high_water: int | None, window: int, max_output: int,
              prune: int, **_: Any) -> Factory:
    from ..strategies.opencode import SessionCompaction

    room = window - max_output
    if room < 1:
        raise StrategyError(f"window ({window:,}) must be larger than max_output ({max_output:,}): OpenCode reserves "
                            "the output below the window; raise window")
    if high_water is not None and high_water > room:
        raise StrategyError(f"high_water must be at most window - max_output ({room:,}), got {high_water:,}: OpenCode "
                            "reserves the output below the window; raise window")
    reserved = None if high_water is None else room - high_water  # OpenCode's compaction.reserved
    config = SessionCompaction(window=window, max_output=max_output, reserved=reserved, prune=bool(prune))
    make = _distiller(distill, min(8_000, config.usable))
    return lambda: config.context(system, distill=make())


def _goose(*, system: str, distill: Distill | None, high_water: int | None, window: int, **_: Any) -> Factory:
    from ..strategies.goose import COMPACTION_THRESHOLD, ContextManagement

    if high_water is not None and high_water >= window:
        raise StrategyError(f"high_water must be below window ({window:,}), got {high_water:,}: Goose's threshold is a "
                            "fraction of the window under 1; raise window")
    config = ContextManagement(window=window,
                               threshold=COMPACTION_THRESHOLD if high_water is None else high_water / window)
    make = _distiller(distill, min(8_000, config.threshold_tokens))
    if distill is not None:  # one distiller for both, as one (stateful) summarizer would be
        return lambda: config.context(system, distill=make())
    pairs = _distiller(None, 300)  # offline, a tool pair's summary is one short line
    return lambda: config.context(system, distill=make(), pair_distill=pairs())


def _roo(*, counter: Any, system: str, tools: tuple, distill: Distill | None, high_water: int | None, window: int,
         percent: int, **_: Any) -> Factory:
    from ..strategies.roo import MAX_TOKENS, TOKEN_BUFFER_PERCENTAGE, Condense

    most = math.floor(round(window * (1 - TOKEN_BUFFER_PERCENTAGE), 6))
    if high_water is not None and high_water > most:
        raise StrategyError(f"high_water must be at most 90% of window ({most:,}), got {high_water:,}: Roo keeps 10% "
                            "of the window free; raise window")
    # Roo's allowed tokens are 90% of the window less the reply's reserve: a lower high water
    # is a larger reserve
    max_tokens = MAX_TOKENS if high_water is None else most - high_water
    if max_tokens >= most:
        raise StrategyError(f"window {window:,} leaves nothing allowed below its 90% once {MAX_TOKENS:,} tokens are "
                            "reserved for the reply; raise window")
    config = Condense(window=window, max_tokens=max_tokens, percent=percent)
    make = _distiller(distill, min(8_000, config.high_water))
    return lambda: config.context(system, counter=counter, distill=make(), tools=tools)


def _anthropic_sdk(*, system: str, distill: Distill | None, high_water: int, **_: Any) -> Factory:
    from ..strategies.providers import ToolRunnerCompaction

    config = ToolRunnerCompaction(threshold=high_water)
    make = _distiller(distill, min(8_000, high_water))
    return lambda: config.context(system, distill=make())


def _retention_ratio(*, counter: Any, system: str, tools: tuple, budget: int, retention: int, **_: Any) -> Factory:
    from ..strategies.providers import RetentionRatio

    room = budget - _fixed_tokens(counter, system, tools)
    if room < 1:
        raise StrategyError(
            f"budget {budget:,} tokens leaves no room for messages: the system prompt and tools alone take "
            f"{budget - room:,}; raise the budget"
        )
    config = RetentionRatio(limit=room, ratio=retention / 100)
    return lambda: config.context(system, counter=counter, tools=tools)
AGENTS: tuple[Preset, ...] = (
    Preset(name="codex", family="openai-codex",
           source="Codex CLI 0.104 (`openai/codex` @5e505ff8) `codex-rs/core/src/compact.rs`, "
                  "`codex-rs/core/src/codex.rs` (`run_turn`), `codex-rs/core/src/context_manager/history.rs`, "
                  "`codex-rs/protocol/src/openai_models.rs`; checked on a recorded compaction",
           description="Codex CLI's auto-compaction: at 90% of the window, the history becomes the newest user "
                       "messages (20,000 tokens) and one summary message",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="the auto-compact limit: Codex's count (last reported input and output, plus tool outputs "
                            "since at 4 bytes a token, plus reasoning per earlier call) at which it compacts; "
                            "default: 90% of window (244,800), the most Codex allows"),
                  Knob(name="window", unit="tokens", default=272_000, minimum=2,
                       help="the model's context window (272,000 for gpt-5.x-codex; rollouts show 95% of it, "
                            "258,400); a property of the model, not of the conversation"),
                  Knob(name="user_tokens", unit="tokens", default=20_000, minimum=0,
                       help="the newest user messages kept verbatim, at 4 bytes a token; the one that crosses it "
                            "is cut in the middle"),
                  Knob(name="reasoning", unit="tokens per model call", default=0, minimum=0, maximum=5_000,
                       help="added to the count for each reply before the newest user message: Codex's estimate "
                            "of the encrypted reasoning it resends, which the reported usage leaves out and "
                            "transcripts do not record (the recorded gpt-5.3-codex session: about 187)")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_codex,
           note="reactive: the call that crosses the limit goes out; assistant messages and tool outputs are all "
                "dropped, so the cached prefix is lost; with reasoning 0 it fires later than Codex, whose count "
                "adds the reasoning transcripts do not record"),
    Preset(name="codex-truncation", family="openai-codex",
           source="Codex CLI 0.104 (`openai/codex` @5e505ff8) `codex-rs/core/src/truncate.rs`, "
                  "`codex-rs/core/src/context_manager/history.rs` (`process_item`)",
           description="Codex CLI's tool-output truncation: each output over 1.2 × max_tokens (4 bytes a token) "
                       "kept as its head and tail around \"…N tokens truncated…\"",
           knobs=(Knob(name="max_tokens", unit="tokens", default=10_000, minimum=0,
                       help="the model's truncation_policy (tool_output_token_limit); outputs are recorded at 1.2 "
                            "times it: 12,000 tokens, 48,000 UTF-8 bytes, half head and half tail"),),
           _make=_codex_truncation,
           note="cuts every output as it is recorded, the newest too, and nothing else: the cached prefix always "
                "survives; no limit declared"),
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
    Preset(name="aider", family="aider",
           source="Aider (`Aider-AI/aider` @5dc9490b; aider-chat 0.86.2) `aider/history.py` (`ChatSummary`), "
                  "`aider/coders/base_coder.py` (`summarize_start`, `summarize_end`), `aider/models.py`; checked "
                  "against Aider's own ChatSummary (`harpe_lab.peers.aider`)",
           description="Aider's chat history summary: finished turns over history_tokens summarized in the "
                       "background (the head recursively, the tail under half the budget kept), landing one turn "
                       "late as a user message and \"Ok.\"",
           knobs=(Knob(name="history_tokens", unit="tokens", default=None, scales=True,
                       help="--max-chat-history-tokens: the finished history's budget (each message as the tokens "
                            "of its JSON); default min(max(window / 16, 1,024), 8,192)"),
                  Knob(name="window", unit="tokens", default=128_000, minimum=1,
                       help="the model's max input tokens (it sets the default budget, and how much of the head one "
                            "summary reads: window − 512); a property of the model")),
           needs=frozenset({"counter", "distill"}), _make=_aider,
           note="the current turn is never summarized and the summary lands with the next turn: a long agent turn "
                "goes out whole; a failing summarizer empties the history, as in Aider; no limit declared"),
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
    Preset(name="opencode", family="opencode",
           source="OpenCode (`sst/opencode` @3df4a255) `packages/opencode/src/session/compaction.ts`, "
                  "`packages/opencode/src/session/overflow.ts`, `packages/opencode/src/session/prompt.ts`",
           description="OpenCode's compaction: at usable tokens, all but a recent tail (a quarter of usable, 2,000 to "
                       "15,000 tokens) is summarized; at each turn's end, tool outputs past the newest 40,000 tokens "
                       "are cleared when more than 20,000 can go",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="usable: the last reply's reported tokens at which OpenCode compacts; default: window - "
                            "max_output - min(20,000, max_output)"),
                  Knob(name="window", unit="tokens", default=200_000, minimum=2,
                       help="the model's context limit; a property of the model, not of the conversation"),
                  Knob(name="max_output", unit="tokens", default=32_000, minimum=0,
                       help="the model's output limit, capped at 32,000 by OpenCode"),
                  Knob(name="prune", unit="on/off", default=1, minimum=0, maximum=1,
                       help="compaction.prune: clear old tool outputs at each turn's end (1; OpenCode's own default "
                            "is off)")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_opencode,
           note="reactive: the reply that reaches usable has been sent; the tail's budget follows usable, so a low "
                "high_water keeps only 2,000 tokens; pruning edits old results in place, once per turn"),
    Preset(name="goose", family="goose",
           source="Goose (`block/goose` @331a8429) `crates/goose/src/context_mgmt/mod.rs`, "
                  "`crates/goose/src/agents/agent.rs`",
           description="Goose's context management: a turn that starts above 80% of the window compacts everything "
                       "into a summary and re-sends its input; past a cutoff of visible tool calls, the oldest are "
                       "replaced by one-line summaries, a batch at a time",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="the last call's reported tokens above which the next turn starts with a compaction; "
                            "default: 80% of window (GOOSE_AUTO_COMPACT_THRESHOLD); the tool-call cutoff is it / "
                            "10,000, clamped to 10 to 500, the batch a fifth of that (at least 3)"),
                  Knob(name="window", unit="tokens", default=128_000, minimum=2,
                       help="the model's context_limit (128,000 when Goose does not know the model); a property of "
                            "the model, not of the conversation")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_goose,
           note="checked only when a turn starts: a long agent turn is never compacted; the tool-pair summaries "
                "change the prefix whenever a batch lands, and their lines pile up at the end of the history"),
    Preset(name="roo", family="roo-code",
           source="Roo Code (`RooCodeInc/Roo-Code` @cb836567) `src/core/context-management/index.ts`, "
                  "`src/core/condense/index.ts`, `src/core/condense/foldedFileContext.ts`",
           description="Roo Code's condense: at 90% of the window less the reply's 8,192, everything becomes one "
                       "summary message with outlines of the files read; when that fails, half the messages are "
                       "hidden",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="allowedTokens: Roo's count (last reported input and output, plus the message being sent) "
                            "above which it condenses; default: 90% of window - 8,192"),
                  Knob(name="window", unit="tokens", default=200_000, minimum=2,
                       help="the model's context window; a property of the model, not of the conversation"),
                  Knob(name="percent", unit="% of the window", default=100, minimum=5, maximum=100,
                       help="autoCondenseContextPercent: also condense at this share of the window")),
           needs=frozenset({"counter", "distill"}), limit_kind="high_water", _make=_roo,
           note="reactive on the previous call's usage; a fresh start: after a condense the model sees the summary "
                "message alone; file outlines are drawn from what the read tools returned, not by tree-sitter"),
    Preset(name="anthropic-sdk-compaction", family="anthropic",
           source="anthropic-sdk-python (`anthropics/anthropic-sdk-python` @009b0353) "
                  "`src/anthropic/lib/tools/_beta_runner.py`, `src/anthropic/lib/tools/_beta_compaction_control.py`",
           description="The Anthropic SDK tool runner's compaction_control: once a response used 100,000 tokens, the "
                       "history before it becomes one summary message and the response is discarded",
           knobs=(Knob(name="high_water", unit="tokens", default=100_000, scales=True,
                       help="context_token_threshold: the response's input (cache included) plus output tokens"),),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_anthropic_sdk,
           note="reactive; the response that crossed the threshold and its tool results are dropped unseen (the SDK "
                "never runs those calls), so the newest messages are lost at each compaction"),
    Preset(name="retention-ratio", family="openai-realtime",
           source="OpenAI Realtime API reference and \"Managing costs\" guide (`session.truncation`, "
                  "`retention_ratio`)",
           description="OpenAI Realtime's retention-ratio truncation: when the messages exceed the limit, the oldest "
                       "are dropped until retention% of it is used",
           knobs=(Knob(name="budget", unit="tokens", default=32_000, minimum=1, scales=True,
                       help="the request's tokens, system and tools included (token_limits.post_instructions is this "
                            "less the system prompt and tools; gpt-realtime's window is 32,768)"),
                  Knob(name="retention", unit="% of the limit", default=80, minimum=0, maximum=100,
                       help="retention_ratio: the share of the limit left after a truncation")),
           needs=frozenset({"counter"}), limit_kind="target", _make=_retention_ratio,
           note="truncates in steps, so the cached prefix survives between them; goes over only when the newest "
                "message alone does not fit"),
)
