"""The public surface: ``harpe_lab.__all__`` is honest, and ``import harpe_lab`` stays light."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys

import pytest

import harpe_lab

HEAVY = ["matplotlib", "ipywidgets", "litellm", "tiktoken", "pandas"]


def _defined_public(module) -> set[str]:
    """Classes and functions a module defines itself under a public name."""
    return {
        name
        for name, obj in vars(module).items()
        if not name.startswith("_")
        and (inspect.isclass(obj) or inspect.isfunction(obj))
        and getattr(obj, "__module__", None) == module.__name__
    }


def _public_modules() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(harpe_lab.__path__, "harpe_lab."):
        parts = info.name.split(".")
        if any(p.startswith("_") for p in parts[1:]):  # private modules and __main__
            continue
        names.append(info.name)
    return sorted(names)


class TestPackageAll:
    def test_no_duplicates(self):
        assert len(harpe_lab.__all__) == len(set(harpe_lab.__all__))

    @pytest.mark.parametrize("name", harpe_lab.__all__)
    def test_every_name_resolves(self, name):
        assert getattr(harpe_lab, name) is not None

    def test_every_name_is_listed_by_dir(self):
        assert set(harpe_lab.__all__) <= set(dir(harpe_lab))

    def test_nothing_public_is_exported_by_accident(self):
        # A harpe_lab class or function in the package namespace must be in __all__.
        stray = {
            name
            for name, obj in vars(harpe_lab).items()
            if not name.startswith("_")
            and (inspect.isclass(obj) or inspect.isfunction(obj))
            and getattr(obj, "__module__", "").startswith("harpe_lab.")
        } - set(harpe_lab.__all__)
        assert stray == set()

    @pytest.mark.parametrize("name", harpe_lab.__all__)
    def test_re_exports_come_from_a_modules_public_surface(self, name):
        obj = getattr(harpe_lab, name)
        home = getattr(obj, "__module__", None)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)) or not (home or "").startswith("harpe_lab."):
            pytest.skip(f"{name} is not a harpe_lab class or function")
        assert name in getattr(sys.modules[home], "__all__", ()), f"{home}.__all__ lacks {name}"

    def test_functions_named_like_their_module_stay_functions(self):
        # importing the submodules must not replace the package attribute with the module
        code = (
            "import harpe_lab.replay, harpe_lab.sweep, harpe_lab.calibrate, harpe_lab, inspect; "
            "print(all(inspect.isfunction(getattr(harpe_lab, n)) for n in ('replay', 'sweep', 'calibrate')))"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        assert out.stdout.strip() == "True"

    def test_an_unknown_name_is_an_attribute_error(self):
        with pytest.raises(AttributeError, match="module 'harpe_lab' has no attribute 'NoSuchThing'"):
            harpe_lab.NoSuchThing  # noqa: B018

    def test_version(self):
        assert isinstance(harpe_lab.__version__, str) and harpe_lab.__version__.count(".") == 2


# the peer adapters that import their project at once (each says what to install when it is missing)
PEER_PACKAGES = {"harpe_lab.peers.autogen": "autogen_core", "harpe_lab.peers.langchain": "langchain",
                 "harpe_lab.peers.openai_agents": "agents"}


class TestModuleAll:
    @pytest.mark.parametrize("module_name", _public_modules())
    def test_every_module_has_an_all_that_resolves(self, module_name):
        if module_name in PEER_PACKAGES:
            pytest.importorskip(PEER_PACKAGES[module_name], reason="the peers extra is not installed")
        module = importlib.import_module(module_name)
        assert hasattr(module, "__all__"), f"{module_name} has no __all__"
        unresolved = [n for n in module.__all__ if not hasattr(module, n)]
        assert unresolved == [], f"{module_name}.__all__ names missing attributes"

    @pytest.mark.parametrize("module_name", ["harpe_lab.messages", "harpe_lab.strategies.harpe", "harpe_lab.tokens",
                                             "harpe_lab.errors"])
    def test_core_modules_export_every_public_definition(self, module_name):
        module = importlib.import_module(module_name)
        assert _defined_public(module) - set(module.__all__) == set()


class TestImportIsLight:
    def test_import_loads_no_heavy_dependency(self):
        code = (
            "import json, sys, harpe_lab\n"
            "dir(harpe_lab); harpe_lab.__all__\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == []

    def test_counters_and_contexts_load_nothing_heavy_until_used(self):
        code = (
            "import json, sys\n"
            "from harpe_lab import TiktokenCounter, SummarizingContext\n"
            "from harpe_lab.tokens import LitellmCounter, counter_for_model\n"
            "counter_for_model('gpt-4o'); LitellmCounter('gpt-4o')\n"
            f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))\n"
        )
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == []
