"""Round trip, as a property: random sessions written with `JsonlLogger`/`Journal`/`TurnLog`
read back to exactly the turns and history Harpe's rules give — computed here from the
session model, not by the reader — in every string- and object-scope generation."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.strategies.harpe import truncate
from harpe_lab.importers.harpe import load_harpe, to_journal
from harpe_lab.journal import Journal, JsonlLogger, TurnLog, read_entries
from harpe_lab.messages import AssistantMessage, Attachment, ToolCall, ToolResult, ToolResults, Usage, UserInput

# --- the session model ----------------------------------------------------------------------


@dataclass
class Round:
    reply: AssistantMessage  # with at least one call
    results: ToolResults
    usage: Usage | None
    subturns: list[tuple[int, "TurnSpec"]]  # (call index, the subagent's turn)


@dataclass
class TurnSpec:
    user: UserInput
    rounds: list[Round]
    final: AssistantMessage | None
    final_usage: Usage | None
    ending: str | None  # answered | interrupted | failed | None (no terminator)
    error: str = ""

    def messages(self) -> tuple:
        out: list = []
        for r in self.rounds:
            out += [r.reply, r.results]
        if self.final is not None:
            out.append(self.final)
        return tuple(out)

    def usages(self) -> list[tuple[bool, Usage]]:
        """(own?, usage) in the order the writer logs them."""
        out: list[tuple[bool, Usage]] = []
        for r in self.rounds:
            if r.usage is not None:
                out.append((True, r.usage))
            for _, sub in r.subturns:
                out += [(False, u) for _, u in sub.usages()]
        if self.final is not None and self.final_usage is not None:
            out.append((True, self.final_usage))
        return out


@dataclass
class Session:
    items: list[tuple]
    driver_scope: str | None
    variant: str  # G5, G4b (scopes reversed) or G4 (object scopes, reversed)
    max_chars: int
    ids: list[str] = field(default_factory=list)


# --- strategies ---------------------------------------------------------------------------------

text = st.text(max_size=12)
ident = st.text(min_size=1, max_size=8)
json_leaf = st.booleans() | st.integers(min_value=-(2 ** 70), max_value=2 ** 70) | \
    st.floats(allow_nan=False, allow_infinity=False) | text
json_value = st.recursive(json_leaf, lambda inner: st.lists(inner, max_size=3) |
                          st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
json_object = st.dictionaries(st.text(max_size=5), json_value, max_size=3)
attachment = st.builds(Attachment, text, st.integers(0, 2 ** 40), text, text)
attachments = st.lists(attachment, max_size=2).map(tuple)
usage = st.builds(Usage, *[st.integers(0, 10 ** 7)] * 4, text, text)


@st.composite
def rounds(draw, depth: int) -> Round:
    calls = tuple(draw(st.lists(st.builds(ToolCall, ident, text, json_object), min_size=1, max_size=2)))
    reply = AssistantMessage(draw(text), calls)
    results = ToolResults(tuple(ToolResult(c.id, draw(text), draw(attachments), draw(st.booleans())) for c in calls))
    subturns = []
    if depth < 2 and draw(st.integers(0, 4)) == 0:
        subturns.append((draw(st.integers(0, len(calls) - 1)), draw(turns(depth + 1))))
    return Round(reply, results, draw(st.none() | usage), subturns)


@st.composite
def turns(draw, depth: int = 0) -> TurnSpec:
    ending = draw(st.sampled_from(["answered", "answered", "interrupted", "failed", None]))
    final = draw(st.none() | st.builds(lambda t: AssistantMessage(t), text))
    return TurnSpec(
        user=UserInput(draw(text), draw(attachments)),
        rounds=draw(st.lists(rounds(depth), max_size=2 if depth == 0 else 1)),
        final=final,
        final_usage=draw(st.none() | usage),
        ending=ending,
        error=draw(text) if ending == "failed" else "",
    )


item = st.one_of(
    st.tuples(st.just("bracket"), json_value, st.none() | turns(), json_value, st.booleans()),
    st.tuples(st.just("fragment"), turns()),
    st.tuples(st.just("orphan"), json_value),
    st.tuples(st.just("noise"), st.text(min_size=1, max_size=10).map(lambda s: "app." + s), json_object),
)
sessions = st.builds(
    Session,
    items=st.lists(item, max_size=6),
    driver_scope=st.none() | text.map(lambda s: "app.session=" + s),
    variant=st.sampled_from(["G5", "G5", "G4b", "G4"]),
    max_chars=st.sampled_from([1_000_000, 40, 0]),
)


# --- writing ------------------------------------------------------------------------------------


def _write_turn(log: TurnLog, spec: TurnSpec, next_id) -> None:
    log.user(spec.user)
    for r in spec.rounds:
        if r.usage is not None:
            log.model_replied(r.usage.provider, r.usage.model)
            log.usage(r.usage)
        log.assistant(r.reply)
        for call_index, sub in r.subturns:
            _write_turn(log.nested(r.reply.calls[call_index].id, next_id()), sub, next_id)
        log.tool_results(r.results)
    if spec.final is not None:
        if spec.final_usage is not None:
            log.usage(spec.final_usage)
        log.assistant(spec.final)
    if spec.ending == "answered":
        log.answered()
    elif spec.ending == "interrupted":
        log.interrupted()
    elif spec.ending == "failed":
        log.failed(spec.error)


def write_session(path: Path, session: Session) -> None:
    counter = iter(range(1, 10 ** 9))
    next_id = lambda: f"{next(counter):016x}"  # noqa: E731
    with JsonlLogger(path, clock=lambda: 1788000000.0) as logger:
        root = logger.with_context(session.driver_scope) if session.driver_scope else logger
        journal = Journal(root)
        for it in session.items:
            if it[0] == "bracket":
                _, request, spec, response, closed = it
                journal.request(request)
                if spec is not None:
                    _write_turn(journal.turn(next_id()), spec, next_id)
                if closed:
                    journal.response(response)
            elif it[0] == "fragment":
                _write_turn(TurnLog(root, next_id()), it[1], next_id)
            elif it[0] == "orphan":
                journal.response(it[1])
            else:
                root.log(it[1], it[2])
    if session.variant != "G5":
        _convert(path, session.variant)


def _convert(path: Path, variant: str) -> None:
    """Rewrite as G4b (string scopes innermost first) or G4 (object scopes innermost first)."""
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        scopes = list(reversed(record["context"]))
        if variant == "G4":
            scopes = [dict([s.split("=", 1)]) for s in scopes]
        record["context"] = scopes
        out.append(json.dumps(record) + "\n")
    path.write_text("".join(out))


# --- what Harpe's rules say, from the model ------------------------------------------------------


def expected_records(session: Session) -> list[tuple]:
    records: list[tuple] = []
    span: list[TurnSpec] | None = None
    request: Any = None

    def close(response: Any) -> None:
        if not span:
            return
        own, *others = span
        usages = own.usages()
        nested = [u for is_own, u in usages if not is_own] + [u for t in others for _, u in t.usages()]
        messages = own.messages()
        outcome = own.ending or "interrupted"
        kept = messages if own.ending in ("answered", None) else ()
        records.append((request, response, own.user, kept, outcome, own.error,
                        tuple(u for is_own, u in usages if is_own), tuple(nested), own.ending is not None))

    for it in session.items:
        if it[0] == "bracket":
            _, request, spec, response, closed = it
            span = [spec] if spec is not None else []
            if closed:
                close(response)
                span = None
        elif it[0] == "fragment" and span is not None:
            span.append(it[1])  # an unbracketed turn inside an open bracket lands in its span
        elif it[0] == "orphan" and span is not None:
            close(it[1])
            span = None
    return records


def actual(records) -> list[tuple]:
    return [(r.request, r.response, r.data.input, r.data.messages, r.data.outcome, r.data.error, r.usage,
             r.nested_usage, r.terminated) for r in records]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("roundtrip")


class TestRoundTrip:
    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(session=sessions)
    def test_written_sessions_read_back(self, workdir, session):
        path = workdir / "session.jsonl"
        path.unlink(missing_ok=True)
        write_session(path, session)
        expected = expected_records(session)

        records = Journal.records(path)
        assert actual(records) == expected
        assert records.problems == ()
        assert actual(Journal.records(read_entries(path))) == expected  # the Entry path agrees

        history = []
        for r in expected:
            history.append(r[2])
            if r[4] == "answered":
                history.extend(r[3])
        assert Journal.load(path, max_chars=session.max_chars) == truncate(history, session.max_chars)

        conversation = load_harpe(path)
        turns = [(t.input, t.messages, t.outcome, t.error, t.usage) for t in conversation]
        assert turns == [(r[2], r[3], r[4], r[5], r[6]) for r in expected]

        again = workdir / "again.jsonl"
        again.unlink(missing_ok=True)
        back = load_harpe(to_journal(conversation, again))
        assert [(t.input, t.messages, t.outcome, t.error, t.usage) for t in back] == turns
