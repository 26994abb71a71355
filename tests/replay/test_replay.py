"""The replay engine: requests as Harpe's engine would send them, and the frame built from them."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import (
    ApproxCounter,
    AssistantMessage,
    FullContext,
    StrategyError,
    SummarizingContext,
    ToolCall,
    ToolResult,
    ToolResults,
    TurnContext,
    Usage,
    UserInput,
    WindowedContext,
)
from harpe_lab.messages import Rendered
from harpe_lab.protocol import ContextCompacted
from harpe_lab.strategies.harpe import Compaction
from harpe_lab.conversation import Conversation, Turn
from harpe_lab.replay import REQUEST_COLUMNS, Pricing, replay
from tests._support.builders import call, reply, results, turn
from tests._support.data import DATA

COUNTER = ApproxCounter()


def _sent(rp, i):
    r = rp.rendered(i)
    return r.system, list(r.messages)


def tool_conversation() -> Conversation:
    return Conversation(
        (
            turn("read a", reply("", call("a1", "read", path="/src/a1.py")), results(("a1", "A" * 40)),
                 AssistantMessage("a done")),
            turn("read b twice", reply("", call("b1", "read", path="/src/b1.py")), results(("b1", "B" * 40)),
                 reply("", call("b2", "read", path="/src/b2.py")), results(("b2", "b" * 40)),
                 AssistantMessage("b done")),
            turn("bye", AssistantMessage("bye")),
        ),
        id="tools",
    )


class TestFullContext:
    def test_requests_are_the_growing_transcript(self):
        conv = tool_conversation()
        rp = replay(conv, lambda: FullContext("sys"), counter=COUNTER)
        t0, t1, t2 = (t.all_messages for t in conv.turns)
        expected = [
            t0[:1], t0[:3],
            t0 + t1[:1], t0 + t1[:3], t0 + t1[:5],
            t0 + t1 + t2[:1],
        ]  # fmt: skip
        assert len(rp) == len(expected)
        for i, want in enumerate(expected):
            assert _sent(rp, i) == ("sys", list(want))

    def test_interrupted_turn_keeps_only_its_input_afterwards(self):
        conv = Conversation((
            turn("first", reply("", call("x", "read", path="/src/x.py")), results(("x", "data")),
                 outcome="interrupted"),
            turn("second", AssistantMessage("ok")),
        ))  # fmt: skip
        rp = replay(conv, lambda: FullContext(""), counter=COUNTER)
        first, second = conv.turns
        assert [list(rp.rendered(i).messages) for i in range(len(rp))] == [
            [first.input],
            [first.input, *first.messages[:2]],
            [first.input, second.input],
        ]
        assert list(rp.requests["outcome"]) == ["interrupted", "interrupted", "answered"]

    def test_failed_turn_without_reply_is_one_request(self):
        conv = Conversation((turn("boom", outcome="failed"), turn("again", AssistantMessage("fine"))))
        rp = replay(conv, lambda: FullContext(""), counter=COUNTER)
        assert len(rp) == 2
        assert list(rp.rendered(1).messages) == [conv.turns[0].input, conv.turns[1].input]
        assert rp.requests["output_tokens"].tolist()[0] == 0


class TestWindowedMidTurnTail:
    def test_mid_turn_requests_keep_the_provider_session_tail(self):
        big = "x" * 100
        conv = Conversation((
            turn("old", AssistantMessage(big)),
            turn("new", reply("", call("c1", "read", path="/src/c1.py")), results(("c1", big)),
                 reply("", call("c2", "read", path="/src/c2.py")), results(("c2", big)), AssistantMessage("done")),
        ))  # fmt: skip
        rp = replay(conv, lambda: WindowedContext("", max_chars=50), counter=COUNTER)
        new = conv.turns[1].all_messages
        # the turn-start rendering drops the old turn; mid-turn the session just grows, even
        # though the transcript is far over 50 chars: WindowedContext never reports compacted.
        assert [list(rp.rendered(i).messages) for i in (1, 2, 3)] == [list(new[:1]), list(new[:3]), list(new[:5])]
        # the one request that is not the previous one plus new messages is the turn start
        assert rp.requests["compacted"].tolist() == [False, True, False, False]
        assert rp.requests["messages_dropped"].tolist() == [0, 2, 2, 2]


class TestSummarizingRestart:
    def test_restart_from_the_compacted_rendering_mid_turn(self):
        calls = []

        def distill(r: Rendered) -> str:
            calls.append(r)
            return "S"

        conv = Conversation((
            turn("aaaa", AssistantMessage("bbbb")),
            turn("cccc", reply("", call("k1", "read", path="/src/k1.py")), results(("k1", "r" * 200)),
                 reply("", call("k2", "read", path="/src/k2.py")), results(("k2", "s" * 10)),
                 AssistantMessage("end")),
        ))  # fmt: skip
        rp = replay(
            conv,
            lambda: SummarizingContext("base", high_water_tokens=60, low_water_chars=250, distill=distill),
            counter=COUNTER,
        )
        t0, t1 = (t.all_messages for t in conv.turns)
        # request 2 is over 60 tokens, so the compact after the second tool round folds the
        # first turn into the summary and the session restarts from that rendering.
        assert rp.requests["input_tokens"][2] > 60
        assert _sent(rp, 3) == ("base\n\n# Conversation summary\n\n(Older turns, distilled; the messages below are "
                                "the most recent turns.)\n\nS", list(t1[:5]))
        assert rp.requests["compacted"].tolist() == [False, False, False, True]
        assert len(calls) == 1 and rp.requests["distill_calls"].tolist() == [0, 0, 0, 1]
        assert calls[0].messages[0].text == "Conversation excerpt to summarize:\n\nUser: aaaa\nAgent: bbbb\n\nReply with the updated summary."
        assert [e.kind for e in rp.events] == ["DistillCall", "ContextCompacted"]
        assert rp.events[0].event.request is calls[0] and rp.events[0].event.reply == "S"
        assert rp.events[1].request == 3 and rp.events[1].event.dropped_messages == 2
        assert rp.kept(3) == {"0.0": "summarized", "0.1": "summarized", **{f"1.{j}": "sent" for j in range(5)}}


# --- the engine against a plain re-implementation of Harpe's Agent.ask -------------------


def reference_requests(conv: Conversation, make, counter) -> list[tuple[str, tuple]]:
    ctx = make()
    out = []
    for turn in conv.turns:
        ctx.begin_turn(turn.input)
        r = ctx.compact()
        system, session = r.rendered.system, list(r.rendered.messages)
        msgs = list(turn.messages)
        if not msgs:
            out.append((system, tuple(session)))
        i = 0
        while i < len(msgs):
            if isinstance(msgs[i], AssistantMessage):
                out.append((system, tuple(session)))
                ctx.observe(Usage(counter.count_rendered(Rendered(system, tuple(session)))))
            ctx.append(msgs[i])
            session.append(msgs[i])
            i += 1
            had_results = False
            while i < len(msgs) and isinstance(msgs[i], ToolResults):
                ctx.append(msgs[i])
                session.append(msgs[i])
                had_results = True
                i += 1
            if had_results:
                n = ctx.compact()
                if n.compacted:
                    system, session = n.rendered.system, list(n.rendered.messages)
                if i == len(msgs):  # cut short after a tool round: the next request went out
                    out.append((system, tuple(session)))
        (ctx.commit_turn if turn.outcome == "answered" else ctx.abort_turn)()
    return out


texts = st.text(alphabet="abcdé xyz", min_size=0, max_size=30)


@st.composite
def conversations(draw):
    turns = []
    for t in range(draw(st.integers(1, 7))):
        messages = []
        for r in range(draw(st.integers(0, 3))):
            cid = f"c{t}_{r}"
            messages += [AssistantMessage(draw(texts), (ToolCall(cid, "tool", {"q": draw(texts)}),)),
                         ToolResults((ToolResult(cid, draw(texts) * draw(st.integers(1, 4))),))]
        outcome = draw(st.sampled_from(["answered", "answered", "interrupted", "failed"]))
        if outcome == "failed":
            messages = []
        elif outcome == "answered" or draw(st.booleans()):
            messages.append(AssistantMessage(draw(texts)))
        turns.append(Turn(UserInput(draw(texts)), tuple(messages), outcome))
    return Conversation(tuple(turns))


FACTORIES = {
    "full": lambda: FullContext("system"),
    "windowed": lambda: WindowedContext("system", max_chars=60),
    "turn": lambda: TurnContext("system"),
    "summarizing": lambda: SummarizingContext(
        "system", high_water_tokens=40, low_water_chars=40, distill=lambda r: f"summary of {len(r.messages[0].text)}"
    ),
}


class TestAgainstReference:
    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(conv=conversations(), name=st.sampled_from(sorted(FACTORIES)))
    def test_same_requests_as_harpe_engine(self, conv, name):
        rp = replay(conv, FACTORIES[name], counter=COUNTER)
        want = reference_requests(conv, FACTORIES[name], COUNTER)
        assert [(r.system, r.messages) for r in map(rp.rendered, range(len(rp)))] == want

    @settings(max_examples=100, deadline=None)
    @given(conv=conversations(), name=st.sampled_from(sorted(FACTORIES)))
    def test_frame_is_consistent(self, conv, name):
        rp = replay(conv, FACTORIES[name], counter=COUNTER)
        f = rp.requests
        assert list(f.columns) == list(REQUEST_COLUMNS)
        parts = f["system_tokens"] + f["summary_tokens"] + f["history_tokens"] + f["turn_tokens"]
        assert (parts == f["input_tokens"]).all()
        for i in range(len(rp)):
            assert f["input_tokens"][i] == COUNTER.count_rendered(rp.rendered(i))
            assert f["messages_sent"][i] == len(rp.rendered(i).messages)
            kept = rp.kept(i)
            assert f["messages_dropped"][i] == sum(state != "sent" for state in kept.values())
            assert 0 <= f["cached_prefix_tokens"][i] <= f["input_tokens"][i]
        assert list(f["request"]) == list(range(len(rp)))


class _Picker:
    """A context that sends, at every request, a random selection of what it holds, in order,
    with notes of its own between: runs of the last request come back shifted, cut short,
    behind new messages, or not at all. A reply's calls go with their results."""

    def __init__(self, seed: int) -> None:
        import random

        self.rng, self.messages, self.notes, self.start = random.Random(seed), [], [], 0

    def begin_turn(self, input):
        self.start = len(self.messages)
        self.messages.append(input)

    def append(self, m):
        self.messages.append(m)

    def compact(self):
        units: list[list] = []
        for m in self.messages:
            if isinstance(m, ToolResults) and units and isinstance(units[-1][-1], AssistantMessage):
                units[-1].append(m)
            else:
                units.append([m])
        sent = []
        for k, unit in enumerate(units):
            if self.rng.random() < 0.2:  # a note, new or one sent before
                if self.notes and self.rng.random() < 0.5:
                    sent.append(self.rng.choice(self.notes))
                else:
                    self.notes.append(UserInput(f"note {len(self.notes)}"))
                    sent.append(self.notes[-1])
            if k == len(units) - 1 or self.rng.random() < 0.7:
                sent.extend(unit)
        return Compaction(Rendered("sys", tuple(sent)), True)

    def observe(self, usage):
        pass

    def commit_turn(self):
        pass

    def abort_turn(self):  # the turn's work is taken back, its input stays
        del self.messages[self.start + 1 :]


