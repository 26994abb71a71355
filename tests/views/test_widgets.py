"""harpe_lab.widgets without a browser: set a control's ``.value`` as a person would by
dragging, and check what the widgets then show."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import itertools  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402

import pytest  # noqa: E402

from harpe_lab.strategies.harpe import FullContext  # noqa: E402
from harpe_lab.datasets import list_datasets  # noqa: E402
from harpe_lab.conversation import Conversation, RecordedCompaction, Turn  # noqa: E402
from harpe_lab.errors import HarpeLabError, StrategyError  # noqa: E402
from harpe_lab.measure import measure  # noqa: E402
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, Usage, UserInput  # noqa: E402
from harpe_lab.models import CallPricing, Pricing  # noqa: E402
from harpe_lab.presets import PRESETS, make_strategy  # noqa: E402
from harpe_lab.replay import replay, totals  # noqa: E402
from harpe_lab.report import format_value  # noqa: E402
from harpe_lab.tokens import ApproxCounter, ScaledCounter, TiktokenCounter  # noqa: E402
from harpe_lab.widgets import Compare, Explorer, render_request_html  # noqa: E402
from harpe_lab.widgets._render import _shown_text  # noqa: E402
from tests._support.builders import reading_conversation, reading_turn  # noqa: E402

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=2">'
COUNTER = ApproxCounter()
"""The counter of the tests about sliders, steps and errors, which size conversations of
repeated characters (a tokenizer would count them as few tokens); the default measure has
tests of its own (`TestMeasure`)."""


def _summary(rendered) -> str:
    return "summary of earlier turns"


def _explorer(conversation: Conversation | None = None, **kw) -> Explorer:
    kw.setdefault("distill", _summary)
    kw.setdefault("datasets", False)
    kw.setdefault("counter", COUNTER)
    return Explorer(conversation or reading_conversation(30), **kw)


def _compare(conversation: Conversation, strategies, **kw) -> Compare:
    kw.setdefault("counter", COUNTER)
    return Compare(conversation, strategies, **kw)


def _stats(e: Explorer) -> dict[str, str]:
    """The stats table's cells by key, as shown."""
    return dict(re.findall(r"<tr data-key='([a-z_]+)'><th>[^<]*</th><td>([^<]*)</td></tr>", e.summary.value))


def _counts(e: Explorer) -> dict[str, str]:
    return {name: label.value for name, label in e.counts.items()}


class TestExplorerSliders:
    def test_moving_high_water_changes_plot_summary_and_count(self):
        e = _explorer(high_water=1500, low_water=400)
        before = (e.plot.value, e.summary.value, e.compactions.value, e.replay)
        e.high_water.value = 4000
        assert e.plot.value != before[0]
        assert e.summary.value != before[1]
        assert e.replay is not before[3] and e.replay.limit.tokens == 4000
        assert int(e.compactions.value) < int(before[2])

    def test_header_and_table_show_the_frames_totals(self):
        e = _explorer(high_water=1500, low_water=400)
        for value in (1500, 2500, 5000):
            e.high_water.value = value
            t = totals(e.replay.requests)
            assert _counts(e) == {k: str(t[k]) for k in ("compactions", "summaries", "overshoots")}
            assert _stats(e)["compactions"] == f"{t['compactions']:,}" and _stats(e)["overshoots"] == f"{t['overshoots']:,}"
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

    def test_each_picture_is_the_full_draw_of_the_figure(self):
        # a redraw reuses the pixels of what did not change: the PNG must still be exactly
        # what drawing the whole figure gives, whatever moved
        import io

        import numpy as np
        from PIL import Image

        e = _explorer([reading_conversation(30), reading_conversation(30, cid="twin")], high_water=1500, low_water=400)

        def check():
            shown = np.asarray(Image.open(io.BytesIO(e.plot.value)).convert("RGBA"))
            e._figure.canvas.draw()
            assert np.array_equal(shown, np.asarray(e._figure.canvas.buffer_rgba()))

        check()
        legends = {e._plot._legend_key}
        for move in (lambda: setattr(e.high_water, "value", 2500), lambda: setattr(e.step, "value", 7),
                     lambda: setattr(e.step, "value", 0), lambda: setattr(e.high_water, "value", 100_000),
                     lambda: setattr(e.low_water, "value", 900), lambda: setattr(e.step, "value", e.step.max),
                     lambda: setattr(e.strategy, "value", "full"), lambda: setattr(e.step, "value", 3),
                     lambda: setattr(e.strategy, "value", "summarizing"),
                     lambda: setattr(e.source, "value", "twin")):  # fmt: skip
            before = e.plot.value
            move()
            assert e.last_error is None and e.plot.value != before
            check()
            legends.add(e._plot._legend_key)
        assert len(legends) > 1  # the legend changed on the way, so the kept text was redrawn too

    def test_budget_drives_a_windowing_preset(self):
        e = _explorer(strategy="windowed", budget=800)
        small = e.replay.requests["input_tokens"].max()
        e.budget.value = 3000
        assert e.replay.requests["input_tokens"].max() > small
        assert e.replay.limit.tokens == 3000
        assert e.shown_knobs() == ["budget"]

    def test_switching_strategy_replays_and_shows_its_knobs(self):
        e = _explorer(high_water=1500, low_water=400)
        assert int(e.compactions.value) > 0
        e.strategy.value = "full"
        assert e.replay.strategy == "full"
        assert _counts(e) == {"compactions": "0", "summaries": "0", "overshoots": "0"}
        assert e.shown_knobs() == []
        e.strategy.value = "summarizing"
        assert e.shown_knobs() == ["high_water", "low_water"]
        assert e.high_water.value == 1500  # the value set before is kept

    def test_unknown_strategy_names_the_choices(self):
        with pytest.raises(HarpeLabError, match=r"`strategy` must be one of \['full', .*\], but 'fancy' was passed."):
            _explorer(strategy="fancy")


