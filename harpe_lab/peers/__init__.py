"""Peer adapters: replay a conversation through another project's own implementation of a
strategy, converting harpe_lab messages to its types and back at every request.

Each submodule needs its peer installed (``pip install harpe_lab[peers]``) and says so when
it is missing; importing this package imports none of them.
"""

__all__: list[str] = []
