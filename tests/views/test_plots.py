"""harpe_lab.plots: each picture returns its Axes and shows what the replay holds."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from harpe_lab import plots  # noqa: E402
from harpe_lab.strategies.harpe import FullContext, SummarizingContext, TurnContext  # noqa: E402
from harpe_lab.conversation import Conversation  # noqa: E402
from harpe_lab.errors import HarpeLabError  # noqa: E402
from harpe_lab.replay import replay  # noqa: E402
from harpe_lab.tokens import ApproxCounter  # noqa: E402
from tests._support.builders import reading_conversation  # noqa: E402

COUNTER = ApproxCounter()


def _summarizing(conversation: Conversation, high: int = 1500, low_chars: int = 2000):
    factory = lambda: SummarizingContext("sys", high_water_tokens=high, low_water_chars=low_chars,  # noqa: E731
                                         distill=lambda r: "the summary")  # fmt: skip
    return replay(conversation, factory, counter=COUNTER)


def _full(conversation: Conversation):
    return replay(conversation, lambda: FullContext("sys"), counter=COUNTER)


def _by_gid(ax, gid):
    found = [a for a in ax.get_children() if a.get_gid() == gid]
    assert len(found) == 1, f"expected one artist with gid {gid!r}, found {len(found)}"
    return found[0]


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


class TestTokenUse:
    def test_returns_the_axes_it_drew_on(self):
        fig, ax = plt.subplots()
        assert plots.plot_token_use(_full(reading_conversation(3)), ax=ax) is ax
        assert isinstance(plots.plot_token_use(_full(reading_conversation(3))), matplotlib.axes.Axes)

    def test_one_marker_per_compacted_request(self):
        r = _summarizing(reading_conversation(20))
        frame = r.requests
        n = r.totals()["compactions"]
        assert n >= 3 and n == frame["compacted"].sum()  # the builder is sized to compact several times
        line = _by_gid(plots.plot_token_use(r), "compactions")
        x, y = line.get_data()
        # each marker sits on a compacted request, at its height
        expected = list(frame.index[frame["compacted"]])
        assert list(x) == expected
        assert list(y) == list(frame["input_tokens"].iloc[expected])

    def test_one_marker_per_summary(self):
        r = _summarizing(reading_conversation(20))
        frame = r.requests
        x = _by_gid(plots.plot_token_use(r), "summaries").get_xdata()
        assert len(x) == frame["summarized"].sum() == r.totals()["summaries"] > 0
        assert list(x) == list(frame.index[frame["summarized"]])

    def test_every_marker_has_a_legend_entry(self):
        r = _summarizing(reading_conversation(20))
        ax = plots.plot_token_use(r)
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert {"compacted", "summary made", "high water"} <= set(labels)
        assert "overshoot" in labels and r.totals()["overshoots"] > 0
        assert len(_by_gid(ax, "overshoot").get_segments()) == r.totals()["overshoots"]

    def test_the_limit_line_is_named_by_its_kind(self):
        from harpe_lab.presets import make_strategy

        c = reading_conversation(10)
        for name, label in (("sliding", "budget"), ("windowed", "target"), ("summarizing", "high water")):
            r = replay(c, make_strategy(name, budget=1500, counter=COUNTER), counter=COUNTER, name=name)
            ax = plots.plot_token_use(r)
            line = _by_gid(ax, "high_water")
            assert line.get_label() == label and list(line.get_ydata()) == [1500, 1500]
            plt.close(ax.figure)

    def test_no_markers_without_compaction(self):
        line = _by_gid(plots.plot_token_use(_full(reading_conversation(5))), "compactions")
        assert len(line.get_xdata()) == 0

    def test_water_marks_sit_at_the_given_values(self):
        ax = plots.plot_token_use(_summarizing(reading_conversation(10)), high_water=1234, low_water=567)
        assert list(_by_gid(ax, "high_water").get_ydata()) == [1234, 1234]
        assert list(_by_gid(ax, "low_water").get_ydata()) == [567, 567]
        assert _by_gid(ax, "high_water").get_visible() and _by_gid(ax, "low_water").get_visible()

    def test_high_water_defaults_to_the_strategys_mark(self):
        ax = plots.plot_token_use(_summarizing(reading_conversation(10), high=1500))
        assert list(_by_gid(ax, "high_water").get_ydata()) == [1500, 1500]
        assert not _by_gid(ax, "low_water").get_visible()

    def test_bands_stack_to_the_input_tokens(self):
        r = _summarizing(reading_conversation(10))
        ax = plots.plot_token_use(r)
        top = _by_gid(ax, "band:turn").get_paths()[0].vertices
        n = len(r)
        # the top edge of the last band is the request total, one step per request
        tops = top[: 2 * n : 2, 1]
        assert np.array_equal(tops, r.requests["input_tokens"].to_numpy(dtype=float))

    def test_overshoot_highlights_each_request_above_the_line(self):
        r = _full(reading_conversation(10))
        mark = int(r.requests["input_tokens"].median())
        ax = plots.plot_token_use(r, high_water=mark)
        segments = _by_gid(ax, "overshoot").get_segments()
        above = r.requests.index[r.requests["input_tokens"] > mark]
        assert [int(s[0][0]) for s in segments] == list(above)
        assert all(s[0][1] == mark and s[1][1] > mark for s in segments)

    def test_limit_near_the_data_is_a_line(self):
        r = _full(reading_conversation(3))
        top = r.requests["input_tokens"].max()
        ax = plots.plot_token_use(r, limit=int(top * 1.2))
        assert list(_by_gid(ax, "limit").get_ydata()) == [int(top * 1.2)] * 2 and _by_gid(ax, "limit").get_visible()
        assert ax.get_ylim()[1] >= top * 1.2
        assert not _by_gid(ax, "off_scale").get_visible()

    def test_y_axis_fits_the_data_with_a_far_limit(self):
        r = _full(reading_conversation(3))
        top = r.requests["input_tokens"].max()
        ax = plots.plot_token_use(r, limit=1_000_000, high_water=int(top * 40))
        low, high = ax.get_ylim()
        assert low == 0 and top <= high <= 1.1 * top  # the data fills the picture
        assert not _by_gid(ax, "limit").get_visible() and not _by_gid(ax, "high_water").get_visible()
        note = _by_gid(ax, "off_scale")
        assert note.get_visible() and "limit 1,000,000" in note.get_text() and "high water" in note.get_text()
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "limit" not in labels  # no legend entry for a line that is not drawn

    def test_limit_as_a_model_name_reads_litellms_table(self):
        from harpe_lab.models._litellm import litellm

        expected = litellm().model_cost["gpt-4o"]["max_input_tokens"]
        ax = plots.plot_token_use(_full(reading_conversation(3)), limit="openai/gpt-4o")
        assert list(_by_gid(ax, "limit").get_ydata()) == [expected, expected]
        assert f"{expected:,}" in _by_gid(ax, "off_scale").get_text()  # far above three small turns

    def test_unknown_model_names_its_neighbours(self):
        with pytest.raises(HarpeLabError, match=r"`limit` must be .* 'gpt-4o-nonexistent' was passed; similar names: .*gpt-4o"):
            plots.plot_token_use(_full(reading_conversation(3)), limit="gpt-4o-nonexistent")

    def test_rejects_what_is_not_a_replay(self):
        with pytest.raises(HarpeLabError, match="`replay` must be a harpe_lab Replay.*DataFrame was passed"):
            plots.plot_token_use(pd.DataFrame())

    def test_dollar_in_an_id_is_shown_literally(self):
        ax = plots.plot_token_use(_full(reading_conversation(3, cid="cost $5 vs $6")))
        ax.figure.canvas.draw()  # mathtext would fail or eat the dollars
        assert "$5" in ax.get_title().replace("\\$", "$")

    def test_legend_placement_is_checked(self):
        fig, ax = plt.subplots()
        with pytest.raises(HarpeLabError, match=r"`legend` must be one of \['outside', 'inside', None\], but 'left' was passed."):
            plots.TokenUsePlot(ax, legend="left")
        view = plots.TokenUsePlot(ax, legend=None)
        view.update(_full(reading_conversation(3)))
        assert ax.get_legend() is None

    def test_compactions_come_from_the_compacted_column_not_from_events(self):
        r = replay(reading_conversation(9), lambda: TurnContext("sys"), counter=COUNTER)
        expected = list(r.requests.index[r.requests["compacted"]])
        assert len(expected) == 8 and not r.events  # every turn start but the first cuts; no event says so
        assert plots.compaction_requests(r) == expected
        assert list(_by_gid(plots.plot_token_use(r), "compactions").get_xdata()) == expected

    def test_update_reuses_its_artists(self):
        fig, ax = plt.subplots()
        view = plots.TokenUsePlot(ax)
        view.update(_summarizing(reading_conversation(20), high=1500))
        before = list(ax.get_children())
        view.update(_summarizing(reading_conversation(20), high=2500), high_water=2500)
        assert [id(a) for a in ax.get_children() if a.get_gid()] == [id(a) for a in before if a.get_gid()]
        assert list(view.high.get_ydata()) == [2500, 2500]

    def test_update_of_the_same_replay_follows_the_cursor_and_new_marks(self):
        fig, ax = plt.subplots()
        view = plots.TokenUsePlot(ax)
        r = _summarizing(reading_conversation(20), high=1500)
        view.update(r, cursor=3)
        view.update(r, cursor=5)
        assert view.cursor.get_visible() and list(view.cursor.get_xdata()) == [5, 5]
        view.update(r, high_water=2500, cursor=5)
        assert list(view.high.get_ydata()) == [2500, 2500]
        view.update(r)
        assert not view.cursor.get_visible() and list(view.high.get_ydata()) == [1500, 1500]
        view.update(r, high_water=1)
        with pytest.raises(HarpeLabError, match="`high_water` must be a token count"):
            view.update(r, high_water=True)  # == 1, but not a count: checked, not taken as already shown


def _points(*spec):
    from harpe_lab.recorded import RecordedPoint

    return tuple(RecordedPoint(request=r, turn=0, trigger="auto", tokens_before=b, tokens_after=None) for r, b in spec)


class TestRecordedCompactions:
    """What the recording's own agent did, drawn beside what the replayed strategy did."""

    def test_a_marker_between_the_requests_at_the_tokens_it_compacted_at(self):
        r = _full(reading_conversation(10))
        ax = plots.plot_token_use(r, recorded=_points((12, 2_500), (20, None)))
        x, y = _by_gid(ax, "recorded_compactions").get_data()
        assert list(x) == [11.5, 19.5]
        # no recorded size: drawn on the replay's request before it
        assert list(y) == [2_500, float(r.requests["input_tokens"].iat[19])]
        stems = _by_gid(ax, "recorded_compactions:stem").get_segments()
        assert [tuple(map(tuple, s)) for s in stems] == [((11.5, 0.0), (11.5, 2_500.0)), ((19.5, 0.0), (19.5, y[1]))]
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "recorded compaction" in labels and "compacted" not in labels

    def test_a_recorded_size_above_the_replay_stays_on_the_plot(self):
        r = _full(reading_conversation(10))
        peak = float(r.requests["input_tokens"].max())
        ax = plots.plot_token_use(r, recorded=_points((5, int(peak * 1.4))))
        assert ax.get_ylim()[1] >= peak * 1.4

    def test_takes_the_recordeds_compactions(self):
        from harpe_lab.conversation import RecordedCompaction
        from harpe_lab.recorded import recorded

        c = reading_conversation(10)
        c = type(c)(c.turns, id=c.id, compactions=(RecordedCompaction(turn=4, pre_tokens=1_234),))
        rec = recorded(c)
        (point,) = rec.compactions
        r = _full(c)
        x, y = _by_gid(plots.plot_token_use(r, recorded=rec), "recorded_compactions").get_data()
        assert point.request == r.turn_requests(4).start and list(x) == [point.request - 0.5] and list(y) == [1_234]

    def test_compactions_after_the_replay_and_none_draw_nothing(self):
        r = _full(reading_conversation(3))
        for recorded in (None, (), _points((len(r) + 5, 900))):
            ax = plots.plot_token_use(r, recorded=recorded)
            assert len(_by_gid(ax, "recorded_compactions").get_xdata()) == 0
            assert "recorded compaction" not in [t.get_text() for t in ax.get_legend().get_texts()]
            plt.close("all")

    def test_what_is_not_a_recording_is_refused(self):
        r = _full(reading_conversation(3))
        with pytest.raises(HarpeLabError, match="`recorded` must be a harpe_lab.recorded.Recorded or a sequence"):
            plots.plot_token_use(r, recorded=12)
        with pytest.raises(HarpeLabError, match="`recorded` must hold harpe_lab.recorded.RecordedPoint items, but int"):
            plots.plot_token_use(r, recorded=[12])

    def test_an_update_with_other_recorded_points_redraws_them(self):
        fig, ax = plt.subplots()
        view = plots.TokenUsePlot(ax)
        r = _full(reading_conversation(10))
        view.update(r, recorded=_points((4, 1_000)), cursor=1)
        view.update(r, recorded=_points((6, 1_000)), cursor=1)
        assert list(view.recorded.get_xdata()) == [5.5]


