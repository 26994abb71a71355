"""Secret redaction for display (harpe_lab.redact): each kind caught with the exact marker,
the text around it kept, ordinary hashes, UUIDs, paths and code left alone, counts by kind,
the switch, and redacting twice the same as once.

Every secret planted here is a fake built at test time from a seeded generator, never a real
credential: `_fake` interleaves upper-case letters, digits and lower-case letters, so a value
is random-looking and can never spell a placeholder word."""

from __future__ import annotations

import base64
import json
import random
import re
import string
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harpe_lab.redact import KINDS, RedactionTally, Redactor, marker, redact, shannon_entropy

RNG = random.Random(33)
B64 = string.ascii_letters + string.digits + "+/"


def _fake(n: int, rng: random.Random = RNG) -> str:
    """``n`` characters cycling upper-case letter, digit, lower-case letter, each random."""
    pools = (string.ascii_uppercase, string.digits, string.ascii_lowercase)
    return "".join(rng.choice(pools[i % 3]) for i in range(n))


def _from(alphabet: str, n: int) -> str:
    return "".join(RNG.choice(alphabet) for _ in range(n))


def _b64url(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def fake_jwt() -> str:
    return ".".join([_b64url({"alg": "HS256", "typ": "JWT"}),
                     _b64url({"sub": _fake(12), "iat": RNG.randrange(10**9, 2 * 10**9)}),
                     _fake(43)])


def fake_private_key() -> str:
    body = "\n".join(_from(B64, 64) for _ in range(6))
    return f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"


def fake_aws_key_id(prefix: str = "AKIA") -> str:
    return prefix + _from(string.ascii_uppercase + string.digits, 14) + "7Q"


# (kind, text before, secret, text after): the secret alone must become the marker
PLANTED: list[tuple[str, str, str, str]] = [
    ("openai-key", "OPENAI_API_KEY=", "sk-proj-" + _fake(48) + "_" + _fake(60), "\n"),
    ("openai-key", "the old key ", "sk-" + _fake(20) + "T3BlbkFJ" + _fake(20), " still works"),
    ("openai-key", "client = OpenAI(api_key='", "sk-svcacct-" + _fake(40), "')"),
    ("anthropic-key", 'ANTHROPIC_API_KEY="', "sk-ant-api03-" + _fake(93) + "AA", '"'),
    ("anthropic-key", "token: ", "sk-ant-oat01-" + _fake(60), ""),
    ("aws-access-key-id", "aws_access_key_id = ", fake_aws_key_id(), "\n"),
    ("aws-access-key-id", '"AccessKeyId": "', fake_aws_key_id("ASIA"), '",'),
    ("aws-secret", "aws_secret_access_key = ", _fake(38) + "/+", "\n"),
    ("aws-secret", "export AWS_SECRET_ACCESS_KEY=", _fake(40), "; aws s3 ls"),
    ("aws-secret", '        "SecretAccessKey": "', _fake(39) + "+", '",'),
    ("github-token", "export GITHUB_TOKEN=", "ghp_" + _fake(36), ""),
    ("github-token", "remote: https://x-access-token:", "ghs_" + _fake(36), "@github.com/o/r.git"),
    ("github-token", "gh auth login --with-token <<< ", "gho_" + _fake(36), ""),
    ("github-token", "", "ghu_" + _fake(36), " and ghr_ tokens"),
    ("github-token", "PAT ", "github_pat_" + _fake(22) + "_" + _fake(59), " (fine-grained)"),
    ("huggingface-token", "login(token='", "hf_" + "".join(RNG.choice(string.ascii_uppercase) +
                                                           RNG.choice(string.ascii_lowercase)
                                                           for _ in range(17)), "')"),
    ("slack-token", "SLACK_BOT=", "xoxb-" + _from(string.digits, 12) + "-" + _from(string.digits, 13)
     + "-" + _fake(24), ""),
    ("slack-token", "user token ", "xoxp-" + _from(string.digits, 11) + "-" + _fake(32), "."),
    ("slack-webhook", "curl -X POST https://hooks.slack.com/services/",
     "T" + _fake(8) + "/B" + _fake(10) + "/" + _fake(24), " -d @msg.json"),
    ("jwt", "id_token: ", fake_jwt(), "\n"),
    ("jwt", "curl -H 'Authorization: Bearer ", fake_jwt(), "' https://api.example.com/me"),
    ("private-key", "$ cat ~/.ssh/id_rsa\n", fake_private_key(), "\n$ "),
    ("auth-header", 'curl -H "Authorization: Bearer ', _fake(40), '" https://api.example.com/v1'),
    ("auth-header", "Authorization: Basic ",
     base64.b64encode(("deploy:" + _fake(12)).encode()).decode(), "\r\n"),
    ("auth-header", 'headers = {"Authorization": "Token ', _fake(32), '"}'),
    ("auth-header", "x-api-key: ", _fake(32), "\n"),
    ("url-password", "DATABASE_URL=postgres://app:", _fake(16), "@db.internal:5432/app"),
    ("url-password", "redis://:", _fake(20), "@cache:6379/0"),
    ("url-password", "git clone https://deploy:", _fake(14), "@git.example.com/team/repo.git"),
    ("generic-secret", "export STRIPE_KEY=", _fake(32), "\n"),
    ("generic-secret", "DB_PASSWORD=", _fake(14), "\n"),
    ("generic-secret", "  db_password: ", _fake(18), "\n"),
    ("generic-secret", '{"client_secret": "', _fake(24), '", "client_id": "web"}'),
    ("generic-secret", "SERVICE_TOKEN: '", _fake(30), "'"),
    ("generic-secret", 'apiKey := "', _fake(26), '"'),
    ("generic-secret", "{\\\"webhook_secret\\\": \\\"", _fake(28), "\\\"}"),
    ("generic-secret", "SECRET_KEY_BASE=", _from("0123456789abcdef", 64), ""),
]


def _ids(case):
    return f"{case[0]}:{case[1].strip()[:24]}"


class TestEachKind:
    @pytest.mark.parametrize("case", PLANTED, ids=[_ids(c) for c in PLANTED])
    def test_the_secret_alone_becomes_its_marker(self, case):
        kind, before, secret, after = case
        text, counts = Redactor().apply(before + secret + after)
        assert text == before + f"[redacted {kind}, {len(secret)} chars]" + after
        assert counts == Counter({kind: 1})

    def test_every_kind_is_planted(self):
        assert {c[0] for c in PLANTED} == set(KINDS)

    def test_the_marker(self):
        assert marker("aws-secret", 40) == "[redacted aws-secret, 40 chars]"

    def test_a_private_key_block_goes_whole_even_cut_short(self):
        block = fake_private_key()
        cut = block[: block.index("-----END")].rstrip("\n")  # a tool output truncated mid-key
        assert redact(f"key:\n{cut}\n\n(truncated)") == (
            f"key:\n[redacted private-key, {len(cut)} chars]\n\n(truncated)")

    def test_the_earlier_kind_wins_where_rules_overlap(self):
        key = "sk-proj-" + _fake(50)
        assert redact(f'"Authorization": "Bearer {key}"') == (
            f'"Authorization": "Bearer [redacted openai-key, {len(key)} chars]"')


class TestSurroundingTextKept:
    def test_names_headers_users_and_hosts_stay(self):
        key, token, pw = _fake(32), _fake(40), _fake(16)
        text = (f"export API_KEY={key}\n"
                f"curl -H 'Authorization: Bearer {token}' https://api.example.com\n"
                f"psql postgresql://admin:{pw}@10.0.0.5:5432/prod\n")
        assert redact(text) == (
            "export API_KEY=[redacted generic-secret, 32 chars]\n"
            "curl -H 'Authorization: Bearer [redacted auth-header, 40 chars]' https://api.example.com\n"
            "psql postgresql://admin:[redacted url-password, 16 chars]@10.0.0.5:5432/prod\n")

    def test_many_secrets_in_one_text_at_its_edges(self):
        a, b = "ghp_" + _fake(36), fake_aws_key_id()
        assert redact(f"{a} {b}") == (
            "[redacted github-token, 40 chars] [redacted aws-access-key-id, 20 chars]")

    def test_a_text_without_secrets_is_the_same_object(self):
        text = "nothing to see here: " + "word " * 50
        assert redact(text) is text


class TestFalsePositives:
    """Values that look like secrets to a careless rule and are not."""

    @pytest.mark.parametrize("text", [
        # git hashes and digests
        "commit 3f9a2b7c1d4e5f60718293a4b5c6d7e8f9012345\nAuthor: A <a@example.com>",
        '{"sha": "9fceb02d0ae598e95dc970b74767f19372d61af8", "ref": "main"}',
        "HEAD is now at 9fceb02 fix the build",
        "sha256:" + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        '"digest": "sha256:2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"',
        "cache_key = \"d41d8cd98f00b204e9800998ecf8427e\"",
        # UUIDs, including ones assigned to token-named fields
        "session 123e4567-e89b-12d3-a456-426614174000 started",
        '"ClientRequestToken": "a8ca07e4-61ec-4399-99f4-19853801bcd5"',
        '"tool_use_id": "toolu_01A09q90qw90lq917835lq9", "request_id": "req_011CX"',
        # paths
        "/home/dev/.config/gcloud/application_default_credentials.json",
        "private_key_path = ~/.ssh/id_ed25519",
        "TOKEN_FILE=/var/run/secrets/kubernetes.io/serviceaccount/token",
        "C:\\Users\\dev\\AppData\\Roaming\\npm\\node_modules",
        # code: names and calls on the right-hand side, type annotations
        'api_key = os.environ["OPENAI_API_KEY"]',
        "token = get_auth_token_from_header(request)",
        "password = getpass.getpass()",
        "def check(valid_token: UserAPIKeyAuth) -> bool:",
        "ACCESS_KEY = 'AWSAccessKeyId'",
        "local vehicleMenuKey = getKeyBoundToCommand(\"vehiclemenu\")",
        "thread_key = tool_use_id",
        "max_tokens: 4096, input_tokens: 1200",
        "const csrfToken = document.querySelector('meta').content",
        "private_key: Ed25519PrivateKey",
        # sk- inside words and ids
        "a risk-based approach, a desk-top review, task-oriented dialogue",
        '"toolUseID": "task-output-waiting-1770927708311"',
        "<task-id>b7636e4fa1b2c3d4e5f6a7b8c9d0e1f2a3b4c5</task-id>",
        # Codex's own redaction markers
        "[REDACTED_TEXT len=42 sha=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08]",
        # placeholders and documentation examples
        "OPENAI_API_KEY=sk-XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
        "OPENAI_API_KEY=sk-your-key-here-0123456789",
        'curl -H "Authorization: Bearer $OPENAI_API_KEY" https://api.openai.com/v1/models',
        'curl -H "Authorization: Bearer <token>" https://api.example.com',
        "Authorization: Bearer ${{ secrets.GITHUB_TOKEN }}",
        "postgresql://user:password@localhost:5432/mydb",
        "rtsp://username:password@camera:554/stream",
        "postgres://postgres:postgres@localhost/test",
        "aws_access_key_id = AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "-----BEGIN PRIVATE KEY-----\n...\n-----END PRIVATE KEY-----",
        '"PrivateKey": "-----BEGIN DSA PRIVATE KEY-----<a very long private key string>'
        '-----END DSA PRIVATE KEY-----"',
        "login(token='hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx')",
        "-----BEGIN PUBLIC KEY-----\n" + "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" * 3
        + "\n-----END PUBLIC KEY-----",
        'api_key: "os.environ/AZURE_API_KEY"',
        "DB_PASSWORD=hunter2",
        # a key id at the end of a longer base64 blob is part of the blob
        '"encrypted_content": "gAAAAABmx/AKIA' + "Q7" * 8 + '"',
        # minified code calling a function with a random-looking name
        "const apiKey=Xq7Lm2Zp9Kr4(t.env),n=apiKey;",
        # a UUID assigned to a token's name: request ids and idempotency tokens, mostly
        "SESSION_TOKEN=123e4567-e89b-12d3-a456-426614174000",
        "public_key = " + _fake(40),
        # headers that are not credentials
        "X-Cache-Key: " + _fake(16),
        "next-page-token: " + _fake(24),
        # a date, a URL and an attribute assigned to a secret's name
        '"password_set_on": "2025-11-30T17:48:59.461+01:00"',
        "JENKINS_API_TOKEN: https://ci.acme.io/job/build7Xq2/",
        "o.apiKey=e.Xq7Lm2Zp9Kr4;",
        # base64 of JSON-looking text that is no JWT
        "eyJ" + _fake(20) + ".eyJ" + _fake(20) + "." + _fake(10),
    ])
    def test_left_alone(self, text):
        assert redact(text) == text

    def test_an_aws_name_near_a_git_hash_is_no_aws_secret(self):
        text = "aws_key_rotation_commit = 3f9a2b7c1d4e5f60718293a4b5c6d7e8f9012345"
        assert Redactor().apply(text) == (text, Counter())


class TestCounts:
    def test_apply_counts_by_kind(self):
        text = f"{fake_aws_key_id()} {fake_aws_key_id()} API_TOKEN={_fake(24)}"
        _, counts = Redactor().apply(text)
        assert counts == Counter({"aws-access-key-id": 2, "generic-secret": 1})

    def test_a_tally_adds_up_many_texts_for_the_header(self):
        tally = Redactor().tally()
        texts = ([f"aws_secret_access_key={_fake(40)}"] * 3
                 + [f"SERVICE_TOKEN={_fake(24)}"] * 9 + ["no secret here"])
        shown = [tally(t) for t in texts]
        assert shown[-1] == "no secret here" and all("[redacted " in s for s in shown[:-1])
        assert tally.counts == Counter({"aws-secret": 3, "generic-secret": 9})
        assert tally.total == 12
        assert tally.header() == "12 values redacted: 3 aws-secret, 9 generic-secret"

    def test_header_wording(self):
        tally = Redactor().tally()
        assert tally.header() == "no values redacted"
        tally(fake_jwt())
        assert tally.header() == "1 value redacted: 1 jwt"
        assert repr(tally) == "<RedactionTally '1 value redacted: 1 jwt'>"

    def test_counts_from_elsewhere_can_be_added(self):
        tally = Redactor().tally()
        _, counts = Redactor().apply(f"GH={'ghp_' + _fake(36)}")
        tally.add(counts)
        tally.add({"jwt": 2})
        assert tally.header() == "3 values redacted: 1 github-token, 2 jwt"
        with pytest.raises(ValueError, match="unknown kind 'nope'; the kinds are: private-key, jwt"):
            tally.add({"nope": 1})
        with pytest.raises(ValueError, match="the count of jwt must be an int >= 0, got -1"):
            tally.add({"jwt": -1})

    def test_counts_are_a_copy(self):
        tally = Redactor().tally()
        tally(fake_jwt())
        tally.counts["jwt"] += 10
        assert tally.total == 1

    def test_each_tally_starts_from_zero(self):
        redactor = Redactor()
        first = redactor.tally()
        first(fake_jwt())
        assert redactor.tally().total == 0 and first.total == 1


class TestSwitch:
    def test_disabled_changes_nothing_and_says_so(self):
        off = Redactor(enabled=False)
        text = "".join(b + s + a for _, b, s, a in PLANTED)
        assert off.apply(text) == (text, Counter())
        tally = off.tally()
        assert tally(text) == text
        assert tally.header() == "redaction off"

    def test_kinds_choose_the_rules(self):
        key, jwt = "ghp_" + _fake(36), fake_jwt()
        only_jwt = Redactor(kinds={"jwt"})
        assert only_jwt(f"{key} {jwt}") == f"{key} [redacted jwt, {len(jwt)} chars]"
        assert only_jwt.kinds == frozenset({"jwt"})
        assert Redactor().kinds == frozenset(KINDS)

    def test_the_generic_thresholds_are_knobs(self):
        text = "SERVICE_TOKEN=" + _fake(14)
        assert Redactor(min_length=16)(text) == text
        assert Redactor(min_length=12)(text) != text
        assert Redactor(min_entropy=4.5)(text) == text  # 14 characters carry at most 3.8 bits each


class TestValidation:
    @pytest.mark.parametrize(("kwargs", "message"), [
        ({"enabled": "yes"}, "enabled must be True or False, got 'yes'"),
        ({"kinds": "jwt"},
         "kinds must be an iterable of kind names such as {'jwt', 'aws-secret'}, got 'jwt'"),
        ({"kinds": 3}, "kinds must be an iterable of kind names"),
        ({"kinds": ["jwt", "aws"]}, "unknown kind 'aws' in kinds; the kinds are: private-key, jwt, "),
        ({"min_length": 0}, "min_length must be an int >= 1, got 0"),
        ({"min_length": 12.5}, "min_length must be an int >= 1, got 12.5"),
        ({"min_entropy": 9}, "min_entropy must be a number of bits per character from 0 to 8, got 9"),
        ({"min_entropy": "high"},
         "min_entropy must be a number of bits per character from 0 to 8, got 'high'"),
    ])
    def test_bad_values_are_shown(self, kwargs, message):
        with pytest.raises(ValueError, match=re.escape(message)):
            Redactor(**kwargs)

    def test_keyword_only_and_frozen(self):
        with pytest.raises(TypeError):
            Redactor(False)  # type: ignore[misc]
        with pytest.raises(AttributeError):
            Redactor().enabled = False  # type: ignore[misc]

    def test_text_must_be_a_str(self):
        with pytest.raises(TypeError, match="text must be a str, got bytes"):
            redact(b"AKIA")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="redactor must be a harpe_lab.redact.Redactor"):
            RedactionTally(object())  # type: ignore[arg-type]

    def test_entropy(self):
        assert shannon_entropy("") == 0 and shannon_entropy("aaaa") == 0
        assert shannon_entropy("abcd") == 2.0