class TestRunsOfTheLastRequest:
    """The engine reuses the sums of the runs a request shares with the one before, wherever
    they stand in it; what it prices must still be what was sent."""

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(conv=conversations(), seed=st.integers(0, 2**16))
    def test_the_frame_prices_each_selection(self, conv, seed):
        rp = replay(conv, lambda: _Picker(seed), counter=COUNTER)
        f = rp.requests
        parts = f["system_tokens"] + f["summary_tokens"] + f["history_tokens"] + f["turn_tokens"]
        assert (parts == f["input_tokens"]).all()
        for i in range(len(rp)):
            sent = rp.rendered(i)
            assert f["input_tokens"][i] == COUNTER.count_rendered(sent)
            notes = sum(COUNTER.count_message(m) for m in sent.messages
                        if isinstance(m, UserInput) and m.text.startswith("note "))
            assert f["summary_tokens"][i] == notes
            assert f["messages_dropped"][i] == sum(state != "sent" for state in rp.kept(i).values())

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(conv=conversations(), seed=st.integers(0, 2**16))
    def test_a_fold_marks_what_left_and_nothing_yet_to_come(self, conv, seed):
        """At a fold, every message the history holds, not sent and not marked before, is
        marked summarized, and no other: not a message the turn has yet to append (a fold
        mid-turn)."""

        class Folder(_Picker):
            """Or it edits the last request in place (`Compaction.edits`): a note where a
            message stood, followed by what was appended since."""

            def __init__(self, seed):
                super().__init__(seed)
                self.last, self.since = (), []

            def subscribe(self, sink):
                self.sink = sink

            def begin_turn(self, input):
                super().begin_turn(input)
                self.since = [input]

            def append(self, m):
                super().append(m)
                self.since.append(m)

            def abort_turn(self):
                super().abort_turn()
                self.last = ()  # what the turn appended is gone: a whole request next

            def compact(self):
                sent = [*self.last, *self.since]
                places = [p for p, m in enumerate(self.last) if not isinstance(m, (ToolResults, AssistantMessage))]
                if places and self.rng.random() < 0.3:
                    p = self.rng.choice(places)
                    self.notes.append(UserInput(f"note {len(self.notes)}"))
                    sent[p] = self.notes[-1]
                    out = Compaction(Rendered("sys", tuple(sent)), True, (p,))
                else:
                    out = super().compact()
                self.last, self.since = out.rendered.messages, []
                if self.rng.random() < 0.4:
                    self.sink(ContextCompacted(1))
                return out

        rp = replay(conv, lambda: Folder(seed), counter=COUNTER)
        marks = rp._summarized
        of_turn = {mid: t for t, turn in enumerate(conv.turns) for mid in turn.ids}
        folds = {e.request for e in rp.events if e.kind == "ContextCompacted"}
        marked: set[str] = set()
        for i in range(len(rp)):
            held, sent = rp.available_ids(i), set(rp.sent_ids(i))
            now = {mid for mid, at in marks.items() if at == i}
            expected = {mid for mid in held if mid not in sent and mid not in marked} if i in folds else set()
            assert now & set(held) == expected, i
            # besides those, only an aborted turn's work before this request's turn (it left)
            for mid in now - set(held):
                assert conv.turns[of_turn[mid]].outcome != "answered" and of_turn[mid] < rp.requests["turn"][i], i
            marked |= now

    def test_a_kept_run_that_ends_in_a_call_is_checked_for_its_results(self):
        # the run [task, reply with a call] comes back behind a note, its results do not
        conv = Conversation((turn("task", reply("", call("a", "read", path="/a.py")), results(("a", "r")),
                                  AssistantMessage("done")),))

        class Cutter(_Picker):
            def compact(self):
                if len(self.messages) < 3:
                    return Compaction(Rendered("sys", tuple(self.messages)), True)
                return Compaction(Rendered("sys", (UserInput("note"), *self.messages[:2])), True)

        with pytest.raises(StrategyError, match="cutter separated a tool call from its results at request 1"):
            replay(conv, lambda: Cutter(0), counter=COUNTER, name="cutter")


