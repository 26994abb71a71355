"""The cline strategies' memoized and incremental paths (harpe_lab.strategies.cline) send what
the whole-history computations they replace sent: every request of a driven lifecycle —
its messages, which of them are the previous request's own objects (the engine prices the
prompt cache by identity), the compaction flags and edits, the events — pinned by a digest
taken before those paths were written, on Cline-flavoured conversations (duplicate file
reads, file blocks, images, failing and empty summaries, aborted turns); and the pieces
checked against the plain computation they stand for."""

from __future__ import annotations

import hashlib
import json
import random
import zlib

import pytest

from harpe_lab.messages import AssistantMessage, Attachment, ToolCall, ToolResult, ToolResults, Usage, UserInput
from harpe_lab.strategies import cline as cl
from harpe_lab.summarize import ExtractiveDistiller
from tests._support.builders import call, image, reply, results, user

PATHS = ["/src/a.py", "/src/b.py", "b.py", "a.py", " /c.txt ", "/D.md", "/d.md"]
WORDS = "alpha beta gamma delta fix bug test run check file module error retry".split()


def _words(r: random.Random, n: int) -> str:
    return " ".join(r.choice(WORDS) for _ in range(n))


def _attachment(r: random.Random) -> Attachment:
    return Attachment("p.png", 10, r.choice(["image/png", "application/pdf"]), "/tmp/p.png")


def _prompt(r: random.Random) -> UserInput:
    parts = [_words(r, r.randint(0, 30)) if r.random() < 0.9 else "   "]
    for _ in range(r.choice([0, 0, 0, 1, 2])):
        parts.append(f'<file_content path="{r.choice(PATHS)}">\n{_words(r, r.randint(0, 200))}\n</file_content>')
    if r.random() < 0.1:
        parts.append(f'see <file_content path="{r.choice(PATHS)}">{_words(r, 5)}</file_content> there')
    return UserInput("\n\n".join(parts), tuple(_attachment(r) for _ in range(r.choice([0, 0, 0, 1]))))


def _call(r: random.Random, i: int) -> ToolCall:
    kinds = ["read_files", "paths", "editor", "apply_patch", "run_commands", "search", "read_file"]
    kind, cid = r.choice(kinds), f"c{i}"
    if kind == "read_files":
        return ToolCall(cid, kind, {"files": [{"path": r.choice(PATHS), "start_line": r.choice([1, 2.0, None]),
                                               "end_line": 9}]})
    if kind == "paths":
        return ToolCall(cid, "read_files", {"file_paths": [r.choice(PATHS), r.choice(PATHS)]})
    if kind in ("editor", "apply_patch", "read_file"):
        return ToolCall(cid, kind, {"path": r.choice(PATHS), "new_text": _words(r, 5)})
    if kind == "run_commands":
        return ToolCall(cid, kind, {"commands": ["ls -la " + "x" * r.randint(0, 150), "  "]})
    return ToolCall(cid, kind, {"query": _words(r, 3)})


def _result(r: random.Random, c: ToolCall) -> ToolResult:
    path, roll = (c.input.get("path") or r.choice(PATHS)).strip(), r.random()
    if c.name == "read_file" or roll < 0.2:  # the legacy extension's own formats
        content = f"[read_file for '{path}'] Result:" + (f"\n{_words(r, r.randint(0, 300))}" if r.random() < 0.8
                                                          else "")
    elif c.name == "editor" or roll < 0.3:
        content = f"--- diff\n-{r.randint(1, 500)}: {_words(r, 3)}\n+{r.randint(1, 500)}: {_words(r, 3)}"
        if r.random() < 0.3:
            content = json.dumps({"result": content})
    elif roll < 0.4:
        content = (f"[replace_in_file for '{path}'] Result:\nok\n<final_file_content path=\"{path}\">\n"
                   f"{_words(r, r.randint(0, 200))}\n</final_file_content>\nmore")
    else:
        content = _words(r, r.randint(0, 400))
    return ToolResult(c.id, content, (_attachment(r),) if r.random() < 0.05 else (), r.random() > 0.1)


def _turns(seed: int) -> list[tuple[UserInput, list, bool]]:
    """(prompt, the turn's messages, whether it is committed) for a Cline-flavoured session."""
    r = random.Random(seed)
    out, i = [], 0
    for _ in range(r.randint(20, 60)):
        msgs: list = []
        for _ in range(r.choice([0, 0, 1, 1, 2, 3, 5])):
            calls = []
            for _ in range(r.choice([1, 1, 2])):
                calls.append(_call(r, i))
                i += 1
            msgs.append(AssistantMessage(_words(r, r.randint(0, 20)) if r.random() < 0.7 else "", tuple(calls)))
            msgs.append(ToolResults(tuple(_result(r, c) for c in calls)))
        committed = r.random() < 0.9
        if committed:
            msgs.append(AssistantMessage(_words(r, r.randint(0, 60)) if r.random() < 0.9 else "  "))
        out.append((_prompt(r), msgs, committed))
    return out


