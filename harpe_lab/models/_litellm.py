"""The one place litellm is imported: offline, with its bundled price table.

Only `harpe_lab.models` imports this module (a test walks the package's imports to hold
that); everything else reaches a model through the models layer.

litellm fetches its model cost map at import unless told not to, and some model names make
it look up a model hub; both are switched off before the first import.
"""

from __future__ import annotations

import os
from types import ModuleType

__all__ = ["litellm"]

_module: ModuleType | None = None


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
