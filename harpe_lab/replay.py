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

The engine speaks to a strategy only through `harpe_lab.protocol`: the lifecycle, plus the
optional capabilities a strategy declares — its `Limit` (overshoot is measured against it;
a ``"budget"`` is enforced), its summary (to split the system prompt), and ``subscribe``
(events: `ContextCompacted` marks the messages that left the request as *summarized*,
`DistillCall` s fill the distill columns). It never sets attributes on a strategy. Every
count below has one meaning, written in ``docs/glossary.md``.

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
compacted                   the request is not the previous request plus new messages: the
                            strategy removed or replaced something it had sent
summarized                  the strategy folded messages into a summary before this request
overshoot_tokens            input tokens above the strategy's declared limit (0 without one)
distill_calls               distill calls made while preparing this request
distill_input_tokens        their input tokens
distill_output_tokens       their output tokens
cached_prefix_tokens        tokens of the longest prefix identical to the previous request
cache_read_tokens           of the input, tokens the provider serves from its prompt cache
cache_write_tokens          of the input, tokens the provider charges as a cache write
cost_usd, cost_usd_cached   price without and with prompt caching (NaN without pricing)
distill_cost_usd            the distill calls' part of both (their input is not cached)
==========================  =============================================================

The two cache columns follow the pricing's `harpe_lab.models.PromptCache` (the provider's
rule: breakpoints or automatic, a minimum size, a TTL), given what the provider held from
the previous request; they are 0 without pricing, or for a provider that caches nothing.
The TTL is measured on the recording's request times (a turn's ``metadata["request_times"]``,
one per reply, seconds since the epoch, as `harpe_lab.importers.load_claude_code` records
them), from the last request that has one; without them nothing expires. A request the
recording's agent sent with its cached messages invalidated (``metadata["cache_resets"]``,
the indices of such replies in the turn) reads only the system prompt and tools — and, when
the recording's first call read part of them from the cache, only that part. The first
request reads what the recording's first call read from the cache, up to the system prompt
and tools: an agent's earlier sessions leave its own prefix cached (Claude Code's first call
reads 11–18k of its ~26k fixed tokens: the built-in tools and the fixed part of its system
prompt; its MCP tools and the session's own lines come after), and that is the state every
strategy starts from. An invalidation keeps the same shared prefix (after ``/mcp``
reconnected its servers, the recorded call read 18,014 where the first had read 17,915).
"""

from __future__ import annotations

import bisect
import copy
import math
import warnings
from dataclasses import dataclass
from itertools import chain, count, repeat
from typing import Any, Callable, Mapping, Sequence

from ._checks import Invariants
from ._session import ProviderSession, Sent
from .conversation import Conversation
from .errors import HarpeLabError, StrategyError
from .messages import AssistantMessage, Message, Rendered, ToolResults, Usage
from .models import CallPricing, Pricing, resolve_pricing
from .protocol import ContextCompacted, DeclaresLimit, DistillCall, HoldsSummary, Limit, ReportsEvents
from .tokens import REPLY_PRIMING, Primes

__all__ = ["replay", "Replay", "ReplayEvent", "Pricing", "REQUEST_COLUMNS", "RequestIndexError"]

REQUEST_COLUMNS = (
    "conversation", "strategy", "turn", "step", "request", "outcome",
    "input_tokens", "system_tokens", "summary_tokens", "history_tokens", "turn_tokens",
    "output_tokens", "recorded_input_tokens",
    "messages_sent", "messages_dropped", "compacted", "summarized", "overshoot_tokens",
    "distill_calls", "distill_input_tokens", "distill_output_tokens",
    "cached_prefix_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd", "cost_usd_cached",
    "distill_cost_usd",
)  # fmt: skip

SENT, SUMMARIZED, DROPPED = "sent", "summarized", "dropped"
_LIFECYCLE = ("begin_turn", "append", "compact", "observe", "commit_turn", "abort_turn")


class RequestIndexError(HarpeLabError, IndexError):
    """A request index outside the replay."""


@dataclass(frozen=True)
class ReplayEvent:
    """Something a strategy reported during a replay: ``kind`` is the event's type name
    (``ContextCompacted``, ``ContextBudget``, a warning, ...), ``request`` the index of the
    request it came before."""

    request: int
    turn: int
    kind: str
    event: Any


class Replay:
    """The result of one replay: the request frame, the events, and what was sent when.

    Immutable: `requests` returns a copy of the frame, `events` is a tuple.
    """

    __slots__ = ("conversation", "strategy", "events", "limit", "_rows", "_requests", "_summarized", "_summaries",
                 "_frame", "_ids")

    def __init__(self, conversation: Conversation, strategy: str, rows: dict[str, list], events: Sequence[ReplayEvent],
                 requests: Sequence[Rendered], summarized: dict[str, int], summaries: list[str], limit: Limit | None,
                 ids: dict[int, str]) -> None:
        self.conversation = conversation
        self.strategy = strategy
        self.events = tuple(events)
        self.limit = limit
        """The strategy's declared `Limit` (``None``: it declared none)."""
        self._rows = rows
        self._requests = requests
        self._summarized = summarized
        self._summaries = summaries
        self._frame: Any = None
        self._ids = ids

    @property
    def requests(self) -> Any:
        """The per-request DataFrame (columns in `REQUEST_COLUMNS`, see the module doc); a copy."""
        if self._frame is None:
            import pandas as pd

            self._frame = pd.DataFrame(self._rows, columns=list(REQUEST_COLUMNS))
        return self._frame.copy()

    def __len__(self) -> int:
        return len(self._requests)

    def _index(self, i: Any) -> int:
        n = len(self._requests)
        if isinstance(i, bool) or not isinstance(i, int):
            raise TypeError(f"a request index is an int, got {type(i).__name__}")
        if not -n <= i < n:
            raise RequestIndexError(
                f"request {i} is out of range: {self.strategy} on {self.conversation.id!r} made {n} requests "
                f"(0 to {n - 1})" if n else f"request {i} is out of range: this replay made no request"
            )
        return i % n

    def rendered(self, i: int) -> Rendered:
        """Exactly what was sent at request ``i``."""
        return self._requests[self._index(i)]

    def turn_requests(self, turn: int) -> range:
        """The request indices of turn ``turn`` (its first is the one sent at the turn start)."""
        turns = self._rows["turn"]
        return range(bisect.bisect_left(turns, turn), bisect.bisect_right(turns, turn))

    def summary(self, i: int) -> str:
        """The summary the context held when request ``i`` went out ("" if none)."""
        return self._summaries[self._index(i)]

    def sent_ids(self, i: int) -> list[str]:
        """Ids of the original messages sent verbatim at request ``i``, in request order."""
        ids = self._ids
        return [ids[id(m)] for m in self.rendered(i).messages if id(m) in ids]

    def message_ids(self, i: int) -> list[str | None]:
        """For each message of request ``i``, in order: its id when it is an original sent
        verbatim, ``None`` when the strategy wrote it (a summary, a stand-in, a rewritten
        tool result)."""
        ids = self._ids
        return [ids.get(id(m)) for m in self.rendered(i).messages]

    def available_ids(self, i: int) -> list[str]:
        """Ids of the messages the full history held at request ``i``: earlier turns'
        inputs, answered turns' messages, and the current turn's messages so far."""
        i = self._index(i)
        turn, step = self._rows["turn"][i], self._rows["step"][i]
        out: list[str] = []
        for tr in self.conversation.turns[:turn]:
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
        i = self._index(i)
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
        """Totals and percentiles a comparison table wants, all from the request frame
        (see ``docs/glossary.md``)."""
        return totals(self.requests)

    def __repr__(self) -> str:
        return f"Replay({self.conversation.id!r}, {self.strategy!r}, {len(self)} requests, {len(self.events)} events)"


