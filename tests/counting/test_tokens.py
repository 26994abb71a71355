"""Token counters: exact offline tiktoken counts, estimates, memoization, chat overhead."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import pickle
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import harpe_lab.tokens as tokens
from harpe_lab.errors import HarpeLabError
from harpe_lab.messages import AssistantMessage, Rendered, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.presets import PRESETS
from harpe_lab.tokens import (
    CALL_OVERHEAD,
    MESSAGE_OVERHEAD,
    REPLY_PRIMING,
    ApproxCounter,
    BytesCounter,
    LitellmCounter,
    ScaledCounter,
    TiktokenCounter,
    TokenCounter,
    counter_for_model,
    prices_by_parts,
    text_price,
)

ENCODINGS = ["cl100k_base", "o200k_base"]
URLS = {n: f"https://openaipublic.blob.core.windows.net/encodings/{n}.tiktoken" for n in ENCODINGS}


def _litellm_tokenizers() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("litellm is not installed; its wheel ships the BPE files")
    return Path(list(spec.submodule_search_locations)[0]) / "litellm_core_utils" / "tokenizers"


def _bpe_name(encoding: str) -> str:
    return hashlib.sha1(URLS[encoding].encode()).hexdigest()


# Replaces every way Python opens a connection; attempts are recorded as well as refused,
# because a library may swallow the error and fall back silently.
SOCKET_GUARD = textwrap.dedent(
    """
    import socket
    ATTEMPTS = []
    def _refuse(*args, **kwargs):
        ATTEMPTS.append(repr(args[1:2] or args[:1]))
        raise OSError("network access is blocked in this test")
    socket.socket.connect = _refuse
    socket.socket.connect_ex = _refuse
    socket.getaddrinfo = _refuse
    socket.create_connection = _refuse
    """
)


def _run_isolated(body: str, timeout: float = 120) -> dict:
    """Run ``body`` in a fresh interpreter behind the socket guard; it prints one JSON line."""
    env = {k: v for k, v in os.environ.items() if k not in ("TIKTOKEN_CACHE_DIR", "DATA_GYM_CACHE_DIR")}
    proc = subprocess.run(
        [sys.executable, "-c", SOCKET_GUARD + textwrap.dedent(body)],
        capture_output=True, text=True, timeout=timeout, env=env,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def no_network(monkeypatch):
    attempts: list = []

    def refuse(*args, **kwargs):
        attempts.append(args[1:2] or args[:1])
        raise OSError("network access is blocked in this test")

    for obj, name in [(socket.socket, "connect"), (socket.socket, "connect_ex"), (socket, "getaddrinfo"),
                      (socket, "create_connection")]:
        monkeypatch.setattr(obj, name, refuse)
    yield
    assert attempts == [], f"network was attempted: {attempts}"


@pytest.fixture(scope="module")
def reference():
    """tiktoken's own encodings, built by its registry from litellm's copy of the files."""
    import tiktoken

    folder = _litellm_tokenizers()
    for name, sha256 in [("cl100k_base", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"),
                         ("o200k_base", "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d")]:
        # tiktoken's registry deletes a mismatched cache file and downloads: never let it try
        path = folder / _bpe_name(name)
        assert path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == sha256, path
    previous = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(folder)
    try:
        return {n: tiktoken.get_encoding(n) for n in ENCODINGS}
    finally:
        if previous is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = previous


@pytest.fixture
def fresh_encodings(monkeypatch):
    """Forget loaded encodings for the test, so the file lookup runs again."""
    monkeypatch.setattr(tokens, "_encodings", {})


# --- estimates -------------------------------------------------------------------------


class TestApproxCounter:
    @pytest.mark.parametrize("text, expected", [("", 0), ("abcd", 1), ("abcde", 2), ("日本語です", 2)])
    def test_ceil_of_chars_over_four(self, text, expected):
        assert ApproxCounter().count(text) == expected

    def test_chars_per_token_is_configurable(self):
        c = ApproxCounter(chars_per_token=2.5)
        assert (c.count("abcde"), c.count("abcdef"), c.name) == (2, 3, "approx/2.5")

    @pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), True, "4", None])
    def test_bad_ratio_is_refused_with_its_value(self, bad):
        with pytest.raises(HarpeLabError, match="chars_per_token must be a finite number > 0, got " + repr(bad)):
            ApproxCounter(bad)


class TestBytesCounter:
    @pytest.mark.parametrize("text, expected", [("", 0), ("abcd", 1), ("abcde", 2), ("é", 1), ("日本語", 3), ("👋👋", 2)])
    def test_ceil_of_utf8_bytes_over_four(self, text, expected):
        assert BytesCounter().count(text) == expected

    @given(st.text())
    def test_matches_the_definition(self, text):
        assert BytesCounter().count(text) == math.ceil(len(text.encode("utf-8")) / 4)


# --- tiktoken, offline -----------------------------------------------------------------


class TestTiktokenCounter:
    @pytest.mark.parametrize(
        "encoding, text, expected",
        [
            ("cl100k_base", "hello world", 2),
            ("o200k_base", "hello world", 2),
            ("cl100k_base", "tiktoken is great!", 6),
            ("o200k_base", "tiktoken is great!", 6),
            ("cl100k_base", "こんにちは世界", 4),
            ("o200k_base", "こんにちは世界", 2),
            ("cl100k_base", "Ünïcödé façade naïve", 11),
            ("o200k_base", "Ünïcödé façade naïve", 8),
            # special-token text in a conversation is ordinary text, never a special token
            ("cl100k_base", "<|endoftext|>", 7),
            ("o200k_base", "<|endoftext|>", 7),
            ("cl100k_base", "", 0),
        ],
    )
    def test_known_counts(self, encoding, text, expected):
        assert TiktokenCounter(encoding).count(text) == expected

    @pytest.mark.parametrize("encoding", ENCODINGS)
    @settings(max_examples=150, deadline=None)
    @given(text=st.text(max_size=60) | st.sampled_from(["def f(x):\n    return x  # ✓", "   \n\n\t", "0123456789" * 7]))
    def test_counts_equal_tiktokens_own(self, reference, encoding, text):
        assert TiktokenCounter(encoding).count(text) == len(reference[encoding].encode_ordinary(text))

    def test_unknown_encoding_lists_those_available(self):
        with pytest.raises(HarpeLabError, match=r"encoding must be one of \['cl100k_base', 'o200k_base'\], but 'p50k' was passed"):
            TiktokenCounter("p50k")

    def test_encoding_is_shared_and_loaded_once(self):
        assert TiktokenCounter("cl100k_base").encoding is TiktokenCounter("cl100k_base").encoding

    def test_works_with_sockets_blocked_in_a_fresh_process(self, reference):
        texts = ["hello world", "naïve café ☕", "x = [i**2 for i in range(10)]"]
        out = _run_isolated(
            f"""
            import json, os, sys
            from harpe_lab.tokens import TiktokenCounter
            texts = {texts!r}
            counts = {{n: [TiktokenCounter(n).count(t) for t in texts] for n in ("cl100k_base", "o200k_base")}}
            print(json.dumps({{"counts": counts, "attempts": ATTEMPTS, "litellm": "litellm" in sys.modules,
                              "cache_dir": os.environ.get("TIKTOKEN_CACHE_DIR")}}))
            """
        )
        assert out["attempts"] == [], "no connection may be attempted"
        assert out["litellm"] is False, "the BPE files are found without importing litellm"
        assert out["cache_dir"] is None, "TIKTOKEN_CACHE_DIR is restored after loading"
        for name in ENCODINGS:
            assert out["counts"][name] == [len(reference[name].encode_ordinary(t)) for t in texts]

    def test_missing_files_say_how_to_supply_them(self, monkeypatch, tmp_path, fresh_encodings, no_network):
        monkeypatch.setattr(tokens, "_bpe_dirs", lambda: [tmp_path])
        with pytest.raises(HarpeLabError) as info:
            TiktokenCounter("o200k_base").count("hi")
        message = str(info.value)
        assert str(tmp_path / _bpe_name("o200k_base")) in message
        assert "Install litellm" in message and "TIKTOKEN_CACHE_DIR" in message
        assert URLS["o200k_base"] in message and _bpe_name("o200k_base") in message

    def test_missing_litellm_is_named(self, monkeypatch, fresh_encodings, no_network):
        monkeypatch.setattr(tokens, "_bpe_dirs", lambda: [])
        with pytest.raises(HarpeLabError, match="looked for litellm, which is not installed"):
            TiktokenCounter().count("hi")

    def test_a_corrupt_file_is_refused_and_left_in_place(self, monkeypatch, tmp_path, fresh_encodings, no_network):
        bad = tmp_path / _bpe_name("cl100k_base")
        bad.write_bytes(b"not a bpe file\n")
        monkeypatch.setattr(tokens, "_bpe_dirs", lambda: [tmp_path])
        with pytest.raises(HarpeLabError, match="does not match the sha256 223921b7"):
            TiktokenCounter().count("hi")
        assert bad.read_bytes() == b"not a bpe file\n", "tiktoken's loader must never see (and delete) it"

    def test_a_stale_cache_dir_file_does_not_hide_litellms_copy(self, monkeypatch, tmp_path, fresh_encodings,
                                                               no_network):
        (tmp_path / _bpe_name("cl100k_base")).write_bytes(b"stale")
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
        assert TiktokenCounter().count("hello world") == 2
        assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path)

    def test_tiktoken_cache_dir_alone_is_enough(self, monkeypatch, tmp_path, fresh_encodings, no_network):
        shutil.copy(_litellm_tokenizers() / _bpe_name("cl100k_base"), tmp_path / _bpe_name("cl100k_base"))
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
        find_spec = importlib.util.find_spec
        monkeypatch.setattr(importlib.util, "find_spec",
                            lambda name, *a: None if name == "litellm" else find_spec(name, *a))
        assert tokens._bpe_dirs() == [tmp_path]
        assert TiktokenCounter().count("hello world") == 2


class TestMemoization:
    @pytest.fixture
    def encodes(self, monkeypatch):
        import tiktoken

        calls: list[str] = []
        original = tiktoken.Encoding.encode_ordinary

        def spy(self, text):
            calls.append(text)
            return original(self, text)

        monkeypatch.setattr(tiktoken.Encoding, "encode_ordinary", spy)
        return calls

    def test_the_same_text_twice_costs_one_encode(self, encodes):
        c = TiktokenCounter()
        assert c.count("memo me") == c.count("memo me")
        assert encodes == ["memo me"]
        c.count("something else")
        assert encodes == ["memo me", "something else"]

    def test_a_message_counted_twice_costs_nothing_more(self, encodes):
        c = TiktokenCounter()
        m = AssistantMessage("reply", (ToolCall("c1", "grep", {"q": "x"}),))
        first = c.count_message(m)
        n = len(encodes)
        assert c.count_message(m) == first and len(encodes) == n
        # an equal message built again reuses the text cache
        assert c.count_message(AssistantMessage("reply", (ToolCall("c1", "grep", {"q": "x"}),))) == first
        assert len(encodes) == n

    def test_a_request_re_rendered_costs_only_its_new_message(self, encodes):
        c = TiktokenCounter()
        history = (UserInput("first question"), AssistantMessage("first answer"))
        c.count_rendered(Rendered("sys prompt", history))
        n = len(encodes)
        c.count_rendered(Rendered("sys prompt", (*history, UserInput("second question"))))
        assert encodes[n:] == ["second question"]

    def test_a_replay_primes_its_counter_with_the_recording_and_gets_the_same_frame(self, encodes):
        from harpe_lab.datasets import load
        from harpe_lab.replay import replay
        from harpe_lab.strategies.harpe import FullContext

        loaded = load("coding_agent")
        conv = loaded[0] if isinstance(loaded, list) else loaded
        primed: list[int] = []

        class Spy(TiktokenCounter):
            def prime(self, messages):
                super().prime(messages)
                primed.append(len(messages))
                primed.append(len(encodes))

        class Unprimed(TiktokenCounter):
            prime = None

        r = replay(conv, lambda: FullContext(conv.system), counter=Spy())
        assert primed[0] == len(conv.messages())
        # after priming, the replay encodes the system prompt and nothing else
        assert 0 < primed[1] and len(encodes) - primed[1] <= 1
        unprimed = replay(conv, lambda: FullContext(conv.system), counter=Unprimed())
        assert r.requests.equals(unprimed.requests)

    def test_prime_is_skipped_when_the_messages_would_not_fit_the_cache(self, encodes, monkeypatch):
        monkeypatch.setattr(tokens, "_CACHE_SIZE", 4)
        c = TiktokenCounter()
        c.prime([UserInput(f"question {k}") for k in range(3)])
        assert encodes == []
        c.prime([UserInput("one"), UserInput("two")])
        assert encodes == ["one", "two"]


# --- long texts counted by chunks --------------------------------------------------------

# what the chunk cuts must survive: newlines before "/" and whitespace, "\r\n", punctuation
# runs that swallow newlines, backtick lists, contractions, non-ASCII letters and spaces
_TRICKY = st.lists(
    st.sampled_from(list("\n\r\t `,/.:-_'\"()#aAZ09é中\u00a0\u2028\u3000\u0085\u001c…!sdl")
                    + ["`, `", "\n/", "\n ", " \n", ",\n", "'s", "'ll", "123", "\r\n", "\n\n", "`,\n"]),
    max_size=40,
).map("".join)


def _summary_like(values: list[str], notes: list[str]) -> str:
    return ("Numbers: `" + "`, `".join(values) + "`\nNotes:\n" + "".join(f"- Agent: {n}\n" for n in notes)
            + "\n\nReply with the updated summary.")


class TestSanitizedMarkers:
    """A sanitizer's marker weighs the text it replaced: its length, at 4 characters a token."""

    MARKED = "see [REDACTED_TEXT len=401 sha=dc9e82a0] and [REDACTED_OUTPUT len=40 sha=0123456789abcdef] here"

    def test_every_counter_weighs_the_texts_replaced(self, reference):
        rest = "see  and  here"
        assert ApproxCounter().count(self.MARKED) == math.ceil((len(rest) + 441) / 4)
        assert ApproxCounter(2).count(self.MARKED) == math.ceil((len(rest) + 441) / 2)
        assert BytesCounter().count(self.MARKED) == (len(rest) + 441 + 3) // 4
        assert TiktokenCounter().count(self.MARKED) == len(reference["cl100k_base"].encode_ordinary(rest)) + 111

    def test_what_is_not_such_a_marker_is_counted_as_written(self, reference):
        for text in ("[REDACTED_SIGNATURE]", "[REDACTED_TEXT len=12]", "[redacted github-token, 40 chars]"):
            assert TiktokenCounter().count(text) == len(reference["cl100k_base"].encode_ordinary(text))

    def test_a_long_text_counted_by_its_lines_weighs_them_alike(self, monkeypatch):
        listed = "Files: " + ", ".join(f"`{k} {self.MARKED}`" for k in range(200))  # cut between its values
        text = "\n".join(f"line {k} {self.MARKED}" if k % 3 else f"plain line {k}" for k in range(300)) + listed
        assert len(text) >= tokens._CHUNKED_FROM
        chunked = TiktokenCounter()
        assert chunked.count(text) == chunked.count_lines(text)
        monkeypatch.setattr(tokens, "_CHUNKED_FROM", 10**9)  # the whole text at once
        assert TiktokenCounter().count(text) == chunked.count(text)


