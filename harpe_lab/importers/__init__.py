"""Importers: any recorded transcript → `harpe_lab.Conversation`.

``load_any(path)`` sniffs the format and reads the file; the format it chose is in
``conversation.metadata["format"]`` (and `detect_format` answers without reading further).
A file that holds many conversations (LoCoMo, LongMemEval, tau-bench, ShareGPT or OpenAI
lists, WildChat exports, Aider histories of several runs) gives one with ``index=`` (a
position or the conversation's id; default the first) and all of them with `load_all`.

======================  ==============================================  ==================
format                  what                                            reader
======================  ==============================================  ==================
``harpe``               Harpe journals, every generation                `load_harpe`
``harpe_lab``           harpe_lab's own lossless JSON                   `load_conversation`
``claude_code``         Claude Code session JSONL                       `load_claude_code`
``codex``               Codex CLI rollout JSONL                         `load_codex`
``cline``               Cline SDK ``*.messages.json`` sessions          `load_cline`
``gemini_cli``          Gemini CLI session recordings (JSONL or JSON)   `load_gemini_cli`
``aider``               Aider ``.aider.chat.history.md`` (many runs)    `load_aider`
``locomo``              LoCoMo-family dialogues with QA (many):         `load_locomo`
                        LoCoMo, REALTALK (``metadata["variant"]``)
``longmemeval``         LongMemEval questions with haystacks (many)     `load_longmemeval`
``tau_bench``           tau-bench trajectories (many)                   `load_tau_bench`
``swe_agent``           SWE-agent ``.traj``                             `load_swe_agent`
``toolbench``           ToolBench answer trees                          `load_toolbench`
``sharegpt``            ShareGPT ``conversations`` (one or many)        `load_sharegpt`
``openai``              OpenAI chat-completions messages (one or many)  `load_openai`
======================  ==============================================  ==================

A file in no known format raises `harpe_lab.errors.ImportFormatError` listing every format
tried and the first record that did not fit it. `discover` lists the Claude Code, Codex,
Gemini CLI and Cline sessions on this machine, and the Aider histories in the folders given.
Aider histories are Markdown, not JSON: `load_any` reads a file that is neither JSON nor JSON
Lines as one when it holds an Aider run header.
"""

from __future__ import annotations

from typing import Any, Mapping

from ..conversation import Conversation
from ..errors import ImportFormatError
from . import aider as _aider
from . import claude_code as _claude_code
from . import cline as _cline
from . import codex as _codex
from . import gemini_cli as _gemini_cli
from . import locomo as _locomo
from . import longmemeval as _longmemeval
from . import native as _native
from . import openai as _openai
from . import sharegpt as _sharegpt
from . import swe_agent as _swe_agent
from . import tau_bench as _tau_bench
from . import toolbench as _toolbench
from ._common import Format, Source, read_source
from .aider import load_aider, load_aider_all
from .claude_code import claude_code_subagents, load_claude_code
from .cline import load_cline
from .codex import load_codex
from .discover import SessionFile, SessionList, discover
from .gemini_cli import load_gemini_cli
from .harpe import load_harpe, to_journal
from .locomo import load_locomo, load_locomo_all
from .longmemeval import load_longmemeval, load_longmemeval_all
from .native import load_conversation, save_conversation
from .openai import from_openai_messages, load_openai, load_openai_all
from .sharegpt import load_sharegpt, load_sharegpt_all
from .swe_agent import load_swe_agent
from .tau_bench import load_tau_bench, load_tau_bench_all
from .toolbench import load_toolbench

__all__ = [
    "load_any",
    "load_all",
    "detect_format",
    "read_transcript",
    "describe_format",
    "FORMATS",
    "load_harpe",
    "to_journal",
    "load_conversation",
    "save_conversation",
    "load_claude_code",
    "claude_code_subagents",
    "load_codex",
    "load_cline",
    "load_gemini_cli",
    "load_aider",
    "load_aider_all",
    "load_locomo",
    "load_locomo_all",
    "load_longmemeval",
    "load_longmemeval_all",
    "load_tau_bench",
    "load_tau_bench_all",
    "load_swe_agent",
    "load_toolbench",
    "load_sharegpt",
    "load_sharegpt_all",
    "load_openai",
    "load_openai_all",
    "from_openai_messages",
    "discover",
    "SessionFile",
    "SessionList",
]


