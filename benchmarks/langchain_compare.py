"""harpe_lab's orion `SlidingWindow` replay against LangChain's ``trim_messages``.

A LangChain agent that keeps its history under a token budget calls
``langchain_core.messages.trim_messages`` before every model call. Both sides here do that
job for every request of one recorded conversation:

* **LangChain** — keep the history as LangChain messages (built once, untimed, as a
  LangChain app holds them), and at every model call run ``trim_messages(history,
  strategy="last", start_on="human", include_system=True, max_tokens=..., token_counter=...)``
  over the history the full context would hold at that call;
* **harpe_lab** — `harpe_lab.replay.replay` of the conversation under
  ``OrionContext(system, SlidingWindow(budget, counter=counter, reserve_tokens=0))`` (the
  whole replay: selection plus the engine's per-request accounting).

Both count with the same tiktoken encoding and the same arithmetic (3 tokens a message,
3 plus name plus JSON arguments a tool call, one LangChain ``ToolMessage`` per tool
result; the 3 reply-priming tokens are taken off LangChain's ``max_tokens``), so they must
keep exactly the same messages at every request — every timed run is checked.

Two LangChain token counters:

* **documented** — a function that encodes every message it is given, as LangChain's
  guide shows it (``tiktoken_counter(messages)`` with ``enc.encode`` per message);
* **cached** — what a careful user writes: the same, but each message's count is cached
  (by identity), so each message is encoded once.

    .venv/bin/python -m benchmarks.langchain_compare [--reps 5] [--quick]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Callable

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# This module is the LangChain side: it needs langchain-core (the `bench` extra).
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, trim_messages  # noqa: E402

from benchmarks.common import (  # noqa: E402
    Goal,
    Row,
    conversation_tokens,
    conversation_with_requests,
    format_table,
    interleaved,
    request_count,
)

__all__ = [
    "run",
    "to_langchain",
    "documented_counter",
    "CachedCounter",
    "history_ops",
    "trim_every_request",
    "main",
]

DOCUMENTED_GOAL = Goal(">=", 30)
CACHED_GOAL = Goal(">=", 5)


def to_langchain(message: Any) -> tuple[Any, ...]:
    """The LangChain messages for one harpe_lab message (a `ToolResults` becomes one
    ``ToolMessage`` per result, as an OpenAI request carries them)."""
    from harpe_lab.messages import AssistantMessage, ToolResults, UserInput

    if isinstance(message, UserInput):
        return (HumanMessage(content=message.text),)
    if isinstance(message, AssistantMessage):
        calls = [{"name": c.name, "args": c.input, "id": c.id, "type": "tool_call"} for c in message.calls]
        return (AIMessage(content=message.text, tool_calls=calls),)
    if isinstance(message, ToolResults):
        return tuple(ToolMessage(content=r.content, tool_call_id=r.id) for r in message.results)
    raise TypeError(f"not a harpe_lab message: {message!r}")


def _message_tokens(message: Any, encode: Callable[[str], Any]) -> int:
    """harpe_lab's arithmetic (`harpe_lab.tokens`) on a LangChain message."""
    if isinstance(message, SystemMessage) and not message.content:
        return 0  # harpe_lab sends no system message for an empty prompt
    n = 3 + len(encode(message.content))
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            n += 3 + len(encode(call["name"])) + len(encode(json.dumps(call["args"], ensure_ascii=False)))
    return n


def documented_counter(encoding: Any) -> Callable[[list], int]:
    """LangChain's documented shape: a function of a message list that encodes every
    message it is given (``enc.encode``), each time it is called."""

    def tiktoken_counter(messages: list) -> int:
        encode = encoding.encode
        return sum(_message_tokens(m, encode) for m in messages)

    return tiktoken_counter


