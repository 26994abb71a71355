"""Shared fixtures. Tests never reach the network: litellm runs offline and models are
served by `tests._support.openai_server.OpenAIServer` on 127.0.0.1. What tests import
(builders, paths, checks) lives in `tests._support`."""

from __future__ import annotations

import fcntl
import json
import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from tests._support.data import REAL_DATA  # noqa: E402
from tests._support.openai_server import OpenAIServer  # noqa: E402


@pytest.fixture
def openai_server():
    with OpenAIServer() as server:
        yield server


@pytest.fixture
def real_data() -> Path:
    """``../shared/data/real``; the test is skipped when the folder is absent."""
    if not REAL_DATA.is_dir():
        pytest.skip(f"real data folder {REAL_DATA} is absent")
    return REAL_DATA


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory) -> tuple[Path, str]:
    """`make demo`'s job, run once for the whole run (it takes half a minute; `make test`'s
    two workers share it through this run's folder): the report's ``index.html`` and what
    the job printed. Tests only read it."""
    from harpe_lab.demo import run_demo

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the run's folder, above each worker's own
    printed = root / "demo.json"
    with open(root / "demo.lock", "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # the first worker runs it, the other waits and reads
        if not printed.exists():
            lines: list[str] = []
            (root / "demo").mkdir(exist_ok=True)
            index = run_demo(root / "demo", echo=lines.append)
            printed.write_text(json.dumps([str(index), lines]))
    index, lines = json.loads(printed.read_text())
    return Path(index), "\n".join(lines)
