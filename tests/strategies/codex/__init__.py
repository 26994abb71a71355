"""Codex CLI's auto-compaction and tool-output truncation (`harpe_lab.strategies.codex`)."""
