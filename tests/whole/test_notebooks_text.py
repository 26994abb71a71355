"""The notebooks' text agrees with their outputs.

A number the prose quotes from an output is written with the expression that computes it,
in an HTML comment right after it (invisible when the notebook is rendered)::

    The session has 21<!-- = conversation.summary()["turns"] --> turns; the full history
    sends 670,111<!-- = totals.loc["full", "input_tokens_sum"] --> tokens, and turn sends
    8%<!-- = totals.loc["turn", "input_tokens_sum"] / totals.loc["full", "input_tokens_sum"] -->
    of that.

The test runs each notebook in a kernel, cell by cell, and at every markdown cell evaluates
its expressions with the state of the code cells above it; the number written must equal
the value at the precision written (``8%`` matches 0.0817, ``0.70`` matches 0.7036; a
trailing ``%`` multiplies the value by 100). Two rules keep numbers from escaping the check:

* in markdown, every number of two digits or more outside `code spans` carries a marker
  (inputs such as a budget are written as code: `budget = 2_000`; a heading's own number,
  "## 10 · …", is not a claim);
* in a code cell, a number of two digits or more in a ``#`` comment must appear as a literal
  in that cell's code (``2,000`` matches ``2_000``, ``24k`` matches ``24_000``): a comment
  may restate an input, never an output.

``python -m tests.whole.test_notebooks_text NOTEBOOK...`` prints every claim with its value.
"""

from __future__ import annotations

import json
import math
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests._support.data import ROOT

NOTEBOOKS = ROOT / "notebooks"
TAUGHT = sorted(p.stem for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))  # every numbered notebook

NUMBER = r"[-−]?\d[\d,]*(?:\.\d+)?"
CLAIM = re.compile(rf"(?<![\w.])(?P<number>{NUMBER})(?P<percent>\s?%)?\s*<!--\s*=\s*(?P<expr>.*?)\s*-->", re.S)
ANY_NUMBER = re.compile(rf"(?<![\w.\-−]){NUMBER}(?:\s?%)?")
CODE_SPAN = re.compile(r"```.*?```|`[^`\n]*`", re.S)
TITLE = re.compile(r"^#{1,6}\s+\d+\s+·", re.M)  # a heading's number: "# 01 · What the model sees", "## 10 · …"
COMMENT_NUMBER = re.compile(r"(?<![\w.])(\d[\d,_]*(?:\.\d+)?)(k\b)?")
CODE_NUMBER = re.compile(r"(?<![\w.])(\d[\d_]*(?:\.\d+)?)")


@dataclass(frozen=True)
class Claim:
    cell: int
    written: str
    percent: bool
    expr: str

    @property
    def number(self) -> float:
        return float(self.written.replace(",", "").replace("−", "-"))

    @property
    def decimals(self) -> int:
        return len(self.written.split(".")[1]) if "." in self.written else 0

    def agrees(self, value: float) -> bool:
        if self.percent:
            value *= 100
        if not math.isfinite(value):
            return False
        # round half away from zero, as people do (Python's round() goes to even)
        scaled = abs(value) * 10**self.decimals
        rounded = math.copysign(math.floor(scaled + 0.5), value) / 10**self.decimals
        return math.isclose(rounded, self.number, rel_tol=0, abs_tol=10 ** -(self.decimals + 6))


def _source(cell) -> str:
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def claims(notebook: dict) -> list[Claim]:
    """Every marked number in the notebook's markdown, in order."""
    out = []
    for i, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] == "markdown":
            for m in CLAIM.finditer(_source(cell)):
                out.append(Claim(i, m["number"], bool(m["percent"]), m["expr"]))
    return out


def _value(text: str) -> float:
    return float(text.replace(",", "").replace("_", ""))


