"""Strip outputs, execution counts and volatile metadata from notebooks, so diffs show code.

    .venv/bin/python notebooks/strip_outputs.py               # strip notebooks/*.ipynb in place
    .venv/bin/python notebooks/strip_outputs.py --check       # exit 1 if any needs stripping
    .venv/bin/python notebooks/strip_outputs.py a.ipynb ...   # just these files

Run it before committing a notebook you executed. Stdlib only: notebooks are JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
KEEP_NOTEBOOK_METADATA = ("kernelspec", "language_info")
KEEP_CELL_METADATA = ("tags",)  # nbval reads its markers from tags
KEEP_JUPYTER_METADATA = ("source_hidden",)  # an exercise's solution cell starts collapsed


def stripped(notebook: dict) -> dict:
    """``notebook`` without outputs, execution counts and volatile metadata."""
    out = dict(notebook)
    out["metadata"] = {k: v for k, v in notebook.get("metadata", {}).items() if k in KEEP_NOTEBOOK_METADATA}
    if "language_info" in out["metadata"]:
        out["metadata"]["language_info"] = {"name": out["metadata"]["language_info"].get("name", "python")}
    cells = []
    for cell in notebook.get("cells", []):
        cell = dict(cell)
        metadata = cell.get("metadata", {})
        cell["metadata"] = {k: v for k, v in metadata.items() if k in KEEP_CELL_METADATA}
        jupyter = {k: v for k, v in metadata.get("jupyter", {}).items() if k in KEEP_JUPYTER_METADATA}
        if jupyter:
            cell["metadata"]["jupyter"] = jupyter
        if cell.get("cell_type") == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
        cells.append(cell)
    out["cells"] = cells
    return out


def dumps(notebook: dict) -> str:
    # the layout nbformat writes: one-space indent, sorted keys, trailing newline
    return json.dumps(notebook, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/*.ipynb)")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a notebook needs stripping")
    args = parser.parse_args(argv)
    paths = args.paths or sorted(HERE.glob("*.ipynb"))
    dirty = []
    for path in paths:
        try:
            text = path.read_text(encoding="utf-8")
            notebook = json.loads(text)
        except (OSError, json.JSONDecodeError) as exc:
            print(f"{path}: cannot read a notebook: {exc}", file=sys.stderr)
            return 2
        clean = dumps(stripped(notebook))
        if clean != text:
            dirty.append(path)
            if not args.check:
                path.write_text(clean, encoding="utf-8")
    verb = "need stripping" if args.check else "stripped"
    for path in dirty:
        print(f"{verb}: {path}")
    return 1 if (args.check and dirty) else 0


if __name__ == "__main__":
    raise SystemExit(main())