class _Distiller:
    """Deterministic by its request: sometimes fails (Cline falls back to basic), sometimes
    returns nothing (the history stays), else an extractive summary."""

    def __init__(self) -> None:
        self.extractive = ExtractiveDistiller(max_chars=600)

    def __call__(self, rendered):
        h = zlib.crc32(rendered.messages[0].text.encode()) % 9
        if h == 0:
            raise RuntimeError("the summarizer failed")
        return "  " if h == 1 else "short\n## Files\nnone" if h == 2 else self.extractive(rendered)


def _content(m) -> tuple:
    if isinstance(m, UserInput):
        return ("user", m.text, tuple(a.mime for a in m.attachments))
    if isinstance(m, AssistantMessage):
        return ("assistant", m.text, tuple((c.id, c.name, json.dumps(c.input, sort_keys=True)) for c in m.calls))
    return ("results", tuple((x.id, x.content, x.success, tuple(a.mime for a in x.attachments)) for x in m.results))


def _drive(ctx, turns) -> str:
    """Every request of the lifecycle, and the events, as one digest."""
    records: list = []
    previous: list = []

    def request() -> None:
        nonlocal previous
        c = ctx.compact()
        sent = list(c.rendered.messages)
        where = {id(m): k for k, m in enumerate(previous)}  # previous is held: its ids are its own
        records.append((c.compacted, c.edits, tuple(map(_content, sent)), tuple(where.get(id(m), -1) for m in sent),
                        getattr(ctx, "summary", "")))
        previous = sent

    for prompt, msgs, committed in turns:
        ctx.begin_turn(prompt)
        request()
        for m in msgs:
            if isinstance(m, AssistantMessage):
                # the usage the legacy manager reads: about a token for 4 characters sent
                size = sum(len(json.dumps(_content(x))) for x in previous)
                ctx.observe(Usage(input_tokens=size // 4, output_tokens=len(m.text) // 4))
                ctx.append(m)
            else:
                ctx.append(m)
                request()
        ctx.commit_turn() if committed else ctx.abort_turn()
    return hashlib.sha256(repr(records).encode()).hexdigest()


def _digest(kind: str, seed: int, trigger: int, max_output: int | None = None) -> str:
    events: list = []
    tools = ({"type": "function", "function": {"name": "read_files", "parameters": {}}},)
    if kind == "basic":
        ctx = cl.BasicCompaction(max_input=200_000, trigger=trigger, max_output=max_output).context(
            "You are Cline.", tools=tools, on_event=events.append)
    elif kind == "agentic":
        ctx = cl.AgenticCompaction(max_input=200_000, trigger=trigger, max_output=max_output,
                                   preserve_recent_tokens=trigger // 3).context(
            "You are Cline.", tools=tools, distill=_Distiller(), on_event=events.append)
    else:
        ctx = cl.LegacyContextManager(context_window=200_000, max_allowed=trigger).context(
            "You are Cline.", on_event=events.append)
    requests = _drive(ctx, _turns(seed))
    return hashlib.sha256((requests + repr(events)).encode()).hexdigest()[:16]


# Taken with cline.py as it was before its memoized paths (every compaction recomputing over
# the whole history): the requests must not change. (Basic 1 and 2 taken again when the
# projection began to keep a message it cuts nothing of as itself: the same contents, checked
# request by request, where the copies had been new objects.)
PINNED = {
    ("basic", 1, 1500, None): "4e7e68e2b41fe890",
    ("basic", 2, 4000, 1000): "8611046e8fc9cca9",
    ("basic", 3, 12000, None): "8136c9cfd85451d8",
    ("agentic", 1, 1500, None): "0ad1a703ce6f5a48",
    ("agentic", 2, 4000, 1000): "5c33d890042f9b61",
    ("agentic", 3, 12000, None): "d509c91f1cb59466",
    ("legacy", 1, 1500, None): "8e6b3e74bad72d76",
    ("legacy", 2, 4000, None): "5efa6d6e3207af7f",
    ("legacy", 3, 12000, None): "54473403aed94a3b",
}


@pytest.mark.parametrize("case", sorted(PINNED, key=repr), ids=lambda c: "-".join(map(str, c)))
def test_every_request_is_what_it_was(case):
    assert _digest(*case) == PINNED[case]


def _merge_unique_fold(messages, summaries) -> tuple[list[str], list[str]]:
    """``extractFileOps`` as Cline writes it: ``mergeUnique`` after every path."""
    read: list[str] = []
    modified: list[str] = []
    for m in messages:
        earlier = summaries.get(id(m))
        if earlier is not None and earlier.message is m:
            read, modified = cl._merge_unique(read, earlier.read), cl._merge_unique(modified, earlier.modified)
        elif isinstance(m, UserInput):
            for b in cl._blocks(m.text):
                if b[0] == "file":
                    read = cl._merge_unique(read, [b[1]])
        elif isinstance(m, AssistantMessage):
            for c in m.calls:
                if c.name == "read_files":
                    read = cl._merge_unique(read, cl._collect_paths(c.input))
                elif c.name in ("editor", "apply_patch"):
                    modified = cl._merge_unique(modified, cl._collect_paths(c.input))
    return read, modified


@pytest.mark.parametrize("seed", range(6))
def test_file_operations_are_cline_s_merge_unique(seed):
    msgs = [m for prompt, turn, _ in _turns(seed) for m in (prompt, *turn)]
    summary = UserInput(cl.summary_message("s"))
    earlier = cl._Summary(summary, "s", (" /x ", "/A", "/a"), ("/b",))
    msgs.insert(len(msgs) // 2, summary)
    summaries = {id(summary): earlier}
    assert cl._file_ops(msgs, summaries) == _merge_unique_fold(msgs, summaries)
    assert cl._file_ops(msgs, {}) == _merge_unique_fold(msgs, {})
    assert cl._file_ops(msgs[: len(msgs) // 3], summaries) == _merge_unique_fold(msgs[: len(msgs) // 3], summaries)


def test_blocks_are_a_fresh_list_each_time():
    text = 'a\n\n<file_content path="/x">\nq\n</file_content>'
    first = cl._blocks(text)
    first.append(("text", "mine"))
    assert cl._blocks(text) == [("text", "a"), ("file", "/x", "q")]


def test_a_rebuilt_prompt_weighs_what_its_json_weighs():
    for text, attachments in [("hi", ()), ('a\n\n<file_content path="/x">\nq\n</file_content>', ()),
                              ("é" * 5, (Attachment("p.png", 1, "image/png", "/p.png"),))]:
        weights = {cl._message_chars(UserInput(text, attachments)) for _ in range(3)}
        assert weights == {cl._js_len(cl._json(cl._message_json(UserInput(text, attachments))))}
        assert cl._without_attachments_chars(UserInput(text, attachments)) == \
            cl._js_len(cl._json(cl._message_json(cl._without_attachments(UserInput(text, attachments)))))


@pytest.mark.parametrize("seed", range(4))
def test_the_projection_given_the_weights_is_the_projection(seed):
    msgs = [m for prompt, turn, _ in _turns(seed) for m in (prompt, *turn)]
    for target in (50, 500, 5_000, 10**6):
        weights = [cl.estimate_message(m) for m in msgs]
        assert cl._project(msgs, list(range(len(msgs))), target, weights) == \
            cl._project(msgs, list(range(len(msgs))), target)


def _linked_shapes(seed: int) -> list:
    """Messages whose tool ids link them in every way a transcript can and some it cannot:
    calls answered later, never, twice or before they were made, one id in two replies."""
    r = random.Random(seed)
    ids = [f"t{k}" for k in range(8)]
    out = []
    for _ in range(r.randint(1, 25)):
        kind = r.random()
        if kind < 0.3:
            out.append(UserInput(_words(r, r.randint(0, 3))))
        elif kind < 0.6:
            out.append(AssistantMessage(_words(r, 2), tuple(ToolCall(i, "bash") for i in r.sample(ids, r.randint(0, 2)))))
        else:
            out.append(ToolResults(tuple(ToolResult(i, "") for i in r.sample(ids, r.randint(0, 2)))))
    return out


def _plain_tail(messages) -> int:
    answered = {r.id for m in messages if isinstance(m, ToolResults) for r in m.results}
    return next((k for k in range(len(messages) - 1, -1, -1) if isinstance(messages[k], AssistantMessage)
                 and any(c.id not in answered for c in messages[k].calls)), len(messages))


def _plain_drops(messages, ests, target):
    """project.ts's loop as it reads: every group, and the first and latest user message
    and the live tail, found again after each drop."""
    from harpe_lab.strategies.cline._projection import _first_user, _latest_user, _tool_ids

    messages, ests, total, k = list(messages), list(ests), sum(ests), 0
    while k < len(messages) and total > target:
        ids = [_tool_ids(m) for m in messages]
        first, latest, tail = _first_user(messages), _latest_user(messages), _plain_tail(messages)
        if k in (first, latest):
            k += 1
            continue
        closure, queue = {k}, [k]
        while queue:
            j = queue.pop()
            for other, theirs in enumerate(ids):
                if other not in closure and ids[j] & theirs:
                    closure.add(other)
                    queue.append(other)
        if first in closure or latest in closure or max(closure) >= tail:
            k += 1
            continue
        total -= sum(ests[j] for j in closure)
        messages = [m for j, m in enumerate(messages) if j not in closure]
        ests = [e for j, e in enumerate(ests) if j not in closure]
    return messages, total <= target


@pytest.mark.parametrize("seed", range(300))
def test_the_oldest_messages_dropped_at_once_are_those_dropped_one_by_one(seed):
    from harpe_lab.strategies.cline._projection import _drop_oldest, _latest_user, _protected_tail

    msgs = _linked_shapes(seed)
    assert _protected_tail(msgs) == _plain_tail(msgs)
    r = random.Random(seed)
    ests = [r.randint(0, 9) for _ in msgs]
    for target in (-1, 0, sum(ests) // 2, sum(ests) - 1, sum(ests)):
        kept, origin, met = _drop_oldest(msgs, list(range(len(msgs))), ests, target, _latest_user(msgs),
                                         _protected_tail(msgs))
        assert (kept, met) == _plain_drops(msgs, ests, target)
        assert [msgs[o] for o in origin] == kept


def test_a_legacy_group_that_grows_is_read_again():
    ctx = cl.LegacyContextManager(max_allowed=10**6).context("s")
    ctx.begin_turn(UserInput("task"))
    ctx.append(AssistantMessage("", (ToolCall("c1", "bash"),)))
    ctx.append(ToolResults((ToolResult("c1", "one"),)))
    assert [b.result for b in ctx._blocks(2)] == [0]
    ctx.append(UserInput("and more"))  # the same provider message: a user message after results
    assert [(b.message, b.result) for b in ctx._blocks(2)] == [(2, 0), (3, None)]
    ctx.abort_turn()
    assert [(b.message, b.result) for b in ctx._blocks(0)] == [(0, None)]


@pytest.mark.parametrize("seed", range(12))
def test_a_settled_prefix_is_carried_as_the_whole_compaction_would_leave_it(seed, monkeypatch):
    """Basic compaction runs after the prefix its last output settled (`settled_until`):
    every request, and which of its messages are the previous request's own, is what
    compacting the whole history at every compaction sends."""
    from harpe_lab.strategies.cline import _sdk

    trigger = (1500, 3000, 8000)[seed % 3]
    carried: list[int] = []
    after = _sdk._basic_after

    def counted(*args, **kwargs):
        out = after(*args, **kwargs)
        carried.append(out[1])
        return out

    def digest() -> str:
        events: list = []
        ctx = cl.BasicCompaction(max_input=200_000, trigger=trigger, max_output=(None, 500)[seed % 2]).context(
            "You are Cline.", on_event=events.append)
        return _drive(ctx, _turns(100 + seed)) + repr(events)

    monkeypatch.setattr(_sdk, "_basic_after", counted)
    settled = digest()
    assert any(carried), "no compaction carried a settled prefix: the test does not reach the path"
    monkeypatch.setattr(_sdk, "settled_until", lambda *args: 0)
    assert settled == digest()


def _after_settled(msgs, marks, target=10**6):
    ests = [cl.estimate_message(m) for m in msgs]
    return cl._basic_after(msgs, marks, cl.settled_until(msgs, marks), target=target, trigger=10**6, ests=ests)[0]


def test_a_frozen_image_is_not_settled_the_next_compaction_drops_it():
    # a live tail keeps its images through a compaction; once answered they go at the next
    P = cl._PRESERVED
    shot = ToolResults((ToolResult("c1", "saw it", (image(),)),))
    msgs = [user("first"), reply("", call("c1")), shot, reply("done"), user("second"), reply("", call("c2")),
            results(("c2", "x"))]
    marks = [0, P, P, P, 0, 0, 0]
    whole = cl._basic(msgs, marks, target=10**6, trigger=10**6)
    assert whole is not None and not any(r.attachments for m in whole[0] if isinstance(m, ToolResults)
                                         for r in m.results)
    assert _after_settled(msgs, marks) == whole


def test_an_image_after_the_settled_prefix_is_dropped_as_the_whole_compaction_drops_it():
    P = cl._PRESERVED
    msgs = [user("first"), reply("done"), user("second"), reply("", call("c2")),
            ToolResults((ToolResult("c2", "out", (image(),)),)), reply("", call("c3")), results(("c3", "more"))]
    marks = [0, P, 0, 0, 0, 0, 0]
    assert cl.settled_until(msgs, marks) == 2
    whole = cl._basic(msgs, marks, target=10**6, trigger=10**6)
    assert whole is not None and whole[0][4] != msgs[4]  # the image was dropped
    assert _after_settled(msgs, marks) == whole
