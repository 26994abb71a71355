"""Artifacts: what a good summary of an agent's work keeps verbatim — file paths, commands,
numbers with units, URLs, identifiers and decisions — found by deterministic heuristics
(pure Python, no model). Used by the extractive distiller and by the evaluation's
artifact retention."""

from __future__ import annotations

import functools
import json
import re
from typing import Any, Iterable, Mapping

from ..messages import AssistantMessage, Message, Rendered, ToolResults, UserInput

__all__ = ["ARTIFACT_CATEGORIES", "extract_artifacts", "ordered_artifacts", "content_words", "messages_text"]

ARTIFACT_CATEGORIES = ("files", "commands", "numbers", "urls", "identifiers", "decisions")
"""The keys of `extract_artifacts`: file paths, shell commands, numbers with units (and
versions, dates, amounts), URLs, code identifiers, and decision or constraint sentences."""


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


def ordered_artifacts(text: str, *, decisions: bool = True) -> dict[str, tuple[str, ...]]:
    """`extract_artifacts` in order of first appearance, each category a tuple (a fresh dict:
    the cache behind it is never exposed). ``decisions=False`` skips the decision sentences."""
    return {k: tuple(v) for k, v in _extract_ordered(text, decisions=decisions).items()}


def content_words(text: str) -> set[str]:
    """The lower-cased words of ``text`` of three letters or more, stopwords left out: what
    salience and paraphrase checks compare."""
    return {w for w in (x.lower() for x in _WORD.findall(text)) if w not in _STOPWORDS}
