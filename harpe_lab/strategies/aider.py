"""Aider's chat history summarization: finished turns summarized in the background, the
head recursively, once they outgrow the history budget.

Sources read: Aider-AI/aider at commit 5dc9490bb35f9729ef2c95d00a19ccd30c26339c (0.86.3.dev,
2026-05-22; ``aider/history.py`` is the same in the 0.86.2 release on PyPI):

* the budget — ``aider/models.py`` (``Model.__init__``): ``max_chat_history_tokens =
  min(max(max_input_tokens / 16, 1024), 8192)`` (``--max-chat-history-tokens`` sets it);
* when — ``aider/coders/base_coder.py``: a finished exchange moves from ``cur_messages`` to
  ``done_messages`` (``move_back_cur_messages``), and ``summarize_start`` then checks
  ``too_big(done_messages)`` (more tokens than the budget) and summarizes a copy in a
  background thread. The result is swapped in by ``summarize_end``, which
  ``format_chat_chunks`` calls before the next request, only if ``done_messages`` still equals
  the copy. The current exchange (``cur_messages``) is never summarized: the turn that pushed
  the history over the budget goes out whole, every request of it, and the summary lands
  with the next turn — one turn late. A summarization that raises leaves
  ``summarized_done_messages`` at ``[]``, and ``summarize_end`` swaps that in: the history
  is gone (reproduced here; a distiller returning ``None`` is such a failure);
* how — ``aider/history.py`` (``ChatSummary.summarize_real``): each message is weighed as
  the tokens of ``json.dumps(message)``; at depth 0 a history within the budget is kept.
  With 4 messages or fewer, or past depth 3, everything is summarized. Otherwise the tail is
  the newest messages whose tokens stay under half the budget, the split moved back until
  the head ends on an assistant message; a split at or before the 4th message summarizes
  everything. The head, cut to the summarizer's ``max_input_tokens - 512``, is summarized;
  when summary plus tail is under the budget that is the result, else the same again one
  level deeper. ``summarize_all`` writes the messages as ``# USER`` / ``# ASSISTANT``
  sections, sends them with ``prompts.summarize`` as the system prompt, and returns one user
  message, ``prompts.summary_prefix`` + the reply; ``summarize`` adds an assistant ``"Ok."``
  when the result does not end on an assistant message. The summary's own size is counted
  as a chat (``litellm.token_counter``), here the counter's price of one user message.

Aider sends no tool calls (its edits are in the reply's text), so a tool round is made an
Aider message here: a reply and the results answering its calls are one assistant message,
``text``, then ``[tool] {json input}`` per call and ``[result] {output}`` per result,
separated by blank lines (`aider_messages`); results that answer no reply before them are a
user message. A cut can therefore never part a call from its result. The request is the
system prompt, the history (`done` messages: the summary, its ``"Ok."``, the kept messages as
they were recorded) and the current turn.

Not modelled: Aider's repo map, file contents and example messages (not in a recording);
the weak model tried before the main one (one distiller is both); the commit notice pair
(``"I committed …"`` / ``"Ok."``) ``move_back_cur_messages`` appends right after starting the
summary thread when an exchange applied edits. Under CPython the new thread takes its copy of
the history before that append, so ``summarize_end`` finds the history changed and discards
the summary: those lines, run with a summarizer taking 50 ms under Python 3.11, kept 0
summaries of 200 with a commit notice and 200 of 200 without. Recordings hold no such notices;
this module summarizes as Aider does after an exchange without one.
`harpe_lab.peers.aider` runs Aider's own ``ChatSummary`` behind the same seam
(`AiderContext`'s ``summarizer``), and ``tests/strategies/aider/test_aider_peer.py`` shows identical requests.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any, Callable, Protocol, Sequence

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput, deferred
from ..protocol import Compaction, ContextCompacted, Distill, EventHub, MeteredDistill
from ._lifecycle import TurnLifecycle
from ._validate import check_counter, check_int
from ._preset import Factory, Knob, Preset, make_distiller

__all__ = [
    "SUMMARIZE_PROMPT",
    "SUMMARY_PREFIX",
    "DEFAULT_WINDOW",
    "history_budget",
    "aider_messages",
    "chat_summary",
    "Summarizer",
    "Aider",
    "AiderContext",
    "AiderSummarized",
    "PRESETS",
]

DEFAULT_WINDOW = 128_000
"""The model's ``max_input_tokens`` when not told (gpt-4o's): a budget of 8,000."""

SUMMARIZE_PROMPT = """*Briefly* summarize this partial conversation about programming.
Include less detail about older parts and more detail about the most recent messages.
Start a new paragraph every time the topic changes!

