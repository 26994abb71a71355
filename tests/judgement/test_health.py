"""Compaction health (harpe_lab.evaluate._health): inflations, short summaries and distill
fallbacks on hand-built replays, and the failing-summarizer table — a pinned row for every
(preset that calls a distiller × way its summarizer fails), each beside what the preset's
source does. Where a preset loses history, a test below shows its source does too, citing
the source's line; where it does not do what its source does, the row is an expected
failure naming the difference."""

from __future__ import annotations

import re
import time
import warnings

import pytest

from harpe_lab.errors import EvaluationError, ModelError, StrategyError
from harpe_lab.evaluate import (
    ERROR_TEXT,
    FAILURE_KNOBS,
    FAILURE_OUTCOMES,
    FAILURE_TABLE_COLUMNS,
    HEALTH_COLUMNS,
    LOSING_OUTCOMES,
    MIN_SUMMARY_TOKENS,
    SOURCE_BEHAVIOUR,
    SUMMARIZER_FAILURES,
    FailingDistiller,
    compaction_health,
    failing_summarizer_table,
    failure_conversation,
    failure_outcome,
    health_frame,
)
from harpe_lab.messages import Rendered, Usage, UserInput
from harpe_lab.presets import PRESETS, make_strategy
from harpe_lab.replay import replay
from harpe_lab.strategies.anthropic.claude_code import API_ERROR_PREFIXES, AutoCompact, AutoCompactFailed
from harpe_lab.strategies.codex import SUMMARY_PREFIX as CODEX_PREFIX
from harpe_lab.strategies.codex import summary_message as codex_summary_message
from harpe_lab.strategies.harpe import FullContext, SummarizingContext
from harpe_lab.strategies.jetbrains import checkpoint_text
from harpe_lab.strategies.langchain import SUMMARY_ATTEMPTS, SUMMARY_PREFIX as LANGCHAIN_PREFIX, Summarization
from harpe_lab.summarize import DistillFallback, RecordedDistiller
from harpe_lab.tokens import BytesCounter, TiktokenCounter
from tests._support.builders import call, chat, reply, results, user
from tests._support.data import ROOT, SHARED
from tests._support.editing import SYSTEM

COUNTER = BytesCounter()
DISTILLING = sorted(n for n, p in PRESETS.items() if "distill" in p.needs)
HARPE_SPEC = SHARED / "docs" / "harpe-format.md"
STRATEGIES_DOC = ROOT / "docs" / "strategies.md"

# What each preset does, pinned: (preset, failure) -> outcome.
EXPECTED = {
    "summarizing": {"raises": "raises", "none": "keeps", "empty": "drops", "error": "error summary",
                    "inflated": "inflated"},
    "summarize-window": {"raises": "keeps", "none": "keeps", "empty": "drops", "error": "error summary",
                         "inflated": "keeps"},
    "claude-code": {"raises": "keeps", "none": "keeps", "empty": "keeps", "error": "error summary",
                    "inflated": "inflated"},
    "openhands-summarizing": {"raises": "raises", "none": "keeps", "empty": "drops", "error": "error summary",
                              "inflated": "inflated"},
    "hybrid": {"raises": "raises", "none": "keeps", "empty": "drops", "error": "error summary",
               "inflated": "inflated"},
    "langchain-summarization": {"raises": "raises", "none": "keeps", "empty": "drops", "error": "error summary",
                                "inflated": "inflated"},
    "codex": {"raises": "raises", "none": "keeps", "empty": "drops", "error": "error summary",
              "inflated": "inflated"},
    "cline-agentic": {"raises": "falls back", "none": "keeps", "empty": "keeps", "error": "error summary",
                      "inflated": "inflated"},
    "aider": {"raises": "drops", "none": "drops", "empty": "drops", "error": "error summary",
              "inflated": "inflated"},
    "gemini-compress": {"raises": "raises", "none": "keeps", "empty": "keeps", "error": "error summary",
                        "inflated": "keeps"},
    "opencode": {"raises": "raises", "none": "keeps", "empty": "drops", "error": "error summary",
                 "inflated": "inflated"},
    "goose": {"raises": "raises", "none": "keeps", "empty": "drops", "error": "error summary",
              "inflated": "inflated"},
    "roo": {"raises": "raises", "none": "keeps", "empty": "keeps", "error": "error summary",
            "inflated": "inflated"},
    "anthropic-sdk-compaction": {"raises": "raises", "none": "keeps", "empty": "drops", "error": "error summary",
                                 "inflated": "inflated"},
}

