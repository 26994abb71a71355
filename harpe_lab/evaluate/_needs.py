"""Needed-next retention: what the agent needed after each request, and whether the strategy's
request still held it — on any recorded session, with no questions written by anyone.

After every request, the recorded reply shows what the model needed: its tool calls name
files, commands, patterns and URLs, its text names identifiers, paths and error codes. Each
such *reference* that occurred earlier in the session (in a message the full history held
at that request, or the system prompt) is a need. At each request of a replay a need is

* **kept** — verbatim in the request: in a message sent unchanged, or in a message the
  strategy rewrote (a trimmed or masked tool result) that still contains it;
* **only in the summary** — not in any sent message, but in the summary the context held;
* **lost** — neither: the agent would have had to guess it or fetch it again.

Under `FullContext` every need is kept by construction (it occurred in a message the full
history holds).

The extractor (`references`), in the order it looks:

==================  =====================================================================
tool-call arguments ``file_path``/``path``-like keys: the path; ``command``/``cmd``: each
                    shell word that is a path, a file name with an extension, a URL or an
                    identifier (flags, numbers and common command words left out);
                    ``pattern``/``query``/``old_string``-like keys: the value (its longest
                    line, 8–200 characters); ``url``: the URL
text                backticked spans (3–120 characters), paths (``src/app.py``,
                    ``src/app.py:42``, ``/etc/hosts``), URLs, error codes (``E501``,
                    ``TS2304``, ``ENOENT``, ``HTTP 404``), snake_case and CamelCase
                    identifiers and dotted names (``harpe_lab.replay``), numbers with a
                    unit (``250 ms``, ``8000 tokens``, ``3.5 GB``)
redacted text       a sanitizer's marker, ``[REDACTED_ARGUMENTS len=83 sha=b4e1e5f7]``, where
                    a recording was shared with its text replaced (the Codex rollouts in
                    ``shared/data/real``): the same hash is the same text, so a command run
                    again with the same arguments needs the call that ran it before
==================  =====================================================================

A reference shorter than 4 characters is left out, and so is one made of common words only.
Its precision was measured on a labelled sample of references from real sessions
(``tests/judgement/test_needs.py``, the labels kept as hashes, never the text).
"""

from __future__ import annotations

import math
import re
import shlex
import weakref
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from .._text import REDACTED as _REDACTED  # a marker is a reference like any other: the same text, the same hash
from ..messages import AssistantMessage, Message, ToolResults, UserInput

__all__ = ["Need", "references", "session_needs", "needed_next", "lost_needs", "NEEDS_COLUMNS", "LOST_COLUMNS",
           "needs_totals", "refetches"]

NEEDS_COLUMNS = ("request", "needs", "needs_kept", "needs_in_summary", "needs_lost", "needs_kept_share")
LOST_COLUMNS = ("request", "reference", "kind", "last_seen", "last_sent", "replaced_at", "how")

_PATH_KEYS = {"file_path", "path", "notebook_path", "filename", "file", "dir", "directory", "cwd", "target_file",
              "source", "destination"}
_COMMAND_KEYS = {"command", "cmd", "script"}
_PATTERN_KEYS = {"pattern", "query", "regex", "old_string", "old_str", "search", "glob", "text"}
_URL_KEYS = {"url", "uri", "href"}

_PATH = re.compile(r"(?<![\w/.-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]+(?::\d+)?|(?<![\w/.-])[\w-]+\.(?:py|js|ts|tsx|"
                   r"jsx|json|md|toml|yaml|yml|rs|go|java|rb|ex|exs|heex|css|html|sh|sql|txt|cfg|ini|lock|c|h|cpp|"
                   r"hpp|swift|kt|lua|php|vue|svelte|csv|ipynb)(?::\d+)?\b")
