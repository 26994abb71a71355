"""The shortcuts the Gemini CLI strategies take for speed give what the plain computations give.

Each rewritten measure is checked against the plain one it replaces, written here as it was
(``json.dumps`` with its keyword arguments, the whole output escaped before it is cut), on
generated text rich in what JSON escapes: quotes, backslashes, control characters, non-ASCII,
lone surrogates. The lifecycle tests check that what the contexts now keep as they go (the
request's edits) is what recomputing it each time gives.
"""

from __future__ import annotations

import json
import re
from json.encoder import encode_basestring

from hypothesis import given
from hypothesis import strategies as st

from harpe_lab.conversation import Conversation, Turn
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.replay import replay
from harpe_lab.strategies import gemini
from harpe_lab.strategies.gemini import _compression
from harpe_lab.tokens import TiktokenCounter
from tests._support.builders import call, reply, results, user
from tests._support.editing import SYSTEM, conversations
from tests.strategies._agents import EXAMPLES, LONG, REPLAYS, TEXT

_OUTPUT = st.one_of(LONG, LONG.map(lambda text: f"Output: {text}\n" * 30 + "Exit Code: 1"))


@st.composite
def long_outputs(draw) -> Conversation:
    """Turns of tool rounds whose outputs run to thousands of characters (the shell tool's in
    its sections, some by a tool masking exempts): what masking and truncation act on."""
    turns, n = [], 0
    for t in range(draw(st.integers(1, 4))):
        messages: list = []
        for _ in range(draw(st.integers(0, 5))):
            n += 1
            name = draw(st.sampled_from(["read_file", gemini.SHELL_TOOL, "ask_user", "grep"]))
            messages.append(AssistantMessage(draw(TEXT), (ToolCall(f"call_{n}", name, {"q": draw(TEXT)}),)))
            messages.append(ToolResults((ToolResult(f"call_{n}", draw(_OUTPUT)),)))
        messages.append(AssistantMessage(f"answer {t}"))
        turns.append(Turn(UserInput(f"task {t} " + draw(TEXT)), tuple(messages), "answered"))
    return Conversation(tuple(turns), id="long-outputs")


# --- the plain computations, as they were -------------------------------------------------------


def _plain_units(text: str) -> int:
    return gemini._utf16(text) + len(encode_basestring(text)) - len(text)


def _plain_response_tokens(name: str, content: str) -> float:
    quoted = encode_basestring(content)
    return (gemini._utf16(name) + len('{"output":}') + gemini._utf16(content) + len(quoted) - len(content)) / 4


def _plain_measure(message, names: dict[str, str]) -> tuple[int, float]:
    if isinstance(message, UserInput):
        return 35 + _plain_units(message.text), gemini._text_estimate(message.text)
    if isinstance(message, ToolResults):
        parts, estimate = [], 0.0
        for r in message.results:
            name = names.get(r.id, "")
            parts.append(53 + _plain_units(name) + _plain_units(r.content))
            estimate += _plain_response_tokens(name, r.content)
        return 26 + sum(parts) + max(0, len(parts) - 1), estimate
    parts, estimate = [], 0.0
    if message.text:
        parts.append(9 + _plain_units(message.text))
        estimate += gemini._text_estimate(message.text)
    for c in message.calls:
        size = 34 + _plain_units(c.name) + gemini._utf16(json.dumps(c.input, ensure_ascii=False, separators=(",", ":")))
        parts.append(size)
        estimate += size / 4
    return 27 + sum(parts) + max(0, len(parts) - 1), estimate


def _plain_preview(content: str) -> str:
    saved = '{\n  "output": ' + encode_basestring(content) + "\n}"
    return f"{saved[:250]}\n... [TRUNCATED] ...\n{saved[-250:]}" if gemini._utf16(saved) > 500 else saved


# --- Gemini's measures ----------------------------------------------------------------------------


