"""Reports on a user's sessions are safe to share: secrets planted in a real session's tool
results, user messages and summaries appear nowhere in what the lab shows — the compare
report, its CSV, the JSON output, ``--show`` — the numbers are those of the unredacted
output, and transcript text is inert HTML in every report, checked in a real browser."""

from __future__ import annotations

import json
import random
import string

import pytest

from harpe_lab.cli import main
from tests._support.data import REAL_DATA

SESSION = REAL_DATA / "claude_code" / "short.jsonl"
LARGE = REAL_DATA / "claude_code" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
real = pytest.mark.skipif(not SESSION.is_file(), reason="real Claude Code sessions are not on this machine")


def _random(alphabet: str, n: int, seed: int) -> str:
    rnd = random.Random(seed)
    return "".join(rnd.choice(alphabet) for _ in range(n))


def planted() -> dict[str, str]:
    """One fake secret of each kind, made at test time (never a real one)."""
    an = string.ascii_letters + string.digits
    b64 = an + "+/"
    import base64

    def part(doc: dict) -> str:
        return base64.urlsafe_b64encode(json.dumps(doc).encode()).decode().rstrip("=")

    header = part({"alg": "HS256", "typ": "JWT"})
    claims = part({"sub": _random(string.digits, 10, 9), "name": "Ada", "iat": 1767225600})
    return {
        "openai": "sk-proj-" + _random(an, 48, 1),
        "anthropic": "sk-ant-api03-" + _random(an + "-_", 90, 2),
        "aws-id": "AKIA" + _random(string.ascii_uppercase + string.digits, 16, 3),
        "aws-secret": _random(b64, 40, 4),
        "github": "ghp_" + _random(an, 36, 5),
        "slack": "xoxb-" + _random(string.digits, 12, 6) + "-" + _random(string.digits, 13, 7) + "-" + _random(an, 24, 8),
        "jwt": f"{header}.{claims}.{_random(an + '-_', 43, 10)}",
        "key-block": "MII" + _random(b64, 200, 11),
        "bearer": _random(an, 40, 12),
        "db-password": "Pw" + _random(an, 18, 13),
        "env-token": _random(an, 32, 14),
    }


def text_with(s: dict[str, str]) -> str:
    return (f"export OPENAI_API_KEY={s['openai']}\nANTHROPIC_API_KEY={s['anthropic']}\n"
            f"aws_access_key_id = {s['aws-id']}\naws_secret_access_key = {s['aws-secret']}\n"
            f"git clone https://{s['github']}@github.com/acme/app\nSLACK_BOT_TOKEN={s['slack']}\n"
            f"session cookie: {s['jwt']}\n-----BEGIN RSA PRIVATE KEY-----\n{s['key-block']}\n"
            f"-----END RSA PRIVATE KEY-----\ncurl -H 'Authorization: Bearer {s['bearer']}' https://api.acme.test\n"
            f"DATABASE_URL=postgres://app:{s['db-password']}@db.internal:5432/app\nSERVICE_TOKEN={s['env-token']}\n")


def plant(tmp_path) -> tuple[str, dict[str, str]]:
    """A copy of a real session with the secrets in a user message, a tool result and a
    compaction summary."""
    secrets = planted()
    block = text_with(secrets)
    out = []
    user = tool = False
    for line in LARGE.read_text().splitlines():
        rec = json.loads(line)
        msg = rec.get("message") if isinstance(rec.get("message"), dict) else None
        if msg is not None and rec.get("type") == "user":
            content = msg.get("content")
            # at the start, where a one-line preview shows it
            if rec.get("isCompactSummary") and isinstance(content, str):
                msg["content"] = block + content
            elif isinstance(content, str) and not user and not content.startswith("<"):
                msg["content"], user = block + content, True
            elif isinstance(content, list) and not tool:
                for part in content:
                    if isinstance(part, dict) and part.get("type") == "tool_result" and isinstance(part.get("content"), str):
                        part["content"], tool = block + part["content"], True
                        break
        out.append(json.dumps(rec))
    assert user and tool
    path = tmp_path / "planted.jsonl"
    path.write_text("\n".join(out) + "\n")
    return str(path), secrets


def run(argv, capsys) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def leaked(text: str, secrets: dict[str, str]) -> list[str]:
    return [k for k, v in secrets.items() if v in text]


@pytest.fixture(scope="module")
def session(tmp_path_factory):
    return plant(tmp_path_factory.mktemp("planted"))


