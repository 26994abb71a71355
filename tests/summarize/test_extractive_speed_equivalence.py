"""The `ExtractiveDistiller`'s fast fold writes what the full one writes.

A fold normally takes the previous summary's artifacts from what the distiller remembers
writing (not by reading the summary back) and ranks only the ones mentioned again (the
others keep their order). ``_fold_any`` is the fold it replaced, kept for summaries it
did not write: read the previous summary back, put every artifact's last mention in one
dict and sort them all. These tests hold the two to the same summary, request by request,
in replays of the summarizing presets and on random folds built to hit the edges: the
omitted-artifacts case, the greedy fill after the first artifact that does not fit, ties
between mentions at the same place, values that need the backtick's stand-in, and
previous summaries the distiller did not write.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from harpe_lab import ApproxCounter
from harpe_lab.datasets import synthesize
from harpe_lab.errors import BudgetError
from harpe_lab.messages import Rendered, UserInput
from harpe_lab.presets import PRESETS, make_strategy
from harpe_lab.replay import replay
from harpe_lab.summarize import ExtractiveDistiller
from harpe_lab.summarize._extractive import _WRITTEN, _parse_own_summary, _parse_request
from tests._support.data import bundled_conversations

DISTILLING = tuple(name for name, preset in PRESETS.items() if "distill" in preset.needs)


def _full(distill: ExtractiveDistiller, request: Rendered) -> str:
    """The summary by the full fold: the previous summary read back, everything sorted."""
    prior, segments = _parse_request(request)
    return distill._fold_any(prior, segments)


class _Checked:
    """A distiller that writes each summary both ways, asserts they agree, and checks that
    what it remembers of a summary is what reading it back finds (and indexes it right)."""

    def __init__(self, distill: ExtractiveDistiller) -> None:
        self.distill = distill
        self.calls = 0

    def __call__(self, request: Rendered) -> str:
        want = _full(self.distill, request)
        got = self.distill(request)
        assert got == want, f"call {self.calls}: the fast fold wrote a different summary"
        if got in _WRITTEN:
            kept, notes, index, base, cost = _WRITTEN[got]
            assert _parse_own_summary(got) == (kept, notes)
            assert {c: {v: i - base[c] for v, i in ix.items()} for c, ix in index.items()} == {
                c: {v: i for i, v in enumerate(vs)} for c, vs in kept.items()
            }
            assert cost == {c: [len(v) + 4 for v in vs] for c, vs in kept.items()}
        self.calls += 1
        return got


def _conversations() -> dict[str, Any]:
    return {**bundled_conversations(), "synthetic(120, tools)": synthesize(120, seed=7, tool_rate=0.6, result_chars=1200)}


CONVERSATIONS = _conversations()


@pytest.mark.parametrize("preset", DISTILLING)
@pytest.mark.parametrize("max_chars", [300, 1500, 4000])
def test_replays_fold_the_same_either_way(preset: str, max_chars: int) -> None:
    counter = ApproxCounter()
    calls = 0
    for conversation in CONVERSATIONS.values():
        checked = _Checked(ExtractiveDistiller(max_chars=max_chars))
        factory = make_strategy(preset, budget=3000, counter=counter, system=conversation.system, distill=checked)
        try:
            replay(conversation, factory, counter=counter, name=preset)
        except BudgetError:  # a budget too small for the conversation: the folds so far count
            pass
        calls += checked.calls
    assert calls > 0


_NAMES = ["src/app.py", "tests/test_app.py", "README.md", "parse_config", "HTTPError", "load_data",
          "https://example.com/a", "3.2 s", "512 MB", "v1.2.3", "make_thing", "os.path.join", "x_y",
          "config.toml", "a_b_c_d_e_f_g", "Makefile", "fooBar", "QUUX_LIMIT", "docs/guide.md", "12 tests"]  # fmt: skip


def _excerpt(rng: random.Random, words: list[str]) -> str:
    lines = []
    for _ in range(rng.randint(1, 6)):
        speaker = rng.choice(["User: ", "Agent: ", "[tool result] "])
        picks = rng.sample(words, rng.randint(0, 6))
        text = " ".join(rng.choice(["See", "Then run", "Fixed", "We decided to use", "`pytest -q`", "and"]) + " " + p
                        for p in picks)  # fmt: skip
        lines.append(speaker + (text + "." if text else "Okay."))
    return "\n".join(lines)


def _request(prior: str, body: str) -> Rendered:
    if prior:
        text = f"Current summary:\n\n{prior}\n\nNew conversation excerpt to fold into it:\n\n{body}"
    else:
        text = f"Conversation excerpt to summarize:\n\n{body}"
    return Rendered("", (UserInput(text + "\nReply with the updated summary."),))


@pytest.mark.parametrize("seed", range(12))
def test_random_folds_agree(seed: int) -> None:
    rng = random.Random(seed)
    # many distinct values, so the block overflows and the greedy fill runs
    words = _NAMES + [f"mod_{rng.randrange(10**6)}_{'x' * rng.randint(0, 30)}" for _ in range(120)]
    words += [f"pkg/{rng.randrange(1000)}/{'y' * rng.randint(1, 12)}.py" for _ in range(40)]
    for max_chars in (200, 700, 2500):
        checked = _Checked(ExtractiveDistiller(max_chars=max_chars, max_sentence_chars=rng.choice([20, 80, 240])))
        prior = ""
        for _ in range(30):
            prior = checked(_request(prior, _excerpt(rng, words)))


@pytest.mark.parametrize(
    "prior",
    [
        "Files: `a.py`, `a.py`\nIdentifiers: `foo_bar`",  # a value listed twice: not one it wrote
        "Identifiers: `foo_bar`, `x\u02cby`\nNotes:\n- User: keep `x\u02cby` as is.",  # the stand-in
        "Files: `a.py`\nFiles: `b.py`\n(3 older artifacts omitted)\nsome loose line\n- Tool: a_b failed.",
        "just prose, no artifacts at all",
    ],
)
def test_previous_summaries_it_did_not_write(prior: str) -> None:
    for max_chars in (40, 120, 4000):
        distill = ExtractiveDistiller(max_chars=max_chars)
        request = _request(prior, "User: Run `pytest -q` on src/a.py and fix foo_bar.\nAgent: Done, x_y_z too.")
        assert distill(request) == _full(distill, request)


def test_a_value_with_a_backtick_is_read_back_not_remembered() -> None:
    distill = ExtractiveDistiller(max_chars=4000)
    first = distill(_request("", "User: Use the `x`y` flag.\nAgent: Sure: run ``make all`` then check a_b."))
    second = _request(first, "User: Also c_d.")
    assert distill(second) == _full(distill, second)
