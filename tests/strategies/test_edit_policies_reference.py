"""Each edit policy is its editor (`harpe_lab.strategies.editing`): here each is held to a plain
whole-history reading of the rules its module documents, written once more in the test, so
that an editor that drifted from what the policy means fails here and not only in a replay
(where the editor is compared with itself seen all at once).

The references are the rules as the modules' docs state them, not fast: a list scan each."""

from __future__ import annotations

import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from harpe_lab.strategies.anthropic.clearing import ClearToolUses, Priced
from harpe_lab.strategies.editing import EditContext
from harpe_lab.strategies.langchain import ClearToolUsesEdit
from harpe_lab.strategies.langchain._clearing import _Bound
from harpe_lab.strategies.langchain._units import units_of
from harpe_lab.strategies.swe_agent import LastNObservations, elided
from harpe_lab.strategies.openhands import MASKED, ObservationMasking, events_in
from harpe_lab.strategies.openai.agents_sdk import ToolOutputTrimmer, trimmed_text
from tests._support.editing import conversations


def _flat(conversation) -> tuple:
    return tuple(m for t in conversation.turns for m in (t.input, *t.messages))


def _length(messages) -> int:
    """A price that is not a sum over the messages: characters, rounded up to tens."""
    n = sum(len(getattr(m, "text", "")) + sum(len(r.content) for r in getattr(m, "results", ())) for m in messages)
    return -(-n // 10) * 10


# --- the references ---------------------------------------------------------------------------

_SWE = re.compile(r"Old environment output: \(\d+ lines omitted\)( \(\d+ images omitted\))?")


def _swe_placeholder(r) -> bool:
    return not r.attachments and _SWE.fullmatch(r.content) is not None


def masking_reference(policy: LastNObservations, messages) -> tuple:
    observations, template = [], False
    for i, m in enumerate(messages):
        if isinstance(m, ToolResults):
            observations.append(i)
        elif isinstance(m, UserInput) and not template:
            template = True
            observations.append(-1 - i)
    k = len(observations)
    last_removed = max(0, (k // policy.polling) * policy.polling - policy.n)
    out = list(messages)
    for i in [i for i in observations[1:last_removed] if i >= 0]:
        m = out[i]
        if not all(_swe_placeholder(r) for r in m.results):
            out[i] = ToolResults(tuple(r if _swe_placeholder(r) else elided(r) for r in m.results), m.pinned)
    return tuple(out)


def trimming_reference(policy: ToolOutputTrimmer, messages) -> tuple:
    out = list(messages)
    seen, boundary = 0, 0
    for i in range(len(out) - 1, -1, -1):
        if isinstance(out[i], UserInput):
            seen += 1
            if seen >= policy.recent_turns:
                boundary = i
                break
    names = {c.id: c.name for m in out if isinstance(m, AssistantMessage) for c in m.calls if c.id and c.name}

    def trim(r):
        name = names.get(r.id, "")
        if policy.trimmable_tools is not None and (not name or name not in policy.trimmable_tools):
            return None
        if len(r.content) <= policy.max_output_chars:
            return None
        text = trimmed_text(r.content, name, policy.preview_chars)
        return None if len(text) >= len(r.content) else ToolResult(r.id, text, r.attachments, r.success)

    for i in range(boundary):
        m = out[i]
        if isinstance(m, ToolResults):
            t = [trim(r) for r in m.results]
            if any(x is not None for x in t):
                out[i] = ToolResults(tuple(r if x is None else x for r, x in zip(m.results, t)), m.pinned)
    return tuple(out)


def openhands_reference(policy: ObservationMasking, messages) -> tuple:
    out = list(messages)
    cutoff = events_in(out) - policy.attention_window
    at = 0
    for k, m in enumerate(out):
        if isinstance(m, ToolResults) and at < cutoff:
            results = tuple(r if at + j >= cutoff or (r.content == MASKED and not r.attachments)
                            else ToolResult(r.id, MASKED, (), r.success) for j, r in enumerate(m.results))
            if any(a is not b for a, b in zip(results, m.results)):
                out[k] = ToolResults(results, m.pinned)
        at += events_in((m,))
    return tuple(out)


def clearing_reference(policy: ClearToolUses, messages, tokens) -> tuple:
    seq = tuple(messages)
    before = tokens(seq)
    if before <= policy.trigger:
        return seq
    names, uses = {}, []
    for i, m in enumerate(seq):
        if isinstance(m, AssistantMessage):
            names.update((c.id, c.name) for c in m.calls)
        elif isinstance(m, ToolResults):
            uses.extend((i, j) for j in range(len(m.results)))
    old = uses[: max(0, len(uses) - policy.keep)]
    by_message: dict = {}
    for i, j in old:
        if names.get(seq[i].results[j].id) not in policy.exclude_tools:
            by_message.setdefault(i, set()).add(j)
    inputs = policy.clear_tool_inputs
    out = list(seq)
    for i, js in by_message.items():
        m = out[i]
        results = tuple(ToolResult(r.id, policy.placeholder, (), r.success) if j in js else r
                        for j, r in enumerate(m.results))
        if results != m.results:
            out[i] = ToolResults(results, m.pinned)
        if inputs and i > 0 and isinstance(out[i - 1], AssistantMessage):
            ids = {m.results[j].id for j in js}
            call = out[i - 1]
            calls = tuple(ToolCall(c.id, c.name, {})
                          if c.id in ids and (inputs if isinstance(inputs, bool) else c.name in inputs) else c
                          for c in call.calls)
            if calls != call.calls:
                out[i - 1] = AssistantMessage(call.text, calls, call.pinned)
    out = tuple(out)
    if out == seq or (policy.clear_at_least and before - tokens(out) < policy.clear_at_least):
        return seq
    return out


def langchain_reference(policy: ClearToolUsesEdit, messages, tokens) -> tuple:
    """LangChain's ``apply`` on the units, regrouped by value (the result is compared by value)."""
    seq = tuple(messages)
    pairs = [(u, k) for k, m in enumerate(seq) for u in units_of(m)]
    out = [u for u, _ in pairs]
    before = tokens(out)
    if before > policy.trigger:
        candidates = [i for i, u in enumerate(out) if isinstance(u, ToolResults)]
        candidates = [] if policy.keep >= len(candidates) else candidates[: len(candidates) - policy.keep]
        for idx in candidates:
            ai = next((k for k in range(idx - 1, -1, -1) if isinstance(out[k], AssistantMessage)), None)
            if ai is None:
                continue
            r = out[idx].results[0]
            call = next((c for c in out[ai].calls if c.id == r.id), None)
            if call is None or call.name in policy.exclude_tools:
                continue
            out[idx] = ToolResults((ToolResult(r.id, policy.placeholder, (), r.success),), out[idx].pinned)
            if policy.clear_tool_inputs:
                m = out[ai]
                out[ai] = AssistantMessage(m.text, tuple(ToolCall(c.id, c.name, {}) if c.id == r.id else c
                                                         for c in m.calls), m.pinned)
            if policy.clear_at_least > 0 and max(0, before - tokens(out)) >= policy.clear_at_least:
                break
    rebuilt = []
    for k, m in enumerate(seq):
        units = [u for u, (_, j) in zip(out, pairs) if j == k]
        if isinstance(m, ToolResults):
            rebuilt.append(ToolResults(tuple(u.results[0] for u in units), m.pinned))
        else:
            rebuilt.append(units[0])
    return tuple(rebuilt)


# --- the policies against them ----------------------------------------------------------------

_fast = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_fast
@given(conversations(), st.integers(1, 6), st.integers(1, 4))
def test_masking_is_swe_agents_rule(convo, n, polling):
    messages = _flat(convo)
    policy = LastNObservations(n=n, polling=polling)
    assert policy(messages) == masking_reference(policy, messages)


@_fast
@given(conversations(), st.integers(1, 3), st.integers(1, 60), st.integers(0, 30),
       st.sampled_from([None, frozenset({"bash"}), frozenset({"read", "grep"})]))
def test_trimming_is_the_sdks_rule(convo, recent, most, preview, tools):
    messages = _flat(convo)
    policy = ToolOutputTrimmer(recent_turns=recent, max_output_chars=most, preview_chars=preview,
                               trimmable_tools=tools)
    assert policy(messages) == trimming_reference(policy, messages)


@_fast
@given(conversations(), st.integers(1, 12))
def test_openhands_masking_is_its_rule(convo, window):
    messages = _flat(convo)
    policy = ObservationMasking(attention_window=window)
    assert policy(messages) == openhands_reference(policy, messages)


@_fast
@given(conversations(), st.integers(0, 400), st.integers(0, 4), st.integers(0, 200),
       st.sampled_from([frozenset(), frozenset({"bash"})]),
       st.sampled_from([False, True, frozenset({"read"})]))
def test_clearing_is_anthropics_rule(convo, trigger, keep, least, exclude, inputs):
    messages = _flat(convo)
    policy = ClearToolUses(trigger=trigger, keep=keep, clear_at_least=least, exclude_tools=exclude,
                           clear_tool_inputs=inputs)
    assert policy(messages, tokens=_length) == clearing_reference(policy, messages, _length)


@_fast
@given(conversations(), st.integers(0, 400), st.integers(0, 4), st.integers(0, 200),
       st.sampled_from([frozenset(), frozenset({"bash"})]), st.booleans())
def test_langchain_clearing_is_its_rule(convo, trigger, keep, least, exclude, inputs):
    messages = _flat(convo)
    policy = ClearToolUsesEdit(trigger=trigger, keep=keep, clear_at_least=least, exclude_tools=exclude,
                               clear_tool_inputs=inputs)
    assert policy(messages, tokens=_length) == langchain_reference(policy, messages, _length)


@_fast
@given(conversations(), st.integers(0, 400), st.integers(0, 4), st.integers(0, 200), st.booleans(), st.data())
def test_fed_in_pieces_the_clearers_send_their_rule(convo, trigger, keep, least, inputs, data):
    """Without a running price (``_length`` is no sum over the messages) the clearers' editors
    plan again at each request: fed a history in pieces through `EditContext`, every request
    is the rule applied to the history so far."""
    messages = _flat(convo)
    stops = set(data.draw(st.lists(st.integers(1, len(messages)), max_size=8)))
    clear = ClearToolUses(trigger=trigger, keep=keep, clear_at_least=least, clear_tool_inputs=inputs)
    edit = ClearToolUsesEdit(trigger=trigger, keep=keep, clear_at_least=least, clear_tool_inputs=inputs)
    for policy, reference in ((Priced(clear, _length), lambda ms: clearing_reference(clear, ms, _length)),
                              (_Bound(edit, _length), lambda ms: langchain_reference(edit, ms, _length))):
        ctx = EditContext("", policy)
        for k, m in enumerate(messages, 1):
            ctx.begin_turn(m) if isinstance(m, UserInput) else ctx.append(m)
            if k in stops:
                assert ctx.compact().rendered.messages == reference(messages[:k])
