"""The libraries' presets: the context policies of agent frameworks and SDKs — AutoGen,
SWE-agent, the OpenAI Agents SDK, Anthropic's context editing and Claude Code, OpenHands,
JetBrains' "Complexity Trap" hybrid and LangChain's middleware."""

from __future__ import annotations

from typing import Any

from ..errors import StrategyError
from ..protocol import Distill
from ._common import _budget, _distiller, _fixed_tokens
from .registry import DEFAULT_BUDGET, Factory, Knob, Preset

__all__ = ["LIBRARIES"]


def _autogen_buffered(*, system: str, buffer_size: int, **_: Any) -> Factory:
    from ..strategies import autogen

    policy = autogen.Buffered(buffer_size=buffer_size)
    return lambda: policy.context(system)


def _autogen_head_and_tail(*, system: str, head_size: int, tail_size: int, **_: Any) -> Factory:
    from ..strategies import autogen

    policy = autogen.HeadAndTail(head_size=head_size, tail_size=tail_size)
    return lambda: policy.context(system)


def _autogen_token_limited(*, counter: Any, system: str, tools: tuple, budget: int, **_: Any) -> Factory:
    from ..strategies import autogen

    policy = autogen.TokenLimited.within(budget, counter=counter, system=system, tools=tools)
    return lambda: policy.context(system)


def _masking(*, system: str, n: int, polling: int, **_: Any) -> Factory:
    from ..strategies.masking import LastNObservations

    policy = LastNObservations(n=n, polling=polling)
    return lambda: policy.context(system)


def _trimming(*, system: str, recent_turns: int, max_output_chars: int, preview_chars: int, **_: Any) -> Factory:
    from ..strategies.trimming import ToolOutputTrimmer

    policy = ToolOutputTrimmer(recent_turns=recent_turns, max_output_chars=max_output_chars,
                               preview_chars=preview_chars)  # fmt: skip
    return lambda: policy.context(system)


def _clearing(*, counter: Any, system: str, tools: tuple, high_water: int, keep: int, clear_at_least: int,
              **_: Any) -> Factory:
    from ..strategies.clearing import ClearToolUses

    policy = ClearToolUses(trigger=high_water, keep=keep, clear_at_least=clear_at_least)
    return lambda: policy.context(system, counter=counter, tools=tools)


def _claude_code(*, system: str, distill: Distill | None, high_water: int | None, context_window: int,
                 **_: Any) -> Factory:
    from ..strategies.claude_code import AutoCompact

    if high_water is None:
        config = AutoCompact(context_window=context_window)
    elif high_water >= context_window:
        raise StrategyError(f"high_water must be below context_window ({context_window:,}), got {high_water:,}; "
                            "raise context_window")
    else:
        config = AutoCompact(context_window=context_window, reserve=context_window - high_water)
    # the offline default writes at most 16,000 characters, the size of Claude Code's recorded summaries
    make = _distiller(distill, min(16_000, config.threshold))
    return lambda: config.context(system, distill=make())


def _openhands_amortized(*, system: str, max_size: int, keep_first: int, **_: Any) -> Factory:
    from ..strategies.openhands import AmortizedForgetting

    condenser = AmortizedForgetting(max_size=max_size, keep_first=keep_first)
    return lambda: condenser.context(system)


def _openhands_masking(*, system: str, attention_window: int, **_: Any) -> Factory:
    from ..strategies.openhands import ObservationMasking

    policy = ObservationMasking(attention_window=attention_window)
    return lambda: policy.context(system)


def _openhands_summarizing(*, system: str, distill: Distill | None, max_size: int, keep_first: int,
                           max_event_length: int, **_: Any) -> Factory:
    from ..strategies.openhands import LLMSummarizing

    condenser = LLMSummarizing(max_size=max_size, keep_first=keep_first, max_event_length=max_event_length)
    make = _distiller(distill, 4_000)
    return lambda: condenser.context(system, distill=make())


