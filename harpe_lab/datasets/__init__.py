"""Bundled conversations that work offline, each with a description card.

>>> from harpe_lab import datasets
>>> datasets.list_datasets()
['coding_agent', 'research_assistant', 'support_chat']
>>> conv = datasets.load("support_chat")
>>> print(datasets.describe("support_chat"))      # what it is, how it was made, its size

The files live inside the package, in ``harpe_lab/datasets/data/`` (as scikit-learn keeps
``sklearn/datasets/data/``), and are read through `importlib.resources`, so they work from a
source checkout, an editable install and an installed wheel alike. Every one was written by
``tools/datasets/make_datasets.py`` in the repository (seeded; its output is committed). A
dataset is a card ``<name>.md`` beside a data file ``<name>.json`` (harpe_lab's conversation
format) or ``<name>.jsonl`` (a Harpe journal), read with `harpe_lab.importers.load_any`; a
journal's probes, which a journal cannot hold, are kept beside it in ``<name>.probes.json``.

`synthesize` makes conversations of any length for scaling experiments.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from ..conversation import Conversation, Probe
from ..errors import ImportFormatError
from ..synth import synthesize

__all__ = ["list_datasets", "load", "describe", "DatasetCard", "synthesize"]

_DATA_PACKAGE = "harpe_lab.datasets.data"
_DATA_SUFFIXES = (".json", ".jsonl")


def _root() -> Any:
    """The folder holding the bundled files (a `Traversable`; a real folder unless the package
    is imported from a zip)."""
    return resources.files(_DATA_PACKAGE)


def _data_files() -> dict[str, Any]:
    found: dict[str, Any] = {}
    root = _root()
    names = {entry.name for entry in root.iterdir()}
    for entry in root.iterdir():
        name = entry.name
        for suffix in _DATA_SUFFIXES:
            stem = name[: -len(suffix)]
            if name.endswith(suffix) and f"{stem}.md" in names:
                found[stem] = entry
    if not found:
        raise FileNotFoundError(f"no bundled dataset (a <name>.json or <name>.jsonl beside its <name>.md) in {root}; "
                                "this copy of harpe_lab was installed without its data files: reinstall it")
    return found


def list_datasets() -> list[str]:
    """The names of the bundled datasets, sorted."""
    return sorted(_data_files())


def _entry(name: str) -> Any:
    files = _data_files()
    if not isinstance(name, str) or name not in files:
        raise ValueError(f"name must be one of {sorted(files)}, but {name!r} was passed")
    return files[name]


def load(name: str) -> Conversation:
    """Load a bundled dataset as a `Conversation` (``source`` is ``"dataset:<name>"``;
    ``metadata["dataset"]`` names it and ``metadata["format"]`` is its file format)."""
    from ..importers import load_any

    entry = _entry(name)
    with resources.as_file(entry) as path:
        conversation = load_any(path)
    changes: dict[str, Any] = {}
    sidecar = _root() / f"{name}.probes.json"
    if sidecar.is_file():
        changes["probes"] = _probes(sidecar, conversation)
    return conversation.with_(id=name, source=f"dataset:{name}", metadata={**conversation.metadata, "dataset": name},
                              **changes)


def _probes(sidecar: Any, conversation: Conversation) -> tuple[Probe, ...]:
    """Probes kept beside a journal (a journal cannot hold them), checked against it."""
    data = json.loads(sidecar.read_text(encoding="utf-8"))
    known = set(conversation.message_ids())
    probes = []
    for k, p in enumerate(data["probes"]):
        probe = Probe(id=p["id"], asked_at=p["asked_at"], question=p["question"], answer=p["answer"],
                      evidence=tuple(p["evidence"]), category=p.get("category", ""))
        missing = [e for e in probe.evidence if e not in known]
        if missing:
            raise ImportFormatError(f"{sidecar.name}: probes[{k}] ({probe.id}) names evidence {missing} that is not "
                                    "in the conversation; regenerate it with tools/datasets/make_datasets.py")
        probes.append(probe)
    return tuple(probes)


@dataclass(frozen=True)
class DatasetCard:
    """A dataset's description card. ``str(card)`` (and Jupyter) show its Markdown text."""

    name: str
    title: str
    text: str
    file: str
    """The data file's name inside the package."""
    size: int
    """The data file's size in bytes."""

    def __str__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.text


def describe(name: str) -> DatasetCard:
    """The description card of a bundled dataset: what it is, how it was made, its size and
    its probes."""
    entry = _entry(name)
    card = _root() / f"{name}.md"
    text = card.read_text(encoding="utf-8")
    title = next((line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#")), name)
    return DatasetCard(name=name, title=title, text=text, file=entry.name, size=len(entry.read_bytes()))
