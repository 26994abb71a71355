"""Anthropic's tool-result clearing and Claude Code's auto-compact."""
