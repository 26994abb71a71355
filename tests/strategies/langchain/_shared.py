"""What the native LangChain tests and the differential ones share: a recording distiller,
Hypothesis settings, and generated lists of units."""

from __future__ import annotations

from hypothesis import HealthCheck
from hypothesis import strategies as st

from harpe_lab.messages import AssistantMessage, Rendered, ToolCall, ToolResult, ToolResults, UserInput

_SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


class Recorder:
    """A distiller that writes a short summary naming its call and keeps every request."""

    def __init__(self) -> None:
        self.requests: list[Rendered] = []

    def __call__(self, request: Rendered) -> str:
        self.requests.append(request)
        text = request.messages[-1].text
        return f"  summary {len(self.requests)}: {len(text)} characters, ending {text[-40:]!r}\n"


# --- generated lists of units: what a summarizer may be shown -------------------------------------

_text = st.text(alphabet="ab <&>\"'\n✓", max_size=30)


@st.composite
def _unit_lists(draw):
    units = []
    for k in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["user", "ai", "tool"]))
        if kind == "user":
            units.append(UserInput(draw(_text)))
        elif kind == "ai":
            ids = [draw(st.sampled_from(["c", "x" * 70])) + str(k) + str(j) for j in range(draw(st.integers(0, 2)))]
            units.append(AssistantMessage(draw(_text), tuple(ToolCall(i, draw(st.sampled_from(["bash", "r&d"])),
                                                                      {"q": draw(_text)}) for i in ids)))
        else:
            units.append(ToolResults((ToolResult(f"c{k}", draw(_text)),)))
    return units