class TestKnobs:
    """Only the picked preset's knobs are shown, each ranged from the conversation."""

    @pytest.mark.parametrize("name", list(PRESETS))
    def test_each_preset_shows_exactly_its_knobs_with_ranges_from_the_conversation(self, name):
        e = _explorer(strategy="full")
        e.strategy.value = name  # the callback, as a person picking from the dropdown
        preset = PRESETS[name]
        assert e.last_error is None
        assert e.shown_knobs() == [k.name for k in preset.knobs]
        hidden = set(e.knob_rows) - {k.name for k in preset.knobs}
        assert all(e.knob_rows[h].layout.display == "none" for h in hidden)
        peak = int(totals(replay(e.conversation, PRESETS["full"].build(system=e.conversation.system),
                                 counter=e.counter).requests)["input_tokens_max"])  # fmt: skip
        for knob in preset.knobs:
            lo, hi = knob.range_for(peak)
            slider = e.knobs[knob.name]
            assert (slider.min, slider.max) == (lo, max(hi, slider.value)), knob.name
            assert slider.min <= slider.value <= slider.max

    @pytest.mark.parametrize("name", [n for n, p in PRESETS.items() if p.knobs])
    def test_moving_each_knob_rebuilds_the_strategy_with_it(self, name):
        e = _explorer(strategy=name)
        for knob in PRESETS[name].knobs:
            box = e.auto.get(knob.name)
            if box is not None:
                box.value = False  # take the slider's value instead of the derived default
            slider = e.knobs[knob.name]
            new = slider.min + (slider.max - slider.min) // 3 or slider.max
            slider.value = new
            assert e.last_error is None, e.last_error
            assert e.parameters()[knob.name] == new
            assert e._key(e.parameters()) in e._cache and e._cache[e._key(e.parameters())] is e.replay
        budget = PRESETS[name].budget_knob
        if budget is not None and e.replay.limit is not None:
            assert e.replay.limit.tokens == e.knobs[budget.name].value

    def test_auto_knobs_pass_none_to_the_preset(self):
        e = _explorer(high_water=1500)
        box = e.values["low_water"]
        assert e.auto["low_water"].value and e.low_water.disabled and box.disabled and box.value == "auto"
        assert e.parameters() == {"high_water": 1500, "low_water": None}
        auto = e.replay
        e.auto["low_water"].value = False
        assert not e.low_water.disabled and not box.disabled and box.value == f"{e.low_water.value:,}"
        assert e.parameters()["low_water"] == e.low_water.value and e.replay is not auto

    def test_a_derived_budget_sits_at_the_strategys_own_threshold(self):
        # claude-code derives its high water from its window: 200,000 - 33,000. Left on
        # "auto", the slider shows that threshold, so unchecking it starts there
        e = _explorer(reading_conversation(40, size=10_000, cid="big"), strategy="claude-code")
        assert e.parameters()["high_water"] is None and e.replay.limit.tokens == 167_000
        assert e.high_water.value == 167_000 and e.high_water.min <= 167_000 <= e.high_water.max
        derived = e.replay
        e.auto["high_water"].value = False
        assert e.parameters()["high_water"] == 167_000
        assert e.replay.requests.equals(derived.requests)

    def test_a_170k_token_session_can_be_explored(self):
        e = _explorer(reading_conversation(40, size=10_000, cid="big"), strategy="sliding")
        peak = e.peak()
        assert peak > 170_000
        assert e.budget.max >= peak  # not capped
        e.budget.value = 113_878
        assert e.last_error is None and e.budget.value == 113_878
        assert e.replay.limit.tokens == 113_878
        assert e.replay.requests["input_tokens"].max() <= 113_878


class TestConstructorArguments:
    @pytest.mark.parametrize("kwargs, message", [
        ({"budget": -3}, r"`budget` must be a whole number of tokens >= 1, but -3 was passed."),
        ({"budget": 0, "strategy": "windowed"}, r"`budget` must be a whole number of tokens >= 1, but 0 was passed."),
        ({"budget": "big"}, r"`budget` must be .* but 'big' was passed."),
        ({"budget": 1500.5}, r"`budget` must be a whole number .* but 1500.5 was passed."),
        ({"high_water": -1}, r"`high_water` must be a whole number of tokens >= 1, but -1 was passed."),
        ({"n": 0, "strategy": "chain"}, r"`n` must be a whole number of messages >= 1, but 0 was passed."),
        ({"budget": 900, "high_water": 800}, r"pass `budget` or `high_water`, not both"),
        ({"hig_water": 800}, r"`hig_water` is not a knob of any preset: the knobs are \['budget', 'high_water'"),
        ({"dpi": 0}, r"`dpi` must be a positive number, but 0 was passed."),
        ({"cache_size": 0}, r"`cache_size` must be an int >= 1, but 0 was passed."),
        ({"figsize": (9,)}, r"`figsize` must be a \(width, height\) pair"),
        ({"limit": -5}, r"`limit` must be a positive token count, but -5 was passed."),
        ({"distill": "summary"}, r"`distill` must be a callable"),
        ({"pricing": 12}, r"`pricing` must be 'auto', a model name, a harpe_lab.models.Pricing or CallPricing, or None, "
                          r"but 12 was passed."),
        ({"calibrate": "yes"}, r"`calibrate` must be True or False, but 'yes' was passed."),
        ({"pricing": "no-such-model"}, r"no price for model 'no-such-model'"),
    ])  # fmt: skip
    def test_bad_arguments_raise_a_clear_error(self, kwargs, message):
        with pytest.raises(HarpeLabError, match=message):
            _explorer(**kwargs)

    def test_integral_floats_are_accepted(self):
        e = _explorer(strategy="windowed", budget=800.0)
        assert e.budget.value == 800 and e.replay.limit.tokens == 800

    def test_a_budget_for_a_preset_without_one_waits_for_a_preset_with_one(self):
        e = _explorer(strategy="full", budget=900)
        assert e.shown_knobs() == []
        e.strategy.value = "windowed"
        assert e.budget.value == 900 and e.replay.limit.tokens == 900


