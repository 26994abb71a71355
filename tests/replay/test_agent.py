"""Live sessions: `harpe_lab.agent.ask` and `chat` through the real litellm client against the
local OpenAI-compatible server, with the journal read back and replayed."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Literal, Optional

import pytest

from harpe_lab.agent import (
    AgentError,
    AssistantText,
    Brain,
    ContextCompacted,
    Interact,
    ModelRequestEnded,
    ModelRequestStarted,
    Tool,
    ToolBudgetReached,
    TransientError,
    answer_text,
    ask,
    chat,
    current_logger,
    retry_delay,
)
from harpe_lab.cli.chat import cli_chat
from harpe_lab.strategies.harpe import SUMMARY_HEADER, FullContext, SummarizingContext, WindowedContext
from harpe_lab.importers.harpe import load_harpe
from harpe_lab.journal import Journal, JsonlLogger
from harpe_lab.messages import AssistantMessage, UserInput, from_openai, strip_harpe_keys, to_openai
from harpe_lab.replay import replay
from harpe_lab.tokens import ApproxCounter
from tests._support.openai_server import Reply

KEY = "sk-test-7f3a9c2e5b1d4f60"
SYSTEM = "You are terse."


# --- builders ---------------------------------------------------------------------------------


def brain(server, **kwargs) -> Brain:
    return Brain("openai/test-model", api_base=server.base_url, api_key=KEY, **kwargs)


class Recorder(Interact):
    """An Interact that records events and retry delays and never really waits."""

    def __init__(self) -> None:
        self.events: list = []
        self.delays: list[float] = []
        super().__init__(self.events.append, sleep=self.delays.append)

    def kinds(self) -> list[str]:
        return [type(e).__name__ for e in self.events]


def lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def events(path: Path, prefix: str = "harpe.") -> list[str]:
    return [r["event"] for r in lines(path) if r["event"].startswith(prefix)]


def logical_bodies(path: Path, bodies: list[dict]) -> list[dict]:
    """The server's request bodies without the attempts the journal says were retried."""
    retried: set[int] = set()
    sent = -1
    for r in lines(path):
        if r["event"] == "harpe.model.sent":
            sent += 1
        elif r["event"] == "harpe.model.retried":
            retried.add(sent)
    assert sent + 1 == len(bodies), "one harpe.model.sent per request the server received"
    return [b for i, b in enumerate(bodies) if i not in retried]


def assert_replay_matches(path: Path, factory, bodies: list[dict], *, tools=(), counter=None) -> None:
    """Replaying the journal under ``factory`` renders exactly what the server received."""
    conversation = load_harpe(path)
    result = replay(conversation, factory, counter=counter or ApproxCounter(), tools=[Tool.from_function(t).schema for t in tools])
    expected = logical_bodies(path, bodies)
    assert len(result) == len(expected)
    for i, body in enumerate(expected):
        assert strip_harpe_keys(to_openai(result.rendered(i))) == body["messages"], f"request {i}"


def write_turn(logger: JsonlLogger, text: str, **kwargs):
    journal = Journal(logger)
    journal.request({"text": text})
    try:
        return ask(text, logger=logger, **kwargs)
    finally:
        journal.response("turnEnd")


def add(a: int, b: int = 2) -> int:
    """Add two integers.

    The sum is exact.

    Args:
        a: the first
            addend.
        b (int): the second addend.
    """
    return a + b


def lookup(key: str) -> str:
    """Look a key up."""
    return f"value of {key}"


# --- tools ------------------------------------------------------------------------------------


