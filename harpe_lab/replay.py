"""The replay engine: drive a context through a recorded conversation, one model call at a time.

`replay` reproduces Harpe's engine lifecycle (``Agent.ask``, spec §4.2) with the recorded
replies and tool results standing in for the model and the tools::

    begin_turn(input) → compact() → request → observe(simulated usage) → append(reply)
        → [append(tool results) → compact() → request → ...] → commit_turn | abort_turn

It models what the provider session really receives: the rendering at the turn start (or
at the last compaction) plus every message appended since. The provider's reported input
tokens are simulated with the counter over the whole request (system, tool schemas, chat
overhead) and fed back through ``observe``, so reactive compaction happens when it would
have.

The engine speaks to a context only through the lifecycle, plus a few optional attributes:

* ``on_event`` — if settable, the engine records every event passed to it (the user's own
  handler still gets them). `ContextCompacted` marks the messages that left the request as
  *summarised*.
* ``distill`` — if present, the engine wraps it to count distill calls and their tokens;
  a distiller exposing ``last_usage`` (a `Usage`) after a call reports its real tokens.
* ``high_water_tokens`` or ``max_request_tokens`` — the mark overshoot is measured against.
* ``max_request_tokens`` with ``counter`` (and ``tools``) — a budget the strategy promises;
  the engine checks it after every compact.
* ``base_system`` and ``summary`` — to split the system prompt into base and summary.

``Replay.requests`` columns (one row per model call):

==========================  =============================================================
conversation, strategy      the conversation id and the strategy's name
turn, step, request         turn index, model call within the turn, global call index
outcome                     the recorded outcome of the turn
input_tokens                simulated input tokens of the whole request
system_tokens               base system prompt, tool schemas and reply priming
summary_tokens              summary text in the system prompt and synthetic messages
history_tokens              original messages of earlier turns
turn_tokens                 original messages of the current turn
output_tokens               the reply's tokens (recorded when known, else counted)
recorded_input_tokens       what the provider reported for this call (NaN if unknown)
messages_sent               messages in the request
messages_dropped            messages the full history had that the request did not
compacted                   the context compacted right before this request
overshoot_tokens            input tokens above the high water mark (0 without one)
distill_calls               distill calls made while preparing this request
distill_input_tokens        their input tokens
distill_output_tokens       their output tokens
cached_prefix_tokens        tokens of the longest prefix identical to the previous request
cost_usd, cost_usd_cached   price without and with prompt caching (NaN without pricing)
==========================  =============================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from operator import is_
from typing import Any, Callable, Mapping, Sequence

from .context import ContextCompacted
from .conversation import Conversation
from .errors import StrategyError
from .messages import AssistantMessage, Message, Rendered, ToolResults, Usage
from .pricing import Pricing
from .tokens import REPLY_PRIMING, _Counter

__all__ = ["replay", "Replay", "ReplayEvent", "Pricing", "REQUEST_COLUMNS"]

REQUEST_COLUMNS = (
    "conversation", "strategy", "turn", "step", "request", "outcome",
    "input_tokens", "system_tokens", "summary_tokens", "history_tokens", "turn_tokens",
    "output_tokens", "recorded_input_tokens",
    "messages_sent", "messages_dropped", "compacted", "overshoot_tokens",
    "distill_calls", "distill_input_tokens", "distill_output_tokens",
    "cached_prefix_tokens", "cost_usd", "cost_usd_cached",
)  # fmt: skip

SENT, SUMMARIZED, DROPPED = "sent", "summarized", "dropped"


@dataclass(frozen=True)
class ReplayEvent:
    """Something a strategy reported during a replay: ``kind`` is the event's type name
    (``ContextCompacted``, ``ContextBudget``, a warning, ...), ``request`` the index of the
    request it came before."""

    request: int
    turn: int
    kind: str
    event: Any


class _DistillMeter:
    """Wraps a context's distill to count calls and tokens for the request frame."""

    def __init__(self, distill: Callable[[Rendered], str | None], counter: Any) -> None:
        self.distill = distill
        self.counter = counter
        self.calls = self.input_tokens = self.output_tokens = 0

    def __call__(self, rendered: Rendered) -> str | None:
        text = self.distill(rendered)
        self.calls += 1
        usage = getattr(self.distill, "last_usage", None)
        if isinstance(usage, Usage):
            self.input_tokens += usage.input_tokens
            self.output_tokens += usage.output_tokens
        else:
            self.input_tokens += self.counter.count_rendered(rendered)
            self.output_tokens += self.counter.count(text) if isinstance(text, str) else 0
        return text

    def take(self) -> tuple[int, int, int]:
        out = (self.calls, self.input_tokens, self.output_tokens)
        self.calls = self.input_tokens = self.output_tokens = 0
        return out


