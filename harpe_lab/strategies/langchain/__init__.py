"""LangChain 1.x's context middleware, native: `Summarization` and `ClearToolUsesEdit`.

Source read: langchain 1.5.2 (langchain-core 1.8.3) as installed,
``langchain/agents/middleware/summarization.py`` (``SummarizationMiddleware``),
``langchain/agents/middleware/context_editing.py`` (``ContextEditingMiddleware`` with
``ClearToolUsesEdit``) and, for what the summarizer sees, ``langchain_core/messages/utils.py``
(``trim_messages``, ``get_buffer_string(format="xml")``). Their own code runs in
`harpe_lab.peers.langchain`; the differential tests check that both send the same requests.

LangChain's granularity. A LangChain agent's state holds one ``ToolMessage`` per tool result,
where Harpe holds one `ToolResults` per round; both middlewares count and cut at LangChain's
granularity (``("messages", 20)`` counts tool results one by one, a cut may fall between two
results of a round). So both work on *units*: our messages with each `ToolResults` of k
results split into k one-result `ToolResults` (a one-result round is its own unit), and
`regroup` joins consecutive units of one round again — into the original object when none
was changed. ``UserInput`` is LangChain's ``HumanMessage``, ``AssistantMessage`` its
``AIMessage`` (text as content, calls as ``tool_calls``).

Token counting. LangChain's ``token_counter`` is called on lists of messages; here it is the
replay's counter on the units, ``counter.count_rendered(Rendered("", units))``: the agent's
state holds no system prompt and no tool schemas, so neither counts (the peer applies the
same counter to its messages converted back). `ClearToolUsesEdit` can instead count the
whole request the way ``token_count_method="model"`` asks the model
(``get_num_tokens_from_messages([system, *messages], tools)``): ``token_count="model"``.
LangChain's own default estimate (``count_tokens_approximately``) is not modelled: pass the
counter you want compared (`harpe_lab.tokens.ApproxCounter` is the same kind of estimate).

`Summarization` — ``SummarizationMiddleware(model, trigger=, keep=,
trim_tokens_to_summarize=)``, run in ``before_model`` before every model call:

* ``trigger``: ``("tokens", n)`` (the state's tokens ``>= n``), ``("messages", n)`` (units
  ``>= n``), ``("fraction", f)`` (tokens ``>= int(f * context_window)``, at least 1); a
  mapping of several is a clause met when all are (LangChain's ``TriggerClause``); a list
  is met when any item is. LangChain also meets a token (or fraction) threshold when the
  last ``AIMessage`` in the state carries provider usage (``usage_metadata["total_tokens"]``,
  input plus output) of at least the threshold, from its model's provider: with
  ``reported_usage=True`` each reply carries the usage the replay reports for it
  (`observe`), as in an agent whose summarizer is its own model; off by default (an agent
  summarizing with another provider's model, or a model that reports none).
* when it triggers, the cutoff: ``keep=("messages", n)`` keeps the last n units;
  ``("tokens", n)`` / ``("fraction", f)`` the shortest suffix found by LangChain's binary
  search to fit n tokens. A cutoff on a tool result moves back to the ``AIMessage`` that made
  the call (or, with none, forward past the results), so a call and its results are never
  split. A cutoff of 0 means no summary.
* the units before the cutoff go to the summarizer: the newest of them that fit
  ``trim_tokens_to_summarize`` tokens (``trim_messages(strategy="last", allow_partial=True,
  start_on="human")``: a unit that does not fit whole keeps its last lines that do, and the
  kept list starts at a user message), formatted by ``get_buffer_string(format="xml")`` into
  LangChain's ``DEFAULT_SUMMARY_PROMPT`` (or ``summary_prompt``). The distiller receives that
  prompt as one user message, ``Rendered("", (UserInput(prompt),))``, as LangChain's model
  does; its reply, stripped, is the summary — an empty one too: LangChain folds the history
  into ``"Here is a summary of the conversation to date:\\n\\n"`` and nothing else
  (``_create_summary`` returns ``response.text.strip()``). When nothing is left after
  trimming (no user message among the newest units, as in a long agent turn) the summary is
  ``"Previous conversation was too long to summarize."`` and no one is called: the folded
  messages are dropped, and the frame counts them so (not *summarized*).
* a failed summary call: since langchain-ai/langchain#39268 (in 1.5.2) LangChain retries it
  (``with_retry``, `SUMMARY_ATTEMPTS` = 3 attempts, without the waits between them here) and
  then lets the error propagate from ``before_model``: the agent's run stops, its state
  untouched. A distiller that raises three times running does the same here (the replay
  stops). Before that fix the error's text became the summary and the history was
  deleted (#38867). A distiller's ``None`` — the lab's "no summary this time", what
  ``LLMDistiller(on_error="skip")`` returns for a failed call — folds nothing: the state
  stays, and the next model call tries again, as a run that LangChain's error stopped would
  when started again.
* the state becomes one *user* message, ``"Here is a summary of the conversation to
  date:\\n\\n" + summary`` (LangChain's ``HumanMessage``, first), then the kept units. The
  state is what the next request starts from: the summary message is itself summarized by the
  next fold, and the system prompt is untouched.

`ClearToolUsesEdit` — ``ContextEditingMiddleware(edits=[ClearToolUsesEdit(...)])``, run in
``wrap_model_call`` on a copy of the state's messages at every request (the state itself is
never edited, so each request clears from the full history). It differs from Anthropic's
documented ``clear_tool_uses_20250919`` (`harpe_lab.strategies.anthropic.clearing.ClearToolUses`):

* above ``trigger`` it clears the oldest tool results first, all but the newest ``keep``
  (excluded tools counting among the kept), and when ``clear_at_least`` is above 0 it
  recounts after each and *stops* once that many tokens are freed; freeing fewer, it still
  sends what it cleared (Anthropic sends nothing cleared);
* a result is cleared only when the nearest ``AIMessage`` before it holds its call;
* ``clear_tool_inputs`` is a bool (all tools or none);
* it counts the state's messages only, unless ``token_count="model"``.

Layout: ``_units`` (messages at LangChain's granularity, its trimming and XML history format,
the safe cutoff), ``_summarization`` (`Summarization`, `SummarizationContext`), ``_clearing``
(`ClearToolUsesEdit`).
"""

