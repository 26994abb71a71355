"""Every exercise check in the notebooks fails on a missing or a wrong answer, and passes on a right one.

An exercise is three tagged code cells, in this order:

* ``exercise`` — the reader's answer: one name set to ``...`` (``cheapest_polling = ...``);
* ``solution`` — the reference solution, collapsed. It sets ``solution_<name>`` and, while
  the answer is still ``...``, answers for the reader (and says so), so the notebook runs
  from top to bottom as delivered;
* ``check`` — asserts the answer against what the notebook measured, with a message that
  says what is wrong.

For each exercise the test runs its notebook in one kernel, cell by cell, and at the check
cell runs the check

* **unanswered**: the exercise cell as delivered and the reference solution not run (a
  reader who has not answered and has not opened it): an ``AssertionError`` naming the answer;
* with each **wrong** answer of `CASES`: an ``AssertionError``;
* with the **right** answer, computed here from the notebook's own variables (not by its
  reference solution): no error, and ``correct:`` printed;
* **as delivered**: exercise cell, reference solution, check: no error, and the reference
  solution equal to the right answer.

A cell that looks like an exercise (its first line ``# Exercise …`` or ``# Check exercise …``,
or a name set to ``...``) but is not tagged fails `test_every_exercise_cell_is_tagged`, and
an exercise without a row in `CASES` fails `test_every_exercise_has_cases`.
"""

from __future__ import annotations

import functools
import json
import os
import re
from dataclasses import dataclass

import pytest

from tests._support.data import ROOT

NOTEBOOKS = ROOT / "notebooks"
NUMBERED = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))

ANSWER = re.compile(r"^(\w+) = \.\.\.\s*$", re.M)
LOOKS_LIKE = {"exercise": re.compile(r"\A#\s*exercise\b", re.I),
              "check": re.compile(r"\A#\s*check\b.*\bexercise", re.I)}
HEADING = re.compile(r"^#+ .*\bexercise\b", re.I | re.M)


@dataclass(frozen=True)
class Case:
    """How to answer one exercise: expressions evaluated in the notebook's kernel where its
    check cell stands. In ``wrong``, ``right`` is the right answer's value."""

    right: str
    wrong: tuple[str, ...]


_STRATEGIES = 'table.index.drop("full")'
_PER_ARTIFACT = 'lambda n: table.loc[n, "input_tokens_sum"] / table.loc[n, "artifact_retention"]'
CASES: dict[tuple[str, str], Case] = {
    ("01_context_basics", "biggest_turn"): Case(
        right='int(full.requests.groupby("turn")["turn_tokens"].max().idxmax())',
        wrong=("(right + 1) % len(conversation.turns)", "str(right)", "None"),
    ),
    ("01_context_basics", "second_fold"): Case(
        right='int(replays["summarizing"].events_frame().query("kind == \'ContextCompacted\'")["request"].iloc[1])',
        wrong=('int(frame.index[frame["summarized"]][0])', "right + 1", "None"),  # the first fold; one late
    ),
    ("02_tune_water_marks", "fewest_mark"): Case(
        right='min(h for h in highs if third.set_index("high_water").loc[h, "compactions"] <= 20)',
        wrong=("highs[highs.index(right) + 1]", "highs[highs.index(right) - 1]", "right + 1", "None"),
    ),
    ("02_tune_water_marks", "share_over"): Case(
        right='float((knee_frame["overshoot_tokens"] > 0).mean())',
        wrong=("right + 0.05", "int((knee_frame['overshoot_tokens'] > 0).sum())", "None"),  # a count, not a share
    ),
    ("03_compare_on_real_transcripts", "thriftiest"): Case(
        right=f"min({_STRATEGIES}, key={_PER_ARTIFACT})",
        wrong=(f"max({_STRATEGIES}, key={_PER_ARTIFACT})", '"full"', '"no-such-strategy"', "None"),
    ),
    ("03_compare_on_real_transcripts", "first_mid_turn"): Case(
        right='next((i for i in range(len(chain)) if chain.rendered(i).messages[0].role != "user"), None)',
        wrong=("0 if right is None else right + 1", "0 if right is None else None"),
    ),
    ("05_custom_strategy", "over"): Case(
        right='sum(1 for tokens in replays[0].requests["input_tokens"] if tokens > 2_000)',
        wrong=("right + 1", "right - 1", "None"),
    ),
    ("05_custom_strategy", "smallest_budget"): Case(
        right='int(max(replays[0].requests["input_tokens"]))',
        wrong=("right - 1", "right + 1", "None"),  # refused; not the smallest
    ),
    ("06_agent_sessions", "cheapest_polling"): Case(
        right='min(masked, key=lambda p: masked[p].totals()["cost_usd_cached"])',
        wrong=("[p for p in masked if p != right][0]", "[p for p in masked if p != right][1]", "3", "str(right)"),
    ),
    ("07_your_sessions", "cheapest_kept"): Case(
        right='totals[totals["budget_met"].astype(bool)].sort_values("cost_usd_cached")["strategy"].iloc[0]',
        wrong=(  # the cheapest of the others (one that broke the budget, or the runner-up), the last, none
            'min((s for s in strategies if s != right), key=lambda s: float(totals.set_index("strategy").loc[s, '
            '"cost_usd_cached"]))',
            "[s for s in strategies if s != right][-1]", '"no-such-strategy"', "None"),
    ),
}


