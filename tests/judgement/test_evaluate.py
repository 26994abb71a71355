"""Judging replays against the full history: probes, artifacts, answers through litellm, compare."""

from __future__ import annotations

import math
import threading
from datetime import date
import time

import pandas as pd
import pytest

from harpe_lab import (
    ApproxCounter,
    AssistantMessage,
    FullContext,
    SummarizingContext,
    TurnContext,
    UserInput,
    WindowedContext,
)
from harpe_lab.conversation import Conversation, Probe, Turn
from harpe_lab.errors import ModelError
from harpe_lab.messages import Rendered
from harpe_lab.evaluate import (
    ANSWER_COLUMNS,
    ANSWER_PROMPT,
    BUDGET_SLACK,
    COMPARE_COLUMNS,
    COMPARE_MEANINGS,
    HEADLINE,
    PROBE_COLUMNS,
    RETENTION_COLUMNS,
    EvaluationError,
    answer_f1,
    answer_probes,
    artifact_retention,
    budget_fit,
    compare,
    judge_agreement,
    message_passages,
    normalize_answer,
    probe_retention,
    rank_at_budget,
    retention,
    with_probe_turn,
)
from harpe_lab.measure import measure
from harpe_lab.presets import PRESETS
from harpe_lab.protocol import Limit
from harpe_lab import datasets
from harpe_lab.findable import findable
from harpe_lab.presets import make_strategy
from harpe_lab.replay import Pricing, replay
from harpe_lab.summarize import ExtractiveDistiller
from tests._support.openai_server import Reply

COUNTER = ApproxCounter()
SECRET = "sk-test-SECRET-0b1c2d3e4f506172"
SYSTEM = "sys"


def _pad(text: str, n: int) -> str:
    assert len(text) <= n, text
    return text + "." * (n - len(text))


def facts() -> Conversation:
    """Eight turns of exactly 100 characters (user 50, assistant 50); facts in turns 0, 1, 2
    and 7; four probes, three asked after the end, one at turn 3."""
    said = [
        ("My locker code is 4417, in building B.", "Noted: locker 4417, building B."),
        ("The deadline is 2024-06-30 for /srv/report.pdf.", "Deadline 2024-06-30 noted."),
        ("The backup drive holds 512 MB.", "512 MB, understood."),
        ("Let us talk about the weather.", "It is mild today."),
        ("Any plans for lunch?", "Soup, probably."),
        ("Tell me a joke.", "Why did the chicken cross?"),
        ("That was awful.", "Sorry about that."),
        ("My cat is called Miso.", "Miso is a lovely name."),
    ]
    turns = tuple(Turn(UserInput(_pad(u, 50)), (AssistantMessage(_pad(a, 50)),)) for u, a in said)
    n = len(turns)
    probes = (
        Probe("locker", n, "What is my locker code?", "4417", ("0.0",), "single-hop"),
        Probe("deadline", n, "When is the deadline?", "2024-06-30", ("1.0", "1.1"), "temporal"),
        Probe("cat", n, "What is my cat called?", "Miso", ("7.0",), "single-hop"),
        Probe("drive", 3, "How big is the backup drive?", "512 MB", ("2.0",), "single-hop"),
    )
    return Conversation(turns, id="facts", probes=probes, system=SYSTEM)


STRATEGIES = {
    "full": lambda: FullContext(SYSTEM),
    # 250 chars: a turn's input plus the two turns before it (see facts())
    "windowed": lambda: WindowedContext(SYSTEM, max_chars=250),
    "turn": lambda: TurnContext(SYSTEM),
    "summarizing": lambda: SummarizingContext(
        SYSTEM, high_water_tokens=60, low_water_chars=200, distill=ExtractiveDistiller(max_chars=400)
    ),
}


def run(name: str, conv: Conversation | None = None):
    return replay(with_probe_turn(conv or facts()), STRATEGIES[name], counter=COUNTER, name=name)


# --- probe turns -------------------------------------------------------------------------


class TestWithProbeTurn:
    def test_adds_one_empty_final_turn_when_a_probe_is_asked_after_the_end(self):
        conv = facts()
        extended = with_probe_turn(conv)
        assert len(extended.turns) == len(conv.turns) + 1
        last = extended.turns[-1]
        assert last.input == UserInput("") and last.messages == () and last.ids == ("probe",)
        assert last.metadata["probe_turn"] is True

    def test_leaves_a_conversation_without_late_probes_alone(self):
        conv = facts().with_(probes=(facts().probes[-1],))
        assert with_probe_turn(conv) is conv

    def test_the_probe_id_never_collides(self):
        conv = facts()
        turns = (*conv.turns[:-1], Turn(conv.turns[-1].input, conv.turns[-1].messages, ids=("probe", "x")))
        assert with_probe_turn(conv.with_(turns=turns)).turns[-1].ids == ("probe#2",)

    def test_a_probe_beyond_the_end_is_an_error(self):
        conv = facts().with_(probes=(Probe("late", 99, "q", "a"),))
        with pytest.raises(EvaluationError, match="asked at turn 99, after the end"):
            with_probe_turn(conv)


# --- probe retention ---------------------------------------------------------------------