class TestExplorerStepper:
    def test_step_moves_the_gauge_and_the_request_view(self):
        e = _explorer(high_water=1500, low_water=400)
        e.step.value = 0
        view0, gauge0 = e.request_view.value, e.gauge.value
        e.step.value = e.step.max
        assert e.request_view.value != view0
        assert e.gauge.value == e.replay.requests["input_tokens"].iat[e.step.max] != gauge0
        assert e.gauge_label.value.endswith(f"/ 1,500 tokens (high water) at request {e.step.max}")

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

    def test_gauge_turns_red_over_the_strategys_limit(self):
        e = _explorer(strategy="windowed", budget=500)  # the current turn is never cut: it goes over
        over = e.replay.requests["overshoot_tokens"].to_numpy().nonzero()[0]
        assert len(over)
        e.step.value = int(over[-1])
        assert e.gauge.bar_style == "danger"
        assert "(target)" in e.gauge_label.value

    def test_gauge_measures_against_the_model_limit_when_given(self):
        e = _explorer(strategy="full", limit=100_000)
        assert e.gauge_label.value.endswith(f"/ 100,000 tokens (model limit) at request {e.step.value}")


class TestEscaping:
    def test_transcript_text_is_escaped(self):
        c = Conversation((reading_turn(0, text=SCRIPT), reading_turn(1, text=IMG)), id="evil")
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
        e = _explorer(reading_conversation(40), strategy="full")
        html = render_request_html(e.replay, len(e.replay) - 1)
        assert "sent, not listed" in html
        assert html.count('<div class="msg sent"><span class="tag">') <= 62

    def test_request_index_is_checked(self):
        e = _explorer(reading_conversation(3), strategy="full")
        with pytest.raises(HarpeLabError, match=r"`request` must be in 0\.\.\d+, but 99 was passed"):
            render_request_html(e.replay, 99)

    def test_message_text_shows_calls_and_failed_results(self):
        assert _shown_text(AssistantMessage("a", (ToolCall("1", "grep", {"q": "x"}),))) == 'a\n→ grep({"q": "x"})'
        assert _shown_text(ToolResults((ToolResult("1", "boom", success=False),))) == "[failed] boom"


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

    def test_an_error_replaces_the_picture_and_resets_the_stats(self):
        e = _explorer(strategy="windowed", budget=1500, distill=_bad_distill, high_water=1500, low_water=400)
        assert int(e.compactions.value) > 0 and e.plot.layout.display != "none"
        e.strategy.value = "summarizing"
        # the dropdown and the picture agree: the error of the picked strategy, nothing of windowed's
        assert e.strategy.value == "summarizing" and e.replay is None
        assert e.plot.layout.display == "none" and e.plot_error.layout.display != "none"
        assert "summarizing (high_water=1,500, low_water=400) on synthetic: no replay" in e.plot_error.value
        assert "StrategyError" in e.plot_error.value and "distill must return a str" in e.plot_error.value
        assert _counts(e) == {"compactions": "–", "summaries": "–", "overshoots": "–"}
        assert set(_stats(e).values()) == {"–"}
        assert e.gauge.value == 0 and e.gauge_label.value == "" and e.request_view.value == ""
        assert e.step.max == 0
        e.next_button.click()  # stepping with no replay does nothing, and keeps the error shown
        assert e.replay is None and isinstance(e.last_error, StrategyError)

    def test_error_text_is_escaped(self):
        def evil(rendered):
            raise StrategyError(SCRIPT)

        e = _explorer(strategy="full", distill=evil, high_water=1500, low_water=400)
        e.strategy.value = "summarizing"
        assert "<script>" not in e.plot_error.value and "&lt;script&gt;" in e.plot_error.value

    def test_error_clears_on_the_next_good_redraw(self):
        e = _explorer(strategy="full", distill=_bad_distill, high_water=1500, low_water=400)
        e.strategy.value = "summarizing"
        e.strategy.value = "windowed"
        assert e.last_error is None and e.errors.outputs == ()
        assert e.replay.strategy == "windowed"
        assert e.plot.layout.display != "none" and e.plot_error.layout.display == "none"
        t = totals(e.replay.requests)
        assert _counts(e)["compactions"] == str(t["compactions"]) and _stats(e)["requests"] == f"{t['requests']:,}"

    def test_an_error_while_building_is_raised(self):
        with pytest.raises(StrategyError, match="distill must return a str"):
            _explorer(distill=_bad_distill, high_water=1500, low_water=400)


class TestSources:
    def test_picker_switches_conversation_and_refits_the_sliders(self):
        small, large = reading_conversation(3, cid="small"), reading_conversation(60, cid="large")
        e = _explorer({"small": small, "large": large}, strategy="windowed")
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
        e = Explorer(reading_conversation(3), distill=_summary, strategy="full")
        assert [f"dataset: {n}" for n in names] == list(e.source.options)[1:]
        e.source.value = f"dataset: {names[0]}"
        assert e.replay.conversation.id == names[0]

    def test_bad_source_says_what_is_accepted(self):
        with pytest.raises(HarpeLabError, match="`source` must be a Conversation, a dataset name, a path"):
            Explorer(42)

    def test_unknown_dataset_name_lists_the_bundled_ones(self):
        with pytest.raises(HarpeLabError, match=r"`source` must be one of the bundled datasets \[.*\] or an existing path, but 'nope' was passed"):
            Explorer("nope")


def _recorded_conversation(turns: int = 10, models: tuple[str, ...] = ("claude-opus-4-6",), *,
                           compact_at: int | None = None, cid: str = "recorded", **metadata) -> Conversation:
    """A session with provider usage on every reply (its input grows by 500 tokens a call),
    the replies made by ``models`` in turn, and a recorded compaction at the start of turn
    ``compact_at``."""
    out, reply, total = [], itertools.count(), 2_000
    for t in range(turns):
        msgs, usage = [], []
        for s in range(2):
            text = " ".join(f"line {t}.{s}.{k} of the file" for k in range(60))
            msgs += [AssistantMessage(f"step {s}", (ToolCall(f"c{t}.{s}", "read", {"path": f"f{s}"}),)),
                     ToolResults((ToolResult(f"c{t}.{s}", text),))]  # fmt: skip
        msgs.append(AssistantMessage(f"done {t}"))
        for _ in range(3):
            total += 500
            usage.append(Usage(input_tokens=total, output_tokens=40, model=models[next(reply) % len(models)]))
        out.append(Turn(UserInput(f"question {t}"), tuple(msgs), usage=tuple(usage)))
    compactions = () if compact_at is None else (RecordedCompaction(turn=compact_at, pre_tokens=9_000, trigger="auto"),)
    return Conversation(tuple(out), id=cid, compactions=compactions, metadata=metadata)


def _header(e) -> str:
    return e.header.value.split("<div class='harpe-measure'>", 1)[1]