class TestColumns:
    def test_overshoot_and_cache_prefix(self):
        conv = Conversation(tuple(turn(f"q{k}", AssistantMessage("a" * 80)) for k in range(4)))
        rp = replay(conv, lambda: SummarizingContext("", high_water_tokens=10_000, low_water_chars=10,
                                                      distill=lambda r: "s"), counter=COUNTER)
        f = rp.requests
        assert rp.limit.tokens == 10_000 and rp.limit.kind == "high_water" and (f["overshoot_tokens"] == 0).all()
        # each request extends the previous one: all of it but the reply priming is cached
        for i in range(1, len(rp)):
            prev = rp.rendered(i - 1)
            assert f["cached_prefix_tokens"][i] == COUNTER.count_rendered(prev) - 3
        rp2 = replay(conv, lambda: SummarizingContext("", high_water_tokens=20, low_water_chars=10_000,
                                                       distill=lambda r: "s"), counter=COUNTER)
        over = rp2.requests["input_tokens"] - 20
        assert rp2.requests["overshoot_tokens"].tolist() == [max(0, x) for x in over]

    def test_recorded_usage_and_pricing(self):
        conv = Conversation((Turn(UserInput("hi"), (AssistantMessage("hello"),), usage=(Usage(1234, 56),)),))
        price = Pricing("test", input=1e-6, output=2e-6, cache_read=1e-7)
        rp = replay(conv, lambda: FullContext("sys"), counter=COUNTER, pricing=price)
        row = rp.requests.iloc[0]
        assert row["recorded_input_tokens"] == 1234 and row["output_tokens"] == 56
        assert row["cost_usd"] == pytest.approx(row["input_tokens"] * 1e-6 + 56 * 2e-6)

    def test_pricing_from_litellm_table(self):
        from harpe_lab.models._litellm import litellm

        entry = litellm().model_cost["gpt-4o"]
        p = Pricing.for_model("openai/gpt-4o")
        assert p.input == entry["input_cost_per_token"] and p.output == entry["output_cost_per_token"]
        with pytest.raises(StrategyError, match="no price for model"):
            Pricing.for_model("openai/no-such-model-xyz")

    def test_no_pricing_gives_nan(self):
        rp = replay(tool_conversation(), lambda: FullContext(""), counter=COUNTER)
        assert rp.requests["cost_usd"].map(math.isnan).all()


