"""A folder of agent sessions at a glance: one row per session — agent, model, window, calls,
peak input, recorded cost with and without caching, cache hits, and every recorded compaction.

`scan_sessions` walks the paths it is given (files or folders; with none, each agent's
standard location that exists here, as `harpe_lab.importers.discover` finds them) and yields
one `SessionRow` per session, or one `Skipped` per file it could not read — empty, binary,
unreadable, a link loop, not a session — so one bad file never stops the rest.

Claude Code and Codex sessions are read as a stream of their usage records only (one line
at a time, never the whole file, ~10× faster than importing them); every other format goes
through `harpe_lab.importers.load_any` and `harpe_lab.recorded.recorded`. The two roads give
the same figures (tested on the real sessions). A session still being written — its last
line cut short — is read up to its last whole line, with a note.

Costs are priced per call by the model that made it, from litellm's offline table; a call's
cost with caching prices fresh input, cache reads and cache writes at their own prices.
``calls`` counts model calls with recorded usage; ``at_call`` of a compaction is the number of
such calls before it, so the call after it is number ``at_call`` (from 0).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

__all__ = ["SessionRow", "SessionCompaction", "Skipped", "scan_sessions", "scan_session", "sessions_frame",
           "compactions_frame", "SESSION_COLUMNS"]

SESSION_COLUMNS = (
    "path", "agent", "version", "model", "models", "window", "calls", "peak_input_tokens", "input_tokens",
    "cache_read_tokens", "cache_write_tokens", "output_tokens", "cost_usd", "cost_usd_cached", "cache_hit_share",
    "compactions", "note",
)  # fmt: skip
_SUFFIXES = (".jsonl", ".json")
# the record types a Claude Code session starts with (each carries a session or message id)
_CLAUDE_CODE_FIRST = frozenset({"summary", "user", "assistant", "system", "file-history-snapshot", "progress",
                                "queue-operation"})
_AIDER = ".aider.chat.history.md"


@dataclass(frozen=True, kw_only=True)
class SessionCompaction:
    """A compaction the agent recorded: after ``at_call`` calls, from ``tokens_before`` (the
    agent's own figure when it wrote one, else the last call's input) to ``tokens_after`` (the
    next call's input)."""

    at_call: int
    trigger: str
    tokens_before: int | None
    tokens_after: int | None
    window: int | None

    @property
    def share_of_window(self) -> float:
        return self.tokens_before / self.window if self.tokens_before and self.window else math.nan


@dataclass(frozen=True, kw_only=True)
class SessionRow:
    """One session's recorded figures (see the module doc)."""

    path: str
    agent: str
    version: str = ""
    models: Mapping[str, int] = field(default_factory=dict)
    window: int | None = None
    calls: int = 0
    peak_input_tokens: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = math.nan
    cost_usd_cached: float = math.nan
    compactions: tuple[SessionCompaction, ...] = ()
    note: str = ""

    @property
    def model(self) -> str:
        return next(iter(self.models), "")

    @property
    def cache_hit_share(self) -> float:
        return self.cache_read_tokens / self.input_tokens if self.input_tokens else math.nan


@dataclass(frozen=True)
class Skipped:
    """A file that is not a readable session, and why."""

    path: str
    reason: str


class _Tally:
    """Token sums per model, priced once the session is read (its cache TTL known)."""

    def __init__(self) -> None:
        self.by_model: dict[str, list[int]] = {}  # model -> [calls, input, read, write, output]
        self.calls = self.peak = 0
        self.inputs: list[int] = []  # every call's input, for the sizes around a compaction

    def add(self, model: str, tokens: int, read: int, write: int, output: int) -> None:
        t = self.by_model.setdefault(model, [0, 0, 0, 0, 0])
        t[0] += 1
        t[1] += tokens
        t[2] += read
        t[3] += write
        t[4] += output
        self.calls += 1
        self.peak = max(self.peak, tokens)
        self.inputs.append(tokens)

    def row(self, path: str, agent: str, version: str, window: int | None, ttl: float | None,
            points: list[tuple[int, str, int | None]], note: str) -> SessionRow:
        from .models import CallPricing

        models = {m: t[0] for m, t in sorted(self.by_model.items(), key=lambda kv: -kv[1][0]) if m}
        pricing = CallPricing.for_models(models, cache_ttl=ttl) if models else None
        cost = cost_cached = math.nan
        if pricing is not None:
            cost = cost_cached = 0.0
            main = pricing.default.model
            for m, (_, tokens, read, write, out) in self.by_model.items():
                plain, cached = pricing.for_call(m or main).billed(tokens, read, write, out)
                cost += plain
                cost_cached += cached
        sums = [sum(t[k] for t in self.by_model.values()) for k in range(1, 5)]
        compactions = tuple(
            SessionCompaction(at_call=at, trigger=trigger,
                              tokens_before=before or (self.inputs[at - 1] if at else None),
                              tokens_after=self.inputs[at] if at < len(self.inputs) else None, window=window)
            for at, trigger, before in points)
        return SessionRow(path=path, agent=agent, version=version, models=models, window=window, calls=self.calls,
                          peak_input_tokens=self.peak, input_tokens=sums[0], cache_read_tokens=sums[1],
                          cache_write_tokens=sums[2], output_tokens=sums[3], cost_usd=cost,
                          cost_usd_cached=cost_cached, compactions=compactions, note=note)


def _records(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, record)`` per line; a cut last line ends the stream with ``(n, None)``."""
    import orjson

    with open(path, "rb") as f:
        lineno = 0
        for lineno, raw in enumerate(f, 1):
            if not raw.strip():
                continue
            try:
                yield lineno, orjson.loads(raw)
            except orjson.JSONDecodeError:
                if not raw.endswith(b"\n"):
                    yield lineno, None  # still being written
                    return
                raise _NotASession(f"line {lineno}: not JSON") from None


class _NotASession(Exception):
    pass


def _claude_code(path: Path, first: Mapping[str, Any]) -> SessionRow:
    from .recorded import CLAUDE_CODE_WINDOW

    tally = _Tally()
    points: list[tuple[int, str, int | None]] = []
    ttl_writes = {300: 0, 3600: 0}
    version, note = "", ""
    current, usage, model = None, None, ""  # the API message being read, its last usage
    main = None
    for lineno, rec in _records(path):
        if rec is None:
            note = f"line {lineno} cut short (still being written?): read up to line {lineno - 1}"
            break
        if not isinstance(rec, Mapping):
            continue
        kind = rec.get("type")
        if main is None and kind in ("user", "assistant"):
            main = rec.get("isSidechain") is False or rec.get("isSidechain") is None
        if kind in ("user", "assistant") and main and rec.get("isSidechain"):
            continue
        version = version or str(rec.get("version") or "")
        if kind == "assistant" and isinstance(rec.get("message"), Mapping):
            msg = rec["message"]
            mid = msg.get("id") or rec.get("uuid") or lineno
            if mid != current:
                if usage is not None:
                    tally.add(*usage)
                current, usage = mid, None
            raw = msg.get("usage")
            if isinstance(raw, Mapping):
                model = str(msg.get("model") or "")
                fresh = int(raw.get("input_tokens") or 0)
                write = int(raw.get("cache_creation_input_tokens") or 0)
                read = int(raw.get("cache_read_input_tokens") or 0)
                if fresh + write + read > 0 and model != "<synthetic>":
                    usage = (model, fresh + write + read, read, write, int(raw.get("output_tokens") or 0))
                split = raw.get("cache_creation")
                if isinstance(split, Mapping):
                    ttl_writes[300] += bool(split.get("ephemeral_5m_input_tokens"))
                    ttl_writes[3600] += bool(split.get("ephemeral_1h_input_tokens"))
        elif kind == "system" and rec.get("subtype") == "compact_boundary":
            if usage is not None:
                tally.add(*usage)
                current, usage = None, None
            meta = rec.get("compactMetadata") if isinstance(rec.get("compactMetadata"), Mapping) else {}
            pre = meta.get("preTokens")
            points.append((tally.calls, str(meta.get("trigger", "")), int(pre) if isinstance(pre, (int, float)) else None))
    if usage is not None:
        tally.add(*usage)
    ttl = max(ttl_writes, key=ttl_writes.__getitem__) if any(ttl_writes.values()) else None
    return tally.row(str(path), "claude_code", version, CLAUDE_CODE_WINDOW, ttl, points, note)


def _codex(path: Path, first: Mapping[str, Any]) -> SessionRow:
    tally = _Tally()
    points: list[tuple[int, str, int | None]] = []
    version, note, model, window = "", "", "", None
    last_total: Any = None
    for lineno, rec in _records(path):
        if rec is None:
            note = f"line {lineno} cut short (still being written?): read up to line {lineno - 1}"
            break
        payload = rec.get("payload") if isinstance(rec, Mapping) else None
        if not isinstance(payload, Mapping):
            continue
        kind = rec.get("type")
        if kind == "session_meta":
            version = str(payload.get("cli_version") or version)
        elif kind == "turn_context":
            model = str(payload.get("model") or model)
        elif kind == "compacted":
            points.append((tally.calls, "", tally.inputs[-1] if tally.inputs else None))
        elif kind == "event_msg":
            info = payload.get("info")
            stated = (info.get("model_context_window") if isinstance(info, Mapping) else None) \
                or payload.get("model_context_window")
            if isinstance(stated, int) and stated > 0:
                window = stated
            if payload.get("type") == "token_count" and isinstance(info, Mapping):
                last, total = info.get("last_token_usage"), info.get("total_token_usage")
                if isinstance(last, Mapping) and total != last_total:
                    last_total = total
                    tokens = int(last.get("input_tokens") or 0)
                    if tokens > 0:
                        tally.add(model, tokens, int(last.get("cached_input_tokens") or 0), 0,
                                  int(last.get("output_tokens") or 0))
    if window is None and model:
        from .errors import HarpeLabError
        from .models import model_input_limit

        try:
            window = model_input_limit(model)
        except HarpeLabError:
            window = None
    return tally.row(str(path), "codex", version, window, None, points, note)


def _imported(path: Path) -> SessionRow:
    from .importers import load_any
    from .recorded import recorded

    conv = load_any(path)
    rec = recorded(conv)
    c = rec.calls
    tally = _Tally()
    for row in c.itertuples(index=False):
        tally.add(row.model, int(row.input_tokens), int(row.cache_read_tokens), int(row.cache_write_tokens),
                  int(row.output_tokens))
    at = {r: k for k, r in enumerate(c["request"])}
    points = [(next((k for r, k in at.items() if r >= p.request), len(at)), p.trigger, p.tokens_before)
              for p in rec.compactions]
    version = str(conv.metadata.get("version") or "")
    return tally.row(str(path), str(conv.metadata.get("format", "")), version, rec.window,
                     conv.metadata.get("cache_ttl"), points, "")


def scan_session(path: Any) -> SessionRow:
    """One session file's row; raises `OSError` or `harpe_lab.errors.HarpeLabError` when the
    file is not a readable session."""
    import orjson

    from .errors import ImportFormatError

    p = Path(path)
    with open(p, "rb") as f:
        head = f.read(65536)
    if not head.strip():
        raise ImportFormatError(f"{p}: empty file")
    if b"\0" in head:
        raise ImportFormatError(f"{p}: a binary file, not a session")
    line = head.split(b"\n", 1)[0]
    try:
        first = orjson.loads(line)
    except orjson.JSONDecodeError:
        first = None
    try:
        if isinstance(first, Mapping) and first.get("type") in ("session_meta", "response_item", "event_msg",
                                                                 "turn_context") and "payload" in first:
            return _codex(p, first)
        if isinstance(first, Mapping) and first.get("type") in _CLAUDE_CODE_FIRST and (
                "sessionId" in first or "messageId" in first or "leafUuid" in first):
            return _claude_code(p, first)
    except _NotASession as err:
        raise ImportFormatError(f"{p}: {err}") from None
    return _imported(p)


def _candidates(paths: Iterable[Any], subagents: bool) -> Iterator[Path]:
    for given in paths:
        root = Path(given).expanduser()
        if not root.is_dir():
            yield root
            continue
        for folder, dirs, files in os.walk(root, followlinks=False):
            dirs.sort()
            if not subagents and Path(folder).name == "subagents":
                dirs[:] = []
                continue
            for name in sorted(files):
                if name.endswith(_SUFFIXES) or name == _AIDER:
                    yield Path(folder) / name


def _default_paths() -> list[Path]:
    from .importers import discover

    return [s.path for s in discover()]


def _why(err: BaseException) -> str:
    import errno

    if isinstance(err, OSError) and err.errno == errno.ELOOP:
        return "a symbolic link loop"
    if isinstance(err, PermissionError):
        return "cannot be read (permission denied)"
    if isinstance(err, IsADirectoryError):
        return "a folder"
    if isinstance(err, FileNotFoundError):
        return "no such file"
    if isinstance(err, UnicodeDecodeError):
        return "not text (binary?)"
    text = " ".join(str(err).split())
    if "not a transcript in any format" in text:
        return "not a session in any format harpe_lab reads (`harpe-lab replay PATH --traceback` shows why)"
    path = str(getattr(err, "filename", "") or "")
    return text.split(": ", 1)[1] if ": " in text and (not path or text.startswith(path)) else text


def scan_sessions(paths: Iterable[Any] = (), *, subagents: bool = False,
                  progress: bool | None = None) -> Iterator[SessionRow | Skipped]:
    """A `SessionRow` per readable session under ``paths`` (files or folders; none: the
    standard locations), a `Skipped` per file that is not one. Folders are walked for
    ``*.jsonl``, ``*.json`` and Aider's ``.aider.chat.history.md``; Claude Code's subagent
    folders only with ``subagents``. Streams: one session in memory at a time. ``progress``
    shows a bar on stderr (``None``: when stderr is a terminal)."""
    from tqdm.auto import tqdm

    from .errors import HarpeLabError

    paths = list(paths)
    files = _candidates(paths, subagents) if paths else iter(_default_paths())
    bar = tqdm(files, desc="sessions", unit=" files", disable=None if progress is None else not progress,
               leave=False)
    for path in bar:
        try:
            yield scan_session(path)
        except (HarpeLabError, OSError, UnicodeDecodeError, ValueError) as err:
            yield Skipped(str(path), _why(err))


_COMPACTION_COLUMNS = ("path", "agent", "version", "at_call", "trigger", "tokens_before", "tokens_after", "window",
                       "share_of_window")


def sessions_frame(rows: Iterable[SessionRow]) -> Any:
    """One row per session (`SESSION_COLUMNS`); its compactions, one record each, in
    ``frame.attrs["compactions"]`` (plain records: a frame's attrs hold no frame, which
    pandas would compare on every merge) — `compactions_frame` makes them a frame."""
    import pandas as pd

    rows = list(rows)
    frame = pd.DataFrame([{
        "path": r.path, "agent": r.agent, "version": r.version, "model": r.model,
        "models": ", ".join(f"{m} ×{n}" for m, n in r.models.items()), "window": r.window, "calls": r.calls,
        "peak_input_tokens": r.peak_input_tokens, "input_tokens": r.input_tokens,
        "cache_read_tokens": r.cache_read_tokens, "cache_write_tokens": r.cache_write_tokens,
        "output_tokens": r.output_tokens, "cost_usd": r.cost_usd, "cost_usd_cached": r.cost_usd_cached,
        "cache_hit_share": r.cache_hit_share, "compactions": len(r.compactions), "note": r.note,
    } for r in rows], columns=list(SESSION_COLUMNS))
    frame.attrs["compactions"] = [{
        "path": r.path, "agent": r.agent, "version": r.version, "at_call": c.at_call, "trigger": c.trigger,
        "tokens_before": c.tokens_before, "tokens_after": c.tokens_after, "window": c.window,
        "share_of_window": None if math.isnan(c.share_of_window) else c.share_of_window,
    } for r in rows for c in r.compactions]
    return frame


def compactions_frame(frame: Any) -> Any:
    """The compactions of a `sessions_frame`, one row each: ``path, agent, version,
    at_call`` (the calls recorded before it), ``trigger, tokens_before, tokens_after, window,
    share_of_window``."""
    import pandas as pd

    records = frame.attrs.get("compactions")
    if records is None:
        from .errors import HarpeLabError

        raise HarpeLabError("`frame` must come from harpe_lab.sessions.sessions_frame (its compactions are in "
                            "frame.attrs['compactions'])")
    return pd.DataFrame(records, columns=list(_COMPACTION_COLUMNS)).astype({"share_of_window": float})
