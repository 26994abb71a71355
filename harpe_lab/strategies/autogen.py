"""AutoGen's model contexts, replayed natively: `Buffered`, `HeadAndTail`, `TokenLimited`.

Source: microsoft/autogen, ``python/packages/autogen-core/src/autogen_core/model_context/``
(``_buffered_chat_completion_context.py``, ``_head_and_tail_chat_completion_context.py``,
``_token_limited_chat_completion_context.py``) as released in **autogen-core 0.7.5** on PyPI,
the version `harpe_lab.peers.autogen` runs in the differential tests. (The main branch read
at commit 0b607df5 differs in one place, noted at `TokenLimited`.)

One AutoGen ``LLMMessage`` stands for one harpe_lab message, so AutoGen's message counts are
ours: `UserInput` is a ``UserMessage``; an `AssistantMessage` is an ``AssistantMessage``
whose content is its text, or, when it calls tools, the list of ``FunctionCall`` s (its text
is then the ``thought``); `ToolResults` — one tool round — is one
``FunctionExecutionResultMessage``, as AutoGen's agents write it.

Each policy is a frozen, keyword-only, validated callable ``policy(messages) -> messages``:

* ``select(messages)`` is exactly what AutoGen's ``get_messages`` returns for a context
  holding ``messages`` (`HeadAndTail`'s placeholder is a new `UserInput` each time);
* ``policy(messages)`` is ``pair_up(policy.select(messages), messages)``: what we send.

Where we deviate, and why (`pair_up`): AutoGen can send a request no provider accepts or no
agent can use — results whose call was dropped, a call whose results were dropped
(`TokenLimited` pops messages out of the middle), or no newest message at all (a one-message
buffer or tail that holds only tool results, which AutoGen then drops; `TokenLimited` popping
down to the first message). We send what AutoGen keeps, minus the tool results whose call is
not right before them and the calls whose results are not right after them; and when the
newest message is missing, it is put back at the end, preceded by the call it answers. So a
request always ends with the newest message and the replay engine's invariant (a call is
followed by its results, results never come without their call) holds.

`ModelContext` runs a policy through Harpe's lifecycle for `harpe_lab.replay.replay`
(``policy.context(system)`` builds one).
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import accumulate, compress, count, islice
from operator import is_not
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, UserInput
from ..protocol import Compaction, Limit
from ._lifecycle import PolicyLifecycle
from ._validate import check_int
from ._preset import Factory, Knob, Preset, budget_knob

__all__ = [
    "Buffered",
    "HeadAndTail",
    "TokenLimited",
    "ModelContext",
    "Running",
    "pair_up",
    "skipped_text",
    "PRESETS",
]




def _seq(messages: Iterable[Message]) -> Sequence[Message]:
    return messages if isinstance(messages, (list, tuple)) else tuple(messages)


def _is_results(m: Message) -> bool:
    """AutoGen's ``isinstance(m, FunctionExecutionResultMessage)``."""
    return isinstance(m, ToolResults)


def _is_calls(m: Message) -> bool:
    """AutoGen's test for a function-call message: an ``AssistantMessage`` whose content is
    a list of ``FunctionCall`` s — in our terms, an assistant message with tool calls."""
    return isinstance(m, AssistantMessage) and bool(m.calls)


def skipped_text(n: int) -> str:
    """`HeadAndTail`'s placeholder text, AutoGen's exactly: ``"Skipped {n} messages."``."""
    return f"Skipped {n} messages."