class _Broken:
    """A context that forgets tool results or renders nothing, to test the engine's checks."""

    def __init__(self, mode: str) -> None:
        self.mode, self.messages = mode, []

    def begin_turn(self, input):
        self.messages.append(input)

    def append(self, m):
        self.messages.append(m)

    def compact(self):
        if self.mode == "empty":
            return Compaction(Rendered("", ()), False)
        if self.mode == "copy-without-results":  # a reply rewritten (a notice added), its results dropped
            kept = [AssistantMessage(m.text + " [truncated]", m.calls) if isinstance(m, AssistantMessage) else m
                    for m in self.messages if not isinstance(m, ToolResults)]
            return Compaction(Rendered("", tuple(kept)), True)
        kept = [m for m in self.messages if not isinstance(m, ToolResults)]
        return Compaction(Rendered("", tuple(kept)), True)

    def observe(self, usage):
        pass

    def commit_turn(self):
        pass

    def abort_turn(self):
        pass


class TestInvariants:
    def test_separated_tool_pair_names_strategy_and_request(self):
        conv = Conversation((turn("one", reply("", call("a", "read", path="/src/a.py")), results(("a", "r")),
                                  AssistantMessage("x")),
                             turn("two", AssistantMessage("y"))))
        with pytest.raises(StrategyError, match=r"dropper separated a tool call from its results at request 1"):
            replay(conv, lambda: _Broken("drop-results"), counter=COUNTER, name="dropper")

    def test_a_reply_the_strategy_rewrote_is_held_to_its_calls_too(self):
        # the pairing is by identity for the recording's own messages; a copy (cline-legacy's
        # reply with a notice added) once went out with its calls unanswered, unseen
        conv = Conversation((turn("one", reply("", call("a", "read", path="/src/a.py")), results(("a", "r")),
                                  AssistantMessage("x")),
                             turn("two", AssistantMessage("y"))))
        with pytest.raises(StrategyError, match=r"copier sent tool calls without their results at request 1"):
            replay(conv, lambda: _Broken("copy-without-results"), counter=COUNTER, name="copier")

    def test_empty_request(self):
        with pytest.raises(StrategyError, match="empty request at request 0"):
            replay(tool_conversation(), lambda: _Broken("empty"), counter=COUNTER)

    def test_context_must_be_a_factory(self):
        with pytest.raises(TypeError, match="zero-argument factory"):
            replay(tool_conversation(), FullContext(""), counter=COUNTER)

    def test_replays_do_not_share_state(self):
        conv = tool_conversation()
        a = replay(conv, FACTORIES["summarizing"], counter=COUNTER)
        b = replay(conv, FACTORIES["summarizing"], counter=COUNTER)
        assert a.requests.equals(b.requests)


