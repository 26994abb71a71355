"""Turns read from the driver's brackets (§3.2–§3.4), exactly as Harpe's ``Journal.records``:
the `Assembler`, reading one line at a time.

Positional bracket pairing, everything outside a bracket ignored, a second request
discarding the open span, a bracket without a turn yielding nothing. Inside a bracket the
turn is chosen by turn id (§3.3, order-agnostic: the shortest turn-id list seen first; a
record belongs to the turn iff its list equals it) or, when no record carries a turn scope
(G1–G3), by Harpe's legacy depth counting (§3.4). Before the first bracket, lines go to the
0.4 fold (`Fold`) and SessionLog lines to `SessionLog`.
"""

from __future__ import annotations

from itertools import chain
from typing import Any, Iterable, Iterator, Mapping, NamedTuple

from ..messages import AssistantMessage, Message, UserInput
from . import _codec
from ._codec import CONTAINERS, inexact
from ._envelope import Line, exact_fields, turn_ids
from ._events import FAILED, GENERATIONS, KIND, REQUEST, RESPONSE, TURN_PREFIX, Kind
from ._fold import Fold
from ._problems import Bad, Lines
from ._records import BARE as BARE_RECORDS
from ._records import Item, TurnData, TurnRecord, UsageRows, decode, decode_usage, metered, outcome, usages
from ._sessionlog import SessionLog

__all__ = ["Assembler"]

_NO_TURN = 1 << 30
_REQUEST, _RESPONSE, _MESSAGE, _END = Kind.REQUEST, Kind.RESPONSE, Kind.MESSAGE, Kind.END
_USAGE, _OLD_USAGE = Kind.USAGE, Kind.OLD_USAGE
_TP_LEN = len(TURN_PREFIX)
_new_item = tuple.__new__  # Item._make without the lookup: an Item from a plain tuple


class _Opened(NamedTuple):
    """The open bracket's request line."""

    payload: Any
    line: int
    time: Any


class _Turn(NamedTuple):
    """The turn a closed bracket holds."""

    data: TurnData
    own: list[Item]
    """Usage rows of the turn's own model replies."""
    other: list[Item]
    """Every other usage row inside the bracket (subagent turns)."""
    metering: bool
    turn_id: str
    terminated: bool


class _Eager(NamedTuple):
    """What `Assembler._eager` took of a bracket's own turn as its records came (see there)."""

    user: UserInput | None
    pending: list[Message]
    late: list[Item]
    """Own messages after the first not of a common shape, decoded at the response."""
    end: Item | None
    own: list[Any]
    """Usage rows of the turn's own replies: a `Usage`, or an `Item` to decode."""
    other: list[Any]
    metering: bool
    nested: list[Item]
    """Records of nested turns (for the scope order)."""


def _go_eager(span: list[Item]) -> tuple[list[Item], bool]:
    """The bracket's turn is now known for good, so nothing in ``span`` is its own: the
    usage rows held become the bracket's *other* rows (returned, with whether one is a
    ``harpe.metering.usage``) and ``span`` keeps only nested turns' records."""
    other = [item for item in span if item.kind >= _USAGE]
    metering = any(item.kind == _USAGE for item in other)
    span[:] = [item for item in span if item.kind < _USAGE and len(item.turns) > 1]
    return other, metering


