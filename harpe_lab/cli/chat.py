"""``harpe-lab chat``: talk to a model through litellm, writing a Harpe journal."""

from __future__ import annotations

import argparse
import sys

__all__ = ["cli_chat"]


def cli_chat(args: argparse.Namespace) -> int:
    """``harpe-lab chat PATH --model NAME [--system TEXT]``: read lines from stdin until EOF,
    print each answer, and write the journal (resumed when it exists). Credentials come
    from the provider's usual environment variables (e.g. ``OPENAI_API_KEY``)."""
    from ..agent import Brain, chat
    from ..strategies.harpe import FullContext

    brain = Brain(args.model)
    system = args.system

    def factory(history: list) -> FullContext:
        return FullContext(system, history)

    try:
        session = chat(args.path, brain=brain, context=factory, input=sys.stdin,
                       output=lambda text: print(text, flush=True))
    except KeyboardInterrupt:  # Ctrl-C while waiting for a line: leave quietly
        return 130
    session.close()
    return 0
