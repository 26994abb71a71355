"""The shape issue 29 asked of the code, held by a test that parses every module of harpe_lab:

* no function over 80 lines (a declarative table may be, when it is listed below with why);
* the replay loop, `harpe_lab.replay._loop.replay`, at most 60 lines;
* no capability of a counter, policy or distiller discovered by name — ``getattr(x, "prime")``,
  ``hasattr(policy, "incremental")`` —: each is a declared `Protocol` (or a declared
  attribute) checked once, where the object is given.

A function's length runs from its ``def`` line to its last line, docstring included. The
lists of known exceptions can only shrink: an entry that no longer offends fails the test, so
that it is removed with the fix.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import harpe_lab

PACKAGE = Path(harpe_lab.__file__).parent
MAX_LINES = 80
MAX_REPLAY_LINES = 60

DECLARATIVE_TABLES: dict[tuple[str, str], str] = {
    # (module path, qualified function name): why it may be long. Keep this minimal: a table
    # is one statement per entry and no logic (e.g. an argparse parser declaring options).
}
"""Functions allowed over `MAX_LINES` because they are declarative tables."""

TO_SPLIT: dict[tuple[str, str], str] = {
    # Issue 29 ("no function in harpe_lab/ over 80 lines"): all split. A function that has to
    # wait here (its file busy elsewhere) is listed with why, and dropped when it is split.
}
"""Functions still over `MAX_LINES` that are not tables: the list of work left."""

CAPABILITIES = frozenset({
    # harpe_lab.tokens: a counter's declared abilities
    "prime", "additive", "texts_priced_alone", "count_lines",
    # harpe_lab.protocol: a strategy's (`DeclaresLimit`, `HoldsSummary`, `ReportsEvents`) and a
    # distiller's (`ReportsUsage`, `Renewable`)
    "limit", "base_system", "summary", "subscribe", "last_usage", "fresh",
    # harpe_lab.strategies.editing: an edit policy's (`Incremental`)
    "incremental",
})  # fmt: skip
"""Names of the optional abilities of counters, policies and distillers."""

CAPABILITY_PROTOCOLS = {
    "harpe_lab/tokens.py": ("Primes",),
    "harpe_lab/protocol.py": ("DeclaresLimit", "HoldsSummary", "ReportsEvents", "ReportsUsage", "Renewable"),
    "harpe_lab/strategies/editing.py": ("Incremental",),
}
"""Where the capabilities are declared: every member of these Protocols must be in `CAPABILITIES`."""

VALIDATION: dict[tuple[str, str], str] = {
    # (module path, qualified function name): why its getattr/hasattr is not discovery
    ("harpe_lab/replay/_loop.py", "_strategy"): "checks once, where the engine is given the strategy, that it "
                                                "has every lifecycle method (begin_turn, append, ...)",
}
"""Functions whose ``getattr`` checks an object's *required* methods, in one place: not discovery."""

KNOWN_DISCOVERY: dict[tuple[str, str, str], str] = {
    # (module path, qualified function name, attribute): discovery left in files that were
    # being changed by others during issue 29; each should read a declared capability instead.
}  # fmt: skip
"""``getattr``/``hasattr`` of a capability name still in the package: the list of work left."""


def _modules() -> list[tuple[str, ast.Module]]:
    root = PACKAGE.parent
    return [(p.relative_to(root).as_posix(), ast.parse(p.read_text(encoding="utf-8"), filename=str(p)))
            for p in sorted(PACKAGE.rglob("*.py"))]  # fmt: skip


