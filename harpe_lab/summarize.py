"""Distillers: what turns dropped history into a summary, and the artifacts a summary must keep.

A *distiller* is a callable ``distill(Rendered) -> str | None``, the argument
`harpe_lab.context.SummarizingContext` and orion's ``SummarizeWindow`` take. Both hand it
Harpe's distill request (`harpe_lab.context.DISTILL_SYSTEM` and one user message built by
`harpe_lab.context.distill_request`); ``None`` means "no summary this time" and leaves the
history as it was.

=======================  ==================================================================
`ExtractiveDistiller`    the offline baseline: deterministic, no model, no downloads. Keeps
                         every artifact it detects (artifacts first) and the most salient
                         sentences that fit ``max_chars``.
`LLMDistiller`           a model through litellm, with an on-disk cache, token and cost
                         accounting (``last_usage``, ``calls``, `LLMDistiller.totals`).
`RecordedDistiller`      replays the summaries the recording agent wrote (for example
                         Claude Code's compaction summaries), in order.
=======================  ==================================================================

`extract_artifacts` finds what a good summary of an agent's work keeps verbatim: file paths,
commands, numbers with units, URLs, identifiers and decisions. `CachedModel` is the litellm
call with the cache, shared with `harpe_lab.evaluate`.

Importing this module imports neither litellm nor pandas; `LLMDistiller` imports litellm (via
`harpe_lab._litellm`) on its first call. See ``docs/summaries.md``.
"""

from __future__ import annotations

import functools

import json
import math
import os
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Literal, Mapping

from .context import DISTILL_SYSTEM
from .errors import ModelError, StrategyError
from .messages import AssistantMessage, Message, Rendered, ToolResults, Usage, UserInput, strip_harpe_keys, to_openai
from .models import CACHE_KEY_PARAMS, CachedModel, Completion, ModelCall, default_cache_dir

__all__ = [
    "HARPE_DISTILL_SYSTEM",
    "ARTIFACT_CATEGORIES",
    "extract_artifacts",
    "messages_text",
    "ExtractiveDistiller",
    "RecordedDistiller",
    "LLMDistiller",
    "CachedModel",
    "Completion",
    "ModelCall",
    "DistillFallback",
    "DistillFallbackWarning",
    "default_cache_dir",
    "CACHE_KEY_PARAMS",
]

HARPE_DISTILL_SYSTEM = DISTILL_SYSTEM
"""Harpe's distill system prompt (`harpe_lab.context.DISTILL_SYSTEM`), the default."""

ARTIFACT_CATEGORIES = ("files", "commands", "numbers", "urls", "identifiers", "decisions")
"""The keys of `extract_artifacts`: file paths, shell commands, numbers with units (and
versions, dates, amounts), URLs, code identifiers, and decision or constraint sentences."""


# --- artifacts ---------------------------------------------------------------------------

