"""OpenCode's session compaction (`harpe_lab.strategies.opencode`)."""