def pair_up(sent: Sequence[Message], messages: Sequence[Message]) -> tuple[Message, ...]:
    """What we send for AutoGen's selection ``sent`` out of the transcript ``messages``.

    A call and its results are the pair the transcript holds: an assistant message with
    tool calls and the `ToolResults` right after it. From ``sent`` we drop results whose
    call is not right before them and calls whose results are not right after them; then,
    when the request does not end with the transcript's newest message, the newest is put
    back at the end, preceded by the call it answers. Messages that are not in the
    transcript (a placeholder) pass unchanged. ``pair_up(pair_up(s, m), m) == pair_up(s, m)``.
    Each message object stands once in ``messages`` (as in a replay, where every position
    is its own object): a message is paired by its position.
    """
    msgs = _seq(messages)
    out = tuple(sent)
    n, total = len(out), len(msgs)
    # Where the sent messages stand in the transcript: a run from its start (a head) and a
    # run to its end (a tail), found by identity in O(len(sent)). Every selection here is a
    # head, made-up messages and a tail; anything else is paired by scanning the transcript.
    # the runs' lengths: where the request first differs from the transcript, from either
    # end (compared in C: the runs are the whole window)
    front = next(compress(count(), map(is_not, out, msgs)), min(n, total))
    back = next(compress(count(), map(is_not, islice(reversed(out), n - front), islice(reversed(msgs), total - front))),
                min(n, total) - front)
    if any(isinstance(m, ToolResults) or _is_calls(m) for m in out[front : n - back]):
        return _pair_up_scanning(out, msgs)

    def call_of(p: int) -> Message | None:
        """The call right before position ``p`` of the transcript, when ``p`` holds its results."""
        if p >= 1 and isinstance(msgs[p], ToolResults) and _is_calls(msgs[p - 1]):
            return msgs[p - 1]
        return None

    def keeps(k: int) -> bool:
        p = k if k < front else k + total - n if k >= n - back else -1
        if p < 0:  # a made-up message: neither a call nor results
            return True
        m = out[k]
        call = call_of(p)
        if call is not None and (k == 0 or out[k - 1] is not call):
            return False  # results without their call
        res = msgs[p + 1] if p + 1 < total and _is_calls(m) and isinstance(msgs[p + 1], ToolResults) else None
        return res is None or (k + 1 < n and out[k + 1] is res)  # else a call without its results

    # Inside a run the request's neighbours are the transcript's, so a pair there is whole:
    # only a run's first message (results) or last (a call) can have lost its partner.
    edges = sorted({k for k in (0, front - 1, front, n - back - 1, n - back, n - 1) if 0 <= k < n})
    kept = list(out)
    for k in reversed(edges):
        m = out[k]
        if (isinstance(m, ToolResults) or _is_calls(m)) and not keeps(k):  # others always stay
            del kept[k]
    if msgs and (not kept or kept[-1] is not msgs[-1]):
        newest = msgs[-1]
        call = call_of(total - 1)
        unit = (newest,) if call is None else (call, newest)
        kept = [m for m in kept if not any(m is u for u in unit)]
        kept.extend(unit)
    return tuple(kept)


def _pair_up_scanning(out: tuple[Message, ...], msgs: Sequence[Message]) -> tuple[Message, ...]:
    """`pair_up` for any selection: the pairs of the whole transcript, by identity."""
    call_of: dict[int, Message] = {}
    results_of: dict[int, Message] = {}
    for k in range(len(msgs) - 1):
        m, nxt = msgs[k], msgs[k + 1]
        if _is_calls(m) and isinstance(nxt, ToolResults):
            results_of[id(m)] = nxt
            call_of[id(nxt)] = m
    n = len(out)
    kept: list[Message] = []
    for k, m in enumerate(out):
        call = call_of.get(id(m))
        if call is not None and (k == 0 or out[k - 1] is not call):
            continue  # results without their call
        res = results_of.get(id(m))
        if res is not None and (k + 1 == n or out[k + 1] is not res):
            continue  # a call without its results
        kept.append(m)
    if msgs and (not kept or kept[-1] is not msgs[-1]):
        newest = msgs[-1]
        call = call_of.get(id(newest))
        unit = (newest,) if call is None else (call, newest)
        kept = [m for m in kept if not any(m is u for u in unit)]
        kept.extend(unit)
    return tuple(kept)


@runtime_checkable
class Running(Protocol):
    """A policy that runs over a stored transcript with state of its own (`ModelContext`
    checks for it once, where it is given the policy): ``running()`` returns a fresh
    `Run`."""

    def running(self) -> "Run": ...


