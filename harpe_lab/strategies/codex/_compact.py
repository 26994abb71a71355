"""Codex CLI's inline auto-compaction (`Compact`); the truncation of tool outputs as they are
recorded into history, and the token estimate and middle truncation both use, live in
`harpe_lab.strategies.codex._truncation`.

Sources read: openai/codex at commit 5e505ff8773649162126df9e8b67140e3e435672 (main of
2026-02-21; the recordings below were written by ``0.104.0-alpha.1`` two days later, and
none of these files changed in between):

* the limit — ``codex-rs/protocol/src/openai_models.rs``, ``ModelInfo::auto_compact_token_limit``:
  ``min(configured, context_window * 9 / 10)``, so a configured ``model_auto_compact_token_limit``
  can only lower it. ``codex-rs/core/models.json`` gives every gpt-5.x(-codex) model a
  ``context_window`` of 272,000 and no limit of its own: **244,800**. The rollouts'
  ``model_context_window`` (258,400) is the *effective* window,
  ``context_window * effective_context_window_percent (95) / 100`` (``TurnContext::model_context_window``):
  what the UI shows, not what the limit is taken from.
* the count — ``codex-rs/core/src/context_manager/history.rs``, ``get_total_token_usage``: the
  last reply's reported ``total_tokens`` (its input plus its output), plus a byte estimate
  (``ceil(serialized JSON bytes / 4)``, an image 340 bytes) of every item recorded after the
  last model-generated one (the tool outputs of that reply), plus — when the server did not
  say it counted them (``server_reasoning_included`` false) — the same estimate of every
  encrypted reasoning item before the newest user message (``(3/4 · len - 650) / 4`` tokens
  each).
* when it is checked — ``codex-rs/core/src/codex.rs``, ``run_turn``: before a turn, before its
  user message is recorded (``run_pre_sampling_compact``: the new message follows the
  compacted history); and after every model call that needs a follow-up (tool outputs to
  send back), mid-turn. Compaction runs when the count is ``>=`` the limit.
* what is kept — ``codex-rs/core/src/compact.rs``, ``build_compacted_history_with_limit``: the
  text of every real user message (earlier summaries excluded, images dropped), walked from the
  newest, while their ``approx_token_count`` (``ceil(UTF-8 bytes / 4)``) fits
  ``COMPACT_USER_MESSAGE_MAX_TOKENS = 20_000``; the one that crosses it is middle-truncated to
  what is left (``truncate_text`` with ``TruncationPolicy::Tokens``) and the walk stops; then one
  user message, ``SUMMARY_PREFIX + "\\n" + summary``, where the summary is the model's last reply
  to the compaction prompt (``templates/compact/prompt.md``) sent after the whole history.
  Assistant messages, reasoning, tool calls and tool outputs are all dropped. The initial
  context (instructions, ``AGENTS.md``, environment) is sent again: here, the system prompt.
* tool outputs — ``codex-rs/core/src/truncate.rs`` and ``history.rs`` (``process_item``): a
  function or custom tool output is stored already truncated, at the model's
  ``truncation_policy`` (``tokens(10_000)`` for the gpt-5.x-codex models) times 1.2 ("serialization
  budget"): 12,000 approximate tokens, 48,000 UTF-8 bytes. A longer text keeps its first
  ``48,000 // 2`` bytes and its last ``48,000 - 48,000 // 2``, cut at character boundaries,
  joined by ``"…N tokens truncated…"`` with ``N = ceil((bytes - 48,000) / 4)``.

The recorded compaction, explained: the one real auto-compaction in the recorded rollouts
(``../shared/data/real/codex/rollout-2026-02-23T12-54-34-….jsonl``, ``compacted`` on line 1788,
mid-turn, after a call whose input was 209,950 tokens, 81% of the 258,400 shown) fired at the
default limit, 244,800. Codex's count at that check was 209,950 input + 2,184 output + 33,320
for the 150 encrypted reasoning items before the newest user message + 80 for the tool output
recorded since = **245,534**; at the check before, 243,279. The reasoning term is what makes the
trigger look like 81% (codex#24779: "varies from 70% to 98%"): it grows with the reasoning
kept in history and is invisible in the reported usage. Transcripts do not record it (the
importer keeps no reasoning sizes), so `Compact.reasoning` stands in for it per earlier model
call, 0 by default; about 187 reproduces that session (33,320 over its 178 replies before the
newest user message). That compaction was *remote* (``compact_remote.rs``: every OpenAI-provider
session compacts through ``/responses/compact``, whose encrypted item replaces the summary); the
trigger is the same, what is kept here is the inline path's.

Not modelled: the remote compaction's content; retrying the compaction request without its
oldest items when it overflows the window; the recomputed estimate Codex keeps between a
compaction and the next reply (every later check follows a reply, which replaces it); the
exec tools' own output formatting (``Total output lines: …``), which the recorded outputs
already carry; the ``bytes(10_000)`` policy ("…N chars truncated…") of the non-codex models.
The summary comes from the distiller given, asked with Harpe's distill request and Codex's
compaction prompt as its system prompt.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate, islice
from typing import Callable, Literal, Sequence

from ..._text import hidden_chars
from ...errors import StrategyError
from ...messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput
from ...protocol import Compaction, ContextCompacted, Distill, EventHub, Limit, MeteredDistill
from .._lifecycle import Summarizes, TurnLifecycle
from ..harpe import _lead, distill_request
from .._validate import check_int

# `approx_tokens` is bound in this module's namespace on purpose: the compaction below looks
# it up here (tests count its calls by patching `harpe_lab.strategies.codex._compact`).
from ._truncation import _BYTES_PER_TOKEN, approx_tokens, truncate_middle

__all__ = [
    "CONTEXT_WINDOW",
    "AUTO_COMPACT_PERCENT",
    "EFFECTIVE_WINDOW_PERCENT",
    "USER_MESSAGE_TOKENS",
    "SUMMARY_PREFIX",
    "COMPACT_PROMPT",
    "summary_message",
    "is_summary_message",
    "kept_user_messages",
    "Compact",
    "CompactContext",
    "Compacted",
]

CONTEXT_WINDOW = 272_000
"""``context_window`` of every gpt-5.x(-codex) model in Codex's ``models.json``."""
AUTO_COMPACT_PERCENT = 90
"""The default auto-compact limit, and the most a configured one can be, in % of the window."""
EFFECTIVE_WINDOW_PERCENT = 95
"""``effective_context_window_percent``: the window Codex shows (258,400 of 272,000). Not the
limit's base; kept to explain the rollouts' ``model_context_window``."""
USER_MESSAGE_TOKENS = 20_000
"""``COMPACT_USER_MESSAGE_MAX_TOKENS``: the newest user messages kept verbatim, in approximate tokens."""
_IMAGE_BYTES = 340  # IMAGE_BYTES_ESTIMATE at the commit read (raised to 7,373 on 2026-02-24)

