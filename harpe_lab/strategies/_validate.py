"""Checks every strategy configuration runs in ``__post_init__``: one wording for one mistake."""

from __future__ import annotations

from ..errors import StrategyError

__all__ = ["check_int", "check_counter", "check_base"]


def check_int(name: str, value: object, minimum: int) -> None:
    """``value`` must be an int (not a bool) of at least ``minimum``."""
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise StrategyError(f"{name} must be an int >= {minimum}, got {value!r}")


def check_counter(counter: object) -> None:
    """``counter`` must price a whole request (``count_rendered``), as every harpe_lab counter does."""
    if not callable(getattr(counter, "count_rendered", None)):
        raise StrategyError(f"counter must have count_rendered (e.g. harpe_lab.BytesCounter()), got {counter!r}")


def check_base(base_system: object, config: object, kind: type) -> None:
    """A context's ``base_system`` must be a str and its ``config`` a ``kind``."""
    if not isinstance(base_system, str):
        raise StrategyError(f"base_system must be a str, got {type(base_system).__name__}")
    if not isinstance(config, kind):
        raise StrategyError(f"config must be a {kind.__name__}, got {config!r}")