class TestStrategies:
    def test_one_line_per_replay_labelled(self):
        c = reading_conversation(10)
        ax = plots.plot_strategies({"full": _full(c), "summarizing": _summarizing(c)})
        assert plots.plot_strategies([_full(c)]) is not None
        lines = {l.get_gid(): l for l in ax.get_lines()}
        assert {"strategy:full", "strategy:summarizing"} <= set(lines)
        assert list(lines["strategy:full"].get_ydata()) == list(_full(c).requests["input_tokens"])
        frame = _summarizing(c).requests
        assert len(lines["compactions:summarizing"].get_xdata()) == frame["compacted"].sum() > 0
        assert len(lines["summaries:summarizing"].get_xdata()) == frame["summarized"].sum() > 0
        assert "compactions:full" not in lines

    def test_markers_and_limit_have_legend_entries(self):
        c = reading_conversation(10)
        r = _summarizing(c)
        ax = plots.plot_strategies({"full": _full(c), "summarizing": r}, limit=int(r.requests["input_tokens"].max()))
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert labels == ["full", "summarizing", "budget", "compacted", "summary made"]

    def test_a_far_limit_is_named_not_drawn(self):
        c = reading_conversation(5)
        full = _full(c)
        ax = plots.plot_strategies([full], limit=500_000)
        assert ax.get_ylim()[1] <= 1.1 * full.requests["input_tokens"].max()
        assert not _by_gid(ax, "limit").get_visible()
        assert "budget 500,000" in _by_gid(ax, "off_scale").get_text()

    def test_empty_is_an_error(self):
        with pytest.raises(HarpeLabError, match="at least one Replay"):
            plots.plot_strategies([])


