"""Needed-next retention: what the recorded replies named that occurred earlier, kept, only in
the summary, or lost at each request — measured on any session, checked against what real
agents fetched again after a real compaction."""

from __future__ import annotations

import hashlib
import json
import math

import pytest

from harpe_lab import ApproxCounter, datasets
from harpe_lab.conversation import Conversation, Turn
from harpe_lab.evaluate import compare, lost_needs, needed_next, needs_totals, references, session_needs
from harpe_lab.evaluate._needs import refetches
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.presets import make_strategy
from harpe_lab.replay import replay
from harpe_lab.strategies.harpe import FullContext
from tests._support.data import DATA, REAL_DATA

CLAUDE = REAL_DATA / "claude_code"
real = pytest.mark.skipif(not CLAUDE.is_dir(), reason="real Claude Code sessions are not on this machine")
COMPACTED = ["258c7280-ae70-4798-800f-63464d01a85d", "4d5611e5-241a-462a-8d15-5122611a9569",
             "8463c716-a2ea-4c14-9efa-87158ebd9f20"]


def reading_session() -> Conversation:
    """An agent reads src/app.py (whose text names `parse_config`), works on, then needs both."""
    turns = [Turn(UserInput("Fix the crash in the config loader."), (
        AssistantMessage("Reading it.", (ToolCall("c1", "Read", {"file_path": "src/app.py"}),)),
        ToolResults((ToolResult("c1", "def parse_config(path):\n    return load(path)  # line 42"),)),
        AssistantMessage("`parse_config` never checks the path."),
    ))]
    for k in range(6):
        turns.append(Turn(UserInput(f"Step {k}: go on with the next test file tests/test_{k}.py please."), (
            AssistantMessage(f"Running test {k}.", (ToolCall(f"t{k}", "Bash", {"command": f"pytest tests/test_{k}.py"}),)),
            ToolResults((ToolResult(f"t{k}", "passed " * 200),)),
            AssistantMessage(f"Test {k} passes."),
        )))
    turns.append(Turn(UserInput("Now patch the loader."), (
        AssistantMessage("Editing `parse_config` in src/app.py.",
                         (ToolCall("e1", "Edit", {"file_path": "src/app.py", "old_string": "return load(path)"}),)),
    )))
    return Conversation(tuple(turns), id="reading")


class TestExtractor:
    def test_tool_arguments_and_text(self):
        reply = AssistantMessage("The failure is E501 in `harpe_lab.replay`; see https://example.org/x and 250 ms.",
                                 (ToolCall("1", "Read", {"file_path": "/repo/src/app.py"}),
                                  ToolCall("2", "Bash", {"command": "pytest tests/test_app.py -k load_config -x"})))
        refs = dict(references(reply))
        assert refs["/repo/src/app.py"] == "path"
        assert refs["tests/test_app.py"] == "path" and refs["load_config"] == "identifier"
        assert refs["E501"] == "code" and refs["https://example.org/x"] == "url" and refs["250 ms"] == "number"
        assert refs["harpe_lab.replay"] in ("path", "quoted", "identifier")
        assert "-k" not in refs and "-x" not in refs and "pytest" not in refs

    def test_phrases_and_common_words_are_not_references(self):
        refs = dict(references(AssistantMessage("I will expand/collapse the `list` and run the `test` again.")))
        assert refs == {}


class TestNeededNext:
    def test_the_full_history_keeps_every_need(self):
        conv = reading_session()
        needs = session_needs(conv)
        full = replay(conv, lambda: FullContext(""), counter=ApproxCounter())
        last = len(full) - 1  # the edit, after six turns of tests
        assert {(n.request, n.reference) for n in needs} >= {(last, "src/app.py"), (last, "parse_config")}
        t = needs_totals(full)
        assert t["needs"] == len(needs) and t["needs_kept_share"] == 1.0 and t["needs_lost"] == 0

    def test_a_window_loses_what_it_dropped_and_says_where_it_went(self):
        conv = reading_session()
        rp = replay(conv, make_strategy("autogen-buffered", buffer_size=4), counter=ApproxCounter())
        lost = lost_needs(rp)
        row = lost[lost["reference"] == "parse_config"].iloc[0]
        assert row["request"] == len(rp) - 1
        # last seen in the tool result of the first turn, sent verbatim until the window slid past it
        assert row["last_seen"] == conv.turns[0].ids[3]
        assert row["replaced_at"] == row["last_sent"] + 1 and row["how"] == "dropped"
        per = needed_next(rp)
        assert (per["needs"] == per["needs_kept"] + per["needs_in_summary"] + per["needs_lost"]).all()

    def test_compare_reports_the_needs(self):
        conv = datasets.load("coding_agent").with_(probes=())
        frame = compare([replay(conv, lambda: FullContext(conv.system), counter=ApproxCounter(), name="full")])
        assert frame["needs"].iloc[0] > 10 and frame["needs_kept_share"].iloc[0] == 1.0
        assert "needs_kept_share" in frame.attrs["columns"]