# Rows where a preset does not do what its source does: presets other sessions own, reported
# to them. strict: the test fails once the preset is brought in line, so the entry goes.
DEVIATIONS = {
    ("roo", "inflated"): "our Roo sends a summary that grew the context; Roo's summarizeConversation refuses it "
                         "with condense_context_grew (read @04fc2a02) and falls back to the sliding window",
}

ROWS = [(p, f) for p in EXPECTED for f in SUMMARIZER_FAILURES]


@pytest.fixture(scope="module")
def table():
    return failing_summarizer_table().set_index(["preset", "failure"])


def _summarizing(distill, high_water: int = 600, low_water_chars: int = 900):
    return lambda: SummarizingContext(SYSTEM, high_water_tokens=high_water, low_water_chars=low_water_chars,
                                      distill=distill)


# --- one replay's health --------------------------------------------------------------------------


class TestHealth:
    def test_full_context_is_healthy(self):
        rp = replay(chat(8, 400, id="hand"), lambda: FullContext(SYSTEM), counter=COUNTER)
        health = compaction_health(rp)
        assert health["requests"] == 8 and health["summaries"] == health["compactions"] == 0
        assert health["inflations"] == health["short_summaries"] == health["distill_fallbacks"] == []
        frame = health_frame(rp)
        assert list(frame.columns) == list(HEALTH_COLUMNS) and set(frame.attrs["columns"]) <= set(HEALTH_COLUMNS)
        assert not frame["inflation"].any() and not frame["short_summary"].any()

    def test_a_summary_longer_than_the_history_it_folds_is_an_inflation(self):
        rp = replay(chat(8, 400, id="hand"), _summarizing(lambda r: "a long summary " * 300), counter=COUNTER)
        frame = health_frame(rp)
        summarized = list(frame.index[frame["summarized"]])
        assert summarized, "the hand-built conversation must make it summarize"
        health = compaction_health(rp)
        assert health["inflations"] == summarized  # the summary alone is over the mark: every fold inflates
        first = summarized[0]
        assert frame["input_tokens"][first] >= frame["input_tokens"][first - 1] and frame["change_tokens"][first] >= 0

    def test_a_summary_that_shrinks_the_request_is_none(self):
        rp = replay(chat(8, 400, id="hand"),
                    _summarizing(lambda r: "the user asked questions; answers were given. " * 3),
                    counter=COUNTER)
        health = compaction_health(rp)
        assert health["summaries"] and health["inflations"] == []

    def test_short_summaries_are_found_where_a_summary_was_made(self):
        rp = replay(chat(8, 400, id="hand"), _summarizing(lambda r: "ok."), counter=COUNTER)
        frame = health_frame(rp)
        health = compaction_health(rp)
        assert health["short_summaries"] == list(frame.index[frame["summarized"]]) != []
        assert (frame.loc[frame["short_summary"], "summary_written_tokens"] < MIN_SUMMARY_TOKENS).all()
        assert not frame.loc[~frame["summarized"], "short_summary"].any()

    def test_the_minimum_is_a_knob(self):
        text = "word " * 60  # 300 bytes: 75 tokens by the byte counter
        rp = replay(chat(8, 400, id="hand"), _summarizing(lambda r: text), counter=COUNTER)
        assert compaction_health(rp)["short_summaries"] == []
        assert compaction_health(rp, min_summary_tokens=1_000)["short_summaries"] != []
        with pytest.raises(EvaluationError, match="min_summary_tokens must be an int >= 0, got -1"):
            compaction_health(rp, min_summary_tokens=-1)

    def test_a_wrapper_around_an_empty_summary_is_still_short(self):
        """Codex's summary message is its prefix (about 80 tokens) and the summary: an empty
        one sends the prefix alone, which ``summary_tokens`` counts and the check must not."""
        conversation = failure_conversation()
        counter = TiktokenCounter("cl100k_base")
        factory = make_strategy("codex", budget=2_000, counter=counter, system=SYSTEM, distill=lambda r: "")
        rp = replay(conversation, factory, counter=counter)
        frame = health_frame(rp)
        first = frame.index[frame["summarized"]][0]
        assert frame["summary_tokens"][first] >= MIN_SUMMARY_TOKENS and frame["short_summary"][first]

    def test_distill_fallbacks_are_the_replays(self):
        distiller = RecordedDistiller(["the earlier turns, summarized: " + "x" * 300])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rp = replay(chat(12, 400, id="hand"), _summarizing(distiller), counter=COUNTER)
        health = compaction_health(rp)
        assert health["distill_fallbacks"] and all(isinstance(e.event, DistillFallback)
                                                   for e in health["distill_fallbacks"])
        assert [e.event.reason for e in health["distill_fallbacks"]] == ["exhausted"] * len(health["distill_fallbacks"])
        frame = health_frame(rp)
        assert frame["distill_fallbacks"].sum() == len(health["distill_fallbacks"])


