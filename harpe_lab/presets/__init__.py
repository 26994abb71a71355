"""The preset registry (see `registry`), and the presets declared by family: the seeds'
(`seeds`), the libraries' (`libraries`), the coding agents' (`agents`).

This package replaced one module, ``harpe_lab.presets``: every name it defined is re-exported
here, private builders included, so existing imports keep working."""

from .registry import (DEFAULT_BUDGET, PRESETS, STRATEGIES, Factory, Knob, Preset, _whole, get_preset,
                       make_strategy)
from ._common import _budget, _distiller, _fixed_tokens, _reserve
from .seeds import _chain, _full, _orion, _summarizing, _turn, _windowed
from .libraries import (_autogen_buffered, _autogen_head_and_tail, _autogen_token_limited, _claude_code,
                        _clearing, _events_knobs, _hybrid, _langchain_clearing, _langchain_summarization,
                        _langchain_trigger, _masking, _openhands_amortized, _openhands_masking,
                        _openhands_summarizing, _trimming)
from .agents import (_aider, _anthropic_sdk, _cline, _cline_knobs, _cline_legacy, _codex, _codex_truncation,
                     _gemini_compress, _gemini_masking, _goose, _opencode, _retention_ratio, _roo)

# the old module's _ALL: every preset, in the registry's order
_ALL = tuple(PRESETS.values())

__all__ = ["Knob", "Preset", "PRESETS", "STRATEGIES", "DEFAULT_BUDGET", "get_preset", "make_strategy"]