class Assembler:
    """Harpe's ``Journal.records`` over a stream of lines: `run` reads them and yields each
    record as its response line completes it; `finish` reads what is left at the end.

    Holds only the open bracket's relevant records (messages, terminators, ``started``
    and usage events); everything else is looked at once and dropped. ``validate_all``
    (check mode) also decodes every message and usage line the turn logic would not look
    at; ``rows`` collects `Journal.usage`'s table.
    """

    def __init__(self, lines: Lines, *, validate_all: bool = False, rows: UsageRows | None = None) -> None:
        self.lines = lines
        self.rows = rows
        self.validate_all = validate_all
        self.count = 0
        self.open = False
        self.bracketed = False
        self.request = _Opened("", 0, None)
        self.span: list[Item] = []
        self.inner_first = False
        self.outer_first = False
        self.fold = Fold(lines, rows)
        self.session = SessionLog(lines)
        self.outside = 0  # turn records outside any bracket

    # -- per line ----------------------------------------------------------------------------

    def run(self, lines: Iterable[Line]) -> Iterator[TurnRecord]:
        """Read ``lines`` — ``(line, generation, event, fields, context, time, raw)``, see
        `parse_lines` — and yield each record as its response line is read. The one per-line
        path of every reader, kept lean (benchmarks/journal.py): a bracket's lines are read by
        `_bracket` (then `_eager`) from the same iterator, state in locals, no call per line."""
        if self.validate_all:
            lines = self._validated(lines)
        lines = iter(lines)
        kind_of = KIND.get
        for line, gen, event, fields, ctx, t, raw in lines:
            kind = kind_of(event, 0)
            if kind == _REQUEST:
                self._request(line, fields, t, raw)
                reopened, record = self._bracket(lines)
                while reopened:  # a second request inside opened the bracket again
                    reopened, record = self._bracket(lines)
                if record is not None:
                    yield record
            elif kind == _RESPONSE:
                self._response(line, fields, t, raw, None)  # no bracket open: noted, ignored
            else:
                if kind == _OLD_USAGE and fields.get("inputTokens") is None and fields.get("outputTokens") is None:
                    kind = 0  # a newer harpe.model.replied: provider and model only (`carries_tokens`)
                self._outside(Item(kind, line, event, fields, turn_ids(ctx) if ctx else (), gen, t, raw))

    def _bracket(self, lines: Iterator[Line]) -> tuple[bool, TurnRecord | None]:
        """The open bracket's lines up to its response: (a second request opened it again,
        the record). Records are held in its span until its turn is known for good — a record
        with one turn id, as in every journal with turn scopes; from there `_eager` reads on."""
        kind_of, new_item = KIND.get, _new_item
        eager_ok = _codec.BARE and self.rows is None  # Journal.usage wants every row's line and time
        known: dict[str, tuple[str, ...]] = {}  # a scope string's turn ids, within one bracket
        span = self.span
        depth, key = _NO_TURN, ()  # the shortest turn-id list in the bracket, and its length
        for line, gen, event, fields, ctx, t, raw in lines:
            kind = kind_of(event, 0)
            if kind == _OLD_USAGE and fields.get("inputTokens") is None and fields.get("outputTokens") is None:
                kind = 0  # a newer harpe.model.replied: provider and model only (`carries_tokens`)
            if kind > _RESPONSE:  # a record the turn logic reads
                # inline, as in `_eager`: a call per line would cost the reader its speed
                if not ctx:
                    turns = ()
                elif len(ctx) == 1:
                    s = ctx[0]
                    turns = known.get(s)
                    if turns is None:
                        turns = known[s] = (s[_TP_LEN:],) if s.startswith(TURN_PREFIX) else ()
                else:
                    turns = turn_ids(ctx)
                if turns and len(turns) < depth:
                    depth, key = len(turns), turns
                    if depth == 1 and eager_ok:  # this line is the turn's own: `_eager` reads it first
                        return self._eager(chain(((line, gen, event, fields, ctx, t, raw),), lines), key,
                                           *_go_eager(span))
                span.append(new_item(Item, (kind, line, event, fields, turns, gen, t, raw)))
            elif kind == 0:
                if ctx and depth != 1:  # only the shortest turn-id list matters; none is shorter than 1
                    turns = turn_ids(ctx)
                    if turns and len(turns) < depth:
                        depth, key = len(turns), turns
                        if depth == 1 and eager_ok:
                            return self._eager(lines, key, *_go_eager(span))
            elif kind == _REQUEST:
                self._request(line, fields, t, raw)
                return True, None
            else:
                return False, self._response(line, fields, t, raw, key if depth != _NO_TURN else None)
        return False, None

    def _eager(
        self, lines: Iterator[Line], key: tuple[str, ...], other: list[Any], metering: bool
    ) -> tuple[bool, TurnRecord | None]:
        """The rest of a bracket whose turn is ``key`` for good, as `_bracket` returns it;
        ``other``: its other usage rows so far. Messages and usage rows of the common shapes
        are built as they come (`_codec.common`), the others decoded at the response, as
        `_by_turn_id` would (a bad record reported at the same point, never in a bracket that
        does not close); after an own message of no common shape the later ones wait too."""
        kind_of, new_item = KIND.get, _new_item
        common, common_usage, calls_inexact = _codec.common, _codec.common_usage, _codec.calls_inexact
        known: dict[str, tuple[str, ...]] = {}
        span = self.span  # from here, only nested turns' records (for the scope order)
        user: UserInput | None = None
        pending: list[Message] = []  # the turn's messages after its user input, in order
        late: list[Item] = []  # own messages after the first one not of a common shape
        end: Item | None = None
        own: list[Any] = []  # usage rows, each a `Usage` or an `Item` to decode later
        for line, gen, event, fields, ctx, t, raw in lines:
            kind = kind_of(event, 0)
            if kind == _OLD_USAGE and fields.get("inputTokens") is None and fields.get("outputTokens") is None:
                kind = 0
            if kind > _RESPONSE:  # (a kind 0 line, a scope alone, can tell nothing new now)
                if not ctx:  # inline, as in `_bracket`
                    turns = ()
                elif len(ctx) == 1:
                    s = ctx[0]
                    turns = known.get(s)
                    if turns is None:
                        turns = known[s] = (s[_TP_LEN:],) if s.startswith(TURN_PREFIX) else ()
                else:
                    turns = turn_ids(ctx)
                if turns == key:
                    if kind == _MESSAGE and not late:
                        m = common(fields)
                        if m is not None and (type(m) is not AssistantMessage or raw is None
                                              or not m.calls or not calls_inexact(m.calls)):
                            if type(m) is UserInput:
                                if user is None:
                                    user = m  # a later user input of the same turn is dropped
                            else:
                                pending.append(m)
                            continue
                        late.append(new_item(Item, (kind, line, event, fields, turns, gen, t, raw)))
                    elif kind == _USAGE:
                        metering = True
                        u = common_usage(fields)
                        own.append(new_item(Item, (kind, line, event, fields, turns, gen, t, raw)) if u is None else u)
                    elif kind == _END:
                        if end is None:
                            end = new_item(Item, (kind, line, event, fields, turns, gen, t, raw))
                    elif kind == _OLD_USAGE:
                        own.append(new_item(Item, (kind, line, event, fields, turns, gen, t, raw)))
                    else:  # an own message after an uncommon one, or a legacy ``started``
                        late.append(new_item(Item, (kind, line, event, fields, turns, gen, t, raw)))
                elif kind == _USAGE:
                    metering = True
                    u = common_usage(fields)
                    other.append(new_item(Item, (kind, line, event, fields, turns, gen, t, raw)) if u is None else u)
                elif kind == _OLD_USAGE:
                    other.append(new_item(Item, (kind, line, event, fields, turns, gen, t, raw)))
                elif len(turns) > 1:  # a nested turn's record: it tells the scope order
                    span.append(new_item(Item, (kind, line, event, fields, turns, gen, t, raw)))
            elif kind == _REQUEST:
                self._request(line, fields, t, raw)
                return True, None
            elif kind == _RESPONSE:
                eager = _Eager(user, pending, late, end, own, other, metering, span)
                return False, self._response(line, fields, t, raw, key, eager)
        return False, None

    def _outside(self, item: Item) -> None:
        """A line outside any bracket: before the first one, the fold's or a SessionLog's."""
        kind = item.kind
        if Kind.MESSAGE <= kind <= Kind.END:
            self.outside += 1
        if self.rows is not None and kind >= Kind.USAGE and (self.bracketed or self.fold.turn is None):
            self.rows.row(item, None, False)
        if not self.bracketed:
            if kind:
                self.fold.feed(item)
            elif item.generation == "SessionLog":
                self.session.add(item)

    def _validated(self, lines: Iterable[Line]) -> Iterator[Line]:
        """``lines``, each after decoding its message or usage row (check mode), also those
        the turn logic never looks at (subagent turns, lines outside brackets)."""
        for line in lines:
            n, gen, event, fields, _, t, raw = line
            item = Item(KIND.get(event, 0), n, event, fields, (), gen, t, raw)
            kind = item.kind
            if kind == Kind.MESSAGE or kind == Kind.STARTED:
                decode(item, self.lines)
            elif kind == Kind.USAGE or (kind == Kind.OLD_USAGE and _codec.carries_tokens(fields)):
                decode_usage(item, self.lines)
            elif event == FAILED:
                try:
                    _codec.error_detail(fields)
                except Bad as bad:
                    self.lines.bad(n, bad.reason, event)
            yield line

    # -- brackets (§3.2) ---------------------------------------------------------------------

    @staticmethod
    def _exact_payload(fields: Mapping[str, Any], raw: bytes | None) -> Any:
        payload = _codec.payload(fields)
        if raw is not None and type(payload) in CONTAINERS and inexact(payload):
            payload = _codec.payload(exact_fields(raw))
        return payload

    def _request(self, line: int, fields: Mapping[str, Any], t: Any, raw: bytes | None) -> None:
        if self.open:
            self.lines.note(self.request.line, f"request discarded: a second request at line {line} opened a new "
                                               "bracket before its response (Harpe drops the earlier span)", REQUEST)
            self._unattributed(self.span)
        elif not self.bracketed:
            self._first_bracket(line)
        self.open = True
        self.bracketed = True
        self.request = _Opened(self._exact_payload(fields, raw), line, t)
        self.span = []

    def _response(self, line: int, fields: Mapping[str, Any], t: Any, raw: bytes | None,
                  key: tuple[str, ...] | None, eager: _Eager | None = None) -> TurnRecord | None:
        """Close the open bracket; ``key``: its shortest turn-id list (``None``: no record in
        it carries a turn scope); ``eager``: what `_eager` took of the turn already."""
        if not self.open:
            self.lines.note(line, "response without an open request; ignored (pairing is positional)", RESPONSE)
            return None
        span, self.span = self.span, []
        self.open = False
        if eager is not None:
            turn = self._eager_turn(eager, key)  # type: ignore[arg-type]
        elif key is not None:
            turn = self._by_turn_id(span, key)
        else:
            turn = self._by_depth(span)
        if turn is None:
            self.lines.note(self.request.line, f"the bracket closed at line {line} holds no turn (no user "
                                               "message of its own); Harpe records nothing for it", REQUEST)
            self._unattributed(span)
            return None
        values = {
            "request": self.request.payload, "response": self._exact_payload(fields, raw), "data": turn.data,
            "usage": usages(turn.own, turn.metering, self.lines),
            "nested_usage": usages(turn.other, turn.metering, self.lines), "turn_id": turn.turn_id,
            "terminated": turn.terminated, "lines": (self.request.line, line), "started": self.request.time, "ended": t,
        }
        record = _codec.bare(TurnRecord, values) if BARE_RECORDS else TurnRecord(**values)
        if self.rows is not None:
            self.rows.add(turn.own, self.count, True, turn.metering)
            self.rows.add(turn.other, self.count, False, turn.metering)
        self.count += 1
        return record

    def _unattributed(self, items: list[Item]) -> None:
        """Usage rows of a span that yields no record."""
        if self.rows is not None:
            self.rows.add(items, None, False)

    def _by_turn_id(self, span: list[Item], key: tuple[str, ...]) -> _Turn | None:
        """§3.3 with the order-agnostic rule: the turn is ``key``, the shortest turn-id list
        seen first; a record is the turn's own iff its turn-id list equals it."""
        k = len(key)
        user: UserInput | None = None
        pending: list[Message] = []  # the turn's messages after its user input, in order
        end: Item | None = None
        own: list[Item] = []
        other: list[Item] = []
        metering = False
        lines = self.lines
        for item in span:
            kind, turns = item.kind, item.turns
            if kind >= _USAGE:
                (own if turns == key else other).append(item)
                if kind == _USAGE:
                    metering = True
            elif turns != key:
                if len(turns) > k:  # a nested turn's record tells the scope order
                    if turns[:k] == key:
                        self.outer_first = True
                    elif turns[-k:] == key:
                        self.inner_first = True
            elif kind == _END:
                if end is None:
                    end = item
            else:
                m = decode(item, lines)
                if m is None:
                    continue
                if type(m) is UserInput:
                    if user is None:
                        user = m  # a later user input of the same turn is dropped, as in Harpe
                else:
                    pending.append(m)
        if user is None:
            return None
        # the turn's own id is its innermost scope: last when outermost-first (G5)
        turn_id = key[0] if (k == 1 or (self.inner_first and not self.outer_first)) else key[-1]
        return _Turn(outcome(user, pending, end, lines), own, other, metering, turn_id, end is not None)

    def _eager_turn(self, taken: _Eager, key: tuple[str, ...]) -> _Turn | None:
        """`_by_turn_id` for a bracket `_eager` read (its turn id list ``key`` has one
        id): the rest of its loop, over the records it left for now."""
        user, pending, late, end, own, other, metering, nested = taken
        for item in nested:
            turns = item.turns
            if turns[0] == key[0]:
                self.outer_first = True
            elif turns[-1] == key[0]:
                self.inner_first = True
        lines = self.lines
        for item in late:
            m = decode(item, lines)
            if m is None:
                continue
            if type(m) is UserInput:
                if user is None:
                    user = m
            else:
                pending.append(m)
        if user is None:
            return None
        return _Turn(outcome(user, pending, end, lines), own, other, metering, key[0], end is not None)

    def _by_depth(self, span: list[Item]) -> _Turn | None:
        """§3.4: legacy depth counting, for brackets whose records carry no turn scope.
        Only the first outermost turn counts; usage rows at depth 1 are its own."""
        data: TurnData | None = None
        depth = 0
        user: UserInput | None = None
        pending: list[Message] = []  # the turn's messages after its user input, in order
        own: list[Item] = []
        own_now: list[Item] = []
        other: list[Item] = []
        lines = self.lines
        for item in span:
            kind = item.kind
            if kind == Kind.STARTED:
                if data is None:
                    depth += 1
                    if depth == 1:
                        m = decode(item, lines)
                        user = m if isinstance(m, UserInput) else None
                        pending = []
                        other.extend(own_now)
                        own_now = []
            elif kind == Kind.MESSAGE:
                if depth == 1 and data is None:
                    m = decode(item, lines)
                    if m is not None and not isinstance(m, UserInput):
                        pending.append(m)
            elif kind == Kind.END:
                if depth > 0:
                    depth -= 1
                    if depth == 0 and user is not None:
                        data = outcome(user, pending, item, lines)
                        own, own_now = own_now, []
                        user, pending = None, []
            elif depth == 1 and data is None:
                own_now.append(item)
            else:
                other.append(item)
        metering = metered(span)
        if data is not None:
            return _Turn(data, own, other + own_now, metering, "", True)
        if user is None:
            return None
        return _Turn(outcome(user, pending, None, lines), own_now, other, metering, "", False)

    def _first_bracket(self, line: int) -> None:
        """A bracketed journal is read by its brackets only: forget the fold."""
        dropped = self.fold.drop()
        if dropped:
            self.lines.note(line, f"{dropped} unbracketed turn(s) before the first bracket contribute nothing "
                                  "(Harpe reads a bracketed journal by its brackets)", REQUEST)
            self.outside = 0  # their records are counted in this note
        if self.session:
            self.lines.note(self.session.first_line, f"{len(self.session)} SessionLog line(s) before the first "
                                                     "bracket were ignored")
        self.session = SessionLog(self.lines)

    # -- end of file -------------------------------------------------------------------------

    def finish(self) -> tuple[list[TurnRecord], str, tuple[Message, ...]]:
        """End of input: the records read without brackets (if any), the reader used
        (``"brackets"``, ``"fold"``, ``"sessionlog"`` or ``"none"``), and a SessionLog's
        messages before its first user message."""
        if self.open:
            self.lines.note(self.request.line, "request without a response (the session ended or crashed "
                                               "mid-turn); its turn is not read, as in Harpe", REQUEST)
            self._unattributed(self.span)
            self.open, self.span = False, []
        if self.bracketed:
            if self.outside:
                self.lines.note(None, f"{self.outside} turn record(s) outside any bracket (unbracketed turns: "
                                      "subagents, cron, scripts) contribute nothing, as in Harpe")
            return [], "brackets", ()
        folded = self.fold.finish()
        if folded:
            if self.session:
                self.lines.note(self.session.first_line, f"{len(self.session)} SessionLog line(s) ignored: "
                                                         "the file also holds turn records")
            return folded, "fold", ()
        if self.session:
            records, prefix = self.session.records()
            return records, "sessionlog", prefix
        if self.outside:
            self.lines.note(None, "turn records but no harpe.turn.request/response brackets: Harpe reads no "
                                  "history from this journal")
        return [], "none", ()

    def generation_labels(self, seen: set[str]) -> tuple[str, ...]:
        """Generations seen; string-scope lines are G5 unless nested turns showed their
        scopes innermost first (G4b)."""
        labels = set(seen)
        if "G5" in labels and self.inner_first:
            if not self.outer_first:
                labels.discard("G5")
            labels.add("G4b")
        return tuple(g for g in GENERATIONS if g in labels)