class TestMeasure:
    """The Explorer measures a recording as the CLI does (`harpe_lab.measure.measure`):
    calibrated on its provider usage, each call priced by its own model, and says so."""

    def test_the_default_counter_is_calibrated_on_the_recording_and_said(self):
        c = _recorded_conversation()
        e = Explorer(c, strategy="full", datasets=False)
        assert isinstance(e.counter, ScaledCounter) and e.measure.calibrated
        assert e.counter.base.name == "cl100k_base"
        header = _header(e)
        assert "counter: cl100k_base fitted to 30 recorded requests" in header and "median error" in header
        assert "prices (per call, USD per million tokens): claude-opus-4-6 input 5, output 25" in header
        assert "recorded: 30 calls, peak input 17,000 tokens" in header

    def test_a_named_counter_is_calibrated_too_unless_told_not_to(self):
        c = _recorded_conversation()
        named = Explorer(c, strategy="full", datasets=False, counter="o200k_base")
        assert isinstance(named.counter, ScaledCounter) and named.counter.base.name == "o200k_base"
        assert "counter: o200k_base fitted to" in _header(named)
        plain = Explorer(c, strategy="full", datasets=False, counter="o200k_base", calibrate=False)
        assert isinstance(plain.counter, TiktokenCounter) and plain.counter.name == "o200k_base"
        assert "counter: o200k_base, uncalibrated: calibration turned off" in _header(plain)
        given = ScaledCounter(TiktokenCounter("cl100k_base"), factor=1.5, offset=1_000)
        scaled = Explorer(c, strategy="full", datasets=False, counter=given)
        assert scaled.counter is given and "(×1.500 + 1,000, given)" in _header(scaled)
        assert scaled.replay.requests["input_tokens"].sum() != named.replay.requests["input_tokens"].sum()

    def test_a_recording_without_usage_is_said_uncalibrated_and_unpriced(self):
        e = Explorer(reading_conversation(3), strategy="full", datasets=False)
        header = _header(e)
        assert "counter: cl100k_base, uncalibrated: the recording has no provider usage" in header
        assert 'prices: none (the recording names no model; pass pricing=&quot;MODEL&quot; to the widget)' in header
        assert _stats(e)["cost_usd_cached"] == "–" and _stats(e)["cost_usd"] == "–"
        priced = Explorer(reading_conversation(3), strategy="full", datasets=False, pricing="claude-opus-4-6")
        assert "prices (USD per million tokens): claude-opus-4-6 input 5" in _header(priced)
        assert _stats(priced)["cost_usd"] == format_value("cost_usd", totals(priced.replay.requests)["cost_usd"])

    def test_the_summary_shows_the_cost_with_and_without_caching(self):
        e = Explorer(_recorded_conversation(), strategy="windowed", budget=6_000, datasets=False)
        t = totals(e.replay.requests)
        assert t["cost_usd_cached"] > 0 and t["cost_usd"] > t["cost_usd_cached"]
        assert _stats(e)["cost_usd_cached"] == f"${t['cost_usd_cached']:,.4f}"
        assert _stats(e)["cost_usd"] == f"${t['cost_usd']:,.4f}"

    def test_a_mixed_model_conversation_is_priced_call_by_call(self):
        c = _recorded_conversation(models=("claude-opus-4-6", "claude-haiku-4-5"))
        e = Explorer(c, strategy="full", datasets=False)
        assert isinstance(e.pricing, CallPricing) and set(e.pricing.models) == {"claude-opus-4-6", "claude-haiku-4-5"}
        assert "claude-opus-4-6 input 5, output 25" in _header(e) and "claude-haiku-4-5 input 1, output 5" in _header(e)
        frame = e.replay.requests
        model = e.measure.recorded.calls.set_index("request")["model"]
        assert set(model) == {"claude-opus-4-6", "claude-haiku-4-5"}
        for i in range(len(frame)):
            price = Pricing.for_model(model[i])
            expected = frame.at[i, "input_tokens"] * price.input + frame.at[i, "output_tokens"] * price.output
            assert frame.at[i, "cost_usd"] == pytest.approx(expected, rel=1e-12), (i, model[i])
        as_opus = replay(c, e.factory(), counter=e.counter, pricing="claude-opus-4-6")
        assert totals(frame)["cost_usd"] < 0.8 * totals(as_opus.requests)["cost_usd"]

    def test_the_recorded_compaction_is_marked_beside_the_replayed_ones(self):
        c = _recorded_conversation(compact_at=6)
        e = Explorer(c, strategy="summarizing", high_water=6_000, datasets=False)
        (point,) = e.measure.recorded.compactions
        x, y = e._plot.recorded.get_data()
        assert list(x) == [point.request - 0.5] and list(y) == [9_000]
        labels = [t.get_text() for t in e._ax.get_legend().get_texts()]
        assert "recorded compaction" in labels and "compacted" in labels
        assert int(e.compactions.value) > 0 and len(e._plot.compactions.get_xdata()) == int(e.compactions.value)
        assert "recorded auto compaction before request 18: 9,000" in _header(e)
        e.strategy.value = "full"  # the recording's compaction stays: it is what happened
        assert list(e._plot.recorded.get_xdata()) == [point.request - 0.5] and e.compactions.value == "0"

    def test_pictures_with_the_recorded_marks_are_full_draws(self):
        # the marks are redrawn over kept pixels on each move: the picture must still be the
        # whole figure's, with the marks where the y axis now puts them
        import io

        import numpy as np
        from PIL import Image

        e = Explorer(_recorded_conversation(compact_at=6), strategy="summarizing", high_water=6_000, datasets=False)
        for move in (lambda: setattr(e.step, "value", 20), lambda: setattr(e.high_water, "value", 12_000),
                     lambda: setattr(e.strategy, "value", "full"), lambda: setattr(e.step, "value", 3)):  # fmt: skip
            move()
            assert e.last_error is None
            shown = np.asarray(Image.open(io.BytesIO(e.plot.value)).convert("RGBA"))
            e._figure.canvas.draw()
            assert np.array_equal(shown, np.asarray(e._figure.canvas.buffer_rgba()))

    def test_the_measure_is_made_once_per_conversation(self, monkeypatch):
        import importlib

        measure_module = importlib.import_module("harpe_lab.measure")  # the package re-exports the function
        made = []
        real = measure_module.measure
        monkeypatch.setattr(measure_module, "measure", lambda c, **kw: made.append(c.id) or real(c, **kw))
        a, b = _recorded_conversation(cid="a"), _recorded_conversation(6, cid="b")
        e = Explorer({"a": a, "b": b}, strategy="windowed", datasets=False)
        first = e.measure
        e.source.value = "b"
        assert e.measure is not first and e.replay.conversation is b and "recorded: 18 calls" in _header(e)
        e.budget.value = e.budget.value + e.budget.step
        e.source.value = "a"
        assert e.measure is first and "recorded: 30 calls" in _header(e)
        assert made == ["a", "b"]

    @pytest.mark.slow
    def test_a_real_session_gives_the_clis_totals(self, real_data, capsys):
        from harpe_lab.cli import main
        from harpe_lab.importers import load_any

        path = real_data / "claude_code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
        if not path.exists():
            pytest.skip(f"{path} is absent")
        e = Explorer(str(path), strategy="claude-code", datasets=False)
        conversation = load_any(str(path))
        m = measure(conversation)
        assert e.measure.calibrated and e.counter.factor == m.counter.factor and e.counter.offset == m.counter.offset
        assert "tokens per request not in the file" in _header(e)  # Claude Code's system prompt and tools
        for budget in (None, 120_000):
            if budget is not None:
                e.values["high_water"].value = f"{budget:,}"  # typed, as a person would
                assert e.parameters()["high_water"] == budget
            mine = totals(e.replay.requests)
            factory = make_strategy("claude-code", budget=budget, counter=m.counter, system=conversation.system)
            alone = totals(replay(conversation, factory, counter=m.counter, pricing=m.pricing).requests)
            argv = ["replay", str(path), "--strategy", "claude-code", "--format", "json"]
            assert main(argv + ([] if budget is None else ["--budget", str(budget)])) == 0
            cli = json.loads(capsys.readouterr().out)["totals"]
            assert mine["cost_usd_cached"] > 1 and mine["compactions"] >= 1
            # every total of the request frame the CLI prints (it prints other figures too)
            shared = set(cli) & set(mine)
            assert {"requests", "input_tokens_sum", "compactions", "cost_usd", "cost_usd_cached",
                    "cache_read_tokens_sum", "cache_write_tokens_sum"} <= shared  # fmt: skip
            for key in shared:
                assert mine[key] == pytest.approx(cli[key], rel=1e-12), (budget, key)
                assert alone[key] == pytest.approx(cli[key], rel=1e-12), (budget, key)
            assert _stats(e)["cost_usd_cached"] == f"${cli['cost_usd_cached']:,.4f}"
        recorded = e.measure.recorded.compactions
        assert recorded and list(e._plot.recorded.get_xdata()) == [c.request - 0.5 for c in recorded]


