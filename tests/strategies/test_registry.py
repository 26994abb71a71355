"""The preset registry gathers what the families declare: every family module's presets are
listed, in `FAMILIES` order, and each preset is built by code beside its strategies."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import harpe_lab
from harpe_lab.errors import StrategyError
from harpe_lab.presets import FAMILIES, PRESETS, STRATEGIES, _Registry

STRATEGIES_DIR = Path(harpe_lab.__file__).parent / "strategies"


def _declaring_modules() -> set[str]:
    """Every strategies module that assigns ``PRESETS`` at its top level, as a FAMILIES entry."""
    found = set()
    for path in STRATEGIES_DIR.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            targets = (node.targets if isinstance(node, ast.Assign)
                       else [node.target] if isinstance(node, ast.AnnAssign) else [])
            if any(isinstance(t, ast.Name) and t.id == "PRESETS" for t in targets):
                rel = path.relative_to(STRATEGIES_DIR).with_suffix("")
                parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
                found.add(".".join(parts))
    return found


def test_every_module_that_declares_presets_is_a_listed_family():
    assert _declaring_modules() == set(FAMILIES)


def test_each_preset_is_built_beside_its_strategies():
    assert len(PRESETS) == len(STRATEGIES) == 33
    for name in STRATEGIES:
        maker = PRESETS[name]._make.__module__
        assert maker.removeprefix("harpe_lab.strategies.") in FAMILIES, f"{name} is built in {maker}"


def test_the_order_is_the_families_order():
    # replay --list prints this order: the seeds', the libraries', the agents', the providers'
    assert STRATEGIES[:4] == ("full", "windowed", "turn", "summarizing")
    assert STRATEGIES[-2:] == ("anthropic-sdk-compaction", "retention-ratio")
    ranks = [FAMILIES.index(PRESETS[n]._make.__module__.removeprefix("harpe_lab.strategies.")) for n in STRATEGIES]
    assert ranks == sorted(ranks)


def test_two_presets_of_one_name_are_refused(monkeypatch):
    import harpe_lab.presets as presets

    monkeypatch.setattr(presets, "FAMILIES", ("harpe", "harpe"))
    with pytest.raises(StrategyError, match="two presets are called 'full'"):
        list(_Registry())


def test_importing_the_registry_imports_no_family():
    code = ("import sys, harpe_lab.presets; "
            "print(sorted(m for m in sys.modules if m.startswith('harpe_lab.strategies.') and "
            "m.split('.')[2] not in ('harpe', '_lifecycle', '_preset')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
