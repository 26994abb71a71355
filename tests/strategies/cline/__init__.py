"""Cline's compaction (`harpe_lab.strategies.cline`)."""
