"""The VS Code extension's legacy context manager (``ContextManager.ts``): `LegacyContextManager`
and its `LegacyContext`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Callable, NamedTuple, Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message, ToolResult, ToolResults, Usage, UserInput, deferred
from ...protocol import Compaction, EventHub, Limit
from .._lifecycle import TurnLifecycle
from .._validate import check_int
from ._measures import DUPLICATE_FILE_READ_NOTICE, LEGACY_TRUNCATION_NOTICE

__all__ = ["max_allowed_size", "LegacyContextManager", "LegacyContext", "LegacyTruncated"]

# --- the legacy extension's context manager ------------------------------------------------------


def max_allowed_size(context_window: int) -> float:
    """``getContextWindowInfo``'s ``maxAllowedSize``: the usage at which the legacy extension
    truncates, by its window table (64k: W - 27k; 128k: W - 30k; 200k: W - 40k; any other:
    the larger of W - 40k and 80% of W)."""
    check_int("context_window", context_window, 1)
    table = {64_000: 27_000, 128_000: 30_000, 200_000: 40_000}
    if context_window in table:
        return float(context_window - table[context_window])
    return float(max(context_window - 40_000, context_window * 0.8))


@dataclass(frozen=True)
class LegacyTruncated:
    """Event: the previous request used ``tokens`` (>= ``max_allowed``). ``saved`` is the
    share of characters the duplicate-file-read notices saved (0 when there were none);
    below 30%, ``keep`` (``"half"`` or ``"quarter"``) of the rest was kept and everything
    from the third message through ``deleted_to`` (an index into the provider's alternating
    messages) is now left out."""

    tokens: int
    max_allowed: float
    saved: float
    truncated: bool
    keep: str
    deleted_to: int | None


@dataclass(frozen=True, kw_only=True)
class LegacyContextManager:
    """The Cline VS Code extension's programmatic context management (in use until 2026-06):
    once the previous request's usage reaches ``max_allowed`` (the window table's
    ``maxAllowedSize``), replace every earlier read of a file read again by a notice; when
    that saves under 30% of the characters, keep the first exchange and delete half (a
    quarter when the usage is over twice ``max_allowed``: three quarters) of the rest.

    Source: cline/cline@4619bb78^ ``apps/vscode/src/core/context/context-management/``
    ``ContextManager.ts`` (``getNewContextMessagesAndMetadata``, ``getNextTruncationRange``,
    ``getAndAlterTruncatedMessages``, the file-read optimization) and
    ``context-window-utils.ts``. The extension's messages alternate strictly (a user message
    holds the tool results and any text that follows them): here consecutive `UserInput`
    and `ToolResults` are one of its user messages, consecutive replies one assistant
    message, and its indices count those groups. Duplicate reads are recognized in Cline's own
    formats only — a tool result or text starting ``[read_file for '<path>'] Result:``,
    ``<final_file_content path="…">`` in a ``write_to_file`` / ``replace_in_file`` result,
    ``<file_content path="…">`` mentions in the first three blocks of a user message — so on
    other agents' sessions only truncation happens.
    """

    context_window: int = 128_000
    """The model's context window (``model.info.contextWindow``; 128,000 when unknown)."""
    max_allowed: int | None = None
    """The usage (input plus output tokens of the previous request) at which it acts;
    ``None``: the window table's ``maxAllowedSize``."""

    def __post_init__(self) -> None:
        check_int("context_window", self.context_window, 1)
        if self.max_allowed is not None:
            check_int("max_allowed", self.max_allowed, 1)

    @property
    def threshold(self) -> float:
        """The usage at which the extension acts."""
        return max_allowed_size(self.context_window) if self.max_allowed is None else float(self.max_allowed)

    def context(self, base_system: str, *, on_event: Callable[[object], None] | None = None) -> "LegacyContext":
        """A fresh lifecycle context with this configuration."""
        return LegacyContext(base_system, self, on_event=on_event)


_READ_HEADER = re.compile(r"^\[([^\s]+) for '([^']+)'\] Result:")
_FILE_MENTION = re.compile(r'<file_content path="([^"]*)">([\s\S]*?)</file_content>')
_FINAL_FILE = re.compile(r'(<final_file_content path="[^"]*">)[\s\S]*?(</final_file_content>)')
_MENTION, _READ, _ALTER = 4, 2, 3  # EditType.FILE_MENTION, READ_FILE_TOOL, ALTER_FILE_TOOL