class TestEvents:
    def test_user_handler_still_gets_events(self):
        seen, replay_events = [], []
        conv = Conversation(tuple(turn("q" * 20, AssistantMessage("a" * 40)) for _ in range(6)))
        rp = replay(
            conv,
            lambda: SummarizingContext("", high_water_tokens=30, low_water_chars=70, distill=lambda r: "s",
                                       on_event=seen.append),
            counter=COUNTER,
            on_event=replay_events.append,
        )
        # the replay also sees the distill calls, which Harpe's handler never gets
        ours = [e for e in rp.events if e.kind != "DistillCall"]
        assert seen and len(seen) == len(ours) and list(rp.events) == replay_events
        assert set(rp.events_frame()["kind"]) == {"ContextCompacted", "DistillCall"}
        assert rp.totals()["summaries"] == len(seen)


class TestFromJournal:
    """A Harpe journal replayed under FullContext: the requests Harpe's engine sent, with the
    expected messages decoded here straight from the JSON lines."""

    def _decode(self, fields):
        from harpe_lab.messages import Attachment

        def atts(items):
            return tuple(Attachment(a["name"], a["size"], a["mime"], a["path"]) for a in items)

        if fields["role"] == "user":
            return UserInput(fields["text"], atts(fields["attachments"]))
        if fields["role"] == "assistant":
            return AssistantMessage(fields["text"], tuple(ToolCall(c["id"], c["name"], c["input"]) for c in fields["calls"]))
        return ToolResults(tuple(ToolResult(r["id"], r["content"], atts(r["attachments"]), r["success"])
                                 for r in fields["results"]))

    def test_golden_g5_journal(self):
        import json
        from pathlib import Path

        from harpe_lab.importers.harpe import load_harpe

        path = DATA / "journals" / "g5.jsonl"
        lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        messages = [self._decode(e["fields"]) for e in lines
                    if e["event"] == "harpe.turn.message" and "app.session=alpha" in e["context"]]
        u1, a1, r1, a2, u2, a3, u3 = messages
        rp = replay(load_harpe(path), lambda: FullContext("sys"), counter=COUNTER)
        # the unbracketed "nightly cleanup" turn is not part of the session; the unterminated
        # second turn keeps its reply while it runs, and is rolled back to its input after
        assert [list(rp.rendered(i).messages) for i in range(len(rp))] == [
            [u1], [u1, a1, r1], [u1, a1, r1, a2, u2], [u1, a1, r1, a2, u2, u3],
        ]
        assert a3.calls[0].name == "bash"  # sent by the model, never answered: no request follows it
        assert rp.requests["recorded_input_tokens"].tolist()[:3] == [2000, 2600, 3000]