SUMMARY_PREFIX = (
    "Another language model started to solve this problem and produced a summary of its thinking "
    "process. You also have access to the state of the tools that were used by that language model. "
    "Use this to build on the work that has already been done and avoid duplicating work. Here is "
    "the summary produced by the other language model, use the information in this summary to "
    "assist with your own analysis:"
)
"""``templates/compact/summary_prefix.md`` (no trailing newline): what the summary message starts with."""

COMPACT_PROMPT = (
    "You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM "
    "that will resume the task.\n\n"
    "Include:\n"
    "- Current progress and key decisions made\n"
    "- Important context, constraints, or user preferences\n"
    "- What remains to be done (clear next steps)\n"
    "- Any critical data, examples, or references needed to continue\n\n"
    "Be concise, structured, and focused on helping the next LLM seamlessly continue the work.\n"
)
"""``templates/compact/prompt.md``: Codex sends it as a user message after the whole history."""


def summary_message(summary: str) -> str:
    """The text of the user message that carries ``summary`` after a compaction."""
    return f"{SUMMARY_PREFIX}\n{summary}"


def is_summary_message(text: str) -> bool:
    """Whether a user message is a summary message (``compact::is_summary_message``)."""
    return text.startswith(SUMMARY_PREFIX + "\n")


def _select(texts: Sequence[str], budget: int) -> list[tuple[int, str]]:
    """``(index, text)`` of the messages ``build_compacted_history_with_limit`` keeps, oldest
    first; a text differs from ``texts[index]`` only when it was truncated."""
    selected: list[tuple[int, str]] = []
    remaining = budget
    for k in range(len(texts) - 1, -1, -1):
        if remaining == 0:
            break
        tokens = approx_tokens(texts[k])
        if tokens <= remaining:
            selected.append((k, texts[k]))
            remaining -= tokens
        else:
            selected.append((k, truncate_middle(texts[k], remaining)))
            break
    selected.reverse()
    return selected


