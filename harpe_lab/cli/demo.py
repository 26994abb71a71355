"""``harpe-lab demo``: replay the bundled datasets and write the report."""

from __future__ import annotations

import argparse

__all__ = ["cli_demo"]


def cli_demo(args: argparse.Namespace) -> int:
    from ..demo import run_demo

    run_demo(args.out)
    return 0
