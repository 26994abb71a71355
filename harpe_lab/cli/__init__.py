"""The ``harpe-lab`` command line. Each subcommand's work lives in the module it belongs to;
that module is imported only when its subcommand runs."""

from __future__ import annotations

import argparse
import os
import sys
from importlib import import_module
from typing import Sequence

from ..errors import HarpeLabError

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="harpe-lab", description="Replay agent conversations under context strategies.")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="replay the bundled datasets and write out/report/")
    p.add_argument("--out", default="out/report", help="report folder (default: out/report)")
    p.set_defaults(_target=("harpe_lab.cli.demo", "cli_demo"))

    p = sub.add_parser("replay", help="replay a transcript under one strategy and print the request table")
    p.add_argument("path", help="a Harpe journal or any transcript load_any() reads")
    p.add_argument("--strategy", default="full", help="strategy name (see --list)")
    p.add_argument("--budget", type=int, default=None, help="the strategy's budget (tokens or chars, per strategy)")
    p.add_argument("--counter", default="cl100k_base", help="cl100k_base, o200k_base, bytes or approx")
    p.set_defaults(_target=("harpe_lab.cli_replay", "cli_replay"))

    journal = sub.add_parser("journal", help="inspect or check a Harpe journal").add_subparsers(
        dest="subcommand", required=True
    )
    p = journal.add_parser("inspect", help="print the turns with outcomes, message counts and usage totals")
    p.add_argument("path")
    p.set_defaults(_target=("harpe_lab.cli.journal", "cli_inspect"))
    p = journal.add_parser("check", help="list a journal's problems; exit 1 when there are any")
    p.add_argument("path")
    p.set_defaults(_target=("harpe_lab.cli.journal", "cli_check"))

    p = sub.add_parser("chat", help="chat with a model through litellm, writing a Harpe journal")
    p.add_argument("path", help="the journal to write (resumed when it exists)")
    p.add_argument("--model", required=True, help="a provider-prefixed litellm model name, e.g. openai/gpt-4o-mini")
    p.add_argument("--system", default="You are a helpful assistant.", help="the base system prompt")
    p.set_defaults(_target=("harpe_lab.cli.chat", "cli_chat"))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    module, func = args._target
    try:
        return int(getattr(import_module(module), func)(args) or 0)
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except (HarpeLabError, OSError) as err:
        print(f"harpe-lab {args.command}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
