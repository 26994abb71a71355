"""Harpe's message model and its OpenAI chat-completions conversion."""

from __future__ import annotations

import dataclasses
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.messages import (
    AssistantMessage,
    Attachment,
    Rendered,
    ToolCall,
    ToolResult,
    ToolResults,
    Usage,
    UserInput,
    deferred,
    from_openai,
    peek,
    strip_harpe_keys,
    to_openai,
)
from tests._support.builders import call, image, numbered_results


# --- hypothesis strategies -------------------------------------------------------------

_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)
_attachments = st.lists(
    st.builds(Attachment, st.text(max_size=8), st.integers(0, 2**40), st.text(max_size=8), st.text(max_size=12)),
    max_size=2,
)
_user = st.builds(UserInput, st.text(max_size=20), _attachments, st.booleans())
_assistant = st.builds(
    AssistantMessage,
    st.text(max_size=20),
    st.lists(st.builds(ToolCall, st.text(max_size=8), st.text(max_size=8), _json), max_size=3),
    st.booleans(),
)
_tool_results = st.builds(
    ToolResults,
    st.lists(st.builds(ToolResult, st.text(max_size=8), st.text(max_size=20), _attachments, st.booleans()),
             min_size=1, max_size=3),
    st.booleans(),
)


def _no_adjacent_results(messages: list) -> list:
    # OpenAI's format has no boundary between two tool groups in a row (nor a way to write an
    # empty group); a real transcript never has either, since results follow a reply.
    out: list = []
    for m in messages:
        if isinstance(m, ToolResults) and out and isinstance(out[-1], ToolResults):
            continue
        out.append(m)
    return out


_rendered = st.builds(
    Rendered,
    st.text(max_size=30),
    st.lists(st.one_of(_user, _assistant, _tool_results), max_size=8).map(_no_adjacent_results),
)


class TestRecords:
    def test_lists_are_stored_as_tuples(self):
        u = UserInput("hi", [image("a.png", size=12)])
        a = AssistantMessage("ok", [call("call_1", "search")])
        r = ToolResults([ToolResult("call_1", "done", [image("a.png", size=12)])])
        rendered = Rendered("sys", [u, a, r])
        assert type(u.attachments) is tuple and type(a.calls) is tuple
        assert type(r.results) is tuple and type(r.results[0].attachments) is tuple
        assert type(rendered.messages) is tuple and rendered.messages == (u, a, r)

    @pytest.mark.parametrize(
        "record, field",
        [
            (UserInput("hi"), "text"),
            (AssistantMessage("ok"), "calls"),
            (ToolResults((ToolResult("1", "x"),)), "results"),
            (Rendered("s"), "system"),
            (Usage(1), "input_tokens"),
            (image("a.png", size=12), "size"),
        ],
    )
    def test_records_are_frozen(self, record, field):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field, None)

    def test_defaults_match_harpe(self):
        assert UserInput("x") == UserInput("x", (), False)
        assert AssistantMessage("x") == AssistantMessage("x", (), False)
        assert ToolResult("1", "c") == ToolResult("1", "c", (), True)
        assert ToolResults((ToolResult("1", "c"),)).pinned is False
        assert ToolCall("1", "f").input == {}
        assert Usage(10) == Usage(10, 0, 0, 0, "", "")

    def test_role_tags_are_not_fields(self):
        assert (UserInput.role, AssistantMessage.role, ToolResults.role) == ("user", "assistant", "tool_results")
        assert "role" not in {f.name for f in dataclasses.fields(UserInput)}

    def test_equal_messages_compare_equal_by_value(self):
        assert UserInput("hi", [image("a.png", size=12)]) == UserInput("hi", (image("a.png", size=12),))
        assert UserInput("hi", pinned=True) != UserInput("hi")


