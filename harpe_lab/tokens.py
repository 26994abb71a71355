"""Token counters: how many tokens a text, a message or a whole request costs.

Every counter memoizes ``count(text)``, so counting the same text twice costs one encode,
and caches each message's count, so a replay pays one encode per distinct message. A replay
hands its counter the whole recording before the first request (`_Counter.prime`): the
same encodes, run back to back instead of spread among the replay's own work, cost less.
`TiktokenCounter` also counts a long text by the lines it shares with texts counted before
(a running summary, the request that quotes it), exactly: see `TiktokenCounter`.

`count_rendered` prices a whole chat request the way OpenAI documents it for chat models:

* each message costs ``MESSAGE_OVERHEAD`` (3) tokens plus its content;
* each tool call costs ``CALL_OVERHEAD`` (3) plus its name and its JSON arguments;
* each tool result is its own ``tool`` message (3 + content);
* the system prompt, when not empty, is one more message;
* tool schemas cost their JSON text;
* every request ends with ``REPLY_PRIMING`` (3) tokens that prime the reply.

It is an estimate of what a provider reports; `harpe_lab.calibrate.calibrate` fits a factor
against recorded usage when a journal has it.

A recording sanitized before it was shared holds a marker where each text was
(`harpe_lab._text.REDACTED`, ``[REDACTED_TEXT len=3021 sha=…]``: the text is gone, its length
is kept). Every counter weighs a marker as the text it replaced, that many characters at
``CHARS_PER_TOKEN`` (4) a token, rather than as the few tokens of the marker itself: so the
requests of a sanitized session grow as the recorded ones did, and the calibration fits the
rest (on the shared Codex rollouts, the median error of the fitted counter fell from 21–35%
to 1–7%). A strategy's own measure of a text (Harpe's and Cline's characters, Codex's bytes,
Gemini's units) weighs it the same way (`harpe_lab._text.hidden_chars`).

No counter ever touches the network: `TiktokenCounter` loads its BPE file from the copy
litellm's wheel ships (or from ``TIKTOKEN_CACHE_DIR``), through tiktoken's own loader
and hash check, without importing litellm.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import os
import re
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, ClassVar, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from ._text import CHARS_PER_TOKEN, hidden_chars, unredacted
from .errors import HarpeLabError
from .messages import AssistantMessage, Message, Rendered, ToolResults, UserInput

__all__ = [
    "TokenCounter",
    "ApproxCounter",
    "BytesCounter",
    "TiktokenCounter",
    "LitellmCounter",
    "ScaledCounter",
    "counter_for_model",
    "MESSAGE_OVERHEAD",
    "CALL_OVERHEAD",
    "REPLY_PRIMING",
    "Primes",
    "prices_by_parts",
    "text_price",
]

MESSAGE_OVERHEAD = 3
CALL_OVERHEAD = 3
REPLY_PRIMING = 3
_CACHE_SIZE = 1 << 17


def _stand_in(lengths: list[int]) -> int:
    """Tokens of the texts a sanitizer removed, of these lengths in characters (`unredacted`),
    each rounded up as a text of its own: a text counted whole or line by line weighs the same."""
    return sum(-(-n // CHARS_PER_TOKEN) for n in lengths)


@runtime_checkable
class TokenCounter(Protocol):
    """What a replay needs from a counter. A counter that memoizes may also be `Primes`:
    the replay counts the whole recording with it once, before the first request."""

    name: str

    def count(self, text: str) -> int: ...

    def count_message(self, message: Message) -> int: ...

    def count_rendered(self, rendered: Rendered, tools: Sequence[Mapping[str, Any]] = ()) -> int: ...


@runtime_checkable
class Primes(Protocol):
    """A counter that memoizes and can count a recording's messages up front (`_Counter.prime`);
    the replay engine checks for it once, where it is given the counter."""

    def prime(self, messages: Sequence[Message]) -> None: ...


# the methods that price a request from its parts: overriding one may break the running sum
_REQUEST_PRICING = ("count_rendered", "count_messages", "count_system", "count_tools")


class _Counter:
    """Shared memoization and chat-overhead accounting; subclasses define ``_encode_len``."""

    name = "counter"

    additive: ClassVar[bool] = True
    """Declared: a request costs ``count_rendered(Rendered(system, ()), tools)`` plus each of
    its messages' ``count_message``, so its price is a running sum the engine and the
    strategies keep (`prices_by_parts`). A subclass that prices a request otherwise and does
    not say so is taken as not additive (`__init_subclass__`)."""

    texts_priced_alone: ClassVar[bool] = True
    """Declared: a message costs a fixed part plus its texts' `count_lines` (`text_price`). A
    subclass that prices messages its own way and does not say so is taken as not."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "additive" not in cls.__dict__ and any(name in cls.__dict__ for name in _REQUEST_PRICING):
            cls.additive = False
        if "texts_priced_alone" not in cls.__dict__ and any(
                name in cls.__dict__ for name in ("count_message", "_message_tokens")):
            cls.texts_priced_alone = False

    def __init__(self) -> None:
        self._reset_caches()

    def _reset_caches(self) -> None:
        self._count = lru_cache(maxsize=_CACHE_SIZE)(self._encode_len)
        # id(message) -> (message, tokens); the message is held so its id stays unique.
        self._messages: dict[int, tuple[Message, int]] = {}
        self._lock = threading.Lock()

    def _encode_len(self, text: str) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def count(self, text: str) -> int:
        """Tokens in ``text`` (memoized)."""
        return self._count(text)

    def count_lines(self, text: str) -> int:
        """``count(text)``, for a text made of lines counted before (a message's lines taken
        again, as LangChain's partial trim takes them): a counter that can count a text line
        by line, exactly, does (`TiktokenCounter`); the others count it whole."""
        return self._count(text)

    def count_message(self, message: Message) -> int:
        """Tokens one message adds to a chat request, overhead included (memoized)."""
        hit = self._messages.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        n = self._message_tokens(message)
        with self._lock:
            if len(self._messages) >= _CACHE_SIZE:
                self._messages.clear()
            self._messages[id(message)] = (message, n)
        return n

    def _message_tokens(self, message: Message) -> int:
        c = self._count
        if isinstance(message, UserInput):
            return MESSAGE_OVERHEAD + c(message.text)
        if isinstance(message, AssistantMessage):
            n = MESSAGE_OVERHEAD + c(message.text)
            for call in message.calls:
                n += CALL_OVERHEAD + c(call.name) + c(json.dumps(call.input, ensure_ascii=False))
            return n
        if isinstance(message, ToolResults):
            return sum(MESSAGE_OVERHEAD + c(r.content) for r in message.results)
        raise TypeError(f"not a harpe_lab message: {message!r}")

    def prime(self, messages: Sequence[Message]) -> None:
        """Count ``messages`` now, so that later calls find them memoized.

        The replay engine calls it with the recording before its first request. The counts
        are the same either way; what changes is the order: the encodes run back to back,
        as in the benchmarks' floor, and a 1M-token replay took 10–25% less time than with
        the same encodes spread among its requests (both the encodes and the replay's own
        Python ran slower interleaved). Skipped when the messages would not all fit the
        cache (counting them twice would cost more).
        """
        if len(messages) <= _CACHE_SIZE // 2:
            self.count_messages(messages)

    def count_system(self, system: str) -> int:
        """Tokens the system prompt adds (0 when it is empty)."""
        return MESSAGE_OVERHEAD + self._count(system) if system else 0

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens the tool schemas add."""
        return self._count(json.dumps(list(tools), ensure_ascii=False, sort_keys=True)) if tools else 0

    def count_messages(self, messages: Iterable[Message]) -> int:
        """Tokens of these messages, overhead included, without system or reply priming."""
        count = self.count_message
        if type(self).count_message is not _Counter.count_message:
            return sum(map(count, messages))
        # count_message's cache hit, inlined: windows price their whole request every call
        cache = self._messages
        total = 0
        for m in messages:
            hit = cache.get(id(m))
            total += hit[1] if hit is not None and hit[0] is m else count(m)
        return total

    def count_rendered(self, rendered: Rendered, tools: Sequence[Mapping[str, Any]] = ()) -> int:
        """Tokens of a whole request: system, messages, tool schemas and reply priming."""
        return (
            self.count_system(rendered.system)
            + self.count_messages(rendered.messages)
            + self.count_tools(tools)
            + REPLY_PRIMING
        )

    def count_written(self, rendered: Rendered) -> int:
        """Tokens of a request the replay writes whole itself (a distiller's), where
        `count_rendered` prices one of the recording's; the same here (see `ScaledCounter`)."""
        return self.count_rendered(rendered)

    def __getstate__(self) -> dict[str, Any]:
        state = {k: v for k, v in self.__dict__.items() if k not in ("_count", "_messages", "_lock")}
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset_caches()

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__getstate__() == other.__getstate__()  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return hash((type(self), self.name))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


class ApproxCounter(_Counter):
    """An estimate, not a tokenizer: ``ceil(len(text) / chars_per_token)``."""

    def __init__(self, chars_per_token: float = 4) -> None:
        if (
            not isinstance(chars_per_token, (int, float))
            or isinstance(chars_per_token, bool)
            or not math.isfinite(chars_per_token)
            or chars_per_token <= 0
        ):
            raise HarpeLabError(f"chars_per_token must be a finite number > 0, got {chars_per_token!r}")
        self.chars_per_token = chars_per_token
        self.name = f"approx/{chars_per_token}"
        super().__init__()

    def _encode_len(self, text: str) -> int:
        return math.ceil((len(text) + hidden_chars(text)) / self.chars_per_token)


class BytesCounter(_Counter):
    """Laser's estimator: ``ceil(len(text.encode("utf-8")) / 4)``."""

    name = "bytes/4"

    def _encode_len(self, text: str) -> int:
        return (len(text.encode("utf-8")) + hidden_chars(text) + 3) // 4


# --- tiktoken, offline --------------------------------------------------------------------

_BPE = {
    # name: (the URL tiktoken knows it by, its sha256)
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}
_encodings: dict[str, Any] = {}
_patterns: dict[str, str] = {}  # name -> the split pattern the encoding was built with
_encodings_lock = threading.Lock()


def _bpe_dirs() -> list[Path]:
    dirs = []
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        dirs.append(Path(os.environ["TIKTOKEN_CACHE_DIR"]))
    spec = importlib.util.find_spec("litellm")  # finds the package without importing it
    if spec is not None and spec.submodule_search_locations:
        for loc in spec.submodule_search_locations:
            dirs.append(Path(loc) / "litellm_core_utils" / "tokenizers")
    return dirs


def _load_encoding(name: str) -> Any:
    """Build a tiktoken ``Encoding`` from a local BPE file, checking its hash."""
    with _encodings_lock:
        if name in _encodings:
            return _encodings[name]
        if name not in _BPE:
            raise HarpeLabError(f"unknown encoding {name!r}; available offline: {', '.join(_BPE)}")
        import tiktoken
        import tiktoken.load
        import tiktoken_ext.openai_public as public

        url, sha256 = _BPE[name]
        key = hashlib.sha1(url.encode()).hexdigest()
        tried = [d / key for d in _bpe_dirs()]
        # The first copy whose hash matches wins: a stale file in TIKTOKEN_CACHE_DIR must not
        # hide the good one in litellm's wheel (and tiktoken would delete it and download).
        path, corrupt = None, []
        for candidate in tried:
            if candidate.is_file():
                if tiktoken.load.check_hash(candidate.read_bytes(), sha256):
                    path = candidate
                    break
                corrupt.append(candidate)
        if corrupt and path is None:
            raise HarpeLabError(
                f"{', '.join(map(str, corrupt))} does not match the sha256 {sha256} of {name}; "
                f"delete it and reinstall litellm, or replace it with the file {url}"
            )
        if path is None:
            raise HarpeLabError(
                f"the {name} BPE file is not on this machine (looked for "
                f"{', '.join(map(str, tried)) or 'litellm, which is not installed'}). "
                f"Install litellm (its wheel ships the file), or put the file {url} in a folder "
                f"named by TIKTOKEN_CACHE_DIR under the name {key}."
            )
        # Build through tiktoken's own constructor with its loader pointed at the verified
        # local copy; a cache dir that holds the file means it never reaches the network.
        previous = os.environ.get("TIKTOKEN_CACHE_DIR")
        os.environ["TIKTOKEN_CACHE_DIR"] = str(path.parent)
        try:
            spec = getattr(public, name)()
        finally:
            if previous is None:
                del os.environ["TIKTOKEN_CACHE_DIR"]
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = previous
        encoding = tiktoken.Encoding(
            spec["name"],
            pat_str=spec["pat_str"],
            mergeable_ranks=spec["mergeable_ranks"],
            special_tokens=spec["special_tokens"],
        )
        _encodings[name] = encoding
        _patterns[name] = spec["pat_str"]
        return encoding


# --- counting a long text by chunks -----------------------------------------------------
#
# tiktoken splits a text with its encoding's pattern into pieces, left to right, and encodes
# each piece on its own: a text's count is the sum of its pieces' counts. So a text cut where
# a piece boundary falls, and where each side alone splits into the same pieces, counts as the
# sum of its chunks. Two such cuts, for the two patterns below (each alternative read there):
#
# * after "\n" when the next character is printable ASCII other than space and "/". No piece
#   holds a newline followed by such a character: letter pieces may start with one non-letter
#   but never a newline; punctuation pieces end with newlines (o200k: and "/"), nothing else;
#   whitespace pieces hold whitespace only. The whitespace run ending at the cut ends with the
#   newline, so it is one piece either way (``\s*[\r\n]`` before the next character,
#   ``\s++$`` / ``\s*[\r\n]+`` at the end of the left chunk).
# * after "," when the next character is a space (used where "`, `" separates the values of
#   an artifact list): the comma ends its punctuation piece (a letter piece needs a letter
#   after it), and nothing before it looks at the space.
#
# No alternative looks behind the place it starts, so the right chunk splits as it did in the
# whole text. Any other pattern (another tiktoken's) is counted whole. tests/counting/test_tokens.py
# checks chunked counts against tiktoken's on adversarial text, and replays with and without.
_CHUNKABLE_PATTERNS = frozenset({
    # cl100k_base, as tiktoken 0.14 writes it
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    # o200k_base
    "|".join([
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]),
})  # fmt: skip
_LINE_CUT = re.compile(r"\n(?=[!-.0-~])")
_CHUNKED_FROM = 2048
"""Texts at least this long are counted by chunks: a message is usually shorter (and counted
whole, as once), a running summary and a request quoting one are not."""
_LONG_LINE = 256
"""A chunk this long with a backtick list in it is cut between the list's values too."""


def _cut(text: str, pattern: re.Pattern[str]) -> list[str]:
    """``text`` cut after each match of ``pattern`` (the pieces join back to ``text``)."""
    chunks = []
    start = 0
    for m in pattern.finditer(text):
        end = m.end()
        chunks.append(text[start:end])
        start = end
    chunks.append(text[start:])
    return chunks


class TiktokenCounter(_Counter):
    """Exact counts for OpenAI encodings (``cl100k_base``, ``o200k_base``), loaded offline.

    A text of 2,048 characters or more is counted as the sum of its chunks (its lines, and
    the values of a long backtick list), each memoized: a running summary counted as a
    reply, again in the system prompt and again inside the next distill request costs one
    encode of what changed. The chunks are cut only where tiktoken's own pre-tokenizer cuts
    (see the comment above), so the count is the whole text's, token for token.
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        if encoding not in _BPE:
            raise HarpeLabError(f"encoding must be one of {sorted(_BPE)}, but {encoding!r} was passed")
        self.name = encoding
        super().__init__()

    @property
    def encoding(self) -> Any:
        """The tiktoken ``Encoding`` (loaded on first use)."""
        return _load_encoding(self.name)

    def _reset_caches(self) -> None:
        super()._reset_caches()
        self._enc: Any = None
        self._chunkable = False
        self._chunk = lru_cache(maxsize=_CACHE_SIZE)(self._chunk_len)
        self._value = lru_cache(maxsize=_CACHE_SIZE)(self._value_len)  # a middle list value, by its text

    def _encoder(self) -> Any:
        enc = self._enc
        if enc is None:
            enc = _load_encoding(self.name)
            self._chunkable = _patterns.get(self.name) in _CHUNKABLE_PATTERNS
            self._enc = enc
        return enc

    def _encode_len(self, text: str) -> int:
        enc = self._enc
        if enc is None:
            enc = self._encoder()
        if len(text) < _CHUNKED_FROM or not self._chunkable:
            text, removed = unredacted(text)
            return len(enc.encode_ordinary(text)) + _stand_in(removed)
        return self._by_chunks(text)

    def count_lines(self, text: str) -> int:
        if self._enc is None:
            self._encoder()
        return self._by_chunks(text) if self._chunkable else self._count(text)

    def _by_chunks(self, text: str) -> int:
        return sum(map(self._chunk, _cut(text, _LINE_CUT)))

    def _chunk_len(self, chunk: str) -> int:
        if len(chunk) >= _LONG_LINE and "`, `" in chunk:
            # cut after the comma of each "`, `": the values of a list, each with its
            # backticks ("first`,", " `middle`,", ..., " `last")
            values = chunk.split("`, `")
            last = values.pop()
            return self._chunk(values[0] + "`,") + sum(map(self._value, values[1:])) + self._chunk(" `" + last)
        chunk, removed = unredacted(chunk)  # a marker is never cut: it holds no line break, no backtick
        return len(self._enc.encode_ordinary(chunk)) + _stand_in(removed)

    def _value_len(self, value: str) -> int:
        value, removed = unredacted(value)
        return len(self._enc.encode_ordinary(" `" + value + "`,")) + _stand_in(removed)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        for key in ("_enc", "_chunkable", "_chunk", "_value"):
            state.pop(key, None)
        return state


class LitellmCounter(_Counter):
    """Counts with ``litellm.token_counter`` for ``model`` (litellm is imported on first use,
    with its offline cost map)."""

    def __init__(self, model: str) -> None:
        if not isinstance(model, str) or not model:
            raise HarpeLabError(f"model must be a non-empty model name, got {model!r}")
        self.model = model
        self.name = f"litellm/{model}"
        super().__init__()

    def _encode_len(self, text: str) -> int:
        from .models import count_tokens

        text, removed = unredacted(text)
        return count_tokens(self.model, text) + _stand_in(removed)


class ScaledCounter(_Counter):
    """Another counter's counts times ``factor``, plus ``offset`` tokens once per request
    (what `harpe_lab.calibrate.calibrate` fits from recorded usage: the offset stands for
    a system prompt and tool schemas the recording did not keep).

    Additive like every counter here: a request costs its fixed part (system, tools,
    priming, offset) plus the sum of its messages' scaled counts.
    """

    additive = True

    def __init__(self, base: _Counter, factor: float, offset: float = 0.0) -> None:
        for name, value in (("factor", factor), ("offset", offset)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise HarpeLabError(f"{name} must be a finite number, got {value!r}")
        if factor <= 0:
            raise HarpeLabError(f"factor must be a finite number > 0, got {factor!r}")
        self.base = base
        self.factor = float(factor)
        self.offset = float(offset)
        self.name = f"{base.name}×{self.factor:.4f}" + (f"{self.offset:+.0f}" if self.offset else "")
        super().__init__()

    def _encode_len(self, text: str) -> int:
        return round(self.base.count(text) * self.factor)

    def _message_tokens(self, message: Message) -> int:
        return round(self.base.count_message(message) * self.factor)

    def count_system(self, system: str) -> int:
        return round(self.base.count_system(system) * self.factor)

    def count_rendered(self, rendered: Rendered, tools: Sequence[Mapping[str, Any]] = ()) -> int:
        fixed = self.base.count_rendered(Rendered(rendered.system, ()), tools) * self.factor + self.offset
        return max(0, round(fixed)) + self.count_messages(rendered.messages)

    def count_written(self, rendered: Rendered) -> int:
        """Without the offset: a request the replay writes itself (a distiller's) holds its
        whole system prompt, and none of the agent's that the recording lacked. Goose asks
        for a summary of each tool pair, a few hundred tokens; with a Codex session's 118,000
        tokens of offset added to each, its distill calls cost eight times the replay."""
        fixed = self.base.count_rendered(Rendered(rendered.system, ()), ()) * self.factor
        return max(0, round(fixed)) + self.count_messages(rendered.messages)


def counter_for_model(name: str) -> _Counter:
    """The best offline counter for a model name: ``o200k_base`` for GPT-4o, GPT-4.1, GPT-5
    and the o-series, ``cl100k_base`` for older OpenAI models and, as an approximation, for
    every other provider (use `calibrate` against recorded usage to correct it)."""
    base = name.rsplit("/", 1)[-1].lower()
    if base.startswith(("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")):
        return TiktokenCounter("o200k_base")
    return TiktokenCounter("cl100k_base")


def prices_by_parts(counter: Any) -> bool:
    """Whether ``counter`` prices a request as its fixed part (system prompt, tool schemas,
    reply priming) plus each message (harpe_lab's counters declare it, `_Counter.additive`):
    then the price of a request is a running sum over its messages, which the replay engine
    and the strategies keep."""
    return isinstance(counter, _Counter) and counter.additive


def text_price(counter: Any) -> Callable[[str], int] | None:
    """How ``counter`` prices a message's text, when a message costs a fixed part plus
    that (harpe_lab's counters that `prices_by_parts` and declare `texts_priced_alone`):
    its `count_lines`. ``None`` for any other counter."""
    if prices_by_parts(counter) and counter.texts_priced_alone:
        return counter.count_lines
    return None