def totals(frame: Any) -> dict[str, float]:
    """The totals of one replay's request frame: what every table, label and plot shows."""
    f = frame
    if not len(f):
        return {"requests": 0}
    it = f["input_tokens"]
    return {
        "requests": len(f),
        "input_tokens_sum": int(it.sum()),
        "input_tokens_median": float(it.median()),
        "input_tokens_p90": float(it.quantile(0.9)),
        "input_tokens_max": int(it.max()),
        "compactions": int(f["compacted"].sum()),
        "summaries": int(f["summarized"].sum()),
        "overshoots": int((f["overshoot_tokens"] > 0).sum()),
        "overshoot_tokens_max": int(f["overshoot_tokens"].max()),
        "messages_dropped_max": int(f["messages_dropped"].max()),
        "distill_calls": int(f["distill_calls"].sum()),
        "distill_tokens": int(f["distill_input_tokens"].sum() + f["distill_output_tokens"].sum()),
        "cached_prefix_share": float(f["cached_prefix_tokens"].sum() / max(1, it.sum())),
        # NaN without pricing, not a misleading 0
        "cost_usd": float(f["cost_usd"].sum(min_count=1)),
        "cost_usd_cached": float(f["cost_usd_cached"].sum(min_count=1)),
        "cache_read_tokens_sum": int(f["cache_read_tokens"].sum()),
        "cache_write_tokens_sum": int(f["cache_write_tokens"].sum()),
        "distill_cost_usd": float(f["distill_cost_usd"].sum(min_count=1)),
    }


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