class Run(Protocol):
    """A policy over one context's stored transcript: told of each message before it is
    stored (``added``) and of the transcript an aborted turn restored (``restored``), it
    answers ``run(transcript)`` — the same as ``policy(transcript)``."""

    def added(self, message: Message) -> None: ...

    def restored(self, messages: Sequence[Message]) -> None: ...

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]: ...


class _Whole:
    """A policy applied to the whole stored transcript at each request, nothing kept between."""

    def __init__(self, policy: Callable[[Sequence[Message]], Sequence[Message]]) -> None:
        self.policy = policy

    def added(self, message: Message) -> None:
        pass

    def restored(self, messages: Sequence[Message]) -> None:
        pass

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        return tuple(self.policy(messages))


class _Policy:
    """Shared by the three policies: ``__call__``, ``running`` and ``context``."""

    def select(self, messages: Sequence[Message]) -> tuple[Message, ...]:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, messages: Iterable[Message]) -> tuple[Message, ...]:
        seq = _seq(messages)
        return pair_up(self.select(seq), seq)

    def running(self) -> Run:
        """This policy over one context's transcript (`Running`)."""
        return _Whole(self)

    def context(self, system: str = "") -> "ModelContext":
        """This policy through Harpe's lifecycle, with the system prompt ``system``."""
        return ModelContext(system, self)