class TestDeferredRequest:
    """A strategy may hand out a request whose tuple is built when first read (`deferred`):
    to a user it is the `Rendered` it stands for, whatever the strategy does next."""

    def _pair(self):
        items = [UserInput("hi"), AssistantMessage("ok")]
        lazy = deferred("sys", items)
        items.append(UserInput("more"))  # the strategy goes on appending to its list
        return items, lazy, Rendered("sys", tuple(items[:2]))

    def test_it_is_the_request_it_stands_for(self):
        import copy
        import pickle

        items, lazy, plain = self._pair()
        assert lazy == plain and plain == lazy and not (lazy != plain)
        assert hash(lazy) == hash(plain) and len({lazy, plain}) == 1
        assert type(lazy.messages) is tuple and lazy.messages == plain.messages
        assert repr(lazy) == repr(plain)
        assert lazy != Rendered("sys", tuple(items)) and lazy != Rendered("other", plain.messages)
        for back in (pickle.loads(pickle.dumps(lazy)), copy.copy(lazy), copy.deepcopy(lazy)):
            assert type(back) is Rendered and back == plain
        assert dataclasses.replace(lazy, system="s2") == Rendered("s2", plain.messages)
        assert dataclasses.asdict(lazy) == dataclasses.asdict(plain)
        with pytest.raises(dataclasses.FrozenInstanceError):
            lazy.messages = ()  # type: ignore[misc]

    def test_the_tuple_is_built_once_and_kept(self):
        items, lazy, _ = self._pair()
        first = lazy.messages
        items.append(UserInput("later"))
        assert lazy.messages is first

    def test_peek_reads_the_list_while_it_holds_exactly_the_request(self):
        items, lazy, plain = self._pair()
        assert list(peek(lazy)) == list(plain.messages)
        assert peek(deferred("sys", items)) is items  # nothing copied
        assert peek(plain) is plain.messages


class TestToOpenai:
    def test_system_first_and_one_tool_message_per_result(self):
        rendered = Rendered(
            "be brief",
            (
                UserInput("find x"),
                AssistantMessage("looking", (call("call_1", "search", q="x"), call("call_2", "open", path="/a"))),
                numbered_results("found", "opened", prefix="call_"),
                AssistantMessage("x is here"),
            ),
        )
        assert to_openai(rendered) == [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "find x"},
            {
                "role": "assistant",
                "content": "looking",
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": '{"q": "x"}'}},
                    {"id": "call_2", "type": "function", "function": {"name": "open", "arguments": '{"path": "/a"}'}},
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "found"},
            {"role": "tool", "tool_call_id": "call_2", "content": "opened"},
            {"role": "assistant", "content": "x is here"},
        ]

    def test_empty_system_is_omitted(self):
        assert to_openai(Rendered("", (UserInput("hi"),))) == [{"role": "user", "content": "hi"}]

    def test_arguments_keep_unicode_unescaped(self):
        out = to_openai(Rendered("", (AssistantMessage("", (call("call_1", "search", city="Zürich"),)),)))
        assert out[0]["tool_calls"][0]["function"]["arguments"] == '{"city": "Zürich"}'

    def test_harpe_only_fields_travel_in_a_harpe_key(self):
        out = to_openai(
            Rendered(
                "",
                (
                    UserInput("look", (image("a.png", size=12),), pinned=True),
                    AssistantMessage("", (call("call_1", "search"),), pinned=True),
                    ToolResults((ToolResult("call_1", "boom", success=False),), pinned=True),
                ),
            )
        )
        assert out[0]["harpe"] == {"attachments": [{"name": "a.png", "size": 12, "mime": "image/png",
                                                    "path": "/tmp/a.png"}], "pinned": True}
        assert out[1]["harpe"] == {"pinned": True}
        assert out[2]["harpe"] == {"success": False, "pinned": True}

    def test_output_is_plain_json_after_stripping(self):
        out = to_openai(Rendered("s",
                                 (UserInput("x", (image("a.png", size=12),), pinned=True),
                                  numbered_results("r", prefix="call_"))))
        plain = strip_harpe_keys(out)
        assert all("harpe" not in m for m in plain)
        assert json.loads(json.dumps(plain)) == plain
        assert "harpe" in out[1], "stripping must not change the input dicts"

    def test_rejects_a_foreign_message(self):
        with pytest.raises(TypeError, match="not a harpe_lab message"):
            to_openai(Rendered("", ({"role": "user", "content": "x"},)))  # type: ignore[arg-type]


