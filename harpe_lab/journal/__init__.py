"""Read every generation of Harpe journals, and write Harpe-compatible ones.

A *journal* is a JSONL file: one record per line (the Harpe specification,
``docs/harpe-format.md`` §1–§3, §5). This module reads all of its generations, turns the
driver's request/response brackets into `TurnRecord` s exactly as Harpe's
``Journal.records`` does, rebuilds the model history Harpe resumes from (`Journal.load`),
attributes token usage to turns (`Journal.usage`), and writes new journals in the newest
format (`JsonlLogger`, `Journal`, `TurnLog`).

Reading
-------
Generations are detected **per line** (§1.5, §1.6):

========== ====================================================================
G1         flat ``{"time", "category", <fields>}``
G2         flat ``{"time", "event", <fields>}``
G3         flat with a ``"context"`` list of values, innermost scope first
G4         ``{"time", "event", "fields", "context"}`` with object scopes, innermost first
G4b / G5   the same four keys with string scopes (``"harpe.turn.id=…"``); G4b wrote
           them innermost first, G5 outermost first — one line cannot tell them apart
SessionLog pre-Journal message lines ``{"time": <epoch float>, "role": …}``
========== ====================================================================

Every line becomes an `Entry` in one normal form: ``time`` an aware UTC ``datetime``;
``event`` the dotted name (``category`` for G1; SessionLog lines get the synthetic
``"harpe.sessionlog.message"``); ``fields`` the record's fields (for flat lines, every key
but ``time``/``event``/``category`` and a G3 scope list); ``context`` a tuple of scope
strings ``"key=value"``, **outermost first** where the generation's order is known (G3
and G4 lists are reversed, each object scope becomes one string per key). String scopes
(G4b/G5) are kept as written, because their order cannot be known from one line; the
turn logic below never depends on that order. (G3 omitted an empty context, so its lines
without scopes read as G2; `Records.generations` reports G4b instead of G5 when nested
turns show innermost-first scopes.) JSON ``null`` anywhere in the envelope or
in a field Harpe reads is treated as absent, and integral floats are accepted wherever
Harpe wrote an integer.

Turns are read exactly as Harpe's ``Journal.records`` (§3.2): positional bracket pairing,
everything outside a bracket ignored, a second request discarding the open span, a
bracket without a turn yielding nothing. Inside a bracket the turn is selected by turn
id (§3.3) with the specification's **order-agnostic** rule, which equals Harpe's for G5
and also reads G4b: among the bracket's records that carry a turn scope, take the
shortest list of turn ids (the first one of that length); a record belongs to the turn
iff its turn-id list equals it. Records of nested (subagent) turns have longer lists and
are excluded. Brackets whose records carry no turn scope at all (G1–G3) use Harpe's
legacy depth counting (§3.4). A turn without a terminator reads as interrupted, with its
messages kept (Harpe's "externally terminated turn").

Each file is read the way the Harpe version that wrote it resumed it:

* a journal with at least one ``harpe.turn.request`` is read by brackets; anything before
  its first bracket contributes nothing (Harpe ≥ 0.5);
* a journal without brackets but with ``harpe.turn.started`` records is read with the
  0.4-era fold (§3.7): every ``started`` opens a turn and an unterminated one reads as
  interrupted; its records have ``request is None``;
* a SessionLog file (§1.6) has no outcomes: every line is a message; its records start a
  turn at each user message and read as answered, so the history holds every message.

`Records.reader` says which rule was used. Usage rows (``harpe.metering.usage``, or the
older ``harpe.model`` / ``harpe.models.replied`` / ``harpe.model.replied`` events when
they carry token fields, §2.5) are attributed to the turn whose turn-id list they carry;
a record's ``usage`` holds its own model replies and ``nested_usage`` every other usage
row inside its bracket (subagents).

Bad input
---------
``errors="strict"`` (the default) raises `JournalError` naming the file, the line, the
event when known, what was expected and how to fix it. ``errors="skip"`` skips a bad line
and records it in ``problems`` (`Problem` s with line and reason). Things Harpe itself
drops by design — a fragment without a response, a response without a request, a
discarded span — are never errors; they are listed in ``notes``. A torn final line (no
trailing newline, not valid JSON: the writer died mid-write) is a `TornLineWarning` and a
note in both modes. Files are streamed line by line; only the open bracket's relevant
records are held in memory, so a line of any length and a file of any size can be read.

What is checked: every line's envelope (a JSON object; ``time``, ``event``, ``fields``
and ``context`` of the right types; a valid time) and everything `Journal.records`
decodes — the turn's messages and the usage rows inside brackets — as strictly as
Harpe's newest decoder for four-key lines (every key present with its type) and
leniently for older generations (missing keys default to ``""``/``0``/``[]``,
``success`` to true, ``media`` read as attachments). A present key of the wrong type is
an error in every generation. `Journal.check` also decodes what `records` skips (subagent
turns, records outside brackets). Lines only Python's ``json`` reads (``NaN``, integers
beyond 64 bits — orjson would silently turn those into floats) are read exactly.

Writing
-------
`JsonlLogger` appends G5 lines exactly as Python's default ``json.dumps`` writes them,
one ``os.write`` per line on an ``O_APPEND`` file (whole lines even with several threads
or processes). `Journal` writes the driver's brackets; `TurnLog` writes one turn's
messages, terminator, usage and model events inside its ``harpe.turn.id`` scope, and
nests subagent turns under a ``harpe.tools.call`` scope.

Layout
------
One concept per module, each importing only those above it in this list:

============== ================================================================
_events        event names, scopes, outcomes, generations, each event's kind
_problems      bad lines, notes, the torn-tail warning (`Problem`, `TornLineWarning`)
_codec         messages and usage rows to and from fields (§2.3, §2.5)
_envelope      lines and generations (§1): `Entry`, `read_entries`, the line parser
_records       `TurnData`, `TurnRecord`, `Records`; `Item`, a line held in a bracket
_fold          the 0.4 fold (§3.7), for journals without brackets
_sessionlog    SessionLog files (§1.6)
_brackets      the driver's brackets (§3.2–§3.4): `Assembler.run`, the per-line path
_stream        `RecordStream`: a path or `Entry` s through that one path
_writer        `JsonlLogger`, `TurnLog`
_journal       `Journal`: brackets written, turns, history and usage read
============== ================================================================
"""

from __future__ import annotations

from ._codec import decode_message, encode_message
from ._envelope import Entry, EntryReader, format_time, read_entries
from ._events import (ANSWERED, CALL_SCOPE, FAILED, INTERRUPTED, MESSAGE, REQUEST, RESPONSE, STARTED, TURN_SCOPE,
                      USAGE)
from ._journal import USAGE_COLUMNS, Journal
from ._problems import Problem, TornLineWarning
from ._records import Records, TurnData, TurnRecord
from ._stream import RecordStream
from ._writer import JsonlLogger, TurnLog

__all__ = [
    "Entry",
    "TurnData",
    "TurnRecord",
    "Problem",
    "Records",
    "RecordStream",
    "EntryReader",
    "TornLineWarning",
    "read_entries",
    "encode_message",
    "decode_message",
    "Journal",
    "JsonlLogger",
    "TurnLog",
    "format_time",
    "USAGE_COLUMNS",
    "REQUEST",
    "RESPONSE",
    "MESSAGE",
    "STARTED",
    "ANSWERED",
    "INTERRUPTED",
    "FAILED",
    "USAGE",
    "TURN_SCOPE",
    "CALL_SCOPE",
]
