"""Observation masking: SWE-agent's ``LastNObservations`` history processor.

Source read: SWE-agent/SWE-agent ``sweagent/agent/history_processors.py`` at commit
318f9091d5f5522e2a3013b46623358e46157f7a (class ``LastNObservations``). Its semantics, as
reproduced here:

* the *observations* are the history entries with ``message_type == "observation"``: the
  instance template (the task, the first observation) and the environment's output after
  every action;
* with ``k = len(observations)``, the observations ``observations[1 : max(0, (k // polling)
  * polling - n)]`` have their content replaced by ``"Old environment output: (N lines
  omitted)"`` (N is ``len(content.splitlines())``), followed by ``" (M images omitted)"``
  when the output had images. The first observation is never elided ("it is the instance
  template"); the last ``n`` are always kept;
* ``polling``: the cut only moves when ``k`` crosses a multiple of ``polling``, so the
  request's prefix (and the provider's prompt cache) changes once every ``polling`` steps;
  between ``n`` and ``n + polling - 1`` observations are kept verbatim.

Mapped onto harpe_lab's messages: the first `UserInput` is the instance template, and each
`ToolResults` message is one observation (SWE-agent runs one action per step; when a step
ran several tool calls, all their results are elided together, each with its own line
count). Later user inputs are not observations and are never elided (SWE-agent has none).
Image attachments of an elided result are dropped and counted. The tag options
(``always_keep_output_for_tags`` / ``always_remove_output_for_tags``) are not modelled:
harpe_lab messages carry no tags.

One deviation, so that applying the policy to its own output changes nothing: a result
whose content already is such a placeholder (and has no attachments) is left as it is.

The JetBrains study "The Complexity Trap: Simple Observation Masking Is as Efficient as LLM
Summarization for Agent Context Management" (Lindenbauer et al., 2025, arXiv:2508.21433)
masks with a window of the last 10 observations: `LastNObservations.complexity_trap()`.
SWE-agent's own default configuration (its original paper) uses ``n=5``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..messages import Message, ToolResult, ToolResults, UserInput
from .editing import EditContext, Edits
from ._validate import check_int
from ._preset import Factory, Knob, Preset

__all__ = ["LastNObservations", "COMPLEXITY_TRAP_N", "elided", "PRESETS"]

COMPLEXITY_TRAP_N = 10
"""The observation window of "The Complexity Trap" (Lindenbauer et al., 2025)."""

_PLACEHOLDER = re.compile(r"Old environment output: \(\d+ lines omitted\)( \(\d+ images omitted\))?")


def elided(result: ToolResult) -> ToolResult:
    """``result`` as SWE-agent elides it: ``"Old environment output: (N lines omitted)"``,
    plus ``" (M images omitted)"`` when it carried M image attachments (which are dropped).
    The call id and the success flag are kept."""
    images = sum(1 for a in result.attachments if a.mime.startswith("image/"))
    text = f"Old environment output: ({len(result.content.splitlines())} lines omitted)"
    if images > 0:
        text += f" ({images} images omitted)"
    return ToolResult(result.id, text, (), result.success)


def _is_placeholder(result: ToolResult) -> bool:
    return not result.attachments and _PLACEHOLDER.fullmatch(result.content) is not None



@dataclass(frozen=True, kw_only=True)
class LastNObservations(Edits):
    """Keep the last ``n`` tool observations verbatim; elide older ones (SWE-agent).

    A frozen edit policy (see `harpe_lab.strategies.editing`), defined by its editor: it
    never mutates its input, returns new `ToolResults` for the elided observations, and
    keeps every call id.
    """

    n: int
    """Observations (tool rounds) kept verbatim, the newest ones."""
    polling: int = 1
    """Steps between moves of the cut: between ``n`` and ``n + polling - 1`` observations
    are kept, and the request's prefix changes once every ``polling`` steps."""

    def __post_init__(self) -> None:
        check_int("n", self.n, 1)
        check_int("polling", self.polling, 1)

    @classmethod
    def complexity_trap(cls, *, polling: int = 1) -> "LastNObservations":
        """The window of "The Complexity Trap" (JetBrains, 2025): the last 10 observations."""
        return cls(n=COMPLEXITY_TRAP_N, polling=polling)

    def incremental(self) -> "_Masker":
        """This policy's editor (`harpe_lab.strategies.editing`): over a growing history, a
        request at a time; ``policy(messages)`` is a fresh one fed ``messages`` once."""
        return _Masker(self)

    def context(self, base_system: str) -> EditContext:
        """A fresh lifecycle context that sends this policy applied to the whole transcript."""
        return EditContext(base_system, self)


class _Masker:
    """`LastNObservations` over messages that only grow: the observations seen so far and
    how many of them were before the cut, so each call looks at the new messages and the
    observations the cut passed since the last one. The observations are the `ToolResults`
    messages, and the first `UserInput` (the instance template: counted, never elided, kept
    as ``-1 - index``); ``observations[1 : last_removed]`` are elided, except a message
    whose every result already is a placeholder (decision ``True``: elide)."""

    def __init__(self, policy: LastNObservations) -> None:
        self.policy = policy
        self.observations: list[int] = []
        self.template_seen = False
        self.removed = 0  # the last call's ``last_removed``

    def extend(self, messages: Sequence[Message], start: int) -> list[tuple[int, object]]:
        observations = self.observations
        for i in range(start, len(messages)):
            m = messages[i]
            if isinstance(m, ToolResults):
                observations.append(i)
            elif isinstance(m, UserInput) and not self.template_seen:
                self.template_seen = True
                observations.append(-1 - i)
        p = self.policy
        k = len(observations)
        removed = max(0, (k // p.polling) * p.polling - p.n)
        lo, hi = max(1, min(removed, self.removed)), max(removed, self.removed)
        self.removed = removed
        changes: list[tuple[int, object]] = []
        for j in range(lo, hi):
            i = observations[j]
            if i < 0:
                continue
            if j >= removed:
                changes.append((i, None))
            elif not all(_is_placeholder(r) for r in messages[i].results):  # type: ignore[union-attr]
                changes.append((i, True))
        return changes

    def build(self, message: Message, decision: object) -> Message:
        m = message
        assert isinstance(m, ToolResults)
        return ToolResults(tuple(r if _is_placeholder(r) else elided(r) for r in m.results), m.pinned)


# --- presets ------------------------------------------------------------------------------


def _masking(*, system: str, n: int, polling: int, **_: Any) -> Factory:
    policy = LastNObservations(n=n, polling=polling)
    return lambda: policy.context(system)


PRESETS: tuple[Preset, ...] = (
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
)