@real
@pytest.mark.real_data
class TestNothingLeaks:
    def test_the_show_preview_and_its_json(self, session, capsys):
        path, secrets = session
        # the claude-code preset's compaction: its summary is written from the planted messages
        for strategy, at in (("claude-code", 62), ("full", 139)):
            code, out, err = run(["replay", path, "--strategy", strategy, "--show", at], capsys)
            assert code == 0, err
            assert leaked(out, secrets) == [], strategy
            assert "values redacted" in out
            code, out, _ = run(["replay", path, "--strategy", strategy, "--show", at, "--format", "json"], capsys)
            doc = json.loads(out)
            assert leaked(out, secrets) == [] and "values redacted" in doc["redaction"]
        code, out, _ = run(["replay", path, "--strategy", "full", "--show", 139, "--no-redact"], capsys)
        assert "openai" in leaked(out, secrets)  # the test can fail

    def test_the_compare_report_and_its_csv(self, session, tmp_path, capsys):
        path, secrets = session
        code, out, err = run(["compare", path, "--strategies", "full,claude-code,masking", "--budget", "120000",
                              "--out", tmp_path / "r", "--workers", "1"], capsys)
        assert code == 0, err
        page = (tmp_path / "r" / "index.html").read_text()
        csv = (tmp_path / "r" / "compare.csv").read_text()
        assert leaked(page, secrets) == [] and leaked(csv, secrets) == [] and leaked(out, secrets) == []
        assert "Secrets: " in page
        code, out2, _ = run(["compare", path, "--strategies", "full,claude-code,masking", "--budget", "120000",
                             "--out", tmp_path / "plain", "--workers", "1", "--no-redact"], capsys)
        assert "redaction off" in (tmp_path / "plain" / "index.html").read_text()
        # redaction is display only: the numbers are the same either way
        assert out.split("\n\n", 1)[1] == out2.split("\n\n", 1)[1]

    def test_the_numbers_do_not_change(self, session, capsys):
        path, _ = session
        docs = []
        for extra in ([], ["--no-redact"]):
            code, out, _ = run(["replay", path, "--strategy", "claude-code", "--format", "json", *extra], capsys)
            docs.append(json.loads(out))
        assert docs[0]["totals"] == docs[1]["totals"] and docs[0]["requests"] == docs[1]["requests"]


XSS = "<script>window.__pwned = 1</script><img src=x onerror=\"window.__pwned = 2\">"


@pytest.mark.browser
@pytest.mark.slow
class TestInertInTheBrowser:
    def test_script_and_onerror_in_a_session_render_as_text(self, tmp_path, capsys):
        from pathlib import Path

        from playwright.sync_api import sync_playwright

        chromium = Path("/usr/bin/chromium")
        if not chromium.exists():
            pytest.skip(f"{chromium} is missing: apt-get install -y chromium")
        messages = []
        for k in range(6):
            messages += [{"role": "user", "content": f"question {k} {XSS} " + "word " * 300},
                         {"role": "assistant", "content": f"answer {k} {XSS} " + "reply " * 300}]
        path = tmp_path / f"{XSS[:8]}session.json"
        path.write_text(json.dumps(messages))
        code, _, err = run(["compare", path, "--strategies", "full,chain", "--budget", "2000", "--pricing",
                            "openai/gpt-4o", "--out", tmp_path / "r", "--workers", "1"], capsys)
        assert code == 0, err
        from harpe_lab.demo import run_demo
        from harpe_lab.importers import load_any

        demo = run_demo(tmp_path / "demo", conversations={XSS: load_any(path)}, strategies=("full", "chain"),
                        echo=lambda _: None)
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=str(chromium), args=["--headless", "--no-sandbox", "--disable-gpu",
                                                                       "--disable-background-networking",
                                                                       "--disable-component-update", "--disable-sync"])
            try:
                for index in (tmp_path / "r" / "index.html", demo):
                    page = b.new_page(viewport={"width": 1280, "height": 900})
                    requests = []
                    page.on("request", lambda r: requests.append(r.url))
                    page.goto(index.resolve().as_uri(), wait_until="load")
                    assert page.evaluate("window.__pwned") is None, index
                    assert page.locator("script").count() == 0
                    assert page.locator("img[onerror]").count() == 0
                    assert page.evaluate("document.documentElement.scrollWidth") <= 1280, index
                    assert page.evaluate("[...document.images].every(i => i.complete && i.naturalWidth > 0)"), index
                    # nothing from the network: only the page and its own pictures
                    assert all(u.startswith("file://") for u in requests), requests
                    page.close()
            finally:
                b.close()


@real
@pytest.mark.real_data
def test_the_explorer_s_message_view_redacts(session):
    from harpe_lab.widgets import Explorer

    path, secrets = session
    e = Explorer(path, strategy="full", datasets=False)
    e.step.value = 5  # early: the planted prompt and tool result are among the messages listed
    shown = e.request_view.value
    assert leaked(shown, secrets) == [] and "values redacted" in shown
    plain = Explorer(path, strategy="full", datasets=False, redact=False)
    plain.step.value = 5
    assert leaked(plain.request_view.value, secrets) and "redaction off" in plain.request_view.value