class TestSliderRanges:
    def test_budget_knobs_run_up_to_the_declared_window(self):
        c = _recorded_conversation(context_window=50_000)
        e = Explorer(c, strategy="windowed", datasets=False)
        assert e.window() == 50_000 and e.peak() < 25_000
        assert e.budget.max == 50_000
        e.strategy.value = "summarizing"
        assert e.high_water.max == 50_000 and e.low_water.max == 50_000
        e.strategy.value = "chain"  # a count of messages does not scale with the window
        assert e.knobs["n"].max == PRESETS["chain"].knob("n").range_for(e.peak())[1]

    def test_a_coding_agent_s_window_starts_at_the_declared_one(self):
        # as the CLI and compare replay a session: at the model's window, not the agent's default
        c = _recorded_conversation(context_window=50_000)
        e = Explorer(c, strategy="codex", datasets=False)
        assert e.parameters()["window"] == 50_000
        cli = replay(c, make_strategy("codex", counter=e.counter, system=c.system, window=50_000),
                     counter=e.counter, pricing=e.pricing)
        assert e.replay.totals()["input_tokens_sum"] == cli.totals()["input_tokens_sum"]
        e.knobs["window"].value = 60_000
        e.strategy.value = "gemini-compress"  # the same quantity: the value moved to stays
        assert e.parameters()["window"] == 60_000
        e.strategy.value = "hybrid"  # its window counts tool rounds
        assert e.parameters()["window"] == PRESETS["hybrid"].knob("window").default
        assert Explorer(c, strategy="codex", datasets=False, window=90_000).parameters()["window"] == 90_000
        # a recording that states an agent's effective window (a Codex rollout): the model's is the knob's
        codex_like = _recorded_conversation(context_window=50_000, model_window=52_632)
        e = Explorer(codex_like, strategy="codex", datasets=False)
        assert e.window() == 50_000 and e.parameters()["window"] == 52_632
        assert Compare(codex_like, ["aider"]).replays["aider"].totals() == replay(
            codex_like, make_strategy("aider", counter=e.counter, system=c.system, window=52_632), counter=e.counter,
            pricing=e.pricing).totals()

    def test_a_limit_sets_the_window_the_sliders_reach(self):
        e = Explorer(_recorded_conversation(context_window=50_000), strategy="windowed", datasets=False, limit=80_000)
        assert e.window() == 80_000 and e.budget.max == 80_000
        assert e.gauge_label.value.endswith("/ 80,000 tokens (model limit) at request 0")

    def test_without_a_window_they_reach_a_little_above_the_peak(self):
        e = _explorer(strategy="windowed")
        assert e.window() is None
        assert e.budget.max == PRESETS["windowed"].knob("budget").range_for(e.peak())[1]


