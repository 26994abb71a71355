"""orion's completion-style prompts: `ChatMLTemplate` renders a request as one prompt string,
`prepare_context` selects with a window and renders, `PreparedContext` is the result."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, ToolResults, UserInput
from ._window import SlidingWindow, SummarizeWindow, Window

__all__ = ["ChatMLTemplate", "PreparedContext", "prepare_context"]


@dataclass(frozen=True)
class ChatMLTemplate:
    """Render a request as one ChatML prompt string, for completion-style models::

        <|im_start|>system
        {system}

        # Tools

        <tools>
        {one JSON schema per line}
        </tools><|im_end|>
        <|im_start|>user
        {text}<|im_end|>
        <|im_start|>assistant
        {text}
        <tool_call>
        {"name": ..., "arguments": {...}}
        </tool_call><|im_end|>
        <|im_start|>tool
        <tool_response id="{call id}">
        {content}
        </tool_response><|im_end|>
        <|im_start|>assistant

    Each message is ``<|im_start|>{role}\\n{content}<|im_end|>\\n``. The system block is
    omitted when there is neither a system prompt nor a tool schema; the tools section only
    when there are schemas. An assistant's text is followed by one ``<tool_call>`` block
    per call; all results of one tool round form one ``tool`` message, one
    ``<tool_response>`` block per result (a failed result is marked ``success="false"``).
    Attachments are not rendered (their bytes never enter the log). Text is inserted
    verbatim, as model chat templates do. ``add_generation_prompt`` ends the prompt with
    an open assistant message.
    """

    add_generation_prompt: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.add_generation_prompt, bool):
            raise StrategyError(f"add_generation_prompt must be a bool, got {self.add_generation_prompt!r}")

    def format(self, system: str, messages: Sequence[Message], tool_schemas: Sequence[Mapping[str, Any]] = ()) -> str:
        """The prompt for ``system``, ``messages`` and ``tool_schemas``."""
        parts: list[str] = []
        head = system
        if tool_schemas:
            lines = "\n".join(json.dumps(dict(s), ensure_ascii=False, sort_keys=True) for s in tool_schemas)
            head = (head + "\n\n" if head else "") + "# Tools\n\n<tools>\n" + lines + "\n</tools>"
        if head:
            parts.append(_block("system", head))
        for m in messages:
            if isinstance(m, UserInput):
                parts.append(_block("user", m.text))
            elif isinstance(m, AssistantMessage):
                calls = [
                    "<tool_call>\n"
                    + json.dumps({"name": c.name, "arguments": c.input}, ensure_ascii=False)
                    + "\n</tool_call>"
                    for c in m.calls
                ]
                parts.append(_block("assistant", "\n".join(([m.text] if m.text else []) + calls)))
            elif isinstance(m, ToolResults):
                responses = [
                    f'<tool_response id="{r.id}"{"" if r.success else _FAILED}>\n{r.content}\n</tool_response>'
                    for r in m.results
                ]
                parts.append(_block("tool", "\n".join(responses)))
            else:
                raise TypeError(f"not a harpe_lab message: {m!r}")
        if self.add_generation_prompt:
            parts.append("<|im_start|>assistant\n")
        return "".join(parts)


_FAILED = ' success="false"'


def _block(role: str, content: str) -> str:
    return f"<|im_start|>{role}\n{content}<|im_end|>\n"


@dataclass(frozen=True)
class PreparedContext:
    """A prompt ready for a completion model, and what went into it.

    ``token_count`` is the prompt string counted by the counter given to `prepare_context`
    (the window itself budgets by chat-message prices, so the two can differ by the
    template's markup). ``messages_included`` counts the input messages the prompt
    carries verbatim, ``messages_pruned`` the others; ``messages`` is the selection (a
    summary message first, when there is one); ``warnings`` any fallback a
    `SummarizeWindow` had to make.
    """

    prompt: str
    token_count: int
    messages_included: int
    messages_pruned: int
    messages: tuple[Message, ...] = ()
    summary: str | None = None
    warnings: tuple[str, ...] = ()


def prepare_context(
    template: ChatMLTemplate,
    system: str,
    messages: Sequence[Message],
    tool_schemas: Sequence[Mapping[str, Any]],
    config: Window,
    counter: Any,
) -> PreparedContext:
    """Select ``messages`` with the window ``config`` and render them with ``template``.

    A `SummarizeWindow` starts without a summary and folds what does not fit into one (one
    or more distill calls). Raises `BudgetError` when the pinned and latest turns do not fit.
    """
    if not callable(getattr(template, "format", None)):
        raise StrategyError(f"template must have format(system, messages, tool_schemas), got {template!r}")
    if not isinstance(config, (SlidingWindow, SummarizeWindow)):
        raise StrategyError(f"config must be an orion SlidingWindow or SummarizeWindow, got {config!r}")
    if not callable(getattr(counter, "count", None)):
        raise StrategyError(f"counter must be a token counter with count(text), got {counter!r}")
    tools = tuple(tool_schemas)
    selection = config.select(messages, system=system, tools=tools)
    prompt = template.format(system, selection.messages, tools)
    return PreparedContext(
        prompt=prompt,
        token_count=counter.count(prompt),
        messages_included=len(selection.kept),
        messages_pruned=selection.total - len(selection.kept),
        messages=selection.messages,
        summary=selection.summary,
        warnings=() if selection.warning is None else (selection.warning,),
    )
