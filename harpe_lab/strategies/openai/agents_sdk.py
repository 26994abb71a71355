"""Tool output trimming: the OpenAI Agents SDK's ``ToolOutputTrimmer``.

Source read: openai/openai-agents-python ``src/agents/extensions/tool_output_trimmer.py``,
as released in ``openai-agents`` 0.24.0 on PyPI (and at commit 204b71a7 on GitHub: the same
semantics for text outputs). Its semantics for string tool outputs, as reproduced here:

* the *boundary* is the ``recent_turns``-th user message counted from the end; the items at
  or after it are never modified. With fewer user messages than ``recent_turns``, or when
  the boundary is the very first item, nothing is trimmed;
* before the boundary, a tool output longer than ``max_output_chars`` characters (Python
  ``len``, code points) is replaced by::

      [Trimmed: {tool} output — {length} chars → {preview_chars} char preview]
      {the first preview_chars characters}...

  where ``{tool}`` is the name of the call it answers (``unknown_tool`` when the call is not
  in the request) — unless that text would not be shorter than the output, which is then
  kept;
* ``trimmable_tools`` (a name or names): when given, only outputs of those tools are
  trimmed; an output whose call is not in the request is then never trimmed;
* it never mutates its input; only the output text changes (ids, order, the calls).

Mapped onto harpe_lab's messages: a user message is a `UserInput` (tool results are not
user messages in the SDK's input items), and each `ToolResult` is one
``function_call_output``; attachments and the success flag are kept. The SDK's structured
(list-of-parts) outputs and ``tool_search`` items have no counterpart here.

Applying the trimmer to its own output changes nothing when a trimmed text fits
``max_output_chars`` (as with the defaults); with ``preview_chars`` close to
``max_output_chars`` the SDK trims its own preview again, and so does this reproduction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, ToolResult, ToolResults, UserInput
from ..editing import EditContext, Edits
from .._validate import check_int
from .._preset import Factory, Knob, Preset

__all__ = ["ToolOutputTrimmer", "trimmed_text", "PRESETS"]



def trimmed_text(output: str, tool: str, preview_chars: int) -> str:
    """The SDK's replacement for a trimmed text output of tool ``tool`` (``""``: unknown)."""
    return (
        f"[Trimmed: {tool or 'unknown_tool'} output — {len(output)} chars → "
        f"{preview_chars} char preview]\n{output[:preview_chars]}..."
    )


@dataclass(frozen=True, kw_only=True)
class ToolOutputTrimmer(Edits):
    """Trim large tool outputs from turns older than the last ``recent_turns`` user
    messages (the OpenAI Agents SDK's ``ToolOutputTrimmer``).

    A frozen edit policy (see `harpe_lab.strategies.editing`), defined by its editor: it
    never mutates its input, returns new `ToolResults` where an output was trimmed, and
    keeps every call id.
    """

    recent_turns: int = 2
    """User messages (with everything after them) that are never trimmed."""
    max_output_chars: int = 500
    """Outputs longer than this many characters are trimmed."""
    preview_chars: int = 200
    """Characters of the output kept as a preview."""
    trimmable_tools: frozenset[str] | None = field(default=None)
    """Tool names whose outputs may be trimmed (a name or an iterable of names, stored as a
    frozenset); ``None``: every tool's."""

    def __post_init__(self) -> None:
        check_int("recent_turns", self.recent_turns, 1)
        check_int("max_output_chars", self.max_output_chars, 1)
        check_int("preview_chars", self.preview_chars, 0)
        tools = self.trimmable_tools
        if tools is None:
            return
        if isinstance(tools, str):
            tools = frozenset({tools})
        elif isinstance(tools, (bytes, bytearray)) or not isinstance(tools, Iterable):
            raise StrategyError(f"trimmable_tools must be a tool name, an iterable of names or None, got {tools!r}")
        else:
            tools = frozenset(tools)
        bad = [t for t in tools if not isinstance(t, str)]
        if bad:
            raise StrategyError(f"trimmable_tools must hold tool names (str), got {bad[0]!r}")
        object.__setattr__(self, "trimmable_tools", tools)

    def boundary(self, messages: Sequence[Message]) -> int:
        """Index of the first recent message: the ``recent_turns``-th user input from the
        end, or 0 (nothing is old) when there are fewer."""
        seen = 0
        for i in range(len(messages) - 1, -1, -1):
            if isinstance(messages[i], UserInput):
                seen += 1
                if seen >= self.recent_turns:
                    return i
        return 0

    def incremental(self) -> "_Trimmer":
        """This policy's editor (`harpe_lab.strategies.editing`): over a growing history, a
        request at a time; ``policy(messages)`` is a fresh one fed ``messages`` once."""
        return _Trimmer(self)

    def context(self, base_system: str) -> EditContext:
        """A fresh lifecycle context that sends this policy applied to the whole transcript."""
        return EditContext(base_system, self)