def _mentions(text: str) -> tuple[tuple[str, str], ...]:
    """The ``<file_content>`` mentions in ``text``: (path, whole match) each."""
    if '<file_content path="' not in text:  # most texts: found in C without the pattern's scan
        return ()
    return tuple((m.group(1), m.group(0)) for m in _FILE_MENTION.finditer(text))


class _Block(NamedTuple):
    """A text the extension can rewrite: a tool result's content or a user text. (A tuple of
    numbers: a truncation's memo keeps one per block, which the garbage collector then skips.)"""

    message: int  # index into the transcript
    result: int | None  # index into the results, None for a user text or a reply's text


class LegacyContext(TurnLifecycle):
    """`LegacyContextManager` in Harpe's lifecycle.

    The stored transcript only grows; what is sent is the first two provider messages, the
    messages after the deleted range, and the rewrites made so far (duplicate-read notices,
    the truncation notice in place of the first reply's text). After a truncation the
    results that answered deleted calls are dropped from the first message after the cut,
    and a reply whose calls lost their results gets ``"result missing"`` for each, as
    ``ensureToolResultsFollowToolUse`` does — also when that message held nothing else and
    is the last: Cline still sends it, emptied, and answers the first reply's calls in it.
    Reports `LegacyTruncated` whenever the usage reached the threshold.
    """

    def __init__(self, base_system: str, config: LegacyContextManager, *,
                 on_event: Callable[[object], None] | None = None) -> None:
        super().__init__(base_system)
        if not isinstance(config, LegacyContextManager):
            raise StrategyError(f"config must be a LegacyContextManager, got {config!r}")
        self._events = EventHub(on_event)
        self.config = config
        self._groups: list[list[int]] = []  # the provider's messages, as transcript indices
        self._block_memo: dict[int, tuple[int, tuple[_Block, ...]]] = {}  # group -> (its size then, `_blocks`)
        self._last_assistant = False  # the last group is replies
        self._read_memo: dict[int, tuple] = {}  # group -> (its size then, `_reads_in` with nothing replaced)
        self._deleted: int | None = None  # the deleted range is [2, _deleted]
        # group -> (edit type, {block -> [text, ...]}, mention metadata (replaced, all))
        self._updates: dict[int, tuple[int, dict[int, list[str]], tuple[list[str], list[str]] | None]] = {}
        self._noticed = False  # the truncation notice is set (on group 1, block 0)
        self._reported: int | None = None  # the previous request's usage, until acted on
        self._observed: int | None = None  # the usage reported for the last request made (None: none yet)
        self._rendering: list[Message] = []  # the last request's messages
        self._rendered_to = 0  # transcript messages the current rendering holds
        self._dirty = True  # the rendering must be rebuilt
        self._marked_state: tuple = (None, {}, False)

    @property
    def limit(self) -> Limit:
        """The threshold, as a reactive high-water mark (the request that crosses it goes out)."""
        return Limit(tokens=math.floor(self.config.threshold), kind="high_water")

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every event to ``sink``."""
        self._events.subscribe(sink)

    def _mark_turn(self) -> None:
        # a rewrite replaces `_updates`, never changes it: the dict itself is the turn start's
        self._marked_state = (self._deleted, self._updates, self._noticed)

    def _added(self, message: Message) -> None:
        self._group(len(self._transcript), message)

    def _group(self, k: int, message: Message) -> None:
        """Puts transcript message ``k`` in its provider message."""
        assistant = isinstance(message, AssistantMessage)
        if self._groups and self._last_assistant == assistant:
            self._groups[-1].append(k)
        else:
            self._groups.append([k])
            self._last_assistant = assistant

    def _restored(self) -> None:
        self._deleted, self._updates, self._noticed = self._marked_state
        # the next check reads the previous request's usage: the aborted turn's last request,
        # which may have had no reply (then there is none, as a failed request records none)
        self._reported = self._observed
        self._groups = []
        self._block_memo = {}
        self._read_memo = {}
        for k, m in enumerate(self._transcript):
            self._group(k, m)
        self._dirty = True

    def observe(self, usage: Usage) -> None:
        # tokensIn + tokensOut + cacheWrites + cacheReads: Cline's tokensIn leaves the cache
        # out, ours is the whole input
        self._reported = self._observed = usage.input_tokens + usage.output_tokens

    # -- blocks --------------------------------------------------------------------------

    def _blocks(self, g: int) -> Sequence[_Block]:
        """The text blocks of provider message ``g`` a rewrite can address, in order (read
        them, never change them: they are kept until the group grows or a turn is aborted,
        as every truncation reads every provider message after the cut again)."""
        members = self._groups[g]
        hit = self._block_memo.get(g)
        if hit is not None and hit[0] == len(members):
            return hit[1]
        out: list[_Block] = []
        for k in members:
            m = self._transcript[k]
            if isinstance(m, ToolResults):
                out.extend(_Block(k, j) for j in range(len(m.results)))
            elif isinstance(m, UserInput):
                out.append(_Block(k, None))
        blocks = tuple(out)  # of tuples of numbers: the garbage collector stops tracking them
        self._block_memo[g] = (len(members), blocks)
        return blocks

    def _text(self, block: _Block) -> str:
        m = self._transcript[block.message]
        if isinstance(m, ToolResults):
            return m.results[block.result].content  # type: ignore[index]
        return m.text  # type: ignore[union-attr]

    def _start(self) -> int:
        return 2 if self._deleted is None else self._deleted + 1

    # -- the file-read optimization ------------------------------------------------------

    def _duplicates(self, start: int) -> tuple[dict[str, list[tuple]], dict[int, list[str]]]:
        """``getPossibleDuplicateFileReads``: every read of each file, from provider message
        ``start`` on, with what it would be replaced by."""
        reads: dict[str, list[tuple]] = {}
        mention_paths: dict[int, list[str]] = {}
        for g in range(start, len(self._groups)):
            if g in self._updates:
                kind, blocks, meta = self._updates[g]
                if kind != _MENTION:
                    continue
                replaced: list[str] = []
                if meta is not None:
                    if len(meta[0]) == len(meta[1]):
                        continue  # every file mentioned here is replaced already
                    replaced = meta[0]
                found, paths = self._reads_in(g, replaced)
            else:
                # a provider message no rewrite touched reads the same until it grows: every
                # truncation scans every message after the cut again
                size = len(self._groups[g])
                hit = self._read_memo.get(g)
                if hit is not None and hit[0] == size:
                    found, paths = hit[1], hit[2]
                else:
                    found, paths = self._reads_in(g, [])
                    # tuples of strings and numbers, which the garbage collector stops tracking
                    found, paths = tuple(found), None if paths is None else tuple(paths)
                    self._read_memo[g] = (size, found, paths)
            for path, read in found:
                reads.setdefault(path, []).append(read)
            if paths is not None:
                mention_paths[g] = list(paths)
        return reads, mention_paths

    def _reads_in(self, g: int, replaced: list[str]) -> tuple[list[tuple[str, tuple]], list[str] | None]:
        """The file reads provider message ``g`` holds, in order (path, what `_duplicates`
        lists for it), and the paths it mentions (None when it mentions none); ``replaced``:
        the mentions replaced already."""
        out: list[tuple[str, tuple]] = []
        mention_paths: list[str] | None = None
        # one provider message of getPossibleDuplicateFileReads' loop
        if isinstance(self._transcript[self._groups[g][0]], AssistantMessage):
            return out, None
        blocks_ = self._blocks(g)
        if not blocks_:
            return out, None
        first = self._text(blocks_[0])
        if not first:
            return out, None
        found = False
        header = _READ_HEADER.match(first)
        if header:
            tool, path = header.group(1), header.group(2)
            index = 0 if len(first) > len(header.group(0)) else 1
            if tool == "read_file":
                # the old format holds the content in the next block, the new one after the header
                text = DUPLICATE_FILE_READ_NOTICE if index == 1 \
                    else header.group(0) + "\n" + DUPLICATE_FILE_READ_NOTICE
                out.append((path, (g, _READ, "", text, index)))
                found = True
            elif tool in ("replace_in_file", "write_to_file"):
                is_result = blocks_[0].result is not None
                text = first if is_result or index == 0 else (
                    self._text(blocks_[1]) if index == 1 and len(blocks_) > 1 and blocks_[1].result is None
                    else None)
                if text:
                    if _FINAL_FILE.search(text):
                        new = _FINAL_FILE.sub(lambda m: f"{m.group(1)} {DUPLICATE_FILE_READ_NOTICE} {m.group(2)}",
                                              text, count=1)
                        out.append((path, (g, _ALTER, "", new, index)))
                    found = True
        if not found:
            for index in (0, 1, 2):
                if index >= len(blocks_):
                    break
                text = self._text(blocks_[index])
                matches = _mentions(text) if text else ()
                if not matches:
                    continue
                paths = []
                for path, whole in matches:
                    paths.append(path)
                    if path not in replaced:
                        new = f'<file_content path="{path}">{DUPLICATE_FILE_READ_NOTICE}</file_content>'
                        out.append((path, (g, _MENTION, whole, new, index)))
                mention_paths = paths
                break
        return out, mention_paths

    def _optimize(self, start: int) -> tuple[bool, set[int]]:
        """``applyFileReadContextHistoryUpdates``: every read of a file but its latest
        replaced. Returns whether anything changed and which provider messages."""
        reads, mention_paths = self._duplicates(start)
        updates = {g: (kind, {b: list(v) for b, v in blocks.items()}, meta)
                   for g, (kind, blocks, meta) in self._updates.items()}
        changed: set[int] = set()
        mentions: dict[int, list] = {}  # group -> [text, files replaced, block]
        for path, found in reads.items():
            if len(found) < 2:
                continue
            for g, kind, search, new, block in found[:-1]:
                changed.add(g)
                if kind == _MENTION:
                    if g not in mentions:
                        base, before = "", []
                        if g in updates and updates[g][1].get(block):
                            base = updates[g][1][block][-1]
                            before = list(updates[g][2][0]) if updates[g][2] else []
                        if not base:
                            blocks_ = self._blocks(g)
                            base = self._text(blocks_[block]) if block < len(blocks_) else ""
                        mentions[g] = [base, before, block]
                    if search and mentions[g][0]:
                        mentions[g][0] = mentions[g][0].replace(search, new, 1)
                        mentions[g][1].append(path)
                else:
                    entry = updates.setdefault(g, (kind, {}, None))
                    entry[1].setdefault(block, []).append(new)
        for g, (text, replaced, block) in mentions.items():
            if g not in mention_paths:
                continue
            entry = updates.setdefault(g, (_MENTION, {}, None))
            entry[1].setdefault(block, []).append(text)
            updates[g] = (entry[0], entry[1], (replaced, list(mention_paths[g])))
        if changed:
            self._updates = updates
        return bool(changed), changed

    def _saved(self, changed: set[int]) -> float:
        """``calculateContextOptimizationMetrics``: the share of characters just saved, over
        the first two provider messages and those after the deleted range."""
        total = saved = 0
        for g in [0, 1, *range(self._start(), len(self._groups))]:
            if g >= len(self._groups):
                continue
            members = self._groups[g]
            if isinstance(self._transcript[members[0]], AssistantMessage):
                for j, k in enumerate(members):
                    text = self._transcript[k].text  # type: ignore[union-attr]
                    # the truncation notice is an earlier rewrite of the first reply's text
                    total += len(LEGACY_TRUNCATION_NOTICE) if g == 1 and j == 0 and self._noticed and text \
                        else len(text)
                continue
            entry = self._updates.get(g)
            for b, block in enumerate(self._blocks(g)):
                text = self._text(block)
                if not text:
                    continue
                versions = entry[1].get(b) if entry else None
                if versions and g in changed:
                    original = len(versions[-2]) if len(versions) > 1 else len(text)
                    saved += original - len(versions[-1])
                    total += original
                elif versions:
                    total += len(versions[-1])
                else:
                    total += len(text)
        return saved / total if total else 0.0

    # -- the request ---------------------------------------------------------------------

    def compact(self) -> Compaction:
        acted = False
        reported = self._reported
        self._observed = None  # this request's usage, once observed
        if reported is not None and reported >= self.config.threshold:
            self._reported = None  # acted on: the next check waits for the next request's usage
            acted = True
            keep = "quarter" if reported / 2 > self.config.threshold else "half"
            changed, where = self._optimize(self._start())
            saved = self._saved(where) if changed else 0.0
            truncate = not changed or saved < 0.3
            if truncate:
                self._noticed = True
                self._deleted = self._next_range(keep)
            self._dirty = True
            self._events.emit(LegacyTruncated(reported, self.config.threshold, saved, truncate, keep, self._deleted))
        if self._dirty or self._needs_rebuild():
            before = self._rendering
            self._rendering = self._render()
            self._rendered_to = len(self._transcript)
            self._dirty = False
            continues = len(self._rendering) >= len(before) and all(a is b for a, b in zip(before, self._rendering))
            # an abort takes back what a turn appended: a new turn starts from the new rendering
            # anyway, so only a rewrite of what the provider holds is a compaction
            return self._send(deferred(self._base_system, self._rendering),
                              acted or (not continues and not self._aborted), None)
        # (an abort always rebuilds: what is extended here was sent after no abort)
        self._rendering.extend(self._transcript[self._rendered_to:])
        self._rendered_to = len(self._transcript)
        return self._send(deferred(self._base_system, self._rendering), False, ())

    def _needs_rebuild(self) -> bool:
        """Whether what was appended since the last request falls where the rendering
        rewrites (the first message after the cut, whose tool results are dropped)."""
        if self._deleted is None:
            return False
        cut = self._deleted + 1
        # a group's members are in transcript order: its last is its newest
        return cut < len(self._groups) and self._groups[cut][-1] >= self._rendered_to

    def _next_range(self, keep: str) -> int:
        """``getNextTruncationRange``: the new inclusive end of the deleted range."""
        n = len(self._groups)
        start = self._start()
        if keep == "half":
            remove = (n - start) // 4 * 2
        else:
            remove = math.floor((n - start) * 3 / 4 / 2) * 2
        end = start + remove - 1
        if 0 <= end < n and not isinstance(self._transcript[self._groups[end][0]], AssistantMessage):
            end -= 1
        return end

    def _render(self) -> list[Message]:
        """``getAndAlterTruncatedMessages``."""
        groups = list(range(min(2, len(self._groups)))) + list(range(self._start(), len(self._groups)))
        out: list[Message] = []
        cut = self._start() if self._start() > 2 else None
        emptied = False  # the message after the cut held only results: Cline sends it empty
        for g in groups:
            rewrites = self._updates.get(g, (0, {}, None))[1]
            members = self._groups[g]
            if isinstance(self._transcript[members[0]], AssistantMessage):
                for j, k in enumerate(members):
                    m = self._transcript[k]
                    assert isinstance(m, AssistantMessage)
                    if j == 0 and g == 1 and self._noticed and m.text:
                        m = AssistantMessage(LEGACY_TRUNCATION_NOTICE, m.calls, m.pinned)
                    out.append(m)
                continue
            blocks_ = self._blocks(g)
            texts = {(b.message, b.result): rewrites[i][-1] for i, b in enumerate(blocks_) if rewrites.get(i)}
            if g == cut:
                emptied = all(isinstance(self._transcript[k], ToolResults) for k in members)
            for k in members:
                m = self._transcript[k]
                if isinstance(m, ToolResults):
                    if g == cut:
                        continue  # the results of deleted calls are dropped with them
                    if texts and any((k, j) in texts for j in range(len(m.results))):
                        m = ToolResults(tuple(ToolResult(r.id, texts.get((k, j), r.content), r.attachments, r.success)
                                              for j, r in enumerate(m.results)), m.pinned)
                elif isinstance(m, UserInput) and (k, None) in texts:
                    m = UserInput(texts[(k, None)], m.attachments, m.pinned)
                out.append(m)
        # left out, an emptied message changes nothing when a reply follows it (the calls
        # before it are answered all the same); at the end it is where they are answered
        return _results_follow_calls(out, emptied_last=emptied and cut == len(self._groups) - 1)

    def __repr__(self) -> str:
        return f"LegacyContext(threshold={self.config.threshold:,.0f}, {len(self._transcript)} messages)"


def _results_follow_calls(messages: list[Message], *, emptied_last: bool = False) -> list[Message]:
    """``ensureToolResultsFollowToolUse``: every reply's calls answered right after it, in
    call order; a call whose result is gone gets ``"result missing"``. ``emptied_last``:
    Cline's list goes on after ``messages`` with the first user message after the cut,
    sent empty because it held only tool results (`LegacyContext._render` leaves it out):
    a final reply's calls are answered in it. A reply that is truly last is left alone, as
    Cline's loop stops before the last message."""
    out: list[Message] = []
    k = 0
    while k < len(messages):
        m = messages[k]
        out.append(m)
        k += 1
        if not isinstance(m, AssistantMessage) or not m.calls:
            continue
        ids = [c.id for c in m.calls]
        if k >= len(messages):
            if emptied_last:
                out.append(ToolResults(tuple(ToolResult(i, "result missing") for i in ids)))
            continue
        nxt = messages[k]
        if isinstance(nxt, ToolResults) and [r.id for r in nxt.results] == ids:
            continue
        have = {r.id: r for r in nxt.results} if isinstance(nxt, ToolResults) else {}
        # Cline also keeps results answering no call of this reply after these; the
        # transcript never holds such (results follow their calls), so none are kept
        out.append(ToolResults(tuple(have.get(i) or ToolResult(i, "result missing") for i in ids)))
        if isinstance(nxt, ToolResults):
            k += 1
    return out