class TestIdempotent:
    @pytest.mark.parametrize("case", PLANTED, ids=[_ids(c) for c in PLANTED])
    def test_redacting_twice_is_redacting_once(self, case):
        once = redact("".join(case[1:]))
        assert redact(once) == once

    def test_all_planted_at_once(self):
        text = "\n".join(b + s + a for _, b, s, a in PLANTED)
        once, counts = Redactor().apply(text)
        assert counts == Counter(kind for kind, *_ in PLANTED)
        assert Redactor().apply(once) == (once, Counter())
        assert not any(s in once for _, _, s, _ in PLANTED)

    def test_a_marker_that_cuts_a_candidate_short_is_followed_by_another_pass(self):
        # the first pass claims the sk- key; what is left of the value is checked again
        key = "sk-proj-" + _fake(40)
        once, counts = Redactor().apply(f"SECRET={_fake(18)}:{key}")
        assert redact(once) == once and counts["openai-key"] == 1


# ---------------------------------------------------------------------------------------
# Properties

WORDS = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=12)
PATHS = st.lists(st.text(alphabet=string.ascii_lowercase + string.digits + "_-.", min_size=1, max_size=10),
                 min_size=1, max_size=6).map(lambda parts: "/" + "/".join(parts))
HEX = st.integers(0, 2**256 - 1).map(lambda n: f"{n:064x}")
SHA1 = st.integers(0, 2**160 - 1).map(lambda n: f"{n:040x}")
UUIDS = st.uuids().map(str)
ASSIGNMENTS = st.tuples(WORDS, st.sampled_from(["=", ": ", " = ", '": "']), WORDS).map("".join)
PLAIN = st.lists(st.one_of(WORDS, PATHS, HEX, SHA1, UUIDS, ASSIGNMENTS), max_size=40).map(
    lambda parts: " ".join(parts))
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class TestProperties:
    @PROPERTY
    @given(PLAIN)
    def test_text_without_secrets_is_never_changed(self, text):
        assert Redactor().apply(text) == (text, Counter())

    @PROPERTY
    @given(PLAIN, st.sampled_from(PLANTED), PLAIN)
    def test_a_planted_secret_is_replaced_and_nothing_else(self, left, case, right):
        # the guard for the property above: the same texts do get redacted when they hold one
        kind, before, secret, after = case
        text = f"{left} {before}{secret}{after} {right}"
        new, counts = Redactor().apply(text)
        assert new == f"{left} {before}[redacted {kind}, {len(secret)} chars]{after} {right}"
        assert counts == Counter({kind: 1})
        assert redact(new) == new