class TestTypedValues:
    def test_a_typed_value_within_the_range_is_applied_silently(self):
        e = _explorer(high_water=1500, low_water=400)
        e.values["high_water"].value = "2,500"
        assert e.high_water.value == 2500 and e.replay.limit.tokens == 2500
        assert e.values["high_water"].value == "2,500" and e.message.value == ""

    def test_a_typed_value_above_the_range_widens_it_and_says_so(self):
        e = _explorer(high_water=1500, low_water=400)
        top = e.high_water.max
        e.values["high_water"].value = f"{top * 3}"
        assert e.high_water.value == e.high_water.max == top * 3
        assert e.replay.limit.tokens == top * 3
        shown = e.message.value
        assert f"high water: {top * 3:,} is outside the slider&#x27;s range 1–{top:,}" in shown
        assert "largest request" in shown and f"the range now reaches {top * 3:,}" in shown
        assert e.values["high_water"].value == f"{top * 3:,}"
        e.low_water.value = 500  # another move: the message was about the typed value only
        assert e.message.value == ""

    def test_a_value_the_knob_refuses_is_kept_out_and_said(self):
        e = _explorer(high_water=1500, low_water=400)
        before = e.replay
        e.values["high_water"].value = "0"
        assert e.high_water.value == 1500 and e.replay is before and e.values["high_water"].value == "1,500"
        refused = "high water: 0 is outside what the &#x27;summarizing&#x27; strategy accepts (at least 1 tokens)"
        assert refused in e.message.value
        e.values["high_water"].value = "a lot"
        assert "high water: &#x27;a lot&#x27; is not a whole number of tokens; it stays at 1,500." in e.message.value
        e.values["high_water"].value = "2.5k"
        assert e.high_water.value == 2500 and e.message.value == ""

    def test_typing_into_a_derived_knob_takes_the_typed_value(self):
        e = _explorer(strategy="summarizing", high_water=1500)
        assert e.auto["low_water"].value
        e.values["low_water"].value = "600"
        assert not e.auto["low_water"].value and e.parameters()["low_water"] == 600

    def test_the_message_is_escaped(self):
        e = _explorer(high_water=1500, low_water=400)
        e.values["high_water"].value = SCRIPT
        assert "<script>" not in e.message.value and "&lt;script&gt;" in e.message.value