class TestChunkedCounting:
    @pytest.mark.parametrize("encoding", ENCODINGS)
    @settings(max_examples=400, deadline=None)
    @given(text=_TRICKY)
    def test_every_cut_keeps_tiktokens_count(self, reference, encoding, text):
        with pytest.MonkeyPatch.context() as patch:  # cut every text, however short, wherever the rules allow
            patch.setattr(tokens, "_CHUNKED_FROM", 1)
            patch.setattr(tokens, "_LONG_LINE", 1)
            assert TiktokenCounter(encoding).count(text) == len(reference[encoding].encode_ordinary(text))

    @pytest.mark.parametrize("encoding", ENCODINGS)
    def test_a_long_text_counts_as_tiktoken_does(self, reference, encoding):
        text = _summary_like([f"{i}.5 s" for i in range(400)], ["The test failed, then passed.\n/tmp/x"] * 30)
        assert len(text) >= tokens._CHUNKED_FROM
        assert TiktokenCounter(encoding).count(text) == len(reference[encoding].encode_ordinary(text))

    def test_a_text_sharing_lines_with_one_counted_encodes_only_what_changed(self, monkeypatch):
        import tiktoken

        calls: list[str] = []
        original = tiktoken.Encoding.encode_ordinary
        monkeypatch.setattr(tiktoken.Encoding, "encode_ordinary", lambda self, t: calls.append(t) or original(self, t))
        c = TiktokenCounter()
        values, notes = [f"{i} MB" for i in range(500)], [f"note number {i}." for i in range(20)]
        c.count(_summary_like(values, notes))
        calls.clear()
        grown = _summary_like(values[1:] + ["501 MB"], notes + ["a new note."])
        assert c.count(grown) == len(c.encoding.encode_ordinary(grown))
        assert sum(map(len, calls[:-1])) < 100, calls[:-1]  # the new value, the new note, the ends of lines

    @pytest.mark.parametrize("preset", [p.name for p in PRESETS.values() if "distill" in p.needs])
    @pytest.mark.parametrize("options", [{}, {"tool_rate": 0.5, "result_chars": 2200}], ids=["chat", "long-results"])
    def test_replays_that_distill_count_as_whole_texts_do(self, preset, options):
        from harpe_lab.datasets import synthesize
        from harpe_lab.presets import make_strategy
        from harpe_lab.replay import replay

        # the same counts, each text encoded whole
        class Whole(TiktokenCounter):
            def _encode_len(self, text: str) -> int:
                return len(self.encoding.encode_ordinary(text))

            def count_lines(self, text: str) -> int:
                return len(self.encoding.encode_ordinary(text))

        conversation = synthesize(200, seed=3, **options)
        frames = []
        for counter in (TiktokenCounter(), Whole()):
            factory = make_strategy(preset, budget=8000, counter=counter, system=conversation.system)
            r = replay(conversation, factory, counter=counter, name=preset)
            frames.append(r.requests)
            if type(counter) is TiktokenCounter:
                assert counter._chunk.cache_info().currsize, "the replay counted no text by chunks"
        assert frames[0]["distill_calls"].sum() > 0
        assert frames[0].equals(frames[1])

    @pytest.mark.parametrize("encoding", ENCODINGS)
    @settings(max_examples=400, deadline=None)
    @given(text=_TRICKY)
    def test_count_lines_keeps_tiktokens_count(self, reference, encoding, text):
        assert TiktokenCounter(encoding).count_lines(text) == len(reference[encoding].encode_ordinary(text))

    def test_lines_counted_before_cost_no_encode(self, monkeypatch):
        import tiktoken

        c = TiktokenCounter()
        lines = [f"INFO worker-{i} processed batch {i * 7} in {i} ms\n" for i in range(30)]
        c.count_lines("".join(lines))
        part = "".join(reversed(lines[10:]))  # the last lines, newest first, as LangChain's partial trim tries them
        expected = len(c.encoding.encode_ordinary(part))
        calls: list[str] = []
        original = tiktoken.Encoding.encode_ordinary
        monkeypatch.setattr(tiktoken.Encoding, "encode_ordinary", lambda self, t: calls.append(t) or original(self, t))
        assert c.count_lines(part) == expected and calls == []
        assert c.count(part) == expected and calls == [part]  # counted whole: the text is short

    @pytest.mark.parametrize("encoding", ENCODINGS)
    def test_the_installed_tiktoken_splits_as_the_chunked_count_assumes(self, encoding):
        c = TiktokenCounter(encoding)
        c.count("warm")  # the encoding is built, with its split pattern
        assert c._chunkable, (
            f"the split pattern tiktoken_ext gives {encoding} is not one `_CHUNKABLE_PATTERNS` knows: "
            "long texts are counted whole (correct, slower); check that the new pattern still splits "
            "at the places the comment above _CHUNKABLE_PATTERNS describes, then add it there")

    def test_an_unknown_pattern_is_counted_whole(self, monkeypatch):
        monkeypatch.setattr(tokens, "_CHUNKABLE_PATTERNS", frozenset())
        c = TiktokenCounter()
        text = _summary_like([f"{i} MB" for i in range(500)], ["a note."])
        assert c.count(text) == len(c.encoding.encode_ordinary(text)) and c._chunk.cache_info().currsize == 0


