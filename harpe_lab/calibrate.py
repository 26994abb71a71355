"""Calibration: fit a counter to the input tokens a provider really reported.

A counter estimates; a journal (or an imported session) may record what the provider
charged. `calibrate` replays each conversation under `FullContext`, keeps the requests sent
before its first recorded compaction, compares simulated with recorded input tokens request
by request, and fits ``recorded ≈ factor × simulated + offset``. The offset absorbs what the
recording did not keep — a system prompt and tool schemas the agent sent but the transcript
does not hold; the factor, the difference between the counter's tokenizer and the
provider's. The returned `ScaledCounter` plugs into `replay` unchanged.

Several conversations (e.g. every session of one agent) are pooled into one fit.

Guarding against a degenerate fit
---------------------------------
A line needs points that differ in size. With fewer than `MIN_POINTS` requests, or simulated
sizes spread over less than `MIN_SPREAD` of the largest recorded count, the factor cannot be
told from the offset (one request of 14 simulated tokens recorded as 25,353 would give a
factor of 1,810, which then mispredicts every other session by orders of magnitude). Such a
fit falls back to an offset only (factor 1); a line whose factor lies outside
`PLAUSIBLE_FACTOR`, or that predicts a negative size for the smallest request, falls back
to a factor only (offset 0), or failing that to the offset only. Every fallback warns (`CalibrationWarning`) and is named
in ``Calibration.method`` and ``Calibration.notes``.

One model
---------
Requests by different models are not pooled: the fit takes the model that made the most
recorded calls, and the others are left out (`CalibrationWarning`; ``per_model`` still fits
each on its own).

Out-of-sample error
-------------------
``error_after`` is measured on the points the fit saw, which flatters it. ``error_holdout``
is measured on points it did not see: with several conversations, leave-one-session-out
(fit on the others, test on each in turn); with one, fit on the earlier half of its
requests and test on the later half.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping, Sequence

from .strategies.harpe import FullContext
from .conversation import Conversation
from .errors import HarpeLabError
from .messages import AssistantMessage
from .tokens import ScaledCounter

__all__ = ["calibrate", "Calibration", "CalibrationWarning", "MIN_POINTS", "MIN_SPREAD", "PLAUSIBLE_FACTOR"]

MIN_POINTS = 3
"""Fewest requests with recorded usage for a line (factor and offset); fewer: offset only."""
MIN_SPREAD = 0.1
"""Simulated sizes must spread over at least this share of the largest recorded count."""
PLAUSIBLE_FACTOR = (0.3, 3.0)
"""Tokenizers of today's models differ by well under 3×; a factor outside is a bad fit."""

Method = Literal["linear", "factor", "offset"]


class CalibrationWarning(UserWarning):
    """The points could not support a full fit; a simpler one was used (see the message)."""


@dataclass(frozen=True)
class Calibration:
    """What `calibrate` found. Errors are median absolute percentage errors over the
    requests that had a recorded count."""

    counter: ScaledCounter
    factor: float
    offset: float
    requests: int
    error_before: float
    """The raw counter's error."""
    error_after: float
    """The calibrated counter's error on the very points it was fitted to (in sample)."""
    per_model: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    frame: Any = None
    """``session, request, turn, model, simulated, recorded, calibrated, holdout`` per
    compared request (``holdout``: the prediction of a fit that did not see it)."""
    method: Method = "linear"
    """``linear`` (factor and offset), ``factor`` (offset 0) or ``offset`` (factor 1)."""
    error_holdout: float = math.nan
    """The error on requests the fit did not see (NaN when there were too few to split)."""
    holdout: str = ""
    """How ``error_holdout`` was measured."""
    sessions: int = 1
    per_session: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    """Per conversation id: ``requests``, ``error_before``, ``error_after``, ``error_holdout``."""
    notes: tuple[str, ...] = ()
    """Why a simpler fit was used, and anything else the numbers cannot say."""


def _mape(predicted: Any, recorded: Any) -> float:
    import numpy as np

    if len(recorded) == 0:
        return math.nan
    return float(np.median(np.abs(predicted - recorded) / recorded))


