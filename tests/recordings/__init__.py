"""Floor 1, recordings: journals, importers, bundled datasets, generated sessions."""