_TRAILING = ".,;:!?'\")]}>*"
_URL = re.compile(r"\b(?:https?|ftp|file|wss?|ssh|git)://[^\s<>\"'`|\]}]+|\bwww\.[\w-]+\.[\w.-]+[^\s<>\"'`|\]}]*")
_EXT = (
    "py|pyi|pyx|ipynb|js|mjs|cjs|jsx|ts|tsx|vue|svelte|json|jsonl|ndjson|ya?ml|toml|ini|cfg|conf|env|"
    "md|rst|txt|csv|tsv|parquet|arrow|feather|pkl|npy|npz|h5|html?|css|scss|less|sql|sh|bash|zsh|fish|ps1|bat|"
    "go|rs|java|kt|kts|scala|rb|php|c|cc|cpp|cxx|h|hh|hpp|cs|fs|swift|mm|lua|pl|jo|jl|ex|exs|erl|hs|ml|"
    "proto|graphql|xml|lock|log|tf|tfvars|gradle|mk|cmake|dockerfile|patch|diff|pdf|png|jpe?g|gif|svg|webp|"
    "zip|gz|tgz|bz2|xz|tar|whl|so|dylib|dll|exe|db|sqlite3?|wasm|bin|pem|crt|key|pub"
)
_SLASH_PATH = re.compile(r"(?<![\w:/.~@$%-])(?:[A-Za-z]:\\[^\s\"'`<>|]+|~?\.{0,2}/?[\w.@+~-]+(?:/[\w.@+~-]*)+)")
_BARE_FILE = re.compile(
    rf"(?<![\w/.@~-])(?:[\w@+-][\w.@+-]*\.(?:{_EXT})|Makefile|Dockerfile|Justfile|Procfile|Gemfile|Rakefile)(?![\w/-])",
    re.IGNORECASE,
)
_FILE_EXT = re.compile(rf"\.(?:{_EXT})$", re.IGNORECASE)
_KNOWN_COMMANDS = frozenset(
    """git gh pytest python python3 py pip pip3 pipx uv uvx poetry pdm hatch tox nox conda mamba npm npx yarn pnpm
    node deno bun tsc eslint prettier jest vitest make cmake ninja cargo rustc rustup go gcc g++ clang clang++ javac
    java mvn gradle dotnet swift xcodebuild docker docker-compose podman kubectl helm terraform ansible ls ll cd cat
    grep egrep rg ag find fd sed awk curl wget ssh scp rsync mkdir rmdir rm mv cp ln chmod chown touch echo printf
    export source bash sh zsh fish tar zip unzip gzip gunzip jq yq head tail less more wc sort uniq cut tr xargs tee
    diff patch sudo apt apt-get yum dnf brew pacman ps kill pkill top htop du df free which whereis env set unset
    ruff black isort mypy pyright flake8 pylint coverage pre-commit alembic uvicorn gunicorn flask django-admin
    jupyter ipython psql mysql sqlite3 redis-cli mongo systemctl journalctl service crontab nvm pyenv harpe-lab
    bazel buck sbt lein mix rebar3 stack cabal ghc opam dune zig nim crystal php composer ruby gem bundle rake
    rails perl lua luarocks R Rscript julia wrk ab hey k6 locust""".split()
)
_BACKTICK = re.compile(r"`([^`\n]{1,400})`")
_PROMPT_LINE = re.compile(r"(?m)^[ \t]*\$ +([^\d\s].*)$")
_FENCE = re.compile(r"```(?:bash|sh|shell|console|zsh|terminal|cmd|powershell)[ \t]*\n(.*?)```", re.DOTALL)
_UNIT_WORDS = sorted(
    """ms µs us ns s sec secs second seconds min mins minute minutes h hr hrs hour hours day days week weeks month
    months year years kb mb gb tb pb kib mib gib tib b byte bytes bit bits kbps mbps gbps token tokens ktok line
    lines loc file files test tests request requests req/s rps qps ops/s fps hz khz mhz ghz px pt em rem dpi
    °c °f c f k m x usd eur gbp jpy core cores cpu cpus gpu gpus thread threads worker workers row rows col cols
    column columns char chars character characters word words step steps epoch epochs item items user users turn
    turns message messages call calls retry retries times error errors warning warnings passed failed skipped
    xfailed errored node nodes pod pods replica replicas instance instances commit commits""".split(),
    key=len,
    reverse=True,
)
_UNITS = "|".join(re.escape(u) for u in _UNIT_WORDS)
_NUMBER = re.compile(
    rf"(?<![\w.$€£/-])-?[$€£]?\d+(?:[.,]\d+)*(?:\s?(?:%|‰|(?:{_UNITS})(?![\w/])))"
    r"|(?<![\w.])[$€£]\d+(?:[.,]\d+)*\b"
    r"|(?<![\w.])v?\d+(?:\.\d+){2,}(?:[-+][0-9A-Za-z.]+)?\b"
    r"|(?<![\w.])\d{4}-\d{2}-\d{2}(?!\d)",  # dates; a log line's time of day is noise
    re.IGNORECASE,
)
_IDENTIFIER = re.compile(
    r"(?<![\w.-])--?[a-z][\w-]+(?:=\S+)?"  # CLI flags
    r"|\$\{?[A-Z_][A-Z0-9_]*\}?"  # environment variables
    r"|\b_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*(?:\(\))?"  # snake_case, CONSTANT_CASE, __dunder__
    r"|\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b(?:\(\))?"  # camelCase
    r"|\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+\b(?:\(\))?"  # PascalCase
    r"|\b[A-Z]{2,}[a-z][A-Za-z0-9]*\b"  # HTTPError, JSONDecodeError
    r"|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?"  # dotted names: os.path.join
    r"|\b[A-Za-z_]\w*\(\)"  # calls: main()
    r"|\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b"  # hashes, commit ids
    r"|\b[A-Z][A-Z0-9]+-\d+\b"  # ticket ids: ABC-123
)
_DECISION = re.compile(
    r"\b(?:decided|decide to|decision|agreed|agree to|we(?:'ll| will) (?:use|go|keep|switch|stick|adopt|drop)"
    r"|let'?s (?:use|go with|keep|switch|stick|adopt|drop)|going with|go with|chose|chosen|opted|settled on"
    r"|instead of|switch(?:ed)? to|stick with|from now on|must(?: not)?|do not|make sure|the plan is|plan:)(?!\w)",
    re.IGNORECASE,
)
_ERRORISH = re.compile(
    r"\b(?:error|errors|failed|failure|fails|exception|traceback|cannot|can't|couldn't|not found|denied|refused|"
    r"timeout|timed out|crash|crashed|bug|broken|fix|fixed|regression|warning)\b",
    re.IGNORECASE,
)
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[`])")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]{2,}")
_WS = re.compile(r"\s+")
_STOPWORDS = frozenset(
    """the and for are but not you all any can had her was one our out has him his how its may new now old see
    two way who did get let put say she too use that with have this will your from they know want been good much
    some time very when come here just like long make many more only over such take than them well were what
    into also then there their these would could should which about after again being before below between both
    does doing down during each few further having once other same so own while why where whom yourself itself
    i'll i'm it's don't doesn't didn't that's there's let's we'll you're i've we're they're agent user tool result
    called""".split()
)


def _strip_trailing(s: str) -> str:
    return s.rstrip(_TRAILING)


def _norm_ws(s: str) -> str:
    return _WS.sub(" ", s).strip()


def _ordered_add(out: dict[str, dict[str, None]], category: str, value: str) -> None:
    if value:
        out[category].setdefault(value, None)


def _is_path(candidate: str) -> bool:
    if ":\\" in candidate[:3]:
        return True
    if not re.search(r"[A-Za-z]", candidate):
        return False  # 1/2, 2024/05/01
    parts = [p for p in candidate.split("/") if p]
    if not parts:
        return False
    if candidate.startswith(("/", "~/", "./", "../")):
        # a lone "/word" is often prose ("and/or" written as "/or"); demand some structure
        return len(parts) >= 2 or bool(_FILE_EXT.search(parts[-1])) or candidate.startswith(("~/", "./", "../"))
    if len(parts) >= 3 or _FILE_EXT.search(parts[-1]):
        return True
    return candidate.endswith("/") and len(parts) >= 1 and len(parts[0]) > 1


_BARE_COMMANDS = frozenset("make ls ll pwd pytest tox nox htop top ps df free env ruff mypy black".split())


def _backtick_command(span: str) -> bool:
    """A backtick span is a command when it runs a known program with arguments (a bare
    program name is usually just a name), a program commonly run bare, or ``./script``."""
    words = span.split()
    if not words:
        return False
    first = words[0]
    if first.startswith("./") and len(first) > 2:
        return True
    if first not in _KNOWN_COMMANDS:
        return False
    return len(words) > 1 or first in _BARE_COMMANDS


@functools.lru_cache(maxsize=8192)
def _extract_ordered(text: str, *, decisions: bool = True) -> dict[str, dict[str, None]]:
    """Artifacts in order of first appearance (dicts used as ordered sets). Cached: the
    same message texts are distilled again and again across replays of one conversation,
    so callers must not change the result."""
    out: dict[str, dict[str, None]] = {c: {} for c in ARTIFACT_CATEGORIES}
    if not text:
        return out
    # commands first, from the unmasked text: their arguments are artifacts of their own too
    for m in _PROMPT_LINE.finditer(text):
        _ordered_add(out, "commands", _norm_ws(m.group(1)))
    for m in _FENCE.finditer(text):
        for line in m.group(1).splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                _ordered_add(out, "commands", _norm_ws(line[2:] if line.startswith("$ ") else line))
    for m in _BACKTICK.finditer(text):
        inner = _norm_ws(m.group(1))
        if _backtick_command(inner):
            _ordered_add(out, "commands", inner)
    # each pass searches the text with what earlier passes found blanked out, so a URL's
    # parts are not paths too; blanking by spans avoids rebuilding a list of characters
    spans: list[tuple[int, int]] = []

    def masked() -> str:
        parts, pos = [], 0
        for start, end in sorted(spans):
            start = max(start, pos)
            if end > start:
                parts += (text[pos:start], " " * (end - start))
                pos = end
        parts.append(text[pos:])
        return "".join(parts)

    for m in _URL.finditer(text):
        url = _strip_trailing(m.group(0))
        _ordered_add(out, "urls", url)
        spans.append((m.start(), m.start() + len(url)))
    for m in _SLASH_PATH.finditer(masked() if spans else text):
        cand = _strip_trailing(m.group(0))
        if _is_path(cand):
            _ordered_add(out, "files", cand)
            spans.append((m.start(), m.start() + len(cand)))
    for m in _BARE_FILE.finditer(masked() if spans else text):
        _ordered_add(out, "files", m.group(0))
        spans.append((m.start(), m.end()))
    for m in _NUMBER.finditer(masked() if spans else text):
        _ordered_add(out, "numbers", _norm_ws(m.group(0)))
        spans.append((m.start(), m.end()))
    masked_text = masked() if spans else text
    for m in _IDENTIFIER.finditer(masked_text):
        ident = m.group(0).rstrip(".")
        if ident.endswith("()"):
            ident = ident[:-2]  # `f()` and `f` are one identifier
        if "." in ident and not ident.startswith("-") and min(len(p) for p in ident.split(".")) < 2:
            continue  # e.g., i.e., a.m.
        _ordered_add(out, "identifiers", ident)
    if decisions:
        for sentence in _sentences(text):
            if _DECISION.search(sentence):
                _ordered_add(out, "decisions", _clip(sentence, 300))
    return out


@functools.lru_cache(maxsize=8192)
def _sentences(text: str) -> tuple[str, ...]:
    """The whitespace-normalised sentences of ``text``, line by line (cached per text)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        for s in _SENTENCE_SPLIT.split(line):
            s = _norm_ws(s)
            if s:
                out.append(s)
    return tuple(out)


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1].rstrip() + "…"


def extract_artifacts(text: str) -> dict[str, set[str]]:
    """The artifacts in ``text``, by category (keys: `ARTIFACT_CATEGORIES`).

    * ``files`` — paths with a slash (``src/app.py``, ``/etc/hosts``, ``~/x``, ``C:\\x``)
      and bare file names with a known extension (``README.md``, ``Makefile``);
    * ``commands`` — ``$ …`` prompt lines, lines of ``bash``/``sh``/``console`` fenced blocks,
      and backtick spans that start with a known program (``git``, ``pytest``, ``npm``, …);
    * ``numbers`` — numbers with a unit (``512 MB``, ``3.2 s``, ``40%``, ``12 tests``),
      amounts (``$12``), versions (``1.2.3``) and dates (``2024-05-01``);
    * ``urls`` — ``scheme://…`` and ``www.…``;
    * ``identifiers`` — snake_case, camelCase, PascalCase, dotted names, ``f()`` (kept as
      ``f``), CLI flags, ``$ENV`` variables, hex hashes and ``ABC-123`` ticket ids;
    * ``decisions`` — whole sentences that state a decision or constraint ("we decided…",
      "use X instead of Y", "must not…").

    A URL's parts are not also counted as paths, nor a path's parts as identifiers. A
    command's arguments are counted in their own categories as well. Heuristic and
    deterministic; pure Python, no model.
    """
    if not isinstance(text, str):
        raise TypeError(f"extract_artifacts takes a str, got {type(text).__name__}; use messages_text() for messages")
    return {k: set(v) for k, v in _extract_ordered(text).items()}


_COMMAND_KEYS = ("command", "cmd", "script", "bash", "shell")


def _call_text(name: str, input: Any) -> str:
    lines = []
    if isinstance(input, Mapping):
        for key in _COMMAND_KEYS:
            value = input.get(key)
            if isinstance(value, str) and value.strip():
                lines.extend("$ " + ln for ln in value.strip().splitlines()[:20] if ln.strip())
    lines.append(f"[called tool {name}] {json.dumps(input, ensure_ascii=False, default=str)}")
    return "\n".join(lines)


def _segments(messages: Iterable[Message]) -> list[tuple[str, str]]:
    """(speaker, text) per message part; tool calls keep their input (commands in it become
    ``$ …`` lines, so they count as commands)."""
    out: list[tuple[str, str]] = []
    for m in messages:
        if isinstance(m, UserInput):
            out.append(("User", m.text))
            for a in m.attachments:
                out.append(("User", f"[attachment] {a.path or a.name}"))
        elif isinstance(m, AssistantMessage):
            if m.text:
                out.append(("Agent", m.text))
            for c in m.calls:
                out.append(("Call", _call_text(c.name, c.input)))
        elif isinstance(m, ToolResults):
            for r in m.results:
                out.append(("Tool", r.content))
                for a in r.attachments:
                    out.append(("Tool", f"[attachment] {a.path or a.name}"))
        else:
            raise TypeError(f"not a harpe_lab message: {m!r}")
    return out


def messages_text(source: "str | Rendered | Iterable[Message]") -> str:
    """One text for artifact extraction: a `Rendered` request's system prompt and messages,
    or messages (tool-call inputs included, commands in them as ``$ …`` lines), or a str."""
    if isinstance(source, str):
        return source
    if isinstance(source, Rendered):
        body = messages_text(source.messages)
        return source.system + "\n\n" + body if source.system else body
    return "\n\n".join(text for _, text in _segments(source))


# --- the extractive baseline -------------------------------------------------------------

_LABELS = {"files": "Files", "commands": "Commands", "numbers": "Numbers", "urls": "URLs", "identifiers": "Identifiers"}
_LABEL_OF = {v: k for k, v in _LABELS.items()}
_NOTES = "Notes:"
_EXCERPT_LEAD_FIRST = "Conversation excerpt to summarize:\n\n"
_EXCERPT_LEAD_SUMMARY = "Current summary:\n\n"
_EXCERPT_FOLD = "\n\nNew conversation excerpt to fold into it:\n\n"
_EXCERPT_TAIL = "\nReply with the updated summary."
_SPEAKER_LINE = re.compile(r"^(User|Agent|\[tool result\]) ?:? ?(.*)$")


@dataclass
class _Sentence:
    text: str
    speaker: str
    position: int
    prior: bool
    score: float = 0.0


def _parse_request(rendered: Rendered) -> tuple[str, list[tuple[str, str]]]:
    """(previous summary, [(speaker, text)]) from Harpe's distill request, or from any
    request's messages when it is not one."""
    msgs = rendered.messages
    if len(msgs) == 1 and isinstance(msgs[0], UserInput):
        text = msgs[0].text
        body = None
        prior = ""
        if text.startswith(_EXCERPT_LEAD_FIRST):
            body = text[len(_EXCERPT_LEAD_FIRST):]
        elif text.startswith(_EXCERPT_LEAD_SUMMARY) and _EXCERPT_FOLD in text:
            prior, _, body = text[len(_EXCERPT_LEAD_SUMMARY):].partition(_EXCERPT_FOLD)
        if body is not None:
            if body.endswith(_EXCERPT_TAIL):
                body = body[: -len(_EXCERPT_TAIL)]
            return prior, _excerpt_segments(body)
    return "", _segments(msgs)


def _excerpt_segments(body: str) -> list[tuple[str, str]]:
    """Split Harpe's excerpt (``User: …``, ``Agent: …``, ``[tool result] …`` lines, messages
    possibly spanning lines) back into (speaker, text)."""
    out: list[tuple[str, list[str]]] = []
    for line in body.split("\n"):
        if line.startswith("User: "):
            out.append(("User", [line[6:]]))
        elif line.startswith("Agent: [called tool ") and line.endswith("]"):
            out.append(("Call", [line[7:]]))
        elif line.startswith("Agent: "):
            out.append(("Agent", [line[7:]]))
        elif line.startswith("[tool result] "):
            out.append(("Tool", [line[14:]]))
        elif out:
            out[-1][1].append(line)
        elif line.strip():
            out.append(("Agent", [line]))
    return [(speaker, "\n".join(lines).strip("\n")) for speaker, lines in out]


def _parse_own_summary(summary: str) -> tuple[dict[str, list[str]], list[tuple[str, str]]]:
    """Artifacts and notes of a summary this distiller wrote (anything else: all notes)."""
    arts: dict[str, list[str]] = {c: [] for c in _LABELS}
    notes: list[tuple[str, str]] = []
    in_notes = False
    for line in summary.splitlines():
        head, sep, rest = line.partition(": ")
        if not in_notes and sep and head in _LABEL_OF:
            arts[_LABEL_OF[head]].extend(x.replace("\u02cb", "`") for x in re.findall(r"`([^`]*)`", rest))
        elif line.strip() == _NOTES:
            in_notes = True
        elif line.startswith("- "):
            speaker, sep2, text = line[2:].partition(": ")
            if sep2 and speaker in ("User", "Agent", "Tool"):
                notes.append((speaker, text))
            else:
                notes.append(("Agent", line[2:]))
        elif line.strip() and not line.startswith("(") and not (sep and head in _LABEL_OF):
            notes.append(("Agent", line.strip()))
    return arts, notes


@dataclass(frozen=True)
class ExtractiveDistiller:
    """The offline baseline distiller: no model, deterministic, fast.

    It reads Harpe's distill request (the previous summary, if any, and the excerpt of
    dropped messages; any other request is read message by message) and writes::

        Files: `src/app.py`, `tests/test_app.py`
        Commands: `pytest -q tests/test_app.py`
        Numbers: `3.2 s`, `512 MB`
        URLs: `https://…`
        Identifiers: `parse_config`, `HTTPError`
        Notes:
        - User: Make the importer skip blank lines but never bad ones.
        - Agent: The test failed because …

    Artifacts (`extract_artifacts`, all categories but decisions) come first and are all
    kept; the most salient sentences fill the rest of ``max_chars``, in their original
    order. Decision and constraint sentences are chosen first; then salience decides:
    words frequent in the excerpt, artifacts mentioned, error wording and the user's own
    words count up, plain tool output counts down, repeats are dropped. When the
    artifacts alone exceed ``max_chars`` (a long session folded many times), the most
    recently mentioned ones are kept and the summary says how many older ones were left
    out — the one case where an artifact is lost, so the summary stays bounded.

    It is a *baseline*: it copies, it does not understand. Compare it with `LLMDistiller`
    before concluding anything about summarisation as such.
    """

    max_chars: int = 4000
    """Target length of the summary in characters (artifacts first, then sentences)."""
    max_sentence_chars: int = 240
    """Longer sentences are clipped (with "…") so one log line cannot fill the summary."""

    def __post_init__(self) -> None:
        if not isinstance(self.max_chars, int) or isinstance(self.max_chars, bool) or self.max_chars < 1:
            raise StrategyError(f"max_chars must be an int >= 1, got {self.max_chars!r}")
        if (
            not isinstance(self.max_sentence_chars, int)
            or isinstance(self.max_sentence_chars, bool)
            or self.max_sentence_chars < 20
        ):
            raise StrategyError(f"max_sentence_chars must be an int >= 20, got {self.max_sentence_chars!r}")

    def __call__(self, rendered: Rendered) -> str:
        if not isinstance(rendered, Rendered):
            raise TypeError(f"a distiller takes a Rendered request, got {type(rendered).__name__}")
        prior, segments = _parse_request(rendered)
        prior_arts, prior_notes = _parse_own_summary(prior) if prior else ({c: [] for c in _LABELS}, [])

        # artifacts, with the place of their last mention (segment, offset): recency decides
        # which go when they do not all fit
        last_seen: dict[tuple[str, str], tuple[int, int]] = {}
        order: list[tuple[str, str]] = []

        def see(category: str, value: str, where: tuple[int, int]) -> None:
            key = (category, value)
            if key not in last_seen:
                order.append(key)
            last_seen[key] = where

        k = 0
        for category, values in prior_arts.items():
            for v in values:
                see(category, v, (-1, k))
                k += 1
        for seg, (speaker, text) in enumerate([("Agent", t) for _, t in prior_notes] + segments):
            found = _extract_ordered(text, decisions=False)
            for category in _LABELS:
                for v in found[category]:
                    see(category, v, (seg, text.rfind(v)))

        sentences: list[_Sentence] = []
        for speaker, text in prior_notes:
            sentences.append(_Sentence(_clip(text, self.max_sentence_chars), speaker, len(sentences), True))
        for speaker, text in segments:
            if speaker == "Call":
                continue  # "[called tool X] {...}": its artifacts are listed already
            for s in _sentences(text):
                sentences.append(_Sentence(_clip(s, self.max_sentence_chars), speaker, len(sentences), False))

        artifact_block, omitted = self._artifact_block(order, last_seen)
        budget = self.max_chars - len(artifact_block) - len(_NOTES) - 2
        if omitted:
            budget = 0
        notes = self._select(sentences, budget)
        parts = [artifact_block] if artifact_block else []
        if omitted:
            parts.append(f"({omitted} older artifacts omitted)")
        if notes:
            parts.append(_NOTES)
            parts.extend(f"- {s.speaker}: {s.text}" for s in notes)
        return "\n".join(parts)

    def _artifact_block(
        self, order: list[tuple[str, str]], last_seen: dict[tuple[str, str], tuple[int, int]]
    ) -> tuple[str, int]:
        def render(keys: Iterable[tuple[str, str]]) -> str:
            by: dict[str, list[str]] = {c: [] for c in _LABELS}
            for category, value in keys:
                by[category].append(value)
            return "\n".join(
                f"{_LABELS[c]}: " + ", ".join("`" + v.replace("`", "\u02cb") + "`" for v in vs)
                for c, vs in by.items()
                if vs
            )

        block = render(order)
        if len(block) <= self.max_chars:
            return block, 0
        # keep the most recently mentioned artifacts that fit, in their original order
        ranked = [k for _, _, k in sorted(((last_seen[key], -k, k) for k, key in enumerate(order)), reverse=True)]
        room = self.max_chars - 40 - 15 * len(_LABELS)
        keep: set[int] = set()
        used = 0
        for k in ranked:
            cost = len(order[k][1]) + 4
            if used + cost > room:
                continue
            keep.add(k)
            used += cost
        return render(order[k] for k in sorted(keep)), len(order) - len(keep)

    def _select(self, sentences: list[_Sentence], budget: int) -> list[_Sentence]:
        if budget <= 0 or not sentences:
            return []
        tf: Counter[str] = Counter()
        words_of: list[set[str]] = []
        for s in sentences:
            words = {w for w in (x.lower() for x in _WORD.findall(s.text)) if w not in _STOPWORDS}
            words_of.append(words)
            tf.update(words)
        seen_text: set[str] = set()
        for s, words in zip(sentences, words_of):
            key = s.text.lower()
            if key in seen_text:
                s.score = -math.inf
                continue
            seen_text.add(key)
            score = sum(math.log1p(tf[w]) for w in words) / math.sqrt(1 + len(words))
            found = _extract_ordered(s.text, decisions=False)
            score += 1.5 * min(3, sum(len(v) for v in found.values()))
            if _DECISION.search(s.text):
                score += 10.0  # decisions and constraints go first: they are what a summary is for
            error = bool(_ERRORISH.search(s.text))
            if error:
                score += 2.0
            if s.speaker == "User":
                score += 1.5
            elif s.speaker == "Tool" and not error:
                score -= 1.5
            if len(words) < 3:
                score -= 1.5
            if s.prior:
                score += 0.5
            s.score = score
        ranked = sorted((s for s in sentences if s.score > -math.inf), key=lambda s: (-s.score, s.position))
        chosen: list[_Sentence] = []
        used = 0
        for s in ranked:
            cost = len(s.text) + len(s.speaker) + 5
            if used + cost > budget:
                continue
            chosen.append(s)
            used += cost
        return sorted(chosen, key=lambda s: s.position)


# --- recorded summaries ------------------------------------------------------------------


@dataclass(frozen=True)
class DistillFallback:
    """Event: a distiller returned ``None`` instead of a summary. ``reason`` is ``"error"``
    (the model call failed and ``on_error="skip"``) or ``"exhausted"`` (a
    `RecordedDistiller` has no recorded summary left); ``detail`` says what happened."""

    reason: str
    detail: str
    distiller: str = ""


class DistillFallbackWarning(UserWarning):
    """Warned whenever a distiller falls back to ``None``, so it is never silent."""


class _Reporting:
    """Shared fallback reporting: an ``events`` list, an optional ``on_event`` handler, the
    sinks of `subscribe` (a replay's, say), and — when nobody subscribed — a
    `DistillFallbackWarning`, so a fallback is never silent."""

    on_event: Callable[[object], None] | None
    events: list[DistillFallback]
    _sinks: tuple[Callable[[object], None], ...] = ()

    def subscribe(self, sink: Callable[[object], None]) -> None:
        """Also report every fallback to ``sink`` (which then owns telling the user)."""
        self._sinks = (*self._sinks, sink)

    def _fallback(self, reason: str, detail: str) -> None:
        event = DistillFallback(reason, detail, type(self).__name__)
        self.events.append(event)
        if not self._sinks:
            warnings.warn(f"{type(self).__name__} returned None ({reason}): {detail}", DistillFallbackWarning,
                          stacklevel=3)
        if self.on_event is not None:
            self.on_event(event)
        for sink in self._sinks:
            sink(event)


class RecordedDistiller(_Reporting):
    """Return the summaries the recording agent wrote, in order, one per call.

    ``source`` is a `Conversation` (its ``compactions`` with a non-empty ``summary``, in
    turn order — e.g. Claude Code's compaction summaries) or any sequence of strings. It
    ignores the request, so a replay compares the real summaries under the replayed
    strategy's timing.

    Running out: by default (``on_exhausted="skip"``) each further call returns ``None`` —
    which `SummarizingContext` treats as "not this time", keeping the history — sets
    ``exhausted``, and reports a `DistillFallback` (``events``, ``on_event`` and a
    `DistillFallbackWarning`). ``on_exhausted="raise"`` raises `StrategyError` instead.
    """

    def __init__(
        self,
        source: Any,
        *,
        on_exhausted: Literal["skip", "raise"] = "skip",
        on_event: Callable[[object], None] | None = None,
    ) -> None:
        if on_exhausted not in ("skip", "raise"):
            raise StrategyError(f"on_exhausted must be one of ['skip', 'raise'], but {on_exhausted!r} was passed")
        compactions = getattr(source, "compactions", None)
        if compactions is not None:
            summaries = tuple(c.summary for c in sorted(compactions, key=lambda c: c.turn) if c.summary)
            if not summaries:
                raise StrategyError(
                    f"conversation {getattr(source, 'id', '?')!r} has no recorded compaction summary "
                    f"({len(compactions)} compactions, none with text); use ExtractiveDistiller or LLMDistiller"
                )
        elif isinstance(source, str):
            raise TypeError(
                "RecordedDistiller takes a Conversation or a sequence of summaries, not one str; wrap it: [text]"
            )
        else:
            summaries = tuple(source)
            bad = [k for k, s in enumerate(summaries) if not isinstance(s, str)]
            if bad:
                raise TypeError(f"summaries must be str; item {bad[0]} is {type(summaries[bad[0]]).__name__}")
        self.summaries: tuple[str, ...] = summaries
        self.on_exhausted = on_exhausted
        self.on_event = on_event
        self.events: list[DistillFallback] = []
        self.calls = 0

    @property
    def used(self) -> int:
        """How many recorded summaries have been returned."""
        return min(self.calls, len(self.summaries))

    @property
    def exhausted(self) -> bool:
        """True once a call found no recorded summary left."""
        return self.calls > len(self.summaries)

    def fresh(self) -> "RecordedDistiller":
        """An unused distiller with the same summaries, for the next replay."""
        return RecordedDistiller(self.summaries, on_exhausted=self.on_exhausted, on_event=self.on_event)

    def __call__(self, rendered: Rendered) -> str | None:
        k = self.calls
        self.calls += 1
        if k < len(self.summaries):
            return self.summaries[k]
        detail = f"call {k + 1} but only {len(self.summaries)} recorded summaries"
        if self.on_exhausted == "raise":
            raise StrategyError(
                f"RecordedDistiller ran out: {detail}; the replayed strategy compacts more often than the recording did"
            )
        self._fallback("exhausted", detail)
        return None

    def __repr__(self) -> str:
        return f"RecordedDistiller({len(self.summaries)} summaries, {self.used} used)"


class LLMDistiller(_Reporting):
    """A distiller that asks a model through litellm, with an on-disk cache.

    ``distill(request)`` sends ``system`` (Harpe's distill prompt by default; ``None`` keeps
    the request's own) and the request's messages, and returns the reply text. Arguments
    beyond the named ones go to ``litellm.completion`` (``api_base``, ``api_key``, …); only
    reply-shaping ones (`CACHE_KEY_PARAMS`) enter the cache key, and no argument value is
    ever written to disk. See `CachedModel` for the cache, ``timeout`` and ``retries``.

    After each call ``last_usage`` holds the provider's `Usage` (``None`` when it reported
    none or the call failed), which the replay engine puts in the frame's distill columns,
    and ``last_cost_usd`` its price. ``calls`` logs every call; `totals` sums them.

    Failures (HTTP errors, timeouts, malformed JSON, a blank reply): ``on_error="raise"``
    (default) raises `ModelError`; ``on_error="skip"`` returns ``None`` — the context keeps
    its history and tries again at its next compaction — and reports a `DistillFallback`
    (``events``, ``on_event``, a `DistillFallbackWarning`). It never returns an empty
    summary.
    """

    def __init__(
        self,
        model: str,
        *,
        system: str | None = HARPE_DISTILL_SYSTEM,
        max_tokens: int | None = 1024,
        temperature: float | None = 0,
        cache_dir: str | os.PathLike | None = None,
        cache: bool = True,
        timeout: float = 120.0,
        retries: int = 2,
        on_error: Literal["raise", "skip"] = "raise",
        on_event: Callable[[object], None] | None = None,
        **litellm_kwargs: Any,
    ) -> None:
        if on_error not in ("raise", "skip"):
            raise StrategyError(f"on_error must be one of ['raise', 'skip'], but {on_error!r} was passed")
        if system is not None and not isinstance(system, str):
            raise StrategyError(f"system must be a str or None, got {type(system).__name__}")
        self._settings = dict(
            system=system, max_tokens=max_tokens, temperature=temperature, cache_dir=cache_dir, cache=cache,
            timeout=timeout, retries=retries, on_error=on_error, on_event=on_event, **litellm_kwargs,
        )  # fmt: skip
        self.client = CachedModel(
            model, max_tokens=max_tokens, temperature=temperature, cache_dir=cache_dir, cache=cache,
            timeout=timeout, retries=retries, **litellm_kwargs,
        )  # fmt: skip
        self.model = model
        self.system = system
        self.on_error = on_error
        self.on_event = on_event
        self.events: list[DistillFallback] = []
        self.last_usage: Usage | None = None
        self.last_cost_usd: float = math.nan

    @property
    def calls(self) -> list[ModelCall]:
        """Every call so far (cache hits and failures included)."""
        return list(self.client.calls)

    def fresh(self) -> "LLMDistiller":
        """A distiller with the same settings and cache folder and no calls yet, for the
        next replay (the disk cache makes repeated requests free)."""
        return LLMDistiller(self.model, **self._settings)

    @property
    def cache_dir(self) -> Path:
        return self.client.cache_dir

    def totals(self) -> dict[str, float]:
        """See `CachedModel.totals`."""
        return self.client.totals()

    def messages(self, rendered: Rendered) -> list[dict[str, Any]]:
        """The OpenAI-format messages a call sends for ``rendered``."""
        if not isinstance(rendered, Rendered):
            raise TypeError(f"a distiller takes a Rendered request, got {type(rendered).__name__}")
        system = rendered.system if self.system is None else self.system
        return strip_harpe_keys(to_openai(Rendered(system, rendered.messages)))

    def _done(self, completion: Completion) -> str:
        self.last_usage = completion.usage
        self.last_cost_usd = completion.cost_usd
        return completion.text

    def _failed(self, error: ModelError) -> None:
        self.last_usage = None
        self.last_cost_usd = math.nan
        if self.on_error == "raise":
            raise error
        self._fallback("error", str(error))

    def __call__(self, rendered: Rendered) -> str | None:
        messages = self.messages(rendered)
        try:
            return self._done(self.client.complete(messages, purpose="distill"))
        except ModelError as e:
            self._failed(e)
            return None

    async def acall(self, rendered: Rendered) -> str | None:
        """`__call__`, through ``litellm.acompletion``."""
        messages = self.messages(rendered)
        try:
            return self._done(await self.client.acomplete(messages, purpose="distill"))
        except ModelError as e:
            self._failed(e)
            return None

    def __repr__(self) -> str:
        return f"LLMDistiller({self.model!r}, on_error={self.on_error!r}, {len(self.client.calls)} calls)"
