"""Roo Code's condensing (``harpe_lab.strategies.roo``), replayed natively: its configuration,
cases computed by hand from Roo Code's source, generated conversations, and one real Claude
Code session."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.errors import StrategyError
from harpe_lab.messages import Rendered, ToolCall, Usage, UserInput
from harpe_lab.presets import PRESETS
from harpe_lab.protocol import ContextCompacted, Limit
from harpe_lab.replay import replay
from harpe_lab.strategies import roo
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations
from tests.strategies._agents import (COUNTER, PROPERTY, REAL, Distiller, _after_clean_history, _bundled_replays,
                                      _events, _names, _previous_usage, _real_conversation, _replay, _request_text)

PY_FILE = "\n".join(f"{n:>6}→{line}" for n, line in enumerate([
    "import os", "", "def alpha(x):", "    y = x", "    z = y", "    return z", "", "class Beta:",
    "    def gamma(self):", "        return 1", "        return 2", "", "def tiny(): pass", ""], 1))


def _roo(allowed: int = 100, distill=None, events=None, **config):
    c = roo.Condense(window=10_000, max_tokens=9_000 - allowed, **config)
    assert c.high_water == allowed
    return c.context(SYSTEM, counter=COUNTER, distill=distill or Distiller(), on_event=events)


class TestRoo:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"max_tokens": -1}, "max_tokens must be an int >= 0, got -1"),
        ({"percent": 4}, "percent must be an int >= 5, got 4"),
        ({"percent": 101}, "percent must be at most 100, got 101"),
        ({"condense": "yes"}, "condense must be a bool, got 'yes'"),
        ({"read_tools": "Read"}, r"read_tools must be an iterable of tool names \(str\), got 'Read'"),
        ({"max_tokens": 180_000}, r"max_tokens \(180,000\) leaves no allowed tokens below 90% of the window"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            roo.Condense(**kwargs)

    def test_defaults_are_roos(self):
        c = roo.Condense()
        assert (c.window, c.max_tokens, c.percent, c.condense) == (200_000, 8_192, 100, True)
        assert c.allowed == 171_808 and c.high_water == 171_808  # 200,000 × 0.9 - 8,192
        assert pickle.loads(pickle.dumps(c)) == c
        with pytest.raises(StrategyError, match="counter must have count_rendered"):
            c.context(SYSTEM, counter=None, distill=Distiller())
        preset = PRESETS["roo"]
        assert preset.family == "roo-code" and preset.needs == {"counter", "distill"}
        assert preset.build(system=SYSTEM, counter=COUNTER)().limit == Limit(tokens=171_808, kind="high_water")
        built = preset.build(system=SYSTEM, counter=COUNTER, high_water=6_000)()
        assert built.limit.tokens == 6_000 and built.config.max_tokens == 174_000
        with pytest.raises(StrategyError, match="high_water must be at most 90% of window .180,000., got 180,001"):
            preset.build(system=SYSTEM, counter=COUNTER, high_water=180_001)

    def test_the_folded_outline_of_a_file(self):
        # definitions spanning at least 4 lines, up to the next one at the same indent; the
        # reader's line numbers stripped: alpha is lines 3-6, Beta 8-11; gamma (3) and tiny (1) are short
        assert roo.outline(PY_FILE) == "3--6 | def alpha(x):\n8--11 | class Beta:\n"
        assert roo.outline("just text\nno definitions") == ""
        section = f"<system-reminder>\n## File Context: a.py\n{roo.outline(PY_FILE)}\n</system-reminder>"
        assert roo.folded_files([("a.py", PY_FILE), ("notes.txt", "plain")]) == [section]
        # over the limit: the next file is cut to fit when 200 characters are left, else dropped
        big = "\n".join(f"def f{k}(x):\n    a = x\n    b = a\n    return b" for k in range(20))
        assert len(roo.outline(big)) > 300
        cut = roo.folded_files([("a.py", PY_FILE), ("b.py", big)], len(section) + 250)
        assert cut == [section, (f"<system-reminder>\n## File Context: b.py\n{roo.outline(big)[:150]}\n... (truncated)\n"
                                 "</system-reminder>")]
        assert roo.folded_files([("a.py", PY_FILE), ("b.py", big)], len(section) + 199) == [section]

    def test_a_condense_is_a_fresh_start_with_the_workflows_and_the_files_read(self):
        events: list = []
        distill = Distiller("the summary")
        ctx = _roo(100, distill, events.append)
        task = user('<command name="deploy">ship it</command> then report')
        ctx.begin_turn(task)
        assert not ctx.compact().compacted  # no count yet: Roo waits for one
        ctx.observe(Usage(input_tokens=40, output_tokens=5))
        ctx.append(reply("", ToolCall("c1", "Read", {"file_path": "src/a.py"})))
        ctx.append(results(("c1", PY_FILE)))
        out = ctx.compact()
        (summary,) = out.rendered.messages
        assert out.compacted and summary.text == roo.summary_text(
            "the summary", '<command name="deploy">ship it</command>', roo.folded_files([("src/a.py", PY_FILE)]))
        assert summary.text.startswith("## Conversation Summary\nthe summary\n\n<system-reminder>\n## Active Workflows")
        assert "## File Context: src/a.py\n3--6 | def alpha(x):" in summary.text
        assert isinstance(events[0], roo.Condensed) and events[1] == ContextCompacted(3)
        assert events[0].prev_tokens == 45 + COUNTER.count_message(results(("c1", PY_FILE))) > 100
        assert events[0].new_tokens == COUNTER.count_rendered(Rendered(SYSTEM, (summary,)))
        assert "ship it" in _request_text(distill.requests[0])

    def test_it_condenses_above_the_allowed_tokens_or_at_percent_of_the_window(self):
        # the result costs 43 (bytes / 4, and the message's 3); allowed is 1,000 of a 10,000 window
        for percent, usage, fires in [(100, 957, False), (100, 958, True), (5, 456, False), (5, 457, True)]:
            ctx = _roo(1_000, percent=percent)
            ctx.begin_turn(user("go"))
            ctx.compact()
            ctx.observe(Usage(input_tokens=usage))
            ctx.append(reply("", call("c1")))
            ctx.append(results(("c1", "x" * 160)))  # 40 tokens + 3 for the message
            last = COUNTER.count_message(results(("c1", "x" * 160)))
            out = ctx.compact()
            # above 1,000, or 5% of 10,000 (500) reached: 100 × prev / window >= 5
            assert last == 43
            assert out.compacted == fires == (usage + last > 1_000 or 100 * (usage + last) / 10_000 >= percent)

    def test_a_failed_condense_falls_back_to_hiding_half_the_messages(self):
        events: list = []
        ctx = _roo(100, Distiller(None), events.append)
        ctx.begin_turn(user("task"))
        ctx.compact()
        for k in (1, 2):
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "o")))
            ctx.compact()
        ctx.observe(Usage(input_tokens=500))
        ctx.append(reply("", call("c3")))
        ctx.append(results(("c3", "o")))
        out = ctx.compact()
        # 7 visible: floor(6 / 2) = 3, even: 2 hidden after the first
        assert out.compacted and _names(out.rendered.messages) == ["task", "marker", "a:c2", "r:c2", "a:c3", "r:c3"]
        assert out.rendered.messages[1] == UserInput(roo.truncation_marker(2))
        assert events[-1] == roo.SlidingWindowTruncated(events[-1].prev_tokens, 2, 2)
        ctx.observe(Usage(input_tokens=500))
        ctx.append(reply("", call("c4")))
        ctx.append(results(("c4", "o")))
        # the marker is not visible: 7 again, and the next two go, after the older marker
        assert _names(ctx.compact().rendered.messages) == ["task", "marker", "marker", "a:c3", "r:c3", "a:c4", "r:c4"]

    def test_after_a_condense_the_condensed_away_messages_still_count(self):
        events: list = []
        ctx = _roo(100, Distiller("s", None), events.append)  # one summary, then every condense fails
        ctx.begin_turn(user("task"))
        ctx.compact()

        def round_(k: int, usage: int):
            ctx.observe(Usage(input_tokens=usage))
            ctx.append(reply("", call(f"c{k}")))
            ctx.append(results((f"c{k}", "o")))
            return ctx.compact()

        for k in (1, 2, 3):
            round_(k, 10)
        assert _names(round_(4, 500).rendered.messages) == ["## Convers"]  # 9 hidden by the condense
        round_(5, 10)
        # 9 + 5 visible: floor(13 / 2) = 6 hidden, all condensed-away ones after the first; the
        # marker lands among them, before the summary: nothing the model sees changes
        out = round_(6, 500)
        assert not out.compacted and _names(out.rendered.messages) == ["## Convers", "a:c5", "r:c5", "a:c6", "r:c6"]
        assert events[-1] == roo.SlidingWindowTruncated(events[-1].prev_tokens, 6, 0)
        # 3 + 7 visible: 4 hidden — two condensed-away ones, the summary and c5's call; c5's
        # result, orphaned, is dropped; the marker shows
        out = round_(7, 500)
        assert out.compacted and _names(out.rendered.messages) == ["marker", "a:c6", "r:c6", "a:c7", "r:c7"]
        assert events[-1] == roo.SlidingWindowTruncated(events[-1].prev_tokens, 4, 3)

    @PROPERTY
    @given(conversations(), st.integers(40, 2_000))
    def test_generated_conversations(self, convo, allowed):
        config = roo.Condense(window=10 * allowed, max_tokens=8 * allowed)
        rp = replay(convo, lambda: config.context(SYSTEM, counter=COUNTER, distill=ExtractiveDistiller(max_chars=300)),
                    counter=COUNTER, name="roo")
        full = replay(convo, lambda: FullContext(SYSTEM), counter=COUNTER)
        frame = rp.requests
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            if _after_clean_history(convo, frame, i):
                prev = _previous_usage(frame, i) + COUNTER.count_message(full.rendered(i).messages[-1])
                assert bool(frame.summarized[i]) == (prev > allowed), i
            if frame.summarized[i]:
                assert len(sent) == 1 and sent[0].text.startswith("## Conversation Summary\n")
            else:
                assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]

    def test_bundled_datasets(self):
        _bundled_replays("roo")

    @pytest.mark.real_data
    @pytest.mark.parametrize("path", REAL)
    def test_on_a_real_session_it_condenses_above_the_allowed_tokens(self, real_data, path):
        conv = _real_conversation(path)
        counter = TiktokenCounter()
        rp = _replay(conv, "roo", counter=counter, window=150_000)  # 135,000 - 8,192 = 126,808 allowed
        full = replay(conv, lambda: FullContext(conv.system), counter=counter)
        frame = rp.requests
        condensed = _events(rp, "Condensed")
        assert condensed and rp.limit.tokens == 126_808
        prev = lambda i: _previous_usage(frame, i) + counter.count_message(full.rendered(i).messages[-1])  # noqa: E731
        first = next(i for i in range(1, len(rp)) if prev(i) > 126_808)
        assert condensed[0].request == first and condensed[0].event.prev_tokens == prev(first)
        (summary,) = rp.rendered(first).messages
        assert "## File Context: " in summary.text  # Claude Code's Read results, folded