def _hybrid(*, system: str, distill: Distill | None, summarize_turns: int, keep_turns: int, window: int,
            **_: Any) -> Factory:
    from ..strategies.hybrid import Hybrid

    hybrid = Hybrid(summarize_turns=summarize_turns, keep_turns=keep_turns, window=window)
    make = _distiller(distill, 4_000)
    return lambda: hybrid.context(system, distill=make())


def _langchain_trigger(counter: Any, system: str, tools: tuple, high_water: int) -> int:
    """LangChain's trigger for a whole-request ``high_water``: its count leaves out the system
    prompt and the tool schemas (the agent state holds neither)."""
    trigger = high_water - (_fixed_tokens(counter, system, tools) - _fixed_tokens(counter, "", ()))
    if trigger < 1:
        raise StrategyError(
            f"high_water {high_water:,} tokens leaves no room for messages: the system prompt and tools alone take "
            f"{high_water - trigger:,}; raise it"
        )
    return trigger


def _langchain_summarization(*, counter: Any, system: str, tools: tuple, distill: Distill | None, high_water: int,
                             keep: int, **_: Any) -> Factory:
    from ..strategies.langchain import Summarization

    config = Summarization(trigger=("tokens", _langchain_trigger(counter, system, tools, high_water)),
                           keep=("messages", keep))
    make = _distiller(distill, 4_000)
    return lambda: config.context(system, counter=counter, distill=make(), tools=tools)


def _langchain_clearing(*, counter: Any, system: str, tools: tuple, high_water: int, keep: int, clear_at_least: int,
                        **_: Any) -> Factory:
    from ..strategies.langchain import ClearToolUsesEdit

    edit = ClearToolUsesEdit(trigger=_langchain_trigger(counter, system, tools, high_water), keep=keep,
                             clear_at_least=clear_at_least)
    return lambda: edit.context(system, counter=counter, tools=tools)

def _events_knobs() -> tuple[Knob, Knob]:
    return (Knob(name="max_size", unit="events", default=100, minimum=2,
                 help="condense when the view holds more events than this (a user message, each tool call, "
                      "each tool result is one); it then holds max_size // 2"),
            Knob(name="keep_first", unit="events", default=1, minimum=0,
                 help="the first events always kept (the task); below max_size // 2"))