_URL = re.compile(r"https?://[^\s\"'<>`)\]]+")
_CODE = re.compile(r"\b(?:[A-Z]{1,4}\d{3,5}|E[A-Z]{3,9}|HTTP \d{3})\b")
_SNAKE = re.compile(r"\b[a-z][a-z0-9]*(?:_[a-z0-9]+)+\b")
_CAMEL = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+\b|\b[a-z]+(?:[A-Z][a-z0-9]+)+\b")
_DOTTED = re.compile(r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*){2,}\b")
_UNIT = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:ms|µs|ns|KB|MB|GB|TB|KiB|MiB|GiB|tokens|px|rem|fps|rps|req/s)\b")
_TICKS = re.compile(r"`([^`\n]{3,120})`")
_WORDS = re.compile(r"[A-Za-z]+")
_COMMON = frozenset("""
the and for with this that from into then than when what where which while will would should could have has had
not but are was were been being you your our their there here they them these those its use using used file files
line lines code test tests run runs running error errors value values true false none null self return import
def class function method make new old get set add all any each list dict str int bool type name names data
ls cd cat echo grep git npm pip python python3 node make bash sh rm cp mv mkdir touch find sed awk head tail
mix cargo go uv pytest yarn pnpm npx docker kubectl curl wget sudo env export source
""".split())
_SHELL_NOISE = re.compile(r"^(?:-{1,2}[\w-]+(?:=.*)?|\d+|[|&;<>()]+|\$\(.*|.*[*?]{2,}.*)$")


@dataclass(frozen=True)
class Need:
    """A reference the reply after request ``request`` made, with the earlier messages that
    held it (``holders``: message ids in order; ``"system"`` for the system prompt)."""

    request: int
    reference: str
    kind: str
    holders: tuple[str, ...]


def _keep(ref: str) -> bool:
    ref = ref.strip()
    if len(ref) < 4:
        return False
    words = [w.lower() for w in _WORDS.findall(ref)]
    return not words or not all(w in _COMMON for w in words)


def _a_path(ref: str, text: str, at: int) -> bool:
    """A path, not a phrase with a slash (``expand/collapse``) or a URL's tail: rooted
    (``/``, ``./``, ``~/``), or two folders deep, or a file name with an extension."""
    if "://" in text[max(0, at - 8):at + 3]:
        return False
    name = ref.split(":", 1)[0]
    return name.startswith(("/", "./", "../", "~/")) or name.count("/") >= 2 or "." in name.rsplit("/", 1)[-1]


def _text_refs(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    if "[REDACTED_" in text:
        out += [(m.group(0), "redacted") for m in _REDACTED.finditer(text)]
        text = _REDACTED.sub(" ", text)
    for m in _TICKS.finditer(text):
        span = m.group(1).strip()
        kind = "path" if _PATH.fullmatch(span) else "url" if _URL.fullmatch(span) else "quoted"
        out.append((span, kind))
    for kind, pattern in (("url", _URL), ("path", _PATH), ("code", _CODE), ("identifier", _DOTTED),
                          ("identifier", _SNAKE), ("identifier", _CAMEL), ("number", _UNIT)):
        for m in pattern.finditer(text):
            ref = m.group(0).rstrip(".,:;")
            if kind == "path" and not _a_path(ref, text, m.start()):
                continue
            out.append((ref, kind))
    return out


def _arg_refs(key: str, value: Any) -> list[tuple[str, str]]:
    if isinstance(value, Mapping):
        return [r for k, v in value.items() for r in _arg_refs(str(k), v)]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in _arg_refs(key, v)]
    if not isinstance(value, str) or not value.strip():
        return []
    k = key.lower()
    if k in _PATH_KEYS:
        return [(value.strip(), "path")]
    if k in _URL_KEYS:
        return [(value.strip(), "url")]
    if k in _COMMAND_KEYS:
        try:
            words = shlex.split(value, comments=False)
        except ValueError:
            words = value.split()
        out = []
        for w in words[1:] if words else []:
            if _SHELL_NOISE.match(w):
                continue
            if _URL.fullmatch(w):
                out.append((w, "url"))
            elif _PATH.fullmatch(w):
                out.append((w, "path"))
            elif _SNAKE.fullmatch(w) or _CAMEL.fullmatch(w) or _DOTTED.fullmatch(w):
                out.append((w, "identifier"))
        return out
    if k in _PATTERN_KEYS:
        line = max((x.strip() for x in value.splitlines()), key=len, default="")
        return [(line, "quoted")] if 8 <= len(line) <= 200 else []
    return _text_refs(value)


