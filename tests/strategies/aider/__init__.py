"""Aider's history summarization (`harpe_lab.strategies.aider`)."""