class TestTextPrice:
    """`text_price`: what a strategy may price a message's text with, apart from the rest."""

    @pytest.mark.parametrize("counter", [TiktokenCounter(), ApproxCounter(), BytesCounter()],
                             ids=lambda c: type(c).__name__)
    def test_a_message_costs_its_bare_price_plus_its_texts(self, counter):
        price = text_price(counter)
        assert price is not None
        for text in ("", "one line", "two\nlines\n", "INFO done\n" * 300):
            for make in (UserInput, lambda t: ToolResults((ToolResult("c1", t),)),
                         lambda t: AssistantMessage(t, (ToolCall("c2", "bash", {"cmd": "ls"}),))):
                assert counter.count_message(make(text)) == counter.count_message(make("")) + price(text) - price("")

    def test_a_counter_that_prices_messages_its_own_way_has_none(self):
        class Own(ApproxCounter):
            def _message_tokens(self, message):
                return 1

        assert text_price(ScaledCounter(ApproxCounter(), 1.1)) is None
        assert text_price(Own()) is None


class TestPricesByParts:
    """`prices_by_parts`: a counter declares (`additive`) that a request costs its fixed part
    plus each message, and the strategies and the engine then keep running sums. The
    calibrated counter every report uses is one: before it declared so, every strategy took
    its slow path under calibration (clearing priced the whole history at each request)."""

    @pytest.mark.parametrize("counter", [TiktokenCounter(), ApproxCounter(), BytesCounter(),
                                         ScaledCounter(TiktokenCounter(), 1.37, 2_345.6),
                                         ScaledCounter(ApproxCounter(), 0.81, -40.4)],
                             ids=lambda c: c.name)
    def test_a_request_costs_its_fixed_part_plus_each_message(self, counter):
        assert prices_by_parts(counter)
        msgs = (UserInput("fix the tests"), AssistantMessage("ok", (ToolCall("c1", "bash", {"cmd": "pytest -q"}),)),
                ToolResults((ToolResult("c1", "3 failed, 7 passed\n" * 40),)), AssistantMessage("done"))
        tools = ({"type": "function", "function": {"name": "bash", "parameters": {}}},)
        for system in ("", "You are terse."):
            fixed = counter.count_rendered(Rendered(system, ()), tools)
            for k in range(len(msgs) + 1):
                assert counter.count_rendered(Rendered(system, msgs[:k]), tools) == \
                    fixed + sum(map(counter.count_message, msgs[:k]))

    def test_a_counter_that_prices_a_request_otherwise_is_not_additive_unless_it_says_so(self):
        class Rounded(ApproxCounter):
            def count_rendered(self, rendered, tools=()):
                return 10 * round(super().count_rendered(rendered, tools) / 10)

        class Declared(Rounded):
            additive = True  # a false claim, but a declared one: the declaration is what is read

        assert not prices_by_parts(Rounded())
        assert prices_by_parts(Declared())
        assert not prices_by_parts(object())