def references(message: AssistantMessage) -> list[tuple[str, str]]:
    """The references a reply makes, ``(reference, kind)``, each once, in order (see the
    module doc). Kinds: ``path``, ``url``, ``quoted``, ``code``, ``identifier``, ``number``,
    ``redacted``."""
    found = _text_refs(message.text or "")
    for call in message.calls:
        found += _arg_refs("", call.input) if isinstance(call.input, Mapping) else _text_refs(str(call.input))
    seen: dict[str, str] = {}
    for ref, kind in found:
        ref = ref.strip()
        if ref not in seen and _keep(ref):
            seen[ref] = kind
    return list(seen.items())


def _message_text(message: Message) -> str:
    if isinstance(message, UserInput):
        return message.text
    if isinstance(message, AssistantMessage):
        args = " ".join(str(c.input) for c in message.calls)
        return f"{message.text}\n{args}" if args else message.text
    if isinstance(message, ToolResults):
        return "\n".join(r.content if isinstance(r.content, str) else str(r.content) for r in message.results)
    return str(getattr(message, "text", ""))


_CACHE: dict[int, tuple[Any, tuple[Need, ...]]] = {}  # id(conversation) -> (a weak reference to it, its needs)


# the index's word boundaries: ASCII bytes other than letters, digits and "_". No byte of a
# multi-byte UTF-8 character is one, so a text's words are the same read as bytes
_NOT_WORD = bytes(b for b in range(128) if not (chr(b).isalnum() or chr(b) == "_"))
_TO_SPACE = bytes.maketrans(_NOT_WORD, b" " * len(_NOT_WORD))
# session texts' worth of searching before the word index is built: a session with few references never
# pays for it, a long one gains the same from 1 to 8 (measured)
_INDEX_AFTER = 8
_INDEX_MIN = 1 << 18  # characters: on fewer, asking the index where to start costs what it saves (measured)


