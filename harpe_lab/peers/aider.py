"""Aider's own ``ChatSummary`` (``aider/history.py``), run as the summarizer of Aider's
history summarization in Harpe's lifecycle.

`AiderChatSummary` is a `harpe_lab.strategies.aider.Summarizer`: given Aider's chat messages
(`harpe_lab.strategies.aider.aider_messages`), it builds ``aider.history.ChatSummary`` with one
model object and calls ``summarize``, exactly as Aider's ``Coder.summarize_worker`` does. The
model object is our side behind Aider's model interface: ``token_count`` is the context's
count (a message: the tokens of ``json.dumps(message)``, as ``Model.token_count``; a list:
the counter's price of a chat, for ``litellm.token_counter``), ``info["max_input_tokens"]``
the configured window, and ``simple_send_with_retries`` the context's distiller. What comes
back maps to our messages by identity: a dict Aider kept is the very dict it was given.
`aider_context` is the native `harpe_lab.strategies.aider.AiderContext` with this summarizer,
so the two differ only in whose ``ChatSummary`` runs. Tested against aider-chat 0.86.2.

aider-chat pins exact versions of some fifty packages (numpy 1.26, litellm, openai, …) that
clash with harpe_lab's, so it usually lives in a virtual environment of its own. Give its
interpreter as ``python=`` (or set ``HARPE_LAB_AIDER_PYTHON``): Aider's code then runs in a
worker process of that interpreter, which calls back over a pipe (one JSON line per call)
for every token count and summary, so the counting and the distiller stay ours. Without it,
``aider`` must be importable here. `install_aider` makes such an environment.
"""

from __future__ import annotations

import atexit
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Callable

from ..errors import StrategyError
from ..protocol import Distill
from ..strategies.aider import Aider, AiderContext

__all__ = ["AIDER_VERSION", "AiderChatSummary", "aider_context", "install_aider", "aider_python"]

AIDER_VERSION = "0.86.2"
"""The aider-chat release the differential tests run (``aider/history.py`` as read)."""

ENV = "HARPE_LAB_AIDER_PYTHON"

# The worker runs in Aider's interpreter: it cannot import harpe_lab. One JSON object a line
# each way; Aider's own prints go to stderr so they never mix with the protocol.
_WORKER = r'''
import json, os, sys
out = os.fdopen(os.dup(1), "w", encoding="utf-8")
os.dup2(2, 1)
sys.stdout = sys.stderr
inp = sys.stdin

def send(obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()

def call(obj):
    send(obj)
    line = inp.readline()
    if not line:
        sys.exit(0)
    return json.loads(line)

import aider
from aider.history import ChatSummary

class Model:
    name = "harpe-lab-distiller"

    def __init__(self, window):
        self.info = {"max_input_tokens": window}

    def token_count(self, value):
        return call({"op": "count", "value": value})["tokens"]

    def simple_send_with_retries(self, messages):
        return call({"op": "send", "messages": messages})["reply"]

send({"op": "ready", "version": aider.__version__})
for line in inp:
    request = json.loads(line)
    messages = request["messages"]
    given = {id(m): k for k, m in enumerate(messages)}
    try:
        result = ChatSummary([Model(request["window"])], request["max_tokens"]).summarize(messages)
        items = [["kept", given[id(m)]] if id(m) in given else ["new", m] for m in result]
        send({"op": "result", "items": items})
    except ValueError as exc:
        send({"op": "error", "message": str(exc)})
'''


def aider_python() -> str | None:
    """The interpreter named by ``HARPE_LAB_AIDER_PYTHON``, if set."""
    return os.environ.get(ENV) or None


class _Worker:
    """One worker process of an interpreter with aider-chat, shared by every summarizer
    that names it (starting one imports Aider: about half a second)."""

    _running: dict[str, "_Worker"] = {}
    _lock = threading.Lock()

    def __init__(self, python: str) -> None:
        self._errors = tempfile.TemporaryFile()
        self.process = subprocess.Popen([python, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self._errors, text=True, encoding="utf-8", bufsize=1)
        ready = self._read()
        if ready.get("op") != "ready":
            raise StrategyError(f"the aider worker started with {ready!r}, expected 'ready'")
        self.version: str = ready["version"]
        self.lock = threading.Lock()

    @classmethod
    def stop_all(cls) -> None:
        """End every worker: closing its input ends its loop."""
        with cls._lock:
            for worker in cls._running.values():
                if worker.process.stdin is not None:
                    worker.process.stdin.close()
                try:
                    worker.process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    worker.process.kill()
                    worker.process.wait()
                if worker.process.stdout is not None:
                    worker.process.stdout.close()
                worker._errors.close()
            cls._running.clear()

    @classmethod
    def get(cls, python: str) -> "_Worker":
        with cls._lock:
            worker = cls._running.get(python)
            if worker is None or worker.process.poll() is not None:
                worker = cls._running[python] = cls(python)
            return worker

    def _read(self) -> dict:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self._errors.seek(0)
            tail = self._errors.read().decode("utf-8", "replace")[-2000:]
            raise StrategyError(f"the aider worker ({self.process.args[0]}) stopped; it said:\n{tail}")
        return json.loads(line)

    def _write(self, obj: dict) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(obj) + "\n")
        self.process.stdin.flush()

    def summarize(self, messages: list[dict], *, max_tokens: float, window: int,
                  answer: Callable[[dict], dict]) -> list[dict]:
        with self.lock:
            self._write({"messages": messages, "max_tokens": max_tokens, "window": window})
            while True:
                msg = self._read()
                op = msg.get("op")
                if op == "result":
                    return [messages[value] if kind == "kept" else value for kind, value in msg["items"]]
                if op == "error":
                    raise ValueError(msg["message"])
                self._write(answer(msg))


