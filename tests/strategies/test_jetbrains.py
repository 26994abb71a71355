"""The Complexity Trap's hybrid (harpe_lab.strategies.jetbrains): SWE-agent's masking plus a
checkpoint of the oldest N turns once N + M are unsummarized."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab import datasets
from harpe_lab.errors import StrategyError
from harpe_lab.messages import AssistantMessage, ToolResults
from harpe_lab.presets import make_strategy
from harpe_lab.replay import replay
from harpe_lab.strategies.jetbrains import CHECKPOINT_SYSTEM, Hybrid, checkpoint_text
from harpe_lab.strategies.swe_agent import LastNObservations
from harpe_lab.tokens import BytesCounter
from tests._support.builders import reply, round_trip, tool_session, user
from tests._support.editing import SYSTEM, assert_pairs_by_ids, conversations, drive, real_params, round_numbers


class Scripted:
    """A distiller (the test seam) that answers "S1", "S2", ... and keeps its requests."""

    def __init__(self, replies=None) -> None:
        self.requests: list = []
        self.replies = replies

    def __call__(self, rendered):
        self.requests.append(rendered)
        return f"S{len(self.requests)}" if self.replies is None else self.replies[len(self.requests) - 1]


TWO_LINES = "out {k}\nline 2"  # every output two lines long: masking says how many it omitted


def _verbatim(messages) -> list[int]:
    return [int(m.results[0].id[1:]) for m in messages
            if isinstance(m, ToolResults) and not m.results[0].content.startswith("Old environment output")]


def _checkpoints(messages) -> list[str]:
    return [m.text for m in messages if isinstance(m, AssistantMessage) and m.text.startswith("Checkpoint for")]


class TestValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"summarize_turns": 0}, "summarize_turns must be an int >= 1, got 0"),
        ({"keep_turns": 0}, "keep_turns must be an int >= 1, got 0"),
        ({"window": 0}, "window must be an int >= 1, got 0"),
        ({"window": 2.5}, "window must be an int >= 1, got 2.5"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(StrategyError, match=message):
            Hybrid(**kwargs)

    def test_the_papers_knobs_are_the_defaults(self):
        # the fork's config ..._N=43_M=10_masking_M=10.yaml
        assert Hybrid() == Hybrid(summarize_turns=43, keep_turns=10, window=10)
        assert Hybrid().masking == LastNObservations(n=10)
        assert make_strategy("hybrid")().hybrid == Hybrid()

    def test_keyword_only_frozen_and_picklable(self):
        with pytest.raises(TypeError):
            Hybrid(43)  # type: ignore[misc]
        h = Hybrid(summarize_turns=3)
        with pytest.raises(AttributeError):
            h.window = 3  # type: ignore[misc]
        assert pickle.loads(pickle.dumps(h)) == h

    def test_checkpoint_text_is_the_forks(self):
        assert checkpoint_text(43, "done X") == "Checkpoint for the last 43 turns:\ndone X"


class TestArithmetic:
    def test_a_checkpoint_every_n_turns_once_n_plus_m_are_unsummarized(self):
        # N = 2, M = 1, a window wide enough to mask nothing
        distill = Scripted()
        sent = drive(Hybrid(summarize_turns=2, keep_turns=1, window=50).context(SYSTEM, distill=distill),
                     tool_session(7, TWO_LINES))
        assert [round_numbers(s) for s in sent] == [[], [1], [1, 2], [3], [3, 4], [5], [5, 6], [7]]
        assert [_checkpoints(s) for s in sent] == [
            [], [], [], ["Checkpoint for the last 2 turns:\nS1"], ["Checkpoint for the last 2 turns:\nS1"],
            ["Checkpoint for the last 2 turns:\nS2"], ["Checkpoint for the last 2 turns:\nS2"],
            ["Checkpoint for the last 2 turns:\nS3"],
        ]
        assert all(s[0].text == "fix the bug" for s in sent)
        assert sent[3][1] is sent[4][1]  # one stable checkpoint message

    def test_the_distill_requests(self):
        distill = Scripted()
        drive(Hybrid(summarize_turns=2, keep_turns=1, window=50).context(SYSTEM, distill=distill),
              tool_session(5, TWO_LINES))
        first, second = distill.requests
        assert first.system == CHECKPOINT_SYSTEM
        assert first.messages[0].text.startswith(
            "Current summary:\n\n<PROBLEM_STATEMENT>\nfix the bug\n</PROBLEM_STATEMENT>\n\nNew conversation excerpt")
        assert "out 1" in first.messages[0].text and "out 2" in first.messages[0].text
        assert "out 3" not in first.messages[0].text
        assert second.messages[0].text.startswith(
            "Current summary:\n\n<PREVIOUS_CHECKPOINT>\nCheckpoint for the last 2 turns:\nS1\n</PREVIOUS_CHECKPOINT>")
        assert "out 3" in second.messages[0].text and "out 1" not in second.messages[0].text

    def test_masking_applies_to_what_the_checkpoint_left(self):
        # N = 3, M = 3, window = 2: at 6 rounds, rounds 1-3 fold; of 4..6 only 5, 6 keep their output
        distill = Scripted()
        sent = drive(Hybrid(summarize_turns=3, keep_turns=3, window=2).context(SYSTEM, distill=distill),
                     tool_session(8, TWO_LINES))
        assert [round_numbers(s) for s in sent[5:]] == [[1, 2, 3, 4, 5], [4, 5, 6], [4, 5, 6, 7], [4, 5, 6, 7, 8]]
        assert [_verbatim(s) for s in sent[5:]] == [[4, 5], [5, 6], [6, 7], [7, 8]]
        assert sent[6][0].text == "fix the bug" and _checkpoints(sent[6])  # task and checkpoint never masked

    def test_before_the_first_checkpoint_it_is_masking_alone(self):
        msgs = tool_session(8, TWO_LINES)
        sent = drive(Hybrid(summarize_turns=5, keep_turns=4, window=3).context(SYSTEM, distill=Scripted()), msgs)
        for r, s in enumerate(sent):
            assert s == LastNObservations(n=3)(msgs[: 1 + 2 * r])

    def test_at_most_n_plus_m_minus_one_turns_are_unsummarized(self):
        h = Hybrid(summarize_turns=4, keep_turns=2, window=50)
        sent = drive(h.context(SYSTEM, distill=Scripted()), tool_session(30, TWO_LINES))
        assert max(len(round_numbers(s)) for s in sent) == 4 + 2 - 1
        assert min(len(round_numbers(s)) for s in sent[6:]) == 2

    def test_later_user_inputs_are_folded_or_kept_in_order(self):
        ctx = Hybrid(summarize_turns=2, keep_turns=1, window=50).context(SYSTEM, distill=Scripted())
        ctx.begin_turn(user("task"))
        for m in round_trip("c1", "a"):
            ctx.append(m)
        ctx.append(reply("first done"))
        ctx.compact()
        ctx.commit_turn()
        ctx.begin_turn(user("and now this"))
        for k in (2, 3):
            for m in round_trip(f"c{k}", "b"):
                ctx.append(m)
        sent = ctx.compact().rendered.messages
        # rounds 1, 2 fold with the reply and the user input between them; round 3 is kept
        assert [type(m).__name__ for m in sent] == ["UserInput", "AssistantMessage", "AssistantMessage", "ToolResults"]
        ctx.append(reply("ok"))
        ctx.commit_turn()
        ctx.begin_turn(user("last"))
        assert ctx.compact().rendered.messages[-2:] == (reply("ok"), user("last"))

    def test_a_declined_checkpoint_is_tried_again(self):
        distill = Scripted([None, "later"])
        sent = drive(Hybrid(summarize_turns=2, keep_turns=1, window=50).context(SYSTEM, distill=distill),
                     tool_session(4, TWO_LINES))
        assert round_numbers(sent[3]) == [1, 2, 3] and not _checkpoints(sent[3])
        assert _checkpoints(sent[4]) == ["Checkpoint for the last 2 turns:\nlater"] and round_numbers(sent[4]) == [3, 4]

    def test_an_aborted_turn_undoes_its_checkpoint(self):
        ctx = Hybrid(summarize_turns=2, keep_turns=1, window=50).context(SYSTEM, distill=Scripted())
        msgs = tool_session(2, TWO_LINES)
        drive(ctx, msgs)
        ctx.commit_turn()
        ctx.begin_turn(user("again"))
        for m in round_trip("c3", "z"):
            ctx.append(m)
        assert _checkpoints(ctx.compact().rendered.messages)
        ctx.abort_turn()
        assert ctx.checkpoint is None and ctx.render() == (*msgs, user("again"))

    def test_checkpoints_are_summaries_in_the_frame(self):
        rp = replay(datasets.load("coding_agent"),
                    lambda: Hybrid(summarize_turns=3, keep_turns=2, window=2).context(SYSTEM, distill=Scripted()),
                    counter=BytesCounter())
        folds = [e for e in rp.events if e.kind == "ContextCompacted"]
        assert folds and int(rp.requests.summarized.sum()) == len(folds)
        assert int(rp.requests.distill_calls.sum()) == len(folds)


class TestReplays:
    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_bundled_conversations(self, name):
        from harpe_lab.summarize import ExtractiveDistiller

        h = Hybrid(summarize_turns=4, keep_turns=2, window=2)
        convo = datasets.load(name)
        rp = replay(convo, lambda: h.context(SYSTEM, distill=ExtractiveDistiller()), counter=BytesCounter())
        rounds = sum(isinstance(m, ToolResults) for m in convo.messages())
        assert bool([e for e in rp.events if e.kind == "ContextCompacted"]) == (rounds >= 6)
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]
            assert len(_checkpoints(sent)) <= 1
            assert sum(isinstance(m, ToolResults) for m in sent) <= 4 + 2 - 1


class TestProperties:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(conversations(max_turns=4, max_rounds=8), st.integers(1, 4), st.integers(1, 3), st.integers(1, 4))
    def test_requests_are_valid_end_with_the_newest_and_stay_under_n_plus_m(self, convo, n, m, window):
        h = Hybrid(summarize_turns=n, keep_turns=m, window=window)
        rp = replay(convo, lambda: h.context(SYSTEM, distill=Scripted()), counter=BytesCounter())
        for i in range(len(rp)):
            sent = rp.rendered(i).messages
            assert_pairs_by_ids(sent)
            assert rp.sent_ids(i)[-1] == rp.available_ids(i)[-1]
            turns = sum(1 for a, b in zip(sent, sent[1:])
                        if isinstance(a, AssistantMessage) and a.calls and isinstance(b, ToolResults))
            assert turns <= n + m - 1  # a checkpoint is made as soon as n + m turns are unsummarized
            verbatim = [k for k, x in enumerate(sent) if isinstance(x, ToolResults)
                        and not any(r.content.startswith("Old environment output") for r in x.results)]
            assert len(verbatim) <= window or len(verbatim) == sum(isinstance(x, ToolResults) for x in sent)


@pytest.mark.real_data
class TestRealSessions:
    @pytest.mark.parametrize("path", real_params("claude_code/4d5611e5-241a-462a-8d15-5122611a9569.jsonl", 1)
                             + real_params("swe_agent/*.traj", 1))
    def test_the_papers_hybrid_fires_on_long_sessions(self, real_data, path):
        from harpe_lab.importers import load_any

        if path is None:
            pytest.skip("no real sessions")
        convo = load_any(path)
        counter = BytesCounter()
        rp = replay(convo, make_strategy("hybrid"), counter=counter)
        full = replay(convo, make_strategy("full"), counter=counter)
        rounds = sum(isinstance(m, ToolResults) for m in convo.messages())
        folds = [e for e in rp.events if e.kind == "ContextCompacted"]
        assert len(folds) == max(0, (rounds - 10) // 43)  # one per N rounds once N + M are there
        for i in range(len(rp)):
            assert_pairs_by_ids(rp.rendered(i).messages)
            assert len(_checkpoints(rp.rendered(i).messages)) <= 1
        if rounds > 10:
            assert rp.requests.input_tokens.iloc[-1] < full.requests.input_tokens.iloc[-1]
