"""Credentials that must never reach a journal, a cache file, an error or a ``repr``."""

from __future__ import annotations

import os
import re
from typing import Any, Mapping, Sequence

__all__ = ["secrets_of", "scrub"]

_KEY_LIKE = re.compile(r"key|token|secret|password", re.I)
_ENV_KEY = re.compile(r"_(API_KEY|TOKEN|SECRET)$")


def secrets_of(arguments: Mapping[str, Any]) -> list[str]:
    """The secrets a call may carry: values of key-like ``arguments`` (``api_key``,
    ``*_token``, ...) and the provider keys litellm may read from the environment
    (``*_API_KEY``, ``*_TOKEN``, ``*_SECRET``); longest first, so `scrub` replaces a key
    before any shorter secret inside it."""
    named = [v for k, v in arguments.items() if _KEY_LIKE.search(k)]
    named += [v for k, v in os.environ.items() if _ENV_KEY.search(k)]
    return sorted({v for v in named if isinstance(v, str) and len(v) >= 4}, key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str]) -> str:
    """``text`` with every one of ``secrets`` replaced by ``***``."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return text