class _Sent(Sequence[Rendered]):
    """What each request sent, recorded in O(1): ``(session, length, system)``.

    Between two compactions the provider session only grows, so consecutive requests are
    prefixes of one append-only list; the engine starts a new list instead of cutting one
    that a recorded request still refers to. A request's `Rendered` is built the first time
    it is asked for (and kept, so it is the same object every time).
    """

    __slots__ = ("_at", "_made")

    def __init__(self) -> None:
        self._at: list[tuple[list[Message], int, str]] = []
        self._made: dict[int, Rendered] = {}

    def add(self, session: list[Message], length: int, system: str) -> None:
        self._at.append((session, length, system))

    def __len__(self) -> int:
        return len(self._at)

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(len(self._at))[i]]
        i = range(len(self._at))[i]  # negative indices, and IndexError, as a list has them
        made = self._made.get(i)
        if made is None:
            session, length, system = self._at[i]
            made = self._made[i] = Rendered(system, tuple(session[:length]))
        return made


def _strategy_name(ctx: object) -> str:
    return getattr(ctx, "name", None) or type(ctx).__name__


class Replay:
    """The result of one replay: the request frame, the events, and what was sent when."""

    def __init__(self, conversation: Conversation, strategy: str, rows: dict[str, list], events: list[ReplayEvent],
                 requests: Sequence[Rendered], summarized: dict[str, int], summaries: list[str],
                 high_water: int | None) -> None:
        self.conversation = conversation
        self.strategy = strategy
        self.events = events
        self.high_water = high_water
        self._rows = rows
        self._requests = requests
        self._summarized = summarized
        self._summaries = summaries
        self._frame: Any = None
        self._ids: dict[int, str] = {id(m): mid for t in conversation.turns for m, mid in zip(t.all_messages, t.ids)}

    @property
    def requests(self) -> Any:
        """The per-request DataFrame (columns in `REQUEST_COLUMNS`, see the module doc)."""
        if self._frame is None:
            import pandas as pd

            self._frame = pd.DataFrame(self._rows, columns=list(REQUEST_COLUMNS))
        return self._frame

    def __len__(self) -> int:
        return len(self._requests)

    def rendered(self, i: int) -> Rendered:
        """Exactly what was sent at request ``i``."""
        return self._requests[i]

    def turn_requests(self, turn: int) -> range:
        """The request indices of turn ``turn`` (its first is the one sent at the turn start)."""
        turns = self._rows["turn"]
        import bisect

        return range(bisect.bisect_left(turns, turn), bisect.bisect_right(turns, turn))

    def summary(self, i: int) -> str:
        """The summary the context held when request ``i`` went out ("" if none)."""
        return self._summaries[i]

    def sent_ids(self, i: int) -> list[str]:
        """Ids of the original messages sent verbatim at request ``i``, in request order."""
        ids = self._ids
        return [ids[id(m)] for m in self._requests[i].messages if id(m) in ids]

    def available_ids(self, i: int) -> list[str]:
        """Ids of the messages the full history held at request ``i``: earlier turns'
        inputs, answered turns' messages, and the current turn's messages so far."""
        turn, step = self._rows["turn"][i], self._rows["step"][i]
        out: list[str] = []
        for t, tr in enumerate(self.conversation.turns[:turn]):
            out.append(tr.ids[0])
            if tr.outcome == "answered":
                out.extend(tr.ids[1:])
        cur = self.conversation.turns[turn]
        out.append(cur.ids[0])
        # the messages of the current turn before reply number `step`
        replies = 0
        for mid, m in zip(cur.ids[1:], cur.messages):
            if isinstance(m, AssistantMessage):
                if replies == step:
                    break
                replies += 1
            out.append(mid)
        return out

    def kept(self, i: int) -> dict[str, str]:
        """For each message the full history held at request ``i``: ``"sent"`` verbatim,
        ``"summarized"`` (folded into a summary by a compaction), or ``"dropped"``."""
        sent = set(self.sent_ids(i))
        out = {}
        for mid in self.available_ids(i):
            if mid in sent:
                out[mid] = SENT
            elif self._summarized.get(mid, math.inf) <= i:
                out[mid] = SUMMARIZED
            else:
                out[mid] = DROPPED
        return out

    def context_map(self) -> Any:
        """A tidy frame of `kept` for every request: ``request, turn, message_id,
        message_turn, state``."""
        import pandas as pd

        index = self.conversation.message_index()
        rows = []
        for i in range(len(self)):
            turn = self._rows["turn"][i]
            for mid, state in self.kept(i).items():
                rows.append((i, turn, mid, index[mid][0], state))
        return pd.DataFrame(rows, columns=["request", "turn", "message_id", "message_turn", "state"])

    def events_frame(self) -> Any:
        """The events as a frame: ``request, turn, kind, detail``."""
        import pandas as pd

        return pd.DataFrame(
            [(e.request, e.turn, e.kind, repr(e.event)) for e in self.events],
            columns=["request", "turn", "kind", "detail"],
        )

    def totals(self) -> dict[str, float]:
        """Totals and percentiles a comparison table wants."""
        f = self.requests
        if not len(f):
            return {"requests": 0}
        it = f["input_tokens"]
        return {
            "requests": len(f),
            "input_tokens_sum": int(it.sum()),
            "input_tokens_median": float(it.median()),
            "input_tokens_p90": float(it.quantile(0.9)),
            "input_tokens_max": int(it.max()),
            "compactions": int(sum(e.kind == "ContextCompacted" for e in self.events)),
            "overshoots": int((f["overshoot_tokens"] > 0).sum()),
            "overshoot_tokens_max": int(f["overshoot_tokens"].max()),
            "messages_dropped_max": int(f["messages_dropped"].max()),
            "distill_calls": int(f["distill_calls"].sum()),
            "distill_tokens": int(f["distill_input_tokens"].sum() + f["distill_output_tokens"].sum()),
            "cached_prefix_share": float(f["cached_prefix_tokens"].sum() / max(1, it.sum())),
            # NaN without pricing, not a misleading 0
            "cost_usd": float(f["cost_usd"].sum(min_count=1)),
            "cost_usd_cached": float(f["cost_usd_cached"].sum(min_count=1)),
        }

    def __repr__(self) -> str:
        return f"Replay({self.conversation.id!r}, {self.strategy!r}, {len(self)} requests, {len(self.events)} events)"


