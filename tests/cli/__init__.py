"""Floor 7, people: the command line."""