class TestWhatWasSent:
    """`Replay.rendered(i)` is exactly what the strategy rendered for request ``i``, for
    every preset, whether the engine keeps a request whole or as a patch of the one before."""

    @staticmethod
    def _recorded(conversation, name, budget):
        from harpe_lab.presets import make_strategy
        from harpe_lab.tokens import TiktokenCounter

        counter = TiktokenCounter()
        factory = make_strategy(name, budget=budget, counter=counter, system=conversation.system)
        # what the engine sends: the rendering at a turn start and at a compaction, else the
        # request before followed by what was appended since (Harpe's mid-turn session)
        rendered: list[Rendered] = []
        appended: list = []
        starting = [False]

        def recording():
            ctx = factory()
            begin, append, compact = ctx.begin_turn, ctx.append, ctx.compact

            def on_begin(message):
                starting[0] = True
                appended.clear()
                return begin(message)

            def on_append(message):
                appended.append(message)
                return append(message)

            def on_compact():
                out = compact()
                if starting[0] or out.compacted or not rendered:
                    rendered.append(out.rendered)
                else:
                    before = rendered[-1]
                    rendered.append(Rendered(out.rendered.system, before.messages + tuple(appended)))
                starting[0] = False
                appended.clear()
                return out

            ctx.begin_turn, ctx.append, ctx.compact = on_begin, on_append, on_compact
            return ctx

        return replay(conversation, recording, counter=counter, name=name), rendered

    @pytest.mark.parametrize("name", sorted(__import__("harpe_lab.presets", fromlist=["PRESETS"]).PRESETS))
    def test_each_request_is_what_the_strategy_rendered(self, name):
        from harpe_lab.datasets import synthesize

        conversation = synthesize(120, seed=3)
        r, rendered = self._recorded(conversation, name, 8_000)
        assert len(rendered) == len(r)
        # backwards first: no request leans on the one before having been built
        for i in reversed(range(len(r))):
            assert r.rendered(i) == rendered[i], f"{name}: request {i}"

    @pytest.mark.parametrize("name", sorted(__import__("harpe_lab.presets", fromlist=["PRESETS"]).PRESETS))
    def test_the_frame_prices_what_was_sent(self, name):
        # the engine keeps running sums instead of pricing each request; they must come to
        # what pricing the request would, whatever the strategy did to it (a slide, a gap,
        # a stand-in, a summary)
        from harpe_lab.datasets import synthesize
        from harpe_lab.tokens import REPLY_PRIMING, TiktokenCounter

        conversation = synthesize(160, seed=4, tool_rate=0.6)
        r, _ = self._recorded(conversation, name, 5_000)
        f, counter = r.requests, TiktokenCounter()
        parts = f["system_tokens"] + f["summary_tokens"] + f["history_tokens"] + f["turn_tokens"]
        assert (parts == f["input_tokens"]).all()
        for i in range(len(r)):
            sent = r.rendered(i)
            assert f["input_tokens"][i] == counter.count_rendered(sent), f"{name}: request {i}"
            if i and r.rendered(i - 1).system == sent.system:
                before = r.rendered(i - 1).messages
                shared = next((k for k, (a, b) in enumerate(zip(before, sent.messages)) if a is not b),
                              min(len(before), len(sent.messages)))
                want = counter.count_rendered(Rendered(sent.system, sent.messages[:shared])) - REPLY_PRIMING
                assert f["cached_prefix_tokens"][i] == want, f"{name}: request {i}"

    def test_a_long_run_of_edits_is_kept_as_patches_and_read_back_exactly(self):
        import pickle

        from harpe_lab._session import CHECKPOINT, Patch
        from harpe_lab.datasets import synthesize

        conversation = synthesize(300, seed=5)
        r, rendered = self._recorded(conversation, "masking", 3_000)
        versions = {id(v): v for v, *_ in r._requests._at}.values()
        patches = [v for v in versions if isinstance(v, Patch)]
        assert len(patches) > 3 * CHECKPOINT  # the run is long enough to cross checkpoints
        assert max(p.depth for p in patches) == CHECKPOINT
        assert len(versions) - len(patches) < len(versions) / CHECKPOINT + 2
        back = pickle.loads(pickle.dumps(r))  # sweeps send replays between processes
        for i in range(len(r)):
            assert r.rendered(i) == rendered[i] == back.rendered(i), f"request {i}"

    @pytest.mark.parametrize("name", ["full", "masking", "claude-code"])
    def test_the_engine_builds_a_request_tuple_only_for_a_checkpoint(self, name):
        # a long session's requests are read for what they appended, and the rest of the
        # request is the one before: building each whole would cost O(history) a request
        from harpe_lab.datasets import synthesize
        from harpe_lab.presets import make_strategy
        from harpe_lab.tokens import TiktokenCounter

        conversation = synthesize(120, seed=3)
        counter = TiktokenCounter()
        factory = make_strategy(name, budget=8_000, counter=counter, system=conversation.system)
        out = []

        def recording():
            ctx = factory()
            compact = ctx.compact

            def on_compact():
                out.append(compact())
                return out[-1]

            ctx.compact = on_compact
            return ctx

        replay(conversation, recording, counter=counter, name=name)
        from harpe_lab._session import CHECKPOINT

        grew = [c.rendered for c in out[1:] if c.edits == ()]  # the first is compared with nothing
        assert len(grew) > len(out) / 2
        assert not [r for r in grew if "_built" in vars(r)]
        # an edited one is kept as a patch of the one before: built only for a checkpoint
        edited = [c.rendered for c in out[1:] if c.edits]
        assert len([r for r in edited if "_built" in vars(r)]) <= len(edited) // CHECKPOINT + 1
        assert name != "masking" or len(edited) > 2 * CHECKPOINT


