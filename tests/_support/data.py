"""Where the tests' data lives, and the bundled conversations."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository: ``harpe_lab/``, ``tests/``, ``docs/``, ``notebooks/``, ``benchmarks/``."""
DATA = ROOT / "tests" / "data"
"""The hand-written fixtures (``tests/data``)."""
SHARED = ROOT.parent / "shared"
"""``../shared``: the real recordings and the Harpe format's documents, when present."""
REAL_DATA = SHARED / "data" / "real"
"""``../shared/data/real``: tests that read it skip when it is absent (the ``real_data`` fixture)."""


def bundled_conversations() -> dict:
    """Every conversation of the bundled datasets, labelled ``name[k]``."""
    from harpe_lab.datasets import list_datasets, load

    out = {}
    for name in list_datasets():
        loaded = load(name)
        for k, c in enumerate(loaded if isinstance(loaded, list) else [loaded]):
            out[f"{name}[{k}]"] = c
    return out