class TestProbeRetention:
    def test_full_context_sends_every_evidence_message(self):
        pr = probe_retention(run("full"))
        assert list(pr.columns) == list(PROBE_COLUMNS)
        assert pr["evidence_in_context"].tolist() == [True, True, True, True]
        assert pr["evidence_sent"].tolist() == [1, 2, 1, 1]
        assert pr["request"].tolist() == [8, 8, 8, 3]

    def test_a_window_keeps_only_the_recent_evidence(self):
        pr = probe_retention(run("windowed")).set_index("probe_id")
        assert pr["evidence_in_context"].to_dict() == {"locker": False, "deadline": False, "cat": True, "drive": True}
        assert pr["evidence_sent"].to_dict() == {"locker": 0, "deadline": 0, "cat": 1, "drive": 1}

    def test_the_turn_context_keeps_none(self):
        pr = probe_retention(run("turn"))
        assert not pr["evidence_in_context"].any()

    def test_a_summary_keeps_the_artifact_answers(self):
        rp = run("summarizing")
        pr = probe_retention(rp).set_index("probe_id")
        assert pr.loc["deadline", "evidence_in_context"] == False  # noqa: E712 - summarised, not sent
        assert pr.loc["deadline", "evidence_summarized"] == 2
        assert pr.loc["deadline", "answer_in_summary"] == True  # noqa: E712 - a date is an artifact
        assert pr.loc["cat", "answer_in_summary"] == False  # noqa: E712 - still in the window
        assert pr.loc["cat", "answer_in_context"] == True  # noqa: E712

    def test_tokens_at_probe_are_the_requests(self):
        rp = run("full")
        pr = probe_retention(rp)
        everything = [m for t in facts().turns for m in t.all_messages] + [UserInput("")]
        assert pr["tokens_at_probe"].iloc[0] == COUNTER.count_rendered(Rendered(SYSTEM, tuple(everything)))

    def test_a_probe_without_evidence_is_na_not_false(self):
        rp = run("full")
        pr = probe_retention(rp, [Probe("none", 8, "q?", "")])
        assert pr["evidence_in_context"].isna().all() and pr["answer_in_summary"].isna().all()

    def test_a_replay_without_the_probe_turn_says_how_to_fix_it(self):
        rp = replay(facts(), STRATEGIES["full"], counter=COUNTER)
        with pytest.raises(EvaluationError, match=r"after the last turn.*with_probe_turn\(conversation\)"):
            probe_retention(rp)

    def test_unknown_evidence_is_named(self):
        with pytest.raises(EvaluationError, match=r"names evidence \['9.9'\]"):
            probe_retention(run("full"), [Probe("bad", 3, "q", "a", ("9.9",))])


# --- retention relative to the full history ----------------------------------------------


def _one(frame, strategy: str, category: str = "all"):
    return frame[(frame["strategy"] == strategy) & (frame["category"] == category)].iloc[0]


class TestRetention:
    @pytest.fixture(scope="class")
    @classmethod
    def table(cls):
        return retention([run(name) for name in STRATEGIES])

    def test_columns_and_one_all_row_per_replay_then_categories(self, table):
        assert list(table.columns) == list(RETENTION_COLUMNS)
        assert table.loc[table["strategy"] == "full", "category"].tolist() == ["all", "single-hop", "temporal"]

    def test_full_context_is_one_by_construction(self, table):
        full = _one(table, "full")
        assert (full["findable"], full["needs_judge"], full["retention"]) == (4, 0, 1.0)
        assert full["denominator"] == "4 findable of 4 probes"
        assert (table.loc[table["strategy"] == "full", "retention"] == 1.0).all()

    def test_a_window_keeps_the_recent_facts_and_loses_the_rest(self, table):
        w = _one(table, "windowed")
        assert (w["known"], w["retention"], w["verbatim"], w["lost"]) == (2, 0.5, 0.5, 0.5)
        assert _one(table, "windowed", "temporal")["retention"] == 0.0  # the deadline was in turn 1
        assert _one(table, "turn")["retention"] == 0.0

    def test_a_summary_that_keeps_the_answers_gets_credit(self, table):
        s = _one(table, "summarizing")
        # locker and deadline were folded into the summary; cat and drive are still sent
        assert (s["verbatim"], s["only_in_summary"], s["lost"], s["retention"]) == (0.5, 0.5, 0.0, 1.0)
        pr = probe_retention(run("summarizing")).set_index("probe_id")
        assert pr["kept_as"].to_dict() == {"locker": "summary", "deadline": "summary", "cat": "verbatim",
                                           "drive": "verbatim"}  # fmt: skip
        assert not pr.loc["locker", "evidence_in_context"] and pr.loc["locker", "known"]

    def test_the_breakdown_adds_up(self, table):
        parts = table[["verbatim", "only_in_summary", "lost"]].sum(axis=1)
        assert parts.round(9).eq(1.0).all()
        assert (table["retention"] - table["verbatim"] - table["only_in_summary"]).abs().max() < 1e-9

    def test_a_probe_not_findable_even_in_full_history_needs_a_judge_not_lost(self):
        n = len(facts().turns)
        probes = [*facts().probes, Probe("hedge", n, "Does my cat like the locker?", "Likely no", ("7.0",), "open")]
        for name, expected in (("full", 1.0), ("windowed", 0.5)):
            t = retention(run(name), probes)
            row = _one(t, name)
            assert (row["probes"], row["findable"], row["needs_judge"]) == (5, 4, 1)
            assert row["retention"] == expected  # the hedge is not in the denominator
            assert _one(t, name, "open")["denominator"] == "0 findable of 1 probes"
        pr = probe_retention(run("windowed"), probes).set_index("probe_id")
        assert pr.loc["hedge", "kept_as"] == "judge" and pr.loc["hedge", "findable_full"] is pd.NA
        assert pr.loc["hedge", "known"] == True  # noqa: E712 - its evidence was sent verbatim

    def test_a_paraphrased_answer_is_found_where_a_substring_is_not(self):
        n = len(facts().turns)
        probe = Probe("size", n, "How big is the backup drive?", "The drive holds 512 MB (half a gigabyte).", ("2.0",))
        pr = probe_retention(run("full"), [probe])
        said = " ".join(m.text for m in facts().turns[2].all_messages)
        assert normalize_answer(probe.answer) not in normalize_answer(said)
        assert pr["answer_in_context"].tolist() == [True]  # content words and the number, the aside optional


class TestMessagePassages:
    def test_dates_and_speakers_from_the_metadata(self):
        turns = (
            Turn(UserInput("I went to the support group yesterday."), (AssistantMessage("Great!"),),
                 metadata={"date_time": "1:56 pm on 8 May, 2023"}),
            Turn(UserInput("no date here")),
        )  # fmt: skip
        conv = Conversation(turns, id="c", metadata={"speaker_a": "Caroline", "speaker_b": "Melanie"})
        ps = message_passages(conv)
        assert [(p.text, p.date, p.speaker) for p in ps] == [
            ("I went to the support group yesterday.", date(2023, 5, 8), "Caroline"),
            ("Great!", date(2023, 5, 8), "Melanie"),
            ("no date here", None, "Caroline"),
        ]
        assert [p.text for p in message_passages(conv, ["0.1"])] == ["Great!"]

    def test_an_unknown_id_is_named(self):
        with pytest.raises(EvaluationError, match="has no message '9.9'"):
            message_passages(facts(), ["9.9"])