class _Recording:
    """The conversation as the engine replays it: every message position a distinct object
    (a message object reused in two places is copied), with its id, turn and tool pair."""

    __slots__ = ("turns", "messages", "ids", "owner", "pairs")

    def __init__(self, conversation: Conversation) -> None:
        self.turns: list[tuple[Message, ...]] = [turn.all_messages for turn in conversation.turns]
        everything = list(chain.from_iterable(self.turns))
        keys = list(map(id, everything))
        if len(set(keys)) < len(keys):  # an object in two places: copy it where it comes again
            seen: set[int] = set()
            for t, msgs in enumerate(self.turns):
                fresh = []
                for m in msgs:
                    if id(m) in seen:
                        m = copy.copy(m)
                    seen.add(id(m))
                    fresh.append(m)
                self.turns[t] = tuple(fresh)
            everything = list(chain.from_iterable(self.turns))
            keys = list(map(id, everything))
        self.messages = everything
        """Every message position, in order."""
        self.ids: dict[int, str] = dict(zip(keys, chain.from_iterable(turn.ids for turn in conversation.turns)))
        self.owner: dict[int, int] = dict(
            zip(keys, chain.from_iterable(map(repeat, count(), map(len, self.turns)))))
        # a reply with calls and the results right after it (a turn starts with its input,
        # so no pair crosses turns)
        self.pairs: dict[int, tuple[Message, Message]] = {}
        for m, after in zip(everything, everything[1:]):
            if isinstance(after, ToolResults) and isinstance(m, AssistantMessage) and m.calls:
                self.pairs[id(m)] = self.pairs[id(after)] = (m, after)


class _Listener:
    """Collects the events a strategy reports, and what they mean for the frame."""

    def __init__(self, on_event: Callable[[ReplayEvent], None] | None, counter: Any) -> None:
        from .summarize import DistillFallback  # the distillers' floor, loaded when a replay runs

        self._fallback_type = DistillFallback
        self.events: list[ReplayEvent] = []
        self.on_event = on_event
        self.counter = counter
        self.request = self.turn = 0
        self.folded = False  # a ContextCompacted since the last request
        self.distill = [0, 0, 0]  # calls, input tokens, output tokens since the last request
        self.fallbacks: list[Any] = []
        self.closed = False

    def __call__(self, event: object) -> None:
        if self.closed:  # a strategy or distiller reused after its replay
            return
        ev = ReplayEvent(self.request, self.turn, type(event).__name__, event)
        self.events.append(ev)
        if isinstance(event, ContextCompacted):
            self.folded = True
        elif isinstance(event, DistillCall):
            d = self.distill
            d[0] += 1
            if event.usage is not None:
                d[1] += event.usage.input_tokens
                d[2] += event.usage.output_tokens
            else:
                d[1] += self.counter.count_rendered(event.request)
                d[2] += self.counter.count(event.reply) if isinstance(event.reply, str) else 0
        elif isinstance(event, self._fallback_type):
            self.fallbacks.append(event)
        if self.on_event is not None:
            self.on_event(ev)

    def take_distill(self) -> tuple[int, int, int]:
        calls, tin, tout = self.distill
        self.distill = [0, 0, 0]
        return calls, tin, tout


def _strategy(context: Callable[[], Any]) -> Any:
    if not callable(context):
        raise TypeError(
            f"context must be a zero-argument factory so every replay starts fresh, e.g. "
            f"lambda: FullContext(system); got {type(context).__name__}"
        )
    ctx = context()
    for method in _LIFECYCLE:
        if not callable(getattr(ctx, method, None)):
            raise StrategyError(f"{type(ctx).__name__} is not a context: it has no {method}()")
    return ctx


