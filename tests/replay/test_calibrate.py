"""Calibration that cannot be fooled by too few points, pools several conversations, and
reports its error on requests it did not see."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

from harpe_lab import ApproxCounter, AssistantMessage, FullContext, Usage, UserInput
from harpe_lab.calibrate import MIN_POINTS, Calibration, CalibrationWarning, calibrate
from harpe_lab.conversation import Conversation, Turn
from harpe_lab.errors import HarpeLabError
from harpe_lab.replay import replay

COUNTER = ApproxCounter()


def chat(n: int, cid: str, grow: int = 200) -> Conversation:
    """``n`` turns whose answers grow, so the full history's requests spread in size."""
    return Conversation(
        tuple(Turn(UserInput(f"question {k} of {cid}"), (AssistantMessage("answer " + "a" * (grow * (k + 1))),))
              for k in range(n)),
        id=cid,
    )


def recorded(conv: Conversation, factor: float, offset: float, noise: float = 0.0, seed: int = 0) -> Conversation:
    """``conv`` with usage as a provider whose tokenizer counts ``factor`` × ours and which
    also saw ``offset`` tokens of system prompt and tools the transcript does not hold."""
    sim = replay(conv, lambda: FullContext(conv.system), counter=COUNTER).requests["input_tokens"].tolist()
    rng = np.random.default_rng(seed)
    turns = tuple(
        Turn(t.input, t.messages,
             usage=(Usage(max(1, round((factor * s + offset) * (1 + noise * rng.standard_normal()))), 20, model="m"),))
        for t, s in zip(conv.turns, sim)
    )
    return conv.with_(turns=turns)


def quiet(*args, **kw) -> Calibration:
    with warnings.catch_warnings():
        warnings.simplefilter("error", CalibrationWarning)
        return calibrate(*args, **kw)


class TestDegenerate:
    def test_one_usage_row_fits_an_offset_not_a_huge_factor(self):
        # one request of ~12 simulated tokens the provider counted as 25,353 (a real Claude
        # Code session's first request: its system prompt and tools are not in the transcript)
        conv = recorded(chat(1, "one"), 1.0, 25_340)
        with pytest.warns(CalibrationWarning, match=r"only 1 request\(s\) with recorded usage.*offset only"):
            cal = calibrate(conv, COUNTER)
        assert cal.method == "offset" and cal.factor == 1.0
        sim, rec = cal.frame["simulated"][0], cal.frame["recorded"][0]
        assert cal.offset == rec - sim
        assert cal.error_after == 0.0
        # the fit carries over to a longer session of the same agent instead of exploding
        longer = recorded(chat(12, "long"), 1.0, 25_340)
        frame = replay(longer, lambda: FullContext(""), counter=cal.counter).requests
        err = ((frame["input_tokens"] - frame["recorded_input_tokens"]).abs() / frame["recorded_input_tokens"])
        assert err.max() < 0.01

    def test_one_row_has_no_out_of_sample_error_and_says_why(self):
        with pytest.warns(CalibrationWarning):
            cal = calibrate(recorded(chat(1, "one"), 1.0, 900), COUNTER)
        assert math.isnan(cal.error_holdout)
        assert any("nothing left to test" in n for n in cal.notes)

    @pytest.mark.parametrize("n", range(1, MIN_POINTS))
    def test_too_few_points(self, n):
        with pytest.warns(CalibrationWarning, match=f"only {n} request"):
            assert calibrate(recorded(chat(n, "few"), 1.3, 500), COUNTER).method == "offset"

    def test_sizes_too_close_to_separate_factor_from_offset(self):
        # twelve requests, all about the same size, far below the fixed part
        conv = recorded(chat(12, "flat", grow=1), 1.25, 20_000)
        with pytest.warns(CalibrationWarning, match="too narrow to tell a factor from an offset"):
            cal = calibrate(conv, COUNTER)
        assert cal.method == "offset" and cal.factor == 1.0
        assert cal.error_after < 0.01  # what the points can say, said well

    def test_implausible_line_falls_back(self):
        # the recorded count shrinks as the history grows: no tokenizer does that
        conv = chat(8, "odd", grow=2_000)
        turns = tuple(Turn(t.input, t.messages, usage=(Usage(50_000 - 4_000 * k, 10),))
                      for k, t in enumerate(conv.turns))
        with pytest.warns(CalibrationWarning, match=r"factor -?[\d.e+-]+ is outside 0.3–3"):
            cal = calibrate(conv.with_(turns=turns), COUNTER)
        assert cal.method in ("factor", "offset") and 0.3 <= cal.factor <= 3.0

    def test_a_good_line_does_not_warn(self):
        cal = quiet(recorded(chat(10, "fine"), 1.2, 900), COUNTER)
        assert cal.method == "linear" and cal.notes == ()
        assert cal.factor == pytest.approx(1.2, rel=1e-2) and cal.offset == pytest.approx(900, abs=10)


