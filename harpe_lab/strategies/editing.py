"""Edit policies, and `EditContext`, which runs one through Harpe's context lifecycle.

An *edit policy* rewrites old messages in place instead of dropping them: observation
masking, tool-result clearing and tool-output trimming all send every message, with some
tool results (and, for clearing, some tool-call inputs) replaced by a short stand-in. It is
a frozen callable ``policy(messages) -> messages`` whose output has the input's length, and
whose ``k``-th message is either the ``k``-th input (the same object) or a *new* message of
the same kind standing in for it, with the same tool-call ids in the same order. So a tool
call and its results keep their ids and their places: an edit never orphans one.

`EditContext` keeps the whole transcript and renders ``policy(transcript)`` at every
`compact`. The replay engine tells original messages from made-up ones by identity, so the
context hands out *one* object per stand-in: when the policy returns a stand-in equal to the
one it sent for the same original before, the earlier object is sent again, and a request
that only grew reports ``compacted=False`` (the provider's cached prefix survives). A
request that edited something it had already sent reports ``compacted=True``.

A policy is defined by its *editor*, which applies it to a history that only grows, a
request at a time: ``policy.incremental()`` returns a fresh one (`Incremental`), and
``editor.extend(messages, start)`` is told that ``messages[:start]`` are the ones it saw
last time and returns ``(index, decision)`` for each place whose decision changed (``None``:
send the original), and ``editor.build(original, decision)`` makes that decision's stand-in.
The policy applied to a whole history, ``policy(messages)``, is a fresh editor fed the
messages once (`edited_by`; a policy subclassing `Edits` gets that ``__call__``): there is one
implementation of each policy, and what a context sends a request at a time is what the
policy means. `EditContext` builds a stand-in once per (original, decision) and sends the
same object again, so a request costs what moved instead of the whole history; after an
abort, or when the edited messages changed otherwise, a fresh editor starts from the
beginning. A policy without an editor (a peer's, run through its own library) is applied to
the whole transcript at each request.

A stand-in results message is sent next to its original call (and the reverse): the engine
pairs a call with its results by their call ids, so only the stand-in counts as made up in
the frame (its tokens in ``summary_tokens``, its original in ``messages_dropped``).
"""

from __future__ import annotations

from operator import is_
from typing import Any, Callable, Iterable, Protocol, Sequence, runtime_checkable

from ..errors import StrategyError
from ..messages import AssistantMessage, Message, Rendered, ToolResults, deferred
from ..protocol import Compaction, Limit
from ._lifecycle import PolicyLifecycle

__all__ = ["EditPolicy", "Editor", "Incremental", "Edits", "edited_by", "check_edit", "EditContext"]

EditPolicy = Callable[[Sequence[Message]], Sequence[Message]]
"""Messages in; the same messages out, some replaced by stand-ins (see the module doc)."""


class Editor(Protocol):
    """A policy over a history that only grows, a request at a time (see the module doc).
    A decision is any value compared with ``==``: the same decision for the same original
    is its same stand-in."""

    def extend(self, messages: Sequence[Message], start: int) -> Iterable[tuple[int, object]]: ...

    def build(self, original: Message, decision: Any) -> Message: ...


@runtime_checkable
class Incremental(Protocol):
    """An edit policy defined by its editor (see the module doc); `EditContext` checks for
    it once, where it is given the policy."""

    def incremental(self) -> Editor: ...


def edited_by(editor: Editor, messages: Sequence[Message]) -> tuple[Message, ...]:
    """``messages`` as ``editor`` edits them when it sees them all at once: what the policy
    it belongs to means for a whole history."""
    seq = tuple(messages)
    out = list(seq)
    for k, decision in editor.extend(seq, 0):
        if decision is not None:
            out[k] = editor.build(seq[k], decision)
    return tuple(out)


