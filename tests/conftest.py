"""Shared fixtures. Tests never reach the network: litellm runs offline and models are
served by `tests._support.openai_server.OpenAIServer` on 127.0.0.1. What tests import
(builders, paths, checks) lives in `tests._support`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")

from tests._support.data import REAL_DATA  # noqa: E402
from tests._support.openai_server import OpenAIServer  # noqa: E402


# `make test` runs the suite on two workers (pytest-xdist, `--dist loadgroup`): each file
# goes to one worker whole (a notebook's cells run in order, a module's fixtures are made
# once), and files that read one session-wide fixture go together, so it is made once.
_TOGETHER = {"tests/views/test_demo.py": "demo_report", "tests/views/test_browser_report.py": "demo_report"}


def pytest_collection_modifyitems(config, items):
    root = config.rootpath
    for item in items:
        where = item.path.relative_to(root).as_posix() if item.path.is_relative_to(root) else str(item.path)
        item.add_marker(pytest.mark.xdist_group(_TOGETHER.get(where, where)))


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
    """`make demo`'s job, run once for the whole session (it takes half a minute): the
    report's ``index.html`` and what the job printed. Tests only read it."""
    from harpe_lab.demo import run_demo

    lines: list[str] = []
    index = run_demo(tmp_path_factory.mktemp("demo"), echo=lines.append)
    return index, "\n".join(lines)

