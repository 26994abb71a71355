"""What Gemini's two contexts share: the directory their saved outputs are named in, the
checks of their arguments, where Gemini's history ends, and the edits a request reports."""

from __future__ import annotations

import math
import re
from typing import Sequence

from ...errors import StrategyError
from ...messages import AssistantMessage, Message

OUTPUT_DIR = "~/.gemini/tmp/project/tool-outputs"
"""Where the saved outputs a stand-in names live (Gemini's project temp dir, ``tool-outputs``)."""


def _fraction_of(fraction: float, window: int) -> float:
    # rounded to a millionth of a token, so that a fraction given as tokens / window lands on
    # those tokens whatever the floating point does
    return round(fraction * window, 6)


def _check_fraction(name: str, value: object, *, upper_open: bool) -> None:
    bad = isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
    if bad or not (0 < value < 1 if upper_open else 0 < value <= 1):  # type: ignore[operator]
        bound = "(0, 1)" if upper_open else "(0, 1]"
        raise StrategyError(f"{name} must be a fraction in {bound}, got {value!r}")


def _safe(part: str) -> str:
    # sanitizeFilenamePart, lower-cased as Gemini names the saved files (most parts, tool names
    # and call ids, have nothing to replace: no regex for them)
    if part.isascii() and part.replace("_", "").replace("-", "").isalnum():
        return part.lower()
    return re.sub(r"[^a-zA-Z0-9_-]", "_", part).lower()



def _check_context(base_system: object, config: object, kind: type) -> None:
    if not isinstance(base_system, str):
        raise StrategyError(f"base_system must be a str, got {type(base_system).__name__}")
    if not isinstance(config, kind):
        raise StrategyError(f"config must be a {kind.__name__}, got {config!r}")


def _history_end(transcript: Sequence[Message]) -> int:
    """Where Gemini's history ends: before the last message when it is the request's own (a
    turn's input, or the tool results being sent back), which joins the history only once sent."""
    return len(transcript) - 1 if transcript and not isinstance(transcript[-1], AssistantMessage) else len(transcript)



def _drain_edits(edits: set[int] | None) -> tuple[set[int], tuple[int, ...] | None]:
    """``(the set to collect the next request's edits in, this request's edits)``: ``None``
    when the whole list was replaced, else the replaced places in order. An empty set serves
    again (most requests change nothing), so nothing is allocated for them."""
    if edits is None:
        return set(), None
    if edits:
        return set(), tuple(sorted(edits))
    return edits, ()