class TestBundledDatasets:
    """Every bundled dataset: FullContext holds everything it can be credited for."""

    @pytest.mark.parametrize("name", datasets.list_datasets())
    def test_full_context_relative_retention_is_one(self, name):
        conv = with_probe_turn(datasets.load(name))
        rp = replay(conv, make_strategy("full", system=conv.system), counter=COUNTER, name="full")
        t = retention(rp)
        assert _one(t, "full")["findable"] >= 1
        found = t[t["findable"] > 0]
        assert (found["retention"] == 1.0).all(), t

    def test_a_summarizing_strategy_gets_credit_on_coding_agent(self):
        conv = with_probe_turn(datasets.load("coding_agent"))
        # the preset at its default budget (8,000 tokens), as the demo and the CLI run it
        rp = replay(conv, make_strategy("summarizing", counter=COUNTER, system=conv.system), counter=COUNTER,
                    name="summarizing")  # fmt: skip
        pr = probe_retention(rp)
        # every evidence message was folded into a summary: the verbatim count alone says 0.000
        assert not pr["evidence_in_context"].any()
        assert pr["evidence_summarized"].gt(0).all()
        row = _one(retention(rp), "summarizing")
        # 7 of 8 are findable in the full history; "how many TODO comments" is a count of lines: a judge's
        assert (row["probes"], row["findable"], row["needs_judge"]) == (8, 7, 1)
        # measured: 4 of the 7 only in the summary (first failures, books rate, mypy error, rounding spec)
        assert row["only_in_summary"] >= 0.5 and row["retention"] >= 0.5
        assert row["retention"] == pytest.approx(row["verbatim"] + row["only_in_summary"])
        credited = pr[pr["kept_as"] == "summary"]
        assert credited["answer_in_summary"].all() and credited["known"].all()
        # each credited answer really is in the summary its request held
        for _, r in credited.iterrows():
            assert findable(r["answer"], rp.summary(int(r["request"])).splitlines(), question=r["question"]).found


# --- artifact retention ------------------------------------------------------------------


class TestArtifactRetention:
    HISTORY = [
        UserInput("Put the file in /srv/data/report.csv and run `make report`; it took 3.2 s."),
        AssistantMessage("We decided to keep the nightly job instead of a cron entry. See https://example.org/x."),
    ]

    def test_the_history_holds_itself(self):
        r = artifact_retention(self.HISTORY, self.HISTORY)
        assert math.isnan(r.pop("identifiers"))  # the history has none: NaN, not 0 or 1
        assert r == {"files": 1.0, "commands": 1.0, "numbers": 1.0, "urls": 1.0, "decisions": 1.0, "all": 1.0}

    def test_an_empty_context_holds_nothing(self):
        r = artifact_retention(self.HISTORY, "")
        assert r["all"] == 0.0 and r["files"] == 0.0 and math.isnan(r["identifiers"])

    def test_a_summary_as_text(self):
        summary = "Report at /srv/data/report.csv (3.2s, built with make report). Nightly job kept instead of a cron entry."
        r = artifact_retention(self.HISTORY, summary)
        assert r["files"] == 1.0
        assert r["numbers"] == 1.0  # "3.2s" matches "3.2 s"
        assert r["commands"] == 1.0  # whitespace-normalised substring
        assert r["urls"] == 0.0
        assert r["decisions"] == 1.0  # paraphrase-tolerant
        assert r["all"] == pytest.approx(4 / 5)

    def test_accepts_a_conversation_and_a_rendered_request(self):
        conv = facts()
        last = Rendered(SYSTEM, conv.turns[-1].all_messages)
        r = artifact_retention(conv, last)
        assert r["files"] == 0.0 and r["numbers"] == 0.0

    def test_rejects_other_inputs(self):
        with pytest.raises(TypeError, match="expected messages"):
            artifact_retention(42, "x")


# --- answers -----------------------------------------------------------------------------


class TestNormalisation:
    def test_squad_style(self):
        assert normalize_answer("  The Café, in  Paris! ") == "cafe in paris"

    def test_f1(self):
        assert answer_f1("in Paris", "Paris") == pytest.approx(2 / 3)
        assert answer_f1("", "") == 1.0 and answer_f1("x", "") == 0.0


def _texts(body: dict) -> tuple[str, str]:
    """(the conversation before the question, the question)."""
    msgs = body["messages"]
    return "\n".join(str(m.get("content") or "") for m in msgs[:-1]), str(msgs[-1]["content"])


KNOWN = {"locker code": "4417", "deadline": "2024-06-30", "cat": "Miso", "backup drive": "512 MB"}