# --- finding the exercises ----------------------------------------------------------------


@dataclass(frozen=True)
class Exercise:
    notebook: str
    name: str
    """The answer's variable."""
    cells: tuple[int, int, int]
    """The indices of its exercise, solution and check cells."""


def _source(cell: dict) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def _tags(cell: dict) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def exercises(notebook: dict, name: str = "notebook") -> list[Exercise]:
    """The notebook's exercises, by their cells' tags; a tagged cell out of order, or an
    exercise cell that does not set exactly one name to ``...``, is an error."""
    found: list[Exercise] = []
    open_: dict[str, int] = {}
    answer = ""
    for i, cell in enumerate(notebook["cells"]):
        tags = [t for t in _tags(cell) if t in ("exercise", "solution", "check")]
        if not tags:
            continue
        if cell["cell_type"] != "code" or len(tags) > 1:
            raise ValueError(f"{name} cell {i}: tagged {tags}: one of exercise, solution, check, on a code cell")
        tag = tags[0]
        expected = ["exercise", "solution", "check"][len(open_)]
        if tag != expected:
            raise ValueError(f"{name} cell {i}: tagged {tag!r} where the exercise's {expected} cell was due")
        if tag == "exercise":
            names = ANSWER.findall(_source(cell))
            if len(names) != 1:
                raise ValueError(f"{name} cell {i}: an exercise cell sets exactly one name to ..., found {names}")
            answer = names[0]
        open_[tag] = i
        if tag == "check":
            found.append(Exercise(name, answer, (open_["exercise"], open_["solution"], i)))
            open_ = {}
    if open_:
        raise ValueError(f"{name}: an exercise without its {['exercise', 'solution', 'check'][len(open_)]} cell")
    return found


def untagged(notebook: dict, name: str = "notebook") -> list[str]:
    """Cells that look like part of an exercise but carry no tag saying which."""
    problems = []
    for i, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "code":
            continue
        src, tags = _source(cell), _tags(cell)
        for tag, looks in LOOKS_LIKE.items():
            if looks.search(src) and tag not in tags:
                problems.append(f"{name} cell {i}: looks like the {tag} cell of an exercise but is not tagged {tag!r}")
        if ANSWER.search(src) and "exercise" not in tags:
            problems.append(f"{name} cell {i}: sets a name to ... but is not tagged 'exercise'")
    headings = sum(len(HEADING.findall(_source(c))) for c in notebook["cells"] if c["cell_type"] == "markdown")
    try:
        tagged = len(exercises(notebook, name))
    except ValueError as error:
        return [*problems, str(error)]
    if headings != tagged:
        problems.append(f"{name}: {headings} exercise headings but {tagged} tagged exercises")
    return problems


def _notebook(name: str) -> dict:
    return json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))


def _exercises_or_none(name: str) -> list[Exercise]:
    try:
        return exercises(_notebook(name), name)
    except ValueError:
        return []  # test_every_exercise_cell_is_tagged says why


ALL = [ex for name in NUMBERED for ex in _exercises_or_none(name)]


