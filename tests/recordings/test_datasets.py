"""Bundled datasets (list/load/describe, offline, reproducible from their generator) and the
synthetic conversation generator."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from importlib import metadata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from harpe_lab.conversation import Conversation
from harpe_lab.datasets import DatasetCard, describe, list_datasets, load, synthesize
from harpe_lab.messages import AssistantMessage, ToolResults, UserInput
from tests._support.data import ROOT

DATA = ROOT / "harpe_lab" / "datasets" / "data"
GENERATOR = ROOT / "tools" / "datasets" / "make_datasets.py"
DATA_SUFFIXES = (".json", ".jsonl", ".md")
NAMES = ["coding_agent", "research_assistant", "support_chat"]


def text_of(message) -> str:
    if isinstance(message, ToolResults):
        return "\n".join(r.content for r in message.results)
    return message.text


def check_probes(c: Conversation) -> None:
    """Evidence exists and comes before the question; probe ids are unique."""
    index = c.message_index()
    assert len({p.id for p in c.probes}) == len(c.probes)
    for p in c.probes:
        assert p.evidence, p.id
        assert 0 <= p.asked_at <= len(c.turns), p.id
        for e in p.evidence:
            assert e in index, (p.id, e)
            assert index[e][0] < p.asked_at, (p.id, e)


def calls_answered(c: Conversation) -> bool:
    for t in c.turns:
        for i, m in enumerate(t.messages):
            if isinstance(m, AssistantMessage) and m.calls:
                nxt = t.messages[i + 1] if i + 1 < len(t.messages) else None
                if not isinstance(nxt, ToolResults) or [r.id for r in nxt.results] != [x.id for x in m.calls]:
                    return False
    return True


@pytest.fixture(scope="module")
def loaded() -> dict[str, Conversation]:
    return {name: load(name) for name in NAMES}


class TestCatalogue:
    def test_lists_the_bundled_datasets(self):
        assert list_datasets() == NAMES

    def test_loading_twice_gives_equal_conversations(self, loaded):
        for name in NAMES:
            assert load(name) == loaded[name]

    def test_loaded_conversations_say_where_they_come_from(self, loaded):
        for name, c in loaded.items():
            assert c.id == name and c.source == f"dataset:{name}"
            assert c.metadata["dataset"] == name
        assert loaded["coding_agent"].metadata["format"] == "harpe"
        assert loaded["support_chat"].metadata["format"] == "harpe_lab"

    def test_an_unknown_name_lists_the_available_ones(self):
        with pytest.raises(ValueError, match=r"name must be one of \['coding_agent', .*\], but 'nope' was passed"):
            load("nope")
        with pytest.raises(ValueError, match="but 3 was passed"):
            describe(3)  # type: ignore[arg-type]

    def test_every_probe_points_at_earlier_messages(self, loaded):
        for c in loaded.values():
            check_probes(c)
            assert calls_answered(c)

    def test_the_files_stay_small(self):
        total = sum(p.stat().st_size for p in DATA.iterdir() if p.suffix in DATA_SUFFIXES)
        assert total < 3_000_000


class TestCards:
    @pytest.mark.parametrize("name", NAMES)
    def test_each_dataset_has_a_card_whose_numbers_match_the_data(self, name, loaded):
        card = describe(name)
        assert isinstance(card, DatasetCard) and card.name == name
        assert card.title.startswith(name)
        text = str(card)
        for heading in ("## What", "## How it was made", "## Size", "## Probes"):
            assert heading in text
        s = loaded[name].summary()
        assert f"| turns | {s['turns']} |" in text
        assert f"| messages | {s['messages']} |" in text
        assert f"| probes | {s['probes']} |" in text
        assert f"`{card.file}` ({card.size:,} bytes)" in text
        for p in loaded[name].probes:
            assert f"| {p.id} | {p.asked_at} |" in text
        assert card._repr_markdown_() == text


class TestSupportChat:
    def test_is_long_with_facts_planted_early_and_asked_late(self, loaded):
        c = loaded["support_chat"]
        assert len(c) >= 150
        index = c.message_index()
        assert len(c.probes) >= 10
        for p in c.probes:
            assert p.asked_at >= len(c) - 40
        assert min(index[p.evidence[0]][0] for p in c.probes) <= 5

    def test_the_changed_phone_number_is_the_answer(self, loaded):
        c = loaded["support_chat"]
        (p,) = [p for p in c.probes if p.id == "phone"]
        assert p.category == "knowledge-update" and p.answer == "(555) 014-8830"
        t, j = c.message_index()[p.evidence[0]]
        assert "014-8830" in text_of(c.turns[t].all_messages[j])
        old = [k for k, turn in enumerate(c.turns) if "014-2297" in turn.input.text]
        assert old and old[0] < t

    def test_answers_appear_in_the_evidence(self, loaded):
        c = loaded["support_chat"]
        index = c.message_index()
        for pid in ("account", "serial", "gate_code", "dog", "ticket", "technician", "plan"):
            (p,) = [p for p in c.probes if p.id == pid]
            texts = [text_of(c.turns[index[e][0]].all_messages[index[e][1]]) for e in p.evidence]
            assert any(p.answer in t for t in texts), pid


class TestCodingAgent:
    def test_has_a_failed_an_interrupted_and_a_nested_turn(self, loaded):
        c = loaded["coding_agent"]
        outcomes = [t.outcome for t in c.turns]
        assert outcomes.count("failed") == 1 and outcomes.count("interrupted") == 1
        failed = c.turns[outcomes.index("failed")]
        assert failed.error.startswith("RateLimitError: 429") and failed.messages == ()
        nested = [t for t in c.turns if t.metadata["nested_usage"]]
        assert len(nested) == 1 and len(nested[0].metadata["nested_usage"]) == 2

    def test_every_kept_reply_has_its_usage(self, loaded):
        for t in loaded["coding_agent"].turns:
            replies = sum(isinstance(m, AssistantMessage) for m in t.messages)
            if t.outcome == "answered":
                assert len(t.usage) == replies
            for u in t.usage:
                assert u.input_tokens == u.cache_read_tokens + u.cache_write_tokens
                assert u.provider == "anthropic" and u.output_tokens > 0

    def test_tool_results_are_large_and_many(self, loaded):
        c = loaded["coding_agent"]
        results = [r for m in c.messages() if isinstance(m, ToolResults) for r in m.results]
        assert len(results) >= 40
        assert max(len(r.content) for r in results) > 5_000
        assert sum(len(r.content) for r in results) > 80_000

    def test_the_input_grows_over_the_session(self, loaded):
        inputs = [u.input_tokens for t in loaded["coding_agent"].turns for u in t.usage]
        assert inputs[-1] > 3 * inputs[0]

    def test_it_is_a_journal_harpe_reads(self):
        from harpe_lab.journal import Journal

        records = Journal.records(DATA / "coding_agent.jsonl")
        assert records.generations == ("G5",) and not records.problems
        assert len(records) == len(load("coding_agent"))


class TestResearchAssistant:
    def test_spans_several_dated_sessions(self, loaded):
        c = loaded["research_assistant"]
        sessions = [t.metadata["session"] for t in c.turns]
        assert sessions == sorted(sessions) and len(set(sessions)) >= 4
        dates = [t.metadata["date"] for t in c.turns]
        assert dates == sorted(dates) and len(set(dates)) == len(set(sessions))

    def test_the_same_question_has_different_answers_before_and_after_an_update(self, loaded):
        c = loaded["research_assistant"]
        by = {p.id: p for p in c.probes}
        assert by["deadline_before"].question == by["deadline"].question
        assert by["deadline_before"].answer == "April 2" and by["deadline"].answer == "April 16"
        assert by["deadline_before"].asked_at < by["deadline"].asked_at
        index = c.message_index()
        assert index[by["deadline"].evidence[0]][0] >= by["deadline_before"].asked_at
        assert by["budget_before"].answer.startswith("$250,000") and by["budget"].answer.startswith("$180,000")
        assert sum(p.category == "knowledge-update" for p in c.probes) >= 5


class TestReproducible:
    def test_the_generator_rewrites_the_committed_files_exactly(self, tmp_path):
        subprocess.run([sys.executable, str(GENERATOR), "--out", str(tmp_path)],
                       check=True, capture_output=True, timeout=120)
        committed = sorted(p for p in DATA.iterdir() if p.suffix in DATA_SUFFIXES)
        assert [p.name for p in committed] == sorted(p.name for p in tmp_path.iterdir())
        for p in committed:
            assert (tmp_path / p.name).read_bytes() == p.read_bytes(), p.name

    def test_the_generator_scripts_live_in_tools_not_in_the_package(self):
        assert sorted(p.name for p in GENERATOR.parent.glob("*.py")) == [
            "coding_agent_script.py", "ledgerly_files.py", "make_datasets.py", "research_script.py",
            "support_script.py"]
        assert sorted(p.name for p in DATA.glob("*.py")) == ["__init__.py"]

    def test_the_package_reads_its_own_data_folder_with_no_link(self):
        from importlib import resources

        root = resources.files("harpe_lab.datasets.data")
        assert Path(str(root)).resolve() == DATA
        assert not (ROOT / "harpe_lab" / "_datasets").exists()
        links = [p for p in (ROOT / "harpe_lab").rglob("*") if p.is_symlink()]
        assert links == []

    def test_the_top_level_folder_says_where_the_data_went(self):
        readme = (ROOT / "datasets" / "README.md").read_text(encoding="utf-8")
        assert "harpe_lab/datasets/data/" in readme
        assert ".venv/bin/python tools/datasets/make_datasets.py" in readme
        assert sorted(p.name for p in (ROOT / "datasets").iterdir()) == ["README.md"]

    def test_pyproject_ships_every_data_file_in_the_wheel(self):
        tomllib = pytest.importorskip("tomllib")  # Python 3.11+

        config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
        patterns = config["package-data"]["harpe_lab.datasets.data"]
        for p in DATA.iterdir():
            if p.suffix in DATA_SUFFIXES:
                assert f"*{p.suffix}" in patterns, p.name

    def test_a_copy_without_its_data_files_says_to_reinstall(self, monkeypatch, tmp_path):
        import harpe_lab.datasets as module

        (tmp_path / "__init__.py").write_text("")
        (tmp_path / "orphan.json").write_text("{}")  # a data file with no card is not a dataset
        monkeypatch.setattr(module, "_root", lambda: tmp_path)
        with pytest.raises(FileNotFoundError, match=r"no bundled dataset .* in .*: reinstall it"):
            list_datasets()


# A setuptools warning is a Python warning category (SetuptoolsDeprecationWarning,
# BuildBackendWarning, ...) or the "!!" banner setuptools draws around one; distutils'
# lowercase "warning: ... byte-compiling is disabled" notes are not warnings about us.
SETUPTOOLS_WARNING = re.compile(r"\w*Warning\b|^[ \t]*!![ \t]*$", re.MULTILINE)


def _setuptools_can_build() -> str | None:
    """Why this environment cannot build the wheel without the network, or None."""
    try:
        version = metadata.version("setuptools")
    except metadata.PackageNotFoundError:
        return "setuptools is not installed"
    if int(version.split(".")[0]) < 77:
        return f"setuptools {version} is older than pyproject's build requirement setuptools>=77"
    return None


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, str]:
    """The wheel and pip's verbose build log, built from a copy of the package with the current
    environment's setuptools (no network, no build isolation)."""
    reason = _setuptools_can_build()
    if reason:
        pytest.skip(f"{reason}; install it with `.venv/bin/pip install 'setuptools>=77'`")
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    shutil.copytree(ROOT / "harpe_lab", src / "harpe_lab",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info"))
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "--no-build-isolation",
                          "--no-index", "-w", str(work / "dist"), str(src)],
                         capture_output=True, text=True, timeout=300, cwd=work)
    log = out.stdout + out.stderr
    assert out.returncode == 0, log
    (wheel,) = (work / "dist").glob("harpe_lab-*.whl")
    return wheel, log