def replay(
    conversation: Conversation,
    context: Callable[[], Any],
    *,
    counter: Any,
    tools: Sequence[Mapping[str, Any]] = (),
    pricing: str | Pricing | CallPricing | None = None,
    on_event: Callable[[ReplayEvent], None] | None = None,
    name: str | None = None,
) -> Replay:
    """Replay ``conversation`` under the context built by the zero-argument ``context``
    factory, counting tokens with ``counter``.

    ``tools`` are the OpenAI tool schemas the agent offered (they count in every request);
    ``pricing`` a model name in litellm's price table (or a `Pricing`) for the cost and
    cache columns — a name on a provider whose callers choose the cache TTL (Anthropic) takes
    the one the recording's agent chose, ``conversation.metadata["cache_ttl"]``, when recorded;
    ``"auto"`` (or a `CallPricing`) prices each call by the model that made it (the reply's
    recorded model; a call with none, by the last recorded before it); a call by another
    model than the call before it reads nothing from the prompt cache (caches are per model);
    ``on_event`` receives each `ReplayEvent` as it happens. Raises `StrategyError` naming
    the strategy and the request when a context breaks an invariant.
    """
    if not isinstance(conversation, Conversation):
        raise TypeError(f"replay takes a Conversation, got {type(conversation).__name__}")
    ctx = _strategy(context)
    strategy = name or type(ctx).__name__
    book = resolve_pricing(pricing, conversation.models(), cache_ttl=conversation.metadata.get("cache_ttl"))
    tools = tuple(tools)
    limit = ctx.limit if isinstance(ctx, DeclaresLimit) else None
    if limit is not None and not isinstance(limit, Limit):
        raise StrategyError(f"{strategy}.limit must be a harpe_lab.protocol.Limit or None, got {limit!r}")
    holds_summary = isinstance(ctx, HoldsSummary)
    base_system = ctx.base_system if holds_summary else None
    listener = _Listener(on_event, counter)
    if isinstance(ctx, ReportsEvents):
        ctx.subscribe(listener)

    rec = _Recording(conversation)
    if isinstance(counter, Primes):  # every message is counted anyway, faster up front
        counter.prime(rec.messages)
    checks = Invariants(strategy, rec.pairs, limit, counter)
    session = ProviderSession(rec.owner, counter.count_message)
    table: list[tuple] = []  # a row per request, turned into columns once at the end
    requests = Sent()
    summaries: list[str] = []
    summarized: dict[str, int] = {}
    fixed_cache: dict[str, int] = {}

    def fixed_tokens(system: str) -> int:
        n = fixed_cache.get(system)
        if n is None:
            n = fixed_cache[system] = counter.count_rendered(Rendered(system, ()), tools)
        return n

    # (id, message id) of the messages of turns[:marked_upto] not yet marked summarized, in
    # order: a fold visits only these, not the whole conversation again
    unsummarized: list[tuple[int, str]] = []
    marked_upto = 0

    def mark_summarized(t: int, i: int) -> None:
        nonlocal unsummarized, marked_upto
        now = session.ids()
        for msgs in rec.turns[marked_upto : t + 1]:
            unsummarized.extend((id(m), rec.ids[id(m)]) for m in msgs)
        marked_upto = max(marked_upto, t + 1)
        still = []
        for key in unsummarized:
            if key[0] in now:
                still.append(key)
            else:
                summarized[key[1]] = i
        unsummarized = still

    request = 0
    available = 0  # messages the full history holds now
    prev: tuple[str, int] | None = None  # the previous request's system prompt and length
    prev_at: float | None = None  # when the previous request went out (recorded), if known
    # the first call's recorded cache reads: the prefix already cached when the session began
    first_usage = conversation.turns[0].usage if conversation.turns else ()
    warm = first_usage[0].cache_read_tokens if first_usage and first_usage[0] is not None else 0
    # the model of the current call: the recorded one, else the last one recorded
    model = prev_model = next(iter(conversation.models()), "")
    limit_tokens = None if limit is None else limit.tokens
    for t, turn in enumerate(conversation.turns):
        msgs = rec.turns[t]
        listener.turn = t
        ctx.begin_turn(msgs[0])
        available += 1
        first = ctx.compact()
        session.adopt(first.rendered, t, request, checks, first.edits)
        usage = turn.usage
        times = turn.metadata.get("request_times") or ()
        resets = turn.metadata.get("cache_resets") or ()
        rounds = _rounds(msgs[1:]) or [(None, [])]
        for step, (reply, after) in enumerate(rounds):
            i = request
            system = session.system
            fixed = fixed_tokens(system)
            summary_sys = 0
            if base_system is not None and system != base_system:
                summary_sys = max(0, fixed - fixed_tokens(base_system))
            total, synth, length = session.tokens, session.made_up_tokens, session.length
            input_tokens = fixed + total
            checks.budget_kept(system, session, total, i)
            compacted = prev is not None and (prev[0] != system or session.shared < prev[1])
            cached = 0
            if prev is not None and prev[0] == system:  # the system prompt and tools are shared too
                cached = fixed - REPLY_PRIMING + session.prefix_tokens(session.shared)
            recorded = usage[step] if reply is not None and step < len(usage) else None
            if recorded is not None and recorded.model:
                model = recorded.model
            price = book.for_call(model) if isinstance(book, CallPricing) else book
            cache = price.cache if price is not None else None
            read = write = 0
            at = times[step] if step < len(times) else None
            if cache is not None:
                gap = None if at is None or prev_at is None else at - prev_at
                # another model's cache holds nothing this model can read
                same_model = model == prev_model
                same_fixed = fixed - REPLY_PRIMING if prev is not None and prev[0] == system and same_model else 0
                extends = prev is not None and not compacted and step not in resets and same_model
                if step in resets and warm:  # invalidated: only the prefix every session shares is still cached
                    same_fixed = min(same_fixed, warm)
                if prev is None and warm:  # what an earlier session left: the agent's own system prompt and tools
                    same_fixed = min(warm, fixed - REPLY_PRIMING)
                    read, write = cache.split(prompt=input_tokens - REPLY_PRIMING, shared=same_fixed,
                                              extends=False, fixed=same_fixed, gap=None)
                else:
                    read, write = cache.split(prompt=input_tokens - REPLY_PRIMING, shared=cached if same_model else 0,
                                              extends=extends, fixed=same_fixed, gap=gap)
            prev_model = model
            if at is not None:  # a request with no time (one the recording never made) refreshes nothing
                prev_at = at
            folded = listener.folded
            if folded:
                mark_summarized(t, i)
                listener.folded = False
            d_calls, d_in, d_out = listener.take_distill()
            out_tokens = 0
            if reply is not None:
                out_tokens = recorded.output_tokens if recorded is not None and recorded.output_tokens else counter.count_message(reply)
            cost = cost_cached = d_cost = math.nan
            if price is not None:  # the distill calls' input is not cached
                d_cost = price.billed(d_in, output=d_out)[0]
                cost, cost_cached = (c + d_cost for c in price.billed(input_tokens, read, write, out_tokens))
            row = (
                conversation.id, strategy, t, step, i, turn.outcome,
                input_tokens, fixed - summary_sys, summary_sys + synth, total - synth - session.turn_tokens,
                session.turn_tokens, out_tokens, recorded.input_tokens if recorded is not None else math.nan,
                length, available - session.originals, compacted, folded,
                max(0, input_tokens - limit_tokens) if limit_tokens is not None else 0,
                d_calls, d_in, d_out, cached, read, write, cost, cost_cached, d_cost,
            )  # fmt: skip
            table.append(row)
            requests.add(session.version, session.tail, len(session.tail), system)
            summaries.append(ctx.summary if holds_summary else "")
            request += 1
            listener.request = request
            prev = (system, length)
            session.sent()
            if reply is None and not after:
                break  # a turn that failed or was interrupted before any reply
            if reply is not None:
                ctx.observe(Usage(input_tokens=input_tokens, output_tokens=out_tokens))
            for m in ([reply] if reply is not None else []) + after:
                ctx.append(m)
                session.append(m, t)
                available += 1
            if after and step + 1 < len(rounds):
                n = ctx.compact()
                if n.compacted:
                    session.adopt(n.rendered, t, request, checks, n.edits)
        if turn.outcome == "answered":
            ctx.commit_turn()
        else:
            ctx.abort_turn()
            available -= len(turn.messages)
    listener.closed = True
    if listener.fallbacks:
        from .summarize import DistillFallbackWarning

        n, first_fallback = len(listener.fallbacks), listener.fallbacks[0]
        warnings.warn(
            f"{strategy} on {conversation.id!r}: the distiller returned None {n} time{'s' * (n > 1)} "
            f"({first_fallback.reason}: {first_fallback.detail}); see Replay.events",
            DistillFallbackWarning, stacklevel=2,
        )  # fmt: skip
    columns = zip(*table) if table else ((),) * len(REQUEST_COLUMNS)
    rows = {c: list(values) for c, values in zip(REQUEST_COLUMNS, columns)}
    return Replay(conversation, strategy, rows, listener.events, requests, summarized, summaries, limit, rec.ids)