This is only part of a longer conversation so *DO NOT* conclude the summary with language like "Finally, ...". Because the conversation continues after the summary.
The summary *MUST* include the function names, libraries, packages that are being discussed.
The summary *MUST* include the filenames that are being referenced by the assistant inside the ```...``` fenced code blocks!
The summaries *MUST NOT* include ```...``` fenced code blocks!

Phrase the summary with the USER in first person, telling the ASSISTANT about the conversation.
Write *as* the user.
The user should refer to the assistant as *you*.
Start the summary with "I asked you...".
"""  # noqa: E501
"""``aider/prompts.py`` ``summarize``: the summarizer's system prompt."""

SUMMARY_PREFIX = "I spoke to you previously about a number of things.\n"
"""``aider/prompts.py`` ``summary_prefix``: what the summary message starts with."""

_MIN_SPLIT = 4
_MAX_DEPTH = 3
_INPUT_RESERVE = 512  # "reserve buffer for safety" below the summarizer's max input
_FALLBACK_INPUT = 4096  # a summarizer without max_input_tokens


def history_budget(window: int) -> float:
    """Aider's ``max_chat_history_tokens`` for a model of ``window`` input tokens:
    ``min(max(window / 16, 1024), 8192)`` (a float, as Aider computes it)."""
    check_int("window", window, 0)
    return min(max(window / 16, 1024), 8192)


_CALL_JSON = json.JSONEncoder(ensure_ascii=False)
# what json.dumps(obj, ensure_ascii=False) builds at every call, built once


def _json_message(message: dict[str, str]) -> str:
    """``json.dumps(message)``: a message of str keys and values written directly, with the
    string encoder json.dumps uses (its encoder's own machinery costs more than the escaping)."""
    if type(message) is not dict:
        return json.dumps(message)
    items = []
    for key, value in message.items():
        if type(key) is not str or type(value) is not str:
            return json.dumps(message)
        items.append(encode_basestring_ascii(key) + ": " + encode_basestring_ascii(value))
    return "{" + ", ".join(items) + "}"


def _unit_text(reply: AssistantMessage | None, results: Sequence[ToolResults]) -> str:
    parts = [reply.text] if reply is not None and reply.text else []
    if reply is not None:
        for c in reply.calls:
            parts.append(f"[{c.name}] {_CALL_JSON.encode(c.input)}")
    for m in results:
        for r in m.results:
            parts.append(f"[result] {r.content}")
    return "\n\n".join(parts)


def aider_messages(messages: Sequence[Message]) -> list[tuple[dict[str, str], tuple[Message, ...]]]:
    """``messages`` as Aider's chat messages: ``(message dict, the messages it stands for)``.
    A user input is a user message; a reply with the results answering its calls is one
    assistant message; results that follow no reply of theirs are a user message."""
    out: list[tuple[dict[str, str], tuple[Message, ...]]] = []
    k = 0
    while k < len(messages):
        m = messages[k]
        if isinstance(m, UserInput):
            out.append(({"role": "user", "content": m.text}, (m,)))
            k += 1
        elif isinstance(m, AssistantMessage):
            group: list[Message] = [m]
            ids = {c.id for c in m.calls}
            k += 1
            while ids and k < len(messages) and isinstance(messages[k], ToolResults) \
                    and {r.id for r in messages[k].results} <= ids:  # type: ignore[union-attr]
                group.append(messages[k])
                k += 1
            text = _unit_text(m, group[1:])  # type: ignore[arg-type]
            out.append(({"role": "assistant", "content": text}, tuple(group)))
        elif isinstance(m, ToolResults):
            out.append(({"role": "user", "content": _unit_text(None, [m])}, (m,)))
            k += 1
        else:
            raise TypeError(f"not a harpe_lab message: {m!r}")
    return out


