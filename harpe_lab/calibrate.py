"""Calibration: fit a counter to the input tokens a provider really reported.

A counter estimates; a journal (or an imported session) may record what the provider
charged. `calibrate` replays the conversation under `FullContext` and keeps the requests
sent before its first recorded compaction, compares simulated with recorded input tokens request by request, and fits
``recorded ≈ factor × simulated + offset`` by least squares, per model. The offset absorbs
what the recording did not keep — a system prompt and tool schemas the agent sent but the
transcript does not hold. The returned `ScaledCounter` plugs into `replay` unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from .context import FullContext
from .conversation import Conversation
from .errors import HarpeLabError
from .messages import AssistantMessage
from .tokens import ScaledCounter

__all__ = ["calibrate", "Calibration"]


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` found. Errors are median absolute percentage errors over the
    requests that had a recorded count."""

    counter: ScaledCounter
    factor: float
    offset: float
    requests: int
    error_before: float
    error_after: float
    per_model: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    frame: Any = None
    """``request, turn, model, simulated, recorded, calibrated`` per compared request."""


def _fit(sim: Any, rec: Any) -> tuple[float, float]:
    import numpy as np

    if len(sim) >= 2 and np.ptp(sim) > 0:
        factor, offset = np.polyfit(sim, rec, 1)
        if factor > 0:
            return float(factor), float(offset)
    return float(np.sum(rec) / max(1, np.sum(sim))), 0.0


def _before_first_compaction(conversation: Conversation, turn: int, step: int) -> bool:
    """Whether request ``step`` of ``turn`` went out before the recording first compacted
    (after that, what the provider saw is no longer the full history)."""
    if not conversation.compactions:
        return True
    first = min(conversation.compactions, key=lambda c: (c.turn, c.message or 0))
    if turn != first.turn:
        return turn < first.turn
    if first.message is None:
        return False
    # request `step` is sent when the turn holds its input and the messages before reply `step`
    replies = [k for k, m in enumerate(conversation.turns[turn].messages) if isinstance(m, AssistantMessage)]
    held = 1 + (replies[step] if step < len(replies) else len(conversation.turns[turn].messages))
    return held < first.message


def calibrate(conversation: Conversation, counter: Any, *, tools: Sequence[Mapping[str, Any]] = (),
              system: str | None = None) -> Calibration:
    """Fit ``counter`` to the provider-reported input tokens recorded in ``conversation``."""
    import numpy as np
    import pandas as pd

    from .replay import replay

    base_system = conversation.system if system is None else system
    result = replay(conversation.with_(compactions=()), lambda: FullContext(base_system), counter=counter,
                    tools=tools, name="calibration")
    f = result.requests
    f = f[f["recorded_input_tokens"].notna() & (f["recorded_input_tokens"] > 0)]
    f = f[[_before_first_compaction(conversation, t, s) for t, s in zip(f["turn"], f["step"])]].copy()
    if f.empty:
        raise HarpeLabError(
            f"conversation {conversation.id!r} records no provider input tokens before its first compaction; "
            "calibration needs a journal or import with usage (harpe.metering.usage, Claude Code usage)"
        )
    models = []
    for _, row in f.iterrows():
        usage = conversation.turns[row["turn"]].usage
        models.append(usage[row["step"]].model if row["step"] < len(usage) else "")
    f["model"] = models
    sim = f["input_tokens"].to_numpy(float)
    rec = f["recorded_input_tokens"].to_numpy(float)
    factor, offset = _fit(sim, rec)
    per_model = {m: _fit(g["input_tokens"].to_numpy(float), g["recorded_input_tokens"].to_numpy(float))
                 for m, g in f.groupby("model")}
    calibrated = factor * sim + offset
    frame = pd.DataFrame({"request": f["request"], "turn": f["turn"], "model": f["model"],
                          "simulated": sim, "recorded": rec, "calibrated": calibrated})
    return Calibration(
        counter=ScaledCounter(counter, factor, offset),
        factor=factor,
        offset=offset,
        requests=len(f),
        error_before=float(np.median(np.abs(sim - rec) / rec)),
        error_after=float(np.median(np.abs(calibrated - rec) / rec)),
        per_model=per_model,
        frame=frame.reset_index(drop=True),
    )