LIBRARIES: tuple[Preset, ...] = (
    Preset(name="autogen-buffered", family="autogen",
           source='autogen-core 0.7.5 `model_context/_buffered_chat_completion_context.py`',
           description="AutoGen's BufferedChatCompletionContext: the last buffer_size messages",
           knobs=(Knob(name="buffer_size", unit="messages", default=20, minimum=1,
                       help="keep the last buffer_size messages (a leading tool result is dropped)"),),
           _make=_autogen_buffered, note="counts messages, not tokens: no limit is declared"),
    Preset(name="autogen-head-and-tail", family="autogen",
           source='autogen-core 0.7.5 `model_context/_head_and_tail_chat_completion_context.py`',
           description="AutoGen's HeadAndTailChatCompletionContext: the first and the last messages, "
                       "\"Skipped N messages.\" between",
           knobs=(Knob(name="head_size", unit="messages", default=2, minimum=1, help="the first messages kept"),
                  Knob(name="tail_size", unit="messages", default=20, minimum=1, help="the last messages kept")),
           _make=_autogen_head_and_tail,
           note="counts messages, not tokens: no limit is declared; the placeholder is a user message"),
    Preset(name="autogen-token-limited", family="autogen",
           source='autogen-core 0.7.5 `model_context/_token_limited_chat_completion_context.py`',
           description="AutoGen's TokenLimitedChatCompletionContext: pop messages out of the middle until the "
                       "request fits",
           knobs=(_budget("the request's tokens, system and tools included (AutoGen's token_limit is this less "
                          "the system prompt)"),),
           needs=frozenset({"counter"}), limit_kind="target", _make=_autogen_token_limited,
           note="keeps the first messages and the newest; goes over only when the newest message (with its call) "
                "does not fit beside what AutoGen kept"),
    Preset(name="masking", family="swe-agent",
           source='SWE-agent `sweagent/agent/history_processors.py` (`LastNObservations`)',
           description="SWE-agent's LastNObservations: tool outputs older than the last n replaced by "
                       "\"Old environment output: (N lines omitted)\"",
           knobs=(Knob(name="n", unit="tool rounds", default=10, minimum=1,
                       help="the newest tool observations kept verbatim (10: \"The Complexity Trap\"; "
                            "SWE-agent's own config uses 5)"),
                  Knob(name="polling", unit="steps", default=1, minimum=1,
                       help="the cut moves once every polling observations (n to n + polling - 1 kept)")),
           _make=_masking, note="edits old tool results: the cached prefix breaks each time the cut moves; "
                                "no limit declared"),
    Preset(name="trimming", family="openai-agents",
           source='openai-agents 0.24.0 `agents/extensions/tool_output_trimmer.py`',
           description="The Agents SDK's ToolOutputTrimmer: tool outputs before the last recent_turns user "
                       "messages cut to a preview",
           knobs=(Knob(name="recent_turns", unit="user turns", default=2, minimum=1,
                       help="user messages (and all after them) never trimmed"),
                  Knob(name="max_output_chars", unit="characters", default=500, minimum=1,
                       help="older outputs longer than this are trimmed"),
                  Knob(name="preview_chars", unit="characters", default=200, minimum=0,
                       help="characters kept as a preview")),
           _make=_trimming, note="works between user turns only: inside one long agent turn nothing is trimmed; "
                                 "no limit declared"),
    Preset(name="clearing", family="anthropic",
           source='Anthropic docs, "Context editing" (`clear_tool_uses_20250919`)',
           description="Anthropic's clear_tool_uses_20250919: above the trigger, all but the newest keep tool "
                       "results replaced by \"[cleared]\"",
           knobs=(Knob(name="high_water", unit="tokens", default=100_000, scales=True,
                       help="the trigger: the whole request's input tokens above which results are cleared"),
                  Knob(name="keep", unit="tool uses", default=3, minimum=0, help="the newest tool uses kept verbatim"),
                  Knob(name="clear_at_least", unit="tokens", default=0, minimum=0, scales=True,
                       help="an edit freeing fewer tokens is not applied (0: any)")),
           needs=frozenset({"counter"}), limit_kind="high_water", _make=_clearing,
           note="recomputed at every request above the trigger: once past it, the cached prefix breaks at almost "
                "every request"),
    Preset(name="claude-code", family="anthropic",
           source="Claude Code 2.1 `services/compact/autoCompact.ts`, as public write-ups quote it; checked on "
                  "three recorded compactions",
           description="Claude Code's auto-compact: at the threshold, the whole history (mid-turn too) becomes one "
                       "summary message",
           knobs=(Knob(name="high_water", unit="tokens", default=None, scales=True,
                       help="the threshold: Claude Code's count (last reported input and output, plus new messages "
                            "at 4 characters a token) at which it compacts; default: context_window - 33,000 "
                            "(20,000 for the summary's output, 13,000 buffer)"),
                  Knob(name="context_window", unit="tokens", default=200_000, minimum=33_001,
                       help="the model's context window (200,000 for Claude models); a property of the model, "
                            "not of the conversation")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_claude_code,
           note="reactive: the request that crosses the threshold goes out; the next one is the summary message "
                "alone, so the whole cached prefix is lost at each compaction"),
    Preset(name="openhands-amortized", family="openhands",
           source='OpenHands `openhands/memory/condenser/impl/amortized_forgetting_condenser.py`',
           description="OpenHands' AmortizedForgettingCondenser: above max_size events, forget all but the first "
                       "keep_first and the newest, down to max_size // 2",
           knobs=_events_knobs(), _make=_openhands_amortized,
           note="counts events, not tokens: no limit is declared; rolling: what is forgotten stays forgotten"),
    Preset(name="openhands-masking", family="openhands",
           source='OpenHands `openhands/memory/condenser/impl/observation_masking_condenser.py`',
           description="OpenHands' ObservationMaskingCondenser: tool results outside the last attention_window "
                       "events replaced by \"<MASKED>\"",
           knobs=(Knob(name="attention_window", unit="events", default=100, minimum=1,
                       help="the newest events whose tool results are kept (OpenHands' config default: 100)"),),
           _make=_openhands_masking, note="counts events, not tokens: no limit is declared; the cached prefix "
                                          "breaks at every request once results are masked"),
    Preset(name="openhands-summarizing", family="openhands",
           source='OpenHands `openhands/memory/condenser/impl/llm_summarizing_condenser.py`',
           description="OpenHands' LLMSummarizingCondenser: above max_size events, the middle (and the previous "
                       "summary) folded into one summary after the first keep_first events",
           knobs=(*_events_knobs(),
                  Knob(name="max_event_length", unit="characters", default=10_000, minimum=0,
                       help="each event is cut to this many characters in the summarizer's request")),
           needs=frozenset({"distill"}), _make=_openhands_summarizing,
           note="counts events, not tokens: no limit is declared; keep_first must be below max_size // 2 - 1"),
    Preset(name="hybrid", family="jetbrains",
           source='"The Complexity Trap" (JetBrains, 2025), its SWE-agent fork\'s `history_processors.py`',
           description="\"The Complexity Trap\"'s hybrid: SWE-agent's masking of all but the last window "
                       "observations, and a checkpoint summary of summarize_turns turns once "
                       "summarize_turns + keep_turns are unsummarized",
           knobs=(Knob(name="summarize_turns", unit="tool rounds", default=43, minimum=1,
                       help="N: turns folded into each checkpoint (the paper's hybrid: 43)"),
                  Knob(name="keep_turns", unit="tool rounds", default=10, minimum=1,
                       help="M: the newest turns kept at a checkpoint (10)"),
                  Knob(name="window", unit="tool rounds", default=10, minimum=1,
                       help="the newest tool observations kept verbatim (10)")),
           needs=frozenset({"distill"}), _make=_hybrid,
           note="counts turns, not tokens: no limit is declared"),
    Preset(name="langchain-summarization", family="langchain",
           source='langchain 1.5.2 `agents/middleware/summarization.py`',
           description="LangChain's SummarizationMiddleware: at the trigger, all but the last keep messages folded "
                       "into a summary user message at the head of the agent state",
           knobs=(Knob(name="high_water", unit="tokens", default=DEFAULT_BUDGET, scales=True,
                       help="the whole request's tokens at which a model call is preceded by a fold; LangChain's "
                            "(\"tokens\", n) trigger is this less the system prompt and tools, which its count "
                            "of the agent state leaves out"),
                  Knob(name="keep", unit="messages", default=20, minimum=1,
                       help="(\"messages\", n): the last n messages kept, each tool result one message; a cut on a "
                            "result moves back to its call")),
           needs=frozenset({"counter", "distill"}), limit_kind="high_water", _make=_langchain_summarization,
           note="the summarizer sees at most 4,000 tokens of the folded messages, from a user message on: in a long "
                "agent turn it often sees none and the summary reads \"Previous conversation was too long to "
                "summarize.\""),
    Preset(name="langchain-clearing", family="langchain",
           source='langchain 1.5.2 `agents/middleware/context_editing.py` (`ClearToolUsesEdit`)',
           description="LangChain's ContextEditingMiddleware(ClearToolUsesEdit): above the trigger, the oldest tool "
                       "results replaced by \"[cleared]\", all but the newest keep",
           knobs=(Knob(name="high_water", unit="tokens", default=100_000, scales=True,
                       help="the whole request's tokens above which results are cleared; LangChain's trigger is "
                            "this less the system prompt and tools, which its count leaves out"),
                  Knob(name="keep", unit="tool results", default=3, minimum=0,
                       help="the newest tool results kept verbatim"),
                  Knob(name="clear_at_least", unit="tokens", default=0, minimum=0, scales=True,
                       help="stop clearing once this many tokens are freed (0: clear all but keep)")),
           needs=frozenset({"counter"}), limit_kind="high_water", _make=_langchain_clearing,
           note="recomputed at every request from the full history; unlike Anthropic's, an edit freeing less than "
                "clear_at_least is still sent"),
)