# --- chat overhead ---------------------------------------------------------------------


class TestChatOverhead:
    """With one token per character the overhead model can be checked by hand."""

    def test_constants(self):
        assert (MESSAGE_OVERHEAD, CALL_OVERHEAD, REPLY_PRIMING) == (3, 3, 3)

    def test_whole_request(self):
        c = ApproxCounter(1)
        rendered = Rendered(
            "sys",
            (
                UserInput("ab"),
                AssistantMessage("cd", (ToolCall("id-not-counted", "fn", {"a": 1}),)),
                ToolResults((ToolResult("x", "xyz"), ToolResult("y", ""))),
            ),
        )
        tools = [{"name": "fn"}]
        expected = (
            (3 + 3)  # system
            + (3 + 2)  # user
            + (3 + 2) + (3 + 2 + len('{"a": 1}'))  # assistant, its call
            + (3 + 3) + (3 + 0)  # one tool message per result
            + len(json.dumps(tools, ensure_ascii=False, sort_keys=True))
            + 3  # reply priming
        )
        assert c.count_rendered(rendered, tools) == expected

    def test_empty_system_costs_nothing(self):
        c = ApproxCounter(1)
        assert c.count_rendered(Rendered("", (UserInput("ab"),))) == 3 + 2 + 3
        assert c.count_system("") == 0

    def test_call_arguments_are_counted_as_sent(self):
        c = ApproxCounter(1)
        m = AssistantMessage("", (ToolCall("i", "f", {"city": "Zürich"}),))
        assert c.count_message(m) == 3 + 3 + 1 + len('{"city": "Zürich"}')

    def test_scaled_counter_scales_each_part_and_adds_the_offset_once(self):
        base = ApproxCounter(1)
        r = Rendered("sys", (UserInput("hello"), UserInput("world!")))
        fixed = base.count_rendered(Rendered("sys", ()))
        scaled = ScaledCounter(base, 1.5, offset=100)
        assert scaled.count_rendered(r) == round(fixed * 1.5 + 100) + round(8 * 1.5) + round(9 * 1.5)
        assert scaled.count_rendered(r) == scaled.count_rendered(Rendered("sys", ())) + scaled.count_messages(r.messages)
        assert ScaledCounter(base, 2).count("abc") == 6

    @pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "2"])
    def test_scaled_counter_refuses_bad_factors(self, bad):
        with pytest.raises(HarpeLabError, match="factor must be a finite number"):
            ScaledCounter(BytesCounter(), bad)