# --- the failing summarizer -----------------------------------------------------------------------


class TestFailingDistiller:
    REQUEST = Rendered("sys", (UserInput("[m:0.0] hello [m:0.1] again"),))

    @pytest.mark.parametrize(("failure", "check"), [
        ("none", lambda out: out is None),
        ("empty", lambda out: out == ""),
        ("error", lambda out: out == ERROR_TEXT),
        ("inflated", lambda out: len(out) > 2 * len("sys\n[m:0.0] hello [m:0.1] again")),
    ])
    def test_fails_then_works(self, failure, check):
        d = FailingDistiller(failure, times=2)
        assert check(d(self.REQUEST)) and check(d(self.REQUEST))
        assert d(self.REQUEST) == "Kept: [m:0.0] [m:0.1]" and (d.calls, d.failed) == (3, 2)

    def test_raises_a_model_error(self):
        d = FailingDistiller("raises", times=1)
        with pytest.raises(ModelError, match="rate limit exceeded"):
            d(self.REQUEST)
        assert d(self.REQUEST).startswith("Kept:")

    def test_fresh_starts_over(self):
        d = FailingDistiller("empty", times=1)
        d(self.REQUEST)
        assert d.fresh()(self.REQUEST) == "" and d.fresh().times == 1

    @pytest.mark.parametrize(("args", "message"), [
        (("crash",), "failure must be one of .'raises', 'none', 'empty', 'error', 'inflated'., but 'crash'"),
        (("none", -1), "times must be an int >= 0, got -1"),
    ])
    def test_validation(self, args, message):
        with pytest.raises(EvaluationError, match=message):
            FailingDistiller(args[0], times=args[1] if len(args) > 1 else 3)

    def test_the_conversation_is_tagged_message_by_message(self):
        conv = failure_conversation()
        first = conv.turns[0]
        assert first.input.text.startswith(f"[m:{first.ids[0]}] ")
        tags = re.findall(r"\[m:[^\]\s]+\]", "\n".join(m.text for m in conv.messages() if isinstance(m, UserInput)))
        assert len(tags) == len(set(tags)) == len(conv.turns)


