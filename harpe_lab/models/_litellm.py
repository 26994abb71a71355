"""The one place litellm is imported: offline, with its bundled price table.

Only `harpe_lab.models` imports this module (a test walks the package's imports to hold
that); everything else reaches a model through the models layer.

litellm fetches its model cost map at import unless told not to, and some model names make
it look up a model hub; both are switched off before the first import.

Importing litellm takes seconds (7 s on a 2-core machine). A price or a context window
needs only its offline table, a JSON file in litellm's package: `model_entry` reads that
file without importing litellm, and serves each name as ``litellm.model_cost`` does (a test
compares the two over every name). An alias, and the whole table an error's "did you mean"
hint reads, still come from litellm.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any, Mapping

__all__ = ["litellm", "model_entry"]

_module: ModuleType | None = None
_TABLE = "model_prices_and_context_window_backup.json"  # the file litellm loads offline
# the one row of that file litellm takes out of the table (its rules for unknown names)
_NOT_A_MODEL = "fallback_generalizations"
_bundled: tuple[dict[str, Any], frozenset[str]] | None = None


def litellm() -> ModuleType:
    """Import litellm (once) with the network-free settings harpe_lab relies on."""
    global _module
    if _module is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
        import litellm as module

        module.telemetry = False
        module.suppress_debug_info = True  # otherwise a help banner is printed on every error
        _module = module
    return _module


def _table() -> tuple[dict[str, Any], frozenset[str]] | None:
    """litellm's offline table file (`_read_table`), unless litellm's own table must answer:
    once litellm is imported (it may hold prices the user registered with it), or when the
    user told litellm to fetch its table (both settings that keep it offline set to
    something else than true)."""
    if _module is not None or "litellm" in sys.modules:
        return None
    if not any(os.environ.get(k, "true").lower() == "true"
               for k in ("LITELLM_LOCAL_MODEL_COST_MAP", "LITELLM_OFFLINE_MODE")):
        return None
    return _read_table()


def _read_table() -> tuple[dict[str, Any], frozenset[str]] | None:
    """The rows of the file litellm loads offline, and the names it makes aliases (served as
    another row); None when the file is not there."""
    global _bundled
    if _bundled is None:
        spec = importlib.util.find_spec("litellm")  # finds the package without importing it
        files = [Path(loc) / _TABLE for loc in (spec.submodule_search_locations or ())] if spec else []
        path = next((f for f in files if f.is_file()), None)
        if path is None:
            return None
        import orjson

        rows = orjson.loads(path.read_bytes())
        aliases = {k for k, row in rows.items() if isinstance(row, dict) and "alias_of" in row}
        for row in rows.values():
            if isinstance(row, dict) and isinstance(row.get("aliases"), list):
                aliases.update(row["aliases"])
        _bundled = rows, frozenset(aliases)
    return _bundled


def _from_file(table: tuple[dict[str, Any], frozenset[str]], name: str) -> tuple[bool, Mapping[str, Any] | None]:
    """(whether the file alone says what ``litellm.model_cost`` holds for ``name``, and what
    it holds). An alias is left to litellm: it resolves them, and settles their conflicts."""
    rows, aliases = table
    if name in aliases:
        return False, None
    row = rows.get(name) if name != _NOT_A_MODEL else None
    return True, None if row is None else {k: v for k, v in row.items() if k != "aliases"}


def model_entry(name: str) -> Mapping[str, Any] | None:
    """The entry ``litellm.model_cost`` holds for ``name`` (None if it has none), from its
    file when that says it all (see `_from_file`), else from litellm."""
    table = _table()
    if table is not None:
        known, entry = _from_file(table, name)
        if known:
            return entry
    return litellm().model_cost.get(name)