class Summarizer(Protocol):
    """The seam `AiderContext` summarizes through: Aider's ``ChatSummary(models,
    max_tokens).summarize(messages)`` with ``models`` one model whose ``token_count`` is
    ``count`` (a message dict) / ``count_chat`` (a list of them), whose ``info`` has
    ``max_input_tokens = window`` and whose ``simple_send_with_retries`` is ``send``. It
    returns the new history: the very dicts it was given where it kept them, new ones for
    the summary and its ``"Ok."``; it raises ``ValueError`` when the summary failed."""

    def __call__(self, messages: list[dict[str, str]], *, max_tokens: float, window: int,
                 count: Callable[[dict[str, str]], int], count_chat: Callable[[list[dict[str, str]]], int],
                 send: Callable[[list[dict[str, str]]], "str | None"]) -> list[dict[str, str]]: ...


def chat_summary(messages: list[dict[str, str]], *, max_tokens: float, window: int,
                 count: Callable[[dict[str, str]], int], count_chat: Callable[[list[dict[str, str]]], int],
                 send: Callable[[list[dict[str, str]]], "str | None"]) -> list[dict[str, str]]:
    """Aider's ``ChatSummary.summarize`` (`Summarizer`), reimplemented."""
    result = _summarize_real(messages, 0, max_tokens, window, count, count_chat, send)
    if result and result[-1]["role"] != "assistant":
        result.append({"role": "assistant", "content": "Ok."})
    return result


def _summarize_real(messages: list[dict[str, str]], depth: int, max_tokens: float, window: int,
                    count: Callable, count_chat: Callable, send: Callable) -> list[dict[str, str]]:
    sized = [count(m) for m in messages]
    if sum(sized) <= max_tokens and depth == 0:
        return messages
    if len(messages) <= _MIN_SPLIT or depth > _MAX_DEPTH:
        return _summarize_all(messages, send)
    tail_tokens = 0
    split = len(messages)
    half = max_tokens // 2
    for k in range(len(sized) - 1, -1, -1):
        if tail_tokens + sized[k] < half:
            tail_tokens += sized[k]
            split = k
        else:
            break
    while messages[split - 1]["role"] != "assistant" and split > 1:  # the head ends on a reply
        split -= 1
    if split <= _MIN_SPLIT:
        return _summarize_all(messages, send)
    tail = messages[split:]
    room = (window or _FALLBACK_INPUT) - _INPUT_RESERVE
    keep: list[dict[str, str]] = []
    total = 0
    for tokens, m in zip(sized[:split], messages[:split]):
        total += tokens
        if total > room:
            break
        keep.append(m)
    summary = _summarize_all(keep, send)
    if count_chat(summary) + sum(sized[split:]) < max_tokens:
        return summary + tail
    return _summarize_real(summary + tail, depth + 1, max_tokens, window, count, count_chat, send)


def _summarize_all(messages: list[dict[str, str]], send: Callable) -> list[dict[str, str]]:
    # Aider appends to one string; joined at the end, a long head costs one copy, not one each
    parts = []
    for m in messages:
        role = m["role"].upper()
        if role not in ("USER", "ASSISTANT"):
            continue
        part = f"# {role}\n" + m["content"]
        parts.append(part if part.endswith("\n") else part + "\n")
    content = "".join(parts)
    reply = send([{"role": "system", "content": SUMMARIZE_PROMPT}, {"role": "user", "content": content}])
    if reply is None:
        raise ValueError("summarizer unexpectedly failed for all models")
    return [{"role": "user", "content": SUMMARY_PREFIX + reply}]


@dataclass(frozen=True)
class AiderSummarized:
    """Event: the finished history weighed ``tokens`` (over ``budget``); its summary (of
    ``before`` Aider messages, now ``after``) lands with this request. ``failed``: the
    summarizer failed and Aider's history is now empty."""

    tokens: int
    budget: float
    before: int
    after: int
    failed: bool = False


@dataclass(frozen=True, kw_only=True)
class Aider:
    """Aider's chat history summarization: finished turns over ``budget`` tokens are
    summarized in the background, the summary landing with the next turn."""

    window: int = DEFAULT_WINDOW
    """The model's ``max_input_tokens`` (the summarizer's too: it sets how much of the head
    one summary may read, ``window - 512``)."""
    history_tokens: int | None = None
    """``--max-chat-history-tokens``; ``None``: ``min(max(window / 16, 1024), 8192)``."""

    def __post_init__(self) -> None:
        check_int("window", self.window, 1)
        if self.history_tokens is not None:
            check_int("history_tokens", self.history_tokens, 1)

    @property
    def budget(self) -> float:
        """The history's budget in tokens (``max_chat_history_tokens``)."""
        return history_budget(self.window) if self.history_tokens is None else self.history_tokens

    def context(self, base_system: str, *, counter: Any, distill: Distill, summarizer: Summarizer | None = None,
                on_event: Callable[[object], None] | None = None) -> "AiderContext":
        """A fresh lifecycle context (build one per replay, with its own distiller).
        ``summarizer`` replaces the reimplementation of ``ChatSummary`` (`chat_summary`):
        `harpe_lab.peers.aider` passes Aider's own."""
        return AiderContext(base_system, self, counter=counter, distill=distill, summarizer=summarizer,
                            on_event=on_event)