from __future__ import annotations

from ..anthropic.clearing import DEFAULT_PLACEHOLDER
from ._clearing import ClearToolUsesEdit
from ._summarization import (DEFAULT_SUMMARY_PROMPT, SUMMARY_ATTEMPTS, SUMMARY_PREFIX, Summarization,
                             SummarizationContext)
from ._units import Splitter, Unit, buffer_xml, regroup, safe_cutoff, trim_last, units_of
from ...errors import StrategyError
from ...protocol import Distill
from .._preset import DEFAULT_BUDGET, Factory, Knob, Preset, fixed_tokens, make_distiller
from typing import Any
__all__ = [
    "Summarization",
    "SummarizationContext",
    "ClearToolUsesEdit",
    "DEFAULT_SUMMARY_PROMPT",
    "SUMMARY_PREFIX",
    "SUMMARY_ATTEMPTS",
    "DEFAULT_PLACEHOLDER",
    "Unit",
    "units_of",
    "Splitter",
    "trim_last",
    "safe_cutoff",
    "regroup",
    "buffer_xml",
    "PRESETS",
]


# --- presets ------------------------------------------------------------------------------


def _langchain_trigger(counter: Any, system: str, tools: tuple, high_water: int) -> int:
    """LangChain's trigger for a whole-request ``high_water``: its count leaves out the system
    prompt and the tool schemas (the agent state holds neither)."""
    trigger = high_water - (fixed_tokens(counter, system, tools) - fixed_tokens(counter, "", ()))
    if trigger < 1:
        raise StrategyError(
            f"high_water {high_water:,} tokens leaves no room for messages: the system prompt and tools alone take "
            f"{high_water - trigger:,}; raise it"
        )
    return trigger


def _langchain_summarization(*, counter: Any, system: str, tools: tuple, distill: Distill | None, high_water: int,
                             keep: int, **_: Any) -> Factory:
    config = Summarization(trigger=("tokens", _langchain_trigger(counter, system, tools, high_water)),
                           keep=("messages", keep))
    make = make_distiller(distill, 4_000)
    return lambda: config.context(system, counter=counter, distill=make(), tools=tools)


def _langchain_clearing(*, counter: Any, system: str, tools: tuple, high_water: int, keep: int, clear_at_least: int,
                        **_: Any) -> Factory:
    edit = ClearToolUsesEdit(trigger=_langchain_trigger(counter, system, tools, high_water), keep=keep,
                             clear_at_least=clear_at_least)
    return lambda: edit.context(system, counter=counter, tools=tools)


PRESETS: tuple[Preset, ...] = (
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