def _rounds(messages: Sequence[Message]) -> list[tuple[Message | None, list[Message]]]:
    """Split a turn's messages into model calls: (reply, messages appended after it)."""
    out: list[tuple[Message | None, list[Message]]] = []
    for m in messages:
        if isinstance(m, AssistantMessage):
            out.append((m, []))
        elif out:
            out[-1][1].append(m)
        else:  # tool results with no reply before them (a malformed source): keep them
            out.append((None, [m]))
    if out and out[-1][1]:
        # the recording stops after a tool round (the turn was cut short): the engine would
        # have sent the next request, so it is modelled, with no reply.
        out.append((None, []))
    return out


def _check_pairs(strategy: str, i: int, msgs: Sequence[Message], start: int,
                 pairs: Mapping[int, tuple[Message, Message]], stop: int | None = None) -> None:
    """A reply with tool calls is sent with the results that answer it right after it, and
    results never without their call (checked from ``start`` to ``stop``; the rest was
    checked before)."""
    n = len(msgs)
    for k in range(start, n if stop is None else min(stop, n)):
        m = msgs[k]
        pair = pairs.get(id(m))
        if pair is None:
            continue
        call, results = pair
        if m is call and (k + 1 == n or msgs[k + 1] is not results):
            raise StrategyError(f"{strategy} separated a tool call from its results at request {i}")
        if m is results and (k == 0 or msgs[k - 1] is not call):
            raise StrategyError(f"{strategy} sent tool results without the call they answer at request {i}")