class TestOutOfSample:
    def test_one_conversation_fits_the_first_half_and_tests_the_second(self):
        cal = quiet(recorded(chat(10, "solo"), 1.2, 900, noise=0.02, seed=1), COUNTER)
        assert cal.holdout == "fitted on the first 5 requests, tested on the last 5"
        tested = cal.frame["holdout"].notna()
        assert tested.sum() == 5 and cal.frame.loc[tested, "request"].min() == 5
        assert 0 < cal.error_after < 0.05 and 0 < cal.error_holdout < 0.1

    def test_holdout_error_exposes_a_fit_that_does_not_carry_over(self):
        # the provider's tokenizer changes halfway (a model switch): in sample the line
        # looks fine, but a fit on the first half mispredicts the second
        conv = chat(10, "shift", grow=2_000)
        sim = replay(conv, lambda: FullContext(""), counter=COUNTER).requests["input_tokens"].tolist()
        turns = tuple(Turn(t.input, t.messages, usage=(Usage(round((1.0 if k < 5 else 1.5) * s + 900), 10),))
                      for k, (t, s) in enumerate(zip(conv.turns, sim)))
        cal = quiet(conv.with_(turns=turns), COUNTER)
        assert cal.method == "linear"
        assert cal.error_after < 0.05
        assert cal.error_holdout > 0.25


@pytest.fixture(scope="module")
def sessions() -> list[Conversation]:
    return [recorded(chat(n, f"s{n}"), 1.25, 2_000, noise=0.01, seed=n) for n in (4, 7, 10)]


class TestPooled:
    def test_pools_every_request(self, sessions):
        cal = quiet(sessions, COUNTER)
        assert cal.sessions == 3 and cal.requests == 4 + 7 + 10
        assert set(cal.frame["session"]) == {"s4", "s7", "s10"}
        assert cal.factor == pytest.approx(1.25, rel=0.05) and cal.offset == pytest.approx(2_000, rel=0.1)

    def test_leave_one_session_out(self, sessions):
        cal = quiet(sessions, COUNTER)
        assert cal.holdout == "leave-one-session-out over 3 conversations"
        assert cal.frame["holdout"].notna().all()  # every request predicted by a fit that never saw its session
        assert set(cal.per_session) == {"s4", "s7", "s10"}
        for s, row in cal.per_session.items():
            assert row["error_before"] > 0.2  # the raw counter misses the offset
            assert row["error_holdout"] < 0.05, s
        assert cal.error_holdout < 0.05

    def test_a_short_session_is_carried_by_the_pool(self, sessions):
        # alone, a one-request session can only fit an offset; pooled it gets the line
        short = recorded(chat(1, "short"), 1.25, 2_000)
        cal = quiet([*sessions, short], COUNTER)
        assert cal.method == "linear"
        assert cal.per_session["short"]["error_holdout"] < 0.05

    def test_sessions_without_usage_are_left_out_and_named(self, sessions):
        cal = quiet([*sessions, chat(3, "bare")], COUNTER)
        assert cal.sessions == 3 and any("bare" in n for n in cal.notes)

    def test_duplicate_ids_stay_apart(self):
        a = recorded(chat(5, "same"), 1.1, 300)
        cal = quiet([a, a], COUNTER)
        assert set(cal.per_session) == {"same#0", "same#1"}

    def test_bad_arguments(self):
        with pytest.raises(HarpeLabError, match="at least one conversation"):
            calibrate([], COUNTER)
        with pytest.raises(TypeError, match="item 1 is a str"):
            calibrate([chat(2, "x"), "y.jsonl"], COUNTER)
        with pytest.raises(HarpeLabError, match="none of the 2 conversations records no provider input tokens"):
            calibrate([chat(2, "x"), chat(2, "y")], COUNTER)