class Edits:
    """Base of an edit policy defined by its editor: ``policy(messages)`` is a fresh
    ``incremental()`` editor fed ``messages`` once (`edited_by`)."""

    def incremental(self) -> Editor:  # pragma: no cover - abstract
        raise NotImplementedError

    def __call__(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        return edited_by(self.incremental(), messages)


def _ids(m: Message) -> tuple[str, ...]:
    if isinstance(m, AssistantMessage):
        return tuple(c.id for c in m.calls)
    if isinstance(m, ToolResults):
        return tuple(r.id for r in m.results)
    return ()


def check_edit(before: Sequence[Message], after: Sequence[Message], policy: object) -> None:
    """Raise `StrategyError` unless ``after`` is an edit of ``before``: the same length, and
    each message the original or a stand-in of the same kind with the same tool-call ids."""
    if len(after) != len(before):
        raise StrategyError(
            f"edit policy {policy!r} returned {len(after)} messages for {len(before)}; an edit "
            "replaces messages in place and never drops or adds one"
        )
    for k, (m, o) in enumerate(zip(before, after)):
        if o is m:
            continue
        if type(o) is not type(m) or _ids(o) != _ids(m):
            raise StrategyError(
                f"edit policy {policy!r} replaced message {k} ({type(m).__name__}, call ids "
                f"{list(_ids(m))}) with {type(o).__name__} (call ids {list(_ids(o))}); a stand-in "
                "must be the same kind of message with the same tool-call ids"
            )


class EditContext(PolicyLifecycle):
    """Run an edit policy through Harpe's context lifecycle over a stored transcript.

    Every `compact` renders ``Rendered(base_system, policy(transcript))``, checked with
    `check_edit`. ``limit`` (a `harpe_lab.protocol.Limit`) is declared to the engine, for
    overshoot to be measured against. `abort_turn` restores the transcript to before the turn
    plus its user input, as Harpe's contexts do.
    """

    def __init__(self, base_system: str, policy: EditPolicy, *, limit: Limit | None = None,
                 initial: Iterable[Message] = ()) -> None:
        super().__init__(base_system, policy, limit=limit, initial=initial)
        # id(original) -> (original, the stand-in last sent for it); the original is held so
        # its id cannot be reused by another object
        self._standins: dict[int, tuple[Message, Message]] = {}
        self._make_editor: Callable[[], Editor] | None = policy.incremental if isinstance(policy, Incremental) else None
        # (the `_source` objects, the edited messages' count, the editor, the last output
        # list and the request made of it):
        # while the source objects are the same, the edited messages only grew
        self._last: tuple[tuple[object, ...], int, Editor, list[Message], Rendered] | None = None
        # id(original) -> (original, the editor's decision, its stand-in)
        self._decided: dict[int, tuple[Message, object, Message]] = {}

    def _stable(self, memo: dict[int, tuple[Message, Message]], original: Message, new: Message) -> Message:
        known = memo.get(id(original))
        if known is not None and known[0] is original and known[1] == new:
            return known[1]
        memo[id(original)] = (original, new)
        return new

    def _edited(self) -> Sequence[Message]:
        """The messages the policy is applied to: the transcript itself, read and never kept
        (a copy at every request would cost O(history)); a subclass may send a view of it
        instead, as the hybrid sends its checkpoint and the turns after it."""
        return self._transcript

    def _source(self) -> tuple[object, ...]:
        """Objects that, while the same ones, mean the edited messages only grew since the
        last render (the transcript list: it is appended to, and replaced on an abort)."""
        return (self._transcript,)

    def render(self) -> tuple[Message, ...]:
        """What the next request carries (the policy applied, stand-ins made stable)."""
        if self._make_editor is not None:
            return self._render_incremental()[0].messages
        return self._render_whole()

    def _render_whole(self) -> tuple[Message, ...]:
        seq = tuple(self._edited())
        out = list(self.policy(seq))
        check_edit(seq, out, self.policy)
        for k, (m, o) in enumerate(zip(seq, out)):
            if o is not m:
                out[k] = self._stable(self._standins, m, o)
        return tuple(out)

    def _render_incremental(self) -> tuple[Rendered, tuple[int, ...] | None]:
        assert self._make_editor is not None
        # The policy's editor is told which messages are new and answers with the places
        # whose decision changed, so a request costs what moved, not the history. Stand-ins
        # are built once per (original, decision): the same object goes out again, as
        # `_stable` makes it for a policy without an editor. The request is the output list
        # itself (`deferred`), so the list is only appended to: a stand-in put where an
        # earlier request reads goes into a copy.
        seq = self._edited()
        source = self._source()
        last = self._last
        grew = last is not None and len(seq) >= last[1] and all(map(is_, source, last[0]))
        if grew:
            _, start, editor, out, _ = last
        else:
            editor, start, out = self._make_editor(), 0, []
        out.extend(seq[start:])
        # the places where the request differs from the last render followed by the messages
        # appended since: out holds exactly that before the editor's answers go in
        edits = set()
        shared = start > 0
        for k, decision in editor.extend(seq, start):
            m = seq[k]
            new = m if decision is None else self._standin(editor, m, decision)
            if new is not out[k]:
                if shared and k < start:
                    out, shared = list(out), False
                edits.add(k)
                out[k] = new
        rendered = deferred(self.base_system, out)
        self._last = (source, len(seq), editor, out, rendered)
        return rendered, (tuple(sorted(edits)) if grew else None)

    def _standin(self, editor: Editor, original: Message, decision: object) -> Message:
        known = self._decided.get(id(original))
        if known is not None and known[0] is original and known[1] == decision:
            return known[2]
        new = editor.build(original, decision)
        check_edit((original,), (new,), self.policy)
        if known is not None and known[0] is original and known[2] == new:
            new = known[2]
        self._decided[id(original)] = (original, decision, new)
        return new

    def compact(self) -> Compaction:
        if self._make_editor is None:
            return self._request(self._render_whole())
        # the edits are relative to the last render: they say how this request follows the
        # previous one only when that render is what went out (`render` may preview between)
        went_out = self._last is not None and self._last[4] is self._sent
        rendered, edits = self._render_incremental()
        return self._request(rendered, edits if went_out else None)
