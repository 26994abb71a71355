"""Distillers (extractive, recorded, LLM through litellm) and artifact extraction."""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
import warnings

import pytest

from harpe_lab import ApproxCounter, StrategyError, SummarizingContext
from harpe_lab.errors import ModelError
from harpe_lab.strategies.harpe import DISTILL_SYSTEM, SUMMARY_HEADER, distill_request
from harpe_lab.conversation import Conversation, RecordedCompaction, Turn
from harpe_lab.evaluate import artifact_retention
from harpe_lab.messages import AssistantMessage, Attachment, Rendered, Usage, UserInput
from harpe_lab.replay import replay
from harpe_lab.summarize import (
    ARTIFACT_CATEGORIES,
    HARPE_DISTILL_SYSTEM,
    DistillFallback,
    DistillFallbackWarning,
    ExtractiveDistiller,
    LLMDistiller,
    RecordedDistiller,
    extract_artifacts,
    messages_text,
)
from harpe_lab.models import default_cache_dir
from tests._support.builders import call, chat, reply, results
from tests._support.openai_server import Reply

COUNTER = ApproxCounter()
SECRET = "sk-test-SECRET-3f9c0a1b2c3d4e5f"

# --- a realistic coding-agent session ---------------------------------------------------

CONFIG_PY = '''"""Configuration loading for the acme service.

Settings come from a JSON file in the user's config folder. Every field has a default, so
a partial file is fine; an unknown key is ignored rather than rejected, because older
deployments still write keys we have since removed.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_PATH = Path("~/.config/acme/settings.json")


@dataclass(frozen=True)
class Settings:
    """Service settings; every field has a default."""

    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 4
    cache_size: int = 256


def load_settings(path: str | os.PathLike = DEFAULT_PATH) -> Settings:
    """Read settings from a JSON file; missing keys keep their defaults."""
    with open(Path(path).expanduser(), encoding="utf-8") as f:
        data = json.load(f)
    return Settings(**{k: v for k, v in data.items() if k in Settings.__dataclass_fields__})
'''

SERVER_PY = '''"""HTTP server for the acme item catalogue.

The server keeps a small in-memory cache in front of the database and answers the
catalogue endpoints. It is deliberately simple: one process, a pool of worker threads,
and no framework beyond the standard library. Requests that miss the cache go to the
store, which reads from the database and fills the cache on the way back.
"""
from __future__ import annotations

import json
import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

from .config import Settings, load_settings
from .store import ItemStore

log = logging.getLogger("acme.server")


class Handler(BaseHTTPRequestHandler):
    """Answers GET requests for items; everything else is rejected with a clear error."""

    store: ItemStore

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path != "/api/v1/items":
            self.send_error(404, "no such endpoint")
            return
        query = parse_qs(url.query)
        page = int(query.get("page", ["0"])[0])
        items = self.store.page(page)
        body = json.dumps({"page": page, "items": items}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt: str, *args: object) -> None:
        # route the access log through logging, so it can be filtered and shipped
        log.info(fmt, *args)


def serve(settings: Settings | None = None) -> None:
    """Start the server and block until interrupted."""
    settings = settings or load_settings()
    Handler.store = ItemStore(cache_size=settings.cache_size)
    server = ThreadingHTTPServer((settings.host, settings.port), Handler)
    server.daemon_threads = True
    log.info("listening on %s:%d with %d workers", settings.host, settings.port, settings.workers)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        log.info("shutting down")
    finally:
        server.server_close()
'''

PYTEST_FAIL = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0
rootdir: /home/dev/acme
configfile: pyproject.toml
collected 14 items

tests/test_config.py ..F...                                              [ 42%]
tests/test_server.py ........                                            [100%]

=================================== FAILURES ===================================
___________________________ test_load_settings_blank ___________________________

    def test_load_settings_blank(tmp_path):
        p = tmp_path / "settings.json"
        p.write_text("")
>       assert load_settings(p) == Settings()

tests/test_config.py:31:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
src/acme/config.py:24: in load_settings
    data = json.load(f)
E   json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)
=========================== short test summary info ============================
FAILED tests/test_config.py::test_load_settings_blank - json.decoder.JSONDecodeError
========================= 1 failed, 13 passed in 0.84s =========================
"""

PYTEST_PASS = """============================= test session starts ==============================
platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0
rootdir: /home/dev/acme
collected 15 items

