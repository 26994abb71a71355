"""The tests, in folders that mirror the package's floors (docs/architecture.md); what they
share is in `tests._support`."""