class TestToolSchema:
    def test_signature_annotations_defaults_and_docstring(self):
        schema = Tool.from_function(add).schema
        assert schema == {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "a": {"type": "integer", "description": "the first addend."},
                        "b": {"type": "integer", "description": "the second addend.", "default": 2},
                    },
                    "required": ["a"],
                },
            },
        }

    def test_optional_literal_list_dict(self):
        def pick(mode: Literal["fast", "slow"], tags: list[str], weights: dict[str, float],
                 note: Optional[str] = None, flag: bool = False, ratio: float = 0.5) -> None:
            """Pick."""

        props = Tool.from_function(pick).parameters["properties"]
        assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
        assert props["tags"] == {"type": "array", "items": {"type": "string"}}
        assert props["weights"] == {"type": "object", "additionalProperties": {"type": "number"}}
        assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
        assert props["flag"] == {"type": "boolean", "default": False}
        assert props["ratio"] == {"type": "number", "default": 0.5}
        assert Tool.from_function(pick).parameters["required"] == ["mode", "tags", "weights"]

    def test_undescribable_tools_are_rejected_with_the_fix(self):
        with pytest.raises(AgentError, match="tool name"):
            Tool.from_function(lambda x: x)
        assert Tool.from_function(lambda x: x, name="echo").name == "echo"

        def bad(x: complex) -> None:
            pass

        with pytest.raises(AgentError, match="parameter 'x'.*complex"):
            Tool.from_function(bad)
        with pytest.raises(AgentError, match="two tools are named 'add'"):
            ask("x", brain=Brain("openai/x"), tools=[add, add])


# --- one turn against the server --------------------------------------------------------------


class TestAnswer:
    def test_direct_answer_is_logged_with_usage(self, openai_server, tmp_path):
        openai_server.script(Reply.text("Four.", prompt_tokens=120, completion_tokens=3, cached_tokens=100))
        path = tmp_path / "j.jsonl"
        ctx = FullContext(SYSTEM)
        with JsonlLogger(path) as logger:
            data = write_turn(logger, "2+2?", brain=brain(openai_server), context=ctx)
        assert data.outcome == "answered" and answer_text(data) == "Four."
        assert openai_server.requests[0]["messages"] == [
            {"role": "system", "content": SYSTEM}, {"role": "user", "content": "2+2?"}]
        assert openai_server.requests[0]["max_tokens"] == 8192 and "tools" not in openai_server.requests[0]
        assert events(path) == ["harpe.turn.request", "harpe.turn.message", "harpe.model.sent",
                                "harpe.model.replied", "harpe.metering.usage", "harpe.turn.message",
                                "harpe.turn.answered", "harpe.turn.response"]
        [record] = Journal.records(path)
        assert record.data == data
        [usage] = record.usage
        assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (120, 3, 100)
        assert (usage.provider, usage.model) == ("openai", "test-model")
        assert ctx.transcript == (UserInput("2+2?"), AssistantMessage("Four."))

    def test_tool_rounds_grow_the_provider_session(self, openai_server, tmp_path):
        openai_server.script(
            Reply.tools(("call_1", "add", {"a": 1, "b": 2}), content="Adding."),
            Reply.tools(("call_2", "lookup", {"key": "k"}), ("call_3", "add", {"a": 5})),
            Reply.text("Done."),
        )
        path = tmp_path / "j.jsonl"
        interact = Recorder()
        with JsonlLogger(path) as logger:
            data = write_turn(logger, "go", brain=brain(openai_server), tools=[add, lookup],
                              context=FullContext(SYSTEM), interact=interact)
        assert data.outcome == "answered"
        assert [type(m).__name__ for m in data.messages] == ["AssistantMessage", "ToolResults"] * 2 + [
            "AssistantMessage"]
        assert [r.content for r in data.messages[3].results] == ["value of k", "7"]
        first, second, third = (b["messages"] for b in openai_server.requests)
        reply1 = {"role": "assistant", "content": "Adding.", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]}
        assert second == first + [reply1, {"role": "tool", "tool_call_id": "call_1", "content": "3"}]
        assert third[: len(second)] == second and len(third) == len(second) + 3
        assert openai_server.requests[0]["tools"] == [Tool.from_function(add).schema,
                                                      Tool.from_function(lookup).schema]
        assert AssistantText("Adding.") in interact.events
        assert interact.kinds().count("ToolFinished") == 3
        assert Journal.records(path)[0].data == data
        assert_replay_matches(path, lambda: FullContext(SYSTEM), openai_server.requests, tools=[add, lookup])

    def test_unknown_tool_and_failing_handler_get_harpes_texts(self, openai_server, tmp_path):
        def broken(x: int) -> str:
            """Always fails."""
            raise RuntimeError("disk on fire")

        openai_server.script(
            Reply.tools(("c1", "nope", {}), ("c2", "broken", {"x": 1}), ("c3", "add", {"b": 1})),
            Reply.text("ok"),
        )
        data = ask("x", brain=brain(openai_server), tools=[broken, add])
        results = data.messages[1].results
        assert [(r.content, r.success) for r in results] == [
            ("Unknown tool: nope", False),
            ("The tool 'broken' failed: disk on fire", False),
            ("The tool 'add' failed: missing a required argument: 'a'", False),
        ]
        assert [m["content"] for m in openai_server.requests[1]["messages"] if m["role"] == "tool"] == [
            r.content for r in results]

    def test_no_tools_offered_once_the_round_limit_is_reached(self, openai_server):
        openai_server.script(Reply.tools(("c1", "add", {"a": 1})), Reply.text("fine"))
        interact = Recorder()
        data = ask("x", brain=brain(openai_server), tools=[add], max_tool_rounds=1, interact=interact)
        assert data.outcome == "answered"
        assert "tools" in openai_server.requests[0] and "tools" not in openai_server.requests[1]
        assert ToolBudgetReached(1) in interact.events

    def test_without_a_context_each_call_starts_fresh(self, openai_server):
        ask("first", brain=brain(openai_server))
        ask("second", brain=brain(openai_server))
        assert openai_server.requests[1]["messages"] == [{"role": "user", "content": "second"}]

    def test_attachments_are_logged_and_a_missing_file_logs_nothing(self, openai_server, tmp_path):
        doc = tmp_path / "notes.txt"
        doc.write_text("hello")
        path = tmp_path / "j.jsonl"
        with JsonlLogger(path) as logger:
            data = ask("see file", brain=brain(openai_server), logger=logger, attachments=[doc])
            [attachment] = data.input.attachments
            assert (attachment.name, attachment.size, attachment.mime, attachment.path) == (
                "notes.txt", 5, "text/plain", str(doc.resolve()))
            before = path.read_text()
            with pytest.raises(AgentError, match="not a file"):
                ask("x", brain=brain(openai_server), logger=logger, attachments=[tmp_path / "missing.pdf"])
            assert path.read_text() == before
        assert lines(path)[0]["fields"]["attachments"] == [
            {"name": "notes.txt", "size": 5, "mime": "text/plain", "path": str(doc.resolve())}]


