"""Real numbers by default: a recording with provider usage is counted with a counter calibrated
on it and priced call by call by the model that made each call, and its recorded calls, cost
and compactions are shown beside the replay — with no option given."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from harpe_lab import ApproxCounter, TiktokenCounter
from harpe_lab.cli import main
from harpe_lab.conversation import Conversation, RecordedCompaction, Turn
from harpe_lab.errors import ConversationIndexError, HarpeLabError
from harpe_lab.importers import save_conversation
from harpe_lab.measure import measure
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, Usage, UserInput
from harpe_lab.models import AutoPricing, CallPricing, Pricing
from harpe_lab.recorded import recorded
from harpe_lab.replay import replay
from harpe_lab.strategies.harpe import FullContext
from harpe_lab.tokens import ScaledCounter
from tests._support.data import REAL_DATA

CLAUDE = REAL_DATA / "claude_code"
COMPACTED = ["258c7280-ae70-4798-800f-63464d01a85d", "4d5611e5-241a-462a-8d15-5122611a9569",
             "8463c716-a2ea-4c14-9efa-87158ebd9f20"]
real = pytest.mark.skipif(not CLAUDE.is_dir(), reason="real Claude Code sessions are not on this machine")


def cli_json(argv, capsys) -> dict:
    code = main([str(a) for a in argv] + ["--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def session(requests: list[tuple[str, int, int, int]], *, compact_after: int | None = None) -> Conversation:
    """One turn per ``(model, input, cache read, output)`` reply, each a real-sized exchange."""
    turns = []
    for k, (model, tokens, read, out) in enumerate(requests):
        usage = Usage(input_tokens=tokens, output_tokens=out, cache_read_tokens=read, model=model)
        turns.append(Turn(UserInput(f"question {k}: " + "word " * 400),
                          (AssistantMessage("answer " * 200),), usage=(usage,)))
    compactions = () if compact_after is None else (RecordedCompaction(turn=compact_after, trigger="auto",
                                                                        pre_tokens=9_999),)
    return Conversation(tuple(turns), id="mixed", metadata={"format": "openai"}, compactions=compactions)


class TestCalibratedByDefault:
    @real
    @pytest.mark.real_data
    @pytest.mark.parametrize("name", COMPACTED)
    def test_the_bill_is_each_reply_s_final_usage(self, name):
        """The recorded cost, read from the file independently: one usage per API message, from
        its last record. Claude Code writes a record per content block while it streams, and
        the earlier ones carry a partial ``output_tokens`` (10 where the reply made 299)."""
        path = CLAUDE / f"{name}.jsonl"
        first: dict[str, dict] = {}
        last: dict[str, dict] = {}
        with path.open(encoding="utf-8") as lines:
            for line in lines:
                record = json.loads(line)
                if record.get("type") == "system" and record.get("subtype") == "compact_boundary":
                    break
                message = record.get("message")
                if record.get("type") == "assistant" and isinstance(message, dict) and message.get("usage"):
                    first.setdefault(message["id"], message["usage"])
                    last[message["id"]] = message["usage"]
        rec = recorded(_load(path))
        calls = rec.calls[rec.calls["request"] < rec.compactions[0].request]
        assert len(calls) == len(last)
        price = rec.pricing.for_call(calls["model"].iloc[0])

        def bill(usages: dict[str, dict]) -> float:
            return sum(price.billed(u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"],
                                    u["cache_read_input_tokens"], u["cache_creation_input_tokens"],
                                    u["output_tokens"])[1] for u in usages.values())

        assert calls["output_tokens"].sum() == sum(u["output_tokens"] for u in last.values())
        assert float(calls["cost_usd_cached"].sum()) == pytest.approx(bill(last), rel=1e-9)
        if name.startswith("4d5611e5"):
            # the first records would undercount the replies by 13,248 tokens: $4.62 against $4.95
            assert (round(bill(last), 2), round(bill(first), 2)) == (4.95, 4.62)

    @real
    @pytest.mark.real_data
    @pytest.mark.parametrize("name", COMPACTED + ["short", "subagent", "tool_heavy"])
    def test_full_costs_what_the_provider_billed(self, name, capsys):
        """The default CLI replay of `full` within 5% of the recorded cost with caching,
        request for request, up to the first recorded compaction."""
        doc = cli_json(["replay", CLAUDE / f"{name}.jsonl"], capsys)
        assert doc["calibrated"] and doc["counter"] == "cl100k_base"
        points = doc["recorded"]["compactions"]
        cut = points[0]["request"] if points else math.inf
        s = recorded(_load(CLAUDE / f"{name}.jsonl")).calls
        calls = s[s["request"] < cut]
        mine = sum(r["cost_usd_cached"] for r in doc["requests"] if r["request"] in set(calls["request"]))
        theirs = float(calls["cost_usd_cached"].sum())
        assert theirs > 0 and abs(mine / theirs - 1) < 0.05, (mine, theirs)
        # the JSON states the same comparison the table's last line does, over the same calls
        stated = doc["cost_against_recorded"]
        assert stated["calls"] == len(calls) and stated["until_request"] == (points[0]["request"] if points else None)
        assert stated["replayed_usd"] == pytest.approx(mine, abs=1e-5)
        assert stated["recorded_usd"] == pytest.approx(theirs, abs=1e-5)
        # a request the recording holds no call for is in the table but not in the comparison, and said so
        unbilled = [r["request"] for r in doc["requests"] if r["request"] < cut and r["recorded_input_tokens"] is None]
        assert stated["unrecorded_requests"] == unbilled
        if name.startswith("4d5611e5"):
            # the review's $4.90: the first 61 rows, which hold request 18 (no recorded call, the
            # turn ended after its tool round) and leave out request 61, the last call billed
            assert unbilled == [18] and cut == 62
            first_61 = sum(r["cost_usd_cached"] for r in doc["requests"][:61])
            assert (round(first_61, 2), round(mine, 2)) == (4.90, 4.95)

    @real
    @pytest.mark.real_data
    @pytest.mark.parametrize("name", COMPACTED)
    def test_claude_code_compacts_where_the_agent_did(self, name, capsys):
        doc = cli_json(["replay", CLAUDE / f"{name}.jsonl", "--strategy", "claude-code"], capsys)
        (point,) = doc["recorded"]["compactions"]
        assert point["trigger"] == "auto" and point["tokens_before"] > 160_000 and point["tokens_after"] < 50_000
        assert doc["replayed_compactions"], "the default claude-code never fired on a session that compacted"
        assert abs(doc["replayed_compactions"][0] - point["request"]) <= 2

    @real
    @pytest.mark.real_data
    def test_the_header_says_what_was_fitted_and_what_happened(self, capsys):
        assert main(["replay", str(CLAUDE / f"{COMPACTED[1]}.jsonl"), "--strategy", "claude-code"]) == 0
        out = capsys.readouterr().out
        head = out.split("\n\n")[0]
        assert "counter: cl100k_base fitted to 61 recorded requests" in head
        assert "k tokens per request not in the file, median error" in head
        assert "claude-opus-4-6 input 5, output 25, cache read 0.5, cache write 6.25 (×1.25), TTL 5 min" in head
        assert "recorded auto compaction before request 62: 170,251 → 36,081 tokens (85% of the window)" in head
        assert "replayed compactions: 1 at request 62 · recorded: 1 at request 62" in out

    @real
    @pytest.mark.real_data
    def test_explicit_counter_is_calibrated_and_no_calibrate_turns_it_off(self, capsys):
        path = CLAUDE / f"{COMPACTED[1]}.jsonl"
        o200k = cli_json(["replay", path, "--counter", "o200k_base"], capsys)
        assert o200k["calibrated"] and o200k["counter"] == "o200k_base"
        raw = cli_json(["replay", path, "--no-calibrate"], capsys)
        assert not raw["calibrated"] and raw["calibration"] is None
        # the file lacks Claude Code's ~26k-token system prompt and tools: raw counts fall far short
        first = lambda d: d["requests"][0]["input_tokens"]  # noqa: E731
        assert first(raw) < 1_000 < 25_000 < first(o200k)

    def test_a_recording_without_usage_says_it_is_uncalibrated(self):
        conv = Conversation((Turn(UserInput("hello"), (AssistantMessage("hi"),)),), id="plain")
        m = measure(conv)
        assert not m.calibrated and m.calibration is None and m.pricing is None
        assert "uncalibrated: the recording has no provider usage" in m.counter_line()
        assert m.lines()[1].startswith("prices: none")

    def test_a_calibrated_counter_is_not_calibrated_again(self):
        conv = session([("gpt-4o", 3_000 + 700 * k, 0, 50) for k in range(6)])
        given = ScaledCounter(ApproxCounter(), 1.5, 100)
        m = measure(conv, counter=given)
        assert m.counter is given and m.calibration is None


class TestPricedPerCall:
    def test_each_call_is_priced_by_its_own_model(self):
        conv = session([("claude-opus-4-6", 3_000, 0, 100), ("claude-haiku-4-5", 3_500, 0, 40),
                        ("claude-opus-4-6", 4_000, 0, 100)])
        counter = TiktokenCounter()
        frame = replay(conv, lambda: FullContext(""), counter=counter, pricing="auto").requests
        opus, haiku = Pricing.for_model("claude-opus-4-6"), Pricing.for_model("claude-haiku-4-5")
        for row, price in zip(frame.itertuples(), (opus, haiku, opus)):
            assert row.cost_usd == pytest.approx(row.input_tokens * price.input + row.output_tokens * price.output)
        # caches are per model: the Haiku call reads nothing another model wrote
        assert frame["cache_read_tokens"].iloc[1] == 0
        # priced all as Opus, the same replay costs more
        as_opus = replay(conv, lambda: FullContext(""), counter=counter, pricing="claude-opus-4-6").requests
        assert as_opus["cost_usd"].sum() > frame["cost_usd"].sum()

    def test_the_recorded_cost_uses_each_call_s_model_and_cache_prices(self):
        conv = session([("claude-opus-4-6", 3_000, 0, 100), ("claude-haiku-4-5", 3_500, 2_000, 40)])
        rec = recorded(conv)
        opus, haiku = Pricing.for_model("claude-opus-4-6"), Pricing.for_model("claude-haiku-4-5")
        assert rec.models == {"claude-opus-4-6": 1, "claude-haiku-4-5": 1}
        assert rec.cost_usd_cached == pytest.approx(
            3_000 * opus.input + 100 * opus.output + 1_500 * haiku.input + 2_000 * haiku.cache_read
            + 40 * haiku.output)

    def test_a_model_not_in_the_price_table_is_named(self):
        conv = session([("claude-opus-4-6", 3_000, 0, 100)] * 2 + [("our-own-model-7", 3_000, 0, 100)])
        m = measure(conv)
        assert isinstance(m.pricing, CallPricing) and m.pricing.unpriced == ("our-own-model-7",)
        assert any("not in the price table, priced as claude-opus-4-6: our-own-model-7" in n for n in m.notes)

    def test_a_recording_naming_no_model_is_priced_as_the_stand_in_the_replay_uses(self, capsys):
        conv = session([("", 3_000, 0, 100), ("", 3_500, 2_000, 40)])
        assert math.isnan(measure(conv).recorded.cost_usd_cached)  # nothing to price it by
        m = measure(conv, pricing="claude-sonnet-4-5")
        sonnet = Pricing.for_model("claude-sonnet-4-5")
        assert m.recorded.cost_usd_cached == pytest.approx(
            3_000 * sonnet.input + 100 * sonnet.output + 1_500 * sonnet.input + 2_000 * sonnet.cache_read
            + 40 * sonnet.output)
        assert m.recorded.as_dict()["priced_as"] == "claude-sonnet-4-5"
        assert m.recorded_lines()[0].endswith("at the stand-in's prices")
        assert m.pricing_line().endswith("a stand-in for every call: the recording names no model the price table knows")
        # AutoPricing: each call by its own model, and this one as the stand-in
        stood_in = measure(conv, pricing=AutoPricing("claude-sonnet-4-5"))
        assert stood_in.recorded.cost_usd_cached == pytest.approx(m.recorded.cost_usd_cached)
        assert stood_in.lines() == m.lines()
        as_model, auto = (replay(conv, lambda: FullContext(""), counter=ApproxCounter(), pricing=p).requests
                          for p in ("claude-sonnet-4-5", AutoPricing("claude-sonnet-4-5")))
        assert auto["cost_usd_cached"].sum() == pytest.approx(as_model["cost_usd_cached"].sum())
        assert as_model["cost_usd_cached"].sum() > 0
        opus = measure(session([("claude-opus-4-6", 3_000, 0, 100)]), pricing=AutoPricing("claude-sonnet-4-5"))
        assert isinstance(opus.pricing, CallPricing) and opus.pricing.model == "claude-opus-4-6"
        # a recording that names its model is priced by it, whatever the replay is priced as
        named = measure(session([("claude-opus-4-6", 3_000, 0, 100)]), pricing="claude-sonnet-4-5").recorded
        assert not named.stand_in and named.as_dict()["priced_as"] is None
        assert named.cost_usd_cached == pytest.approx(3_000 * Pricing.for_model("claude-opus-4-6").input
                                                      + 100 * Pricing.for_model("claude-opus-4-6").output)

    def test_the_header_lists_every_model_s_prices(self):
        m = measure(session([("claude-opus-4-6", 3_000, 0, 100), ("claude-haiku-4-5", 3_500, 0, 40)]))
        line = m.pricing_line()
        assert line.startswith("prices (per call, USD per million tokens): ")
        assert "claude-opus-4-6 input 5, output 25" in line and "claude-haiku-4-5 input 1, output 5" in line
        prices = m.as_dict()["pricing"]
        assert prices["claude-opus-4-6"]["cache_write_multiplier"] == pytest.approx(1.25)
        assert prices["claude-opus-4-6"]["cache_ttl_seconds"] == 300


class TestRecorded:
    def test_a_request_without_a_recorded_call_is_left_out_and_named(self):
        # turn 0 ends on its tool round's results with no reply recorded (Claude Code stopped by
        # a hook): the replay sends request 1 all the same, which no bill holds
        call = ToolCall("c1", "Edit", {"path": "a.py"})
        turns = (Turn(UserInput("fix a.py"), (AssistantMessage("", (call,)), ToolResults((ToolResult("c1", "ok"),))),
                      usage=(Usage(1_000, 20, model="gpt-4o"),)),
                 Turn(UserInput("continue"), (AssistantMessage("done"),), usage=(Usage(1_200, 5, model="gpt-4o"),)))
        conv = Conversation(turns, id="stopped")
        rec = recorded(conv)
        assert list(rec.calls["request"]) == [0, 2] and rec.unrecorded() == [1]
        assert rec.compared() == "2 recorded calls; request 1 left out: no recorded call"
        frame = replay(conv, lambda: FullContext(""), counter=ApproxCounter(),
                       pricing=Pricing.for_model("gpt-4o")).requests
        assert len(frame) == 3 and rec.against(frame)[2] == 2
        assert rec.against(frame)[0] == pytest.approx(frame.loc[[0, 2], "cost_usd_cached"].sum())

    def test_a_compaction_is_placed_at_the_request_after_it(self):
        conv = session([("gpt-4o", 3_000 + 1_000 * k, 0, 50) for k in range(5)], compact_after=3)
        (point,) = recorded(conv).compactions
        assert (point.request, point.tokens_before, point.tokens_after) == (3, 9_999, 6_000)

    @pytest.mark.real_data
    @pytest.mark.skipif(not (REAL_DATA / "codex").is_dir(), reason="real Codex sessions are not on this machine")
    def test_the_real_codex_compaction(self):
        path = next((REAL_DATA / "codex").glob("rollout-2026-02-23T12-54-34-*.jsonl"))
        rec = recorded(_load(path))
        (point,) = rec.compactions
        assert (point.tokens_before, point.tokens_after, rec.window) == (209_950, 48_297, 258_400)
        assert rec.calls.set_index("request").loc[point.request, "input_tokens"] == 48_297


    @pytest.mark.real_data
    @pytest.mark.skipif(not (REAL_DATA / "codex").is_dir(), reason="real Codex sessions are not on this machine")
    def test_a_sanitized_session_fits_its_recorded_sizes(self):
        """The shared Codex rollouts hold markers where their texts were: weighed as the texts
        they replaced, the requests grow as the recorded ones did (weighed as written, the
        fit was an offset alone and missed by 21–35%)."""
        errors = {}
        for path in sorted((REAL_DATA / "codex").glob("rollout-*.jsonl")):
            m = measure(_load(path))
            if m.calibration is not None and m.calibration.requests >= 20:
                errors[path.name[:27]] = m.calibration.error_after
                assert m.calibration.factor != 1, path.name  # a factor is fitted, not an offset alone
        assert len(errors) == 4 and max(errors.values()) < 0.08, errors

    def test_a_sanitized_recording_is_said_so(self):
        conv = session([("gpt-4o", 3_000, 0, 50)])
        assert not any(n.startswith("sanitized") for n in measure(conv).notes)
        marked = dataclasses.replace(conv, turns=tuple(dataclasses.replace(t, input=UserInput(
            "[REDACTED_TEXT len=3021 sha=dc9e82a0] and [REDACTED_TEXT len=12 sha=0011aabb]")) for t in conv.turns))
        (note,) = [n for n in measure(marked).lines() if n.startswith("sanitized")]
        assert note.startswith("sanitized: 2 redaction markers ") and "weighs the N characters it replaced" in note


class TestCacheMisses:
    """A recorded call that read under half of what the call before sent, with nothing
    recorded to explain it, is a cache miss the provider made and a replay cannot foresee."""

    READS = [0, 2_900, 100, 4_900]  # the third call read 100 of the 4,000 tokens the second sent

    def conv(self, reads=READS, models=("gpt-4o",) * 4, inputs=(3_000, 4_000, 5_000, 6_000), at=None, meta=None):
        """``meta``: turn -> its metadata."""
        conv = session([(m, n, r, 50) for m, n, r in zip(models, inputs, reads)], compact_after=at)
        turns = [dataclasses.replace(t, metadata=(meta or {}).get(k, {})) for k, t in enumerate(conv.turns)]
        return dataclasses.replace(conv, turns=tuple(turns))

    def test_the_miss_and_what_it_cost(self):
        rec = recorded(self.conv())
        (miss,) = rec.misses
        price = CallPricing.for_models({"gpt-4o": 4}).for_call("gpt-4o")
        assert (miss.request, miss.read, miss.shared) == (2, 100, 4_000)
        assert miss.extra_usd == pytest.approx(3_900 * (price.input - price.cache_read))
        assert rec.missed() == (1, pytest.approx(miss.extra_usd))
        assert rec.as_dict()["cache_misses"] == [{"request": 2, "read": 100, "shared": 4_000,
                                                  "extra_usd": pytest.approx(miss.extra_usd)}]
        (line,) = [x for x in measure(self.conv()).lines() if x.startswith("recorded cache misses")]
        assert line.startswith("recorded cache misses: 1 call (request 2) read under half of what the call before")

    def test_what_a_recording_explains_is_no_miss(self):
        assert recorded(self.conv(reads=[0, 2_900, 3_900, 4_900])).misses == ()
        assert recorded(self.conv(at=2)).misses == ()  # the agent compacted between the two calls
        assert recorded(self.conv(models=("gpt-4o", "gpt-4o", "gpt-4o-mini", "gpt-4o"))).misses == ()
        assert recorded(self.conv(meta={2: {"cache_resets": [0]}})).misses == ()  # the agent reset its cache
        assert recorded(self.conv(inputs=(500, 600, 700, 800), reads=[0, 0, 0, 0])).misses == ()  # below 1,024
        paused = {1: {"request_times": [1_000.0]}, 2: {"request_times": [1_000.0 + 301]}}
        assert recorded(self.conv(meta=paused)).misses == ()  # past the cache's 5 minutes
        soon = {1: {"request_times": [1_000.0]}, 2: {"request_times": [1_000.0 + 30]}}
        assert [m.request for m in recorded(self.conv(meta=soon)).misses] == [2]

    def test_the_cost_line_sets_the_replay_beside_the_bill_less_its_misses(self, tmp_path, capsys):
        conv = self.conv()
        frame = replay(conv, lambda: FullContext(""), counter=measure(conv).counter, pricing="auto").requests
        mine, theirs, _ = recorded(conv).against(frame)
        extra = recorded(conv).missed()[1]
        path = tmp_path / "s.json"
        save_conversation(conv, path)
        assert main(["replay", str(path), "--strategy", "full"]) == 0
        (line,) = [x for x in capsys.readouterr().out.splitlines() if x.startswith("cost with caching")]
        assert line.endswith(f"({mine / theirs - 1:+.1%}; {mine / (theirs - extra) - 1:+.1%} against the bill "
                             f"less its 1 recorded cache miss)")

    @pytest.mark.real_data
    @pytest.mark.skipif(not (REAL_DATA / "codex").is_dir(), reason="real Codex sessions are not on this machine")
    def test_on_the_real_codex_sessions_the_replay_is_the_bill_less_its_misses(self, capsys):
        """Replayed by default, each shared rollout of 20 calls or more costs within 5% of
        what it recorded once its cache misses are taken out (13–24% below it with them)."""
        for path in sorted((REAL_DATA / "codex").glob("rollout-*.jsonl")):
            doc = cli_json(["replay", path, "--strategy", "full"], capsys)
            against = doc["cost_against_recorded"]
            if against["calls"] < 20:
                continue
            held = against["recorded_usd"] - against["cache_misses_usd"]
            assert abs(against["replayed_usd"] / held - 1) < 0.05, (path.name, against)

class TestIndex:
    def test_a_bad_index_lists_the_ids(self, tmp_path, capsys):
        path = tmp_path / "two.json"
        chat = {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]}
        path.write_text(json.dumps([chat, chat]))
        with pytest.raises(ConversationIndexError) as caught:
            _load(path, index=5)
        assert isinstance(caught.value, HarpeLabError) and "positions 0 to 1" in str(caught.value)
        assert main(["replay", str(path), "--index", "5"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "index 5 is out of range; the file holds 2" in err
        assert main(["replay", str(path), "--index", "1"]) == 0


def _load(path, index=None):
    from harpe_lab.importers import load_any

    return load_any(path, index=index)
