"""OpenCode's session compaction (``harpe_lab.strategies.opencode``), replayed natively: its
configuration, cases computed by hand from OpenCode's source, generated conversations, and one
real Claude Code session."""

from __future__ import annotations

import json
import math
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, ToolResults, Usage, UserInput
from harpe_lab.presets import PRESETS
from harpe_lab.protocol import HoldsSummary, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies import opencode
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, result, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations
from tests.strategies._agents import (COUNTER, PROPERTY, REAL, Distiller, _after_clean_history, _answered,
                                      _bundled_replays, _events, _previous_usage, _real_conversation, _replay,
                                      _request_text)


def _oc_tokens(*messages) -> int:
    """OpenCode's estimate of ``messages``: round(JSON.stringify(model messages).length / 4)."""
    out = []
    for m in messages:
        if isinstance(m, UserInput):
            out.append({"role": "user", "content": [{"type": "text", "text": m.text}]})
        else:
            out.append({"role": "assistant", "content": [{"type": "text", "text": m.text}]})
    return math.floor(len(json.dumps(out, ensure_ascii=False, separators=(",", ":"))) / 4 + 0.5)


def _walked(t: list, summary, names: dict[str, str], c: opencode.SessionCompaction) -> tuple[list, object]:
    """OpenCode's ``prune`` as it walks (``compaction.ts``): newest first, past the last two
    user turns, back to the summary or an output pruned before. The transcript after it, and
    its `Pruned` event (None: nothing pruned)."""
    total = freed = turns = 0
    chosen = []
    for i in range(len(t) - 1, -1, -1):
        m = t[i]
        turns += isinstance(m, UserInput)
        if turns < 2:
            continue
        if m is summary:
            break
        if not isinstance(m, ToolResults):
            continue
        done = False
        for j in range(len(m.results) - 1, -1, -1):
            r = m.results[j]
            if not r.success or names.get(r.id) in c.protected_tools:
                continue
            if r.content == opencode.CLEARED and not r.attachments:
                done = True
                break
            total += opencode.estimate(r.content)
            if total > c.prune_protect:
                freed += opencode.estimate(r.content)
                chosen.append((i, j))
        if done:
            break
    if freed <= c.prune_minimum:
        return t, None
    for i, j in chosen:
        rs = list(t[i].results)
        rs[j] = type(rs[j])(rs[j].id, opencode.CLEARED, (), rs[j].success)
        t[i] = ToolResults(tuple(rs), t[i].pinned)
    return t, opencode.Pruned(len(chosen), freed)


def _opencode(usable: int = 1_000, distill=None, events=None, **config):
    c = opencode.SessionCompaction(window=usable + 100, max_output=100, reserved=0, **config)
    assert c.usable == usable
    return c.context(SYSTEM, distill=distill or Distiller(), on_event=events)


