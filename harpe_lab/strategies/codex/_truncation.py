"""Codex CLI's truncation of tool outputs as they are recorded into history
(`ToolOutputTruncation`), and the byte-based token estimate and middle truncation it is built on
(`approx_tokens`, `truncate_middle`), which the inline compaction (`harpe_lab.strategies.codex`)
uses too.

Kept apart from the compaction because it is a separate policy (an edit policy, not a
lifecycle context) that the ``codex-truncation`` preset uses alone; `harpe_lab.strategies.codex`
re-exports every name here, which is where callers import them from.

Source read: openai/codex at commit 5e505ff8773649162126df9e8b67140e3e435672,
``codex-rs/core/src/truncate.rs`` and ``history.rs`` (``process_item``): a function or custom
tool output is stored already truncated, at the model's ``truncation_policy``
(``tokens(10_000)`` for the gpt-5.x-codex models) times 1.2 ("serialization budget"): 12,000
approximate tokens, 48,000 UTF-8 bytes. A longer text keeps its first ``48,000 // 2`` bytes and
its last ``48,000 - 48,000 // 2``, cut at character boundaries, joined by
``"…N tokens truncated…"`` with ``N = ceil((bytes - 48,000) / 4)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from ..._text import hidden_chars
from ...messages import Message, ToolResult, ToolResults
from ..editing import EditContext, Edits
from .._validate import check_int

__all__ = [
    "TOOL_OUTPUT_TOKENS",
    "SERIALIZATION_ALLOWANCE",
    "approx_tokens",
    "truncate_middle",
    "ToolOutputTruncation",
]

TOOL_OUTPUT_TOKENS = 10_000
"""The gpt-5.x-codex models' ``truncation_policy``: ``tokens(10_000)``."""
SERIALIZATION_ALLOWANCE = 1.2
"""``process_item`` records tool outputs at the policy times this."""
_BYTES_PER_TOKEN = 4  # APPROX_BYTES_PER_TOKEN


def approx_tokens(text: str) -> int:
    """Codex's ``approx_token_count``: UTF-8 bytes / 4, rounded up (a sanitizer's marker as
    the text it replaced, `hidden_chars`)."""
    return -(-(len(text.encode("utf-8")) + hidden_chars(text)) // _BYTES_PER_TOKEN)


def truncate_middle(text: str, max_tokens: int) -> str:
    """Codex's ``truncate_text(text, TruncationPolicy::Tokens(max_tokens))``.

    A text of at most ``4 * max_tokens`` UTF-8 bytes comes back unchanged. A longer one keeps
    its first ``budget // 2`` bytes and its last ``budget - budget // 2`` (whole characters
    only: a character cut by either edge is dropped), with ``"…N tokens truncated…"`` between,
    ``N = ceil((bytes - budget) / 4)``. With ``max_tokens == 0`` only the marker is left,
    counting every byte.
    """
    check_int("max_tokens", max_tokens, 0)
    if not text:
        return ""
    data = text.encode("utf-8")
    budget = max_tokens * _BYTES_PER_TOKEN
    if max_tokens > 0 and len(data) <= budget:
        return text
    if budget == 0:
        return f"…{-(-len(data) // _BYTES_PER_TOKEN)} tokens truncated…"
    left = budget // 2
    # the input is valid UTF-8, so the only bytes "ignore" drops are the pieces of the one
    # character each cut splits: what remains is Codex's prefix and suffix on char boundaries
    head = data[:left].decode("utf-8", "ignore")
    tail = data[len(data) - (budget - left):].decode("utf-8", "ignore")
    removed = -(-(len(data) - budget) // _BYTES_PER_TOKEN)
    return f"{head}…{removed} tokens truncated…{tail}"
@dataclass(frozen=True, kw_only=True)
class ToolOutputTruncation(Edits):
    """Codex's truncation of tool outputs as it records them: every output longer than
    `budget` approximate tokens keeps its head and tail (`truncate_middle`).

    A frozen edit policy (see `harpe_lab.strategies.editing`), defined by its editor: it
    never mutates its input, returns new `ToolResults` where an output was cut, and keeps
    every call id, success flag and attachment. Codex cuts before the output is ever sent, so
    the newest output is sent cut too; the cut output can be a marker's length above the
    budget, so cutting it again would cut more (Codex never does: each output is recorded once).
    """

    max_tokens: int = TOOL_OUTPUT_TOKENS
    """The model's ``truncation_policy`` limit (``tool_output_token_limit`` in the config)."""

    def __post_init__(self) -> None:
        check_int("max_tokens", self.max_tokens, 0)

    @property
    def budget(self) -> int:
        """Approximate tokens an output keeps: ``max_tokens`` times Codex's 1.2 allowance, up."""
        return math.ceil(self.max_tokens * SERIALIZATION_ALLOWANCE)

    def incremental(self) -> "_Truncator":
        """This policy's editor (`harpe_lab.strategies.editing`): over a growing history, a
        request at a time; ``policy(messages)`` is a fresh one fed ``messages`` once."""
        return _Truncator(self.budget)

    def context(self, base_system: str) -> EditContext:
        """A fresh lifecycle context that sends this policy applied to the whole transcript."""
        return EditContext(base_system, self)


class _Truncator:
    """`ToolOutputTruncation` over messages that only grow: an output's cut depends on its
    text alone, so each results message is decided once, when it is appended, and is cut
    when any of its outputs is over ``budget`` approximate tokens."""

    def __init__(self, budget: int) -> None:
        self.budget = budget

    def _long(self, content: str) -> bool:
        """Whether Codex cuts ``content``: over the budget's bytes (any text, with a budget of 0)."""
        budget = self.budget
        # n characters are at most 4n UTF-8 bytes: most outputs pass without being encoded
        if not content or (budget > 0 and len(content) <= budget):
            return False
        return budget == 0 or len(content.encode("utf-8")) > budget * _BYTES_PER_TOKEN

    def extend(self, messages: Sequence[Message], start: int) -> list[tuple[int, object]]:
        long = self._long
        return [(i, True) for i in range(start, len(messages))
                if isinstance(m := messages[i], ToolResults) and any(long(r.content) for r in m.results)]

    def build(self, message: Message, decision: object) -> Message:
        assert isinstance(message, ToolResults)
        long, budget = self._long, self.budget
        return ToolResults(tuple(ToolResult(r.id, truncate_middle(r.content, budget), r.attachments, r.success)
                                 if long(r.content) else r for r in message.results), message.pinned)