class _Holders:
    """Which messages of a session contain a reference (``ref in text``, exactly), among the
    first ``upto`` messages in session order.

    One ``find`` over the texts joined end to end replaces an ``in`` per message (the setup of
    hundreds of thousands of small searches cost more than the scanning), and a reply's
    references are looked for only among the messages before it. On a long session most
    references appear first in the reply that makes them, so once the searching has cost a few
    session texts' worth, a word index tells where each reference can first occur and the search
    starts there: nothing is searched for a reference the earlier messages cannot hold. The
    index only narrows where to look; every holder is still a ``find`` hit inside its message."""

    def __init__(self, texts: list[str]) -> None:
        self._texts = texts
        self._joined: str | None = None  # built at the first reference: most requests of a small session have none
        self._starts: list[int] = []
        self._found: dict[str, tuple[int, list[int]]] = {}  # ref -> (messages searched, indices of those holding it)
        self._budget = 0.0
        self._first: dict[bytes, int] | None = None  # word -> the first message holding it
        self._words = b""  # every word once, in the order they first occur, each message opened by a marker

    def of(self, ref: str, upto: int) -> list[int]:
        searched, holding = self._found.get(ref, (0, []))
        if upto > searched:
            if not ref:  # "" is in every text, even an empty one that a join cannot tell apart
                holding = holding + list(range(searched, upto))
            else:
                holding = holding + self._search(ref, searched, upto)
            self._found[ref] = searched, holding = upto, holding
        return holding[:bisect_left(holding, upto)] if upto < searched else holding

    def _search(self, ref: str, first: int, upto: int) -> list[int]:
        joined = self._joined if self._joined is not None else self._join()
        starts, out = self._starts, []
        if self._first is None:
            self._budget -= starts[upto] - starts[first]
            if self._budget < 0:
                self._index()
        if self._first is not None:
            first = max(first, self._earliest(ref))
        at, end = starts[min(first, upto)], starts[upto]
        while True:
            hit = joined.find(ref, at, end)
            if hit < 0:
                return out
            # the last message starting at or before the hit: an empty one before it is skipped
            k = bisect_right(starts, hit, first, upto) - 1
            if hit + len(ref) <= starts[k + 1]:  # one running past its message's end: that message has no later one
                out.append(k)
            at = starts[k + 1]

    def _join(self) -> str:
        starts, at = [], 0
        for text in self._texts:
            starts.append(at)
            at += len(text)
        starts.append(at)
        self._starts, self._joined = starts, "".join(self._texts)
        self._budget = _INDEX_AFTER * at if at >= _INDEX_MIN else math.inf
        return self._joined

    def _index(self) -> None:
        parts = []
        for k, text in enumerate(self._texts):  # 0xff is never in UTF-8: a marker is no text's word
            parts += (b" \xff%d " % k, text.encode("utf-8", "surrogatepass"))
        words = dict.fromkeys(b"".join(parts).translate(_TO_SPACE).split())
        first, k = {}, -1
        for word in words:
            if word[0] == 0xFF:
                k += 1
            else:
                first[word] = k
        self._first, self._words = first, b" ".join(words) + b" "

    def _earliest(self, ref: str) -> int:
        """The first message that can hold ``ref``: the first to have every word that ``ref``
        bounds on both sides (a holder has it whole), or, when it bounds none, the first with a
        word containing its longest one (``len(texts)`` when no message can)."""
        spaced = ref.encode("utf-8", "surrogatepass").translate(_TO_SPACE)
        words = spaced.split()
        if not words:
            return 0
        whole = words[0 if spaced[:1] == b" " else 1:len(words) if spaced[-1:] == b" " else len(words) - 1]
        if whole:
            return max(self._first.get(w, len(self._texts)) for w in whole)
        hit = self._words.find(max(words, key=len))
        if hit < 0:
            return len(self._texts)
        marker = self._words.rfind(b"\xff", 0, hit)
        return int(self._words[marker + 1:self._words.index(b" ", marker)])


def _forget(key: int) -> Any:
    return lambda _: _CACHE.pop(key, None)


def session_needs(conversation: Any) -> tuple[Need, ...]:
    """Every need of the session: for each request with a recorded reply, each reference of
    that reply that occurred earlier (strategy-independent, computed once per conversation)."""
    # by identity: a Conversation is not hashable (its metadata is a mapping); replays of one
    # conversation share it, so the needs are found once
    cached = _CACHE.get(id(conversation))
    if cached is not None and cached[0]() is conversation:
        return cached[1]
    from ..recorded import _requests

    turns = conversation.turns
    ids = [list(t.ids) for t in turns]
    order = [mid for t in ids for mid in t]
    holders_of = _Holders([_message_text(m) for turn in turns for m in turn.all_messages])  # one per id of `order`
    # a request can only hold messages before its reply: the earlier turns and its turn's first
    # `held`, a prefix of `order`
    base = [0]
    for t in ids:
        base.append(base[-1] + len(t))
    # where each message sits: a request holds the earlier turns (an unanswered one by its input
    # alone) and its own turn's first `held` messages; asked per holder, not built per request
    # (a session of one long turn would make that quadratic)
    place = {mid: (t, k) for t in range(len(turns)) for k, mid in enumerate(ids[t])}
    answered = [turn.outcome == "answered" for turn in turns]
    replies = [[k for k, m in enumerate(turn.messages) if isinstance(m, AssistantMessage)] for turn in turns]
    out: list[Need] = []
    for i, (t, step, _, held) in enumerate(_requests(conversation)):
        turn = turns[t]
        if step >= len(replies[t]):
            continue
        reply = turn.messages[replies[t][step]]

        def sent(mid: str, t: int = t, held: int = held) -> bool:
            u, k = place[mid]
            return k < held if u == t else u < t and (answered[u] or k == 0)

        upto = base[t] + min(max(held, 0), len(ids[t]))
        for ref, kind in references(reply):
            holders = tuple(filter(sent, (order[k] for k in holders_of.of(ref, upto))))
            if ref in conversation.system:  # every strategy sends the system prompt
                holders = ("system", *holders)
            if holders:
                out.append(Need(i, ref, kind, holders))
    result = tuple(out)
    key = id(conversation)
    _CACHE[key] = (weakref.ref(conversation, _forget(key)), result)
    return result