atexit.register(_Worker.stop_all)


class AiderChatSummary:
    """A `harpe_lab.strategies.aider.Summarizer` that runs Aider's own ``ChatSummary``:
    in this interpreter when ``python`` is None (``aider`` must be importable), else in a
    worker process of ``python`` (an interpreter with aider-chat installed)."""

    def __init__(self, python: str | None = None) -> None:
        python = python or aider_python()
        if python is None:
            if importlib.util.find_spec("aider") is None:
                raise ImportError(
                    "harpe_lab.peers.aider runs Aider's own ChatSummary: install aider-chat "
                    f"(`pip install aider-chat=={AIDER_VERSION}`, best in a virtual environment of its own: it pins "
                    f"numpy, litellm and openai) and pass its interpreter as python= or in ${ENV}"
                )
            self.python = None
        else:
            if not Path(python).is_file():
                raise StrategyError(f"python must be the path of an interpreter with aider-chat, got {python!r}")
            self.python = python

    @property
    def version(self) -> str:
        """The aider-chat version that runs."""
        if self.python is None:
            import aider

            return aider.__version__
        return _Worker.get(self.python).version

    def __call__(self, messages: list[dict[str, str]], *, max_tokens: float, window: int,
                 count: Callable[[dict[str, str]], int], count_chat: Callable[[list[dict[str, str]]], int],
                 send: Callable[[list[dict[str, str]]], str | None]) -> list[dict[str, str]]:
        def token_count(value: Any) -> int:
            # aider's Model.token_count: a list is a chat (litellm.token_counter), a dict one
            # message (its JSON); ChatSummary never asks for anything else
            if isinstance(value, list):
                return count_chat(value)
            if isinstance(value, dict):
                return count(value)
            raise StrategyError(f"Aider asked for the tokens of a {type(value).__name__}; only messages are counted")

        if self.python is None:
            from aider.history import ChatSummary

            model = _InProcessModel(window, token_count, send)
            return ChatSummary([model], max_tokens).summarize(messages)

        def answer(msg: dict) -> dict:
            if msg.get("op") == "count":
                return {"tokens": token_count(msg["value"])}
            if msg.get("op") == "send":
                return {"reply": send(msg["messages"])}
            raise StrategyError(f"the aider worker asked {msg!r}")

        return _Worker.get(self.python).summarize(messages, max_tokens=max_tokens, window=window, answer=answer)

    def __repr__(self) -> str:
        return f"AiderChatSummary(python={self.python!r})"


class _InProcessModel:
    """Aider's model interface, in this interpreter."""

    name = "harpe-lab-distiller"

    def __init__(self, window: int, token_count: Callable[[Any], int], send: Callable) -> None:
        self.info = {"max_input_tokens": window}
        self.token_count = token_count
        self.simple_send_with_retries = send


def aider_context(system: str, config: Aider, *, counter: Any, distill: Distill, python: str | None = None,
                  on_event: Callable[[object], None] | None = None) -> AiderContext:
    """The native `AiderContext`, summarizing with Aider's own ``ChatSummary``."""
    return config.context(system, counter=counter, distill=distill, summarizer=AiderChatSummary(python),
                          on_event=on_event)


def install_aider(where: str | os.PathLike, *, version: str = AIDER_VERSION, timeout: float = 900) -> str:
    """A virtual environment at ``where`` with aider-chat ``version`` (made once: an existing
    one is reused), and its interpreter's path. Needs pip to reach PyPI; raises
    `StrategyError` with pip's own words when it cannot."""
    where = Path(where)
    python = where / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    stamp = where / f".aider-chat-{version}"
    if stamp.is_file() and python.is_file():
        return str(python)
    steps = [[sys.executable, "-m", "venv", str(where)],
             # a short timeout and few retries: without PyPI this fails in a minute, not five
             [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--timeout", "20",
              "--retries", "2", f"aider-chat=={version}"]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise StrategyError(f"could not install aider-chat {version} in {where}: {' '.join(step[:3])} … said:\n"
                                f"{(done.stderr or done.stdout)[-2000:]}")
    stamp.write_text(version, encoding="utf-8")
    return str(python)