def _check_budget(strategy: str, i: int, system: str, messages: Sequence[Message], ctx: object, counter: Any = None,
                  messages_tokens: int = 0, fixed: dict | None = None) -> None:
    """Raise when a context that promises ``max_request_tokens`` sent more.

    When the context prices with the replay's own ``counter`` and that counter prices a
    request as the sum of its parts (harpe_lab's counters, bar `ScaledCounter`), the
    messages' tokens are the engine's running sum ``messages_tokens``, and only the system
    prompt and tool schemas are priced (once each, cached in ``fixed``): O(1) a request
    instead of O(messages sent), with the same result.
    """
    limit = getattr(ctx, "max_request_tokens", None)
    own = getattr(ctx, "counter", None)
    if limit is None or own is None:
        return
    tools = getattr(ctx, "tools", ())
    if own is counter and fixed is not None and _additive(own):
        hit = fixed.get(system)
        if hit is None or hit[0] is not tools:
            hit = fixed[system] = (tools, own.count_system(system) + own.count_tools(tuple(tools)) + REPLY_PRIMING)
        used = hit[1] + messages_tokens
    else:
        used = own.count_rendered(Rendered(system, tuple(messages)), tuple(tools))
    if used > limit:
        raise StrategyError(f"{strategy} promised at most {limit} tokens but sent {used} at request {i}")


def _additive(counter: Any) -> bool:
    """Whether ``counter`` prices a request as system + each message + tools + priming."""
    cls = type(counter)
    return isinstance(counter, _Counter) and all(
        getattr(cls, name) is getattr(_Counter, name)
        for name in ("count_rendered", "count_messages", "count_system", "count_tools")
    )