tests/test_config.py .......                                             [ 46%]
tests/test_server.py ........                                            [100%]

============================== 15 passed in 0.91s ==============================
"""

BENCH = """Running 30s test @ http://127.0.0.1:8080/api/v1/items
  4 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    18.42ms    6.10ms  97.31ms   88.12%
    Req/Sec     0.87k   120.44     1.21k    71.00%
  104211 requests in 30.02s, 1.9GB read
Requests/sec:   3471.30
Transfer/sec:     64.83MB
"""

PERFORMANCE_MD = """# Performance notes

The catalogue endpoint is the only hot path of the service. Most of its time goes to
serialising the page of items, not to the store: the store answers from its cache for
almost every request once the service has warmed up, and a cold start fills the cache
within the first minute of traffic.

## How we measure

We run the benchmark from a second machine on the same network, against a service that
has been up for at least five minutes, so the cache is warm. Each run lasts thirty
seconds with four threads and sixty-four connections. We record the average latency, the
slowest request and the throughput, and compare them with the previous release before we
merge anything that touches the request path.

## What to expect

On the reference machine the service answers about 3400 requests/sec with an average
latency under 20 ms. A change that costs more than a tenth of that throughput needs a
reason written in its pull request. Latency spikes above 100 ms usually mean the cache is
too small for the working set; raise cache_size before you look anywhere else.

## Known slow paths

