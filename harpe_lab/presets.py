"""The preset registry: every named strategy a person can pick, as data.

A `Preset` has a name, a family, a one-line description, its `Knob` s (unit, default, valid
range, whether a sensible value grows with the conversation) and what it needs (a token
counter, a distiller). ``preset.build(**knobs)`` returns a zero-argument factory that builds
a *fresh* strategy — and a fresh distiller — at every call, so replays never share state.
The CLI, the widgets, the demo and the report read this registry; nothing else tests a
strategy's name.

"Budget" means the same for every preset: tokens of the whole request (system prompt, tool
schemas, messages and chat overhead) as the replay's counter prices them. Harpe's windowed
strategy measures characters and converts at `CHARS_PER_TOKEN`; the summarizing strategy's
knobs are its high- and low-water marks.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .strategies.harpe import CHARS_PER_TOKEN, FullContext, SummarizingContext, TurnContext, WindowedContext
from .errors import StrategyError
from .messages import Rendered
from .protocol import Distill, Limit, LimitKind, fresh_distiller

__all__ = ["Knob", "Preset", "PRESETS", "STRATEGIES", "DEFAULT_BUDGET", "get_preset", "make_strategy"]

DEFAULT_BUDGET = 8_000
Factory = Callable[[], Any]


def _whole(name: str, value: Any, minimum: int, maximum: int | None) -> int:
    """``value`` as an int: integral floats (8000.0) are accepted, anything else refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StrategyError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise StrategyError(f"{name} must be a whole number, got {value!r}")
        value = int(value)
    if value < minimum or (maximum is not None and value > maximum):
        upper = "" if maximum is None else f" and <= {maximum:,}"
        raise StrategyError(f"{name} must be >= {minimum:,}{upper}, got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class Knob:
    """One setting of a preset."""

    name: str
    unit: str
    """``"tokens"``, ``"messages"``, …"""
    default: int | None
    """``None``: derived from the other knobs, as `help` says."""
    minimum: int = 1
    maximum: int | None = None
    scales: bool = False
    """Whether a sensible value grows with the conversation's size (a budget does; a count
    of messages does not): views set its range from the conversation."""
    help: str = ""

    def check(self, value: Any) -> int:
        return _whole(self.name, value, self.minimum, self.maximum)

    def range_for(self, peak_tokens: int) -> tuple[int, int]:
        """A slider range for a conversation whose largest full-history request is
        ``peak_tokens``: up to a little above it for knobs that scale, else the declared
        range (``maximum`` or ten times the default)."""
        if self.scales:
            high = max(self.minimum + 1, -(-peak_tokens * 11 // 10))
        else:
            high = self.maximum or max(self.minimum + 1, 10 * (self.default or self.minimum))
        return self.minimum, high if self.maximum is None else min(high, self.maximum)


@dataclass(frozen=True, kw_only=True)
class Preset:
    """A named strategy with its knobs; `build` makes a factory."""

    name: str
    family: str
    description: str
    knobs: tuple[Knob, ...] = ()
    needs: frozenset[str] = frozenset()
    """``"counter"`` (prices tokens itself), ``"distill"`` (calls a distiller)."""
    limit_kind: LimitKind | None = None
    """What kind of `Limit` its strategies declare (``None``: no limit)."""
    note: str = ""
    """When another knob binds before the budget, or other caveats."""
    source: str = ""
    """Where its semantics come from: the specification, repository file or page read."""
    _make: Callable[..., Factory] = field(repr=False, compare=False)

    def knob(self, name: str) -> Knob:
        for k in self.knobs:
            if k.name == name:
                return k
        raise StrategyError(
            f"the {self.name!r} preset has no knob {name!r}; its knobs: {[k.name for k in self.knobs] or 'none'}"
        )

    @property
    def budget_knob(self) -> Knob | None:
        """The knob a single "budget" sets: ``budget``, or ``high_water`` for summarizing."""
        for k in self.knobs:
            if k.name in ("budget", "high_water"):
                return k
        return None

    def build(self, *, counter: Any = None, system: str = "", tools: tuple = (), distill: Distill | None = None,
              **knobs: Any) -> Factory:
        """A zero-argument factory of fresh strategies with these knob values (defaults for
        the others). ``distill`` replaces the offline default distiller; a stateful one is
        renewed (``fresh()``) for every strategy built."""
        if "counter" in self.needs and counter is None:
            raise StrategyError(f"the {self.name!r} strategy prices tokens itself: pass counter=")
        values: dict[str, int | None] = {}
        for k in self.knobs:
            value = knobs.pop(k.name, None)
            values[k.name] = k.default if value is None else k.check(value)
        if knobs:
            raise StrategyError(
                f"the {self.name!r} preset has no knob {sorted(knobs)[0]!r}; "
                f"its knobs: {[k.name for k in self.knobs] or 'none'}"
            )
        if distill is not None and not callable(distill):
            raise StrategyError(f"distill must be a callable Rendered -> str | None, got {distill!r}")
        return self._make(counter=counter, system=system, tools=tuple(tools), distill=distill, **values)


def _distiller(distill: Distill | None, budget: int) -> Callable[[], Distill]:
    if distill is not None:
        return lambda: fresh_distiller(distill)
    from .summarize import ExtractiveDistiller

    shared = ExtractiveDistiller(max_chars=max(400, budget))  # stateless: its caches are pure
    return lambda: shared


def _fixed_tokens(counter: Any, system: str, tools: tuple) -> int:
    """What a request costs before any message: system prompt, tool schemas, reply priming."""
    return int(counter.count_rendered(Rendered(system, ()), tools))


def _full(*, system: str, **_: Any) -> Factory:
    return lambda: FullContext(system)


def _turn(*, system: str, **_: Any) -> Factory:
    return lambda: TurnContext(system)


def _windowed(*, system: str, budget: int, **_: Any) -> Factory:
    return lambda: WindowedContext(system, max_chars=CHARS_PER_TOKEN * budget)


def _summarizing(*, system: str, distill: Distill | None, high_water: int, low_water: int | None, **_: Any) -> Factory:
    low = high_water // 2 if low_water is None else low_water
    make = _distiller(distill, high_water)
    return lambda: SummarizingContext(system, high_water_tokens=high_water, low_water_chars=CHARS_PER_TOKEN * low,
                                      distill=make())  # fmt: skip


def _orion(summarize: bool) -> Callable[..., Factory]:
    def build(*, counter: Any, system: str, tools: tuple, distill: Distill | None, budget: int, reserve: int | None,
              **_: Any) -> Factory:
        from .strategies import orion

        spare = max(1, budget // 10) if reserve is None else reserve
        if summarize:
            make = _distiller(distill, budget)
            return lambda: orion.OrionContext(system, orion.SummarizeWindow(
                budget + spare, counter=counter, distill=make(), reserve_tokens=spare), tools=tools)
        window = orion.SlidingWindow(budget + spare, counter=counter, reserve_tokens=spare)
        return lambda: orion.OrionContext(system, window, tools=tools)

    return build


def _chain(*, counter: Any, system: str, tools: tuple, budget: int, n: int, **_: Any) -> Factory:
    from .strategies import laser

    room = budget - _fixed_tokens(counter, system, tools)
    if room < 1:
        raise StrategyError(
            f"budget {budget:,} tokens leaves no room for messages: the system prompt and tools alone take "
            f"{budget - room:,}; raise the budget"
        )
    policy = laser.Chain([laser.LastN(n), laser.TokenBudget(room, estimator=laser.MessagePrice(counter))])
    limit = Limit(tokens=budget, kind="target")
    return lambda: laser.PolicyContext(system, policy, limit=limit)


def _autogen_buffered(*, system: str, buffer_size: int, **_: Any) -> Factory:
    from .strategies import autogen

    policy = autogen.Buffered(buffer_size=buffer_size)
    return lambda: policy.context(system)


def _autogen_head_and_tail(*, system: str, head_size: int, tail_size: int, **_: Any) -> Factory:
    from .strategies import autogen

    policy = autogen.HeadAndTail(head_size=head_size, tail_size=tail_size)
    return lambda: policy.context(system)


def _autogen_token_limited(*, counter: Any, system: str, tools: tuple, budget: int, **_: Any) -> Factory:
    from .strategies import autogen

    policy = autogen.TokenLimited.within(budget, counter=counter, system=system, tools=tools)
    return lambda: policy.context(system)


def _masking(*, system: str, n: int, polling: int, **_: Any) -> Factory:
    from .strategies.masking import LastNObservations

    policy = LastNObservations(n=n, polling=polling)
    return lambda: policy.context(system)


def _trimming(*, system: str, recent_turns: int, max_output_chars: int, preview_chars: int, **_: Any) -> Factory:
    from .strategies.trimming import ToolOutputTrimmer

    policy = ToolOutputTrimmer(recent_turns=recent_turns, max_output_chars=max_output_chars,
                               preview_chars=preview_chars)  # fmt: skip
    return lambda: policy.context(system)


def _clearing(*, counter: Any, system: str, tools: tuple, high_water: int, keep: int, clear_at_least: int,
              **_: Any) -> Factory:
    from .strategies.clearing import ClearToolUses

    policy = ClearToolUses(trigger=high_water, keep=keep, clear_at_least=clear_at_least)
    return lambda: policy.context(system, counter=counter, tools=tools)


def _claude_code(*, system: str, distill: Distill | None, high_water: int | None, context_window: int,
                 **_: Any) -> Factory:
    from .strategies.claude_code import AutoCompact

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
    from .strategies.openhands import AmortizedForgetting

    condenser = AmortizedForgetting(max_size=max_size, keep_first=keep_first)
    return lambda: condenser.context(system)


def _openhands_masking(*, system: str, attention_window: int, **_: Any) -> Factory:
    from .strategies.openhands import ObservationMasking

    policy = ObservationMasking(attention_window=attention_window)
    return lambda: policy.context(system)


def _openhands_summarizing(*, system: str, distill: Distill | None, max_size: int, keep_first: int,
                           max_event_length: int, **_: Any) -> Factory:
    from .strategies.openhands import LLMSummarizing

    condenser = LLMSummarizing(max_size=max_size, keep_first=keep_first, max_event_length=max_event_length)
    make = _distiller(distill, 4_000)
    return lambda: condenser.context(system, distill=make())


def _hybrid(*, system: str, distill: Distill | None, summarize_turns: int, keep_turns: int, window: int,
            **_: Any) -> Factory:
    from .strategies.hybrid import Hybrid

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
    from .strategies.langchain import Summarization

    config = Summarization(trigger=("tokens", _langchain_trigger(counter, system, tools, high_water)),
                           keep=("messages", keep))
    make = _distiller(distill, 4_000)
    return lambda: config.context(system, counter=counter, distill=make(), tools=tools)


def _langchain_clearing(*, counter: Any, system: str, tools: tuple, high_water: int, keep: int, clear_at_least: int,
                        **_: Any) -> Factory:
    from .strategies.langchain import ClearToolUsesEdit

    edit = ClearToolUsesEdit(trigger=_langchain_trigger(counter, system, tools, high_water), keep=keep,
                             clear_at_least=clear_at_least)
    return lambda: edit.context(system, counter=counter, tools=tools)


def _codex(*, system: str, distill: Distill | None, high_water: int | None, window: int, user_tokens: int,
           reasoning: int, **_: Any) -> Factory:
    from .strategies.codex import AUTO_COMPACT_PERCENT, Compact

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
    from .strategies.codex import ToolOutputTruncation

    policy = ToolOutputTruncation(max_tokens=max_tokens)
    return lambda: policy.context(system)


def _events_knobs() -> tuple[Knob, Knob]:
    return (Knob(name="max_size", unit="events", default=100, minimum=2,
                 help="condense when the view holds more events than this (a user message, each tool call, "
                      "each tool result is one); it then holds max_size // 2"),
            Knob(name="keep_first", unit="events", default=1, minimum=0,
                 help="the first events always kept (the task); below max_size // 2"))


def _budget(help: str) -> Knob:
    return Knob(name="budget", unit="tokens", default=DEFAULT_BUDGET, minimum=1, scales=True, help=help)


def _reserve() -> Knob:
    return Knob(name="reserve", unit="tokens", default=None, minimum=0, scales=True,
                help="tokens kept free for the reply, beside the budget (default: 10% of the budget)")


_ALL = (
    Preset(name="full", family="harpe",
           source='Harpe spec §4.4 (`harpe-format.md`)',
           description="Harpe's FullContext: the whole transcript, every request",
           _make=_full),
    Preset(name="windowed", family="harpe",
           source='Harpe spec §4.5',
           description="Harpe's WindowedContext: the newest whole turns that fit the budget (measured in characters)",
           knobs=(_budget(f"the window, converted to characters at {CHARS_PER_TOKEN} a token"),),
           limit_kind="target", _make=_windowed,
           note="the current turn is never cut, so a long agent turn goes over the budget"),
    Preset(name="turn", family="harpe",
           source='Harpe spec §4.6',
           description="Harpe's TurnContext: only the current turn", _make=_turn),
    Preset(name="summarizing", family="harpe",
           source='Harpe spec §4.7',
           description="Harpe's SummarizingContext: fold the oldest turns into a summary above the high water",
           knobs=(Knob(name="high_water", unit="tokens", default=DEFAULT_BUDGET, scales=True,
                       help="compact after the provider reports more input tokens than this"),
                  Knob(name="low_water", unit="tokens", default=None, minimum=0, scales=True,
                       help=f"keep the newest turns that fit this (as {CHARS_PER_TOKEN}× characters); "
                            "default: half the high water")),
           needs=frozenset({"distill"}), limit_kind="high_water", _make=_summarizing,
           note="reactive: the request that crosses the high water goes out before the compaction"),
    Preset(name="sliding", family="orion",
           source="orion's `SlidingWindow` (`harpe_lab.strategies.orion`)",
           description="orion's SlidingWindow: pinned turns, the latest turn and the newest turns within the budget",
           knobs=(_budget("the most tokens a request may use"), _reserve()),
           needs=frozenset({"counter"}), limit_kind="budget", _make=_orion(False)),
    Preset(name="summarize-window", family="orion",
           source="orion's `SummarizeWindow` (`harpe_lab.strategies.orion`)",
           description="orion's SummarizeWindow: the sliding window, with what falls out folded into a summary",
           knobs=(_budget("the most tokens a request may use, summary included"), _reserve()),
           needs=frozenset({"counter", "distill"}), limit_kind="budget", _make=_orion(True)),
    Preset(name="chain", family="laser",
           source="Laser's `Chain(LastN, TokenBudget)` (`harpe_lab.strategies.laser`)",
           description="Laser's Chain([LastN(n), TokenBudget]): the last n messages, newest first, within the budget",
           knobs=(_budget("the request's tokens, system and tools included"),
                  Knob(name="n", unit="messages", default=100, minimum=1, help="keep at most the last n messages")),
           needs=frozenset({"counter"}), limit_kind="target", _make=_chain,
           note="the budget binds only when the last n messages take more than it; the newest message is always kept"),
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

PRESETS: Mapping[str, Preset] = {p.name: p for p in _ALL}
STRATEGIES: tuple[str, ...] = tuple(PRESETS)


def get_preset(name: str) -> Preset:
    """The preset called ``name``."""
    preset = PRESETS.get(name) if isinstance(name, str) else None
    if preset is None:
        raise StrategyError(f"strategy must be one of {list(PRESETS)}, but {name!r} was passed")
    return preset


def make_strategy(name: str, *, budget: Any = None, counter: Any = None, system: str = "",
                  distill: Distill | None = None, tools: tuple = (), **knobs: Any) -> Factory:
    """A zero-argument factory of fresh strategies for the preset ``name``.

    ``budget`` sets the preset's budget knob (``high_water`` for summarizing) and is ignored
    by presets without one; other knobs by name. Unset knobs take their defaults.
    """
    preset = get_preset(name)
    if budget is not None:
        target = preset.budget_knob
        if target is not None:
            knobs.setdefault(target.name, budget)
        else:
            _whole("budget", budget, 1, None)
    return preset.build(counter=counter, system=system, tools=tools, distill=distill, **knobs)