# --- choosing, comparing and shipping counters -----------------------------------------


class TestCounterForModel:
    @pytest.mark.parametrize(
        "model, encoding",
        [
            ("gpt-4o", "o200k_base"),
            ("openai/gpt-4o-mini", "o200k_base"),
            ("azure/gpt-4.1", "o200k_base"),
            ("gpt-5", "o200k_base"),
            ("o3-mini", "o200k_base"),
            ("gpt-4", "cl100k_base"),
            ("gpt-3.5-turbo", "cl100k_base"),
            ("anthropic/claude-opus-4-6", "cl100k_base"),
        ],
    )
    def test_picks_the_encoding(self, model, encoding):
        assert counter_for_model(model) == TiktokenCounter(encoding)


def _counters():
    return [
        ApproxCounter(),
        ApproxCounter(2.5),
        BytesCounter(),
        TiktokenCounter("cl100k_base"),
        TiktokenCounter("o200k_base"),
        LitellmCounter("gpt-4o"),
        ScaledCounter(TiktokenCounter("o200k_base"), 1.25),
    ]


class TestCountersAsValues:
    @pytest.mark.parametrize("counter", _counters(), ids=lambda c: c.name)
    def test_is_a_token_counter(self, counter):
        assert isinstance(counter, TokenCounter)

    @pytest.mark.parametrize("counter", _counters(), ids=lambda c: c.name)
    def test_pickles_to_an_equal_counter_without_its_caches(self, counter):
        if not isinstance(counter, LitellmCounter):  # warm the caches (litellm is tested apart)
            counter.count_rendered(Rendered("s", (UserInput("warm " * 50),)))
        data = pickle.dumps(counter)
        assert len(data) < 1000, "caches and encodings stay behind"
        back = pickle.loads(data)
        assert back == counter and hash(back) == hash(counter) and back.name == counter.name
        if not isinstance(counter, LitellmCounter):
            assert back.count("hello there, world") == counter.count("hello there, world")

    def test_different_configurations_differ(self):
        assert ApproxCounter(2) != ApproxCounter(4)
        assert TiktokenCounter("cl100k_base") != TiktokenCounter("o200k_base")
        assert ScaledCounter(BytesCounter(), 1.1) != ScaledCounter(BytesCounter(), 1.2)
        assert BytesCounter() != ApproxCounter(4)

    def test_litellm_counter_needs_a_model(self):
        with pytest.raises(HarpeLabError, match="model must be a non-empty model name, got ''"):
            LitellmCounter("")

    def test_litellm_counter_offline_memoized_and_lazy(self):
        out = _run_isolated(
            """
            import json, pickle, sys
            from harpe_lab.tokens import LitellmCounter
            c = pickle.loads(pickle.dumps(LitellmCounter("gpt-4o")))
            lazy = "litellm" not in sys.modules
            from harpe_lab.models._litellm import litellm
            calls = []
            original = litellm().token_counter
            def spy(**kw):
                calls.append(kw["text"])
                return original(**kw)
            litellm().token_counter = spy
            counts = [c.count("hello world"), c.count("hello world"), c.count("tiktoken is great!")]
            print(json.dumps({"lazy": lazy, "counts": counts, "calls": calls, "attempts": ATTEMPTS}))
            """,
            timeout=180,
        )
        assert out["lazy"] is True, "creating and unpickling a LitellmCounter does not import litellm"
        assert out["counts"] == [2, 2, 6]
        assert out["calls"] == ["hello world", "tiktoken is great!"]
        assert out["attempts"] == []