def unchecked_numbers(notebook: dict) -> list[str]:
    """Numbers that escape the check (see the module doc), as ``cell N: ...`` lines."""
    problems = []
    for i, cell in enumerate(notebook["cells"]):
        src = _source(cell)
        if cell["cell_type"] == "markdown":
            text = CLAIM.sub(" ", src)  # marked numbers are checked
            text = CODE_SPAN.sub(" ", text)
            text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
            text = re.sub(r"\]\([^)]*\)", "]", text)  # link targets
            text = TITLE.sub(" ", text)
            for m in ANY_NUMBER.finditer(text):
                digits = re.sub(r"\D", "", m.group().split(".")[0])
                if len(digits.lstrip("0") or "0") >= 2:
                    problems.append(f"cell {i}: {m.group()!r} in markdown has no <!-- = expression --> marker")
        elif cell["cell_type"] == "code":
            code_lines, comments = [], []
            for line in src.splitlines():
                code, hash_, comment = line.partition("#")
                # a '#' inside a string literal is rare in these notebooks; strings with one
                # would need a smarter split
                code_lines.append(code)
                if hash_:
                    comments.append(comment)
            literals = {_value(n) for n in CODE_NUMBER.findall("\n".join(code_lines))}
            for comment in comments:
                for number, k in COMMENT_NUMBER.findall(comment):
                    value = _value(number) * (1000 if k else 1)
                    if value >= 10 and value not in literals:
                        problems.append(
                            f"cell {i}: the comment quotes {number}{k} but the cell's code has no such literal "
                            f"(quote outputs in markdown, with a marker)"
                        )
    return problems


_PROBE = """\
import json as _json, math as _math
def _harpe_lab_value(_e):
    try:
        return float(eval(_e))
    except Exception as _x:
        return f"{type(_x).__name__}: {_x}"
print("HARPE-CLAIMS " + _json.dumps([_harpe_lab_value(_e) for _e in %r]))
"""


