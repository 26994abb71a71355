"""A static HTML report: comparison tables and plots for a set of replays.

Every piece of transcript-derived text goes through ``html.escape``; tables are rendered
with pandas' escaping on. The report is one ``index.html`` with PNG files beside it.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

__all__ = ["ReportSection", "write_report"]

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; color: #222; }
h1 { font-size: 1.6rem; } h2 { margin-top: 2.5rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; font-size: 0.85rem; margin: 1rem 0; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.5rem; text-align: right; }
th { background: #f4f4f4; } td:first-child, th:first-child { text-align: left; }
img { max-width: 100%; border: 1px solid #eee; margin: 0.5rem 0; }
.note { color: #555; font-size: 0.9rem; }
.scroll { overflow-x: auto; }
"""


@dataclass
class ReportSection:
    """One dataset's part of the report."""

    title: str
    description: str = ""
    tables: list[tuple[str, Any]] = field(default_factory=list)
    """(caption, DataFrame) pairs."""
    images: list[tuple[str, str]] = field(default_factory=list)
    """(caption, file name relative to the report folder) pairs."""


def write_report(folder: str | Path, title: str, sections: Sequence[ReportSection], *, intro: str = "") -> Path:
    """Write ``index.html`` into ``folder`` and return its path."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
    ]
    if intro:
        parts.append(f"<p class='note'>{html.escape(intro)}</p>")
    for s in sections:
        parts.append(f"<h2>{html.escape(s.title)}</h2>")
        if s.description:
            parts.append(f"<p class='note'>{html.escape(s.description)}</p>")
        for caption, frame in s.tables:
            parts.append(f"<h3>{html.escape(caption)}</h3>")
            table = frame.to_html(escape=True, index=False, float_format=lambda x: f"{x:,.4g}", border=0)
            parts.append(f"<div class='scroll'>{table}</div>")
        for caption, name in s.images:
            parts.append(
                f"<figure><img src='{html.escape(name, quote=True)}' alt='{html.escape(caption, quote=True)}'>"
                f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            )
    parts.append("</body></html>")
    path = folder / "index.html"
    path.write_text("\n".join(parts), encoding="utf-8")
    return path