@pytest.mark.slow
class TestWheel:
    """The wheel carries the datasets: installed into a fresh venv, it loads them from there."""

    def test_building_prints_no_setuptools_warning(self, built):
        _, log = built
        assert "Successfully built harpe_lab" in log or "Created wheel for harpe_lab" in log
        warnings = [m.group(0) for m in SETUPTOOLS_WARNING.finditer(log)]
        assert warnings == [], log

    def test_the_wheel_holds_the_data_and_no_generator(self, built):
        import zipfile

        wheel, _ = built
        names = set(zipfile.ZipFile(wheel).namelist())
        for p in DATA.iterdir():
            if p.suffix in DATA_SUFFIXES:
                assert f"harpe_lab/datasets/data/{p.name}" in names
        assert not [n for n in names if "make_datasets" in n or "_script" in n or n.startswith(("tools/", "datasets/"))]

    def test_the_installed_wheel_loads_a_dataset(self, built, tmp_path):
        wheel, _ = built
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv)],
                       check=True, capture_output=True, timeout=120)
        python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP")}
        # the fresh venv sees this environment's packages (pandas, orjson, pip, ...) through a .pth
        # file; .pth files inside those folders are not run, so this checkout's editable install
        # of harpe_lab stays invisible and only the wheel's copy can be imported
        site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True, env=env).stdout.strip()
        parents = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        (Path(site) / "_parent_env.pth").write_text("\n".join(parents) + "\n")
        install = subprocess.run([str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed",
                                  "--no-compile", str(wheel)], capture_output=True, text=True, timeout=300,
                                 cwd=tmp_path, env=env)
        log = install.stdout + install.stderr
        assert install.returncode == 0, log
        assert [m.group(0) for m in SETUPTOOLS_WARNING.finditer(log)] == [], log
        script = ("import harpe_lab, harpe_lab.datasets as d\n"
                  "print(harpe_lab.__file__)\n"
                  "c = d.load('coding_agent')\n"
                  "print(d.list_datasets(), len(c), len(c.probes), d.describe('support_chat').title)\n")
        run = subprocess.run([str(python), "-c", script], capture_output=True, text=True, timeout=120,
                             cwd=tmp_path, env=env)
        assert run.returncode == 0, run.stderr
        where, found = run.stdout.splitlines()
        assert Path(where).resolve().is_relative_to(venv.resolve()), where
        assert not Path(where).resolve().is_relative_to(ROOT)
        expected = load("coding_agent")
        assert found == (f"{NAMES} {len(expected)} {len(expected.probes)} "
                         f"support_chat — a long customer-support chat")