MODULES = _modules()


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method, nested ones included, with its qualified name
    (``Class.method``, ``outer.inner``)."""
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((prefix + node.name, node))
            out += _functions(node, prefix + node.name + ".")
        elif isinstance(node, ast.ClassDef):
            out += _functions(node, prefix + node.name + ".")
        else:
            out += _functions(node, prefix)
    return out


def _length(node: ast.AST) -> int:
    return node.end_lineno - node.lineno + 1  # type: ignore[attr-defined]


def _long_functions() -> dict[tuple[str, str], tuple[int, int]]:
    """(path, function) -> (line, length) of every function over `MAX_LINES`."""
    return {(path, name): (fn.lineno, _length(fn)) for path, tree in MODULES for name, fn in _functions(tree)
            if _length(fn) > MAX_LINES}  # fmt: skip


def test_no_function_is_over_80_lines_but_the_declarative_tables() -> None:
    long = _long_functions()
    offenders = [f"{path}:{line} {name}() is {n} lines (at most {MAX_LINES}): split it into well-named parts"
                 for (path, name), (line, n) in sorted(long.items())
                 if (path, name) not in DECLARATIVE_TABLES and (path, name) not in TO_SPLIT]  # fmt: skip
    assert not offenders, "\n".join(offenders)


def test_the_lists_of_long_functions_only_shrink() -> None:
    long = _long_functions()
    stale = [f"{path} {name}() is no longer over {MAX_LINES} lines (or is gone): remove it from the list"
             for path, name in (*DECLARATIVE_TABLES, *TO_SPLIT) if (path, name) not in long]  # fmt: skip
    assert not stale, "\n".join(stale)


def test_the_replay_loop_is_at_most_60_lines() -> None:
    path = "harpe_lab/replay/_loop.py"
    tree = dict(MODULES)[path]
    loops = [fn for name, fn in _functions(tree) if name == "replay"]
    assert len(loops) == 1, f"{path} should define replay() once"
    n = _length(loops[0])
    assert n <= MAX_REPLAY_LINES, (
        f"{path}:{loops[0].lineno} replay() is {n} lines (at most {MAX_REPLAY_LINES}): move a step into a named part"
    )


def _string_values(fn: ast.AST, tree: ast.Module) -> dict[str, set[str]]:
    """Names bound to string constants where a getattr could take them: module-level
    ``NAME = ("a", "b")`` tuples and ``for name in ("a", "b")`` loops inside ``fn``."""
    def strings(node: ast.AST | None) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return {e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)}
        return set()

    values: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values.setdefault(node.targets[0].id, set()).update(strings(node.value))
    for node in ast.walk(fn):
        if isinstance(node, (ast.For, ast.comprehension)) and isinstance(node.target, ast.Name):
            source = node.iter
            if isinstance(source, ast.Name):
                values.setdefault(node.target.id, set()).update(values.get(source.id, set()))
            else:
                values.setdefault(node.target.id, set()).update(strings(source))
    return values


def _discovery() -> dict[tuple[str, str, str], int]:
    """(path, function, capability) -> line of each ``getattr``/``hasattr`` whose attribute
    names a capability: a string literal, or a name bound to one (see `_string_values`)."""
    found: dict[tuple[str, str, str], int] = {}
    for path, tree in MODULES:
        scopes = [("<module>", tree), *_functions(tree)]
        for name, scope in scopes:
            values = _string_values(scope, tree)
            body = scope.body if name != "<module>" else [n for n in tree.body if not isinstance(
                n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]  # fmt: skip
            for stmt in body:
                for node in ast.walk(stmt):
                    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                            and node.func.id in ("getattr", "hasattr") and len(node.args) >= 2):  # fmt: skip
                        continue
                    attr = node.args[1]
                    if isinstance(attr, ast.Constant) and isinstance(attr.value, str):
                        names = {attr.value}
                    elif isinstance(attr, ast.Name):
                        names = values.get(attr.id, set())
                    else:
                        names = set()
                    for capability in names & CAPABILITIES:
                        found.setdefault((path, name, capability), node.lineno)
    # a nested function's calls are also in its outer function's walk: keep the innermost
    inner = {(p, n.rsplit(".", 1)[0], c) for p, n, c in found if "." in n}
    return {k: line for k, line in found.items() if k not in inner or k[1] == "<module>"}


def test_the_capability_names_are_those_the_package_declares() -> None:
    root = PACKAGE.parent
    declared = set()
    for path, classes in CAPABILITY_PROTOCOLS.items():
        tree = ast.parse((root / path).read_text(encoding="utf-8"))
        found = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        for cls in classes:
            assert cls in found, f"{path} no longer defines {cls}: update CAPABILITY_PROTOCOLS"
            for node in found[cls].body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    declared.add(node.name)
                elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                    declared.add(node.target.id)
    missing = declared - CAPABILITIES
    assert not missing, f"capabilities declared but not checked for discovery: {sorted(missing)}; add them"
    tokens = (root / "harpe_lab/tokens.py").read_text(encoding="utf-8")
    for attribute in ("additive", "texts_priced_alone", "count_lines"):
        assert attribute in tokens, f"harpe_lab/tokens.py no longer declares {attribute}: update CAPABILITIES"


def test_no_capability_is_discovered_by_name() -> None:
    found = _discovery()
    offenders = [f"{path}:{line} {name}: getattr/hasattr of {capability!r} — declare it (a Protocol or a declared "
                 f"attribute, see harpe_lab.protocol) and check it once, where the object is given"
                 for (path, name, capability), line in sorted(found.items())
                 if (path, name) not in VALIDATION and (path, name, capability) not in KNOWN_DISCOVERY]  # fmt: skip
    assert not offenders, "\n".join(offenders)


def test_the_lists_of_getattr_exceptions_only_shrink() -> None:
    found = _discovery()
    stale = [f"{path} {name} no longer reads {capability!r} by name: remove it from KNOWN_DISCOVERY"
             for path, name, capability in KNOWN_DISCOVERY if (path, name, capability) not in found]  # fmt: skip
    functions = {(path, name) for path, tree in MODULES for name, _ in _functions(tree)}
    stale += [f"{path} {name}() is gone: remove it from VALIDATION" for path, name in VALIDATION
              if (path, name) not in functions]  # fmt: skip
    assert not stale, "\n".join(stale)


@pytest.mark.parametrize("source, flagged", [
    ("def f(c):\n    return getattr(c, 'prime', None)\n", True),
    ("def f(p):\n    return hasattr(p, 'incremental')\n", True),
    ("def f(d):\n    for cap in ('last_usage', 'fresh'):\n        getattr(d, cap)\n", True),
    ("_CAPS = ('subscribe',)\ndef f(s):\n    for cap in _CAPS:\n        getattr(s, cap, None)\n", True),
    ("def f(c):\n    return getattr(c, 'name', None)\n", False),
    ("def f(c, method):\n    return getattr(c, method)\n", False),
])  # fmt: skip
def test_the_discovery_check_sees_literals_and_loops(source: str, flagged: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(globals(), "MODULES", [("x.py", ast.parse(source))])
    assert bool(_discovery()) is flagged


def test_the_turn_lifecycle_is_defined_once():
    """Only `TurnLifecycle` begins and aborts a turn; a strategy that does more at a commit
    overrides `commit_turn` and calls the base's (the peers' adapters wrap other projects'
    code and are not ours)."""
    found = []
    for path, tree in MODULES:
        if not path.startswith("harpe_lab/strategies/"):
            continue
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                if path.endswith("/_lifecycle.py") and cls.name == "TurnLifecycle":
                    continue
                if fn.name in ("begin_turn", "abort_turn"):
                    found.append(f"{path} {cls.name}.{fn.name}")
                elif fn.name == "commit_turn" and not any(
                        isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "commit_turn"
                        and isinstance(c.func.value, ast.Call) and getattr(c.func.value.func, "id", "") == "super"
                        for c in ast.walk(fn)):
                    found.append(f"{path} {cls.name}.commit_turn without super().commit_turn()")
    assert found == [], "a second definition of the turn lifecycle: use TurnLifecycle's hooks instead"