def oracle(body: dict) -> Reply:
    """Answers a question from what the request holds; grades like a strict judge."""
    history, last = _texts(body)
    if body["model"] == "judge-model":
        ref = last.split("Reference answer: ")[1].split("\n")[0]
        cand = last.split("Candidate answer: ")[1]
        return Reply.text("CORRECT" if ref.lower() in cand.lower() else "INCORRECT", prompt_tokens=30, completion_tokens=1)
    for topic, answer in KNOWN.items():
        if topic in last:
            found = answer.split()[0] in history
            return Reply.text(answer if found else "Not mentioned in the conversation",
                              prompt_tokens=len(history) // 4, completion_tokens=3)
    return Reply.text("I don't know")


def ask(server, rp, tmp_path, **kw):
    server.script(*[oracle] * 200)
    kw.setdefault("retries", 0)
    kw.setdefault("api_key", SECRET)
    return answer_probes(rp, model="openai/test-model", api_base=server.base_url, cache_dir=tmp_path / "cache",
                         progress=False, **kw)


class TestAnswerProbes:
    def test_a_window_forgets_what_the_full_history_answers(self, openai_server, tmp_path):
        a = ask(openai_server, run("windowed"), tmp_path)
        assert list(a.columns) == list(ANSWER_COLUMNS)
        a = a.set_index("probe_id")
        assert a["context_match"].to_dict() == {"locker": False, "deadline": False, "cat": True, "drive": True}
        assert a["full_match"].all() and a["full_exact"].all()
        assert a.loc["locker", "context_reply"] == "Not mentioned in the conversation"
        assert a["context_correct"].equals(a["context_match"])  # no judge: the match decides
        assert a["error"].eq("").all() and a["context_judge"].isna().all()

    def test_the_question_replaces_the_probe_turns_empty_input(self, openai_server, tmp_path):
        ask(openai_server, run("windowed"), tmp_path, concurrency=1)
        for body in openai_server.requests:
            users = [m for m in body["messages"] if m["role"] == "user"]
            assert users[-1]["content"].startswith(ANSWER_PROMPT.split("{")[0])
            assert all(m["content"] for m in users)  # no empty placeholder left
        drive = [b for b in openai_server.requests if "backup drive" in b["messages"][-1]["content"]]
        # asked at turn 3: the question comes after that turn's own input
        assert drive[0]["messages"][-2]["content"].startswith("Let us talk about the weather.")

    def test_identical_requests_are_sent_once_and_then_cached(self, openai_server, tmp_path):
        rp = run("full")
        first = ask(openai_server, rp, tmp_path)
        assert openai_server.request_count == 4  # context == full history for every probe
        assert not first["cached"].any()
        again = ask(openai_server, rp, tmp_path)
        assert openai_server.request_count == 4
        assert again["cached"].all()
        assert again["context_reply"].tolist() == first["context_reply"].tolist()
        assert again["input_tokens"].tolist() == first["input_tokens"].tolist()
        assert again.attrs["totals"]["answer"]["cache_hits"] == 4

    def test_a_judge_decides_correctness(self, openai_server, tmp_path):
        a = ask(openai_server, run("windowed"), tmp_path, judge="openai/judge-model").set_index("probe_id")
        assert a["context_judge"].to_dict() == {"locker": False, "deadline": False, "cat": True, "drive": True}
        assert a["full_judge"].all()
        assert a["context_correct"].equals(a["context_judge"])
        judged = [b for b in openai_server.requests if b["model"] == "judge-model"]
        # one verdict per (question, reference, reply): cat and drive get the same reply in both views
        assert len(judged) == 6
        assert a.attrs["totals"]["judge"]["calls"] == 6

    def test_an_unparseable_verdict_is_an_error(self, openai_server, tmp_path):
        def judge_babbles(body):
            return Reply.text("Well, it depends.") if body["model"] == "judge-model" else oracle(body)

        openai_server.script(*[judge_babbles] * 50)
        with pytest.raises(ModelError, match="expected CORRECT or INCORRECT"):
            answer_probes(run("full"), model="openai/test-model", judge="openai/judge-model",
                          api_base=openai_server.base_url, api_key=SECRET, cache_dir=tmp_path, retries=0,
                          progress=False)

    def test_a_failed_call_raises_by_default(self, openai_server, tmp_path):
        openai_server.script(*[Reply.error(500)] * 20)
        with pytest.raises(ModelError, match="server reported an error"):
            answer_probes(run("full"), model="openai/test-model", api_base=openai_server.base_url,
                          api_key=SECRET, cache_dir=tmp_path, retries=0, progress=False)

    def test_skip_records_the_error_and_leaves_scores_na(self, openai_server, tmp_path):
        openai_server.script(Reply.error(500), *[oracle] * 20)
        a = answer_probes(run("full"), model="openai/test-model", api_base=openai_server.base_url, api_key=SECRET,
                          cache_dir=tmp_path, retries=0, progress=False, concurrency=1, on_error="skip")
        failed = a[a["error"] != ""]
        assert len(failed) == 1 and "server reported an error" in failed["error"].iloc[0]
        assert failed["context_match"].isna().all() and failed["context_reply"].isna().all()
        assert a.loc[a["error"] == "", "context_match"].all()

    def test_concurrency_is_bounded(self, openai_server, tmp_path):
        lock = threading.Lock()
        state = {"now": 0, "max": 0}

        def slow(body):
            with lock:
                state["now"] += 1
                state["max"] = max(state["max"], state["now"])
            time.sleep(0.15)
            with lock:
                state["now"] -= 1
            return oracle(body)

        openai_server.script(*[slow] * 20)
        a = answer_probes(run("windowed"), model="openai/test-model", api_base=openai_server.base_url,
                          api_key=SECRET, cache_dir=tmp_path, retries=0, progress=False, concurrency=2)
        assert len(a) == 4 and openai_server.request_count == 8
        assert state["max"] == 2

    def test_the_api_key_is_written_nowhere(self, openai_server, tmp_path):
        ask(openai_server, run("windowed"), tmp_path, judge="openai/judge-model")
        files = [p for p in tmp_path.rglob("*") if p.is_file()]
        assert files
        assert all(SECRET.encode() not in p.read_bytes() for p in files)

    def test_cost_is_nan_for_an_unpriced_model_and_tokens_are_the_servers(self, openai_server, tmp_path):
        a = ask(openai_server, run("turn"), tmp_path)
        assert a["cost_usd"].isna().all()
        assert (a["output_tokens"] == 6).all()  # context and full history: 3 each

    def test_the_matcher_beside_the_model_and_their_agreement(self, openai_server, tmp_path):
        a = ask(openai_server, run("windowed"), tmp_path).set_index("probe_id")
        assert a["findable_full"].all()
        assert a["known"].to_dict() == {"locker": False, "deadline": False, "cat": True, "drive": True}
        assert a["answer_in_context"].equals(a["context_match"])  # the oracle answers from what it was sent
        assert a.attrs["agreement"] == {"full": 1.0, "probes": 4, "context": 1.0, "context_probes": 4, "judge_only": 0}

    def test_agreement_counts_disagreements_and_judge_only_probes(self, openai_server, tmp_path):
        def strict_about_cats(body):
            # a judge that rejects every answer about the cat, right or wrong
            if body["model"] == "judge-model" and "cat called" in body["messages"][-1]["content"]:
                return Reply.text("INCORRECT")
            return oracle(body)

        n = len(facts().turns)
        probes = [*facts().probes, Probe("hedge", n, "Is my locker code secret?", "Yes", ("0.0",))]
        openai_server.script(*[strict_about_cats] * 100)
        a = answer_probes(run("full"), probes, model="openai/test-model", judge="openai/judge-model",
                          api_base=openai_server.base_url, api_key=SECRET, cache_dir=tmp_path, retries=0,
                          progress=False)  # fmt: skip
        agreement = a.attrs["agreement"]
        # the matcher finds all four facts; the judge rejects the cat: 3 of 4 agree
        assert agreement["probes"] == 4 and agreement["full"] == 0.75
        assert agreement["judge_only"] == 1  # "Yes": only the judge can score it
        assert judge_agreement(a) == agreement

    def test_rejects_bad_arguments(self, tmp_path):
        with pytest.raises(EvaluationError, match="concurrency must be an int >= 1, got 0"):
            answer_probes(run("full"), model="openai/x", concurrency=0, cache_dir=tmp_path)
        with pytest.raises(EvaluationError, match="on_error must be one of"):
            answer_probes(run("full"), model="openai/x", on_error="ignore", cache_dir=tmp_path)


# --- compare -----------------------------------------------------------------------------


class TestCompare:
    @pytest.fixture(scope="class")
    @classmethod
    def table(cls):
        replays = [run(name) for name in STRATEGIES]
        answers = pd.DataFrame({
            "conversation": ["facts"] * 4, "strategy": ["full", "full", "windowed", "windowed"],
            "context_correct": pd.array([True, True, True, False], dtype="boolean"),
            "full_correct": pd.array([True, pd.NA, True, True], dtype="boolean"),
        })  # fmt: skip
        return compare(replays, answers=answers, pricing=Pricing("m", input=1e-6, output=2e-6, cache_read=0.0)), replays

    def test_one_row_per_replay(self, table):
        t, _ = table
        assert list(t.columns) == list(COMPARE_COLUMNS)
        assert t["strategy"].tolist() == list(STRATEGIES)
        assert (t["requests"] == 9).all()  # 8 turns of one reply, and the probe turn

    def test_tokens(self, table):
        t = table[0].set_index("strategy")
        turns = facts().turns
        everything = tuple(m for turn in turns for m in turn.all_messages) + (UserInput(""),)
        assert t.loc["full", "input_tokens_max"] == COUNTER.count_rendered(Rendered(SYSTEM, everything))
        assert t.loc["turn", "input_tokens_sum"] == sum(
            COUNTER.count_rendered(Rendered(SYSTEM, (turn.input,))) for turn in (*turns, Turn(UserInput("")))
        )
        assert t.loc["turn", "input_tokens_median"] == COUNTER.count_rendered(Rendered(SYSTEM, (turns[0].input,)))
        assert t.loc["windowed", "input_tokens_max"] < t.loc["full", "input_tokens_max"]

    def test_compactions_and_distill_cost(self, table):
        t, replays = table
        t = t.set_index("strategy")
        # a compaction is any request whose context dropped or folded history (one meaning since the
        # preset registry): the window and the turn context drop, the full history never does
        assert t.loc["full", "compactions"] == 0
        assert t.loc["windowed", "compactions"] >= 1 and t.loc["turn", "compactions"] >= 1
        summ = replays[3].requests
        assert t.loc["summarizing", "compactions"] == t.loc["summarizing", "distill_calls"] >= 1
        assert t.loc["summarizing", "distill_cost_usd"] == pytest.approx(
            summ["distill_input_tokens"].sum() * 1e-6 + summ["distill_output_tokens"].sum() * 2e-6
        )
        assert t.loc["full", "distill_cost_usd"] == 0.0

    def test_probe_retention(self, table):
        t = table[0].set_index("strategy")
        assert t["probes"].tolist() == [4, 4, 4, 4]
        assert t["probe_retention"].to_dict() == {"full": 1.0, "windowed": 0.5, "turn": 0.0, "summarizing": 0.5}
        assert t.loc["summarizing", "answer_in_summary"] > 0 and t.loc["full", "answer_in_summary"] == 0.0

    def test_artifact_retention_at_the_last_request(self, table):
        t = table[0].set_index("strategy")
        assert t.loc["full", "artifact_retention"] == 1.0
        assert t.loc["turn", "artifact_retention"] == 0.0  # only the empty probe input is sent
        assert t.loc["summarizing", "artifact_retention"] == 1.0  # the extractive summary keeps them all
        # the window still holds the last two turns: no artifact of turns 0-2 is there
        assert t.loc["windowed", "artifacts_numbers"] == 0.0
        assert t.loc["full", "artifacts_urls"] != t.loc["full", "artifacts_urls"]  # NaN: none in the history

    def test_answer_accuracy_from_answer_frames(self, table):
        t = table[0].set_index("strategy")
        assert t.loc["full", "answer_accuracy"] == 1.0 and t.loc["full", "answer_accuracy_full"] == 1.0
        assert t.loc["windowed", "answer_accuracy"] == 0.5 and t.loc["windowed", "answer_accuracy_full"] == 1.0
        assert math.isnan(t.loc["turn", "answer_accuracy"])

    def test_relative_retention_with_its_denominator(self, table):
        t = table[0].set_index("strategy")
        assert t["retention"].to_dict() == {"full": 1.0, "windowed": 0.5, "turn": 0.0, "summarizing": 1.0}
        assert (t["retention_denominator"] == "4 findable of 4 probes").all()
        assert (t["findable"] == 4).all() and (t["needs_judge"] == 0).all()
        # the summary's credit: what verbatim evidence alone (probe_retention) misses
        assert t.loc["summarizing", "only_in_summary"] == 0.5 > 0 == t.loc["full", "only_in_summary"]
        assert t.loc["summarizing", "retention"] > t.loc["summarizing", "probe_retention"]

    def test_answer_retention_shares_the_matchers_denominator(self, openai_server, tmp_path):
        n = len(facts().turns)
        probes = [*facts().probes, Probe("hedge", n, "Is my locker code secret?", "Yes", ("0.0",))]
        replays = [run("full"), run("windowed")]
        answers = [ask(openai_server, rp, tmp_path, probes=probes) for rp in replays]
        t = compare(replays, probes, answers=answers).set_index("strategy")
        # the hedge gets "I don't know" from the oracle: wrong, but outside the denominator
        assert t["answer_accuracy"].to_dict() == {"full": 0.8, "windowed": 0.4}
        assert t["answer_retention"].to_dict() == {"full": 1.0, "windowed": 0.5}
        assert t["retention_denominator"].tolist() == ["4 findable of 5 probes"] * 2
        assert t["judge_agreement"].to_dict() == {"full": 1.0, "windowed": 1.0}

    def test_explicit_probes_replace_the_conversations(self):
        t = compare([run("windowed")], probes=[facts().probes[0]])
        assert t["probes"].tolist() == [1] and t["probe_retention"].tolist() == [0.0]

    def test_with_answer_probes_output(self, openai_server, tmp_path):
        replays = [run("full"), run("windowed")]
        answers = [ask(openai_server, rp, tmp_path) for rp in replays]
        t = compare(replays, answers=answers).set_index("strategy")
        assert t["answer_accuracy"].to_dict() == {"full": 1.0, "windowed": 0.5}
        assert t["answer_accuracy_full"].to_dict() == {"full": 1.0, "windowed": 1.0}


class TestColumnsAreDocumented:
    def test_every_column_has_one_meaning_in_attrs(self):
        t = compare([run("full"), run("windowed")])
        assert tuple(COMPARE_MEANINGS) == COMPARE_COLUMNS == tuple(t.columns)
        assert t.attrs["columns"] == dict(COMPARE_MEANINGS)
        assert all(isinstance(v, str) and v and "\n" not in v for v in t.attrs["columns"].values())
        assert t.attrs["budget"] is None

    def test_retention_is_the_headline_and_the_other_two_say_they_are_secondary(self):
        t = compare([run("full")])
        assert t.attrs["headline"] == HEADLINE == "retention"
        assert COMPARE_MEANINGS["retention"].startswith("The headline figure")
        assert COMPARE_MEANINGS["raw_retention"].startswith("Secondary to retention")
        assert COMPARE_MEANINGS["probe_retention"].startswith("Secondary to retention")

    def test_without_a_budget_the_budget_columns_are_empty(self):
        t = compare([run("full"), run("windowed")])
        assert t["budget_met"].isna().all() and (t["budget_note"] == "").all()
        with pytest.raises(EvaluationError, match=r"compare\(replays, budget=N\)"):
            rank_at_budget(t)

    @pytest.mark.parametrize("budget", [0, -5, 8000.5, True, "8000"])
    def test_a_bad_budget_says_what_to_pass(self, budget):
        with pytest.raises(EvaluationError, match="budget must be a whole number of tokens above 0, like 8000"):
            compare([run("full")], budget=budget)


class _Sent:
    """What `budget_fit` reads of a replay: its requests' sizes and cuts, and its limit."""

    def __init__(self, tokens, compacted=None, limit=None):
        self.requests = pd.DataFrame({"input_tokens": tokens, "compacted": compacted or [False] * len(tokens)})
        self.limit = limit


class TestBudgetRule:
    """The rule: met when the largest request is at most BUDGET_SLACK (10%) above the
    budget; otherwise the note says why, and a note also says when the budget never applied."""

    def test_the_slack_is_ten_percent(self):
        assert BUDGET_SLACK == 0.10

    def test_a_strategy_without_a_limit_is_said_to_have_no_budget_knob(self):
        assert budget_fit(_Sent([5_000, 23_843]), 8_000) == (False, "sends up to 23,843 — no budget knob")
        # within the budget it meets it, and the note still says the budget did not apply
        assert budget_fit(_Sent([500, 1_030]), 8_000) == (True, "no budget knob; sends up to 1,030, within 8,000")
        assert budget_fit(_Sent([500, 8_300]), 8_000) == (
            True, "no budget knob; sends up to 8,300, within 10% of 8,000")

    def test_a_limit_at_the_budget_that_cut_nothing(self):
        sent = _Sent([5_000, 12_000, 23_843], limit=Limit(tokens=8_000, kind="high_water"))
        assert budget_fit(sent, 8_000) == (False, "sends up to 23,843 — cut nothing at 8,000")

    def test_a_limit_at_the_budget_that_cut_but_still_went_over(self):
        sent = _Sent([7_000, 19_167, 12_000, 6_000], [False, False, True, True], Limit(tokens=8_000, kind="target"))
        assert budget_fit(sent, 8_000) == (False, "sends up to 19,167 — above 8,000 in 2 of 4 requests")

    @pytest.mark.parametrize("peak, met", [(8_000, True), (8_048, True), (8_800, True), (8_801, False)])
    def test_a_reactive_strategy_may_cross_by_the_slack(self, peak, met):
        # summarizing sends the request that crosses its high water, then compacts
        sent = _Sent([7_900, peak, 4_000], [False, False, True], Limit(tokens=8_000, kind="high_water"))
        assert budget_fit(sent, 8_000) == (
            (True, "") if met else (False, f"sends up to {peak:,} — above 8,000 in 1 of 3 requests"))

    def test_a_limit_at_another_number_is_named(self):
        sent = _Sent([120_000, 165_839], [False, True], Limit(tokens=167_000, kind="high_water"))
        assert budget_fit(sent, 8_000) == (False, "sends up to 165,839 — its limit is high water 167,000, not 8,000")
        assert budget_fit(_Sent([900], limit=Limit(tokens=167_000, kind="high_water")), 8_000) == (
            True, "its limit is high water 167,000, not 8,000")

    def test_compare_fills_both_columns_from_the_rule(self):
        replays = [run(name) for name in STRATEGIES]
        budget = int(replays[1].requests["input_tokens"].max())  # windowed's largest request
        t = compare(replays, budget=budget)
        assert t.attrs["budget"] == budget and t["budget_met"].dtype == bool
        for rp, (_, row) in zip(replays, t.iterrows()):
            assert (row["budget_met"], row["budget_note"]) == budget_fit(rp, budget)
        assert t.loc[t["strategy"] == "full", "budget_note"].item().endswith("— no budget knob")


class TestRankAtBudget:
    @staticmethod
    def frame(rows):
        columns = ["conversation", "strategy", "input_tokens_sum", "retention", "budget_met", "budget_note"]
        t = pd.DataFrame(rows, columns=columns)
        t.attrs.update(columns=dict(COMPARE_MEANINGS), headline="retention", budget=8_000)
        return t

    def test_only_the_strategies_that_kept_the_budget_are_ranked(self):
        t = self.frame([
            ("c", "full", 900, 1.0, False, "sends up to 23,843 — no budget knob"),
            ("c", "sliding", 400, 0.5, True, ""),
            ("c", "clearing", 900, 1.0, False, "sends up to 23,843 — cut nothing at 8,000"),
            ("c", "windowed", 300, 0.5, True, ""),
            ("c", "summarizing", 350, 0.8, True, ""),
            ("c", "no-probes", 100, math.nan, True, ""),
        ])  # fmt: skip
        r = rank_at_budget(t)
        assert r["strategy"].tolist() == ["summarizing", "windowed", "sliding", "no-probes", "full", "clearing"]
        assert r["rank"].tolist()[:3] == [1.0, 2.0, 3.0] and r["rank"][3:].isna().all()
        assert r["unranked"].tolist() == ["", "", "", "no retention to rank by",
                                          "sends up to 23,843 — no budget knob",
                                          "sends up to 23,843 — cut nothing at 8,000"]  # fmt: skip
        assert list(r.columns[:3]) == ["conversation", "strategy", "rank"]
        assert r.attrs["ranked_by"] == "retention" and r.attrs["budget"] == 8_000

    def test_ties_share_a_rank_and_each_conversation_is_ranked_alone(self):
        t = self.frame([
            ("a", "x", 100, 0.5, True, ""), ("a", "y", 100, 0.5, True, ""), ("a", "z", 50, 0.4, True, ""),
            ("b", "x", 100, 0.1, True, ""), ("b", "y", 100, 0.9, True, ""),
        ])  # fmt: skip
        r = rank_at_budget(t)
        assert list(zip(r["conversation"], r["strategy"], r["rank"])) == [
            ("a", "x", 1.0), ("a", "y", 1.0), ("a", "z", 3.0), ("b", "y", 1.0), ("b", "x", 2.0)]

    def test_another_figure_can_rank(self):
        t = self.frame([("c", "x", 100, 0.5, True, ""), ("c", "y", 100, 0.9, True, "")])
        t["artifact_retention"] = [0.9, 0.1]
        assert rank_at_budget(t, by="artifact_retention")["strategy"].tolist() == ["x", "y"]
        with pytest.raises(EvaluationError, match="by must be one of"):
            rank_at_budget(t, by="nope")


def _at_budget(conversation, budget, counter):
    """Every preset replayed at ``budget`` (those that refuse it left out)."""
    from harpe_lab.errors import HarpeLabError

    out = []
    for name in PRESETS:
        try:
            factory = make_strategy(name, budget=budget, counter=counter, system=conversation.system)
            out.append(replay(conversation, factory, counter=counter, name=name))
        except HarpeLabError:
            pass
    return out


def _check_kept_out(t, budget):
    """The rule on a compare frame made at ``budget``: every row outside the ranking sent
    more than the budget allows and says so; every ranked row kept it."""
    r = rank_at_budget(t)
    ranked, out = r[r["rank"].notna()], r[~r["budget_met"].astype(bool)]
    assert (ranked["input_tokens_max"] <= budget * (1 + BUDGET_SLACK)).all()
    assert (out["input_tokens_max"] > budget * (1 + BUDGET_SLACK)).all()
    for _, row in out.iterrows():
        assert row["unranked"] == row["budget_note"]
        assert row["budget_note"].startswith(f"sends up to {row['input_tokens_max']:,} — ")
    return r


class TestBudgetOnBundledData:
    def test_what_cuts_nothing_or_has_no_knob_is_kept_out_of_the_ranking(self):
        conv = with_probe_turn(datasets.load("support_chat"))
        counter = measure(conv).counter  # no provider usage: the tokenizer, uncalibrated
        full = replay(conv, make_strategy("full", system=conv.system), counter=counter)
        budget = int(round(full.requests["input_tokens"].max() * 0.75, -2))  # the demo's largest budget
        t = compare(_at_budget(conv, budget, counter), budget=budget)
        r = _check_kept_out(t, budget).set_index("strategy")
        peak = int(full.requests["input_tokens"].max())
        assert r.loc["full", "budget_note"] == f"sends up to {peak:,} — no budget knob"
        # windowed's estimate (4 characters a token) thinks the whole chat fits: it cuts nothing
        windowed = r.loc["windowed"]
        assert windowed["compactions"] == 0
        assert windowed["budget_note"] == f"sends up to {windowed['input_tokens_max']:,} — cut nothing at {budget:,}"
        # naively, the strategies that send everything top the ranking at 1.0; with the rule the top kept it
        naive = t.sort_values("retention", ascending=False, kind="stable")
        assert not naive.iloc[0]["budget_met"]
        assert r["rank"].min() == 1 and r.loc[r["rank"] == 1, "budget_met"].all()

    def test_at_half_the_largest_request_the_no_knob_strategies_that_send_more_say_so(self):
        conv = with_probe_turn(datasets.load("research_assistant"))
        counter = measure(conv).counter
        full = replay(conv, make_strategy("full", system=conv.system), counter=counter)
        budget = int(round(full.requests["input_tokens"].max() * 0.5, -2))
        r = _check_kept_out(compare(_at_budget(conv, budget, counter), budget=budget), budget).set_index("strategy")
        for name in ("full", "masking", "trimming", "hybrid", "openhands-masking"):
            assert r.loc[name, "budget_note"] == f"sends up to {r.loc[name, 'input_tokens_max']:,} — no budget knob"
            assert r.loc[name, "retention"] == 1.0 and math.isnan(r.loc[name, "rank"])


# --- real datasets -----------------------------------------------------------------------


@pytest.mark.real_data
class TestRealData:
    def test_locomo_full_context_keeps_all_evidence_a_small_window_does_not(self, real_data):
        importers = pytest.importorskip("harpe_lab.importers")
        conv = with_probe_turn(importers.load_locomo(real_data / "locomo" / "locomo_dev3.json"))
        full = probe_retention(replay(conv, lambda: FullContext(""), counter=COUNTER, name="full"))
        small = probe_retention(replay(conv, lambda: WindowedContext("", max_chars=4000), counter=COUNTER, name="w"))
        with_evidence = full["evidence"] > 0
        assert with_evidence.sum() > 100
        assert full.loc[with_evidence, "evidence_in_context"].all()
        assert small["evidence_in_context"].mean() < 0.5

    def test_longmemeval_full_context_keeps_all_evidence_a_small_window_does_not(self, real_data):
        importers = pytest.importorskip("harpe_lab.importers")
        path = real_data / "longmemeval" / "longmemeval_oracle.json"
        replays = []
        for k in range(6):
            conv = with_probe_turn(importers.load_longmemeval(path, index=k))
            replays.append(replay(conv, lambda: FullContext(""), counter=COUNTER, name="full"))
            replays.append(replay(conv, lambda: WindowedContext("", max_chars=2000), counter=COUNTER, name="small"))
        t = compare(replays)
        full = t.loc[t["strategy"] == "full", "probe_retention"].dropna()  # abstentions have no evidence
        assert len(full) >= 4 and (full == 1.0).all()
        assert t.loc[t["strategy"] == "small", "probe_retention"].mean() < 1.0

    def test_locomo_full_context_relative_retention_is_one_and_most_answers_are_findable(self, real_data):
        importers = pytest.importorskip("harpe_lab.importers")
        frames, tables = [], []
        for conv in importers.load_locomo_all(real_data / "locomo" / "locomo_dev3.json"):
            rp = replay(with_probe_turn(conv), lambda: FullContext(""), counter=COUNTER, name="full")
            frames.append(probe_retention(rp))
            tables.append(retention(rp))
        t = pd.concat(tables)
        assert (t.loc[t["findable"] > 0, "retention"] == 1.0).all()
        pr = pd.concat(frames)
        rate = pr.groupby("category")["findable_full"].apply(lambda x: float(x.fillna(False).mean()))
        print("\nLoCoMo (3 samples), findable under FullContext:", rate.round(3).to_dict())
        # the goals: single-hop >= 0.9, multi-hop and temporal >= 0.6 (measured: 0.93, 0.84, 0.94)
        assert rate["single-hop"] >= 0.9 and rate["multi-hop"] >= 0.6 and rate["temporal"] >= 0.6
        # adversarial answers ("Not mentioned…") need a judge; they are never counted as lost
        adversarial = pr[pr["category"] == "adversarial"]
        assert adversarial["findable_full"].isna().all() and (adversarial["kept_as"] == "judge").all()

    def test_longmemeval_full_context_relative_retention_is_one(self, real_data):
        importers = pytest.importorskip("harpe_lab.importers")
        convs = importers.load_longmemeval_all(real_data / "longmemeval" / "longmemeval_oracle.json")
        tables = []
        for conv in convs[::10]:  # 50 questions, every question type
            conv = with_probe_turn(conv)
            for name, factory in (("full", lambda: FullContext("")),
                                  ("small", lambda: WindowedContext("", max_chars=2000))):  # fmt: skip
                tables.append(retention(replay(conv, factory, counter=COUNTER, name=name), by_category=False))
        t = pd.concat(tables)
        full, small = t[t["strategy"] == "full"], t[t["strategy"] == "small"]
        assert full["findable"].sum() >= 19  # round 3: a sum across sessions ("$1,300") is no longer found as "$1" and "300"
        assert (full.loc[full["findable"] > 0, "retention"] == 1.0).all()
        assert small.loc[small["findable"] > 0, "retention"].mean() < 1.0

    def test_a_window_on_locomo_keeps_less_than_the_full_history(self, real_data):
        importers = pytest.importorskip("harpe_lab.importers")
        conv = with_probe_turn(importers.load_locomo(real_data / "locomo" / "locomo_dev3.json"))
        t = retention([replay(conv, f, counter=COUNTER, name=n) for n, f in (
            ("full", lambda: FullContext("")), ("w", lambda: WindowedContext("", max_chars=24_000)))])  # fmt: skip
        full, w = _one(t, "full"), _one(t, "w")
        assert full["findable"] == w["findable"] > 100  # one denominator for both
        assert full["retention"] == 1.0 and 0.0 < w["retention"] < 0.8
        assert w["lost"] == pytest.approx(1.0 - w["retention"])

    def test_locomo_at_8000_what_cuts_nothing_is_said_and_kept_out_of_the_ranking(self, real_data):
        """The issue's case: on a LoCoMo dialogue at 8,000, the strategies that cut nothing
        (chat has no tool results to mask, trim or clear) sent everything and topped the
        retention ranking at 1.00."""
        importers = pytest.importorskip("harpe_lab.importers")
        conv = with_probe_turn(importers.load_locomo(real_data / "locomo" / "locomo_dev3.json"))
        counter = measure(conv).counter
        t = compare(_at_budget(conv, 8_000, counter), budget=8_000)
        r = _check_kept_out(t, 8_000).set_index("strategy")
        peak = int(r.loc["full", "input_tokens_max"])
        for name in ("full", "masking", "trimming", "openhands-masking", "hybrid"):
            assert r.loc[name, "budget_note"] == f"sends up to {peak:,} — no budget knob", name
        for name in ("clearing", "langchain-clearing"):  # a high water that found nothing to clear
            assert r.loc[name, "budget_note"] == f"sends up to {peak:,} — cut nothing at 8,000", name
        cut_nothing = r[r["compactions"] == 0]
        assert len(cut_nothing) >= 6 and (cut_nothing["retention"] == 1.0).all()
        assert cut_nothing["rank"].isna().all()
        ranked = r[r["rank"].notna()].sort_values("rank")
        assert ranked["retention"].max() < 1.0 and (ranked["input_tokens_max"] <= 8_800).all()
        # the reactive and estimated ones that cross by a few tokens are ranked, their note empty
        for name in ("summarizing", "windowed"):
            assert 8_000 < r.loc[name, "input_tokens_max"] <= 8_800 and r.loc[name, "budget_note"] == ""
