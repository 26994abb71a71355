"""Goose's context management (`harpe_lab.strategies.goose`)."""