# --- retries --------------------------------------------------------------------------------------


class TestRetries:
    def test_backoff_schedule(self):
        assert [retry_delay(a) for a in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]

    def test_two_server_errors_then_success(self, openai_server, tmp_path):
        openai_server.script(Reply.error(500), Reply.error(503), Reply.text("made it"))
        path = tmp_path / "j.jsonl"
        interact = Recorder()
        with JsonlLogger(path) as logger:
            data = write_turn(logger, "hi", brain=brain(openai_server), context=FullContext(SYSTEM),
                              interact=interact)
        assert data.outcome == "answered" and answer_text(data) == "made it"
        assert interact.delays == [1.0, 2.0]
        assert openai_server.request_count == 3
        model_events = [r for r in lines(path) if r["event"].startswith("harpe.model.")]
        assert [r["event"] for r in model_events] == [
            "harpe.model.sent", "harpe.model.failed", "harpe.model.retried",
            "harpe.model.sent", "harpe.model.failed", "harpe.model.retried",
            "harpe.model.sent", "harpe.model.replied"]
        failed, retried = model_events[1]["fields"], model_events[2]["fields"]
        assert failed["retryable"] is True and failed["error"].startswith("InternalServerError: ")
        assert retried == {"warning": failed["error"], "attempt": 1, "retryInSeconds": 1.0}
        assert model_events[5]["fields"]["attempt"] == 2 and model_events[5]["fields"]["retryInSeconds"] == 2.0
        assert interact.kinds().count("AssistantStreamReset") == 2
        assert [e.attempt for e in interact.events if isinstance(e, ModelRequestStarted)] == [0, 1, 2]
        assert len(Journal.records(path)[0].usage) == 1
        assert_replay_matches(path, lambda: FullContext(SYSTEM), openai_server.requests)

    def test_retry_after_is_honoured_for_real(self, openai_server):
        openai_server.script(Reply.error(429, headers={"Retry-After": "1"}), Reply.text("ok"))
        interact = Interact()
        seen: list = []
        interact.on_event = seen.append
        started = time.monotonic()
        data = ask("x", brain=brain(openai_server), interact=interact)
        waited = time.monotonic() - started
        assert data.outcome == "answered"
        assert TransientError("RateLimitError: OpenAIException - error", 1, 1.0) in seen
        assert 1.0 <= waited < 5

    def test_retry_after_is_not_capped(self, openai_server):
        openai_server.script(Reply.error(429, headers={"Retry-After": "45"}), Reply.text("ok"))
        interact = Recorder()
        assert ask("x", brain=brain(openai_server), interact=interact).outcome == "answered"
        assert interact.delays == [45.0]

    def test_a_timeout_is_transient(self, openai_server):
        openai_server.script(Reply(body=Reply.completion("late"), delay=1.0), Reply.text("on time"))
        interact = Recorder()
        data = ask("x", brain=brain(openai_server, timeout=0.3), interact=interact)
        assert answer_text(data) == "on time" and interact.delays == [1.0]

    def test_gives_up_after_max_retries(self, openai_server, tmp_path):
        openai_server.script(*[Reply.error(502)] * 3)
        path = tmp_path / "j.jsonl"
        interact = Recorder()
        ctx = FullContext(SYSTEM)
        with JsonlLogger(path) as logger:
            data = write_turn(logger, "hi", brain=brain(openai_server), context=ctx, max_retries=2,
                              interact=interact)
        assert data.outcome == "failed" and data.error.startswith("BadGatewayError") and not data.messages
        assert openai_server.request_count == 3 and interact.delays == [1.0, 2.0]
        gave_up = [r["fields"] for r in lines(path) if r["event"] == "harpe.model.gaveUp"]
        assert gave_up == [{"error": data.error, "retries": 2}]
        assert ctx.transcript == (UserInput("hi"),)

    def test_a_fatal_error_gives_up_at_once(self, openai_server, tmp_path):
        openai_server.script(Reply.error(401, f"Incorrect API key provided: {KEY}"))
        path = tmp_path / "j.jsonl"
        ctx = FullContext(SYSTEM, [UserInput("earlier"), AssistantMessage("yes")])
        interact = Recorder()
        with JsonlLogger(path) as logger:
            data = write_turn(logger, "hi", brain=brain(openai_server), context=ctx, interact=interact)
        assert data.outcome == "failed" and openai_server.request_count == 1 and interact.delays == []
        assert data.error == "AuthenticationError: OpenAIException - Incorrect API key provided: ***"
        by_event = {r["event"]: r["fields"] for r in lines(path)}
        assert by_event["harpe.model.failed"]["retryable"] is False
        assert by_event["harpe.model.gaveUp"] == {"error": data.error, "retries": 0}
        assert by_event["harpe.turn.failed"] == {"error": data.error}
        [record] = Journal.records(path)
        assert (record.outcome, record.data.error, record.data.messages) == ("failed", data.error, ())
        assert ctx.transcript == (UserInput("earlier"), AssistantMessage("yes"), UserInput("hi"))
        assert KEY not in path.read_text()

    def test_cancelling_during_the_back_off_interrupts(self, openai_server):
        openai_server.script(Reply.error(500))
        interact = Interact(sleep=lambda s: interact.cancel())
        data = ask("x", brain=brain(openai_server), interact=interact)
        assert data.outcome == "interrupted" and openai_server.request_count == 1


