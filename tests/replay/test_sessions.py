"""``harpe-lab sessions``: a folder of a user's sessions at a glance — one row per session with
its recorded figures and compactions; a file that is not a readable session is named once on
stderr with its reason, and never stops or changes the rest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from harpe_lab.cli import main
from harpe_lab.importers import load_any
from harpe_lab.recorded import recorded
from harpe_lab.sessions import Skipped, _imported, scan_session, scan_sessions, sessions_frame
from tests._support.data import DATA, REAL_DATA

CLAUDE = REAL_DATA / "claude_code"
CODEX = REAL_DATA / "codex"
real = pytest.mark.skipif(not (CLAUDE.is_dir() and CODEX.is_dir()), reason="real sessions are not on this machine")
FIGURES = ("calls", "peak_input_tokens", "input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def real_sessions() -> list[Path]:
    return sorted(CLAUDE.glob("*.jsonl")) + sorted(CODEX.glob("rollout-*.jsonl"))


@real
@pytest.mark.real_data
class TestRealSessions:
    def test_the_streaming_reader_agrees_with_the_importer(self):
        """The fast road (usage records only) and the importer's give the same figures."""
        for path in real_sessions():
            fast, full = scan_session(path), _imported(path)
            assert [getattr(fast, f) for f in FIGURES] == [getattr(full, f) for f in FIGURES], path.name
            assert fast.cost_usd_cached == pytest.approx(full.cost_usd_cached), path.name
            assert fast.compactions == full.compactions, path.name

    def test_every_recorded_compaction_is_listed(self, capsys):
        code, out, _ = run(["sessions", CLAUDE, CODEX, "--format", "json"], capsys)
        assert code == 0
        doc = json.loads(out)
        assert len(doc["sessions"]) == len(real_sessions())
        listed = {(Path(c["path"]).name, c["tokens_before"], c["tokens_after"]) for c in doc["compactions"]}
        expected = set()
        for path in real_sessions():
            conv = load_any(path)
            for point in recorded(conv).compactions:
                expected.add((path.name, point.tokens_before, point.tokens_after))
            for c in conv.compactions:  # the agent's own figure, to the token
                if c.pre_tokens:
                    assert any(n == path.name and before == c.pre_tokens for n, before, _ in listed)
        assert listed == expected and len(listed) == 4
        codex = next(c for c in doc["compactions"] if c["agent"] == "codex")
        assert (codex["tokens_before"], codex["tokens_after"], codex["window"]) == (209_950, 48_297, 258_400)

    def test_the_table_and_its_summary_line(self, capsys):
        code, out, err = run(["sessions", CLAUDE], capsys)
        assert code == 0 and err == ""
        assert "auto after 61 calls: 170.3k→36.1k (85%)" in out
        assert out.rstrip().splitlines()[-1].startswith("6 sessions (6 claude_code): 451 model calls, recorded cost $")


