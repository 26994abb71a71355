"""OpenAI's own context management: the Agents SDK's tool-output trimmer (`agents_sdk`) and
the Realtime API's retention-ratio truncation (`realtime`). Each module declares its presets."""

from . import agents_sdk, realtime

__all__ = ["agents_sdk", "realtime"]