class TestOneModel:
    def test_a_second_model_s_calls_are_left_out_of_the_line(self):
        # the session's last two calls went to another model, with its own tokenizer and a
        # shorter prompt: pooled, one line fits neither
        conv = recorded(chat(10, "mixed"), 1.25, 2_000)
        other = tuple(Turn(t.input, t.messages, usage=(Usage(round(0.3 * t.usage[0].input_tokens), 20, model="small"),))
                      for t in conv.turns[8:])
        conv = conv.with_(turns=conv.turns[:8] + other)
        with pytest.warns(CalibrationWarning, match=r"fitted to the 8 requests of m, the model of most calls; 2 "
                                                     r"requests by another model left out \(2 of small\)"):
            cal = calibrate(conv, COUNTER)
        assert cal.requests == 8 and set(cal.frame["model"]) == {"m"}
        assert cal.factor == pytest.approx(1.25, rel=1e-3) and cal.offset == pytest.approx(2_000, rel=1e-2)
        assert cal.error_after < 0.001 and any("left out" in n for n in cal.notes)
        assert set(cal.per_model) == {"m", "small"}  # each model still fitted on its own
        pooled = np.polyfit(*(replay(conv, lambda: FullContext(""), counter=COUNTER).requests[c].to_numpy(float)
                              for c in ("input_tokens", "recorded_input_tokens")), 1)
        assert not pooled[0] == pytest.approx(1.25, rel=0.1)  # what the fit was before

    def test_one_model_does_not_warn(self):
        assert quiet(recorded(chat(6, "one"), 1.25, 2_000), COUNTER).requests == 6


@pytest.mark.real_data
class TestRealCline:
    def test_the_second_model_s_call_does_not_bend_the_line(self, real_data):
        from harpe_lab.importers import load_any
        from harpe_lab.tokens import TiktokenCounter

        path = real_data / "cline" / "session.messages.json"
        if not path.is_file():
            pytest.skip("the real Cline session is absent")
        with pytest.warns(CalibrationWarning, match="1 request by another model left out"):
            cal = calibrate(load_any(path), TiktokenCounter("cl100k_base"))
        # its 15 calls by Claude, within 2% each; pooled with the last call by a second model
        # (12,238 tokens after 51,852) the line was ×0.360 + 35,876 and missed the largest by 20%
        assert cal.requests == 15 and cal.error_after < 0.01
        err = (cal.frame["calibrated"] - cal.frame["recorded"]).abs() / cal.frame["recorded"]
        assert err.max() < 0.02


@pytest.mark.real_data
class TestRealClaudeCode:
    def test_pooled_and_single_row_sessions(self, real_data):
        from harpe_lab.importers import load_any
        from harpe_lab.tokens import TiktokenCounter

        folder = real_data / "claude_code"
        if not (folder / "short.jsonl").is_file():
            pytest.skip("the real Claude Code sessions are absent")
        counter = TiktokenCounter("cl100k_base")
        short = load_any(folder / "short.jsonl")
        with pytest.warns(CalibrationWarning, match="only 1 request"):
            alone = calibrate(short, counter)
        assert alone.method == "offset" and alone.factor == 1.0  # not 1,810
        long = [load_any(p) for p in sorted(folder.glob("*-*-*-*-*.jsonl"))]
        assert len(long) >= 2
        # the single-row fit applied to a long session is off by tens of percent, not 1000×
        frame = replay(long[0].with_(compactions=()), lambda: FullContext(long[0].system),
                       counter=alone.counter).requests
        frame = frame[frame["recorded_input_tokens"].notna()]
        err = ((frame["input_tokens"] - frame["recorded_input_tokens"]).abs() / frame["recorded_input_tokens"])
        assert err.median() < 0.5
        pooled = quiet(long, counter)
        assert pooled.method == "linear" and pooled.sessions == len(long)
        assert pooled.holdout.startswith("leave-one-session-out")
        assert pooled.error_before > 0.3  # Claude Code's system prompt and tools are not in the transcript
        assert pooled.error_holdout < 0.2 and pooled.error_after <= pooled.error_holdout