class TestTable:
    def test_every_distilling_preset_has_its_source_written_down(self):
        missing = [n for n in DISTILLING if n not in SOURCE_BEHAVIOUR]
        assert missing == [], f"write down what these presets' sources do in SOURCE_BEHAVIOUR: {missing}"
        for name in DISTILLING:
            assert set(SOURCE_BEHAVIOUR[name]) == set(SUMMARIZER_FAILURES)

    def test_every_distilling_preset_has_pinned_rows(self):
        assert sorted(EXPECTED) == DISTILLING, "pin the new preset's outcomes in EXPECTED"

    def test_a_row_for_every_preset_and_failure(self, table):
        assert list(table.reset_index().columns) == list(FAILURE_TABLE_COLUMNS)
        assert sorted(table.index) == sorted((p, f) for p in DISTILLING for f in SUMMARIZER_FAILURES)
        assert set(table["outcome"]) <= set(FAILURE_OUTCOMES)

    @pytest.mark.parametrize(("preset", "failure"), ROWS)
    def test_outcome(self, table, preset, failure):
        row = table.loc[(preset, failure)]
        assert row["outcome"] == EXPECTED[preset][failure], row["detail"]
        assert bool(row["loses_history"]) == (row["outcome"] in LOSING_OUTCOMES and row["lost"] > 0)
        if row["outcome"] in ("drops", "falls back", "error summary"):
            assert 0 < row["lost"] <= row["at_risk"]
        if row["outcome"] in ("keeps", "inflated"):
            assert row["lost"] == 0

    @pytest.mark.parametrize(("preset", "failure"), [
        pytest.param(p, f, marks=pytest.mark.xfail(strict=True, reason=DEVIATIONS[(p, f)]))
        if (p, f) in DEVIATIONS else (p, f) for p, f in ROWS])
    def test_as_its_source_does(self, table, preset, failure):
        row = table.loc[(preset, failure)]
        assert row["outcome"] == row["source_outcome"] and row["matches_source"], row["source"]

    @pytest.mark.parametrize(("preset", "failure"), ROWS)
    def test_no_history_lost_unless_the_source_loses_it(self, table, preset, failure):
        row = table.loc[(preset, failure)]
        if row["loses_history"]:
            assert row["source_outcome"] in LOSING_OUTCOMES, row["source"]

    def test_keeping_presets_summarize_every_message_later(self, table):
        kept = table[table["outcome"] == "keeps"]
        assert (kept["lost"] == 0).all() and (kept["at_risk"] > 0).all()

    def test_an_inflated_summary_grows_the_request(self, table):
        for (preset, failure), row in table[table["outcome"] == "inflated"].iterrows():
            before, after = (int(n.replace(",", "")) for n in re.findall(r"([\d,]+) → ([\d,]+)", row["detail"])[0])
            assert after > before, (preset, row["detail"])

    def test_a_raising_preset_stops_with_the_distillers_error(self, table):
        for _, row in table[table["outcome"] == "raises"].iterrows():
            assert row["detail"].startswith("ModelError: the server reported an error")

    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"presets": ["no-such"]}, "'no-such' is not a preset that calls a distiller"),
        ({"presets": ["full"]}, "'full' is not a preset that calls a distiller"),
        ({"presets": ["codex"], "failures": ["crash"]}, "failure must be one of"),
    ])
    def test_validation(self, kwargs, message):
        with pytest.raises(EvaluationError, match=message):
            failing_summarizer_table(**kwargs)

    def test_a_budget_too_high_to_compact_is_refused(self):
        with pytest.raises(EvaluationError, match="never called its distiller"):
            failing_summarizer_table(["summarizing"], budget=1_000_000)

    def test_one_preset_and_failure(self):
        t = failing_summarizer_table(["codex"], failures=["empty"], counter=TiktokenCounter("cl100k_base"))
        assert len(t) == 1 and t["outcome"][0] == "drops"

    def test_the_docs_show_this_table(self, table):
        """docs/strategies.md, "When the summarizer fails": one line per preset, its cells the
        outcomes in `SUMMARIZER_FAILURES` order (ours first, the source's after "source:" when
        they differ)."""
        text = STRATEGIES_DOC.read_text(encoding="utf-8")
        section = text.split("## When the summarizer fails", 1)[1].split("\n## ", 1)[0]
        rows = {}
        for line in section.splitlines():
            m = re.match(r"^\| `([\w-]+)` \|(.+)\|$", line)
            if m and m.group(1) in EXPECTED:
                rows[m.group(1)] = [c.strip() for c in m.group(2).split("|")]
        assert sorted(rows) == DISTILLING
        for preset, cells in rows.items():
            for failure, cell in zip(SUMMARIZER_FAILURES, cells):
                row = table.loc[(preset, failure)]
                ours = re.sub(r"[*]", "", cell.split("(source:")[0]).strip()
                assert ours == row["outcome"], (preset, failure, cell)
                if not row["matches_source"]:
                    assert f"source: {row['source_outcome']}" in cell, (preset, failure, cell)


# --- where a preset loses history, its source does ------------------------------------------------