# --- cancellation --------------------------------------------------------------------------------


class TestCancellation:
    def test_a_tool_that_cancels_ends_the_turn_interrupted(self, openai_server, tmp_path):
        interact = Recorder()

        def stop(reason: str) -> str:
            """Stop the turn."""
            interact.cancelled = True
            return "stopping"

        openai_server.script(Reply.tools(("c1", "stop", {"reason": "user asked"})))
        path = tmp_path / "j.jsonl"
        ctx = FullContext(SYSTEM)
        with JsonlLogger(path) as logger:
            data = write_turn(logger, "go", brain=brain(openai_server), tools=[stop], context=ctx,
                              interact=interact)
        assert data.outcome == "interrupted" and data.messages == ()
        assert ctx.transcript == (UserInput("go"),)
        roles = [r["fields"].get("role") for r in lines(path) if r["event"] == "harpe.turn.message"]
        assert roles == ["user", "assistant"]  # the round's results are not logged
        assert events(path, "harpe.turn.")[-2:] == ["harpe.turn.interrupted", "harpe.turn.response"]
        assert Journal.records(path)[0].outcome == "interrupted"

    def test_ctrl_c_in_a_tool_interrupts(self, openai_server):
        def slow() -> str:
            """Takes a while."""
            raise KeyboardInterrupt

        openai_server.script(Reply.tools(("c1", "slow", {})))
        ctx = FullContext("")
        data = ask("go", brain=brain(openai_server), tools=[slow], context=ctx)
        assert data.outcome == "interrupted" and ctx.transcript == (UserInput("go"),)

    def test_a_reply_arriving_after_cancel_is_discarded_but_its_tokens_are_logged(self, openai_server, tmp_path):
        interact = Interact(lambda e: interact.cancel() if isinstance(e, ModelRequestEnded) else None)
        path = tmp_path / "j.jsonl"
        with JsonlLogger(path) as logger:
            data = ask("go", brain=brain(openai_server), logger=logger, interact=interact)
        assert data.outcome == "interrupted"
        assert events(path) == ["harpe.turn.message", "harpe.model.sent", "harpe.model.replied",
                                "harpe.metering.usage", "harpe.turn.interrupted"]