class TestOpenCode:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"max_output": -1}, "max_output must be an int >= 0, got -1"),
        ({"reserved": -5}, "reserved must be an int >= 0, got -5"),
        ({"preserve_recent": 1.5}, "preserve_recent must be an int >= 0, got 1.5"),
        ({"prune": 1}, "prune must be a bool, got 1"),
        ({"protected_tools": "skill"}, r"protected_tools must be an iterable of tool names \(str\), got 'skill'"),
        ({"window": 50_000}, r"window \(50,000\) must be larger than max_output \(32,000\) plus reserved \(20,000\)"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            opencode.SessionCompaction(**kwargs)

    def test_defaults_are_opencodes(self):
        c = opencode.SessionCompaction()
        # 200,000 - 32,000 output - min(20,000, 32,000) reserved
        assert (c.usable, c.reserved_tokens, c.preserve_recent_tokens) == (148_000, 20_000, 15_000)
        small = opencode.SessionCompaction(max_output=8_000)
        assert (small.reserved_tokens, small.usable, small.preserve_recent_tokens) == (8_000, 184_000, 15_000)
        assert opencode.SessionCompaction(reserved=162_000).preserve_recent_tokens == 2_000  # 0.25 × 6,000 → 2,000
        assert opencode.SessionCompaction(reserved=148_000).preserve_recent_tokens == 5_000  # 0.25 × 20,000
        assert [opencode.estimate(t) for t in ("a", "ab", "abc", "abcdef")] == [0, 1, 1, 2]  # half rounds up
        assert pickle.loads(pickle.dumps(c)) == c
        ctx = c.context(SYSTEM, distill=Distiller())
        assert ctx.limit == Limit(tokens=148_000, kind="high_water") and isinstance(ctx, HoldsSummary)

    def test_the_preset(self):
        preset = PRESETS["opencode"]
        assert preset.family == "opencode" and preset.budget_knob.name == "high_water"
        assert preset.build(system=SYSTEM)().limit.tokens == 148_000
        built = preset.build(system=SYSTEM, high_water=6_000)()
        assert built.config.usable == 6_000 and built.config.preserve_recent_tokens == 2_000 and built.config.prune
        assert not preset.build(system=SYSTEM, prune=0)().config.prune
        with pytest.raises(StrategyError, match=r"high_water must be at most window - max_output \(168,000\), got 170,000"):
            preset.build(system=SYSTEM, high_water=170_000)
        with pytest.raises(StrategyError, match=r"window \(30,000\) must be larger than max_output \(32,000\)"):
            preset.build(system=SYSTEM, window=30_000)

    def test_it_compacts_once_the_last_reply_reports_usable_tokens(self):
        ctx = _opencode(1_000)
        _answered(ctx, "one", "a", usage=990)
        ctx.begin_turn(user("two"))
        assert not ctx.compact().compacted
        ctx.observe(Usage(input_tokens=990, output_tokens=9))  # 999
        ctx.append(reply("b"))
        ctx.commit_turn()
        ctx.begin_turn(user("three"))
        assert not ctx.compact().compacted
        ctx.observe(Usage(input_tokens=990, output_tokens=10))  # 1,000: at usable
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "out")))
        assert ctx.compact().compacted  # mid-turn too
        assert not ctx.compact().compacted  # the summary is the last finished message: never again by itself

    def test_the_tail_is_the_newest_turns_within_preserve_recent_tokens(self):
        ua, ra, ub, rb, uc = user("a" * 400), reply("x" * 400), user("b" * 40), reply("y" * 40), user("c" * 20)
        whole = _oc_tokens(uc) + _oc_tokens(ub, rb)
        for preserve, tail in [(whole, [ub, rb, uc]), (_oc_tokens(uc) + _oc_tokens(rb), [rb, uc]),
                               (_oc_tokens(uc), [uc]), (10**6, [])]:
            distill = Distiller("the summary")
            events: list = []
            ctx = _opencode(1_000, distill, events.append, preserve_recent=preserve)
            _answered(ctx, ua.text, ra.text)
            _answered(ctx, ub.text, rb.text, usage=1_000)
            ctx.begin_turn(uc)
            out = ctx.compact()
            assert out.rendered.messages == (UserInput(opencode.COMPACTION_REQUEST), AssistantMessage("the summary"),
                                             *tail, UserInput(opencode.CONTINUE_TEXT)), preserve
            text = _request_text(distill.requests[0])
            assert ("a" * 400) in text and (("b" * 40) in text) == (ub not in tail)
            assert events[0] == opencode.Overflowed(1_000, 1_000, len(tail)) and events[1].dropped_messages == 5 - len(tail)

    def test_the_summarizer_sees_tool_outputs_cut_and_the_previous_summary(self):
        distill = Distiller("first", "second")
        ctx = _opencode(1_000, distill, preserve_recent=0)
        ctx.begin_turn(user("go"))
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("", call("c1")))
        ctx.append(results(("c1", "z" * 3_000)))
        ctx.compact()
        ctx.observe(Usage(input_tokens=1_000))
        ctx.append(reply("done"))
        ctx.commit_turn()
        _answered(ctx, "next", "ok", usage=1_000)  # compacts at its start
        ctx.begin_turn(user("last"))
        ctx.compact()  # and again: "next" reported 1,000
        first, second = (_request_text(r) for r in distill.requests)
        assert "z" * 2_000 + "\n[truncated]" in first and "z" * 2_001 not in first
        assert second.startswith("Current summary:\n\nfirst\n\n")
        assert opencode.COMPACTION_REQUEST not in second and opencode.CONTINUE_TEXT in second

    def test_old_outputs_are_pruned_at_a_turns_end_past_the_newest_forty_thousand_tokens(self):
        events: list = []
        ctx = opencode.SessionCompaction(window=10**9).context(SYSTEM, distill=Distiller(), on_event=events.append)
        ctx.begin_turn(user("read everything"))
        ctx.compact()
        for k in range(1, 5):  # 60,000 characters: 15,000 tokens each
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply("", call(f"c{k}", "read")))
            ctx.append(results((f"c{k}", "o" * 60_000)))
            ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("read"))
        ctx.commit_turn()
        _answered(ctx, "two", "b")  # the first turn is still one of the last two
        _answered(ctx, "three", "c")
        assert not events
        ctx.begin_turn(user("four"))  # "three" was answered: the prune comes with this request
        # newest first: c4 15,000, c3 30,000 (protected), c2 45,000 and c1 60,000: 30,000 > 20,000
        assert events == [opencode.Pruned(2, 30_000)]
        out = ctx.compact()
        assert out.compacted and out.edits == (2, 4)
        cleared = [r.content for m in out.rendered.messages if isinstance(m, ToolResults) for r in m.results]
        assert cleared == [opencode.CLEARED, opencode.CLEARED, "o" * 60_000, "o" * 60_000]
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("d"))
        ctx.commit_turn()
        ctx.begin_turn(user("five"))  # stops at the pruned c2: c4 and c3 come to 30,000, nothing to prune
        assert len(events) == 1

    def test_errors_skill_outputs_and_aborts_are_left(self):
        events: list = []
        ctx = opencode.SessionCompaction(window=10**9).context(SYSTEM, distill=Distiller(), on_event=events.append)
        ctx.begin_turn(user("go"))
        ctx.compact()
        for k, (name, ok) in enumerate([("skill", True), ("bash", False), ("bash", True), ("bash", True),
                                        ("bash", True)], 1):
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply("", call(f"c{k}", name)))
            ctx.append(results((f"c{k}", "o" * 100_000), success=ok))  # 25,000 tokens each
            ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("done"))
        ctx.commit_turn()
        _answered(ctx, "two", "b")  # pruning at its end would look at the first turn only from the third on
        ctx.begin_turn(user("three"))
        ctx.compact()
        ctx.abort_turn()  # the prompt loop did not end: no prune
        ctx.begin_turn(user("three"))
        assert not events
        ctx.compact()
        ctx.observe(Usage(input_tokens=10))
        ctx.append(reply("c"))
        ctx.commit_turn()
        ctx.begin_turn(user("four"))
        # c5 25,000, c4 50,000 (the crossing one is prunable), c3 75,000: c4 and c3 go; c2 failed, c1 is skill
        assert events == [opencode.Pruned(2, 50_000)]
        assert not opencode.SessionCompaction(window=10**9, prune=False).prune

    @PROPERTY
    @given(conversations(), st.integers(40, 2_000))
    def test_generated_conversations(self, convo, usable):
        config = opencode.SessionCompaction(window=usable + 10, max_output=10, reserved=0, prune_protect=50,
                                            prune_minimum=30)
        rp = replay(convo, lambda: config.context(SYSTEM, distill=ExtractiveDistiller(max_chars=300)),
                    counter=COUNTER, name="opencode")
        frame = rp.requests
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            if _after_clean_history(convo, frame, i):
                assert bool(frame.summarized[i]) == (_previous_usage(frame, i) >= usable), i
            if frame.summarized[i]:
                assert sent[:2] == (UserInput(opencode.COMPACTION_REQUEST), AssistantMessage(rp.summary(i)))
                assert sent[-1] == UserInput(opencode.CONTINUE_TEXT)
                # the newest message is in the tail, unless the whole history was summarized
                assert len(sent) == 3 or rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]
            else:
                assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]

    @settings(PROPERTY, max_examples=300)
    @given(st.data())
    def test_the_prune_is_opencodes_walk(self, data):
        """The prune finds its region in running sums: against OpenCode's own walk
        (`_walked`), at every turn start, through compactions, aborts, errors, ``skill``
        outputs and outputs recorded already cleared."""
        config = opencode.SessionCompaction(window=data.draw(st.sampled_from([400, 4_000, 10**9])), max_output=10,
                                            reserved=0, prune_protect=data.draw(st.sampled_from([0, 40, 50, 60])),
                                            prune_minimum=data.draw(st.sampled_from([0, 10, 40, 45])))
        events: list = []
        ctx = config.context(SYSTEM, distill=Distiller(), on_event=events.append)
        names: dict[str, str] = {}
        answered = False
        n = 0
        for t in range(data.draw(st.integers(1, 12))):
            before, summary = ctx.transcript, ctx._summary_message
            del events[:]
            ctx.begin_turn(user(f"task {t}"))
            expected, pruned = _walked(list(before), summary, names, config) if answered else (list(before), None)
            assert list(ctx.transcript[:-1]) == expected, t
            assert [e for e in events if isinstance(e, opencode.Pruned)] == ([pruned] if pruned else []), t
            ctx.compact()
            for _ in range(data.draw(st.integers(0, 4))):
                ctx.observe(Usage(input_tokens=data.draw(st.sampled_from([10, 300, 5_000]))))
                ids = []
                for _ in range(data.draw(st.integers(1, 2))):
                    n += 1
                    ids.append((f"c{n}", data.draw(st.sampled_from(["read", "bash", "skill"]))))
                names.update(ids)
                ctx.append(reply("", *(call(i, name) for i, name in ids)))
                outputs = [(i, data.draw(st.sampled_from(["o" * 40, "o" * 160, "o" * 400, opencode.CLEARED])))
                           for i, _ in ids]
                failed = {i for i, _ in ids if data.draw(st.integers(0, 5)) == 0}
                ctx.append(ToolResults(tuple(result(i, o, success=i not in failed) for i, o in outputs)))
                ctx.compact()
            answered = data.draw(st.integers(0, 4)) > 0
            if answered:
                ctx.observe(Usage(input_tokens=10))
                ctx.append(reply(f"answer {t}"))
                ctx.commit_turn()
            else:
                ctx.abort_turn()

    def test_bundled_datasets(self):
        _bundled_replays("opencode")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_fires_at_usable(self, real_data, path):
        conv = _real_conversation(path)
        rp = _replay(conv, "opencode", counter=TiktokenCounter())
        frame = rp.requests
        fired = _events(rp, "Overflowed")
        assert fired, "the session never reached 148,000 tokens"
        first = next(i for i in range(1, len(rp)) if _previous_usage(frame, i) >= 148_000)
        assert fired[0].request == first and fired[0].event.tokens == _previous_usage(frame, first)
        tail = fired[0].event.kept
        assert 0 < tail and rp.sent_ids(first)[-1] == rp.available_ids(first)[-1]
        sent = rp.rendered(first).messages
        assert len(sent) == tail + 3 and sent[-1] == UserInput(opencode.CONTINUE_TEXT)