# --- running them -------------------------------------------------------------------------


KINDS = ("unanswered", "wrong", "right", "delivered", "reference")


@dataclass(frozen=True)
class Outcome:
    error: tuple[str, str] | None
    """``(ename, evalue)`` when the cell raised."""
    stdout: str
    answer: str = ""
    """The answer the check saw, as ``repr`` shows it."""


def _run(client, source: str, index: int) -> Outcome:
    import nbformat
    from nbclient.exceptions import CellExecutionError

    cell = nbformat.v4.new_code_cell(source)
    try:
        client.execute_cell(cell, index)
        error = None
    except CellExecutionError as exc:
        error = (exc.ename, exc.evalue)
    stdout = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    return Outcome(error, stdout)


def _value(client, expression: str, index: int) -> str:
    """``repr`` of ``expression`` in the kernel, or the error it raised."""
    out = _run(client, f"print(repr({expression}))", index)
    return out.stdout.strip() if out.error is None else f"<{out.error[0]}: {out.error[1]}>"


@functools.cache
def run_exercises(name: str) -> dict[str, dict[str, list[Outcome]]] | str:
    """Run notebook ``name`` once, trying each exercise's check as the module doc says.
    Returns ``{answer name: {kind: [Outcome, ...]}}`` for each of `KINDS`, or the error that
    stopped the notebook, as text."""
    import nbformat
    from nbclient import NotebookClient

    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    by_check = {ex.cells[2]: ex for ex in exercises(_notebook(name), name)}
    solutions = {ex.cells[1] for ex in by_check.values()}
    results: dict[str, dict[str, list[Outcome]]] = {}
    saved = dict(os.environ)
    os.environ.pop("HARPE_LAB_SESSION", None)  # the bundled data (or the shared real sessions)
    os.environ["MPLBACKEND"] = "Agg"
    try:
        client = NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}})  # fmt: skip
        with client.setup_kernel():
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code" or index in solutions:
                    continue
                ex = by_check.get(index)
                if ex is None:
                    out = _run(client, cell.source, index)
                    if out.error is not None:
                        return f"cell {index} raised {out.error[0]}: {out.error[1]}"
                    continue
                case = CASES.get((name, ex.name))
                if case is None:
                    continue  # test_every_exercise_has_cases reports it
                check, first, solution = cell.source, nb.cells[ex.cells[0]].source, nb.cells[ex.cells[1]].source
                got: dict[str, list[Outcome]] = {k: [] for k in KINDS}
                got["unanswered"].append(_run(client, check, index))
                right = _run(client, f"_exercise_right = ({case.right})", index)
                if right.error is not None:
                    return f"{ex.name}: the right answer {case.right} raised {right.error[0]}: {right.error[1]}"
                for wrong in case.wrong:
                    setting = _run(client, f"{ex.name} = (lambda right: ({wrong}))(_exercise_right)", index)
                    if setting.error is not None:
                        return f"{ex.name}: the wrong answer {wrong} raised {setting.error[0]}: {setting.error[1]}"
                    answer = _value(client, ex.name, index)
                    if _value(client, f"{ex.name} == _exercise_right", index) == "True":
                        return f"{ex.name}: the wrong answer {wrong} is the right one, {answer}"
                    out = _run(client, check, index)
                    got["wrong"].append(Outcome(out.error, out.stdout, answer))
                _run(client, f"{ex.name} = _exercise_right", index)
                out = _run(client, check, index)
                got["right"].append(Outcome(out.error, out.stdout, _value(client, ex.name, index)))
                # as delivered: the answer cell as it is, then the reference solution answering for it
                for source in (first, solution):
                    out = _run(client, source, index)
                    if out.error is not None:
                        return f"{ex.name}: a cell raised {out.error[0]}: {out.error[1]}"
                reference = _value(client, f"solution_{ex.name}", index)
                same = _value(client, f"solution_{ex.name} == _exercise_right", index) == "True"
                got["reference"].append(Outcome(None if same else ("differs", reference), out.stdout, reference))
                got["delivered"].append(_run(client, check, index))
                results[ex.name] = got
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return results