def _judge(replay: Any, needs: Iterable[Need]) -> dict[int, list[tuple[Need, str]]]:
    """Each need at its request: ``kept``, ``summary`` or ``lost``."""
    by_request: dict[int, list[Need]] = {}
    for n in needs:
        by_request.setdefault(n.request, []).append(n)
    out: dict[int, list[tuple[Need, str]]] = {}
    for i, group in by_request.items():
        if i >= len(replay):
            continue
        verbatim = set(replay.sent_ids(i))
        summary = replay.summary(i) or ""
        held: str | None = None  # the request's text, the summary taken out: rewritten messages still count
        verdicts = []
        for n in group:
            if any(h in verbatim for h in n.holders):
                verdicts.append((n, "kept"))
                continue
            if held is None:
                rendered = replay.rendered(i)
                held = "\n".join([rendered.system, *(_message_text(m) for m in rendered.messages)])
                if summary:
                    held = held.replace(summary, "")
            if n.reference in held:
                verdicts.append((n, "kept"))
            elif summary and n.reference in summary:
                verdicts.append((n, "summary"))
            else:
                verdicts.append((n, "lost"))
        out[i] = verdicts
    return out


def needed_next(replay: Any) -> Any:
    """Per request with a recorded reply: its needs, how many were kept, only in the summary
    and lost, and the kept share (`NEEDS_COLUMNS`; NaN share for a request with none)."""
    import pandas as pd

    judged = _judge(replay, session_needs(replay.conversation))
    rows = []
    for i in sorted(judged):
        v = [s for _, s in judged[i]]
        n, kept = len(v), v.count("kept")
        rows.append((i, n, kept, v.count("summary"), v.count("lost"), kept / n if n else math.nan))
    return pd.DataFrame(rows, columns=list(NEEDS_COLUMNS))


def needs_totals(replay: Any) -> dict[str, float]:
    """Over the whole replay: ``needs, needs_kept, needs_in_summary, needs_lost`` and
    ``needs_kept_share`` (NaN when the session has no needs)."""
    f = needed_next(replay)
    n = int(f["needs"].sum()) if len(f) else 0
    kept = int(f["needs_kept"].sum()) if len(f) else 0
    return {"needs": n, "needs_kept": kept, "needs_in_summary": int(f["needs_in_summary"].sum()) if len(f) else 0,
            "needs_lost": int(f["needs_lost"].sum()) if len(f) else 0,
            "needs_kept_share": kept / n if n else math.nan}


def lost_needs(replay: Any) -> Any:
    """One row per lost need (`LOST_COLUMNS`): where the reference was last seen (the last
    message holding it), the last request that still sent that message verbatim, the request
    where it left (``replaced_at``) and how (``summarized`` into a summary, or ``dropped`` —
    removed or rewritten by the strategy)."""
    import pandas as pd

    judged = _judge(replay, session_needs(replay.conversation))
    rows = []
    sent_cache: dict[int, set[str]] = {}

    def sent(j: int) -> set[str]:
        if j not in sent_cache:
            sent_cache[j] = set(replay.sent_ids(j))
        return sent_cache[j]

    for i in sorted(judged):
        for need, state in judged[i]:
            if state != "lost":
                continue
            holder = next((h for h in reversed(need.holders) if h != "system"), need.holders[-1])
            last = next((j for j in range(i - 1, -1, -1) if holder in sent(j)), None)
            # never sent verbatim: it arrived and left at once (folded by the compaction it came before)
            gone = last + 1 if last is not None else next(
                (j for j in range(i + 1) if holder in replay.kept(j)), i)
            how = replay.kept(gone).get(holder, "dropped")
            rows.append((i, need.reference, need.kind, holder, last, gone, "dropped" if how == "sent" else how))
    return pd.DataFrame(rows, columns=list(LOST_COLUMNS))


