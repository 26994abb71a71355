"""Floor 3, the distillers (`harpe_lab.summarize`)."""