class TestGeminiMeasures:
    @EXAMPLES
    @given(LONG, TEXT)
    def test_a_user_input_and_a_reply(self, text, name):
        for message in (user(text), reply(text), reply(text, call("c1", name, arg=text, n=[1, 2.5, None]))):
            assert gemini._measure(message, {}) == _plain_measure(message, {})

    @EXAMPLES
    @given(st.lists(st.tuples(TEXT, LONG), min_size=1, max_size=3), st.booleans())
    def test_tool_results_named_or_not(self, pairs, named):
        message = results(*((f"c{k}", content) for k, (_, content) in enumerate(pairs)))
        names = {f"c{k}": name for k, (name, _) in enumerate(pairs)} if named else {}
        assert gemini._measure(message, names) == _plain_measure(message, names)

    def test_a_message_is_measured_once_for_its_tools_names(self):
        # remembered by identity across replays; a results message is measured by its tools' names
        from harpe_lab.strategies.gemini._measures import _measured

        message = results(("c1", "line\n" * 50))
        short, long = _measured(message, {"c1": "ls"}), _measured(message, {"c1": "a_much_longer_tool_name"})
        assert long[1] - short[1] == len("a_much_longer_tool_name") - len("ls")
        assert _measured(message, {"c1": "a_much_longer_tool_name"}) is long
        assert short[1:3] == gemini._measure(message, {"c1": "ls"}) == _plain_measure(message, {"c1": "ls"})
        twin = results(("c1", "line\n" * 50))
        assert _measured(twin, {"c1": "ls"})[0] is twin

    def test_units_of_every_ascii_character(self):
        every = "".join(map(chr, range(128)))
        for text in (every, every * 3, "", '"', "\\", "\x7f", "\x0b\x00\n"):
            assert gemini._units(text) == _plain_units(text)

    @EXAMPLES
    @given(LONG, TEXT)
    def test_response_tokens(self, content, name):
        assert gemini._response_tokens(name, content) == _plain_response_tokens(name, content)

    def test_a_text_past_the_full_heuristic(self):
        for text in ("é" * 100_001, "a" * 100_001, "é" * 99_999 + '"'):
            assert gemini._measure(user(text), {}) == _plain_measure(user(text), {})

    @EXAMPLES
    @given(LONG)
    def test_the_preview_of_a_long_output_is_its_escaped_ends(self, content):
        path = "/tmp/out/read_file_c1.txt"
        expected = f"<tool_output_masked>\n{_plain_preview(content)}\n\nOutput too large. Full output available at: " \
                   f"{path}\n</tool_output_masked>"
        assert gemini.masked_output(content, "read_file", path) == expected

    def test_the_preview_at_the_cut(self):
        # 500 characters and more take the short way; just under it, escapes decide
        for n in range(470, 520):
            for content in ("a" * n, "\n" * n, "é" * n, "😀" * n, '"' * (n // 2) + "x" * (n - n // 2)):
                assert _plain_preview(content) + "\n\nOutput too large." in gemini.masked_output(content, "t", "/p")

    @EXAMPLES
    @given(TEXT)
    def test_file_name_parts(self, part):
        assert gemini._safe(part) == re.sub(r"[^a-zA-Z0-9_-]", "_", part).lower()

    def test_compact_json(self):
        for value in ({"a": 1, "b": [1, 2.5, None, True]}, {"é": "😀\n"}, [], "x", 3):
            assert gemini._dumps(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _frames(convo, factory, counter):
    return replay(convo, factory, counter=counter).requests


def _long_turn_then_another() -> Conversation:
    """A first turn of twelve tool rounds (nothing to compress: no user message after the
    first) and a second that can be compressed, with long outputs throughout."""
    rounds = lambda t: [m for k in range(12) for m in (reply("", call(f"c{t}{k}", "read_file")),  # noqa: E731
                                                       results((f"c{t}{k}", f"line {k}\n" * 300)))]
    return Conversation((Turn(user("first"), tuple(rounds(0)), "answered"),
                         Turn(user("second"), tuple(rounds(1)), "answered")), id="long turn")


class TestGeminiRequests:
    def test_edits_are_fresh_at_every_request(self):
        # the empty set of edits serves again; a batch's edits go out once
        ctx = gemini.ToolOutputMasking(protect=10, min_prunable=10).context(SYSTEM)
        ctx.begin_turn(user("go"))
        sent = [ctx.compact()]
        for k in range(6):
            ctx.append(reply("", call(f"c{k}", "read_file")))
            ctx.append(results((f"c{k}", "line\n" * 200)))
            sent.append(ctx.compact())
        sent.append(ctx.compact())
        assert [c.edits for c in sent] == [(), (), (2,), (4,), (6,), (8,), (10,), ()]
        assert [c.compacted for c in sent] == [False, False, True, True, True, True, True, False]
        ctx.abort_turn()
        ctx.begin_turn(user("again"))
        assert ctx.compact().edits is None and ctx.compact().edits == ()

    @REPLAYS
    @given(st.one_of(conversations(), long_outputs()), st.integers(1, 1_500), st.sampled_from([1, 300, 40_000]),
           st.sampled_from(["the summary", "a long summary " * 400]))
    def test_compression_cuts_where_the_plain_measures_cut(self, convo, trigger, cut, summary):
        # outputs truncated or not, a summary accepted or inflated (then truncation only)
        counter = TiktokenCounter("cl100k_base")
        config = gemini.ChatCompression(window=2 * trigger, threshold=0.5, response_budget=trigger, truncate_chars=cut)
        make = lambda: config.context(SYSTEM, distill=lambda rendered: summary)  # noqa: E731
        fast = _frames(convo, make, counter)
        measure = gemini._measure
        gemini._measure = _plain_measure
        try:
            plain = _frames(convo, make, counter)
        finally:
            gemini._measure = measure
        assert fast.equals(plain)

    @REPLAYS
    @given(st.one_of(conversations(), long_outputs(), st.just(_long_turn_then_another())), st.integers(1, 1_500),
           st.sampled_from([1, 300]), st.sampled_from(["the summary", "a long summary " * 400]))
    def test_a_history_with_nothing_to_compress_numbers_the_saved_outputs_as_truncating_it_does(
            self, convo, trigger, cut, summary):
        # with no plain user message to cut before, the truncation is only counted; the saved
        # files' numbers show in every later truncation, so the requests tell if one was missed
        # (an inflated summary latches truncation only: the truncated outputs are then sent)
        counter = TiktokenCounter("cl100k_base")
        config = gemini.ChatCompression(window=2 * trigger, threshold=0.5, response_budget=trigger, truncate_chars=cut)
        make = lambda: config.context(SYSTEM, distill=lambda rendered: summary)  # noqa: E731

        def sent() -> list:
            rp = replay(convo, make, counter=counter)
            return [rp.rendered(i) for i in range(len(rp))]

        counted = sent()
        splittable = _compression._splittable
        _compression._splittable = lambda messages: True  # always truncate, then find the split
        try:
            truncated = sent()
        finally:
            _compression._splittable = splittable
        assert counted == truncated

    @REPLAYS
    @given(long_outputs(), st.integers(0, 2_000), st.integers(0, 2_000))
    def test_masking_masks_as_the_plain_measures_do(self, convo, protect, min_prunable):
        counter = TiktokenCounter("cl100k_base")
        config = gemini.ToolOutputMasking(protect=protect, min_prunable=min_prunable)
        fast = _frames(convo, lambda: config.context(SYSTEM), counter)
        saved = gemini._response_tokens, gemini.masked_output
        gemini._response_tokens = _plain_response_tokens
        gemini.masked_output = lambda content, tool, path: (  # the preview escaped whole, then cut
            saved[1](content, tool, path) if tool == gemini.SHELL_TOOL else
            f"<tool_output_masked>\n{_plain_preview(content)}\n\nOutput too large. Full output available at: {path}"
            "\n</tool_output_masked>")
        try:
            plain = _frames(convo, lambda: config.context(SYSTEM), counter)
        finally:
            gemini._response_tokens, gemini.masked_output = saved
        assert fast.equals(plain)
