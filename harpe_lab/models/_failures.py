"""What a failed provider call was: one classifier for every caller.

`classify` reads an exception raised by litellm (or the provider SDK under it) and says what
kind of failure it was, whether a retry may help (HTTP 408, 429, 5xx, timeouts, lost
connections), the ``Retry-After`` the provider asked for, and a one-line detail with
litellm's repeated prefixes and every secret removed. The live loop retries on it; the
cached calls turn it into a `ModelError` with `explain`.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Literal, Sequence

from ._secrets import scrub

__all__ = ["Failure", "classify", "explain"]

Kind = Literal["malformed_json", "timeout", "credentials", "not_found", "rate_limited", "connection", "server",
               "other"]  # fmt: skip

_TRANSIENT_NAMES = ("Timeout", "APITimeoutError", "APIConnectionError", "ServiceUnavailableError",
                    "InternalServerError", "BadGatewayError", "RateLimitError")  # fmt: skip

_WHY = {
    "malformed_json": "the server replied with malformed JSON",
    "timeout": "the request timed out (timeout={timeout} s); raise timeout= or check the server",
    "credentials": "the server refused the credentials; check api_key",
    "not_found": "the model or endpoint was not found; check the model name and api_base",
    "rate_limited": "rate limited; lower concurrency or raise retries=",
    "connection": "could not reach the server; check api_base and the network",
    "server": "the server reported an error",
    "other": "the call failed",
}


@dataclass(frozen=True)
class Failure:
    """A classified provider failure."""

    kind: Kind
    """What went wrong, as far as the exception tells."""
    transient: bool
    """A retry may succeed: HTTP 408, 429 or 5xx, a timeout, a lost connection."""
    retry_after: float | None
    """Seconds the provider asked to wait (its ``Retry-After`` header), if it said."""
    detail: str
    """``"<ExceptionClass>: <message>"`` without litellm's repeated prefixes or any secret."""


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def _retry_after(exc: BaseException) -> float | None:
    """Seconds from a ``Retry-After`` header (seconds or an HTTP date), if the error has one."""
    headers = getattr(exc, "litellm_response_headers", None)
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    try:
        value = headers.get("retry-after") or headers.get("Retry-After")
    except AttributeError:
        return None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # an HTTP date is rare; the module is slow to import

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _transient(exc: BaseException) -> bool:
    status = _status(exc)
    if status is not None:
        return status in (408, 429) or status >= 500
    return any(c.__name__ in _TRANSIENT_NAMES for c in type(exc).__mro__) or isinstance(
        exc, (TimeoutError, ConnectionError))


def _kind(exc: BaseException) -> Kind:
    name = type(exc).__name__
    text = str(exc)
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 8:
        chain.append(e)
        e = e.__cause__ or e.__context__
    if any(isinstance(x, json.JSONDecodeError) for x in chain) or re.search(
        r"Expecting (?:property name|value|',' delimiter)|JSONDecodeError|Invalid control character", text
    ):
        return "malformed_json"
    if "Timeout" in name or "timed out" in text.lower():
        return "timeout"
    if "Authentication" in name or "PermissionDenied" in name:
        return "credentials"
    if "NotFound" in name:
        return "not_found"
    if "RateLimit" in name:
        return "rate_limited"
    if "Connection" in name:
        return "connection"
    if "InternalServerError" in name or "ServiceUnavailable" in name or "APIError" in name:
        return "server"
    return "other"


def _detail(exc: BaseException) -> str:
    name = type(exc).__name__
    message = str(exc).strip()
    # litellm writes "litellm.AuthenticationError: AuthenticationError: OpenAIException - ..."
    message = re.sub(r"^litellm\.\w+:\s*", "", message)
    if message.startswith(name + ":"):
        message = message[len(name) + 1:].strip()
    return f"{name}: {message}" if message else name


def classify(exc: BaseException, secrets: Sequence[str] = ()) -> Failure:
    """What ``exc``, raised by a provider call, was (see `Failure`); ``secrets`` (e.g.
    `harpe_lab.models.secrets_of` of the call's arguments) are replaced by ``***``."""
    return Failure(_kind(exc), _transient(exc), _retry_after(exc), scrub(_detail(exc), secrets))


def explain(exc: BaseException, model: str, timeout: float | None, secrets: Sequence[str] = ()) -> str:
    """One line for a `ModelError`: the model, what went wrong and how to fix it, and the
    exception (whitespace collapsed, clipped to 300 characters, secrets removed)."""
    why = _WHY[_kind(exc)].format(timeout=timeout)
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:299].rstrip() + "…"
    return scrub(f"model {model!r}: {why} ({type(exc).__name__}: {text})", secrets)