def _fit(sim: Any, rec: Any) -> tuple[float, float, Method, str]:
    """``(factor, offset, method, why)``: a line when the points support one, else the
    simpler fit with the reason (``why`` empty for a line)."""
    import numpy as np

    n = len(sim)
    offset_only = float(np.median(rec - sim))
    spread = float(np.ptp(sim)) if n else 0.0
    if n < MIN_POINTS:
        return 1.0, offset_only, "offset", f"only {n} request(s) with recorded usage (a line needs {MIN_POINTS})"
    if spread < MIN_SPREAD * float(np.max(rec)):
        return 1.0, offset_only, "offset", (
            f"the simulated sizes span {spread:,.0f} tokens, less than {MIN_SPREAD:.0%} of the largest recorded "
            f"request ({float(np.max(rec)):,.0f}): too narrow to tell a factor from an offset"
        )
    factor, offset = (float(v) for v in np.polyfit(sim, rec, 1))
    low, high = PLAUSIBLE_FACTOR
    positive = factor * float(np.min(sim)) + offset > 0
    if low <= factor <= high and positive:
        return factor, offset, "linear", ""
    why = (f"the line's factor {factor:.3g} is outside {low}–{high}" if not low <= factor <= high
           else f"the line (offset {offset:,.0f}) predicts a negative size for the smallest request")
    through_origin = float(np.dot(sim, rec) / max(float(np.dot(sim, sim)), 1e-9))
    if low <= through_origin <= high:
        return through_origin, 0.0, "factor", why
    return 1.0, offset_only, "offset", why


def _before_first_compaction(conversation: Conversation) -> Callable[[int, int], bool]:
    """Whether request ``step`` of ``turn`` went out before the recording first compacted
    (after that, what the provider saw is no longer the full history)."""
    if not conversation.compactions:
        return lambda turn, step: True
    first = min(conversation.compactions, key=lambda c: (c.turn, c.message or 0))
    # request `step` is sent when the turn holds its input and the messages before reply `step`
    messages = conversation.turns[first.turn].messages
    replies = [k for k, m in enumerate(messages) if isinstance(m, AssistantMessage)]

    def before(turn: int, step: int) -> bool:
        if turn != first.turn:
            return turn < first.turn
        if first.message is None:
            return False
        return 1 + (replies[step] if step < len(replies) else len(messages)) < first.message

    return before


def _points(conversation: Conversation, session: str, counter: Any, tools: Sequence[Mapping[str, Any]],
            system: str | None) -> Any:
    """The compared requests of one conversation as a frame."""
    import pandas as pd

    from .replay import replay

    base_system = conversation.system if system is None else system
    result = replay(conversation.with_(compactions=()), lambda: FullContext(base_system), counter=counter,
                    tools=tools, name="calibration")
    f = result.requests
    f = f[f["recorded_input_tokens"].notna() & (f["recorded_input_tokens"] > 0)]
    before = _before_first_compaction(conversation)
    keep = [before(t, s) for t, s in zip(f["turn"], f["step"])]
    f = f[pd.Series(keep, index=f.index, dtype=bool)]
    models = []
    for turn, step in zip(f["turn"], f["step"]):
        usage = conversation.turns[turn].usage
        models.append(usage[step].model if step < len(usage) else "")
    return pd.DataFrame({
        "session": session, "request": f["request"].to_numpy(), "turn": f["turn"].to_numpy(), "model": models,
        "simulated": f["input_tokens"].to_numpy(float), "recorded": f["recorded_input_tokens"].to_numpy(float),
    })


def _holdout(frame: Any, sessions: list[str]) -> tuple[Any, str, list[str]]:
    """Predictions for every point from a fit that did not see it, and how."""
    import numpy as np

    predicted = np.full(len(frame), np.nan)
    notes: list[str] = []
    if len(sessions) > 1:
        for s in sessions:
            mask = (frame["session"] == s).to_numpy()
            train = frame[~mask]
            factor, offset, method, _ = _fit(train["simulated"].to_numpy(), train["recorded"].to_numpy())
            predicted[mask] = factor * frame.loc[mask, "simulated"].to_numpy() + offset
        return predicted, f"leave-one-session-out over {len(sessions)} conversations", notes
    n = len(frame)
    if n < 2:
        notes.append("one request only: nothing left to test the fit on, so no out-of-sample error")
        return predicted, "none (too few requests)", notes
    order = np.argsort(frame["request"].to_numpy(), kind="stable")
    half = n // 2
    train, test = order[:half], order[half:]
    factor, offset, method, _ = _fit(frame["simulated"].to_numpy()[train], frame["recorded"].to_numpy()[train])
    predicted[test] = factor * frame["simulated"].to_numpy()[test] + offset
    return predicted, f"fitted on the first {half} requests, tested on the last {n - half}", notes


