"""The replay loop: Harpe's engine lifecycle over a recording, one model call at a time."""

from __future__ import annotations

import math
import warnings
from functools import partial
from typing import Any, Callable, Mapping, Sequence

from .._checks import Invariants
from .._session import ProviderSession, Sent
from ..conversation import Conversation
from ..errors import StrategyError
from ..messages import Message, Rendered, Usage
from ..models import CallPricing, Pricing, resolve_pricing
from ..protocol import DeclaresLimit, DistillFallbackWarning, HoldsSummary, Limit, ReportsEvents
from ..tokens import REPLY_PRIMING, Primes
from ._frame import REQUEST_COLUMNS, Replay, ReplayEvent, RequestRow
from ._listener import Listener
from ._pricing import UNPRICED, Call, price_call
from ._recording import recording

__all__ = ["replay"]

_LIFECYCLE = ("begin_turn", "append", "compact", "observe", "commit_turn", "abort_turn")

_new_row = partial(tuple.__new__, RequestRow)  # a RequestRow from the tuple of its fields


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
    run = _Run(conversation, _strategy(context), counter, tuple(tools), pricing, on_event, name)
    ctx, session = run.ctx, run.session
    for t, turn in enumerate(conversation.turns):
        msgs = run.rec.turns[t]
        run.start_turn(t)
        ctx.begin_turn(msgs[0])
        run.available += 1
        run.appended += 1
        first = ctx.compact()
        session.adopt(first.rendered, t, len(run.rows), run.checks, first.edits)
        calls = run.rec.calls[t]
        for step, (reply, after) in enumerate(calls):
            sent = run.request(t, step, reply)
            if reply is None and not after:
                break  # a turn that failed or was interrupted before any reply
            if reply is not None:
                ctx.observe(Usage(sent.input_tokens, sent.output_tokens))
            for m in ([reply] if reply is not None else []) + after:  # the strategy and the provider both hold it
                ctx.append(m)
                session.append(m, t)
            run.available += len(after) + (reply is not None)
            run.appended += len(after) + (reply is not None)
            if after and step + 1 < len(calls):
                n = ctx.compact()
                if n.compacted:
                    session.adopt(n.rendered, t, len(run.rows), run.checks, n.edits)
        if turn.outcome == "answered":
            ctx.commit_turn()
        else:
            ctx.abort_turn()
            run.available -= len(turn.messages)
    return run.result()


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


