"""The offline `ExtractiveDistiller` writes the summaries it wrote before it was made faster.

``tests/data/extractive_outputs.json`` holds, for the bundled datasets and a synthetic
tool-heavy conversation, the SHA-256 and length of every summary the distiller wrote when
it was first pinned (the texts themselves would be a megabyte): in
replays of the summarizing presets (each fold reads the previous summary back, so the
artifact ranking, the sentence selection and the "older artifacts omitted" case all run)
and on whole conversations read message by message. A speed-up must not change one
character of them; a deliberate change of the summaries regenerates the file with::

    .venv/bin/python -m tests.summarize.test_extractive_pinned --write
"""

from __future__ import annotations

import hashlib
import json
import sys
from typing import Any, Callable

import pytest

from harpe_lab import ApproxCounter
from harpe_lab.datasets import synthesize
from harpe_lab.messages import Rendered
from harpe_lab.presets import make_strategy
from harpe_lab.replay import replay
from harpe_lab.summarize import ExtractiveDistiller
from tests._support.data import DATA, bundled_conversations

PINNED = DATA / "extractive_outputs.json"
PRESETS = ("summarizing", "summarize-window")
BUDGETS = {"summarizing": (600, 1500, 4000), "summarize-window": (12_000, 24_000)}
WHOLE_MAX_CHARS = (300, 1500, 6000)


class _Recording:
    """Pass requests to a distiller and keep every summary it writes, in order."""

    def __init__(self, distill: ExtractiveDistiller) -> None:
        self.distill = distill
        self.summaries: list[str] = []

    def __call__(self, request: Rendered) -> str:
        summary = self.distill(request)
        self.summaries.append(summary)
        return summary


def _conversations() -> dict[str, Any]:
    return {**bundled_conversations(), "synthetic(60, tools)": synthesize(60, seed=3, tool_rate=0.6, result_chars=900)}


def _cases() -> dict[str, Callable[[], list[str]]]:
    counter = ApproxCounter()
    cases: dict[str, Callable[[], list[str]]] = {}
    for label, c in _conversations().items():
        for preset in PRESETS:
            for budget in BUDGETS[preset]:
                def folds(c: Any = c, preset: str = preset, budget: int = budget) -> list[str]:
                    rec = _Recording(ExtractiveDistiller(max_chars=max(400, budget)))
                    factory = make_strategy(preset, budget=budget, counter=counter, system=c.system, distill=rec)
                    replay(c, factory, counter=counter, name=preset)
                    return rec.summaries

                cases[f"{label} {preset} budget={budget}"] = folds
        for max_chars in WHOLE_MAX_CHARS:
            cases[f"{label} whole max_chars={max_chars}"] = (
                lambda c=c, m=max_chars: [ExtractiveDistiller(max_chars=m)(Rendered(c.system, tuple(c.messages())))]
            )
    return cases


CASES = _cases()


def _digest(summary: str) -> str:
    return f"{len(summary)}:{hashlib.sha256(summary.encode()).hexdigest()}"


@pytest.fixture(scope="module")
def pinned() -> dict[str, list[str]]:
    """case → ["length:sha256", …], one per summary in the order written."""
    return json.loads(PINNED.read_text(encoding="utf-8"))


def test_the_pinned_cases_are_the_ones_generated(pinned: dict[str, list[str]]) -> None:
    assert sorted(pinned) == sorted(CASES)
    # the fixture exercises what a speed-up could break: folds that read a previous
    # summary back, the sentence selection, and the omitted-artifacts case
    assert sum(len(s) for s in pinned.values()) > 300
    kinds = {"Notes:" in s for f in (CASES["support_chat[0] summarizing budget=600"],) for s in f()}
    assert kinds == {True, False}
    assert any("older artifacts omitted" in s for s in CASES["synthetic(60, tools) summarizing budget=600"]())


@pytest.mark.parametrize("case", sorted(CASES))
def test_summaries_are_unchanged(case: str, pinned: dict[str, list[str]]) -> None:
    got = [_digest(s) for s in CASES[case]()]
    want = pinned[case]
    assert len(got) == len(want)
    for k, (g, w) in enumerate(zip(got, want)):
        assert g == w, f"{case}: summary {k} differs (length:sha256 {g} != {w})"


if __name__ == "__main__":
    if sys.argv[1:] != ["--write"]:
        raise SystemExit(__doc__)
    PINNED.write_text(json.dumps({k: [_digest(s) for s in f()] for k, f in CASES.items()}, indent=1) + "\n",
                      encoding="utf-8")
    print(f"wrote {PINNED} ({PINNED.stat().st_size:,} bytes)")