# --- sessions, journals and replay ---------------------------------------------------------------


class TestSessions:
    def test_a_chat_with_every_outcome_replays_to_the_same_requests(self, openai_server, tmp_path):
        interact = Recorder()
        openai_server.script(
            Reply.text("Hello."),  # turn 0: answered directly
            Reply.tools(("c1", "add", {"a": 2, "b": 3})), Reply.tools(("c2", "lookup", {"key": "x"})),
            Reply.text("5 and x."),  # turn 1: two tool rounds
            Reply.error(500), Reply.error(500), Reply.text("Recovered."),  # turn 2: retried
            Reply.error(401),  # turn 3: failed
            Reply.tools(("c3", "stop", {})),  # turn 4: interrupted by the tool
            Reply.text("Still here."),  # turn 5
        )

        def stop() -> str:
            """Stop."""
            interact.cancel()
            return "ok"

        path = tmp_path / "session.jsonl"
        factory = lambda history=(): FullContext(SYSTEM, history)  # noqa: E731
        inputs = ["hi", "sum and look", "again", "denied", "stop now", "still?"]
        with chat(path, brain=brain(openai_server), context=factory, tools=[add, lookup, stop],
                  interact=interact) as session:
            outcomes = [session.say(text).outcome for text in inputs]
        assert outcomes == ["answered", "answered", "answered", "failed", "interrupted", "answered"]
        records = Journal.records(path)
        assert [r.outcome for r in records] == outcomes
        assert [r.request for r in records] == [{"text": t} for t in inputs]
        assert {r.response for r in records} == {"turnEnd"}
        assert [len(r.usage) for r in records] == [1, 3, 1, 0, 1, 1]
        assert Journal.load(path) == list(session.context.transcript)
        assert KEY not in path.read_text()
        assert_replay_matches(path, factory, openai_server.requests, tools=[add, lookup, stop])

    def test_summarizing_context_compacts_mid_session_and_replays_identically(self, openai_server, tmp_path):
        counter = ApproxCounter()
        filler = "lorem ipsum dolor sit amet " * 8

        def counted(make):
            """A server reply whose prompt_tokens the replay's counter would also report."""
            def reply(body: dict) -> Reply:
                n = counter.count_rendered(from_openai(body["messages"]), body.get("tools", ()))
                return make(prompt_tokens=n)
            return reply

        def distill(rendered) -> str:
            return f"summary of {len(rendered.messages[0].text)} chars"

        def factory(history=()):
            return SummarizingContext(SYSTEM, history, high_water_tokens=420, low_water_chars=700, distill=distill)

        for k in range(5):
            openai_server.script(counted(lambda k=k, **u: Reply.tools((f"c{k}", "lookup", {"key": filler[:40]}), **u)),
                                 counted(lambda **u: Reply.text("noted " + filler, **u)))
        interact = Recorder()
        path = tmp_path / "s.jsonl"
        with chat(path, brain=brain(openai_server), context=factory, tools=[lookup], interact=interact) as session:
            for k in range(5):
                assert session.say(f"turn {k}: {filler}").outcome == "answered"
        kinds = interact.kinds()
        compactions = [i for i, kind in enumerate(kinds) if kind == "ContextCompacted"]
        assert len(compactions) >= 2
        assert all(interact.events[i].dropped_messages > 0 for i in compactions)
        assert all(isinstance(interact.events[i], ContextCompacted) for i in compactions)
        # at least one compaction came between a tool round and the next model call of a turn
        assert any(kinds[i - 1] == "ToolFinished" for i in compactions)
        summarized = [b for b in openai_server.requests if SUMMARY_HEADER in b["messages"][0]["content"]]
        assert summarized and len(summarized) < len(openai_server.requests)
        assert_replay_matches(path, factory, openai_server.requests, tools=[lookup], counter=counter)

    def test_windowed_context_cuts_at_turn_start_only(self, openai_server, tmp_path):
        def page(n: int) -> str:
            """Read a page."""
            return "x" * 150

        def factory(history=()):
            return WindowedContext(SYSTEM, history, max_chars=200)

        for k in range(3):
            openai_server.script(Reply.tools((f"c{k}", "page", {"n": k})), Reply.text("ok"))
        path = tmp_path / "w.jsonl"
        with chat(path, brain=brain(openai_server), context=factory, tools=[page]) as session:
            for k in range(3):
                session.say(f"q{k}")
        sent = [[m.get("content") for m in b["messages"]] for b in openai_server.requests]
        # turn 1's second call still carries turn 0, though a fresh rendering would drop it ...
        assert sent[3][:2] == [SYSTEM, "q0"] and sent[3][:len(sent[2])] == sent[2]
        # ... and the window moves on at the next turn start
        assert sent[4][:2] == [SYSTEM, "q1"]
        assert_replay_matches(path, factory, openai_server.requests, tools=[page])

    def test_an_error_escaping_the_context_leaves_the_turn_unterminated(self, openai_server, tmp_path):
        def boom(rendered) -> str:
            raise RuntimeError("distiller down")

        def factory(history=()):
            return SummarizingContext(SYSTEM, history, high_water_tokens=5, low_water_chars=0, distill=boom)

        path = tmp_path / "e.jsonl"
        with chat(path, brain=brain(openai_server), context=factory) as session:
            session.say("first")  # the server reports 10 input tokens: over the mark
            with pytest.raises(RuntimeError, match="distiller down"):
                session.say("second")
        assert events(path, "harpe.turn.")[-3:] == ["harpe.turn.request", "harpe.turn.message",
                                                    "harpe.turn.response"]
        last = Journal.records(path)[-1]
        assert (last.outcome, last.terminated, last.data.input.text) == ("interrupted", False, "second")

    def test_resuming_a_journal_starts_from_its_history(self, openai_server, tmp_path):
        path = tmp_path / "r.jsonl"
        openai_server.script(Reply.text("one"), Reply.error(403), Reply.text("three"))
        factory = lambda history: FullContext(SYSTEM, history)  # noqa: E731
        with chat(path, brain=brain(openai_server), context=factory) as first:
            first.say("a")
            first.say("b")
        with chat(path, brain=brain(openai_server), context=factory) as second:
            assert second.resumed == 3
            second.say("c")
        assert openai_server.requests[-1]["messages"] == [
            {"role": "system", "content": SYSTEM}, {"role": "user", "content": "a"},
            {"role": "assistant", "content": "one"}, {"role": "user", "content": "b"},
            {"role": "user", "content": "c"}]
        with pytest.raises(AgentError, match="pass a factory"):
            chat(path, brain=brain(openai_server), context=FullContext(SYSTEM))

    def test_a_subagent_turn_nests_under_its_tool_call(self, openai_server, tmp_path):
        def delegate(task: str) -> str:
            """Ask a helper."""
            assert current_logger() is not None
            return answer_text(ask(task, brain=brain(openai_server)))

        openai_server.script(Reply.tools(("toolu_1", "delegate", {"task": "2+2"})), Reply.text("4"),
                             Reply.text("It is 4."))
        path = tmp_path / "n.jsonl"
        with JsonlLogger(path) as logger:
            data = write_turn(logger, "what is 2+2?", brain=brain(openai_server), tools=[delegate])
        assert data.messages[1].results[0].content == "4"
        inner = [r for r in lines(path) if len(r["context"]) == 3]
        assert inner and all(r["context"][1] == "harpe.tools.call=toolu_1" for r in inner)
        [record] = Journal.records(path)
        assert record.data == data and len(record.usage) == 2 and len(record.nested_usage) == 1