Pages far from the start are slower, because the store walks the index from the first
page. Nobody has asked for deep pages yet, so we have left it alone. The access log is
written through logging, which costs a little; turning it off gains almost nothing and
loses the only record of who asked for what, so we keep it on.
"""

ACCESS_LOG = "\n".join(
    f"2024-05-01 10:{m:02d}:{s:02d} INFO acme.server: \"GET /api/v1/items?page={m % 3} HTTP/1.1\" 200 -"
    for m in range(14, 17) for s in range(0, 60, 2)
)

PYTEST_VERBOSE = "\n".join(
    [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.11.7, pytest-8.2.0, pluggy-1.5.0",
        "rootdir: /home/dev/acme",
        "collected 15 items",
        "",
    ]
    + [f"tests/test_config.py::{name} PASSED" for name in (
        "test_load_settings_defaults", "test_load_settings_partial", "test_load_settings_blank",
        "test_load_settings_malformed", "test_load_settings_unknown_keys", "test_load_settings_home",
        "test_settings_frozen")]
    + [f"tests/test_server.py::{name} PASSED" for name in (
        "test_items_first_page", "test_items_second_page", "test_items_bad_page", "test_unknown_endpoint",
        "test_content_type", "test_content_length", "test_access_log", "test_shutdown")]
    + ["", "============================== 15 passed in 0.91s =============================="]
)

GIT_LOG = "\n".join(
    f"{h} {msg}"
    for h, msg in [
        ("9c1e2f3a", "config: treat a blank settings file as empty"),
        ("77d0b1e4", "server: route the access log through logging"),
        ("5be3a9c0", "store: page through items with a bounded cache"),
        ("1f0e2d3c", "ci: run the test suite on every push"),
    ]
)


def coding_session() -> Conversation:
    """Three turns of an agent fixing a config bug, with file reads, test runs, a benchmark."""
    return Conversation(
        (
            Turn(UserInput(
                "The acme service crashes on startup when ~/.config/acme/settings.json is empty. Please "
                "make load_settings() fall back to the defaults for a blank file, but it must not hide a "
                "malformed one. The bug report is https://github.com/acme/acme/issues/311."
            ), (
                reply("I'll look at the config loader and the server that calls it.",
                      call("toolu_01", "read_file", path="src/acme/config.py")),
                results(("toolu_01", CONFIG_PY)),
                reply("", call("toolu_02", "read_file", path="src/acme/server.py")),
                results(("toolu_02", SERVER_PY)),
                reply("Let me run the config tests to see the current failure.",
                      call("toolu_03", "bash", command="pytest -q tests/test_config.py")),
                results(("toolu_03", PYTEST_FAIL), success=False),
                AssistantMessage(
                    "The test fails with JSONDecodeError because json.load cannot parse an empty file. We "
                    "decided to treat a blank file as an empty object instead of catching every "
                    "JSONDecodeError, so a malformed file still raises. I will edit src/acme/config.py and "
                    "add test_load_settings_malformed to tests/test_config.py."
                ),
            )),
            Turn(UserInput(
                "Sounds good. Keep cache_size at 256 MB by default, and run the whole suite with `pytest -q`."
            ), (
                reply("Editing the loader.",
                      call("toolu_04", "edit_file", path="src/acme/config.py", old="data = json.load(f)",
                           new="text = f.read()\n    data = json.loads(text) if text.strip() else {}")),
                results(("toolu_04", "Edited src/acme/config.py: 1 replacement (lines 23-24).")),
                reply("Running the suite.", call("toolu_05", "bash", command="pytest -q")),
                results(("toolu_05", PYTEST_PASS)),
                reply("Reading the loader back to check the edit.",
                      call("toolu_08", "read_file", path="src/acme/config.py")),
                results(("toolu_08", CONFIG_PY.replace(
                    "data = json.load(f)", "text = f.read()\n    data = json.loads(text) if text.strip() else {}"))),
                reply("", call("toolu_09", "bash", command="pytest -v")),
                results(("toolu_09", PYTEST_VERBOSE)),
                AssistantMessage("All 15 tests pass in 0.91s. The default cache_size stays 256 MB."),
            )),
            Turn(UserInput(
                "Check the server still answers /api/v1/items quickly: run "
                "`wrk -t4 -c64 -d30s http://127.0.0.1:8080/api/v1/items` and show me `git log --oneline -4`."
            ), (
                reply("First the performance notes, then the access log.",
                      call("toolu_10", "read_file", path="docs/performance.md")),
                results(("toolu_10", PERFORMANCE_MD)),
                reply("", call("toolu_11", "bash", command="tail -n 90 /var/log/acme/access.log")),
                results(("toolu_11", ACCESS_LOG)),
                reply("Benchmarking.",
                      call("toolu_06", "bash", command="wrk -t4 -c64 -d30s http://127.0.0.1:8080/api/v1/items")),
                results(("toolu_06", BENCH)),
                reply("", call("toolu_07", "bash", command="git log --oneline -4")),
                results(("toolu_07", GIT_LOG)),
                AssistantMessage(
                    "Throughput is 3471.30 requests/sec with 18.42ms average latency, in line with "
                    "docs/performance.md. Commit 9c1e2f3a holds the fix; I opened "
                    "https://github.com/acme/acme/pull/312 for review."
                ),
            )),
        ),
        id="coding-session",
        system="You are a careful coding agent.",
    )


def harpe_request(messages, summary: str = "") -> Rendered:
    """The request SummarizingContext sends its distiller."""
    return Rendered(DISTILL_SYSTEM, (UserInput(distill_request(messages, summary)),))


def summarizing(distill, high: int = 60) -> SummarizingContext:
    return SummarizingContext("sys", high_water_tokens=high, low_water_chars=200, distill=distill)


# --- artifacts ---------------------------------------------------------------------------


class TestExtractArtifacts:
    TEXT = (
        "The build failed after 3.2 s. See https://github.com/acme/api/issues/42.\n"
        "I ran `pytest -q tests/test_config.py` and `git status`. Edit src/acme/config.py and README.md.\n"
        "$ python -m pip install httpx\n"
        "We decided to use orjson instead of json because it is 3x faster. The cache uses 512 MB and 40% CPU.\n"
        "parse_config() raises HTTPError when os.path.exists fails; see commit 3f9c0a1b and JIRA-123.\n"
        "Released v1.2.3 on 2024-05-01 for $12.50 and/or I/O, e.g. this. Set $HOME and --strict-markers.\n"
    )

    def test_each_category(self):
        a = extract_artifacts(self.TEXT)
        assert set(a) == set(ARTIFACT_CATEGORIES)
        assert a["files"] == {"tests/test_config.py", "src/acme/config.py", "README.md"}
        assert a["commands"] == {"pytest -q tests/test_config.py", "git status", "python -m pip install httpx"}
        assert a["numbers"] == {"3.2 s", "3x", "512 MB", "40%", "v1.2.3", "2024-05-01", "$12.50"}
        assert a["urls"] == {"https://github.com/acme/api/issues/42"}
        assert a["identifiers"] == {
            "parse_config", "HTTPError", "os.path.exists", "3f9c0a1b", "JIRA-123", "$HOME", "--strict-markers",
        }  # fmt: skip
        assert a["decisions"] == {"We decided to use orjson instead of json because it is 3x faster."}

    def test_prose_is_not_an_artifact(self):
        a = extract_artifacts("Read and/or write the I/O, e.g. now, i.e. later; it is 1/2 done. Plain words here.")
        assert all(not v for v in a.values())

    def test_url_parts_are_not_paths_and_path_parts_are_not_identifiers(self):
        a = extract_artifacts("Open https://example.org/docs/api_v2/index.html and src/my_module/helpers_py.py")
        assert a["urls"] == {"https://example.org/docs/api_v2/index.html"}
        assert a["files"] == {"src/my_module/helpers_py.py"}
        assert a["identifiers"] == set()

    def test_commands_from_prompt_lines_and_shell_blocks(self):
        text = "Run this:\n```bash\n# setup\nmake build\n$ ./run.sh --fast\n```\n  $ docker compose up -d\n"
        assert extract_artifacts(text)["commands"] == {"make build", "./run.sh --fast", "docker compose up -d"}

    def test_a_bare_program_name_in_backticks_is_not_a_command(self):
        assert extract_artifacts("We use `python` and `git` here.")["commands"] == set()

    def test_needs_text(self):
        with pytest.raises(TypeError, match="messages_text"):
            extract_artifacts([UserInput("x")])


class TestMessagesText:
    def test_tool_call_commands_and_attachment_paths_count(self):
        msgs = [
            UserInput("see the log", (Attachment("app.log", 10, "text/plain", "/var/log/app.log"),)),
            reply("", call("c1", "bash", command="grep -n ERROR /var/log/app.log")),
            results(("c1", "12: ERROR boom")),
        ]
        a = extract_artifacts(messages_text(msgs))
        assert "grep -n ERROR /var/log/app.log" in a["commands"]
        assert "/var/log/app.log" in a["files"]

    def test_rendered_includes_the_system_prompt(self):
        assert messages_text(Rendered("sys at /etc/acme.conf", (UserInput("hi"),))).startswith("sys at /etc/acme.conf")


# --- the extractive baseline -------------------------------------------------------------


class TestExtractiveDistiller:
    def test_keeps_every_artifact_of_a_coding_session_while_cutting_80_percent(self):
        conv = coding_session()
        request = harpe_request(conv.messages())
        excerpt = request.messages[0].text
        summary = ExtractiveDistiller(max_chars=len(excerpt) // 5)(request)
        assert len(summary) <= 0.2 * len(excerpt)
        retention = artifact_retention(excerpt, summary)
        assert retention == {c: 1.0 for c in (*ARTIFACT_CATEGORIES, "all")}
        # spot checks of what a reader of the summary relies on
        for artifact in ("src/acme/config.py", "256 MB", "https://github.com/acme/acme/pull/312", "9c1e2f3a",
                         "wrk -t4 -c64 -d30s http://127.0.0.1:8080/api/v1/items", "JSONDecodeError"):
            assert artifact in summary

    def test_keeps_commands_from_tool_calls_when_it_sees_the_messages(self):
        conv = coding_session()
        summary = ExtractiveDistiller(max_chars=4000)(Rendered("", tuple(conv.messages())))
        for command in ("pytest -q tests/test_config.py", "git log --oneline -4", "tail -n 90 /var/log/acme/access.log"):
            assert f"`{command}`" in summary

    def test_folding_into_its_own_summary_keeps_the_old_artifacts(self):
        conv = coding_session()
        d = ExtractiveDistiller(max_chars=3000)
        first = d(harpe_request(conv.turns[0].all_messages))
        second = d(harpe_request(conv.turns[1].all_messages, first))
        assert artifact_retention(first, second)["all"] == 1.0
        assert "https://github.com/acme/acme/issues/311" in second and "256 MB" in second

    def test_deterministic(self):
        request = harpe_request(coding_session().messages())
        assert ExtractiveDistiller(max_chars=1500)(request) == ExtractiveDistiller(max_chars=1500)(request)

    def test_decisions_are_the_first_notes(self):
        summary = ExtractiveDistiller(max_chars=2500)(harpe_request(coding_session().messages()))
        notes = summary.split("Notes:\n", 1)[1].splitlines()
        assert any("decided to treat a blank file as an empty object" in n for n in notes)

    def test_stays_bounded_when_the_artifacts_do_not_fit(self):
        text = " ".join(f"src/pkg/module_{k:04d}.py" for k in range(400))
        summary = ExtractiveDistiller(max_chars=600)(harpe_request([UserInput(text)]))
        assert len(summary) <= 600
        assert "src/pkg/module_0399.py" in summary  # the most recent survive
        assert "older artifacts omitted" in summary

    def test_a_long_excerpt_is_bounded_and_keeps_its_artifacts(self):
        # its speed is measured beside the tokenizer floor in benchmarks/replay.py
        conv = coding_session()
        request = harpe_request(list(conv.messages()) * 25)  # ~200k characters
        summary = ExtractiveDistiller(max_chars=8000)(request)
        assert len(summary) <= 8000 and summary.startswith("Files:")

    @pytest.mark.parametrize("bad", [0, -5, 1.5, True, "100"])
    def test_rejects_a_bad_max_chars(self, bad):
        with pytest.raises(StrategyError, match=f"max_chars must be an int >= 1, got {bad!r}"):
            ExtractiveDistiller(max_chars=bad)

    def test_drives_a_summarizing_replay(self):
        rp = replay(chat(8, 40), lambda: summarizing(ExtractiveDistiller(max_chars=300)), counter=COUNTER)
        compactions = [e for e in rp.events if e.kind == "ContextCompacted"]
        assert compactions
        i = compactions[0].request
        assert rp.summary(i).startswith("Notes:\n- User: question 0:")
        assert SUMMARY_HEADER in rp.rendered(i).system

    def test_a_calibrated_counter_prices_a_distill_call_as_written(self):
        """Its offset stands for the agent's system prompt and tools the recording lacks: a
        distill request the replay writes holds its own whole, so only the factor applies."""
        from harpe_lab.tokens import ScaledCounter

        calibrated, bare = ScaledCounter(ApproxCounter(), 1.5, 50_000), ScaledCounter(ApproxCounter(), 1.5)
        rp = replay(chat(8, 40), lambda: summarizing(ExtractiveDistiller(max_chars=300), high=50_100),
                    counter=calibrated)
        calls = [e.event for e in rp.events if e.kind == "DistillCall"]
        assert calls and all(c.usage is None for c in calls)
        assert int(rp.requests["distill_input_tokens"].sum()) == sum(bare.count_rendered(c.request) for c in calls)
        assert rp.requests["input_tokens"].min() > 50_000  # the agent's own requests keep it


# --- recorded summaries ------------------------------------------------------------------


class TestRecordedDistiller:
    def test_returns_the_recorded_summaries_in_order(self):
        d = RecordedDistiller(["first", "second"])
        assert [d(harpe_request([UserInput("x")])) for _ in range(2)] == ["first", "second"]
        assert d.used == 2 and not d.exhausted

    def test_reads_a_conversations_compactions_in_turn_order(self):
        conv = chat(3, 40).with_(compactions=(
            RecordedCompaction(turn=2, summary="later"), RecordedCompaction(turn=1, summary=""),
            RecordedCompaction(turn=1, summary="earlier"),
        ))  # fmt: skip
        assert RecordedDistiller(conv).summaries == ("earlier", "later")

    def test_a_conversation_without_summaries_is_refused(self):
        with pytest.raises(StrategyError, match="no recorded compaction summary"):
            RecordedDistiller(chat(2, 40).with_(compactions=(RecordedCompaction(turn=1),)))

    def test_running_out_returns_none_and_reports_it(self):
        seen = []
        d = RecordedDistiller(["only"], on_event=seen.append)
        d(harpe_request([UserInput("x")]))
        with pytest.warns(DistillFallbackWarning, match="exhausted"):
            assert d(harpe_request([UserInput("y")])) is None
        assert d.exhausted
        assert seen == d.events == [DistillFallback("exhausted", "call 2 but only 1 recorded summaries", "RecordedDistiller")]

    def test_running_out_can_raise(self):
        d = RecordedDistiller([], on_exhausted="raise")
        with pytest.raises(StrategyError, match="ran out"):
            d(harpe_request([UserInput("x")]))

    def test_in_a_replay_the_summary_is_the_recorded_one_and_running_out_is_an_event(self):
        d = RecordedDistiller(["the real summary"])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rp = replay(chat(10, 40), lambda: summarizing(d), counter=COUNTER)
        kinds = [e.kind for e in rp.events]
        # one warning for the whole replay, with the count, however often it ran out
        fallbacks = kinds.count("DistillFallback")
        assert fallbacks > 1
        assert [str(w.message) for w in caught if w.category is DistillFallbackWarning] == [
            f"SummarizingContext on {rp.conversation.id!r}: the distiller returned None {fallbacks} times "
            "(exhausted: call 2 but only 1 recorded summaries); see Replay.events"
        ]
        assert kinds.count("ContextCompacted") == 1
        assert "DistillFallback" in kinds
        first = next(e.request for e in rp.events if e.kind == "ContextCompacted")
        assert rp.summary(first) == "the real summary"
        assert rp.summary(len(rp) - 1) == "the real summary"  # None never replaced it

    def test_refuses_a_single_string(self):
        with pytest.raises(TypeError, match="wrap it"):
            RecordedDistiller("one summary")


# --- the LLM distiller through litellm ---------------------------------------------------


def llm(server, tmp_path, **kw) -> LLMDistiller:
    kw.setdefault("retries", 0)
    kw.setdefault("api_key", SECRET)
    return LLMDistiller(kw.pop("model", "openai/test-model"), api_base=server.base_url, cache_dir=tmp_path / "cache", **kw)


def written_files(*roots):
    return [p for root in roots if root.exists() for p in root.rglob("*") if p.is_file()]


def assert_no_secret(*roots):
    files = written_files(*roots)
    for p in files:
        assert SECRET.encode() not in p.read_bytes(), f"the API key was written to {p}"
    return files


class TestLLMDistiller:
    def test_sends_harpes_request_and_returns_the_reply_with_its_usage(self, openai_server, tmp_path):
        openai_server.script(Reply.text("Goal: fix the loader.", prompt_tokens=123, completion_tokens=45))
        d = llm(openai_server, tmp_path)
        request = harpe_request([UserInput("fix the loader")])
        assert d(request) == "Goal: fix the loader."
        sent = openai_server.requests[0]
        assert sent["messages"] == [
            {"role": "system", "content": HARPE_DISTILL_SYSTEM},
            {"role": "user", "content": request.messages[0].text},
        ]
        assert sent["temperature"] == 0 and sent["max_tokens"] == 1024
        assert d.last_usage == Usage(123, 45, provider="litellm", model="openai/test-model")
        assert math.isnan(d.last_cost_usd)  # the local model has no price
        assert d.totals()["input_tokens"] == 123 and d.totals()["calls"] == 1

    def test_a_known_model_is_priced_from_litellms_table(self, openai_server, tmp_path):
        from harpe_lab.models._litellm import litellm

        openai_server.script(Reply.text("ok", prompt_tokens=1000, completion_tokens=100))
        d = llm(openai_server, tmp_path, model="openai/gpt-4o-mini")
        d(harpe_request([UserInput("x")]))
        price = litellm().model_cost["gpt-4o-mini"]
        assert d.last_cost_usd == pytest.approx(1000 * price["input_cost_per_token"] + 100 * price["output_cost_per_token"])

    def test_a_cache_hit_makes_no_request_and_reports_the_same_usage(self, openai_server, tmp_path):
        openai_server.script(Reply.text("summary A", prompt_tokens=50, completion_tokens=7))
        request = harpe_request([UserInput("same input")])
        first = llm(openai_server, tmp_path)
        assert first(request) == "summary A"
        again = llm(openai_server, tmp_path, api_key="sk-another-key")  # a new session, other credentials
        assert again(request) == "summary A"
        assert openai_server.request_count == 1
        assert again.last_usage == first.last_usage
        assert [c.cached for c in again.calls] == [True]
        assert again.totals()["cost_usd_spent"] == 0  # nothing fetched this time

    def test_the_key_covers_input_model_and_reply_shaping_arguments(self, openai_server, tmp_path):
        request = harpe_request([UserInput("x")])
        llm(openai_server, tmp_path)(request)
        llm(openai_server, tmp_path)(harpe_request([UserInput("y")]))
        llm(openai_server, tmp_path, temperature=0.5)(request)
        llm(openai_server, tmp_path, model="openai/other-model")(request)
        llm(openai_server, tmp_path, system="Summarise tersely.")(request)
        assert openai_server.request_count == 5

    def test_the_api_key_is_written_nowhere(self, openai_server, tmp_path):
        openai_server.script(Reply.text("s1"), Reply.error(500), Reply.text("s2"))
        d = llm(openai_server, tmp_path, on_error="skip", extra_headers={"x-token": SECRET})
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            d(harpe_request([UserInput("a")]))
            d(harpe_request([UserInput("b")]))
            d(harpe_request([UserInput("c")]))
        files = assert_no_secret(tmp_path)
        assert len(files) == 2 and all(p.suffix == ".json" for p in files)
        doc = json.loads(files[0].read_text())
        assert set(doc) >= {"key", "model", "params", "text", "usage"}
        assert SECRET not in repr(d) and SECRET not in repr(d.client)
        assert all(SECRET not in str(w.message) for w in caught)
        assert all(SECRET not in e.detail for e in d.events)
        assert openai_server.headers[0]["authorization"] == f"Bearer {SECRET}"  # it was really used

    def test_http_500_is_a_clear_error_and_retries_are_the_sdks(self, openai_server, tmp_path):
        openai_server.script(Reply.error(500, "upstream exploded"), Reply.error(500), Reply.error(500))
        with pytest.raises(ModelError, match="server reported an error.*upstream exploded"):
            llm(openai_server, tmp_path)(harpe_request([UserInput("x")]))
        assert openai_server.request_count == 1
        # retries=1: the provider SDK tries once more, then gives up with the same clear error
        with pytest.raises(ModelError, match="server reported an error"):
            llm(openai_server, tmp_path, retries=1)(harpe_request([UserInput("x")]))
        assert openai_server.request_count == 3
        assert written_files(tmp_path / "cache") == []  # failures are never cached

    def test_a_retry_that_succeeds_is_one_call(self, openai_server, tmp_path):
        openai_server.script(Reply.error(503), Reply.text("second time lucky", prompt_tokens=8, completion_tokens=3))
        d = llm(openai_server, tmp_path, retries=1)
        assert d(harpe_request([UserInput("x")])) == "second time lucky"
        assert openai_server.request_count == 2
        assert len(d.calls) == 1 and d.last_usage.output_tokens == 3

    def test_a_timeout_is_a_clear_error(self, openai_server, tmp_path):
        openai_server.script(Reply(body=Reply.completion("too late"), delay=1.5))
        d = llm(openai_server, tmp_path, timeout=0.4)
        with pytest.raises(ModelError, match=r"timed out \(timeout=0.4 s\)"):
            d(harpe_request([UserInput("x")]))
        assert d.last_usage is None and d.calls[-1].error

    def test_malformed_json_is_a_clear_error(self, openai_server, tmp_path):
        openai_server.script(Reply.malformed())
        with pytest.raises(ModelError, match="malformed JSON"):
            llm(openai_server, tmp_path)(harpe_request([UserInput("x")]))

    @pytest.mark.parametrize("content", ["", "   \n", None])
    def test_an_empty_reply_is_an_error_never_an_empty_summary(self, openai_server, tmp_path, content):
        openai_server.script(Reply(body=Reply.completion(content)), Reply.text("real summary"))
        d = llm(openai_server, tmp_path)
        with pytest.raises(ModelError, match="reply was empty"):
            d(harpe_request([UserInput("x")]))
        assert d(harpe_request([UserInput("x")])) == "real summary"  # not cached: asked again

    def test_skip_returns_none_and_reports_a_fallback(self, openai_server, tmp_path):
        openai_server.script(Reply.error(500))
        seen = []
        d = llm(openai_server, tmp_path, on_error="skip", on_event=seen.append)
        with pytest.warns(DistillFallbackWarning, match="returned None"):
            assert d(harpe_request([UserInput("x")])) is None
        assert len(seen) == 1 and seen == d.events
        assert seen[0].reason == "error" and "server reported an error" in seen[0].detail

    def test_in_a_replay_a_skipped_distill_keeps_history_and_is_an_event(self, openai_server, tmp_path):
        openai_server.script(*[Reply.error(500)] * 20)
        d = llm(openai_server, tmp_path, on_error="skip")
        with pytest.warns(DistillFallbackWarning):
            rp = replay(chat(6, 40), lambda: summarizing(d), counter=COUNTER)
        kinds = {e.kind for e in rp.events}
        assert "DistillFallback" in kinds and "ContextCompacted" not in kinds
        assert rp.requests["messages_dropped"].max() == 0
        assert rp.summary(len(rp) - 1) == ""

    def test_fresh_has_no_calls_and_shares_the_disk_cache(self, openai_server, tmp_path):
        openai_server.script(Reply.text("a summary", prompt_tokens=9, completion_tokens=2))
        d = llm(openai_server, tmp_path, on_error="skip")
        request = harpe_request([UserInput("x")])
        assert d(request) == "a summary"
        again = d.fresh()
        assert again is not d and again.calls == [] and again.on_error == "skip"
        assert again(request) == "a summary" and openai_server.request_count == 1  # served from disk

    def test_async_call_shares_the_cache(self, openai_server, tmp_path):
        openai_server.script(Reply.text("async summary", prompt_tokens=9, completion_tokens=2))
        d = llm(openai_server, tmp_path)
        request = harpe_request([UserInput("x")])
        assert asyncio.run(d.acall(request)) == "async summary"
        assert d.last_usage.input_tokens == 9
        assert d(request) == "async summary"
        assert openai_server.request_count == 1

    def test_rejects_a_bad_on_error(self, tmp_path):
        with pytest.raises(StrategyError, match=r"on_error must be one of \['raise', 'skip'\], but 'ignore'"):
            LLMDistiller("openai/x", on_error="ignore", cache_dir=tmp_path)

    def test_a_replay_takes_distill_tokens_from_the_servers_usage(self, openai_server, tmp_path):
        usage = iter(range(1, 100))

        def reply(body):
            k = next(usage)
            return Reply.text(f"summary {k}", prompt_tokens=1000 + k, completion_tokens=10 * k)

        openai_server.script(*[reply] * 50)
        d = llm(openai_server, tmp_path)
        rp = replay(chat(10, 40), lambda: summarizing(d), counter=COUNTER)
        f = rp.requests
        n = int(f["distill_calls"].sum())
        assert n == openai_server.request_count >= 2
        assert int(f["distill_input_tokens"].sum()) == sum(1000 + k for k in range(1, n + 1))
        assert int(f["distill_output_tokens"].sum()) == sum(10 * k for k in range(1, n + 1))
        assert list(f.loc[f["distill_calls"] > 0, "distill_output_tokens"]) == [10 * k for k in range(1, n + 1)]


class TestCacheLocation:
    def test_env_variable_overrides_the_user_cache_folder(self, monkeypatch, tmp_path):
        monkeypatch.setenv("HARPE_LAB_CACHE_DIR", str(tmp_path / "mine"))
        assert default_cache_dir() == tmp_path / "mine"
        assert LLMDistiller("openai/x").cache_dir == tmp_path / "mine"

    @pytest.mark.skipif(not sys.platform.startswith("linux"), reason="XDG_CACHE_HOME is the Linux convention")
    def test_default_is_under_the_user_cache_folder(self, monkeypatch, tmp_path):
        monkeypatch.delenv("HARPE_LAB_CACHE_DIR", raising=False)
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
        assert default_cache_dir() == tmp_path / "harpe_lab" / "llm"

    def test_a_corrupt_cache_file_names_itself(self, openai_server, tmp_path):
        d = llm(openai_server, tmp_path)
        request = harpe_request([UserInput("x")])
        d(request)
        (path,) = written_files(tmp_path / "cache")
        path.write_text("{broken")
        with pytest.raises(ModelError, match=rf"{path.name}:1: .*delete the file"):
            d(request)


def test_importing_the_offline_parts_loads_neither_litellm_nor_pandas():
    code = (
        "import sys, harpe_lab.summarize, harpe_lab.evaluate\n"
        "from harpe_lab.summarize import ExtractiveDistiller, extract_artifacts\n"
        "ExtractiveDistiller(max_chars=100)\n"
        "print(sorted(m for m in ('litellm', 'pandas', 'tiktoken', 'openai') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_extractive_summaries_are_the_same_in_every_process():
    # the distiller scores sets of words: its summaries must not follow PYTHONHASHSEED
    import os
    import subprocess
    import sys

    code = (
        "import hashlib; from harpe_lab import datasets; from harpe_lab.presets import make_strategy; "
        "from harpe_lab.replay import replay; from harpe_lab.tokens import BytesCounter; "
        "c = BytesCounter(); conv = datasets.load('support_chat'); "
        "rp = replay(conv, make_strategy('langchain-summarization', budget=300, counter=c), counter=c); "
        "print(hashlib.sha256(repr([rp.rendered(i) for i in range(len(rp))]).encode()).hexdigest())"
    )
    digests = set()
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        digests.add(out.stdout.strip())
    assert len(digests) == 1, digests