class TestSourcesLoseItToo:
    def test_harpe_drops_the_turns_for_an_empty_summary(self, table):
        """Harpe spec §4.7 (``../shared/docs/harpe-format.md``): "``Some("")`` is accepted
        as-is: turns are dropped and, summary being empty, no block is rendered and the next
        request is built as a first summary"."""
        if HARPE_SPEC.exists():
            spec = " ".join(HARPE_SPEC.read_text(encoding="utf-8").split())
            assert 'Some("")` is accepted as-is: turns are dropped' in spec
        ctx = SummarizingContext(SYSTEM, high_water_tokens=1, low_water_chars=0, distill=lambda r: "")
        for t in range(2):
            ctx.begin_turn(user(f"turn {t}"))
            ctx.compact()
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply(f"answer {t}"))
            ctx.commit_turn()
        ctx.begin_turn(user("turn 2"))
        sent = ctx.compact().rendered
        assert sent == Rendered(SYSTEM, (user("turn 2"),)) and ctx.summary == ""
        assert table.loc[("summarizing", "empty"), "source_outcome"] == "drops"

    def test_codex_folds_an_empty_summary_into_its_bare_prefix(self, table):
        """openai/codex ``codex-rs/core/src/compact.rs``, ``run_compact_task_inner``: ``let
        summary_suffix = get_last_assistant_message_from_turn(...).unwrap_or_default(); let
        summary_text = format!("{SUMMARY_PREFIX}\\n{summary_suffix}");`` — never empty, so
        ``build_compacted_history``'s ``"(no summary available)"`` never applies, and
        ``replace_history`` drops every assistant message and tool output for it."""
        assert codex_summary_message("") == CODEX_PREFIX + "\n"
        row = table.loc[("codex", "empty")]
        assert row["outcome"] == row["source_outcome"] == "drops"

    def test_openhands_forgets_the_events_for_an_empty_summary(self, table):
        """OpenHands ``openhands/memory/condenser/impl/llm_summarizing_condenser.py``,
        ``get_condensation``: ``summary = response.choices[0].message.content`` goes into
        ``CondensationAction(forgotten_events_start_id=..., forgotten_events_end_id=...,
        summary=summary, summary_offset=self.keep_first)`` with no check: the forgotten events
        leave the view and the summary event says nothing."""
        row = table.loc[("openhands-summarizing", "empty")]
        assert row["outcome"] == row["source_outcome"] == "drops"

    def test_the_hybrid_checkpoints_an_empty_summary(self, table):
        """the-complexity-trap's SWE-agent fork, ``sweagent/agent/models.py``,
        ``query_for_summary``: ``summary = response.choices[0].message.content or ""``;
        ``history_processors.py``, ``SummarizeEveryNTurns._summarize_turns``: ``"content":
        f"Checkpoint for the last {len(turns)} turns:\\n{summary_metadata.summary}"`` in place of
        the turns."""
        assert checkpoint_text(43, "") == "Checkpoint for the last 43 turns:\n"
        row = table.loc[("hybrid", "empty")]
        assert row["outcome"] == row["source_outcome"] == "drops"

    def test_orion_pins_an_empty_summary(self, table):
        """orion's ``SummarizeWindow`` (``harpe_lab.strategies.orion``, its only source): it
        falls back to the sliding window when distill raises, returns ``None`` or writes a
        summary too long to fit; an empty text is a summary, and the turns folded into it are
        gone."""
        row = table.loc[("summarize-window", "empty")]
        assert row["outcome"] == row["source_outcome"] == "drops"

    @pytest.mark.parametrize("preset", [p for p in DISTILLING if EXPECTED[p]["error"] == "error summary"])
    def test_an_error_text_is_a_summary_to_every_source(self, table, preset):
        """No source reads its summarizer's reply for an error: Harpe §4.7 takes any
        ``Some(text)``; LangChain's ``_create_summary`` returns ``response.text.strip()``;
        Codex's ``compact.rs`` uses the last assistant message; OpenHands and the hybrid use
        ``message.content``; Claude Code's ``compactConversation`` refuses only its own
        failed-call text (``startsWithApiErrorPrefix``: ``"API Error"``) — "Error: rate limit
        exceeded" passes; Gemini CLI only checks it is not empty and not larger."""
        row = table.loc[(preset, "error")]
        assert row["source_outcome"] == "error summary" and row["loses_history"]

    @pytest.mark.parametrize("failure", ["empty", "error"])
    def test_langchains_own_middleware_loses_the_same_messages(self, table, failure):
        """langchain 1.5.2 ``agents/middleware/summarization.py``: ``_create_summary`` returns
        ``response.text.strip()`` (``""`` for an empty reply, the error text for an error
        message) and ``before_model`` returns ``[RemoveMessage(id=REMOVE_ALL_MESSAGES),
        HumanMessage("Here is a summary of the conversation to date:\\n\\n" + summary),
        *preserved]``. Run here through ``harpe_lab.peers.langchain``: it loses exactly the
        messages our preset loses."""
        pytest.importorskip("langchain", reason="the peers extra (langchain) is not installed")
        from harpe_lab.peers import langchain as peer

        rp, start = _langchain_peer(peer, FailingDistiller(failure))
        outcome, lost, at_risk, _, _ = failure_outcome(rp, start)
        row = table.loc[("langchain-summarization", failure)]
        assert (outcome, lost, at_risk) == (row["outcome"], row["lost"], row["at_risk"])
        assert outcome in LOSING_OUTCOMES


