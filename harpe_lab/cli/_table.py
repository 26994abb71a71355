"""Number formats and aligned tables for the command line (people read ``table``; scripts
read ``json`` and ``csv``, which carry raw numbers)."""

from __future__ import annotations

import math
from typing import Any, Sequence

__all__ = ["tokens", "share", "usd", "plain", "render"]


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def tokens(value: Any) -> str:
    """A token count as an integer with thousands separators (``12,345``); ``-`` when unknown."""
    return "-" if _missing(value) else f"{round(float(value)):,}"


def share(value: Any) -> str:
    """A fraction as a percentage with one decimal (``0.4567`` → ``45.7%``)."""
    return "-" if _missing(value) else f"{100 * float(value):.1f}%"


def usd(value: Any) -> str:
    """Dollars with four decimals (``$0.0123``); ``-`` when unknown."""
    return "-" if _missing(value) else f"${float(value):,.4f}"


def plain(value: Any) -> str:
    """Any other cell: booleans as yes/no, whole floats as integers."""
    if _missing(value):
        return "-"
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return "yes" if value else "no"
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def render(headers: Sequence[str], rows: Sequence[Sequence[str]], *, left: Sequence[int] = ()) -> str:
    """An aligned text table: numbers right-aligned, the columns in ``left`` left-aligned."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row)]

    def line(cells: Sequence[str]) -> str:
        out = [c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))]
        return "  ".join(out).rstrip()

    return "\n".join([line(headers), *(line(r) for r in rows)])