class CachedCounter:
    """The careful user's counter: each message is encoded once, its count cached by
    identity (LangChain messages are mutable pydantic models, not hashable)."""

    def __init__(self, encoding: Any) -> None:
        self.encode = encoding.encode_ordinary
        self.cache: dict[int, tuple[Any, int]] = {}

    def __call__(self, messages: list) -> int:
        cache = self.cache
        total = 0
        for m in messages:
            hit = cache.get(id(m))
            if hit is None or hit[0] is not m:
                hit = cache[id(m)] = (m, _message_tokens(m, self.encode))
            total += hit[1]
        return total


def history_ops(conversation: Any, lc: dict[int, tuple[Any, ...]]) -> list[tuple[int, list[Any]]]:
    """For each model call of a replay, how the full history changes since the previous
    call: ``(keep, added)`` — keep the first ``keep`` messages (the system message
    included), then append ``added``. Follows the engine's lifecycle: one call per reply
    (and one more when a recording ends after a tool round); a turn that did not end with
    an answer keeps only its user input afterwards."""
    from harpe_lab.messages import AssistantMessage

    ops: list[tuple[int, list[Any]]] = []
    length = 1  # the system message
    carry: list[Any] = []
    for turn in conversation.turns:
        start = length + len(carry)
        add = carry + list(lc[id(turn.input)])
        rounds: list[tuple[Any, list[Any]]] = []
        for m in turn.messages:
            if isinstance(m, AssistantMessage):
                rounds.append((m, []))
            elif rounds:
                rounds[-1][1].append(m)
            else:
                rounds.append((None, [m]))
        if rounds and rounds[-1][1]:
            rounds.append((None, []))
        for reply, after in rounds or [(None, [])]:
            ops.append((length, add))
            length += len(add)
            add = [x for m in ([reply] if reply is not None else []) + after for x in lc[id(m)]]
            if reply is None and not after:
                break
        if turn.outcome == "answered":
            carry = add
        else:
            length = start + len(lc[id(turn.input)])
            carry = []
    return ops


def trim_every_request(ops: list[tuple[int, list[Any]]], system: Any, counter: Any, max_tokens: int) -> list[list[Any]]:
    """The LangChain side: grow the history as the agent would and trim it before every
    model call; return what each call would send."""
    history = [system]
    sent = []
    for keep, added in ops:
        if keep != len(history):
            del history[keep:]
        history.extend(added)
        sent.append(trim_messages(history, max_tokens=max_tokens, token_counter=counter, strategy="last",
                                  start_on="human", include_system=True))  # fmt: skip
    return sent