class TestSynthesize:
    def test_is_deterministic_per_seed(self):
        assert synthesize(300, seed=4, updates=2) == synthesize(300, seed=4, updates=2)
        assert synthesize(300, seed=4) != synthesize(300, seed=5)

    def test_scales_to_ten_thousand_turns(self):
        # how fast is the benchmarks' business (benchmarks/replay.py synthesizes a 1M-token one)
        c = synthesize(10_000, seed=1)
        assert len(c) == 10_000
        assert len({t.input.text for t in c.turns}) > 1_000  # drawn from templates, not one turn repeated

    def test_probes_ask_for_planted_facts_after_they_were_stated(self):
        c = synthesize(400, seed=7, facts=13, updates=3)
        check_probes(c)
        assert len(c.probes) == 13
        index = c.message_index()
        for p in c.probes:
            t, j = index[p.evidence[0]]
            assert p.answer in text_of(c.turns[t].all_messages[j])
            assert t < 200 or p.category == "knowledge-update"
            assert p.asked_at >= 400 - 80
        assert {p.category for p in c.probes} == {"user-fact", "tool-fact", "knowledge-update"}

    def test_an_updated_fact_is_answered_with_its_newest_value(self):
        c = synthesize(200, seed=3, facts=4, updates=4)
        index = c.message_index()
        for p in c.probes:
            t, _ = index[p.evidence[0]]
            assert p.category == "knowledge-update"
            assert c.turns[t].input.text.startswith("Correction:")
            later = [k for k in range(t + 1, len(c)) if p.answer in c.turns[k].input.text]
            assert later == []  # nothing after the update changes it again

    def test_tool_facts_live_in_tool_results(self):
        c = synthesize(60, seed=2, facts=13, tool_rate=0.0)
        index = c.message_index()
        tool = [p for p in c.probes if p.category == "tool-fact"]
        assert len(tool) == 3
        for p in tool:
            t, j = index[p.evidence[0]]
            assert isinstance(c.turns[t].all_messages[j], ToolResults)

    def test_tool_rate_and_result_size(self):
        none = synthesize(200, seed=1, facts=0, tool_rate=0.0)
        assert none.summary()["tool_calls"] == 0 and none.probes == ()
        every = synthesize(200, seed=1, facts=0, tool_rate=1.0, result_chars=500)
        assert all(any(isinstance(m, ToolResults) for m in t.messages) for t in every.turns)
        sizes = [len(r.content) for m in every.messages() if isinstance(m, ToolResults) for r in m.results]
        assert 250 <= min(sizes) and max(sizes) <= 750
        assert 400 < sum(sizes) / len(sizes) < 600
        assert calls_answered(every)

    @pytest.mark.parametrize("kwargs,message", [
        ({"turns": 0}, "turns must be an int >= 1, got 0"),
        ({"turns": 10, "facts": 14}, "facts must be an int from 0 to 13, got 14"),
        ({"turns": 10, "facts": 2, "updates": 3},
         "updates must be an int from 0 to the number of user-stated facts, got 3"),
        ({"turns": 10, "tool_rate": 1.5}, "tool_rate must be between 0 and 1, got 1.5"),
        ({"turns": 10, "result_chars": 0}, "result_chars must be an int >= 1, got 0"),
        ({"turns": 2}, "turns must be at least 3 when facts are planted, got 2"),
    ])
    def test_bad_arguments_show_the_value(self, kwargs, message):
        turns = kwargs.pop("turns")
        with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
            synthesize(turns, **kwargs)

    @settings(max_examples=30, deadline=None)
    @given(turns=st.integers(3, 120), seed=st.integers(0, 10_000), facts=st.integers(0, 13), data=st.data())
    def test_invariants_hold_for_any_arguments(self, turns, seed, facts, data):
        updates = data.draw(st.integers(0, min(facts, 10)))
        c = synthesize(turns, seed=seed, facts=facts, updates=updates, tool_rate=0.5, result_chars=100)
        assert len(c) == turns and len(c.probes) == facts
        check_probes(c)
        assert calls_answered(c)
        assert all(isinstance(t.input, UserInput) and t.input.text for t in c.turns)
