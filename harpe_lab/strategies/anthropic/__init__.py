"""Anthropic's own context management: tool-result clearing, the API's context edit
(`clearing`); Claude Code's auto-compact (`claude_code`); the SDK tool runner's compaction
(`tool_runner`). Each module declares its presets."""

from . import claude_code, clearing, tool_runner

__all__ = ["clearing", "claude_code", "tool_runner"]