def _compare(conversation: Any, *, budget: int, reps: int, variants: dict[str, Goal | None], label: str,
             what: str, slow: tuple[float, int] | None = None) -> list[Row]:
    from harpe_lab.replay import replay
    from harpe_lab.strategies.orion import OrionContext, SlidingWindow
    from harpe_lab.tokens import REPLY_PRIMING, TiktokenCounter

    warm = TiktokenCounter()
    encoding = warm.encoding
    tokens = conversation_tokens(conversation, warm)
    messages = conversation.messages()
    lc = {id(m): to_langchain(m) for m in messages}
    system = SystemMessage(content=conversation.system)
    ops = history_ops(conversation, lc)
    max_tokens = budget - REPLY_PRIMING  # harpe_lab counts the reply priming in the request

    def harpe() -> Callable[[], Any]:
        counter = TiktokenCounter()
        window = SlidingWindow(budget, counter=counter, reserve_tokens=0)
        return lambda: replay(conversation, lambda: OrionContext(conversation.system, window), counter=counter)

    expected = [tuple(id(x) for m in r.messages for x in lc[id(m)]) for r in _renders(harpe()())]
    if len(expected) != len(ops):
        raise AssertionError(f"{label}: harpe_lab made {len(expected)} requests, the LangChain loop {len(ops)}")

    def check(name: str, result: Any) -> None:
        sent = [tuple(id(x) for m in r.messages for x in lc[id(m)]) for r in _renders(result)] if name == "harpe_lab" \
            else [tuple(map(id, kept[1:])) for kept in result]
        if name != "harpe_lab" and any(kept[0] is not system for kept in result):
            raise AssertionError(f"{label}/{name}: trim_messages dropped the system message")
        if len(sent) != len(expected):
            raise AssertionError(f"{label}/{name}: {len(sent)} requests where harpe_lab made {len(expected)}")
        for i, (a, b) in enumerate(zip(sent, expected)):
            if a != b:
                raise AssertionError(
                    f"{label}/{name}: request {i} keeps {len(a)} messages where harpe_lab keeps {len(b)}; "
                    "the two counters or budgets disagree"
                )

    makers = {"documented": documented_counter, "cached": CachedCounter}

    def langchain(variant: str) -> Callable[[], Callable[[], Any]]:
        def prepare() -> Callable[[], Any]:
            counter = makers[variant](encoding)  # a fresh cache every rep, as harpe_lab's counter
            return lambda: trim_every_request(ops, system, counter, max_tokens)

        return prepare

    cases: dict[str, Any] = {"harpe_lab": harpe, **{variant: langchain(variant) for variant in variants}}
    timings = interleaved(cases, reps, check=check, slow=slow, progress=f"langchain {label}")
    h = timings.median("harpe_lab")
    mean = tokens / len(messages)
    rows = []
    for variant, goal in variants.items():
        t = timings.median(variant)
        rows.append(Row(
            "2 LangChain", f"trim_messages ({variant} counter) / harpe_lab SlidingWindow: {what}", t / h, goal=goal,
            reps=timings.reps(variant),
            detail=f"{t:.3f} s / {h:.3f} s; {len(ops)} requests, {len(conversation.turns)} turns, "
                   f"{len(messages)} messages of {mean:.0f} tokens on average; budget {budget}; "
                   "same messages kept at every request",
        ))  # fmt: skip
    return rows


def _renders(result: Any) -> list[Any]:
    return [result.rendered(i) for i in range(len(result))]


def run(*, reps: int = 5, requests: int = 600, turns: int = 2_000, long_turns: int = 300,
        slow: tuple[float, int] | None = (10.0, 3)) -> list[Row]:
    """The three comparisons, each a list of table rows:

    * the documented counter (and, for reference, the cached one) on a conversation of
      ``requests`` model calls with short messages (the documented counter re-encodes the
      history at every call, so its cost grows with the square of the length; short
      messages keep that bearable, and they favour LangChain: harpe_lab's advantage is in
      not encoding a message twice, which matters more the longer the messages);
    * the cached counter on a ``turns``-turn tool-using conversation whose messages
      average 150–200 tokens;
    * the cached counter on a ``long_turns``-turn conversation with tool results of a few
      thousand tokens (no goal).
    """
    rows = []
    conv = conversation_with_requests(requests, seed=3, tool_rate=0.3, result_chars=100)
    rows += _compare(conv, budget=8_000, reps=reps, variants={"documented": DOCUMENTED_GOAL, "cached": None},
                     label=f"{requests} requests", what=f"{request_count(conv)}-request conversation", slow=slow)
    from harpe_lab.datasets import synthesize

    short = synthesize(turns, seed=4, tool_rate=0.6, result_chars=900)
    rows += _compare(short, budget=8_000, reps=reps, variants={"cached": CACHED_GOAL}, slow=slow,
                     label=f"{turns} turns", what=f"{turns}-turn tool-using conversation, short messages")
    long = synthesize(long_turns, seed=5, tool_rate=0.6, result_chars=8_000)
    rows += _compare(long, budget=64_000, reps=reps, variants={"cached": None}, slow=slow,
                     label="long messages", what=f"{long_turns}-turn conversation, long tool results")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="small conversations, 3 reps")
    args = parser.parse_args(argv)
    if args.quick:
        rows = run(reps=3, requests=150, turns=400, long_turns=60)
    else:
        rows = run(reps=args.reps)
    print(format_table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