class TestFromOpenai:
    def test_consecutive_tool_messages_form_one_round(self):
        r = from_openai(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": '{"n": 1}'}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": ""}},
                ]},
                {"role": "tool", "tool_call_id": "a", "content": "1"},
                {"role": "tool", "tool_call_id": "b", "content": "2"},
                {"role": "assistant", "content": "done"},
            ]
        )
        assert r == Rendered(
            "",
            (
                UserInput("go"),
                AssistantMessage("", (ToolCall("a", "f", {"n": 1}), ToolCall("b", "g", {}))),
                ToolResults((ToolResult("a", "1"), ToolResult("b", "2"))),
                AssistantMessage("done"),
            ),
        )

    def test_system_and_developer_messages_join_into_the_system_prompt(self):
        r = from_openai([{"role": "system", "content": "one"}, {"role": "developer", "content": "two"}])
        assert r.system == "one\n\ntwo" and r.messages == ()

    def test_content_parts_keep_only_text(self):
        r = from_openai([{"role": "user", "content": [
            {"type": "text", "text": "see "}, {"type": "image_url", "image_url": {"url": "x"}},
            {"type": "text", "text": "this"}]}])
        assert r.messages == (UserInput("see this"),)

    def test_legacy_function_call_and_function_result(self):
        r = from_openai([
            {"role": "assistant", "content": "", "function_call": {"name": "f", "arguments": '{"a": [1]}'}},
            {"role": "function", "name": "f", "content": "ok"},
        ])
        assert r.messages == (AssistantMessage("", (ToolCall("", "f", {"a": [1]}),)), ToolResults((ToolResult("", "ok"),)))

    def test_arguments_that_are_not_json_are_kept_raw(self):
        r = from_openai([{"role": "assistant", "content": "", "tool_calls": [
            {"id": "a", "function": {"name": "f", "arguments": "{not json"}}]}])
        assert r.messages[0].calls[0].input == {"_raw": "{not json"}

    def test_unknown_role_names_the_message_and_the_roles_expected(self):
        with pytest.raises(ValueError, match=r"message 1 has an unknown role 'robot'.*expected system, user"):
            from_openai([{"role": "user", "content": "x"}, {"role": "robot", "content": "y"}])

    def test_a_message_without_role_is_rejected(self):
        with pytest.raises(ValueError, match=r"message 0 is not an OpenAI chat message"):
            from_openai([{"content": "x"}])


class TestRoundTrip:
    def test_every_field_survives(self):
        rendered = Rendered(
            "système ✓",
            (
                UserInput("héllo 👋", (image("x.pdf", size=12), image("y.txt", size=12)), pinned=True),
                AssistantMessage("", (ToolCall("c1", "run", {"cmd": ["ls", {"deep": [1.5, None, True]}]}),),
                                 pinned=True),
                ToolResults((ToolResult("c1", "", (image("a.png", size=12),), success=False), ToolResult("c2", "ok")),
                            pinned=True),
                AssistantMessage("fin"),
            ),
        )
        assert from_openai(to_openai(rendered)) == rendered

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_rendered)
    def test_round_trip_is_lossless(self, rendered):
        out = to_openai(rendered)
        json.dumps(out)  # what a provider client will do with it
        assert from_openai(out) == rendered

    @settings(max_examples=100, deadline=None)
    @given(_rendered)
    def test_json_text_round_trip_is_lossless(self, rendered):
        # Through real JSON text, as when requests are written to disk and read back.
        assert from_openai(json.loads(json.dumps(to_openai(rendered)))) == rendered