def _trimmed(policy: ToolOutputTrimmer, result: ToolResult, names: dict[str, str]) -> ToolResult | None:
    """``result`` trimmed as ``policy`` trims it, its tool named by ``names`` (call id ->
    the request's name for it); ``None`` when it is kept."""
    name = names.get(result.id, "")
    if policy.trimmable_tools is not None and (not name or name not in policy.trimmable_tools):
        return None
    n = len(result.content)
    if n <= policy.max_output_chars:
        return None
    text = trimmed_text(result.content, name, policy.preview_chars)
    if len(text) >= n:
        return None
    return ToolResult(result.id, text, result.attachments, result.success)


class _Trimmer:
    """`ToolOutputTrimmer` over messages that only grow. A results message is decided once
    the boundary passes it (the boundary only moves forward), with the tool names known so
    far; a later call that renames an id a result already seen answers (the names are the
    whole request's, the last call of an id winning) makes every passed message decided again.
    Seen whole at once, the boundary is the ``recent_turns``-th user input from the end (0:
    nothing is old) and every results message before it is decided with every name.
    A decision is the tool name of each trimmed result (``None`` where one is kept)."""

    def __init__(self, policy: ToolOutputTrimmer) -> None:
        self.policy = policy
        self.names: dict[str, str] = {}
        self.inputs: list[int] = []  # indices of the user inputs
        self.results: list[int] = []  # indices of the results messages
        self.result_ids: set[str] = set()
        self.passed = 0  # results messages before the boundary, decided
        self.decided: dict[int, object] = {}

    def _decision(self, m: ToolResults) -> object:
        names = self.names
        trimmed = [_trimmed(self.policy, r, names) for r in m.results]
        if all(t is None for t in trimmed):
            return None
        return tuple(None if t is None else names.get(r.id, "") for r, t in zip(m.results, trimmed))

    def extend(self, messages: Sequence[Message], start: int) -> list[tuple[int, object]]:
        renamed = False
        names = self.names
        for i in range(start, len(messages)):
            m = messages[i]
            if isinstance(m, UserInput):
                self.inputs.append(i)
            elif isinstance(m, AssistantMessage):
                for c in m.calls:
                    if c.id and c.name:
                        if not renamed and c.id in self.result_ids and names.get(c.id) != c.name:
                            renamed = True
                        names[c.id] = c.name
            elif isinstance(m, ToolResults):
                self.results.append(i)
                self.result_ids.update(r.id for r in m.results)
        recent = self.policy.recent_turns
        boundary = self.inputs[-recent] if len(self.inputs) >= recent else 0
        first = 0 if renamed else self.passed
        changes: list[tuple[int, object]] = []
        r = first
        while r < len(self.results) and self.results[r] < boundary:
            k = self.results[r]
            decision = self._decision(messages[k])  # type: ignore[arg-type]
            if self.decided.get(k) != decision:
                self.decided[k] = decision
                changes.append((k, decision))
            r += 1
        self.passed = r
        return changes

    def build(self, message: Message, decision: object) -> Message:
        m = message
        assert isinstance(m, ToolResults) and isinstance(decision, tuple)
        names = {r.id: name for r, name in zip(m.results, decision) if name is not None}
        results = []
        for r, name in zip(m.results, decision):
            t = None if name is None else _trimmed(self.policy, r, names)
            results.append(r if t is None else t)
        return ToolResults(tuple(results), m.pinned)


# --- presets ------------------------------------------------------------------------------


def _trimming(*, system: str, recent_turns: int, max_output_chars: int, preview_chars: int, **_: Any) -> Factory:
    policy = ToolOutputTrimmer(recent_turns=recent_turns, max_output_chars=max_output_chars,
                               preview_chars=preview_chars)  # fmt: skip
    return lambda: policy.context(system)


PRESETS: tuple[Preset, ...] = (
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
)