def _outcomes(ex: Exercise, kind: str) -> list[Outcome]:
    results = run_exercises(ex.notebook)
    if isinstance(results, str):
        pytest.fail(f"{ex.notebook} did not run: {results}")
    if ex.name not in results:
        pytest.fail(f"{ex.notebook}: exercise {ex.name!r} has no row in CASES")
    return results[ex.name][kind]


def _id(ex: Exercise) -> str:
    return f"{ex.notebook[:2]}-{ex.name}"


# --- the rules find what they should ------------------------------------------------------


def _nb(*cells: tuple[str, str, list[str]]) -> dict:
    return {"cells": [{"cell_type": kind, "source": src, "metadata": {"tags": tags} if tags else {}}
                      for kind, src, tags in cells]}  # fmt: skip


class TestFinding:
    def test_an_exercise_is_three_tagged_cells(self):
        nb = _nb(("markdown", "### Exercise 1", []), ("code", "# Exercise 1\nanswer = ...", ["exercise"]),
                 ("code", "solution_answer = 3", ["solution"]),
                 ("code", "# Check exercise 1\nassert answer == 3", ["check"]))  # fmt: skip
        assert exercises(nb, "nb") == [Exercise("nb", "answer", (1, 2, 3))]
        assert untagged(nb, "nb") == []

    def test_an_untagged_exercise_is_reported(self):
        nb = _nb(("markdown", "### Exercise 1", []), ("code", "# Exercise 1 — your answer\nanswer = ...", []),
                 ("code", "# Check exercise 1\nassert answer == 3", []))  # fmt: skip
        assert untagged(nb, "nb") == [
            "nb cell 1: looks like the exercise cell of an exercise but is not tagged 'exercise'",
            "nb cell 1: sets a name to ... but is not tagged 'exercise'",
            "nb cell 2: looks like the check cell of an exercise but is not tagged 'check'",
            "nb: 1 exercise headings but 0 tagged exercises",
        ]

    def test_an_exercise_without_its_check_is_an_error(self):
        nb = _nb(("code", "answer = ...", ["exercise"]), ("code", "solution_answer = 3", ["solution"]))
        with pytest.raises(ValueError, match="without its check cell"):
            exercises(nb, "nb")


@pytest.mark.parametrize("name", NUMBERED)
def test_every_exercise_cell_is_tagged(name):
    assert untagged(_notebook(name), name) == []


def test_every_exercise_has_cases():
    found = {(ex.notebook, ex.name) for ex in ALL}
    assert found == set(CASES), f"without a row in CASES: {found - set(CASES)}; stale rows: {set(CASES) - found}"


# --- the checks ---------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("ex", ALL, ids=_id)
def test_the_check_fails_while_unanswered(ex):
    (out,) = _outcomes(ex, "unanswered")
    assert out.error is not None, f"the check passed with {ex.name} = ... and no reference solution run"
    assert out.error[0] == "AssertionError" and ex.name in out.error[1], out.error


@pytest.mark.slow
@pytest.mark.parametrize("ex", ALL, ids=_id)
def test_the_check_fails_on_a_wrong_answer(ex):
    outcomes = _outcomes(ex, "wrong")
    assert len(outcomes) == len(CASES[ex.notebook, ex.name].wrong)
    for out in outcomes:
        assert out.error is not None, f"the check passed with the wrong answer {ex.name} = {out.answer}: {out.stdout}"
        assert out.error[0] == "AssertionError" and out.error[1], f"{ex.name} = {out.answer}: {out.error}"


@pytest.mark.slow
@pytest.mark.parametrize("ex", ALL, ids=_id)
def test_the_check_passes_on_the_right_answer(ex):
    (out,) = _outcomes(ex, "right")
    assert out.error is None, f"{ex.name} = {out.answer}: {out.error}"
    assert "correct:" in out.stdout


@pytest.mark.slow
@pytest.mark.parametrize("ex", ALL, ids=_id)
def test_as_delivered_the_reference_solution_answers_and_is_right(ex):
    (reference,) = _outcomes(ex, "reference")
    assert reference.error is None, f"the reference solution, {reference.answer}, is not the right answer"
    assert "stands in" in reference.stdout  # the notebook says the answer is not the reader's
    (out,) = _outcomes(ex, "delivered")
    assert out.error is None, out.error
    assert "correct:" in out.stdout
