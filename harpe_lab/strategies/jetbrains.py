"""The hybrid of "The Complexity Trap" (JetBrains Research, 2025): observation masking, plus an
LLM summary of the oldest turns once enough of them are unsummarized.

Lindenbauer, Slinko, Felder, Bogomolov, Zharov, "The Complexity Trap: Simple Observation
Masking Is as Efficient as LLM Summarization for Agent Context Management" (arXiv:2508.21433,
DL4C workshop at NeurIPS 2025). Its abstract (arXiv v3) and its repository's README report the
hybrid as 7% and 11% cheaper than masking alone and summarizing alone; the paper's full text was
not available here. The knobs are read from the authors' SWE-agent fork, as mirrored in
Recursive-Safeguarding/the-complexity-trap at commit adfaa1a18b8b3500abb7537101b2bdcefa31f22a:
``config/default_no_demo_checkpoint_same_model_openhands_N=43_M=10_masking_M=10.yaml`` runs
two history processors in order (``sweagent/agent/history_processors.py``):

1. ``SummarizeEveryNTurns(n=43, keep_last_m_turns=10, enable_static_checkpointing=True)``:
   a *turn* is a reply with its tool call and the observation after it. When at least
   ``n + m`` turns are unsummarized, the oldest ``n`` of them are summarized (one call to
   the summarizer, conditioned on the problem statement the first time and on the previous
   checkpoint after that) and the rest are kept. The request is then the system prompt, the
   task, an assistant message ``"Checkpoint for the last {n} turns:\\n{summary}"`` and the
   kept turns. With static checkpointing only the newest checkpoint is sent.
2. ``LastNObservations(n=10)`` — SWE-agent's observation masking
   (`harpe_lab.strategies.swe_agent`), applied to what step 1 produced: observations older
   than the last 10 become ``"Old environment output: (N lines omitted)"``; the task (the
   first observation) and the checkpoint (a thought, not an observation) are never masked.

So the request carries at most ``n + m - 1`` unsummarized turns, only the last ``window``
of them with their output. Here: ``summarize_turns`` is N (43), ``keep_turns`` is M (10),
``window`` the masking window (10).

Mapped onto our messages: the task is the first `UserInput`; a turn is an `AssistantMessage`
with tool calls and the `ToolResults` right after it (with parallel calls, one round is one
turn). Where we deviate, and why:

* Messages that are not turns — later user inputs, replies without tool calls — are folded
  with the turns around them and otherwise kept in order. (SWE-agent's processor rebuilds
  the request from turns only, so after the first checkpoint it would never send such a
  message again, not even a new user input; its agent never has one.)
* Static checkpointing as its docstring says: only the newest checkpoint. (The fork's code
  sends only the newest checkpoint at the request that makes it, but every checkpoint so
  far at the requests between — its cache keeps them all; we do not reproduce that.)
* ``keep_turns >= 1``: with ``m = 0`` the request could end with the checkpoint, without
  the newest message.
* The summarizer's request: `CHECKPOINT_SYSTEM` (our words, naming the sections of the
  fork's ``summary_system_template``) and Harpe's distill request over the folded messages,
  with ``<PROBLEM_STATEMENT>…`` or ``<PREVIOUS_CHECKPOINT>…`` as the prior context (the
  fork's ``query_for_summary`` formatting of the turns was not reproduced).

Each checkpoint is reported as `ContextCompacted` (the folded messages are *summarized* in
the frame). No limit is declared: the paper's hybrid counts turns, not tokens.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, UserInput
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, MeteredDistill
from .editing import EditContext
from .harpe import distill_request
from .swe_agent import COMPLEXITY_TRAP_N, LastNObservations
from ._validate import check_int
from ._preset import Factory, Knob, Preset, make_distiller

__all__ = ["Hybrid", "HybridContext", "CHECKPOINT_SYSTEM", "checkpoint_text", "PRESETS"]

CHECKPOINT_SYSTEM = (
    "You are maintaining a context-aware state summary for an interactive agent. You are given the "
    "problem statement or the previous checkpoint, and the turns to fold in. Reply with the updated "
    "summary only: USER_CONTEXT, COMPLETED, PENDING, CURRENT_STATE, and for code tasks CODE_STATE, "
    "TESTS, CHANGES, DEPS and VERSION_CONTROL_STATUS. Keep every section concise."
)


def checkpoint_text(turns: int, summary: str) -> str:
    """The checkpoint message's text, the fork's exactly: ``"Checkpoint for the last {turns}
    turns:\\n{summary}"``."""
    return f"Checkpoint for the last {turns} turns:\n{summary}"