def evaluate(path: Path, *, timeout: int = 900) -> list[tuple[Claim, float | str]]:
    """Run the notebook cell by cell and evaluate each markdown cell's claims where the
    cell stands. Returns ``(claim, value)`` pairs (value: a float, or the error as text)."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(str(path), as_version=4)
    by_cell: dict[int, list[Claim]] = {}
    for c in claims(nb):
        by_cell.setdefault(c.cell, []).append(c)
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})  # fmt: skip
    out: list[tuple[Claim, float | str]] = []
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
            elif index in by_cell:
                probe = nbformat.v4.new_code_cell(_PROBE % [c.expr for c in by_cell[index]])
                client.execute_cell(probe, index)
                text = "".join(o.get("text", "") for o in probe.outputs if o.get("output_type") == "stream")
                line = next(ln for ln in text.splitlines() if ln.startswith("HARPE-CLAIMS "))
                out.extend(zip(by_cell[index], json.loads(line[len("HARPE-CLAIMS "):])))
    return out


def disagreements(results: list[tuple[Claim, float | str]]) -> list[str]:
    bad = []
    for claim, value in results:
        if isinstance(value, str) or not claim.agrees(value):
            shown = value if isinstance(value, str) else f"{value * (100 if claim.percent else 1):,.6g}"
            bad.append(f"cell {claim.cell}: the text says {claim.written}{'%' if claim.percent else ''} "
                       f"but {claim.expr} is {shown}")  # fmt: skip
    return bad


@pytest.fixture
def quiet_kernel_env(monkeypatch):
    """The environment the notebooks are written for: bundled data, no display."""
    monkeypatch.delenv("HARPE_LAB_SESSION", raising=False)
    monkeypatch.setenv("MPLBACKEND", "Agg")


# --- the checker checks ----------------------------------------------------------------------


def _nb(*cells: tuple[str, str]) -> dict:
    import nbformat

    nb = nbformat.v4.new_notebook()
    for kind, src in cells:
        nb.cells.append(nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


class TestClaimRules:
    @pytest.mark.parametrize(
        ("written", "percent", "value", "ok"),
        [
            ("21", False, 21, True),
            ("14", False, 21, False),
            ("670,111", False, 670111, True),
            ("670,111", False, 670112, False),
            ("0.70", False, 0.7036, True),
            ("0.70", False, 0.7051, False),
            ("8", True, 0.0817, True),
            ("8", True, 0.0851, False),
            ("2.5", False, 2.45, True),  # half away from zero
        ],
    )
    def test_a_number_agrees_at_the_precision_written(self, written, percent, value, ok):
        assert Claim(0, written, percent, "x").agrees(value) is ok

    def test_markers_are_found_with_their_expressions(self):
        nb = _nb(("md", "It has 21<!-- = s['turns'] --> turns and 8 %<!--= share --> of the cost."))
        assert [(c.written, c.percent, c.expr) for c in claims(nb)] == [("21", False, "s['turns']"), ("8", True, "share")]

    def test_an_unmarked_number_in_markdown_is_reported(self):
        nb = _nb(("md", "# 01 · Title\n\nA session over 14 turns; `budget = 2_000`; 3 steps; 21<!-- = n --> rows."))
        assert unchecked_numbers(nb) == ["cell 0: '14' in markdown has no <!-- = expression --> marker"]

    def test_a_comment_may_restate_an_input_but_not_an_output(self):
        ok = _nb(("code", "# Replay at a 2,000-token budget, from 2k to 24k\nbudget = 2_000\nhighs = [2_000, 24_000]"))
        assert unchecked_numbers(ok) == []
        # the comment this rule was written for: it said 14 turns where the output said 21
        bad = _nb(("code", "# Load a small bundled conversation: a coding agent fixing a bug over 14 turns\n"
                           "conversation = datasets.load('coding_agent')"))  # fmt: skip
        assert len(unchecked_numbers(bad)) == 1 and "14" in unchecked_numbers(bad)[0]

    @pytest.mark.slow
    def test_a_claim_that_disagrees_with_the_output_fails(self, tmp_path, quiet_kernel_env):
        import nbformat

        nb = _nb(("code", "# the session\nturns = 7 * 3"),
                 ("md", "The session has 14<!-- = turns --> turns, 21<!-- = turns --> really, "
                        "and 50%<!-- = 1 / 3 --> of something<!-- = undefined_name -->."))  # fmt: skip
        path = tmp_path / "claims.ipynb"
        nbformat.write(nb, str(path))
        bad = disagreements(evaluate(path))
        assert bad[0] == "cell 1: the text says 14 but turns is 21"
        assert bad[1] == "cell 1: the text says 50% but 1 / 3 is 33.3333"
        assert len(bad) == 2  # "something<!-- = undefined_name -->" quotes no number: not a claim


# --- the notebooks ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", TAUGHT)
def test_every_number_in_the_text_is_checked(name):
    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    assert unchecked_numbers(nb) == []
    assert len(claims(nb)) >= 5, "a teaching notebook quotes its outputs; mark them so they are checked"


@pytest.mark.slow
@pytest.mark.parametrize("name", TAUGHT)
def test_the_text_agrees_with_the_outputs(name, quiet_kernel_env):
    results = evaluate(NOTEBOOKS / f"{name}.ipynb")
    assert results, "no claim was evaluated"
    assert disagreements(results) == []


if __name__ == "__main__":  # print every claim of the notebooks given, with its value
    for arg in sys.argv[1:]:
        found = evaluate(Path(arg))
        for claim, value in found:
            mark = "ok " if not isinstance(value, str) and claim.agrees(value) else "BAD"
            print(f"{mark} cell {claim.cell:>2}  {claim.written}{'%' if claim.percent else ''}  ←  {claim.expr} = {value}")
        nb = json.loads(Path(arg).read_text(encoding="utf-8"))
        for problem in unchecked_numbers(nb):
            print("UNCHECKED", problem)