def _langchain_peer(peer, distiller):
    counter = TiktokenCounter("cl100k_base")
    conv = failure_conversation()
    system = "You are an operations assistant."
    config = make_strategy("langchain-summarization", budget=2_000, counter=counter, system=system,
                           **FAILURE_KNOBS["langchain-summarization"])().config
    working = replay(conv, lambda: peer.summarization(system, config, counter=counter,
                                                      distill=FailingDistiller("none", times=0)), counter=counter)
    start = int(working.requests.index[working.requests["distill_calls"] > 0][0])
    return replay(conv, lambda: peer.summarization(system, config, counter=counter, distill=distiller.fresh()),
                  counter=counter), start


# --- what was fixed: presets that lost history, or stopped, where their sources do not ------------


class TestLangChainFailure:
    def _context(self, distill):
        config = Summarization(trigger=("messages", 3), keep=("messages", 1))
        return config.context(SYSTEM, counter=COUNTER, distill=distill)

    def _drive(self, ctx, turns=3):
        out = None
        for t in range(turns):
            ctx.begin_turn(user(f"question {t}"))
            out = ctx.compact()
            ctx.observe(Usage(input_tokens=10))
            ctx.append(reply(f"answer {t}"))
            ctx.commit_turn()
        return out

    def test_no_summary_this_time_keeps_the_state(self):
        """A distiller's ``None`` (``LLMDistiller(on_error="skip")`` after a failed call) folds
        nothing: LangChain 1.5.2 would have raised with its state untouched, not emptied it."""
        ctx = self._context(lambda r: None)
        self._drive(ctx)
        assert ctx.folds == 0 and [m.text for m in ctx.state if isinstance(m, UserInput)] == [
            "question 0", "question 1", "question 2"]

    def test_an_empty_reply_is_folded_as_langchain_folds_it(self):
        ctx = self._context(lambda r: "   ")
        self._drive(ctx)
        assert ctx.folds and ctx.state[0] == UserInput(LANGCHAIN_PREFIX)

    def test_a_failing_call_is_tried_three_times_in_all(self):
        d = FailingDistiller("raises", times=SUMMARY_ATTEMPTS - 1)
        ctx = self._context(d)
        self._drive(ctx)
        assert ctx.folds and d.failed == SUMMARY_ATTEMPTS - 1 and ctx.state[0].text.startswith(LANGCHAIN_PREFIX + "Kept")

    def test_then_its_error_stops_the_run(self):
        d = FailingDistiller("raises", times=SUMMARY_ATTEMPTS)
        with pytest.raises(ModelError):
            self._drive(self._context(d))
        assert d.calls == SUMMARY_ATTEMPTS

    def test_a_lab_misuse_is_not_retried(self):
        calls = []

        def broken(request):
            calls.append(request)
            raise StrategyError("RecordedDistiller ran out")

        with pytest.raises(StrategyError):
            self._drive(self._context(broken))
        assert len(calls) == 1

    def test_langchains_own_middleware_retries_and_raises_the_same(self, monkeypatch):
        """langchain 1.5.2 ``SummarizationMiddleware.__init__``: ``self._summary_model =
        self.model.with_retry(retry_if_exception_type=default_retry_on)`` — three attempts; a
        summarizer failing twice is recovered, one failing three times stops the run (the
        waits between attempts are skipped here)."""
        pytest.importorskip("langchain", reason="the peers extra (langchain) is not installed")
        from harpe_lab.peers import langchain as peer

        monkeypatch.setattr(time, "sleep", lambda seconds: None)
        rp, start = _langchain_peer(peer, FailingDistiller("raises", times=SUMMARY_ATTEMPTS - 1))
        assert failure_outcome(rp, start).outcome == "keeps"
        native = failing_summarizer_table(["langchain-summarization"], failures=["raises"], times=SUMMARY_ATTEMPTS - 1)
        assert native["outcome"][0] == "keeps"
        with pytest.raises(ModelError):
            _langchain_peer(peer, FailingDistiller("raises", times=SUMMARY_ATTEMPTS))