class TestDriver:
    def test_input_lines_are_said_and_answers_shown(self, openai_server, tmp_path):
        openai_server.script(Reply.text("A1"), Reply.error(401))
        shown: list[str] = []
        session = chat(tmp_path / "d.jsonl", brain=brain(openai_server), input=["q1\n", "\n", "q2\n"],
                       output=shown.append)
        session.close()
        assert shown == ["A1", "[failed: AuthenticationError: OpenAIException - error]"]
        assert [r.request for r in Journal.records(tmp_path / "d.jsonl")] == [{"text": "q1"}, {"text": "q2"}]

    def test_command_line_reads_stdin_until_eof(self, openai_server, tmp_path, monkeypatch, capsys):
        import io

        monkeypatch.setenv("OPENAI_API_BASE", openai_server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setattr("sys.stdin", io.StringIO("hello\nbye\n"))
        path = tmp_path / "cli.jsonl"
        args = SimpleNamespace(path=str(path), model="openai/test-model", system="Be brief.")
        assert cli_chat(args) == 0
        assert capsys.readouterr().out == "echo: hello\necho: bye\n"
        assert openai_server.requests[1]["messages"][0] == {"role": "system", "content": "Be brief."}
        assert [r.outcome for r in Journal.records(path)] == ["answered", "answered"]


class TestValidation:
    def test_brain_keeps_retries_and_the_key_to_itself(self):
        with pytest.raises(AgentError, match="ask\\(max_retries"):
            Brain("openai/x", num_retries=3)
        assert KEY not in repr(Brain("openai/x", api_key=KEY))
        assert (Brain("openai/gpt-4o").provider, Brain("openai/gpt-4o").model_name) == ("openai", "gpt-4o")

    def test_bad_options_are_named(self):
        with pytest.raises(AgentError, match="max_tool_rounds must be an int >= 0, got -1"):
            ask("x", brain=Brain("openai/x"), max_tool_rounds=-1)
        with pytest.raises(AgentError, match="not a context"):
            ask("x", brain=Brain("openai/x"), context=object())
