"""Codex's auto-compaction kept a message at a time (`harpe_lab.strategies.codex._compact._Folded`) sends
what the walk over the whole history sent: the same requests, distill requests, counts and
events, under random lifecycles (aborts, a distiller saying "not this time", images, empty
texts, user messages that read as summaries, one object given twice); and a compaction at every
request reads each message once, not the whole history again."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.messages import Message, Rendered, Usage, UserInput
from harpe_lab.protocol import ContextCompacted
from harpe_lab.strategies.codex import (
    COMPACT_PROMPT,
    SUMMARY_PREFIX,
    Compact,
    CompactContext,
    is_summary_message,
    summary_message,
)
from harpe_lab.strategies.codex._compact import _estimate, _select
from harpe_lab.strategies.harpe import distill_request
from tests._support.builders import call, image, reply, results


class _Walk(CompactContext):
    """The compaction as it was first written: the whole history walked at each one."""

    def _compact(self, count, phase):
        pending = self._pending
        history = self._transcript[:-1] if pending is not None else self._transcript
        if not history:
            return False
        earlier = [m for m in history if isinstance(m, UserInput) and is_summary_message(m.text)]
        folded = [m for m in history if not (isinstance(m, UserInput) and is_summary_message(m.text))]
        request = Rendered(COMPACT_PROMPT, (UserInput(distill_request(folded, self._summary if earlier else "")),))
        text = self._distill(request)
        if text is None:
            return False
        users = [m for m in folded if isinstance(m, UserInput)]
        kept: list[Message] = []
        for k, kept_text in _select([m.text for m in users], self.config.user_tokens):
            original = users[k]
            whole = kept_text is original.text and not original.attachments
            kept.append(original if whole else UserInput(kept_text))
        self._summary = text
        transcript = [*kept, UserInput(summary_message(text))]
        if pending is not None:
            transcript.append(pending)
        self._transcript = transcript
        self._fresh = True
        self._reported, self._replies, self._assistants = None, 0, 0
        self._after = sum(map(_estimate, kept)) + _estimate(transcript[len(kept)])
        kept_ids = {id(m) for m in kept}
        from harpe_lab.strategies.codex import Compacted

        self._events.emit(Compacted(count, self.config.limit, phase))
        self._events.emit(ContextCompacted(sum(id(m) not in kept_ids for m in history)))
        return True


class _Script:
    """A distiller replaying a list of replies (``None``: "not this time"), recording requests."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests: list[str] = []

    def __call__(self, rendered):
        self.requests.append(rendered.messages[0].text)
        return self.replies[(len(self.requests) - 1) % len(self.replies)]


_text = st.one_of(
    st.text(alphabet="ab é✓\n", max_size=40),
    st.just(""),
    st.builds(lambda t: SUMMARY_PREFIX + "\n" + t, st.text(alphabet="xy", max_size=5)),
)
_user = st.builds(lambda t, pics: UserInput(t, (image(),) * pics), _text, st.integers(0, 1))
_op = st.one_of(
    st.tuples(st.just("reply"), st.text(alphabet="rs ", max_size=20), st.booleans()),
    st.tuples(st.just("observe"), st.integers(0, 400), st.integers(0, 50)),
    st.tuples(st.just("user"), _user),
    st.tuples(st.just("again"), st.integers(0, 50)),  # a message given before, the same object
    st.tuples(st.just("compact")),
)
_turn = st.tuples(_user, st.lists(_op, max_size=12), st.sampled_from(["commit", "commit", "abort"]))


def _program(turns):
    """The drawn turns as calls on a context, with every message built once: both contexts
    are given the same objects."""
    out = []
    given = []
    n = 0
    for first, ops, end in turns:
        given.append(first)
        out.append(("begin", first))
        for op in ops:
            if op[0] == "reply":
                n += 1
                m = reply(op[1], call(f"c{n}")) if op[2] else reply(op[1])
                out.append(("append", m))
                given.append(m)
                if op[2]:
                    r = results((f"c{n}", op[1] * 3))
                    out.append(("append", r))
                    given.append(r)
            elif op[0] == "observe":
                out.append(("observe", Usage(input_tokens=op[1], output_tokens=op[2])))
            elif op[0] == "user":
                out.append(("append", op[1]))
                given.append(op[1])
            elif op[0] == "again":
                out.append(("append", given[op[1] % len(given)]))
            else:
                out.append(("compact",))
        out.append((end,))
    return out, {id(m) for m in given}