class TestPricingOneCall:
    """The engine prices each call with one pure function (`harpe_lab.replay._pricing`), so
    the cache rules can be read, and checked, one call at a time."""

    @staticmethod
    def call(**changes):
        from harpe_lab.replay._pricing import Call

        base = dict(input_tokens=30_003, output_tokens=500, fixed=20_003, cached=28_000, first=False,
                    same_system=True, compacted=False, reset=False, same_model=True, warm=0, gap=10.0)
        return Call(**{**base, **changes})

    @pytest.fixture
    def price(self):
        from harpe_lab.models import resolve_pricing

        return resolve_pricing("anthropic/claude-opus-4-6", ())

    def test_a_call_that_extends_the_last_reads_its_prefix_and_writes_the_rest(self, price):
        from harpe_lab.replay._pricing import price_call

        cost = price_call(price, self.call())
        assert (cost.cache_read_tokens, cost.cache_write_tokens) == (28_000, 2_000)
        assert cost.cost_usd_cached < cost.cost_usd

    def test_what_breaks_the_cache(self, price):
        from harpe_lab.replay._pricing import price_call

        # a compaction keeps the system prompt and tools; another model, or a gap past the TTL, nothing
        assert price_call(price, self.call(compacted=True)).cache_read_tokens == 20_000
        assert price_call(price, self.call(same_model=False)).cache_read_tokens == 0
        assert price_call(price, self.call(gap=price.cache.ttl + 1)).cache_read_tokens == 0
        # invalidated by the agent: only what every session shares, the recording's first read
        assert price_call(price, self.call(reset=True, warm=12_000)).cache_read_tokens == 12_000

    def test_the_first_call_reads_what_an_earlier_session_left(self, price):
        from harpe_lab.replay._pricing import price_call

        assert price_call(price, self.call(first=True, same_system=False, cached=0)).cache_read_tokens == 0
        assert price_call(price, self.call(first=True, same_system=False, cached=0, warm=15_000)).cache_read_tokens \
            == 15_000
        assert price_call(price, self.call(first=True, same_system=False, cached=0, warm=90_000)).cache_read_tokens \
            == 20_000  # never more than the system prompt and tools

    def test_distill_calls_cost_the_same_with_and_without_caching(self, price):
        from harpe_lab.replay._pricing import price_call

        plain = price_call(price, self.call())
        with_distill = price_call(price, self.call(distill_input_tokens=8_000, distill_output_tokens=400))
        assert with_distill.distill_cost_usd > 0
        assert with_distill.cost_usd == pytest.approx(plain.cost_usd + with_distill.distill_cost_usd)
        assert with_distill.cost_usd_cached == pytest.approx(plain.cost_usd_cached + with_distill.distill_cost_usd)

    def test_without_prices_nothing_is_priced(self):
        from harpe_lab.replay._pricing import price_call

        cost = price_call(None, self.call())
        assert cost.cache_read_tokens == cost.cache_write_tokens == 0 and math.isnan(cost.cost_usd)

    def test_the_request_row_is_the_frame_s_columns(self):
        import sys

        engine = sys.modules["harpe_lab.replay"]  # the package (harpe_lab.replay is also the function)
        # every column documented in the package's table, in the frame's order
        documented = [name for line in engine.__doc__.splitlines()
                      if line[:1].isalpha() and "  " in line for name in line.split("  ")[0].split(", ")]
        assert list(engine.RequestRow._fields) == documented
        rp = replay(tool_conversation(), lambda: FullContext(""), counter=COUNTER)
        assert list(rp.requests.columns) == documented

    def test_the_row_ends_with_the_call_s_cost(self):
        # the engine writes a row by position, its last fields the CallCost's as they come
        from harpe_lab.replay._frame import RequestRow
        from harpe_lab.replay._pricing import CallCost

        assert RequestRow._fields[-len(CallCost._fields):] == CallCost._fields