@dataclass(frozen=True, kw_only=True)
class Buffered(_Policy):
    """AutoGen's ``BufferedChatCompletionContext``: the last ``buffer_size`` messages; when
    the first of them is tool results, it is dropped.

    Deviation (`pair_up`): with a window of only tool results (``buffer_size=1`` after a
    tool round) AutoGen sends nothing; we send the results with their call. Never more than
    ``buffer_size`` messages otherwise.
    """

    buffer_size: int

    def __post_init__(self) -> None:
        check_int("buffer_size", self.buffer_size, 1)

    def select(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        seq = _seq(messages)
        window = tuple(seq[-self.buffer_size :])
        if window and _is_results(window[0]):
            window = window[1:]
        return window


@dataclass(frozen=True, kw_only=True)
class HeadAndTail(_Policy):
    """AutoGen's ``HeadAndTailChatCompletionContext``: the first ``head_size`` and the last
    ``tail_size`` messages with a user message ``"Skipped N messages."`` between them, where
    ``N = len(messages) - head_size - tail_size`` (AutoGen's count: it does not count the
    call it drops from the head's end nor the results it drops from the tail's start). When
    ``N <= 0`` every message is sent. A head that ends with a call loses that call; a tail
    that starts with tool results loses them. The placeholder is a new `UserInput` at every
    request (AutoGen's has ``source="System"``; ours is a plain user input).

    Deviation (`pair_up`): a tail of only tool results (``tail_size=1`` after a tool round)
    is empty in AutoGen, and its request ends with the placeholder; we end it with the
    results and their call.
    """

    head_size: int
    tail_size: int

    def __post_init__(self) -> None:
        check_int("head_size", self.head_size, 1)
        check_int("tail_size", self.tail_size, 1)

    def select(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        seq = _seq(messages)
        skipped = len(seq) - self.head_size - self.tail_size
        if skipped <= 0:
            return tuple(seq)
        head = tuple(seq[: self.head_size])
        if head and _is_calls(head[-1]):
            head = head[:-1]
        tail = tuple(seq[-self.tail_size :])
        if tail and _is_results(tail[0]):
            tail = tail[1:]
        return (*head, UserInput(skipped_text(skipped)), *tail)


@dataclass(frozen=True, kw_only=True)
class TokenLimited(_Policy):
    """AutoGen's ``TokenLimitedChatCompletionContext`` with a ``token_limit``: while the
    messages (with the tool schemas) count more than ``token_limit``, pop the message at
    index ``len // 2`` — out of the middle, so what is dropped is one run of messages
    between a kept head and a kept tail — then drop the first message if it is tool results.

    Counting: AutoGen asks its model client's ``count_tokens(messages, tools=...)``; here
    ``counter`` (a harpe_lab counter, e.g. ``TiktokenCounter("cl100k_base")``) prices the
    messages as the replay does, ``counter.count_rendered(Rendered("", messages), tools)``:
    messages with chat overhead, tool schemas, reply priming. The system prompt is not
    counted — AutoGen's agents prepend it outside the model context — so the request goes
    up to ``token_limit`` plus the system prompt; `within` sets the limit from a whole-request
    budget. (``tools`` are OpenAI tool schemas, the replay's.) Every harpe_lab counter is
    additive (fixed part + each message), so the pops need not be made one by one: the
    running sums of the prices find where they stop in O(log n).

    Deviations (`pair_up`): popping from the middle can split a call from its results;
    AutoGen 0.7.5 sends both halves (the main branch, commit 0b607df5, drops orphaned
    results and keeps the orphaned call); we drop both. When the first message and the
    newest do not fit together AutoGen pops the newest (index ``2 // 2``) and then the first;
    we put the newest back (with its call). So a request goes over ``token_limit`` only when
    AutoGen's own selection lost the newest message or its call; the limit is a ``"target"``.
    The no-limit mode (``remaining_tokens`` of a model's window) is not offered.
    """

    token_limit: int
    counter: Any
    tools: tuple = ()

    def __post_init__(self) -> None:
        check_int("token_limit", self.token_limit, 1)
        if not (callable(getattr(self.counter, "count_message", None))
                and callable(getattr(self.counter, "count_rendered", None))):
            raise StrategyError(
                f"counter must be a harpe_lab token counter (count_message, count_rendered), e.g. "
                f"harpe_lab.tokens.TiktokenCounter('cl100k_base'); got {self.counter!r}"
            )
        if isinstance(self.tools, (str, bytes)) or not isinstance(self.tools, Iterable):
            raise StrategyError(f"tools must be a sequence of OpenAI tool schemas, got {self.tools!r}")
        object.__setattr__(self, "tools", tuple(self.tools))

    @classmethod
    def within(cls, budget: int, *, counter: Any, system: str = "", tools: Iterable = ()) -> "TokenLimited":
        """A `TokenLimited` whose requests, system prompt ``system`` included, aim at
        ``budget`` tokens: ``token_limit`` is the budget less the system prompt's tokens."""
        check_int("budget", budget, 1)
        probe = cls(token_limit=1, counter=counter, tools=tuple(tools))
        room = budget - probe.system_tokens(system)
        if room < 1:
            raise StrategyError(
                f"budget {budget:,} tokens leaves no room for messages: the system prompt alone takes "
                f"{budget - room:,}; raise the budget"
            )
        return cls(token_limit=room, counter=counter, tools=probe.tools)

    def system_tokens(self, system: str) -> int:
        """What the system prompt ``system`` adds to a request, as ``counter`` prices it."""
        c = self.counter
        return int(c.count_rendered(Rendered(system, ()), self.tools)) - int(c.count_rendered(Rendered("", ()), self.tools))

    def count(self, messages: Sequence[Message]) -> int:
        """AutoGen's ``count_tokens(messages, tools)``, with our counter."""
        return int(self.counter.count_rendered(Rendered("", tuple(messages)), self.tools))

    def select(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        seq = _seq(messages)
        price = self.counter.count_message
        return self.select_summed(seq, list(accumulate((int(price(m)) for m in seq), initial=0)))

    def select_summed(self, seq: Sequence[Message], sums: Sequence[int]) -> tuple[Message, ...]:
        """`select`, with ``sums[k]`` the price of ``seq[:k]``: O(log n) with the sums."""
        n = len(seq)
        fixed = int(self.counter.count_rendered(Rendered("", ()), self.tools))
        limit, whole = self.token_limit, sums[n]

        def kept(k: int) -> tuple[int, int]:
            # After k >= 1 pops AutoGen keeps seq[:a] + seq[n - b:] with a + b = n - k and
            # a = ceil((n - k) / 2): its pops at index len // 2 grow one gap from the middle
            # outwards, alternating sides (a test replays its pop loop against this).
            rest = n - k
            return (rest + 1) // 2, rest // 2

        def fits(k: int) -> bool:
            if k == 0:
                return fixed + whole <= limit
            a, b = kept(k)
            return fixed + sums[a] + whole - sums[n - b] <= limit

        # the fewest pops that fit (each pop lowers the count: prices are >= 0), or all of them
        lo, hi = 0, n
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(mid):
                hi = mid
            else:
                lo = mid + 1
        a, b = (n, 0) if lo == 0 else kept(lo)
        out = (*seq[:a], *seq[n - b :])
        if out and _is_results(out[0]):
            out = out[1:]
        return out

    def running(self) -> Run:
        """This policy over one context's transcript, keeping the running sums of the stored
        messages' prices: a request costs O(log history) instead of O(history)."""
        return _Summed(self)

    def context(self, system: str = "") -> "ModelContext":
        """This policy through Harpe's lifecycle, declaring ``Limit(token_limit + the system
        prompt's tokens, "target")``."""
        limit = Limit(tokens=self.token_limit + self.system_tokens(system), kind="target")
        return ModelContext(system, self, limit=limit)


class _Summed:
    """`TokenLimited` over a stored transcript, with the running sums of its prices."""

    def __init__(self, policy: TokenLimited) -> None:
        self.policy = policy
        self.price = policy.counter.count_message
        self.sums = [0]

    def added(self, message: Message) -> None:
        self.sums.append(self.sums[-1] + int(self.price(message)))

    def restored(self, messages: Sequence[Message]) -> None:
        self.sums = list(accumulate((int(self.price(m)) for m in messages), initial=0))

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        return pair_up(self.policy.select_summed(messages, self.sums), messages)


class ModelContext(PolicyLifecycle):
    """A policy (messages -> messages, possibly with made-up messages) through Harpe's
    lifecycle — AutoGen's model context: it stores every message, and each request is
    ``Rendered(system, policy(stored messages))``.

    `compact` reports ``compacted=True`` exactly when the request is not the previous one
    followed by the messages appended since. The policy's output must be non-empty and end
    with the newest message. `abort_turn` forgets the turn's messages but keeps its user
    input (as `harpe_lab.strategies.laser.PolicyContext` does). ``limit`` is declared for
    overshoot to be measured against.
    """

    def __init__(self, system: str, policy: Callable[[Sequence[Message]], Sequence[Message]], *,
                 limit: Limit | None = None) -> None:
        super().__init__(system, policy, limit=limit)
        # a policy may keep state over the stored transcript (`TokenLimited` its running
        # sums); any other is applied to the whole transcript at each request
        self._run: Run = policy.running() if isinstance(policy, Running) else _Whole(policy)

    def _added(self, message: Message) -> None:
        self._run.added(message)

    def _restored(self) -> None:
        self._run.restored(self._transcript)

    def compact(self) -> Compaction:
        # The policy reads the stored transcript itself, as laser's `PolicyContext` hands it:
        # a copy at every request would cost O(history). A policy never modifies its input.
        seq = self._transcript
        out = self._run(seq)
        if seq and (not out or out[-1] is not seq[-1]):
            raise StrategyError(
                f"policy {self.policy!r} dropped the newest message; a request must end with it"
            )
        return self._request(out)


# --- presets ------------------------------------------------------------------------------


def _autogen_buffered(*, system: str, buffer_size: int, **_: Any) -> Factory:
    policy = Buffered(buffer_size=buffer_size)
    return lambda: policy.context(system)


def _autogen_head_and_tail(*, system: str, head_size: int, tail_size: int, **_: Any) -> Factory:
    policy = HeadAndTail(head_size=head_size, tail_size=tail_size)
    return lambda: policy.context(system)


def _autogen_token_limited(*, counter: Any, system: str, tools: tuple, budget: int, **_: Any) -> Factory:
    policy = TokenLimited.within(budget, counter=counter, system=system, tools=tools)
    return lambda: policy.context(system)


PRESETS: tuple[Preset, ...] = (
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
           knobs=(budget_knob("the request's tokens, system and tools included (AutoGen's token_limit is this less "
                          "the system prompt)"),),
           needs=frozenset({"counter"}), limit_kind="target", _make=_autogen_token_limited,
           note="keeps the first messages and the newest; goes over only when the newest message (with its call) "
                "does not fit beside what AutoGen kept"),
)
