"""Roo Code's condensing (`harpe_lab.strategies.roo`)."""