def _sweep_frame() -> pd.DataFrame:
    return pd.DataFrame({
        "budget": [1000, 2000, 4000, 8000, 3000],
        "tokens": [100, 200, 400, 800, 500],
        "retention": [0.2, 0.6, 0.7, 0.9, 0.5],
        "strategy": ["a", "a", "b", "b", "b"],
    })  # fmt: skip


class TestSweep:
    def test_pareto_front_drops_dominated_points(self):
        front = plots.pareto_front(_sweep_frame(), "tokens", "retention")
        # (500, 0.5) costs more than (200, 0.6) and retains less: not on the front
        assert list(front["tokens"]) == [100, 200, 400, 800]

    def test_front_direction_can_be_flipped(self):
        front = plots.pareto_front(_sweep_frame(), "tokens", "retention", x_better="higher", y_better="lower")
        assert list(front["tokens"]) == [100, 500, 800]

    def test_plot_marks_the_front_and_colours_by_hue(self):
        ax = plots.plot_sweep(_sweep_frame(), "tokens", "retention", hue="strategy")
        front = _by_gid(ax, "pareto")
        assert list(front.get_xdata()) == [100, 200, 400, 800]
        assert len(ax.collections) == 2  # one scatter per strategy
        assert ax.get_xlabel() == "tokens"
        legend = ax.get_legend()  # the values, under the column's name
        assert legend.get_title().get_text() == "strategy"
        assert [t.get_text() for t in legend.get_texts()][:2] == sorted(set(_sweep_frame()["strategy"]))

    def test_unknown_column_names_the_choices(self):
        with pytest.raises(HarpeLabError) as info:
            plots.plot_sweep(_sweep_frame(), "tokns", "retention")
        assert str(info.value) == (
            "`x` must be one of ['budget', 'tokens', 'retention', 'strategy'], but 'tokns' was passed."
        )

    def test_bad_direction_names_the_choices(self):
        with pytest.raises(HarpeLabError, match=r"`y_better` must be one of \['lower', 'higher'\], but 'up' was passed."):
            plots.plot_sweep(_sweep_frame(), "tokens", "retention", y_better="up")


