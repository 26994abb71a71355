"""The ``harpe-lab`` command line.

One parser, one error handler. Each subcommand's handler lives in a module of this package
(``replay``, ``sessions``, ``study`` for compare and tune, ``journal``, ``chat``, ``demo``) and is imported only when its subcommand runs,
so ``harpe-lab --help`` stays fast.

Exit codes::

    0    done
    1    bad input: a missing, empty, binary or unreadable file, a transcript in no known
         format, a strategy that cannot keep its budget, a failed model call — every
         `harpe_lab.errors.HarpeLabError` and `OSError`
    2    usage: an unknown option or choice, a value out of range
    130  interrupted (Ctrl-C)
    141  the reader of our output went away (``| head``)

Every error is ONE line on stderr, ``harpe-lab <command>: <what> — <how to fix>``; add
``--traceback`` to see the full Python traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from importlib import import_module
from typing import Any, NoReturn, Sequence

from ..errors import HarpeLabError

__all__ = ["main", "UsageError", "COUNTERS", "FORMATS"]

COUNTERS = ("cl100k_base", "o200k_base", "bytes", "approx")
"""The token counters ``--counter`` offers (tiktoken encodings, loaded offline, and estimates)."""

FORMATS = ("table", "json", "csv")
"""The output formats ``replay --format`` offers."""


class UsageError(HarpeLabError):
    """The command line itself is wrong (an unknown name, a value out of range): exit 2."""


class _Formatter(argparse.HelpFormatter):
    """Wraps help text at spaces only: preset names such as ``autogen-head-and-tail`` stay whole."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        import textwrap

        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the command and pointing to --help."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        message = " ".join(message.split())
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def positive_int(text: str, what: str = "tokens", example: str = "8000") -> int:
    """An argparse type: a whole number > 0 (``8000``, ``8_000``, ``8000.0``; not ``-5``) of ``what``."""
    try:
        value = float(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number of {what}, like {example}, but {text!r} was passed")
    if value != value or value in (float("inf"), float("-inf")) or value != int(value):
        raise argparse.ArgumentTypeError(f"must be a whole number of {what}, like {example}, but {text!r} was passed")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of {what}, like {example}, but {text!r} was passed")
    return int(value)


def _count_of(what: str, example: str):  # noqa: ANN202 - an argparse type
    def check(text: str) -> int:
        return positive_int(text, what, example)

    return check


def _choice(name: str, choices: Sequence[str]):  # noqa: ANN202 - an argparse type
    def check(text: str) -> str:
        if text in choices:
            return text
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(choices)}, but {text!r} was passed")

    check.__name__ = name
    return check