class TestOneRecordingPerConversation:
    """Every strategy replayed on one conversation reads the same `Recording` (a compare
    replays each session under every preset), for as long as the conversation lives."""

    def test_replays_share_it_and_it_goes_with_the_conversation(self):
        from harpe_lab.replay import _recording

        conv = tool_conversation()
        first = replay(conv, lambda: FullContext(""), counter=COUNTER)
        rec = _recording.recording(conv)
        second = replay(conv, lambda: WindowedContext("", max_chars=10), counter=COUNTER)
        assert _recording.recording(conv) is rec
        assert first.sent_ids(0) == second.sent_ids(0)  # the same message ids, from the same recording
        key = id(conv)
        del conv, first, second  # the last references: freed now, no collection needed
        assert key not in _recording._RECORDINGS

    def test_a_conversation_that_repeats_a_message_object_is_replayed_the_same_both_times(self):
        once = turn("look", reply("", call("c1", "read")), results(("c1", "x")), reply("done"))
        conv = Conversation((once, once), id="twice")  # one Turn object in two places
        a = replay(conv, lambda: FullContext(""), counter=COUNTER).requests
        b = replay(conv, lambda: FullContext(""), counter=COUNTER).requests
        assert a.equals(b) and list(a["messages_dropped"]) == [0] * len(a)