@real
@pytest.mark.real_data
class TestBadFiles:
    @pytest.fixture()
    def folder(self, tmp_path) -> Path:
        """Real sessions beside a truncated copy, an empty, a binary, a dangling link, a link
        loop and a JSON file that is no session."""
        for path in real_sessions()[:2]:
            shutil.copy(path, tmp_path / path.name)
        whole = real_sessions()[1].read_bytes()
        (tmp_path / "growing.jsonl").write_bytes(whole[: whole.rindex(b"\n", 0, len(whole) - 1) + 40])
        (tmp_path / "empty.jsonl").write_bytes(b"")
        (tmp_path / "binary.jsonl").write_bytes(bytes(range(256)) * 4)
        (tmp_path / "gone.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
        (tmp_path / "loop.jsonl").symlink_to(tmp_path / "loop.jsonl")
        (tmp_path / "settings.json").write_text(json.dumps({"theme": "dark"}))
        return tmp_path

    def test_every_session_is_read_and_every_bad_file_named_once(self, folder, capsys):
        code, out, err = run(["sessions", folder, "--format", "json"], capsys)
        assert code == 0
        doc = json.loads(out)
        names = sorted(Path(s["path"]).name for s in doc["sessions"])
        assert names == sorted([p.name for p in real_sessions()[:2]] + ["growing.jsonl"])
        reasons = {Path(s["path"]).name: s["reason"] for s in doc["skipped"]}
        assert reasons == {
            "empty.jsonl": "empty file",
            "binary.jsonl": "a binary file, not a session",
            "gone.jsonl": "no such file",
            "loop.jsonl": "a symbolic link loop",
            "settings.json": "not a session in any format harpe_lab reads (`harpe-lab replay PATH --traceback` "
                             "shows why)",
        }
        lines = err.splitlines()
        assert len(lines) == len(reasons) and all(line.startswith("skipped ") for line in lines)
        for name in reasons:
            assert sum(name in line for line in lines) == 1

    def test_a_session_still_being_written_is_read_to_its_last_whole_line(self, folder):
        growing = scan_session(folder / "growing.jsonl")
        whole = scan_session(real_sessions()[1])
        lines = real_sessions()[1].read_bytes().count(b"\n")
        assert growing.note == f"line {lines} cut short (still being written?): read up to line {lines - 1}"
        # the cut line is the session's last record: everything before it is read
        assert 0 <= whole.calls - growing.calls <= 1 and growing.compactions == whole.compactions

    def test_strict_fails_when_anything_was_skipped(self, folder, capsys):
        code, _, _ = run(["sessions", folder, "--strict"], capsys)
        assert code == 1
        clean = folder / "clean"
        clean.mkdir()
        shutil.copy(real_sessions()[0], clean)
        assert run(["sessions", clean, "--strict"], capsys)[0] == 0

    def test_an_unreadable_file_is_skipped(self, folder, capsys, monkeypatch):
        locked = folder / "locked.jsonl"
        shutil.copy(real_sessions()[0], locked)
        os.chmod(locked, 0)
        if os.geteuid() == 0:  # root reads every file: the OS's refusal is played by `open`
            import builtins

            import harpe_lab.sessions as sessions

            def refuse(path, *args, **kwargs):
                if Path(path) == locked:
                    raise PermissionError(13, "Permission denied", str(path))
                return builtins.open(path, *args, **kwargs)

            monkeypatch.setattr(sessions, "open", refuse, raising=False)
        code, out, err = run(["sessions", folder, "--format", "csv"], capsys)
        assert code == 0
        assert f"skipped {locked}: cannot be read (permission denied)" in err.splitlines()
        assert len(out.strip().splitlines()) == 1 + 3  # the header and the three readable sessions

    def test_in_a_real_process(self, folder):
        proc = subprocess.run([sys.executable, "-m", "harpe_lab", "sessions", str(folder), "--format", "json"],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert len(json.loads(proc.stdout)["sessions"]) == 3
        assert len(proc.stderr.strip().splitlines()) == 5


class TestOwnFiles:
    def test_a_bundled_style_file_goes_through_the_importer(self):
        conv_path = DATA / "importers" / "claude_code" / "sess-0001.jsonl"
        row = scan_session(conv_path)
        full = _imported(conv_path)
        assert [getattr(row, f) for f in FIGURES] == [getattr(full, f) for f in FIGURES]

    def test_csv_has_one_row_per_session(self, tmp_path, capsys):
        shutil.copy(DATA / "importers" / "claude_code" / "sess-0001.jsonl", tmp_path / "a.jsonl")
        code, out, _ = run(["sessions", tmp_path, "--format", "csv"], capsys)
        assert code == 0
        header, *rows = out.strip().splitlines()
        assert header.startswith("path,agent,version,model,models,window,calls") and len(rows) == 1

    def test_frames_for_notebooks(self, tmp_path):
        shutil.copy(DATA / "importers" / "claude_code" / "sess-0001.jsonl", tmp_path / "a.jsonl")
        (tmp_path / "b.jsonl").write_text("")
        items = list(scan_sessions([tmp_path], progress=False))
        assert [type(i) for i in items] == [type(scan_session(tmp_path / "a.jsonl")), Skipped]
        frame = sessions_frame([i for i in items if not isinstance(i, Skipped)])
        assert list(frame["agent"]) == ["claude_code"] and "compactions" in frame.attrs

    def test_with_no_path_the_standard_locations(self, tmp_path, monkeypatch, capsys):
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
        monkeypatch.delenv("CODEX_HOME", raising=False)
        code, _, err = run(["sessions"], capsys)
        assert code == 2 and "no sessions found in the standard locations" in err
        project = tmp_path / ".claude" / "projects" / "-home-me-app"
        project.mkdir(parents=True)
        shutil.copy(DATA / "importers" / "claude_code" / "sess-0001.jsonl", project / "s1.jsonl")
        code, out, _ = run(["sessions", "--format", "json"], capsys)
        assert code == 0 and [Path(s["path"]).name for s in json.loads(out)["sessions"]] == ["s1.jsonl"]
