"""harpe_lab.widgets without a browser: set a control's ``.value`` as a person would by
dragging, and check what the widgets then show."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from harpe_lab.conversation import Conversation, Turn  # noqa: E402
from harpe_lab.errors import HarpeLabError, StrategyError  # noqa: E402
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput  # noqa: E402
from harpe_lab.widgets import Compare, Explorer, message_text, render_request_html  # noqa: E402

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'


def _turn(t: int, steps: int = 2, size: int = 400, text: str | None = None) -> Turn:
    msgs = []
    for s in range(steps):
        msgs.append(AssistantMessage(f"step {s}", (ToolCall(f"c{t}.{s}", "read", {"path": f"f{s}"}),)))
        msgs.append(ToolResults((ToolResult(f"c{t}.{s}", "x" * size),)))
    msgs.append(AssistantMessage(f"done {t}"))
    return Turn(UserInput(text or f"question {t}"), tuple(msgs))


def _conversation(turns: int = 30, cid: str = "synthetic") -> Conversation:
    return Conversation(tuple(_turn(t) for t in range(turns)), id=cid)


def _summary(rendered) -> str:
    return "summary of earlier turns"


def _explorer(conversation: Conversation | None = None, **kw) -> Explorer:
    kw.setdefault("distill", _summary)
    kw.setdefault("datasets", False)
    return Explorer(conversation or _conversation(), **kw)


class TestExplorerSliders:
    def test_moving_high_water_changes_plot_summary_and_count(self):
        e = _explorer(high_water=1500, low_water=400)
        before = (e.plot.value, e.summary.value, e.compactions.value, e.replay)
        e.high_water.value = 4000
        assert e.plot.value != before[0]
        assert e.summary.value != before[1]
        assert e.replay is not before[3] and e.replay.high_water == 4000
        assert int(e.compactions.value) < int(before[2])

    def test_shown_count_is_the_replays_compactions(self):
        e = _explorer(high_water=1500, low_water=400)
        for value in (1500, 2500, 5000):
            e.high_water.value = value
            assert int(e.compactions.value) == e.replay.totals()["compactions"]
        assert int(e.compactions.value) > 0 or e.high_water.value > e.replay.requests["input_tokens"].max()

    def test_plot_is_a_png(self):
        e = _explorer()
        assert e.plot.format == "png"
        assert e.plot.value[:8] == b"\x89PNG\r\n\x1a\n"

    def test_replays_are_cached_by_parameters(self):
        e = _explorer(high_water=1500, low_water=400)
        first = e.replay
        e.high_water.value = 3000
        e.high_water.value = 1500
        assert e.replay is first

    def test_redraw_reuses_the_figure_and_artists(self):
        e = _explorer(high_water=1500, low_water=400)
        figure, artists = e._figure, [id(a) for a in e._ax.get_children() if a.get_gid()]
        e.high_water.value = 3000
        assert e._figure is figure
        assert [id(a) for a in e._ax.get_children() if a.get_gid()] == artists

    def test_low_water_is_kept_below_high_water(self):
        e = _explorer(high_water=3000, low_water=2000)
        e.high_water.value = 1000
        assert e.low_water.max == 1000 and e.low_water.value <= 1000
        assert e.replay.high_water == 1000

    def test_budget_drives_a_windowing_preset(self):
        e = _explorer(strategy="windowed", budget=800)
        small = e.replay.requests["input_tokens"].max()
        e.budget.value = 3000
        assert e.replay.requests["input_tokens"].max() > small
        assert e.high_water.disabled and e.low_water.disabled

    def test_switching_strategy_replays(self):
        e = _explorer(high_water=1500, low_water=400)
        assert int(e.compactions.value) > 0
        e.strategy.value = "full"
        assert e.replay.strategy == "full"
        assert e.compactions.value == "0"
        assert e.high_water.disabled

    def test_unknown_strategy_names_the_choices(self):
        with pytest.raises(HarpeLabError, match=r"`strategy` must be one of \['full', .*\], but 'fancy' was passed."):
            _explorer(strategy="fancy")


class TestExplorerStepper:
    def test_step_moves_the_gauge_and_the_request_view(self):
        e = _explorer(high_water=1500, low_water=400)
        e.step.value = 0
        view0, gauge0 = e.request_view.value, e.gauge.value
        e.step.value = e.step.max
        assert e.request_view.value != view0
        assert e.gauge.value == e.replay.requests["input_tokens"].iat[e.step.max] != gauge0
        assert f"/ {e.budget.value:,} tokens at request {e.step.max}" in e.gauge_label.value

    def test_step_range_follows_the_replay(self):
        e = _explorer()
        assert e.step.max == len(e.replay) - 1

    def test_buttons_step_and_stop_at_the_ends(self):
        e = _explorer()
        e.step.value = 0
        e.next_button.click()
        assert e.step.value == 1
        e.prev_button.click()
        e.prev_button.click()
        assert e.step.value == 0

    def test_view_marks_summarized_messages_after_a_compaction(self):
        e = _explorer(high_water=1500, low_water=400)
        e.step.value = e.step.max
        kept = e.replay.kept(e.step.max)
        assert "summarized" in kept.values()
        assert 'class="msg summarized"' in e.request_view.value
        assert "summary of earlier turns" in e.request_view.value  # the summary in the system prompt

    def test_gauge_turns_red_over_budget(self):
        e = _explorer(strategy="full", budget=500)
        e.step.value = e.step.max
        assert e.gauge.bar_style == "danger"


class TestEscaping:
    def test_transcript_text_is_escaped(self):
        c = Conversation((_turn(0, text=SCRIPT), _turn(1, text=IMG)), id="evil")
        e = _explorer(c, strategy="full")
        e.step.value = e.step.max
        view = e.request_view.value
        assert "<script>" not in view and "<img" not in view
        assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in view
        assert "&lt;img src=x onerror=&quot;window.__pwned=2&quot;&gt;" in view

    def test_tool_call_arguments_and_ids_are_escaped(self):
        turn = Turn(UserInput("hi"), (AssistantMessage("", (ToolCall("c1", "run", {"cmd": SCRIPT}),)),
                                      ToolResults((ToolResult("c1", IMG),)), AssistantMessage("ok")),
                    ids=("<b>0", "<b>1", "<b>2", "<b>3"))  # fmt: skip
        c = Conversation((turn,), id="ids")
        e = _explorer(c, strategy="full")
        e.step.value = e.step.max
        assert "<b>" not in e.request_view.value and "<script>" not in e.request_view.value
        assert "&lt;b&gt;1" in e.request_view.value

    def test_long_histories_collapse_the_oldest_sent_messages(self):
        e = _explorer(_conversation(40), strategy="full")
        html = render_request_html(e.replay, len(e.replay) - 1)
        assert "sent, not listed" in html
        assert html.count('<div class="msg sent"><span class="tag">') <= 62

    def test_request_index_is_checked(self):
        e = _explorer(_conversation(3), strategy="full")
        with pytest.raises(HarpeLabError, match=r"`request` must be in 0\.\.\d+, but 99 was passed"):
            render_request_html(e.replay, 99)

    def test_message_text_shows_calls_and_failed_results(self):
        assert message_text(AssistantMessage("a", (ToolCall("1", "grep", {"q": "x"}),))) == 'a\n→ grep({"q": "x"})'
        assert message_text(ToolResults((ToolResult("1", "boom", success=False),))) == "[failed] boom"


def _bad_distill(rendered):
    return 42  # not a str: SummarizingContext raises StrategyError on its first compaction


class TestErrors:
    def test_callback_error_is_shown_not_swallowed(self):
        e = _explorer(strategy="full", distill=_bad_distill, high_water=1500, low_water=400)
        assert e.errors.outputs == ()
        e.strategy.value = "summarizing"
        assert isinstance(e.last_error, StrategyError)
        shown = "".join(o.get("text", "") for o in e.errors.outputs)
        assert "StrategyError" in shown and "distill must return a str" in shown

    def test_error_clears_on_the_next_good_redraw(self):
        e = _explorer(strategy="full", distill=_bad_distill, high_water=1500, low_water=400)
        e.strategy.value = "summarizing"
        e.strategy.value = "windowed"
        assert e.last_error is None and e.errors.outputs == ()

    def test_an_error_while_building_is_raised(self):
        with pytest.raises(StrategyError, match="distill must return a str"):
            _explorer(distill=_bad_distill, high_water=1500, low_water=400)


class TestSources:
    def test_picker_switches_conversation_and_refits_the_sliders(self):
        small, large = _conversation(3, cid="small"), _conversation(60, cid="large")
        e = _explorer({"small": small, "large": large}, strategy="full")
        assert list(e.source.options) == ["small", "large"]
        top = e.budget.max
        e.source.value = "large"
        assert e.replay.conversation is large
        assert e.budget.max > top
        assert e.step.max == len(e.replay) - 1

    def test_bundled_datasets_join_the_picker(self):
        from harpe_lab import datasets

        names = datasets.list_datasets()
        if not names:
            pytest.fail("no bundled dataset found: datasets/ should ship at least one")
        e = Explorer(_conversation(3), distill=_summary, strategy="full")
        assert [f"dataset: {n}" for n in names] == list(e.source.options)[1:]
        e.source.value = f"dataset: {names[0]}"
        assert e.replay.conversation.id == names[0]

    def test_bad_source_says_what_is_accepted(self):
        with pytest.raises(HarpeLabError, match="`source` must be a Conversation, a dataset name, a path"):
            Explorer(42)

    def test_unknown_dataset_name_lists_the_bundled_ones(self):
        with pytest.raises(HarpeLabError, match=r"`source` must be one of the bundled datasets \[.*\] or an existing path, but 'nope' was passed"):
            Explorer("nope")


class TestCompare:
    def test_shows_every_strategy_and_the_table(self):
        c = _conversation(20)
        cmp = Compare(c, ["full", "windowed", "summarizing"], budget=1500, distill=_summary)
        assert set(cmp.replays) == {"full", "windowed", "summarizing"}
        assert len(cmp.panels.children) == 3
        assert all(img.value[:4] == b"\x89PNG" for img in cmp.panels.children)
        assert len(cmp.frame) == 3
        for name in ("full", "windowed", "summarizing"):
            assert name in cmp.table.value

    def test_budget_slider_reruns_the_presets(self):
        c = _conversation(20)
        cmp = Compare(c, ["full", "windowed"], budget=1000)
        full, windowed, plot = cmp.replays["full"], cmp.replays["windowed"], cmp.plot.value
        cmp.budget.value = 4000
        assert cmp.replays["full"] is full  # its replay does not depend on the budget
        assert cmp.replays["windowed"] is not windowed
        assert cmp.plot.value != plot

    def test_table_escapes_conversation_ids(self):
        c = Conversation((_turn(0), _turn(1)), id=SCRIPT)
        cmp = Compare(c, ["full"])
        assert "<script>" not in cmp.table.value
        assert "&lt;script&gt;" in cmp.table.value

    def test_unknown_preset_names_the_choices(self):
        with pytest.raises(HarpeLabError, match=r"`strategies` must be among \[.*\], but 'nope' was passed."):
            Compare(_conversation(3), ["full", "nope"])