@real
@pytest.mark.real_data
class TestOnRealSessions:
    def test_the_extractor_s_precision_on_the_labelled_sample(self):
        from harpe_lab.importers import load_any

        doc = json.loads((DATA / "needs_labels.json").read_text())
        labels = doc["labels"]
        assert len(labels) >= 100
        by_file: dict[str, dict] = {}
        for item in labels:
            if item["file"] not in by_file:
                needs = session_needs(load_any(REAL_DATA / item["file"]))
                by_file[item["file"]] = {(n.request, hashlib.sha1(n.reference.encode()).hexdigest()[:16]) for n in needs}
            assert (item["request"], item["sha1"]) in by_file[item["file"]], \
                "the extractor no longer finds a labelled reference: label a new sample (see the file's 'about')"
        precision = sum(item["is_reference"] for item in labels) / len(labels)
        assert precision >= 0.9

    @pytest.mark.parametrize("name", COMPACTED)
    def test_most_repeated_fetches_after_a_real_compaction_were_lost(self, name):
        """Replayed with Claude Code's own summaries where it really compacted: the agent's
        first fetch after the compaction of something it had fetched before."""
        from harpe_lab.importers import load_any
        from harpe_lab.measure import measure
        from harpe_lab.summarize import RecordedDistiller

        conv = load_any(CLAUDE / f"{name}.jsonl")
        m = measure(conv)
        rp = replay(conv, make_strategy("claude-code", counter=m.counter, system=conv.system,
                                        distill=RecordedDistiller(conv)), counter=m.counter)
        fetches = refetches(rp)
        judged = fetches[fetches["verdict"] != "not needed"]
        assert len(judged) >= 4
        assert (judged["verdict"] != "kept").mean() > 0.5
        ((again, lost),) = fetches.attrs["lost_fetched_again"].values()
        assert 0 < again <= lost

    def test_full_keeps_everything_and_strategies_lose_something(self):
        from harpe_lab.importers import load_any
        from harpe_lab.measure import measure

        conv = load_any(CLAUDE / f"{COMPACTED[1]}.jsonl")
        m = measure(conv)
        shares = {}
        for name in ("full", "claude-code", "masking"):
            rp = replay(conv, make_strategy(name, counter=m.counter, system=conv.system), counter=m.counter)
            shares[name] = needs_totals(rp)["needs_kept_share"]
        assert shares["full"] == 1.0 and all(0.8 < v < 1.0 for k, v in shares.items() if k != "full")
        assert not math.isnan(shares["masking"])


CODEX = REAL_DATA / "codex" / "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl"


@pytest.mark.skipif(not CODEX.is_file(), reason="the real Codex rollouts are not on this machine")
@pytest.mark.real_data
class TestOnARedactedSession:
    """The shared Codex rollouts carry ``[REDACTED_… len=N sha=…]`` for every text: the same
    hash is the same text, so a command run again with the same arguments needs the call that
    ran it before."""

    def test_a_redaction_marker_is_one_reference_and_nothing_inside_it_is(self):
        reply = AssistantMessage("[REDACTED_TEXT len=173 sha=86998566]", (
            ToolCall("c1", "exec_command", {"_raw": "[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]"}),))
        assert references(reply) == [("[REDACTED_TEXT len=173 sha=86998566]", "redacted"),
                                     ("[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]", "redacted")]

    def test_the_codex_session_has_needs_and_the_full_history_keeps_them_all(self):
        from harpe_lab.importers import load_any

        conv = load_any(CODEX)
        needs = session_needs(conv)
        assert len(needs) >= 20 and {n.kind for n in needs} == {"redacted"}
        full = replay(conv, make_strategy("full"), counter=ApproxCounter())
        turn = replay(conv, make_strategy("turn"), counter=ApproxCounter())
        assert needs_totals(full)["needs_kept_share"] == 1.0
        assert needs_totals(turn)["needs_lost"] > 0  # a repeated command of an earlier turn


class TestInstructions:
    def test_a_window_that_drops_the_ask_loses_it_and_the_full_history_keeps_it(self):
        from harpe_lab.evaluate import instructions_kept, instructions_totals, session_instructions

        conv = reading_session()
        given = session_instructions(conv)
        assert [i.text for i in given][:2] == ["Fix the crash in the config loader.",
                                               "Step 0: go on with the next test file tests/test_0.py please."]
        full = replay(conv, lambda: FullContext(""), counter=ApproxCounter())
        assert instructions_totals(full)["instructions_kept_share"] == 1.0
        window = replay(conv, make_strategy("autogen-buffered", buffer_size=4), counter=ApproxCounter())
        per = instructions_kept(window)
        last = per.iloc[-1]
        assert last["instructions"] == len(conv.turns) - 1 and last["lost"] >= 1
        assert instructions_totals(window)["instructions_kept_share"] < 1.0

    def test_a_summary_that_paraphrases_carries_it(self):
        from harpe_lab.evaluate._instructions import PARAPHRASE, instructions_kept
        from harpe_lab.summarize import content_words

        ask = "Fix the crash in the config loader."
        assert len(content_words("The user wants the config loader crash fixed.") & content_words(ask)) >= \
            PARAPHRASE * len(content_words(ask))
        conv = reading_session()
        summarizing = replay(conv, make_strategy("summarizing", high_water=700, low_water=400,
                                                 counter=ApproxCounter()), counter=ApproxCounter())
        per = instructions_kept(summarizing)
        assert (per["verbatim"] + per["in_summary"] + per["lost"] == per["instructions"]).all()