class TestContextMap:
    def test_image_has_a_cell_per_request_and_message(self):
        c = reading_conversation(12)
        r = _summarizing(c)
        ax = plots.plot_context_map(r)
        (image,) = ax.get_images()
        grid = image.get_array()
        assert grid.shape == (len(r), len(c.message_ids()))

    def test_cells_match_kept(self):
        c = reading_conversation(12)
        r = _summarizing(c)
        grid = plots.plot_context_map(r).get_images()[0].get_array()
        code = {"sent": 1, "summarized": 2, "dropped": 3}
        ids = c.message_ids()
        for i in (0, len(r) // 2, len(r) - 1):
            kept = r.kept(i)
            expected = [code.get(kept.get(mid), 0) for mid in ids]
            assert list(grid[i]) == expected
        assert (grid == 2).any(), "a summarizing replay that compacted shows summarized cells"

    def test_a_thousand_requests_draw_as_one_image(self):
        # one image, not a patch per cell: what keeps it fast (timed in benchmarks/widgets.py)
        r = _summarizing(reading_conversation(200, steps=4), high=3000, low_chars=4000)
        assert len(r) == 1000
        ax = plots.plot_context_map(r)
        ax.figure.canvas.draw()
        assert len(ax.images) == 1 and len(ax.patches) < 50


def test_strategy_colours_can_be_fixed():
    c = reading_conversation(5)
    ax = plots.plot_strategies({"b": _full(c)}, colors={"a": "C0", "b": "C1"})
    from matplotlib.colors import to_hex

    assert to_hex(_by_gid(ax, "strategy:b").get_color()) == to_hex("C1")
