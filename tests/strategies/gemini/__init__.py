"""Gemini CLI's chat compression and tool-output masking (`harpe_lab.strategies.gemini`)."""