@real
@pytest.mark.real_data
def test_codex_keeps_the_user_s_words_and_claude_code_s_summary_does_not_always():
    from harpe_lab.evaluate import instructions_totals
    from harpe_lab.importers import load_any
    from harpe_lab.measure import measure

    conv = load_any(CLAUDE / f"{COMPACTED[1]}.jsonl")
    m = measure(conv)
    shares = {}
    for name, knobs in (("codex", {"window": 200_000}), ("claude-code", {})):
        rp = replay(conv, make_strategy(name, counter=m.counter, system=conv.system, **knobs), counter=m.counter)
        shares[name] = instructions_totals(rp)["instructions_verbatim_share"]
    assert shares["codex"] == 1.0 and shares["claude-code"] < 1.0


class TestWhereAReferenceOccurs:
    """`session_needs` finds the messages that hold a reference with one search over the texts
    joined end to end, started where a word index says the reference can first occur on a long
    session: the answer must stay the plain ``ref in text`` of every message, in order."""

    TEXTS = ["see src/app.py:42 now", "", "session_needs_here and more", "path /etc/hosts.", "héllo wörld 😀 done",
             "x", "tail is src/app", ".py:42 is next", "[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]",
             "\ud83d lone surrogate", "ÿ12 digits 12", "a-b", "needs"]
    REFS = ["src/app.py:42", "src/app.py", "app.py:42 n", "see", "now", "done", "x", "", "ses", "needs",
            "session_needs", "ion_nee", "héllo wörld", "wörld 😀", "😀", "ö", "/etc/hosts.", "hosts", "s.", "app.py",
            "app", "py:42", "[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]", "len=83", "sha=b4e1e5f7]", "\ud83d",
            "\ud83d lone", "12", "ÿ12", "a-b", "-", "b", "absent_word", "appx", "app/src", "now\n", "done x",
            "here and more"]

    @staticmethod
    def scan(texts: list[str], ref: str, upto: int) -> list[int]:
        return [k for k in range(upto) if ref in texts[k]]

    @pytest.fixture(params=["searched", "indexed"])
    def indexed(self, request, monkeypatch) -> bool:
        from harpe_lab.evaluate import _needs

        if request.param == "indexed":  # on these few characters the index is only built when told to
            monkeypatch.setattr(_needs, "_INDEX_AFTER", 0)
            monkeypatch.setattr(_needs, "_INDEX_MIN", 0)
        return request.param == "indexed"

    def test_the_holders_are_the_messages_whose_text_contains_it(self, indexed):
        from harpe_lab.evaluate._needs import _Holders

        holders = _Holders(self.TEXTS)
        # growing and shrinking prefixes, as a session's requests ask: what was searched is kept
        for upto in (4, len(self.TEXTS), 0, 7, len(self.TEXTS), 1):
            for ref in self.REFS:
                assert holders.of(ref, upto) == self.scan(self.TEXTS, ref, upto), (ref, upto)
        assert (holders._first is not None) == indexed

    def test_random_texts_cut_anywhere(self, indexed):
        import random

        from harpe_lab.evaluate._needs import _Holders

        rng = random.Random(29)
        pieces = ["a", "b", "ab", "_", "1", "12", "-", ".", " ", "\n", "é", "ÿ", "😀", "\ud83d", ""]
        for _ in range(400):
            texts = ["".join(rng.choices(pieces, k=rng.randint(0, 6))) for _ in range(rng.randint(0, 14))]
            holders = _Holders(texts)
            for _ in range(6):
                ref, upto = "".join(rng.choices(pieces, k=rng.randint(0, 4))), rng.randint(0, len(texts))
                assert holders.of(ref, upto) == self.scan(texts, ref, upto), (texts, ref, upto)

    def test_a_session_s_needs_are_the_same_with_and_without_the_index(self, monkeypatch):
        from harpe_lab.evaluate import _needs

        conv = datasets.load("coding_agent")
        _needs._CACHE.pop(id(conv), None)
        monkeypatch.setattr(_needs, "_INDEX_MIN", math.inf)
        searched = session_needs(conv)
        _needs._CACHE.pop(id(conv), None)
        monkeypatch.setattr(_needs, "_INDEX_MIN", 0)
        monkeypatch.setattr(_needs, "_INDEX_AFTER", 0)
        assert session_needs(conv) == searched and searched
