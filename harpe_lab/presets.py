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


def _cline(agentic: bool) -> Callable[..., Factory]:
    def build(*, system: str, tools: tuple, distill: Distill | None, high_water: int | None, window: int,
              max_output: int | None, preserve: int = 0, **_: Any) -> Factory:
        from .strategies.cline import AgenticCompaction, BasicCompaction

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
    from .strategies.cline import LegacyContextManager

    config = LegacyContextManager(context_window=window, max_allowed=high_water)
    return lambda: config.context(system)


def _aider(*, counter: Any, system: str, distill: Distill | None, history_tokens: int | None, window: int,
           **_: Any) -> Factory:
    from .strategies.aider import Aider

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


def _gemini_compress(*, system: str, distill: Distill | None, high_water: int | None, window: int,
                     truncate_chars: int, **_: Any) -> Factory:
    from .strategies.gemini import COMPRESSION_THRESHOLD, ChatCompression

    if high_water is not None and high_water > window:
        raise StrategyError(f"high_water must be at most window ({window:,}), got {high_water:,}: Gemini's threshold "
                            "is a fraction of the window; raise window")
    threshold = COMPRESSION_THRESHOLD if high_water is None else high_water / window
    config = ChatCompression(window=window, threshold=threshold, truncate_chars=truncate_chars)
    # a state snapshot is dense but short: a few thousand tokens, well under what it replaces
    make = _distiller(distill, min(12_000, config.trigger))
    return lambda: config.context(system, distill=make())


def _gemini_masking(*, system: str, protect: int, min_prunable: int, **_: Any) -> Factory:
    from .strategies.gemini import ToolOutputMasking

    config = ToolOutputMasking(protect=protect, min_prunable=min_prunable)
    return lambda: config.context(system)


def _opencode(*, system: str, distill: Distill | None, high_water: int | None, window: int, max_output: int,
              prune: int, **_: Any) -> Factory:
    from .strategies.opencode import SessionCompaction

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
    from .strategies.goose import COMPACTION_THRESHOLD, ContextManagement

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
    from .strategies.roo import MAX_TOKENS, TOKEN_BUFFER_PERCENTAGE, Condense

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
    from .strategies.providers import ToolRunnerCompaction

    config = ToolRunnerCompaction(threshold=high_water)
    make = _distiller(distill, min(8_000, high_water))
    return lambda: config.context(system, distill=make())


def _retention_ratio(*, counter: Any, system: str, tools: tuple, budget: int, retention: int, **_: Any) -> Factory:
    from .strategies.providers import RetentionRatio

    room = budget - _fixed_tokens(counter, system, tools)
    if room < 1:
        raise StrategyError(
            f"budget {budget:,} tokens leaves no room for messages: the system prompt and tools alone take "
            f"{budget - room:,}; raise the budget"
        )
    config = RetentionRatio(limit=room, ratio=retention / 100)
    return lambda: config.context(system, counter=counter, tools=tools)


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