def _run(cls, config, program, given, replies):
    events: list = []
    distill = _Script(replies)
    ctx = cls("sys", config, distill=distill, on_event=events.append)
    sent = []

    def check():
        c = ctx.compact()
        # a message given is compared by identity, one the context wrote by value
        shape = [("given", id(m)) if id(m) in given else ("written", m) for m in c.rendered.messages]
        sent.append((shape, c.compacted, c.edits, ctx.tokens, ctx.summary))

    for op in program:
        if op[0] == "begin":
            ctx.begin_turn(op[1])
            check()
        elif op[0] == "append":
            ctx.append(op[1])
        elif op[0] == "observe":
            ctx.observe(op[1])
        elif op[0] == "compact":
            check()
        else:
            ctx.commit_turn() if op[0] == "commit" else ctx.abort_turn()
            check()
    seen = [(type(e).__name__, getattr(e, "dropped_messages", None), getattr(e, "tokens", None),
             getattr(e, "phase", None), getattr(e, "reply", None)) for e in events]
    return sent, seen, distill.requests, ctx.tokens


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(turns=st.lists(_turn, min_size=1, max_size=10), limit=st.integers(1, 300),
       user_tokens=st.integers(0, 12), reasoning=st.integers(0, 30),
       replies=st.lists(st.one_of(st.none(), st.text(alphabet="sum", max_size=8)), min_size=1, max_size=4))
def test_the_same_requests_as_the_walk_over_the_whole_history(turns, limit, user_tokens, reasoning, replies):
    config = Compact(window=1_000, token_limit=limit, user_tokens=user_tokens, reasoning=reasoning)
    program, given = _program(turns)
    assert _run(CompactContext, config, program, given, replies) == _run(_Walk, config, program, given, replies)


def test_a_compaction_at_every_request_reads_each_message_once(monkeypatch):
    # every user message is kept (user_tokens far above the limit), so a compaction runs at
    # every request over a history that keeps growing: each message is still classified,
    # measured and estimated once, not once per compaction
    import harpe_lab.strategies.codex._compact as codex

    calls = {"is_summary_message": 0, "approx_tokens": 0, "_estimate": 0}
    for name in calls:
        def counted(*args, _name=name, _f=getattr(codex, name)):
            calls[_name] += 1
            return _f(*args)

        monkeypatch.setattr(codex, name, counted)
    compactions = []
    ctx = Compact(window=1_000_000, token_limit=10, user_tokens=1_000_000).context(
        "sys", distill=lambda r: "s", on_event=compactions.append)
    turns = 300
    for t in range(turns):
        ctx.begin_turn(UserInput(f"task {t} " + "word " * 20))
        ctx.compact()
        ctx.append(reply("done", call(f"c{t}")))
        ctx.append(results((f"c{t}", "output " * 30)))
        ctx.observe(Usage(input_tokens=100, output_tokens=10))
        ctx.compact()
        ctx.commit_turn()
    folds = sum(isinstance(e, ContextCompacted) for e in compactions)
    assert folds == 2 * turns - 1  # all but the first turn's input alone
    messages = 3 * turns
    # each message once, plus what each compaction writes (its summary message)
    assert calls["is_summary_message"] <= messages + folds
    assert calls["approx_tokens"] <= messages + folds
    assert calls["_estimate"] <= messages + folds
    assert ctx.transcript[:-1] == tuple(UserInput(f"task {t} " + "word " * 20) for t in range(turns))


# texts made of what JSON escapes and of characters of one to four UTF-8 bytes, or any text
_JSONISH = st.text(st.sampled_from('"\\/\n\r\t\b\f\x00\x1f\x7f aé€😀')) | st.text()


@given(_JSONISH, st.text(max_size=12), st.lists(_JSONISH, max_size=3), st.integers(0, 2))
def test_an_items_estimate_is_its_serialized_json_at_four_bytes_a_token(text, call_id, outputs, images):
    """The estimate writes no JSON: it is the length of what serde_json would write for the
    item (compact, non-ASCII as it is, every string escaped)."""
    import json

    from harpe_lab.messages import ToolResult, ToolResults

    def tokens(item: dict) -> int:
        return -(-len(json.dumps(item, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
                 // 4)

    message = UserInput(text, tuple(image(f"{k}.png") for k in range(images)))
    item = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
    assert _estimate(message) == tokens(item) + -(-images * 340 // 4)
    given_results = ToolResults(tuple(ToolResult(f"{call_id}{k}", out) for k, out in enumerate(outputs)))
    assert _estimate(given_results) == sum(
        tokens({"type": "function_call_output", "call_id": f"{call_id}{k}", "output": out})
        for k, out in enumerate(outputs))