class AiderContext(TurnLifecycle):
    """Aider's history summarization in Harpe's lifecycle.

    A request is the system prompt, the finished history and the current turn. At
    `commit_turn` the turn joins the history and, when the history weighs more than the
    budget, is summarized (the distiller is called then: Aider's background thread); the
    result replaces the history at the next `compact` (the next turn's first request). An
    aborted turn keeps its input in the current exchange, as Aider keeps ``cur_messages``
    until an exchange finishes; the history, and a summary that landed in it, stay. Reports `AiderSummarized` and `ContextCompacted` when a summary
    lands, and every summarizer call as a `DistillCall`.
    """

    def __init__(self, base_system: str, config: Aider, *, counter: Any, distill: Distill,
                 summarizer: Summarizer | None = None, on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, Aider):
            raise StrategyError(f"config must be an Aider, got {config!r}")
        check_counter(counter)
        if summarizer is not None and not callable(summarizer):
            raise StrategyError(f"summarizer must be callable like chat_summary, got {summarizer!r}")
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self.config = config
        self.counter = counter
        self.summarizer: Summarizer = summarizer or chat_summary  # type: ignore[assignment]
        self._budget = config.budget  # weighed against at every turn's end; the config is frozen
        # only ever extended in place or replaced whole, so the list and its length say whether
        # it changed since a summary started (`_summarize_end`)
        self._done: list[tuple[dict[str, str], tuple[Message, ...]]] = []
        self._done_tokens: int | None = 0  # history_tokens, kept as turns join (None: weigh again)
        self._weights: dict[int, tuple[dict, int]] = {}  # id(dict) -> (the dict, its tokens)
        self._cur: list[Message] = []
        self._pending: tuple | None = None  # (history list, its length, its tokens, the summarized history or None)
        self._summary = ""
        # the transcript is what the next request carries: the history's messages, then _cur
        self._swapped = False  # a summary landed at commit_turn: the next request is no continuation
        self._cur_marked = 0  # the current exchange's length at the turn's start (it only grows in a turn)

    @property
    def summary(self) -> str:
        """The text of the summary in the history ("" before the first)."""
        return self._summary

    @property
    def history_tokens(self) -> int:
        """What ``too_big`` weighs: the finished history's Aider messages, each as the tokens
        of its JSON."""
        if self._done_tokens is None:
            self._done_tokens = sum(self._count(d) for d, _ in self._done)
        return self._done_tokens

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    # -- what Aider's model interface does with our counter and distiller ----------------

    def _count(self, message: dict[str, str]) -> int:
        """``Model.token_count`` of one message: the tokens of ``json.dumps(message)``."""
        hit = self._weights.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        n = int(self.counter.count(_json_message(message)))
        self._weights[id(message)] = (message, n)
        return n

    def count_message(self, message: dict[str, str]) -> int:
        """``Model.token_count`` of one message dict (not cached: any dict)."""
        return int(self.counter.count(json.dumps(message)))

    def count_chat(self, messages: list[dict[str, str]]) -> int:
        """``Model.token_count`` of a list (``litellm.token_counter``): the counter's price of
        the messages as a chat, each one a user message."""
        return int(self.counter.count_rendered(Rendered("", tuple(UserInput(m["content"]) for m in messages))))

    def send(self, messages: list[dict[str, str]]) -> str | None:
        """``Model.simple_send_with_retries``: the distiller, asked with Aider's system
        prompt and text."""
        system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
        asked = tuple(UserInput(m["content"]) for m in messages if m["role"] != "system")
        try:
            reply = self._distill(Rendered(system, asked))
        except StrategyError:
            raise  # the lab's own misuse, not a failed call
        except Exception:  # noqa: BLE001 - Aider's simple_send_with_retries returns None on a failed call
            return None
        if reply is not None and not isinstance(reply, str):
            raise StrategyError(f"distill must return a str or None, got {type(reply).__name__}")
        return reply

    # -- the lifecycle -------------------------------------------------------------------

    def _mark_turn(self) -> None:
        self._cur_marked = len(self._cur)

    def _added(self, message: Message) -> None:
        self._cur.append(message)

    def _restored(self) -> None:
        # what the turn appended goes; its input stays in the current exchange, as in Aider's
        # cur_messages. A summary that landed at the turn's start stays: it came from the
        # finished turns, which the aborted one never joined (so the history is rebuilt, not
        # the turn's start taken back)
        self._cur = self._cur[:self._cur_marked] + self._transcript[self._marked[1]:]
        self._transcript = [m for _, unit in self._done for m in unit] + self._cur

    def observe(self, usage: Usage) -> None:
        pass  # Aider weighs its history with its own tokenizer

    def compact(self) -> Compaction:
        landed = self._summarize_end()
        edits = None if landed or self._swapped or self._aborted else ()
        self._swapped = False
        return self._send(deferred(self._base_system, self._transcript), landed, edits)

    def _summarize_end(self) -> bool:
        """``summarize_end``: swap the summary in when the history is still the copy it was
        made from. Returns whether the request changed."""
        if self._pending is None:
            return False
        source, length, tokens, result = self._pending
        self._pending = None
        if source is not self._done or length != len(source):
            return False  # the history changed meanwhile: Aider drops the summary
        before = len(self._done)
        old = {id(d): unit for d, unit in self._done}
        done: list[tuple[dict[str, str], tuple[Message, ...]]] = []
        for d in result or []:
            unit = old.get(id(d))
            if unit is None:  # the summary or its "Ok."
                unit = (UserInput(d["content"]),) if d["role"] == "user" else (AssistantMessage(d["content"]),)
                if d["role"] == "user" and d["content"].startswith(SUMMARY_PREFIX):
                    self._summary = d["content"][len(SUMMARY_PREFIX):]
            done.append((d, unit))
        self._done = done
        self._done_tokens = None  # the summary's own weight is taken when next asked, as Aider does
        self._forget()
        self._transcript = [m for _, unit in done for m in unit] + self._cur
        gone = sum(map(len, old.values())) - sum(len(unit) for d, unit in done if id(d) in old)
        self._events.emit(AiderSummarized(tokens, self._budget, before, len(done), result is None))
        self._events.emit(ContextCompacted(gone))
        return True

    def _forget(self) -> None:
        """Keep the weights of the history's own dicts only (the others may be gone)."""
        held = {id(d) for d, _ in self._done}
        self._weights = {k: v for k, v in self._weights.items() if k in held}

    def commit_turn(self) -> None:
        """``move_back_cur_messages``: the finished exchange joins the history, and
        ``summarize_start`` summarizes it when it is too big."""
        joined = aider_messages(self._cur)
        self._done.extend(joined)
        if self._done_tokens is not None:  # only what joined is weighed: the rest is summed already
            self._done_tokens += sum(self._count(d) for d, _ in joined)
        self._cur = []
        super().commit_turn()
        tokens = self.history_tokens
        if tokens <= self._budget:
            return
        if self._summarize_end():  # a summary still pending lands first (Aider joins its thread)
            self._swapped = True
        try:
            result: list[dict[str, str]] | None = self.summarizer(
                [d for d, _ in self._done], max_tokens=self._budget, window=self.config.window,
                count=self._count, count_chat=self.count_chat, send=self.send)
        except ValueError:
            result = None  # summarize_worker catches it; summarize_end swaps in []
        self._pending = (self._done, len(self._done), tokens, result)
        self._forget()

    def __repr__(self) -> str:
        return f"AiderContext(budget={self.config.budget:,.0f}, {len(self._transcript)} messages)"


# --- presets ------------------------------------------------------------------------------


def _aider(*, counter: Any, system: str, distill: Distill | None, history_tokens: int | None, window: int,
           **_: Any) -> Factory:
    config = Aider(window=window, history_tokens=history_tokens)
    # Aider asks for a brief summary: about half the history budget, at 4 characters a token
    make = make_distiller(distill, int(config.budget) * 2)
    return lambda: config.context(system, counter=counter, distill=make())


PRESETS: tuple[Preset, ...] = (
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
)