def _parser() -> argparse.ArgumentParser:
    """The command line: one subcommand each, declared by the `_add_*` below, in the order
    ``--help`` lists them."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true", default=argparse.SUPPRESS,
                        help="on an error, show the full Python traceback instead of one line")

    parser = _Parser(prog="harpe-lab", description="Replay agent conversations under context strategies.",
                     epilog="Run `harpe-lab replay --list` for the strategies and their knobs.")
    parser.add_argument("--traceback", action="store_true", default=False,
                        help="on an error, show the full Python traceback instead of one line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    _add_demo(sub, common)
    _add_replay(sub, common)
    _add_sessions(sub, common)
    _add_study(sub, common)
    _add_journal_and_chat(sub, common)
    return parser


def _add_demo(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("demo", parents=[common], help="replay the bundled datasets and write out/report/")
    p.add_argument("--out", default="out/report", help="report folder (default: out/report)")
    p.set_defaults(_target=("harpe_lab.cli.demo", "cli_demo"))


def _add_replay(sub: Any, common: argparse.ArgumentParser) -> None:
    from ..presets import STRATEGIES  # names only: the registry is data, cheap to import

    p = sub.add_parser(
        "replay", parents=[common],
        help="replay a transcript under one strategy and print the request table",
        description="Replay a recorded conversation under one context strategy and print one row per model "
                    "request, then the totals. Run with --list for every strategy, its family and its knobs.",
    )
    p.add_argument("path", nargs="?", help="a Harpe journal or any transcript load_any() reads "
                                           "(Claude Code, Codex, SWE-agent, LoCoMo, OpenAI messages, ...)")
    p.add_argument("--list", action="store_true", help="list the strategies with their knobs and exit")
    p.add_argument("--strategy", default="full", metavar="NAME",
                   help=f"one of {', '.join(STRATEGIES)} (default: full; --list describes them)")
    p.add_argument("--budget", type=positive_int, default=None, metavar="N",
                   help="the strategy's limit in tokens (default: the strategy's own; see --list)")
    p.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", dest="knobs",
                   help="set another knob of the strategy, e.g. --set n=50 (repeatable; see --list)")
    p.add_argument("--window", type=positive_int, default=None, metavar="N",
                   help="the context window, for a strategy that takes one (default: the window the recording "
                        "declares, else the strategy's own)")
    p.add_argument("--index", default=None, metavar="ID|N",
                   help="which conversation of a file that holds several (LoCoMo, tau-bench, ...): its id or "
                        "its position (default: the first)")
    p.add_argument("--counter", type=_choice("--counter", COUNTERS), default="cl100k_base", metavar="NAME",
                   help=f"tokenizer: {', '.join(COUNTERS)} (default: cl100k_base), calibrated on the recording's "
                        "provider usage when it has some")
    p.add_argument("--no-calibrate", action="store_true",
                   help="count with the tokenizer alone, even when the recording has provider usage")
    p.add_argument("--pricing", default="auto", metavar="auto|MODEL",
                   help="auto (default): price each call by the model the recording names for it; MODEL: price "
                        "every call as MODEL from litellm's offline price table, e.g. openai/gpt-4o; none: no cost")
    p.add_argument("--show", type=int, default=None, metavar="N",
                   help="print request N as the strategy would send it: each message, the summary, what was cut")
    p.add_argument("--no-redact", action="store_true",
                   help="show secrets found in the transcript's text as they are (by default they are redacted)")
    p.add_argument("--format", type=_choice("--format", FORMATS), default="table", metavar="FORMAT",
                   help="table (for people, default), json or csv (for scripts)")
    p.set_defaults(_target=("harpe_lab.cli.replay", "cli_replay"))


def _add_sessions(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "sessions", parents=[common],
        help="list your agent sessions: model, calls, peak input, recorded cost, compactions",
        description="One row per session under PATH (files or folders; with none, the standard locations of "
                    "Claude Code, Codex and the other agents that exist on this machine): agent, model, window, "
                    "model calls, peak input, recorded cost with and without caching, cache hits, and every "
                    "recorded compaction. Files that are not readable sessions are listed on stderr as skipped.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="session files or folders (default: standard locations)")
    p.add_argument("--format", type=_choice("--format", FORMATS), default="table", metavar="FORMAT",
                   help="table (for people, default), json or csv (for scripts)")
    p.add_argument("--plot", default=None, metavar="FILE",
                   help="also draw the compaction trigger points and the peak sizes to FILE (.png or .svg)")
    p.add_argument("--subagents", action="store_true", help="include Claude Code's subagent files")
    p.add_argument("--strict", action="store_true", help="exit 1 when any file was skipped")
    p.set_defaults(_target=("harpe_lab.cli.sessions", "cli_sessions"))


def _add_study(sub: Any, common: argparse.ArgumentParser) -> None:
    # `compare` and `tune` share their session arguments
    study = argparse.ArgumentParser(add_help=False)
    study.add_argument("paths", nargs="+", metavar="PATH", help="session files or folders of them")
    study.add_argument("--set", action="append", default=[], metavar="KNOB=VALUE", dest="knobs",
                       help="set a knob of every strategy that has it (repeatable)")
    study.add_argument("--pricing", default="auto", metavar="auto|MODEL",
                       help="auto (default): each call priced by its recorded model; MODEL: all as MODEL; none")
    study.add_argument("--workers", type=_count_of("worker processes", "2"), default=None, metavar="N",
                       help="replay on N processes (default: the usable cores)")

    p = sub.add_parser(
        "compare", parents=[common, study],
        help="replay your sessions under several strategies: tokens, cost with caching, compactions, retention",
        description="Replay every session under every strategy (and budget). Each session is counted with a "
                    "counter calibrated on its own recorded usage and priced by its own models; the totals per "
                    "strategy come first. --out writes an HTML report and the frame as CSV.",
    )
    p.add_argument("--strategies", required=True, metavar="A,B,C", help="preset names (`harpe-lab replay --list`)")
    p.add_argument("--budget", type=positive_int, default=None, metavar="N", help="one budget for every strategy")
    p.add_argument("--budgets", default=None, metavar="A,B,C", help="several budgets")
    p.add_argument("--window", type=positive_int, default=None, metavar="N",
                   help="the context window for presets that take one (default: each session's model's)")
    p.add_argument("--dask", default=None, metavar="ADDRESS", help="run on a dask cluster (its scheduler's address)")
    p.add_argument("--out", default=None, metavar="DIR", help="write the HTML report and compare.csv into DIR")
    p.add_argument("--no-redact", action="store_true",
                   help="show secrets found in the sessions' text as they are (by default they are redacted)")
    p.add_argument("--format", type=_choice("--format", FORMATS), default="table", metavar="FORMAT",
                   help="table (for people, default), json or csv (for scripts)")
    p.set_defaults(_target=("harpe_lab.cli.study", "cli_compare"))

    p = sub.add_parser(
        "tune", parents=[common, study],
        help="search one knob of a strategy over your sessions and print the agent's own setting for it",
        description="Search one knob of a strategy over all the sessions (a grid, refined around the best), "
                    "print the values tried and the frontier of cost against retention, recommend a value, and "
                    "print the agent's own configuration for it where the agent has one.",
    )
    p.add_argument("--strategy", required=True, metavar="NAME", help="the preset to tune")
    p.add_argument("--knob", default=None, metavar="KNOB=LO:HI",
                   help="the knob and its range (default: the budget knob, up to the model's window, or to the "
                        "largest recorded request where no window is known)")
    p.add_argument("--objective", type=_choice("--objective", ("cost", "tokens")), default="cost",
                   help="cost (with caching, default) or tokens (sent)")
    p.add_argument("--min-retention", type=float, default=None, metavar="X",
                   help="keep at least this share of what the full history held (sessions with probes)")
    p.add_argument("--no-overshoot", action="store_true", help="no request over the strategy's limit")
    p.add_argument("--points", type=_count_of("points", "8"), default=8, metavar="N",
                   help="values tried on the first grid, and again between the best one's neighbours (default 8)")
    p.add_argument("--plot", default=None, metavar="FILE", help="draw the cost (and retention) against the knob")
    p.set_defaults(_target=("harpe_lab.cli.study", "cli_tune"))


def _add_journal_and_chat(sub: Any, common: argparse.ArgumentParser) -> None:
    journal = sub.add_parser("journal", parents=[common], help="inspect or check a Harpe journal").add_subparsers(
        dest="subcommand", required=True, metavar="SUBCOMMAND"
    )
    p = journal.add_parser("inspect", parents=[common],
                           help="print the turns with outcomes, message counts and usage totals")
    p.add_argument("path", help="a Harpe journal (.jsonl)")
    p.set_defaults(_target=("harpe_lab.cli.journal", "cli_inspect"))
    p = journal.add_parser("check", parents=[common], help="list a journal's problems; exit 1 when there are any")
    p.add_argument("path", help="a Harpe journal (.jsonl)")
    p.set_defaults(_target=("harpe_lab.cli.journal", "cli_check"))

    p = sub.add_parser("chat", parents=[common], help="chat with a model through litellm, writing a Harpe journal")
    p.add_argument("path", help="the journal to write (resumed when it exists)")
    p.add_argument("--model", required=True, help="a provider-prefixed litellm model name, e.g. openai/gpt-4o-mini")
    p.add_argument("--system", default="You are a helpful assistant.", help="the base system prompt")
    p.set_defaults(_target=("harpe_lab.cli.chat", "cli_chat"))


def one_line(err: BaseException) -> str:
    """``err`` as one line: an `OSError` as ``path: what — how to fix``; a message of
    several lines as its first line with a pointer to ``--traceback``."""
    if isinstance(err, OSError) and not isinstance(err, HarpeLabError) and err.filename is not None:
        what = err.strerror or type(err).__name__
        advice = {
            FileNotFoundError: "check the path",
            IsADirectoryError: "pass one file, not a folder",
            NotADirectoryError: "check the path",
            PermissionError: "check the file's permissions",
        }.get(type(err), "check the file and try again")
        return f"{err.filename}: {what.lower()} — {advice}"
    text = str(err).strip() or type(err).__name__
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        return f"{lines[0].rstrip(':')} (run again with --traceback for the full message)"
    return lines[0]


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``harpe-lab`` with ``argv`` (default ``sys.argv[1:]``); return the exit code."""
    args = _parser().parse_args(argv)
    command = " ".join(filter(None, (args.command, getattr(args, "subcommand", None))))
    module, func = args._target
    try:
        return int(getattr(import_module(module), func)(args) or 0)
    except BrokenPipeError:
        # the reader went away (`| head`): stop quietly, as Unix tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print(f"harpe-lab {command}: interrupted", file=sys.stderr)
        return 130
    except (HarpeLabError, OSError) as err:
        if args.traceback:
            traceback.print_exc()
        else:
            print(f"harpe-lab {command}: {one_line(err)}", file=sys.stderr)
        return 2 if isinstance(err, UsageError) else 1


if __name__ == "__main__":
    sys.exit(main())
