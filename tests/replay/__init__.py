"""Floor 4, running strategies: the replay engine, sweeps, calibration, measuring, sessions,
the live loop."""
