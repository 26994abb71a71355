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

from ..models import Pricing
from ._frame import REQUEST_COLUMNS, Replay, ReplayEvent, RequestIndexError, RequestRow, totals
from ._loop import replay

__all__ = ["replay", "Replay", "ReplayEvent", "Pricing", "REQUEST_COLUMNS", "RequestIndexError", "RequestRow", "totals"]