def _table_rows(html: str) -> list[list[str]]:
    body = html.split("<tbody>", 1)[1]
    return [[re.sub(r"<wbr>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row)]
            for row in re.findall(r"<tr>(.*?)</tr>", body)]  # fmt: skip


def _table_columns(html: str) -> list[str]:
    return re.findall(r"<th data-column='([a-z_0-9]+)'", html)


class TestCompare:
    def test_shows_every_strategy_and_the_table(self):
        c = reading_conversation(20)
        cmp = _compare(c, ["full", "windowed", "summarizing"], budget=1500, distill=_summary)
        assert set(cmp.replays) == {"full", "windowed", "summarizing"} and cmp.failures == {}
        assert len(cmp.panels.children) == 3
        assert all(panel.children[0].value[:4] == b"\x89PNG" for panel in cmp.panels.children)
        assert len(cmp.frame) == 3
        for name in ("full", "windowed", "summarizing"):
            assert name in cmp.table.value

    def test_table_rows_are_the_frames_totals(self):
        c = reading_conversation(20)
        cmp = _compare(c, list(PRESETS), budget=1500, distill=_summary)
        columns = _table_columns(cmp.table.value)
        rows = _table_rows(cmp.table.value)
        assert [r[0] for r in rows] == list(PRESETS)
        for row in rows:
            t = totals(cmp.replays[row[0]].requests)
            for key in ("input_tokens_sum", "input_tokens_max", "compactions", "overshoots"):
                assert row[columns.index(key)] == f"{t[key]:,}", (row[0], key)
            assert row[columns.index("cached_prefix_share")] == f"{t['cached_prefix_share'] * 100:.1f}%"

    def test_the_table_has_a_few_named_columns_and_the_budget_notes(self):
        cmp = _compare(reading_conversation(20), ["full", "windowed", "summarizing", "masking"], budget=1500,
                       distill=_summary)  # fmt: skip
        columns = _table_columns(cmp.table.value)
        assert len(columns) <= 10
        assert columns[:2] == ["strategy", "budget_note"]
        headers = re.findall(r"<th data-column='[a-z_0-9]+'[^>]*>([^<]*)</th>", cmp.table.value)
        assert "tokens sent" in headers and "retention" in headers and "budget" in headers
        notes = {r[0]: r[1] for r in _table_rows(cmp.table.value)}
        frame = cmp.frame.set_index("strategy")
        assert notes["full"] == frame.at["full", "budget_note"] and "no budget knob" in notes["full"]
        assert notes["masking"].endswith("no budget knob")
        assert "class='harpe-compare-scroll'" in cmp.table.value  # a narrow area scrolls it, not the page

    def test_strategies_that_do_not_keep_the_budget_are_never_marked_best(self):
        # full keeps every artifact but sends far more than 5,000 tokens: the best values are
        # judged among the strategies that kept the budget only
        cmp = _compare(_recorded_conversation(), ["full", "windowed", "summarizing", "sliding", "chain"], budget=5000,
                       distill=_summary)  # fmt: skip
        frame = cmp.frame.set_index("strategy")
        assert not frame.at["full", "budget_met"] and not frame.at["windowed", "budget_met"]
        kept = [n for n in frame.index if frame.at[n, "budget_met"]]
        assert len(kept) >= 2
        columns = _table_columns(cmp.table.value)
        body = cmp.table.value.split("<tbody>", 1)[1]
        cells = {re.search(r"<td>([^<]*)</td>", row).group(1): re.findall(r"<td([^>]*)>", row)
                 for row in re.findall(r"<tr>(.*?)</tr>", body)}  # fmt: skip
        for column, best in (("input_tokens_sum", min), ("artifact_retention", max)):
            at = columns.index(column)
            marked = [n for n, attrs in cells.items() if "best" in attrs[at]]
            value = best(frame.loc[kept, column])
            assert marked == [n for n in kept if frame.at[n, column] == value], column
        assert frame.at["full", "artifact_retention"] > max(frame.loc[kept, "artifact_retention"])  # excluded, not worse

    def test_no_probes_is_said_as_such(self):
        cmp = _compare(reading_conversation(5), ["full", "windowed"], budget=1500)
        columns = _table_columns(cmp.table.value)
        assert cmp.frame["probes"].eq(0).all()
        for row in _table_rows(cmp.table.value):
            assert row[columns.index("retention")] == "no probes"
        assert "0 findable of 0 probes" not in cmp.table.value

    def test_a_coding_agent_runs_at_the_declared_window(self):
        # Aider's budget is a sixteenth of its window: 12,000 here, 128,000 by its default
        c = _recorded_conversation(context_window=12_000)
        cmp = Compare(c, ["aider"])
        at = {w: replay(c, make_strategy("aider", counter=cmp.counter, system=c.system, window=w),
                        counter=cmp.counter, pricing=cmp.pricing).totals()["input_tokens_sum"] for w in (12_000, None)}
        assert cmp.replays["aider"].totals()["input_tokens_sum"] == at[12_000] != at[None]
        assert Compare(c, ["aider"], limit=128_000).replays["aider"].totals()["input_tokens_sum"] == at[None]

    def test_retention_is_shown_with_its_denominator(self):
        from harpe_lab import datasets

        c = datasets.load("coding_agent")
        cmp = Compare(c, ["full", "windowed"], budget=8000)
        columns = _table_columns(cmp.table.value)
        frame = cmp.frame.set_index("strategy")
        n, m = int(frame.at["full", "findable"]), int(frame.at["full", "probes"])
        assert 0 < n <= m and (frame["findable"] == n).all() and (frame["probes"] == m).all()
        # one conversation, one set of probes: the denominator is said once, in the header
        assert f">retention ({n} of {m} findable)</th>" in cmp.table.value
        for row in _table_rows(cmp.table.value):
            assert row[columns.index("retention")] == format_value("retention", frame.at[row[0], "retention"])

    def test_retention_cells_carry_their_own_denominators_when_they_differ(self):
        import pandas as pd

        from harpe_lab.widgets._render import _compare_table_html

        frame = pd.DataFrame({"strategy": ["a", "b", "c"], "probes": [4, 6, 5], "findable": [3, 5, 0],
                              "retention": [0.5, 0.8, float("nan")], "error": ["", "", ""]})  # fmt: skip
        rows = {r[0]: r for r in _table_rows(_compare_table_html(frame))}
        at = _table_columns(_compare_table_html(frame)).index("retention")
        assert rows["a"][at] == "50.0% (3 of 4)" and rows["b"][at] == "80.0% (5 of 6)"
        assert rows["c"][at] == "none findable of 5"

    def test_the_needed_next_kept_share_stands_beside_retention(self):
        from harpe_lab import datasets
        from harpe_lab.evaluate import needs_totals

        cmp = Compare(datasets.load("coding_agent"), ["full", "windowed", "masking"], budget=8000)
        columns = _table_columns(cmp.table.value)
        at = columns.index("needs_kept_share")
        assert at == columns.index("retention") + 1
        frame = cmp.frame.set_index("strategy")
        n = int(frame.at["full", "needs"])
        assert n > 0 and (frame["needs"] == n).all()
        # one conversation: the number of needs is said once, in the header, with what a need is as its tooltip
        header = re.search(r"<th data-column='needs_kept_share' title='([^']*)'>([^<]*)</th>", cmp.table.value)
        assert header.group(2) == f"needed next (of {n:,})" and header.group(1).startswith("Needed-next references")
        rows = {r[0]: r for r in _table_rows(cmp.table.value)}
        shares = {name: needs_totals(r)["needs_kept_share"] for name, r in cmp.replays.items()}
        for name, share in shares.items():
            assert rows[name][at] == f"{share * 100:.1f}%", name
            assert share == frame.at[name, "needs_kept_share"]
        assert shares["full"] == 1.0 and shares["windowed"] < 1.0  # a window at 8,000 loses some of them

    def test_no_needed_next_column_when_the_replies_name_nothing_seen_earlier(self):
        cmp = _compare(reading_conversation(20), ["full", "windowed"], budget=1500)
        assert cmp.frame["needs"].eq(0).all()
        assert "needs_kept_share" not in _table_columns(cmp.table.value) and "needed next" not in cmp.table.value

    def test_needed_next_cells_carry_their_own_counts_when_they_differ(self):
        import pandas as pd

        from harpe_lab.widgets._render import _compare_table_html

        frame = pd.DataFrame({"strategy": ["a", "b", "c"], "needs": [10, 8, 0], "needs_kept": [9, 8, 0],
                              "needs_kept_share": [0.9, 1.0, float("nan")], "error": ["", "", ""]})  # fmt: skip
        table = _compare_table_html(frame)
        rows = {r[0]: r for r in _table_rows(table)}
        at = _table_columns(table).index("needs_kept_share")
        assert rows["a"][at] == "90.0% (9 of 10)" and rows["b"][at] == "100.0% (8 of 8)" and rows["c"][at] == "–"
        assert ">needed next</th>" in table  # no one count for every row: none in the header

    def test_budget_slider_sets_each_presets_budget_knob(self):
        c = reading_conversation(20)
        cmp = _compare(c, ["full", "windowed", "summarizing"], budget=1000, distill=_summary)
        full, windowed, plot = cmp.replays["full"], cmp.replays["windowed"], cmp.plot.value
        cmp.budget.value = 4000
        assert cmp.replays["full"] is full  # its replay does not depend on the budget
        assert cmp.replays["windowed"] is not windowed
        assert cmp.replays["windowed"].limit.tokens == cmp.replays["summarizing"].limit.tokens == 4000
        assert cmp.plot.value != plot

    def test_each_panel_is_the_full_draw_of_its_figure(self):
        import io

        import numpy as np
        from PIL import Image

        cmp = _compare(reading_conversation(20), ["full", "windowed", "summarizing"], budget=1000, distill=_summary)
        for budget in (1000, 4000, 2500):
            cmp.budget.value = budget
            for name, (view, redraw) in cmp._panel_figs.items():
                shown = np.asarray(Image.open(io.BytesIO(cmp._panel_images[name].value)).convert("RGBA"))
                redraw.figure.canvas.draw()
                assert np.array_equal(shown, np.asarray(redraw.figure.canvas.buffer_rgba())), (budget, name)

    def test_budget_is_not_capped_for_a_long_session(self):
        cmp = _compare(reading_conversation(40, size=10_000, cid="big"), ["full", "sliding"], budget=113_878)
        assert cmp.budget.value == 113_878 and cmp.budget.max >= 113_878
        assert cmp.replays["sliding"].limit.tokens == 113_878 and cmp.failures == {}

    def test_a_failing_strategy_is_a_row_with_its_error(self):
        c = reading_conversation(20)
        cmp = _compare(c, ["full", "summarizing", "windowed"], budget=1500, distill=_bad_distill)
        assert set(cmp.replays) == {"full", "windowed"}
        assert isinstance(cmp.failures["summarizing"], StrategyError)
        rows = {r[0]: r for r in _table_rows(cmp.table.value)}
        columns = _table_columns(cmp.table.value)
        assert list(rows) == ["full", "summarizing", "windowed"]
        # the failing row: its name, then its error across the other columns
        assert len(rows["summarizing"]) == 2 and f"colspan='{len(columns) - 1}'" in cmp.table.value
        assert rows["summarizing"][1].startswith("StrategyError: ") and "distill must return a str" in rows["summarizing"][1]
        assert len(rows["windowed"]) == len(columns) and "error" not in columns
        assert cmp.frame.set_index("strategy").at["summarizing", "error"] == rows["summarizing"][1]
        panel = cmp.panels.children[1]
        assert panel.children[0].layout.display == "none" and "distill must return a str" in panel.children[1].value
        cmp.budget.value = 3000  # the widget stays alive
        assert cmp.replays["windowed"].limit.tokens == 3000 and cmp.last_error is None

    def test_a_typed_budget_beyond_the_slider_says_so_and_applies(self):
        cmp = _compare(reading_conversation(20), ["full", "windowed"], budget=1000)
        top = cmp.budget.max
        cmp.budget_value.value = f"{top + 5_000:,}"
        assert cmp.budget.value == cmp.budget.max == top + 5_000
        assert cmp.replays["windowed"].limit.tokens == top + 5_000
        assert f"outside the slider&#x27;s range 1–{top:,}" in cmp.message.value
        cmp.budget_value.value = "lots"
        assert "not a whole number of tokens; it stays at" in cmp.message.value and cmp.budget.value == top + 5_000
        assert cmp.budget_value.value == f"{top + 5_000:,}"
        cmp.budget.value = 2000  # moving the slider clears the message
        assert cmp.message.value == "" and cmp.budget_value.value == "2,000"

    def test_a_failing_factory_is_escaped(self):
        def broken():
            raise HarpeLabError(SCRIPT)

        cmp = _compare(reading_conversation(3), {IMG: broken, "full": lambda: FullContext("")})
        assert "<script>" not in cmp.table.value and "<img" not in cmp.table.value
        assert "&lt;script&gt;" in cmp.table.value and "&lt;img src=x" in cmp.table.value
        assert "<script>" not in cmp.panels.children[0].children[1].value

    def test_same_rows_whatever_the_order(self):
        c = reading_conversation(20)
        a = _compare(c, ["summarizing", "windowed", "sliding"], budget=1500)
        b = _compare(c, ["sliding", "summarizing", "windowed"], budget=1500)
        for name in a.replays:
            assert a.replays[name].requests.equals(b.replays[name].requests), name

    def test_bad_arguments(self):
        with pytest.raises(HarpeLabError, match=r"`strategies` must be one of \[.*\], but 'nope' was passed."):
            Compare(reading_conversation(3), ["full", "nope"])
        with pytest.raises(HarpeLabError, match=r"`budget` must be a whole number of tokens >= 1, but -3 was passed."):
            Compare(reading_conversation(3), ["windowed"], budget=-3)
        with pytest.raises(HarpeLabError, match=r"`strategies` must be a list of preset names"):
            Compare(reading_conversation(3), "full")


class TestOneFrame:
    """For every preset on every bundled dataset, the Explorer's header, its stats table and
    its plot show the numbers of one frame: `totals(replay.requests)`."""

    @pytest.mark.parametrize("dataset", list_datasets())
    def test_header_table_and_markers_agree_with_totals(self, dataset):
        e = Explorer(dataset, strategy="full", datasets=False)
        ran = 0
        for name in PRESETS:
            e.strategy.value = name
            if e.replay is None:  # refused (a budget it cannot keep): the error is shown instead
                assert e.last_error is not None and e.plot.layout.display == "none"
                assert set(_counts(e).values()) == {"–"}
                continue
            ran += 1
            frame = e.replay.requests
            t = totals(frame)
            assert _counts(e) == {k: str(t[k]) for k in ("compactions", "summaries", "overshoots")}, name
            stats = _stats(e)
            for key in ("requests", "input_tokens_sum", "input_tokens_max", "compactions", "summaries", "overshoots",
                        "overshoot_tokens_max", "distill_calls"):  # fmt: skip
                assert stats[key] == f"{t[key]:,}", (name, key)
            plot = e._plot
            assert len(plot.compactions.get_xdata()) == frame["compacted"].sum() == t["compactions"], name
            assert len(plot.summaries.get_xdata()) == frame["summarized"].sum() == t["summaries"], name
            # the drawn mark is the strategy's limit: each red segment is an overshooting request
            assert len(plot.overshoot.get_segments()) == t["overshoots"], name
            labels = [text.get_text() for text in e._ax.get_legend().get_texts()]
            if t["compactions"]:
                assert "compacted" in labels
            if t["summaries"]:
                assert "summary made" in labels
        assert ran >= len(PRESETS) - 2


def test_views_never_test_a_preset_name():
    """The views read the registry: no comparison with a preset's name (``name in ("full",
    "turn")``, ``== "summarizing"``), and no name at all outside a documented lookup."""
    import ast
    from pathlib import Path

    import harpe_lab

    root = Path(harpe_lab.__file__).parent
    names = set(PRESETS)
    from harpe_lab.demo import DEMO_DETAIL

    # the full history's peak sizes the sliders; the Explorer's default; the demo's validated detail list
    allowed = {"widgets/_common.py": {"full"}, "widgets/_explorer.py": {"summarizing"},
               "demo.py": {"full", *DEMO_DETAIL}}
    views = [p.relative_to(root).as_posix() for p in (root / "widgets").glob("*.py")]
    for module in (*views, "plots/__init__.py", "plots/_sessions.py", "report.py", "demo.py"):
        tree = ast.parse((root / module).read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Compare):
                for side in [node.left, *node.comparators]:
                    consts = [n.value for n in ast.walk(side) if isinstance(n, ast.Constant)]
                    assert not names & set(consts), f"{module}:{node.lineno} compares with a preset name"
            if isinstance(node, ast.Constant) and node.value in names:
                assert node.value in allowed.get(module, set()), f"{module}:{node.lineno} names preset {node.value!r}"
