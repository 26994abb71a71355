"""The floor plan of docs/architecture.md, held by the code: every import (at module level or
inside a function) goes to the same floor or a lower one, and no two parts import each other."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import harpe_lab

PACKAGE = Path(harpe_lab.__file__).parent
DOC = PACKAGE.parent / "docs" / "architecture.md"


def _floors() -> dict[str, int]:
    """part -> floor, read from the table in docs/architecture.md (floor 0 is the ground)."""
    floors: dict[str, int] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        m = re.match(r"^\| (\d) \| [^|]+ \| (.+?) \|", line)
        if m:
            for part in re.findall(r"`([\w.]+)`", m.group(2)):
                floors[part] = int(m.group(1))
    return floors


def _part(module: str) -> str:
    """``harpe_lab.journal._codec`` -> ``journal``: the top-level module or package."""
    return module.split(".")[1] if module.count(".") else ""


def _imports(path: Path) -> set[str]:
    """Every harpe_lab module ``path`` imports, at any depth of the code."""
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    here = list(rel.parts)
    if here[-1] == "__init__":
        here.pop()
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + (path.name == "__init__.py")]
                target = ".".join(base + ([node.module] if node.module else []))
                names = [f"{target}.{a.name}" for a in node.names] if not node.module else [target]
            else:
                names = [node.module or ""]
            out.update(n for n in names if n.startswith("harpe_lab."))
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("harpe_lab."))
    return out


def _graph() -> dict[str, set[str]]:
    """part -> the other parts it imports."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        source = rel.parts[0].removesuffix(".py")
        if source == "__init__":
            continue  # the front door re-exports from every floor
        targets = {_part(m) for m in _imports(path)} - {source, ""}
        graph.setdefault(source, set()).update(targets)
    return graph


def test_every_part_has_a_floor():
    floors = _floors()
    parts = {p.name.removesuffix(".py") for p in PACKAGE.iterdir()
             if (p.suffix == ".py" or (p / "__init__.py").exists()) and p.name != "__init__.py"}
    assert parts - set(floors) == set(), "add these to the table in docs/architecture.md"
    assert set(floors) - parts == set(), "the table names parts that do not exist"


def test_imports_only_go_down_or_across():
    floors = _floors()
    upward = sorted(
        f"{source} (floor {floors[source]}) imports {target} (floor {floors[target]})"
        for source, targets in _graph().items()
        for target in targets
        if floors[target] > floors[source]
    )
    assert upward == []


def test_no_two_parts_import_each_other():
    graph = _graph()
    seen: set[str] = set()
    cycles = []

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            cycles.append(" -> ".join(path[path.index(node):] + [node]))
            return
        if node in seen:
            return
        for nxt in sorted(graph.get(node, ())):
            visit(nxt, path + [node])
        seen.add(node)

    for node in sorted(graph):
        visit(node, [])
    assert cycles == []


def test_the_checker_sees_function_level_and_relative_imports(tmp_path):
    # a guard against a walker that silently finds nothing
    imports = _imports(PACKAGE / "widgets" / "_common.py")
    assert "harpe_lab.datasets" in imports  # `from .. import datasets`, inside a function
    assert "harpe_lab.presets" in imports