def replay(
    conversation: Conversation,
    context: Callable[[], Any],
    *,
    counter: Any,
    tools: Sequence[Mapping[str, Any]] = (),
    pricing: str | Pricing | None = None,
    on_event: Callable[[ReplayEvent], None] | None = None,
    name: str | None = None,
) -> Replay:
    """Replay ``conversation`` under the context built by the zero-argument ``context``
    factory, counting tokens with ``counter``.

    ``tools`` are the OpenAI tool schemas the agent offered (they count in every request);
    ``pricing`` a model name in litellm's price table (or a `Pricing`) for the cost columns;
    ``on_event`` receives each `ReplayEvent` as it happens. Raises `StrategyError` naming
    the strategy and the request when a context breaks an invariant.
    """
    if not isinstance(conversation, Conversation):
        raise TypeError(f"replay takes a Conversation, got {type(conversation).__name__}")
    if not callable(context):
        raise TypeError(
            f"context must be a zero-argument factory so every replay starts fresh, e.g. "
            f"lambda: FullContext(system); got {type(context).__name__}"
        )
    ctx = context()
    for method in ("begin_turn", "append", "compact", "observe", "commit_turn", "abort_turn"):
        if not callable(getattr(ctx, method, None)):
            raise StrategyError(f"{type(ctx).__name__} is not a context: it has no {method}()")
    strategy = name or _strategy_name(ctx)
    price = Pricing.for_model(pricing) if isinstance(pricing, str) else pricing
    tools = tuple(tools)

    events: list[ReplayEvent] = []
    state = {"request": 0, "turn": 0, "compacted_now": False}

    def record(event: object) -> None:
        ev = ReplayEvent(state["request"], state["turn"], type(event).__name__, event)
        events.append(ev)
        if isinstance(event, ContextCompacted):
            state["compacted_now"] = True
        if on_event is not None:
            on_event(ev)

    if hasattr(ctx, "on_event"):
        user_handler = ctx.on_event

        def chained(event: object) -> None:
            record(event)
            if user_handler is not None:
                user_handler(event)

        ctx.on_event = chained
    meter = None
    if callable(getattr(ctx, "distill", None)):
        meter = _DistillMeter(ctx.distill, counter)
        ctx.distill = meter
    high_water = getattr(ctx, "high_water_tokens", None) or getattr(ctx, "max_request_tokens", None)
    base_system = getattr(ctx, "base_system", None)

    # identity maps over the original messages
    turn_of: dict[int, int] = {}
    pairs: dict[int, tuple[Message, Message]] = {}
    for t, turn in enumerate(conversation.turns):
        msgs = turn.all_messages
        for k, m in enumerate(msgs):
            turn_of[id(m)] = t
            if isinstance(m, AssistantMessage) and m.calls and k + 1 < len(msgs) and isinstance(msgs[k + 1], ToolResults):
                pairs[id(m)] = (m, msgs[k + 1])
                pairs[id(msgs[k + 1])] = (m, msgs[k + 1])

    rows: dict[str, list] = {c: [] for c in REQUEST_COLUMNS}
    appends = [rows[c].append for c in REQUEST_COLUMNS]
    requests = _Sent()
    summaries: list[str] = []
    summarized: dict[str, int] = {}
    fixed_cache: dict[str, int] = {}
    budget_fixed: dict[str, tuple[Any, int]] = {}  # _check_budget's system + tools prices

    def fixed_tokens(system: str) -> int:
        n = fixed_cache.get(system)
        if n is None:
            n = fixed_cache[system] = counter.count_rendered(Rendered(system, ()), tools)
        return n

    # The provider session, with running sums so a request costs O(messages added), not
    # O(messages sent): cum_tokens[k] / cum_synth[k] / cum_orig[k] cover session[: k + 1].
    session: list[Message] = []
    cum_tokens: list[int] = []
    cum_synth: list[int] = []
    cum_orig: list[int] = []
    system = ""
    cur_tokens = 0  # tokens of the trailing run of the current turn's messages
    shared_with_prev = 0  # leading messages identical to the previous request's
    prev_system: str | None = None
    available = 0  # messages the full history holds now

    def push(m: Message, t: int) -> None:
        nonlocal cur_tokens
        n = counter.count_message(m)
        owner = turn_of.get(id(m))
        cum_tokens.append((cum_tokens[-1] if cum_tokens else 0) + n)
        cum_synth.append((cum_synth[-1] if cum_synth else 0) + (n if owner is None else 0))
        cum_orig.append((cum_orig[-1] if cum_orig else 0) + (owner is not None))
        cur_tokens = cur_tokens + n if owner == t else 0

    # (id, message id) of the messages of turns[:marked_upto] not yet marked summarised, in
    # order: a compaction visits only these, not the whole conversation again
    unsummarized: list[tuple[int, str]] = []
    marked_upto = 0

    def adopt(rendered: Rendered, t: int, i: int) -> None:
        """Make ``rendered`` the provider session, reusing the sums of the common prefix."""
        nonlocal system, session, cur_tokens, shared_with_prev, unsummarized, marked_upto
        nonlocal cum_tokens, cum_synth, cum_orig
        new = rendered.messages
        old = session
        # identity, not equality: equal-looking messages of different turns are different
        # (map stops at the shorter, so this compares new's prefix, at C speed)
        if len(new) >= len(old) and all(map(is_, new, old)):
            k = len(old)
        else:
            k = 0
            limit = min(len(old), len(new))
            while k < limit and old[k] is new[k]:
                k += 1
        shared_with_prev = min(shared_with_prev, k)
        if not new:
            raise StrategyError(f"{strategy} rendered an empty request at request {i}; it needs at least the user input")
        # A window that slid dropped old's first `shift` messages and kept the rest, in
        # order, at the front of new: their sums are old's, less what was dropped.
        shift = 0
        if k == 0 and len(old) > 1:
            first = new[0]
            for j, m in enumerate(old):
                if m is first:
                    if j and len(new) >= len(old) - j and all(map(is_, new, old[j:])):
                        shift = j
                    break
        if shift:
            kept = len(old) - shift
            # the pairs inside the kept run were checked when they were sent; only its
            # first message (its call may be gone) and its end (what follows is new) are not
            _check_pairs(strategy, i, new, 0, pairs, stop=1)
            _check_pairs(strategy, i, new, max(1, kept - 1), pairs)
            base_t, base_s, base_o = cum_tokens[shift - 1], cum_synth[shift - 1], cum_orig[shift - 1]
            cum_tokens = [v - base_t for v in cum_tokens[shift:]]
            cum_synth = [v - base_s for v in cum_synth[shift:]]
            cum_orig = [v - base_o for v in cum_orig[shift:]]
            session = old[shift:]  # recorded requests still refer to old: a new list
            k = kept  # from here on, new[:k] is priced
        else:
            _check_pairs(strategy, i, new, max(0, k - 1), pairs)
            del cum_tokens[k:], cum_synth[k:], cum_orig[k:]
            if k < len(old):
                session = old[:k]  # recorded requests still refer to old: start a new list
        session.extend(new[k:] if k else new)  # session == list(new) now
        system = rendered.system
        # push() for each new message, inlined: a sliding window re-adopts its whole window
        count = counter.count_message
        owner_of = turn_of.get
        tok = cum_tokens[-1] if cum_tokens else 0
        syn = cum_synth[-1] if cum_synth else 0
        org = cum_orig[-1] if cum_orig else 0
        for m in new[k:] if k else new:
            n = count(m)
            tok += n
            if owner_of(id(m)) is None:
                syn += n
            else:
                org += 1
            cum_tokens.append(tok)
            cum_synth.append(syn)
            cum_orig.append(org)
        cur_tokens = 0
        for m in reversed(new):
            if owner_of(id(m)) != t:
                break
            cur_tokens += count(m)
        if state["compacted_now"]:
            now = set(map(id, new))
            if marked_upto < t + 1:
                for turn in conversation.turns[marked_upto : t + 1]:
                    unsummarized.extend(zip(map(id, turn.all_messages), turn.ids))
                marked_upto = t + 1
            still = []
            for key in unsummarized:
                if key[0] in now:
                    still.append(key)
                else:
                    summarized[key[1]] = i
            unsummarized = still
            state["compacted_now"] = False

    for t, turn in enumerate(conversation.turns):
        state["turn"] = t
        ctx.begin_turn(turn.input)
        available += 1
        first = ctx.compact()
        compacted = bool(first.compacted)
        adopt(first.rendered, t, state["request"])
        usage = list(turn.usage)
        rounds = _rounds(turn.messages) or [(None, [])]
        for step, (reply, after) in enumerate(rounds):
            i = state["request"]
            fixed = fixed_tokens(system)
            summary_sys = 0
            if base_system is not None and system != base_system:
                summary_sys = max(0, fixed - fixed_tokens(base_system))
            total = cum_tokens[-1] if cum_tokens else 0
            synth = cum_synth[-1] if cum_synth else 0
            input_tokens = fixed + total
            _check_budget(strategy, i, system, session, ctx, counter, total, budget_fixed)
            cached = 0
            if prev_system == system and shared_with_prev:
                cached = fixed - REPLY_PRIMING + cum_tokens[shared_with_prev - 1]
            prev_system = system
            d_calls, d_in, d_out = meter.take() if meter is not None else (0, 0, 0)
            recorded = usage[step] if reply is not None and step < len(usage) else None
            out_tokens = 0
            if reply is not None:
                out_tokens = recorded.output_tokens if recorded is not None and recorded.output_tokens else counter.count_message(reply)
            cost = cost_cached = math.nan
            if price is not None:
                extra = d_in * price.input + d_out * price.output + out_tokens * price.output
                cost = input_tokens * price.input + extra
                cost_cached = (input_tokens - cached) * price.input + cached * price.cache_read + extra
            row = (
                conversation.id, strategy, t, step, i, turn.outcome,
                input_tokens, fixed - summary_sys, summary_sys + synth, total - synth - cur_tokens, cur_tokens,
                out_tokens, recorded.input_tokens if recorded is not None else math.nan,
                len(session), available - (cum_orig[-1] if cum_orig else 0), compacted,
                max(0, input_tokens - high_water) if high_water else 0,
                d_calls, d_in, d_out, cached, cost, cost_cached,
            )  # fmt: skip
            for add, value in zip(appends, row):
                add(value)
            requests.add(session, len(session), system)
            summaries.append(getattr(ctx, "summary", "") or "")
            state["request"] += 1
            shared_with_prev = len(session)
            if reply is None and not after:
                break  # a turn that failed or was interrupted before any reply
            if reply is not None:
                ctx.observe(Usage(input_tokens=input_tokens, output_tokens=out_tokens))
            for m in ([reply] if reply is not None else []) + after:
                ctx.append(m)
                session.append(m)
                push(m, t)
                available += 1
            compacted = False
            if after and step + 1 < len(rounds):
                n = ctx.compact()
                if n.compacted:
                    compacted = True
                    adopt(n.rendered, t, state["request"])
                state["compacted_now"] = False
        if turn.outcome == "answered":
            ctx.commit_turn()
        else:
            ctx.abort_turn()
            available -= len(turn.messages)
    return Replay(conversation, strategy, rows, events, requests, summarized, summaries, high_water)
