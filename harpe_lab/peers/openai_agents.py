"""The OpenAI Agents SDK's own ``ToolOutputTrimmer``, run through Harpe's lifecycle.

`SDKTrimmer` is an edit policy (see `harpe_lab.strategies.editing`) that, at every request,
converts the whole transcript to the SDK's Responses-API input items, calls the SDK's
``agents.extensions.ToolOutputTrimmer`` exactly as the SDK's runner calls a
``call_model_input_filter`` (with a ``CallModelData`` holding a ``ModelInputData``), and
converts the items it returns back to harpe_lab messages. ``SDKTrimmer(...).context(system)``
runs it through `harpe_lab.strategies.editing.EditContext`, like the native twin
`harpe_lab.strategies.openai.agents_sdk.ToolOutputTrimmer`. Tested against openai-agents 0.24.0.

Messages, ours → the SDK's input items:

* `UserInput` → ``{"role": "user", "content": text}`` (attachments are not sent);
* `AssistantMessage` → ``{"role": "assistant", "content": text}`` when it has text or no
  calls, then one ``{"type": "function_call", "call_id", "name", "arguments"}`` per call
  (arguments as JSON, as `harpe_lab.messages.to_openai` writes them);
* `ToolResults` → one ``{"type": "function_call_output", "call_id", "output"}`` per result.

Back, every text comes from the items the SDK returned: a message whose items all came back
as the very objects sent is the original message; any other is rebuilt from its items, with
the fields the SDK never sees (attachments, the success flag, ``pinned``) taken from the
message it stands for.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, ToolCall, ToolResult, ToolResults, UserInput, parse_arguments
from ..strategies.editing import EditContext
from ..strategies.openai.agents_sdk import ToolOutputTrimmer as NativeTrimmer

try:
    from agents.extensions.tool_output_trimmer import ToolOutputTrimmer as _SDKToolOutputTrimmer
    from agents.run_config import CallModelData, ModelInputData
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise ImportError(
        "harpe_lab.peers.openai_agents runs the OpenAI Agents SDK's own ToolOutputTrimmer; install it "
        "with `pip install harpe_lab[peers]` (or `pip install openai-agents`)"
    ) from exc

__all__ = ["SDKTrimmer", "to_items", "from_items"]


def _items_of(message: Message) -> list[dict[str, Any]]:
    if isinstance(message, UserInput):
        return [{"role": "user", "content": message.text}]
    if isinstance(message, AssistantMessage):
        items: list[dict[str, Any]] = []
        if message.text or not message.calls:
            items.append({"role": "assistant", "content": message.text})
        items.extend(
            {"type": "function_call", "call_id": c.id, "name": c.name,
             "arguments": json.dumps(c.input, ensure_ascii=False)}
            for c in message.calls
        )
        return items
    if isinstance(message, ToolResults):
        return [{"type": "function_call_output", "call_id": r.id, "output": r.content} for r in message.results]
    raise TypeError(f"not a harpe_lab message: {message!r}")


def to_items(messages: Sequence[Message]) -> list[list[dict[str, Any]]]:
    """The SDK's input items for each message (one list per message; flatten to send)."""
    return [_items_of(m) for m in messages]


def _text(item: Any, key: str, k: int) -> str:
    value = item.get(key) if isinstance(item, dict) else None
    if not isinstance(value, str):
        raise StrategyError(f"the SDK returned item {k} without a text {key!r}: {item!r:.200}")
    return value


def from_items(items: Sequence[Any], sent: Sequence[Sequence[dict[str, Any]]],
               messages: Sequence[Message]) -> tuple[Message, ...]:
    """Messages back from the SDK's ``items``, given the items ``sent`` for each of
    ``messages``. The SDK's filter edits items in place (never adds, drops or reorders
    them), so the items map back to the messages one for one; raises `StrategyError` when
    they do not."""
    total = sum(len(s) for s in sent)
    if len(items) != total:
        raise StrategyError(f"the SDK returned {len(items)} input items for {total} sent; expected an in-place edit")
    out: list[Message] = []
    k = 0
    for m, mine in zip(messages, sent):
        got = items[k : k + len(mine)]
        if all(a is b for a, b in zip(got, mine)):
            out.append(m)
        elif isinstance(m, UserInput):
            out.append(UserInput(_text(got[0], "content", k), m.attachments, m.pinned))
        elif isinstance(m, AssistantMessage):
            j = 0
            text = ""
            if m.text or not m.calls:
                text = _text(got[0], "content", k)
                j = 1
            calls = []
            for c, item in zip(m.calls, got[j:]):
                if item.get("call_id") != c.id:
                    raise StrategyError(f"the SDK changed call id {c.id!r} to {item.get('call_id')!r}")
                calls.append(ToolCall(c.id, _text(item, "name", k), parse_arguments(_text(item, "arguments", k))))
            out.append(AssistantMessage(text, tuple(calls), m.pinned))
        else:
            results = []
            for r, item in zip(m.results, got):
                if item.get("call_id") != r.id:
                    raise StrategyError(f"the SDK changed the output for call {r.id!r} to {item.get('call_id')!r}")
                results.append(ToolResult(r.id, _text(item, "output", k), r.attachments, r.success))
            out.append(ToolResults(tuple(results), m.pinned))
        k += len(mine)
    return tuple(out)


class SDKTrimmer:
    """An edit policy that trims with the SDK's own ``ToolOutputTrimmer``.

    ``trimmer`` is an ``agents.extensions.ToolOutputTrimmer``, or a native
    `harpe_lab.strategies.openai.agents_sdk.ToolOutputTrimmer` whose knobs are copied to a new one.
    ``instructions`` is what the SDK would be given as the agent's instructions (the trimmer
    does not read it).
    """

    def __init__(self, trimmer: Any = None, *, instructions: str = "") -> None:
        if trimmer is None:
            trimmer = _SDKToolOutputTrimmer()
        elif isinstance(trimmer, NativeTrimmer):
            trimmer = _SDKToolOutputTrimmer(
                recent_turns=trimmer.recent_turns, max_output_chars=trimmer.max_output_chars,
                preview_chars=trimmer.preview_chars, trimmable_tools=trimmer.trimmable_tools,
            )
        elif not isinstance(trimmer, _SDKToolOutputTrimmer):
            raise StrategyError(
                f"trimmer must be an agents.extensions.ToolOutputTrimmer or a native "
                f"harpe_lab.strategies.openai.agents_sdk.ToolOutputTrimmer, got {trimmer!r}"
            )
        self.trimmer = trimmer
        self.instructions = instructions

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        sent = to_items(messages)
        flat = [item for items in sent for item in items]
        data = CallModelData(model_data=ModelInputData(input=flat, instructions=self.instructions),
                             agent=None, context=None)
        result = self.trimmer(data)
        return from_items(list(result.input), sent, messages)

    def context(self, base_system: str) -> EditContext:
        """A fresh lifecycle context that sends the SDK's trimmer applied to the whole
        transcript (``base_system`` is also given to the SDK as the instructions)."""
        return EditContext(base_system, SDKTrimmer(self.trimmer, instructions=base_system))

    def __repr__(self) -> str:
        return f"SDKTrimmer({self.trimmer!r})"
