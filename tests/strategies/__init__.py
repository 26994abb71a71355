"""Floor 3, the strategies: one file or folder per family, the peers' differential tests
beside the native ones (and skipped alone when the `peers` extra is absent)."""