_HARPE_KEYS = ("event", "category")


def _sniff_harpe(src: Source) -> str | None:
    if src.records is None:
        return src.records_error or "not JSON Lines"
    for lineno, rec in src.records[:50]:
        if not isinstance(rec, Mapping):
            return f"line {lineno}: not a JSON object"
        if "time" not in rec:
            return f"line {lineno}: no 'time' key"
        if not any(k in rec for k in _HARPE_KEYS) and "role" not in rec:
            return f"line {lineno}: no 'event', 'category' or 'role' key"
    return None


def _journal(src: Source, _item: Any, _k: int) -> Conversation:
    return load_harpe(src.path)


_REGISTRY: tuple[Format, ...] = (
    _native.FORMAT,
    Format("harpe", "a Harpe journal", _sniff_harpe, _journal),
    _claude_code.FORMAT,
    _codex.FORMAT,
    _cline.FORMAT,
    _gemini_cli.FORMAT,
    _aider.FORMAT,
    _locomo.FORMAT,
    _longmemeval.FORMAT,
    _tau_bench.FORMAT,
    _swe_agent.FORMAT,
    _toolbench.FORMAT,
    _sharegpt.FORMAT,
    _openai.FORMAT,
)
"""Every format, in the order `load_any` tries them; each declared by its importer."""

FORMATS: tuple[str, ...] = tuple(f.name for f in _REGISTRY)
"""Every format `load_any` knows, in the order it tries them."""


def _choose(src: Source) -> Format:
    tried = []
    for fmt in _REGISTRY:
        reason = fmt.sniff(src)
        if reason is None:
            return fmt
        tried.append(f"  {fmt.name}: {reason}")
    raise ImportFormatError(
        f"{src.path}: not a transcript in any format harpe_lab reads. Tried, with the first record "
        "that did not fit each:\n" + "\n".join(tried) + "\nConvert it to OpenAI chat messages "
        "(a JSON list of {'role', 'content'}) or pass it to the matching load_* function to see the full error."
    )


def _format(name: str) -> Format:
    for fmt in _REGISTRY:
        if fmt.name == name:
            return fmt
    raise ValueError(f"format must be one of {FORMATS}, but {name!r} was passed")


def read_transcript(path: Any) -> Source:
    """The file at ``path`` read for sniffing and loading: `read_source` (JSON or JSON Lines),
    except that an Aider history (Markdown) is read as text. Its errors name the file."""
    if isinstance(path, Source):
        return path
    try:
        return read_source(path)
    except ImportFormatError:
        src = _aider.markdown_source(path)
        if src is None:
            raise
        return src


def describe_format(name: str) -> str:
    """What a file of format ``name`` is, for people: ``"a Claude Code session"``."""
    return _format(name).title


def detect_format(path: Any) -> str:
    """The name of the format `load_any` would read ``path`` as (see `FORMATS`)."""
    return _choose(read_transcript(path)).name


def _tagged(conversation: Conversation, name: str) -> Conversation:
    if conversation.metadata.get("format") == name:
        return conversation
    return conversation.with_(metadata={**conversation.metadata, "format": name})


def load_any(path: Any, *, index: int | str | None = None, format: str | None = None) -> Conversation:
    """Read one conversation from a transcript in any known format.

    The format is sniffed unless ``format`` names it; the chosen name is in the result's
    ``metadata["format"]``. ``index`` picks one conversation of a multi-conversation file
    (a position or the conversation's id; the first by default).
    """
    src = read_transcript(path)
    fmt = _format(format) if format is not None else _choose(src)
    return _tagged(fmt.load(src, index=index), fmt.name)


def load_all(path: Any, *, format: str | None = None) -> list[Conversation]:
    """Read every conversation of a transcript file (one item for single-conversation formats)."""
    src = read_transcript(path)
    fmt = _format(format) if format is not None else _choose(src)
    return [_tagged(c, fmt.name) for c in fmt.load_all(src)]
