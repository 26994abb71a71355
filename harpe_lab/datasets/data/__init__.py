"""The bundled datasets' files: ``<name>.json`` or ``<name>.jsonl``, its card ``<name>.md``
and, for a journal, ``<name>.probes.json``. Read them through `harpe_lab.datasets`; they are
written by ``tools/datasets/make_datasets.py`` (do not edit them by hand)."""

__all__: list[str] = []