class _Run:
    """One replay's state: the recording, the provider session the requests build, the
    strategy's declared capabilities (checked once, here), the invariants, and the rows."""

    def __init__(self, conversation: Conversation, ctx: Any, counter: Any, tools: tuple, pricing: Any,
                 on_event: Callable[[ReplayEvent], None] | None, name: str | None) -> None:
        self.conversation = conversation
        self.ctx = ctx
        self.counter = counter
        self.tools = tools
        self.strategy = name or type(ctx).__name__
        self.rec = recording(conversation)
        models = self.rec.models
        self.book = resolve_pricing(pricing, models, cache_ttl=conversation.metadata.get("cache_ttl"))
        limit = ctx.limit if isinstance(ctx, DeclaresLimit) else None
        if limit is not None and not isinstance(limit, Limit):
            raise StrategyError(f"{self.strategy}.limit must be a harpe_lab.protocol.Limit or None, got {limit!r}")
        self.limit = limit
        self.holds_summary = isinstance(ctx, HoldsSummary)
        self.base_system = ctx.base_system if self.holds_summary else None
        self.listener = Listener(on_event, counter)
        if isinstance(ctx, ReportsEvents):
            ctx.subscribe(self.listener)
        if isinstance(counter, Primes):  # every message is counted anyway, faster up front
            counter.prime(self.rec.messages)
        self.checks = Invariants(self.strategy, self.rec.pairs, limit, counter, self.rec.owner)
        self.session = ProviderSession(self.rec.owner, counter.count_message)
        self.rows: list[RequestRow] = []
        self.sent = Sent()
        self.summaries: list[str] = []
        self.summarized: dict[str, int] = {}  # message id -> the request before which it was folded
        self._fixed: dict[str, int] = {}
        # id() of the messages appended before the last fold and not yet marked summarized,
        # each with its place in the recording (`rec.messages[:keyed]`): a fold asks the
        # session which of them it no longer holds, from what left it since the fold before
        self._unsummarized: dict[int, int] = {}
        self._keyed = 0
        self.available = 0  # messages the full history holds now
        self.appended = 0  # messages of the recording appended so far (an aborted turn's too)
        self.prev: tuple[str, int] | None = None  # the previous request's system prompt and length
        self.prev_at: float | None = None  # when the previous request went out (recorded), if known
        self.gap: float | None = None  # seconds from the previous request to this one, if both are recorded
        # the current turn, with what its metadata says of its calls' times and cache resets
        self.turn: Any = None
        self.times: Sequence[float] = ()
        self.resets: Sequence[int] = ()
        # the first call's recorded cache reads: the prefix already cached when the session began
        first_usage = conversation.turns[0].usage if conversation.turns else ()
        self.warm = first_usage[0].cache_read_tokens if first_usage and first_usage[0] is not None else 0
        # the model of the current call: the recorded one, else the last one recorded
        self.model = self.prev_model = next(iter(models), "")

    def fixed_tokens(self, system: str) -> int:
        n = self._fixed.get(system)
        if n is None:
            n = self._fixed[system] = self.counter.count_rendered(Rendered(system, ()), self.tools)
        return n

    # --- the lifecycle ---------------------------------------------------------------------

    def start_turn(self, t: int) -> None:
        """Turn ``t`` starts: what its metadata says of its calls' times and cache resets."""
        self.listener.turn = t
        turn = self.turn = self.conversation.turns[t]
        self.times = turn.metadata.get("request_times") or ()
        self.resets = turn.metadata.get("cache_resets") or ()

    # --- one request: measured, priced, recorded ---------------------------------------------

    def request(self, t: int, step: int, reply: Message | None) -> RequestRow:
        """The request the session holds now, as the provider would see, cache and bill it."""
        session, turn, i = self.session, self.turn, len(self.rows)
        system = session.system
        fixed = self._fixed.get(system)
        if fixed is None:
            fixed = self.fixed_tokens(system)
        summary_sys = 0
        if self.base_system is not None and system != self.base_system:
            summary_sys = max(0, fixed - self.fixed_tokens(self.base_system))
        total, synth, turn_tokens = session.tokens, session.made_up_tokens, session.turn_tokens
        input_tokens = fixed + total
        checks = self.checks
        if checks.limit is not None:
            checks.budget_kept(system, session, total, i)
        prev = self.prev
        same_system = prev is not None and prev[0] == system
        compacted = prev is not None and (prev[0] != system or session.shared < prev[1])
        # the system prompt and tools are shared too
        cached = fixed - REPLY_PRIMING + session.prefix_tokens(session.shared) if same_system else 0
        usage = turn.usage
        recorded = usage[step] if reply is not None and step < len(usage) else None
        listener = self.listener
        folded = listener.folded
        if folded:
            self._mark_summarized(t, i)
            listener.folded = False
        d_calls, d_in, d_out = listener.distill
        if d_calls:
            listener.distill = [0, 0, 0]
        out_tokens = 0
        if reply is not None:
            out_tokens = (recorded.output_tokens if recorded is not None and recorded.output_tokens
                          else self.counter.count_message(reply))
        price = None if self.book is None else self._price(step, recorded)
        cost = UNPRICED if price is None else price_call(price, Call(
            input_tokens, out_tokens, fixed, cached, first=prev is None, same_system=same_system, compacted=compacted,
            reset=step in self.resets, same_model=self.model == self.prev_model, warm=self.warm, gap=self.gap,
            distill_input_tokens=d_in, distill_output_tokens=d_out))
        limit, length = self.limit, session.length
        # by position, in RequestRow's order (each line's fields named after it), and built in
        # C: 27 keywords cost 1 µs a request, a tenth of a warm replay
        row = _new_row((
            self.conversation.id, self.strategy, t, step, i, turn.outcome,  # conversation … outcome
            input_tokens, fixed - summary_sys, summary_sys + synth,  # input, system, summary tokens
            total - synth - turn_tokens, turn_tokens, out_tokens,  # history, turn, output tokens
            recorded.input_tokens if recorded is not None else math.nan,  # recorded_input_tokens
            length, self.available - session.originals, compacted, folded,  # messages sent, dropped; compacted, summarized
            max(0, input_tokens - limit.tokens) if limit is not None else 0,  # overshoot_tokens
            d_calls, d_in, d_out, cached, *cost,  # distill calls, in, out; cached prefix; the CallCost fields
        ))  # fmt: skip
        self.rows.append(row)
        tail = session.tail
        self.sent.add(session.version, tail, len(tail), system)
        self.summaries.append(self.ctx.summary if self.holds_summary else "")
        listener.request = i + 1
        self.prev = (system, length)
        session.sent()
        return row

    def _price(self, step: int, recorded: Usage | None) -> Pricing | None:
        """The price of this call, its model and its time since the last call noted (the
        next call's cache depends on them)."""
        self.prev_model = self.model
        if recorded is not None and recorded.model:
            self.model = recorded.model
        times = self.times
        at = times[step] if step < len(times) else None
        self.gap = None if at is None or self.prev_at is None else at - self.prev_at
        if at is not None:  # a request with no time (one the recording never made) refreshes nothing
            self.prev_at = at
        book = self.book
        return book.for_call(self.model) if isinstance(book, CallPricing) else book

    def _mark_summarized(self, t: int, i: int) -> None:
        # only what was appended: a fold mid-turn leaves the turn's later messages to come
        order = self._unsummarized
        start, end = self._keyed, self.appended
        order.update(zip(map(id, self.rec.messages[start:end]), range(start, end)))
        self._keyed = end
        gone = self.session.gone(order)
        if gone:
            ids, summarized = self.rec.ids, self.summarized
            for key in sorted(gone, key=order.__getitem__):  # in the recording's order
                summarized[ids[key]] = i
                del order[key]

    def result(self) -> Replay:
        listener = self.listener
        listener.closed = True
        if listener.fallbacks:
            n, first = len(listener.fallbacks), listener.fallbacks[0]
            warnings.warn(
                f"{self.strategy} on {self.conversation.id!r}: the distiller returned None {n} time{'s' * (n > 1)} "
                f"({first.reason}: {first.detail}); see Replay.events",
                DistillFallbackWarning, stacklevel=3,
            )  # fmt: skip
        columns = zip(*self.rows) if self.rows else ((),) * len(REQUEST_COLUMNS)
        rows = {c: list(values) for c, values in zip(REQUEST_COLUMNS, columns)}
        return Replay(self.conversation, self.strategy, rows, listener.events, self.sent, self.summarized,
                      self.summaries, self.limit, self.rec.ids)
