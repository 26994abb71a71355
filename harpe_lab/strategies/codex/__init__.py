"""Codex CLI's context management: inline auto-compaction (`Compact`, in `_compact`) and the
truncation of tool outputs as they are recorded into history (`ToolOutputTruncation`, in
`_truncation`), with their presets ``codex`` and ``codex-truncation``."""

from __future__ import annotations

from typing import Any

from ...errors import StrategyError
from ...protocol import Distill
from .._preset import Factory, Knob, Preset, make_distiller
from ._compact import (AUTO_COMPACT_PERCENT, COMPACT_PROMPT, CONTEXT_WINDOW, EFFECTIVE_WINDOW_PERCENT, SUMMARY_PREFIX,
                       USER_MESSAGE_TOKENS, Compact, CompactContext, Compacted, is_summary_message,
                       kept_user_messages, summary_message)
from ._truncation import (SERIALIZATION_ALLOWANCE, TOOL_OUTPUT_TOKENS, ToolOutputTruncation, approx_tokens,
                          truncate_middle)

__all__ = [
    "CONTEXT_WINDOW",
    "AUTO_COMPACT_PERCENT",
    "EFFECTIVE_WINDOW_PERCENT",
    "USER_MESSAGE_TOKENS",
    "TOOL_OUTPUT_TOKENS",
    "SERIALIZATION_ALLOWANCE",
    "SUMMARY_PREFIX",
    "COMPACT_PROMPT",
    "approx_tokens",
    "truncate_middle",
    "summary_message",
    "is_summary_message",
    "kept_user_messages",
    "Compact",
    "CompactContext",
    "Compacted",
    "ToolOutputTruncation",
    "PRESETS",
]


# --- presets ------------------------------------------------------------------------------


def _codex(*, system: str, distill: Distill | None, high_water: int | None, window: int, user_tokens: int,
           reasoning: int, **_: Any) -> Factory:
    most = window * AUTO_COMPACT_PERCENT // 100
    if high_water is not None and high_water > most:
        raise StrategyError(f"high_water must be at most 90% of window ({most:,}), got {high_water:,}: Codex takes "
                            "the smaller of the two; raise window")
    config = Compact(window=window, token_limit=high_water, user_tokens=user_tokens, reasoning=reasoning)
    # a handoff summary is "concise, structured": the recorded compaction's item held about
    # 9,400 bytes by Codex's own estimate of it (13,412 encrypted bytes, 2,352 tokens)
    make = make_distiller(distill, min(9_000, config.limit))
    return lambda: config.context(system, distill=make())


def _codex_truncation(*, system: str, max_tokens: int, **_: Any) -> Factory:
    policy = ToolOutputTruncation(max_tokens=max_tokens)
    return lambda: policy.context(system)


PRESETS: tuple[Preset, ...] = (
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
)