class TestClaudeCodeFailedCompaction:
    """Claude Code 2.1.88 (the source restored from its source map): ``autoCompactIfNeeded``
    catches whatever ``compactConversation`` throws — a failed call, a summary without text,
    one that ``startsWithApiErrorPrefix`` — keeps the history, and tries again at the next
    check; ``MAX_CONSECUTIVE_AUTOCOMPACT_FAILURES = 3`` in a row stop it for the turn."""

    def _context(self, distill, events, **config):
        return AutoCompact(context_window=20, reserve=10, **config).context(SYSTEM, distill=distill,
                                                                            on_event=events.append)

    def _step(self, ctx, k):
        ctx.observe(Usage(input_tokens=100))
        ctx.append(reply("", call(f"c{k}")))
        ctx.append(results((f"c{k}", "out")))
        return ctx.compact()

    @pytest.mark.parametrize(("distill", "reason"), [
        (FailingDistiller("raises", times=10), "raised"),
        (lambda r: None, "none"),
        (lambda r: "", "empty"),
        (lambda r: "API Error: 529 overloaded", "api_error"),
        (lambda r: API_ERROR_PREFIXES[1] + ": token expired", "api_error"),
    ])
    def test_a_failed_compaction_keeps_the_history(self, distill, reason):
        events = []
        ctx = self._context(distill, events)
        ctx.begin_turn(user("go"))
        out = self._step(ctx, 0)
        assert not out.compacted and ctx.summary == "" and len(out.rendered.messages) == 3
        failed = [e for e in events if isinstance(e, AutoCompactFailed)]
        assert [(e.reason, e.failures, e.limit) for e in failed] == [(reason, 1, 3)]

    def test_an_error_in_other_words_is_a_summary(self):
        ctx = self._context(lambda r: ERROR_TEXT, [])
        ctx.begin_turn(user("go"))
        assert self._step(ctx, 0).compacted and ERROR_TEXT in ctx.transcript[0].text

    def test_three_failures_in_a_row_stop_it_until_the_next_turn(self):
        events = []
        d = FailingDistiller("raises", times=10)
        ctx = self._context(d, events)
        ctx.begin_turn(user("go"))
        for k in range(5):
            self._step(ctx, k)
        assert d.calls == 3 and [e.failures for e in events if isinstance(e, AutoCompactFailed)] == [1, 2, 3]
        ctx.commit_turn()
        ctx.begin_turn(user("next"))
        ctx.compact()
        assert d.calls == 4

    def test_a_success_resets_the_count(self):
        d = FailingDistiller("empty", times=2)
        events = []
        ctx = self._context(d, events)
        ctx.begin_turn(user("go"))
        outs = [self._step(ctx, k) for k in range(3)]
        assert [o.compacted for o in outs] == [False, False, True] and ctx._failures == 0

    def test_without_the_breaker_it_tries_at_every_check(self):
        d = FailingDistiller("raises", times=10)
        ctx = self._context(d, [], max_failures=None)
        ctx.begin_turn(user("go"))
        for k in range(5):
            self._step(ctx, k)
        assert d.calls == 5

    def test_a_lab_misuse_still_raises(self):
        ctx = self._context(RecordedDistiller(["only one"], on_exhausted="raise"), [])
        ctx.begin_turn(user("go"))
        self._step(ctx, 0)
        with pytest.raises(StrategyError, match="RecordedDistiller ran out"):
            for k in range(1, 4):
                self._step(ctx, k)

    def test_max_failures_is_validated(self):
        with pytest.raises(StrategyError, match="max_failures must be an int >= 1, got 0"):
            AutoCompact(max_failures=0)