def _main_model(frame: Any) -> tuple[Any, str]:
    """The points of the model that made the most recorded calls, and what was left out
    ("" when one model made them all). Another model counts with its own tokenizer and may
    be sent another prompt (the real Cline session's last call, by a second model, read
    12,238 tokens after 51,852): one line through both fits neither."""
    counts = frame.groupby("model")["recorded"].agg(["size", "sum"])
    if len(counts) < 2:
        return frame, ""
    main = counts.sort_values(["size", "sum"], ascending=False, kind="stable").index[0]
    others = counts.drop(main)
    dropped = int(others["size"].sum())
    named = ", ".join(f"{n:,} of {m or 'an unnamed model'}" for m, n in others["size"].items())
    return frame[frame["model"] == main].reset_index(drop=True), (
        f"calibrate: fitted to the {int(counts.loc[main, 'size']):,} requests of {main or 'an unnamed model'}, the "
        f"model of most calls; {dropped:,} request{'s' * (dropped != 1)} by another model left out ({named}): "
        "another model counts with its own tokenizer and may be sent another prompt"
    )


def calibrate(conversations: Conversation | Iterable[Conversation], counter: Any, *,
              tools: Sequence[Mapping[str, Any]] = (), system: str | None = None) -> Calibration:
    """Fit ``counter`` to the provider-reported input tokens recorded in one conversation or
    several (pooled into one fit); see the module doc for the fallbacks and the
    out-of-sample error."""
    import numpy as np
    import pandas as pd

    convs = [conversations] if isinstance(conversations, Conversation) else list(conversations)
    if not convs:
        raise HarpeLabError("calibrate needs at least one conversation with recorded usage")
    for k, c in enumerate(convs):
        if not isinstance(c, Conversation):
            raise TypeError(f"calibrate takes Conversations; item {k} is a {type(c).__name__}")
    ids = [c.id for c in convs]
    names = ids if len(set(ids)) == len(ids) else [f"{c.id}#{k}" for k, c in enumerate(convs)]
    frames = [_points(c, name, counter, tools, system) for c, name in zip(convs, names)]
    empty = [name for name, f in zip(names, frames) if f.empty]
    frame = pd.concat([f for f in frames if not f.empty], ignore_index=True) if len(empty) < len(frames) else None
    if frame is None:
        which = f"conversation {names[0]!r}" if len(names) == 1 else f"none of the {len(names)} conversations"
        raise HarpeLabError(
            f"{which} records no provider input tokens before its first compaction; calibration needs a journal "
            "or import with usage (harpe.metering.usage, Claude Code usage)"
        )
    notes: list[str] = []
    if empty:
        notes.append(f"{len(empty)} conversation(s) without recorded usage left out: {', '.join(empty)}")
    per_model = {}
    for m, g in frame.groupby("model"):
        f_m, o_m, _, _ = _fit(g["simulated"].to_numpy(), g["recorded"].to_numpy())
        per_model[m] = (f_m, o_m)
    frame, left_out = _main_model(frame)
    if left_out:
        notes.append(left_out)
        warnings.warn(left_out, CalibrationWarning, stacklevel=2)
    sessions = [n for n in names if n in set(frame["session"])]

    sim = frame["simulated"].to_numpy()
    rec = frame["recorded"].to_numpy()
    factor, offset, method, why = _fit(sim, rec)
    if method != "linear":
        kind = "an offset only (factor 1)" if method == "offset" else "a factor only (offset 0)"
        message = (f"calibrate: {why}; fitted {kind}: factor {factor:.4g}, offset {offset:,.0f} tokens. "
                   "Pool more conversations, or longer ones, for a full fit")
        notes.append(message)
        warnings.warn(message, CalibrationWarning, stacklevel=2)
    frame["calibrated"] = factor * sim + offset
    predicted, holdout, holdout_notes = _holdout(frame, sessions)
    frame["holdout"] = predicted
    notes.extend(holdout_notes)
    tested = ~np.isnan(predicted)
    per_session = {}
    for s in sessions:
        g = frame[frame["session"] == s]
        t = ~np.isnan(g["holdout"].to_numpy())
        per_session[s] = {
            "requests": len(g),
            "error_before": _mape(g["simulated"].to_numpy(), g["recorded"].to_numpy()),
            "error_after": _mape(g["calibrated"].to_numpy(), g["recorded"].to_numpy()),
            "error_holdout": _mape(g["holdout"].to_numpy()[t], g["recorded"].to_numpy()[t]),
        }
    return Calibration(
        counter=ScaledCounter(counter, factor, offset),
        factor=factor,
        offset=offset,
        requests=len(frame),
        error_before=_mape(sim, rec),
        error_after=_mape(frame["calibrated"].to_numpy(), rec),
        per_model=per_model,
        frame=frame,
        method=method,
        error_holdout=_mape(predicted[tested], rec[tested]),
        holdout=holdout,
        sessions=len(sessions),
        per_session=per_session,
        notes=tuple(notes),
    )