def kept_user_messages(texts: Sequence[str], budget: int = USER_MESSAGE_TOKENS) -> list[str]:
    """What a compaction keeps of the real user messages ``texts`` (oldest first): the newest
    whose approximate tokens fit ``budget``, the one that crosses it middle-truncated to what is
    left, in their original order."""
    check_int("budget", budget, 0)
    return [text for _, text in _select(texts, budget)]


# serde_json writes compact JSON and leaves non-ASCII as it is (`json.dumps` with
# ensure_ascii=False and separators=(",", ":")). The items estimated have a fixed shape, so
# their JSON is fixed ASCII around the strings, each escaped as that encoder escapes it
_ESCAPED = json.encoder.encode_basestring  # type: ignore[attr-defined]
_OUTPUT = len('{"type":"function_call_output","call_id":,"output":}')
_MESSAGE = len('{"type":"message","role":"user","content":[{"type":"input_text","text":}]}')


def _json_bytes(text: str) -> int:
    # a sanitizer's marker weighs the text it replaced (`hidden_chars`); it holds nothing JSON escapes
    return len(_ESCAPED(text).encode("utf-8")) + hidden_chars(text)


def _estimate(message: UserInput | ToolResults) -> int:
    """Codex's estimate of an item it recorded (not one the model generated, whose tokens the
    next reported usage holds): its serialized Responses API item at 4 bytes a token, an image
    at a fixed 340 bytes; a results message is one item per output."""
    if isinstance(message, ToolResults):
        return sum(-(-(_OUTPUT + _json_bytes(r.id) + _json_bytes(r.content)) // _BYTES_PER_TOKEN)
                   for r in message.results)
    images = sum(1 for a in message.attachments if a.mime.startswith("image/"))
    return -(-(_MESSAGE + _json_bytes(message.text)) // _BYTES_PER_TOKEN) + \
        -(-images * _IMAGE_BYTES // _BYTES_PER_TOKEN)


# `distill_request` is its lead, one piece of text per message, and this tail: the pieces are
# cut out of it (not written again here) so the request stays Harpe's to the character
_TAIL = "\nReply with the updated summary."
_LEAD = _lead("")


def _part(message: Message) -> str:
    """What `distill_request` writes for ``message``."""
    return distill_request((message,), "")[len(_LEAD) : -len(_TAIL)]


class _Folded:
    """What a compaction reads of the transcript's first `synced` messages, taken in a message
    at a time: below ``user_tokens`` Codex compacts at every check, and walking the whole
    history each time made a replay quadratic.

    `parts`: each message's piece of the distill request ("" for a summary message, which
    `distill_request` is not given); `users`: the real user messages, with the running sums,
    one longer and from any base, of their approximate tokens (`tokens`, what `_select` walks)
    and of their estimates (`estimates`); `user_parts`: their pieces; `summaries`: how many
    summary messages; `attached`: where in `users` a message has attachments (a compaction
    replaces it); `ids`: the users' ids, and `dup` when one object is there twice (the messages
    a compaction drops are then counted the slow way, as the walk counted them).

    The lists only grow; a compaction starts a new `_Folded`. So a mark is this object and its
    lengths, and an abort cuts the lists back to them.
    """

    __slots__ = ("parts", "users", "tokens", "estimates", "user_parts", "summaries", "attached", "ids", "dup",
                 "synced")

    def __init__(self, users: list[UserInput], tokens: list[int], estimates: list[int], user_parts: list[str],
                 ids: set[int], dup: bool, summary: bool) -> None:
        """``users`` (none with attachments), then one summary message if ``summary``."""
        self.users, self.tokens, self.estimates, self.user_parts = users, tokens, estimates, user_parts
        self.summaries = int(summary)
        self.parts = [*user_parts, ""] if summary else [*user_parts]
        self.attached: list[int] = []
        self.ids, self.dup = ids, dup
        self.synced = len(self.parts)

    @classmethod
    def empty(cls) -> "_Folded":
        return cls([], [0], [0], [], set(), False, False)

    def sync(self, transcript: Sequence[Message], end: int, estimate: Callable[[Message], int]) -> None:
        """Take in ``transcript[synced:end]``."""
        parts, users, ids = self.parts, self.users, self.ids
        for m in islice(transcript, self.synced, end):
            if isinstance(m, UserInput):
                if is_summary_message(m.text):
                    self.summaries += 1
                    parts.append("")
                    continue
                part = _part(m)
                parts.append(part)
                self.user_parts.append(part)
                if m.attachments:
                    self.attached.append(len(users))
                users.append(m)
                self.tokens.append(self.tokens[-1] + approx_tokens(m.text))
                self.estimates.append(self.estimates[-1] + estimate(m))
                key = id(m)
                self.dup = self.dup or key in ids
                ids.add(key)
            else:
                parts.append(_part(m))
        self.synced = end

    def mark(self) -> tuple:
        return (self, len(self.parts), len(self.users), self.summaries, len(self.attached), self.synced)

    @staticmethod
    def restore(mark: tuple) -> "_Folded":
        folded, parts, users, summaries, attached, synced = mark
        del folded.parts[parts:], folded.users[users:], folded.user_parts[users:]
        del folded.tokens[users + 1:], folded.estimates[users + 1:], folded.attached[attached:]
        folded.summaries, folded.synced = summaries, synced
        folded.ids = set(map(id, folded.users))  # a compaction since the mark took it over
        folded.dup = len(folded.ids) < len(folded.users)
        return folded

    def keep(self, budget: int, estimate: Callable[[Message], int]) -> tuple["_Folded", int]:
        """What a compaction keeps of `users` within ``budget`` (`_select`'s walk, found by
        bisection on the running sums): a `_Folded` of the kept messages and the summary
        message after them, and how many kept messages are originals."""
        users, tokens = self.users, self.tokens
        # the walk keeps the newest while they fit, and either stops where their sum reaches
        # the budget exactly (a message of 0 tokens before it is not kept) or cuts the one
        # that crosses it
        target = tokens[-1] - budget
        j = bisect_right(tokens, target) - 1
        cut = j >= 0 and tokens[j] != target  # users[j] crosses it: cut, and the rest kept whole
        lo = max(j, 0)  # the first one kept, cut or whole
        kept, sums, costs, parts = users[lo:], tokens[lo:], self.estimates[lo:], self.user_parts[lo:]
        ids = self.ids  # taken over, so an abort back to before this rebuilds it
        if not self.dup:
            ids.difference_update(map(id, islice(users, lo + cut)))
        # Codex keeps a user message's text only: its images go with the rest
        replaced = [k - lo for k in self.attached if k >= lo + cut]
        for k in replaced:
            ids.discard(id(kept[k]))
            kept[k] = UserInput(kept[k].text)
            ids.add(id(kept[k]))
        if replaced:
            costs = list(accumulate(map(estimate, kept), initial=costs[0]))
        if cut:  # what is left of the budget, in the cut one's place
            m = kept[0] = UserInput(truncate_middle(users[j].text, budget - (tokens[-1] - tokens[j + 1])))
            sums[0] = sums[1] - approx_tokens(m.text)
            costs[0] = costs[1] - estimate(m)
            parts[0] = _part(m)
            ids.add(id(m))
        if self.dup:
            ids = set(map(id, kept))
        return _Folded(kept, sums, costs, parts, ids, len(ids) < len(kept), True), len(kept) - cut - len(replaced)


@dataclass(frozen=True)
class Compacted:
    """Event: Codex's count was ``tokens`` (>= ``limit``), so the history was compacted,
    ``"pre_turn"`` (before the turn's user message was recorded) or ``"mid_turn"``."""

    tokens: int
    limit: int
    phase: Literal["pre_turn", "mid_turn"]


@dataclass(frozen=True, kw_only=True)
class Compact:
    """Codex CLI's inline auto-compaction: once Codex's count reaches the auto-compact limit
    (90% of ``window`` unless ``token_limit`` is lower), keep the newest user messages within
    ``user_tokens`` and one summary message."""

    window: int = CONTEXT_WINDOW
    """The model's ``context_window``, in tokens (272,000; rollouts show 95% of it)."""
    token_limit: int | None = None
    """``model_auto_compact_token_limit`` as configured; ``None``: 90% of ``window``. Codex takes
    the smaller of the two, so a value above 90% would change nothing and is refused."""
    user_tokens: int = USER_MESSAGE_TOKENS
    """Approximate tokens (4 UTF-8 bytes each) of user messages kept verbatim."""
    reasoning: int = 0
    """Tokens added to the count for every model reply before the newest user message: Codex's
    estimate of the encrypted reasoning it sends back, which the reported usage leaves out.
    Transcripts do not record it; the recorded gpt-5.3-codex session (high effort) had ~187."""

    def __post_init__(self) -> None:
        check_int("window", self.window, 2)
        check_int("user_tokens", self.user_tokens, 0)
        check_int("reasoning", self.reasoning, 0)
        if self.token_limit is not None:
            check_int("token_limit", self.token_limit, 1)
            most = self.window * AUTO_COMPACT_PERCENT // 100
            if self.token_limit > most:
                raise StrategyError(
                    f"token_limit must be at most 90% of window ({most:,}), got {self.token_limit:,}: Codex takes "
                    "the smaller of the two; raise window to compact later"
                )

    @property
    def limit(self) -> int:
        """The count at which Codex compacts."""
        most = self.window * AUTO_COMPACT_PERCENT // 100
        return most if self.token_limit is None else self.token_limit

    def context(self, base_system: str, *, distill: Distill,
                on_event: Callable[[object], None] | None = None) -> "CompactContext":
        """A fresh lifecycle context with this configuration. Build one per replay, with its
        own distiller: a distiller may keep state across calls."""
        return CompactContext(base_system, self, distill=distill, on_event=on_event)


class CompactContext(TurnLifecycle, Summarizes):
    """Codex's auto-compaction in Harpe's lifecycle.

    Every request sends the whole transcript (the history since the last compaction). The
    count checked at each `compact` is Codex's: the last observed input plus output tokens,
    plus `_estimate` of every message appended after that reply, plus ``reasoning`` per
    reply before the newest user input. At a turn's start the new input is left out of the
    count and of the compaction, and follows the summary message. At or above the limit the
    transcript goes to the distiller, and becomes the kept user messages (the original
    objects where kept whole and without attachments) and one `UserInput` holding
    `summary_message` of its reply. A distiller returning ``None`` leaves everything as it
    was. Each compaction reports `Compacted`, `ContextCompacted` and, through
    `MeteredDistill`, `DistillCall`.
    """

    def __init__(self, base_system: str, config: Compact, *, distill: Distill,
                 on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, Compact):
            raise StrategyError(f"config must be a Compact, got {config!r}")
        self._events = EventHub(on_event)
        self._distill = MeteredDistill(distill, self._events)
        self.config = config
        self._reported: int | None = None  # the last reply's input + output tokens
        self._after = 0  # estimated tokens of the messages appended after that reply
        self._replies = 0  # replies before the newest user input (each adds `reasoning`)
        self._assistants = 0  # replies in the transcript
        self._pending: UserInput | None = None  # a turn's input, until its first check
        self._opening = False  # the next message stored is a turn's input
        self._summary = ""
        self._fresh = False  # nothing appended since the last compaction
        self._folded = _Folded.empty()  # what the next compaction reads, synced when it runs
        # the last summary, its distill request lead and its message's estimate: a distiller
        # often writes the same summary again
        self._written: tuple[str | None, str, int] = (None, "", 0)
        self._marked_state: tuple = (None, 0, 0, 0, "", False, self._folded.mark())
        # id(message) -> (message, `_estimate`): a user message is estimated as it joins the
        # count, and again as `_Folded` takes it in
        self._estimates: dict[int, tuple[Message, int]] = {}

    def _estimate(self, message: UserInput | ToolResults) -> int:
        known = self._estimates.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        n = _estimate(message)
        if isinstance(message, UserInput):  # only these come back; results are estimated once
            self._estimates[id(message)] = (message, n)
        return n

    @property
    def limit(self) -> Limit:
        """The auto-compact limit, as a reactive high-water mark (the call that crosses it goes out)."""
        return Limit(tokens=self.config.limit, kind="high_water")

    @property
    def tokens(self) -> int:
        """Codex's count at the next check (at a turn's start, without the turn's input)."""
        return (self._reported or 0) + self._after + self.config.reasoning * self._replies

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        self._marked_state = (self._reported, self._after, self._replies, self._assistants, self._summary,
                              self._fresh, self._folded.mark())
        self._opening = True

    def _added(self, message: Message) -> None:
        self._fresh = False
        if self._opening:
            # Codex checks before it records the turn's message: it joins the count after the check
            self._opening = False
            self._pending = message  # type: ignore[assignment]  # begin_turn takes only a UserInput
            return
        self._settle()
        if isinstance(message, AssistantMessage):
            self._after = 0  # its tokens are in the reported output
            self._assistants += 1
        else:
            self._after += self._estimate(message)

    def _restored(self) -> None:
        (self._reported, self._after, self._replies, self._assistants, self._summary, self._fresh,
         folded) = self._marked_state
        self._folded = _Folded.restore(folded)
        self._pending = None
        for kept in self._transcript[self._marked[1]:]:  # an aborted turn keeps its input
            self._after += self._estimate(kept)
            self._fresh = False
            self._replies = self._assistants  # it is the newest user message now

    def _settle(self) -> None:
        """The turn's input, held out of the pre-turn check, is now history like any other."""
        if self._pending is not None:
            # reasoning counts for the replies before the newest user message only
            self._replies = self._assistants
            self._after += self._estimate(self._pending)
            self._pending = None

    def observe(self, usage: Usage) -> None:
        self._settle()
        self._reported = usage.input_tokens + usage.output_tokens
        self._after = 0

    def compact(self) -> Compaction:
        phase: Literal["pre_turn", "mid_turn"] = "pre_turn" if self._pending is not None else "mid_turn"
        count = self.tokens
        # right after a compaction nothing is left to fold but what it kept
        compacted = count >= self.config.limit and not self._fresh and self._compact(count, phase)
        self._settle()
        return self._whole(compacted, self._base_system)

    def _compact(self, count: int, phase: Literal["pre_turn", "mid_turn"]) -> bool:
        pending = self._pending
        end = len(self._transcript) - (pending is not None)  # the history: all but a turn's new input
        if not end:
            return False  # a first turn's input alone: nothing to compact
        folded = self._folded
        folded.sync(self._transcript, end, self._estimate)
        # the history but its summary messages, with the last summary when it held one
        lead = self._written_for(self._summary)[0] if folded.summaries and self._summary else _LEAD
        request = Rendered(COMPACT_PROMPT, (UserInput("".join([lead, *folded.parts, _TAIL])),))
        text = self._distill(request)
        if text is None:
            return False
        if not isinstance(text, str):
            raise StrategyError(f"distill must return a str or None, got {type(text).__name__}")
        # one object twice in the history: where it is kept, it is kept at every place it stands
        history = self._transcript[:end] if folded.dup else None
        self._folded, originals = folded.keep(self.config.user_tokens, self._estimate)
        kept = self._folded.users
        self._summary = text
        transcript = [*kept, UserInput(summary_message(text))]
        if pending is not None:
            transcript.append(pending)
        self._transcript = transcript
        self._fresh = True
        # no usage is known for the new history until the next reply: Codex's count is then
        # its byte estimate, and it holds no reply whose reasoning would count
        self._reported, self._replies, self._assistants = None, 0, 0
        self._after = (self._folded.estimates[-1] - self._folded.estimates[0]
                       + self._written_for(text, transcript[len(kept)])[1])
        if history is None:
            dropped = end - originals
        else:
            kept_ids = set(map(id, kept))
            dropped = sum(id(m) not in kept_ids for m in history)
        self._events.emit(Compacted(count, self.config.limit, phase))
        self._events.emit(ContextCompacted(dropped))
        return True

    def _written_for(self, summary: str, message: UserInput | None = None) -> tuple[str, int]:
        """`_lead` of ``summary`` and `_estimate` of its summary ``message``, kept for the last one."""
        known, lead, cost = self._written
        if summary != known:
            lead, cost = _lead(summary), _estimate(message or UserInput(summary_message(summary)))
            self._written = (summary, lead, cost)
        return lead, cost

    def commit_turn(self) -> None:
        self._settle()
        super().commit_turn()

    def __repr__(self) -> str:
        return f"CompactContext(limit={self.config.limit:,}, {len(self._transcript)} messages)"
