"""The on-disk reply cache: one JSON file per request, keyed by what shapes the reply.

The key is the SHA-256 of the model name, the messages and the reply-shaping arguments
(`CACHE_KEY_PARAMS`); each reply is a file ``<folder>/<key[:2]>/<key>.json`` written
atomically. Transport arguments (``api_key``, ``api_base``, headers, ...) never enter the
key nor a file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..errors import ModelError

__all__ = ["CACHE_KEY_PARAMS", "CACHE_VERSION", "default_cache_dir", "cache_key", "ReplyCache"]

CACHE_KEY_PARAMS = frozenset(
    """max_tokens max_completion_tokens temperature top_p top_k seed stop presence_penalty frequency_penalty
    logit_bias response_format reasoning_effort n tools tool_choice parallel_tool_calls thinking logprobs
    top_logprobs""".split()
)
"""The litellm arguments that change a reply, and so enter the cache key (with the model
and the messages). Every other argument (``api_key``, ``api_base``, ``timeout``, headers,
…) is treated as transport: never hashed, never written anywhere."""

CACHE_VERSION = 1
"""The version of a cache entry's layout (``"v"`` in the file, and part of the key)."""


def default_cache_dir() -> Path:
    """Where model replies are cached: ``$HARPE_LAB_CACHE_DIR``, else the user cache folder
    (``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux, ``~/Library/Caches`` on macOS,
    ``%LOCALAPPDATA%`` on Windows) + ``harpe_lab/llm``."""
    env = os.environ.get("HARPE_LAB_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "harpe_lab" / "llm"


def cache_key(model: str, messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]) -> str:
    """SHA-256 over the cache version, ``model``, ``messages`` and the reply-shaping ``params``."""
    blob = json.dumps(
        {"v": CACHE_VERSION, "model": model, "messages": list(messages), "params": dict(params)},
        sort_keys=True, ensure_ascii=False, default=str,
    )  # fmt: skip
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class ReplyCache:
    """The cache folder: `load` an entry by key, `store` one atomically."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, key: str) -> Path:
        """The file of entry ``key``."""
        return self.folder / key[:2] / f"{key}.json"

    def load(self, key: str) -> dict[str, Any] | None:
        """The entry ``key``, ``None`` when there is none. A file that is not a valid entry
        raises `ModelError` saying which file to delete."""
        path = self.path(key)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            doc = json.loads(raw)
        except json.JSONDecodeError as e:
            raise ModelError(
                f"{path}:{e.lineno}: the cached reply is not valid JSON ({e.msg}); delete the file to refetch"
            ) from e
        if not isinstance(doc, dict) or doc.get("v") != CACHE_VERSION or not isinstance(doc.get("text"), str):
            raise ModelError(f"{path}: not a harpe_lab cache entry of version {CACHE_VERSION}; delete the file to refetch")
        return doc

    def store(self, key: str, doc: Mapping[str, Any]) -> None:
        """Write entry ``key`` (``doc`` plus the version and key): to a temporary file, then
        renamed, so a crash or a concurrent reader never sees half a file."""
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"v": CACHE_VERSION, "key": key, **doc}, f, ensure_ascii=False, indent=1, default=str)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
