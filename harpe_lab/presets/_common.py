"""What the families' builders share: the default distiller, the request's fixed cost, and
the budget and reserve knobs several presets declare alike."""

from __future__ import annotations

from typing import Any, Callable

from ..messages import Rendered
from ..protocol import Distill, fresh_distiller
from .registry import DEFAULT_BUDGET, Knob


def _distiller(distill: Distill | None, budget: int) -> Callable[[], Distill]:
    if distill is not None:
        return lambda: fresh_distiller(distill)
    from ..summarize import ExtractiveDistiller

    shared = ExtractiveDistiller(max_chars=max(400, budget))  # stateless: its caches are pure
    return lambda: shared


def _fixed_tokens(counter: Any, system: str, tools: tuple) -> int:
    """What a request costs before any message: system prompt, tool schemas, reply priming."""
    return int(counter.count_rendered(Rendered(system, ()), tools))


def _budget(help: str) -> Knob:
    return Knob(name="budget", unit="tokens", default=DEFAULT_BUDGET, minimum=1, scales=True, help=help)


def _reserve() -> Knob:
    return Knob(name="reserve", unit="tokens", default=None, minimum=0, scales=True,
                help="tokens kept free for the reply, beside the budget (default: 10% of the budget)")