# ---------------------------------------------------------------------------------------
# Import weight and the measurement on real sessions


def test_import_harpe_lab_does_not_load_the_redactor_and_the_redactor_loads_nothing_heavy():
    code = (
        "import json, sys, harpe_lab\n"
        "before = 'harpe_lab.redact' in sys.modules\n"
        "import harpe_lab.redact\n"
        "heavy = [m for m in ('detect_secrets', 'requests', 'yaml', 'pandas', 'litellm', 'tiktoken')"
        " if m in sys.modules]\n"
        "print(json.dumps([before, heavy]))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == [False, []]


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield k
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _every_string(path: Path):
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix == ".jsonl":
        for line in filter(str.strip, text.splitlines()):
            yield from _strings(json.loads(line))
    elif path.suffix in (".json", ".traj"):
        yield from _strings(json.loads(text))
    else:
        yield text


MEASURED = Counter({"huggingface-token": 1})
"""What the default redactor replaces in every string of ../shared/data/real (docs/redaction.md
lists it, with the judgement of each hit: a token a WildChat user pasted into code)."""


@pytest.mark.real_data
@pytest.mark.slow
def test_the_false_positive_measurement_on_real_sessions_holds(real_data):
    tally = Redactor().tally()
    for path in sorted(p for p in real_data.rglob("*") if p.is_file()):
        for text in _every_string(path):
            tally(text)
    assert tally.counts == MEASURED, "a rule changed: measure again and update docs/redaction.md"


def test_a_token_as_a_url_s_user_is_redacted():
    token = "ghp_" + "Ab3dE5gH7jK9" * 3
    assert redact(f"git clone https://{token}@github.com/acme/app") == \
        "git clone https://[redacted github-token, 40 chars]@github.com/acme/app"
    # still not inside a longer run of token characters
    assert redact(f"base64{token}") == f"base64{token}"
