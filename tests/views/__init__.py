"""Floor 6, views: plots, widgets, the reports, the demo, in a real browser too."""