_FETCH_KEYS = ("file_path", "path", "notebook_path", "command", "cmd", "pattern", "url", "query",
               "_raw")  # an importer's key for arguments that are not JSON (redacted Codex ones)


_FETCHING = re.compile(r"read|grep|glob|search|find|fetch|view|list|ls|cat|bash|shell|exec|run", re.I)
_WRITING = re.compile(r"edit|write|replace|patch|create|delete|todo", re.I)


def _fetch_key(call: Any) -> tuple[str, str] | None:
    """What a tool call fetched, for telling a repeated fetch: its name and main argument
    (``None`` for a call that writes, or has no argument to tell it by)."""
    if _WRITING.search(call.name) or not _FETCHING.search(call.name):
        return None
    args = call.input if isinstance(call.input, Mapping) else {}
    for key in _FETCH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return call.name, value.strip()
    return None


def refetches(replay: Any, *, window: int = 30) -> Any:
    """For each compaction of ``replay`` (a replay that compacts where the recording did, e.g.
    ``claude-code`` with the recorded summaries), the agent's repeated fetches in the
    ``window`` requests after it — the first call after it of each fetch (a read, a search, a
    command; not an edit) whose name and main argument it had already used before the
    compaction — and what needed-
    next said of them at that request: the fetch's own references ``lost`` from the request,
    ``summary`` only (the content gone, its name in the summary) or ``kept``. One row per
    repeated fetch: ``compaction, request, tool, argument, verdict``; and in
    ``frame.attrs["lost_fetched_again"]`` per compaction, how many of the needs called lost in
    the window were fetched again by the agent."""
    import pandas as pd

    conv = replay.conversation
    f = replay.requests
    points = [int(i) for i in f.loc[f["compacted"], "request"]]
    judged = _judge(replay, session_needs(conv))
    from ..recorded import _requests

    replies: dict[int, AssistantMessage] = {}
    for i, (t, step, _, _) in enumerate(_requests(conv)):
        msgs = [m for m in conv.turns[t].messages if isinstance(m, AssistantMessage)]
        if step < len(msgs):
            replies[i] = msgs[step]
    rows, again = [], {}
    for c in points:
        before = {k for i, m in replies.items() if i < c for k in map(_fetch_key, m.calls) if k}
        seen_after: set[tuple[str, str]] = set()  # a second fetch after the compaction repeats post-compaction work
        lost_refs: set[str] = set()
        fetched: set[str] = set()
        for i in range(c, min(c + window, len(replay))):
            verdicts = {n.reference: v for n, v in judged.get(i, [])}
            lost_refs |= {r for r, v in verdicts.items() if v == "lost"}
            for call in replies[i].calls if i in replies else ():
                key = _fetch_key(call)
                if key is None:
                    continue
                fetched.add(key[1])
                if key in before and key not in seen_after:
                    seen_after.add(key)
                    mine = [verdicts[r] for r, _ in _arg_refs("", call.input) if r in verdicts] if isinstance(
                        call.input, Mapping) else []
                    verdict = "lost" if "lost" in mine else "summary" if "summary" in mine else \
                        "kept" if mine else "not needed"
                    rows.append((c, i, key[0], key[1], verdict))
        again[c] = (sum(1 for r in lost_refs if any(r in x for x in fetched)), len(lost_refs))
    out = pd.DataFrame(rows, columns=["compaction", "request", "tool", "argument", "verdict"])
    out.attrs["lost_fetched_again"] = again
    return out
