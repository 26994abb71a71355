"""The whole project: the floor plan, the code's shape, the public API, the notebooks, the
benchmarks, and one session's totals the same everywhere."""
