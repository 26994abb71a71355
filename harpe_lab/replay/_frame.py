"""The result of a replay: its request frame (one named row per model call), its events,
and what was sent when."""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from typing import Any, NamedTuple, Sequence

from ..conversation import Conversation
from ..errors import HarpeLabError
from ..messages import AssistantMessage, Rendered
from ..protocol import Limit

__all__ = ["RequestRow", "REQUEST_COLUMNS", "RequestIndexError", "ReplayEvent", "Replay", "totals"]


class RequestRow(NamedTuple):
    """One model call of a replay: the request frame's row, its fields the frame's columns
    (their meanings in the package doc and ``docs/glossary.md``)."""

    conversation: str
    strategy: str
    turn: int
    step: int
    request: int
    outcome: str
    input_tokens: int
    system_tokens: int
    summary_tokens: int
    history_tokens: int
    turn_tokens: int
    output_tokens: int
    recorded_input_tokens: float
    messages_sent: int
    messages_dropped: int
    compacted: bool
    summarized: bool
    overshoot_tokens: int
    distill_calls: int
    distill_input_tokens: int
    distill_output_tokens: int
    cached_prefix_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: float
    cost_usd_cached: float
    distill_cost_usd: float


REQUEST_COLUMNS: tuple[str, ...] = RequestRow._fields

SENT, SUMMARIZED, DROPPED = "sent", "summarized", "dropped"


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