@dataclass(frozen=True, kw_only=True)
class Hybrid:
    """Observation masking over the last ``window`` observations, plus a checkpoint summary
    of the oldest ``summarize_turns`` turns whenever ``summarize_turns + keep_turns`` turns
    are unsummarized (see the module doc)."""

    summarize_turns: int = 43
    """N: turns folded into each checkpoint."""
    keep_turns: int = 10
    """M: the newest unsummarized turns kept at a checkpoint."""
    window: int = COMPLEXITY_TRAP_N
    """Observations (tool rounds) kept verbatim by the masking."""

    def __post_init__(self) -> None:
        check_int("summarize_turns", self.summarize_turns, 1)
        check_int("keep_turns", self.keep_turns, 1)
        check_int("window", self.window, 1)

    @property
    def masking(self) -> LastNObservations:
        """The masking step, SWE-agent's `LastNObservations`."""
        return LastNObservations(n=self.window)

    def context(self, base_system: str, *, distill: Distill,
                on_event: Callable[[object], None] | None = None) -> "HybridContext":
        """A fresh lifecycle context for a replay; build ``distill`` fresh for it too."""
        return HybridContext(base_system, self, distill=distill, on_event=on_event)


def _round_ends(messages: list[Message], start: int) -> list[int]:
    """For each turn (a reply with calls, then its results) in ``messages[start:]``, the
    index just past its results."""
    ends = []
    for k in range(start, len(messages) - 1):
        m = messages[k]
        if isinstance(m, AssistantMessage) and m.calls and isinstance(messages[k + 1], ToolResults):
            ends.append(k + 2)
    return ends


class HybridContext(EditContext):
    """`Hybrid` through Harpe's lifecycle: the transcript, how much of it is folded into the
    checkpoint (``transcript[head:upto]``) and the checkpoint message; each request is
    SWE-agent's masking applied to ``transcript[:head] + [checkpoint] + transcript[upto:]``.
    `abort_turn` also undoes a checkpoint made during the aborted turn."""

    def __init__(self, base_system: str, hybrid: Hybrid, *, distill: Distill,
                 on_event: Callable[[object], None] | None = None) -> None:
        if not isinstance(hybrid, Hybrid):
            raise StrategyError(f"hybrid must be a Hybrid, got {hybrid!r}")
        super().__init__(base_system, hybrid.masking)
        self.hybrid = hybrid
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self._upto = 0  # transcript[head:upto] is folded into the checkpoint
        self._checkpoint: AssistantMessage | None = None
        self._marked_state = (self._upto, self._checkpoint)
        # `_round_ends` of the whole transcript, kept as messages come: a request asks how
        # many rounds are unsummarized without walking them
        self._ends = _round_ends(self._transcript, 0)

    @property
    def distill(self) -> Distill:
        """The distiller this context calls."""
        return self._distill.distill

    @property
    def checkpoint(self) -> AssistantMessage | None:
        """The checkpoint message sent (``None`` before the first)."""
        return self._checkpoint

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_state = (self._upto, self._checkpoint)

    def _added(self, message: Message) -> None:
        t = self._transcript
        if isinstance(message, ToolResults) and t and isinstance(t[-1], AssistantMessage) and t[-1].calls:
            self._ends.append(len(t) + 1)

    def _restored(self) -> None:
        self._upto, self._checkpoint = self._marked_state
        del self._ends[bisect_right(self._ends, len(self._transcript)):]

    @property
    def _head(self) -> int:
        t = self._transcript
        return 1 if t and isinstance(t[0], UserInput) else 0

    def _edited(self) -> Sequence[Message]:
        t = self._transcript
        if self._checkpoint is None:
            return t
        return (*t[: self._head], self._checkpoint, *t[self._upto :])

    def _source(self) -> tuple[object, ...]:
        # a checkpoint (or an abort that undid one) changes the view, not only its end
        return (self._transcript, self._checkpoint, self._upto)

    def _fold(self) -> None:
        h = self.hybrid
        head = self._head
        start = max(self._upto, head)
        first = bisect_left(self._ends, start + 2)  # the rounds whose reply is at or after start
        if len(self._ends) - first < h.summarize_turns + h.keep_turns:
            return
        end = self._ends[first + h.summarize_turns - 1]
        folded = self._transcript[start:end]
        if self._checkpoint is None:
            task = self._transcript[0].text if head else ""
            context = f"<PROBLEM_STATEMENT>\n{task}\n</PROBLEM_STATEMENT>"
        else:
            context = f"<PREVIOUS_CHECKPOINT>\n{self._checkpoint.text}\n</PREVIOUS_CHECKPOINT>"
        text = self._distill(Rendered(CHECKPOINT_SYSTEM, (UserInput(distill_request(folded, context)),)))
        if text is None:
            return
        if not isinstance(text, str):
            raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
        self._checkpoint = AssistantMessage(checkpoint_text(h.summarize_turns, text))
        self._upto = end
        self._events.emit(ContextCompacted(len(folded)))

    def compact(self) -> Compaction:
        self._fold()
        return super().compact()

    def __repr__(self) -> str:
        return f"HybridContext({self.hybrid!r}, {len(self._transcript)} messages)"


# --- presets ------------------------------------------------------------------------------


def _hybrid(*, system: str, distill: Distill | None, summarize_turns: int, keep_turns: int, window: int,
            **_: Any) -> Factory:
    hybrid = Hybrid(summarize_turns=summarize_turns, keep_turns=keep_turns, window=window)
    make = make_distiller(distill, 4_000)
    return lambda: hybrid.context(system, distill=make())


PRESETS: tuple[Preset, ...] = (
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
)
