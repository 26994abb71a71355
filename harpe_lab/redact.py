"""Secret redaction for display: replace values shaped like secrets in text about to be shown
to a person (a report, a preview, a widget) with a marker that keeps their kind and length::

    >>> redact("export GITHUB_TOKEN=ghp_" + "A1b2C3d4E5" * 3 + "F6g7H8")
    'export GITHUB_TOKEN=[redacted github-token, 40 chars]'

Only the value is replaced: a variable's name, a header's name, a URL's user and host stay.
Redaction is for display only; counts, costs and retention are computed on the original text.

The rules are our own regular expressions, derived from detect-secrets 1.5.0's plugins and
gitleaks' rules (named after them where one fits); docs/redaction.md says why we do not
depend on detect-secrets itself, lists every rule and gives the false positives measured on
real sessions. Standard library only: importing this module is cheap, and ``import
harpe_lab`` does not import it.

Use ``redact(text)`` for one text, a `Redactor` to choose the rules and the thresholds, and
``Redactor.tally()`` to redact many texts and write one header line of counts::

    tally = Redactor().tally()
    shown = [tally(text) for text in texts]
    tally.header()   # '3 values redacted: 1 aws-secret, 2 generic-secret' | 'redaction off'
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from .errors import RedactionError

__all__ = [
    "KINDS",
    "marker",
    "shannon_entropy",
    "redact",
    "Redactor",
    "RedactionTally",
]

KINDS: tuple[str, ...] = (
    "private-key",
    "jwt",
    "anthropic-key",
    "openai-key",
    "github-token",
    "huggingface-token",
    "slack-token",
    "slack-webhook",
    "aws-access-key-id",
    "aws-secret",
    "auth-header",
    "url-password",
    "generic-secret",
)
"""Every kind of secret a `Redactor` knows, in the order its rules claim text: where two
rules match overlapping text, the earlier kind wins (a JWT in a bearer header is a ``jwt``;
an ``sk-…`` key assigned to ``OPENAI_API_KEY`` is an ``openai-key``)."""


def marker(kind: str, length: int) -> str:
    """The text that replaces a secret of ``kind`` that was ``length`` characters long:
    ``[redacted aws-secret, 40 chars]``."""
    return f"[redacted {kind}, {length} chars]"


def shannon_entropy(value: str) -> float:
    """Shannon entropy of ``value`` in bits per character, over its own characters
    (0 for ``"aaaa"``, 2 for ``"abcd"``; at most log2 of the length)."""
    if not value:
        return 0.0
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


# ---------------------------------------------------------------------------------------
# What a value must look like to be taken for a secret

# Characters that may not stand right before (_PRE) or after (_POST) a token: a token inside
# a longer run of base64 or identifier characters (an encrypted blob, a hash, a word) is not
# one. `=` may stand before a token (NAME=token): base64 has it only at its end.
_PRE = r"A-Za-z0-9_\-+/"
_POST = r"A-Za-z0-9_\-+/="
# An optional quote, itself escaped when the text is JSON inside a string ({\"key\": \"..\"})
_Q = r"""\\?["']?"""

_PLACEHOLDER_WORDS = (
    "your", "example", "placeholder", "changeme", "change_me", "dummy", "redacted", "replace_me",
    "replaceme", "insert", "token", "apikey", "api_key", "api-key", "secret", "password",
    "passwd", "creds", "credential", "encoded",
)
_PLACEHOLDER = re.compile(
    r"^(?:[$%<{\\]|os\.environ|process\.env)"  # $VAR, ${VAR}, %s, <token>, {token}, os.environ/X
    r"|xxxx|XXXX|\*\*\*|\.\.\.|•••|…"            # masked: sk-xxxx, ***, sk-...
    r"|" + "|".join(sorted({re.escape(f) for w in _PLACEHOLDER_WORDS
                            for f in (w, w.upper(), w.capitalize())}))
)
"""Values that stand for a secret rather than being one: a reference to a variable or a
template, masked characters, or a placeholder word (``your``, ``example``, ``token``,
``secret``, ... written in lower, upper or title case) anywhere in the value."""

_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DOTTED_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_WORDS = re.compile(r"[A-Za-z][0-9]+(?![0-9a-z])|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
"""The words of a name: ``OPENAI_API_KEY`` -> OPENAI, API, KEY; ``clientSecret`` ->
client, Secret; ``S3Key`` -> S3, Key."""

_UPPER_RUN = r"[A-Z]{2,}(?=[A-Z][a-z]|[0-9]|$)"
_SHORT_HUMP = r"(?:To|Of|At|Be|By|Id|Is|In|On|Or|As|Up|No|Do|If|Io|Ui|Db|Os|Ok)"
_NAME_PART = re.compile(
    r"[a-z]+[0-9]{0,4}|[A-Z]+[0-9]{0,4}|[0-9]{1,4}"           # snake_case and SCREAMING_CASE parts
    rf"|(?:[a-z]{{2,}}|[A-Z][a-z]+|{_UPPER_RUN}|[A-Z](?=[A-Z][a-z]))"  # camelCase, PascalCase, IPython
    rf"(?:[A-Z][a-z]{{2,}}|{_SHORT_HUMP}|{_UPPER_RUN}|[A-Z](?=[0-9]|$)|[0-9]+)*"
)
"""One part of an identifier, a dotted module path or a hyphenated phrase."""


def _placeholder(value: str) -> bool:
    return bool(_PLACEHOLDER.search(value))


def _random_enough(value: str) -> bool:
    """A token after a fixed prefix (``sk-``, ``xoxb-``, ``Bearer``) looks random: letters
    and digits both, and no placeholder."""
    return (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)
            and not _placeholder(value))


def _mixed(value: str) -> bool:
    """Letters, and digits or both cases or other characters: not one run of lower-case
    letters or of digits."""
    return any(c.isalpha() for c in value) and (
        any(not c.isalpha() for c in value) or (not value.islower() and not value.isupper()))


def _identifier_like(value: str) -> bool:
    """A name from code or a phrase rather than a random string: every part between
    ``. _ / : # ~ -`` is a word, a camelCase or PascalCase name, or a short number
    (``get_auth_from_url``, ``UserAPIKeyAuth``, ``io.example/protocolVersion``)."""
    parts = [p for p in re.split(r"[._/:#~-]+", value) if p]
    return bool(parts) and all(_NAME_PART.fullmatch(p) for p in parts)


def _random_value(value: str, min_length: int, min_entropy: float) -> bool:
    """A value assigned to a secret's name that looks random rather than like a word, an
    identifier, a path, a URL, a UUID, a date, a reference to a variable or a placeholder."""
    return (len(value) >= min_length
            and _mixed(value)
            and "://" not in value
            and not _DOTTED_NAME.fullmatch(value)
            and not _UUID.fullmatch(value)
            and not _DATE.match(value)
            and not _placeholder(value)
            and not _identifier_like(value)
            and shannon_entropy(value) >= min_entropy)


def _jwt_shaped(token: str) -> bool:
    """detect-secrets' check: the header and the payload decode to JSON objects."""
    import base64
    import json

    head, payload = token.split(".")[:2]
    try:
        for part in (head, payload):
            decoded = base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
            if not isinstance(json.loads(decoded), dict):
                return False
    except ValueError:  # binascii.Error, UnicodeDecodeError and JSONDecodeError are ValueErrors
        return False
    return True


_SECRET_LAST = frozenset({
    "secret", "secrets", "password", "passwd", "passphrase", "pass", "pwd", "credential",
    "credentials", "apikey", "secretkey", "accesskey", "privatekey", "authkey", "accesstoken",
    "authtoken", "refreshtoken", "apitoken", "sessiontoken", "bearertoken", "clientsecret",
})
"""A name whose last word is one of these holds a secret (``DB_PASS``, ``client_secret``,
``APIKEY``); so does one ending in ``key`` or ``token`` after another word (``OPENAI_API_KEY``,
``apiKey``) unless that word is in `_NOT_SECRET_BEFORE`."""

_SECRET_INSIDE = ("password", "passwd", "passphrase", "secret")
"""A name with one of these inside a word holds a secret wherever it stands
(``PASSWORD_PROD``, ``SECRET_KEY_BASE``, ``dbpassword``), unless `_NOT_SECRET_LAST` says
otherwise."""

_NOT_SECRET_LAST = frozenset({
    "name", "names", "file", "files", "path", "dir", "id", "ids", "arn", "url", "uri", "ref",
    "length", "len", "hash", "hashed", "digest", "count", "type", "policy", "manager", "field",
    "env", "var", "prompt", "label", "version", "format", "header", "prefix", "suffix", "min",
    "max", "size", "limit", "pattern", "regex", "required", "enabled", "hint", "rotation",
    "store", "used", "last", "at", "date", "time", "expiry", "expires", "expiration", "created",
    "updated", "changed", "reset", "age", "tokens", "keys", "mode", "strength", "rules",
    "validator", "controller", "visible", "visibility", "error", "errors",
})
"""Last words of names about a secret rather than holding one (``SECRET_NAME``,
``password_hash``, ``TOKEN_FILE``, ``PasswordLastUsed``, ``max_tokens``)."""

_NOT_SECRET_BEFORE = frozenset({
    "cache", "sort", "primary", "foreign", "partition", "idempotency", "hash", "lookup",
    "dedup", "dedupe", "row", "range", "map", "dict", "object", "cursor", "group", "unique",
    "composite", "shard", "routing", "index", "storage", "state", "event", "message",
    "translation", "i18n", "content", "column", "field", "dataset", "config", "setting",
    "settings", "registry", "hot", "shortcut", "keyboard", "next", "page", "continuation",
    "pagination", "sync", "max", "min", "input", "output", "completion", "prompt", "total",
    "special", "end", "start", "stop", "bos", "eos", "pad", "unk", "mask", "sep", "cls",
    "first", "last", "new", "old", "result", "request", "change", "s3", "blob", "file",
    "websocket", "socket", "react", "order", "lock", "query", "item", "entry", "node", "parent", "child",
})
"""Words before a final ``key`` or ``token`` that make it no secret (``cache_key``,
``S3Key``, ``next_page_token``, ``eos_token``, ``ClientRequestToken``)."""


def _secret_name(name: str) -> bool:
    """Whether a variable, key or field called ``name`` holds a secret."""
    words = [w.lower() for w in _WORDS.findall(name)]
    if not words or "public" in words or "pub" in words:
        return False
    last = words[-1]
    if last in _NOT_SECRET_LAST:
        return False
    if last in ("key", "token"):
        return len(words) > 1 and words[-2] not in _NOT_SECRET_BEFORE
    return last in _SECRET_LAST or any(s in w for w in words for s in _SECRET_INSIDE)


# ---------------------------------------------------------------------------------------
# The rules


@dataclass(frozen=True)
class _Rule:
    """One kind of secret: where it is (the ``value`` group of ``pattern``), which
    substrings (lower case) a text must hold for the rule to be worth running, and what the
    match must pass (given the match and the redactor, whose thresholds it may read)."""

    kind: str
    pattern: re.Pattern[str]
    keywords: tuple[str, ...]
    check: Callable[[re.Match[str], Redactor], bool] | None = None


def _token(m: re.Match[str], r: Redactor) -> bool:
    return _random_enough(m["value"])


def _letters_token(m: re.Match[str], r: Redactor) -> bool:
    # a token of letters only: both cases, and no placeholder
    return _mixed(m["body"]) and not _placeholder(m["body"])


def _jwt(m: re.Match[str], r: Redactor) -> bool:
    return _jwt_shaped(m["value"])


def _aws_key_id(m: re.Match[str], r: Redactor) -> bool:
    # AWS's documentation uses ids ending in EXAMPLE (gitleaks allows them too)
    return "EXAMPLE" not in m["value"]


def _aws_secret(m: re.Match[str], r: Redactor) -> bool:
    # a 40-character hex string (a git hash) near an AWS name is not an AWS secret;
    # AWS's documentation example ends in EXAMPLEKEY
    value = m["value"]
    return not re.fullmatch(r"[0-9a-fA-F]{40}", value) and _random_enough(value)


_URL_PLACEHOLDERS = frozenset({"pass", "pwd", "pw", "token", "passw0rd", "p@ssword", "p@ssw0rd"})


def _url_password(m: re.Match[str], r: Redactor) -> bool:
    from urllib.parse import unquote

    value = unquote(m["value"])
    return (len(value) >= 4 and value != unquote(m["user"])
            and value.lower() not in _URL_PLACEHOLDERS and not _placeholder(value))


def _generic(m: re.Match[str], r: Redactor) -> bool:
    # a value followed by "(" is a function being called: code, not a secret
    return (_secret_name(m["name"]) and m.string[m.end():m.end() + 1] != "("
            and _random_value(m["value"], r.min_length, r.min_entropy))


def _private_key(m: re.Match[str], r: Redactor) -> bool:
    # a block with a body of base64, not "<your key here>" or "..."
    return re.search(r"[A-Za-z0-9+/=]{16,}", m["value"]) is not None


_HEADER_NAME = re.compile(r"(?:^|[^\w-])(?:x-)?(?:api-key|api-token|auth-token|access-token|private-token)$")


def _header(m: re.Match[str], r: Redactor) -> bool:
    # the rule finds "-key:" and "-token:" (quick to search for); the whole header name must
    # be x-api-key, api-key, x-auth-token, x-access-token, private-token or the like
    name = (m.string[max(0, m.start() - 10):m.start()] + m["suffix"]).lower()
    return _HEADER_NAME.search(name) is not None and _random_enough(m["value"])


def _free(width: int) -> str:
    """A lookbehind, placed right after a literal prefix ``width`` characters long: the
    prefix does not continue a run of token characters (``task-…`` holds no ``sk-`` key).
    Written after the prefix rather than before it, so that the regex engine can search for
    the prefix's literal text first."""
    dots = "." * width
    # after "//" too: a token as a URL's user (https://ghp_…@github.com)
    return rf"(?:(?<![{_PRE}]{dots})|(?<=//{dots}))"


_RULES: tuple[_Rule, ...] = (
    # detect-secrets PrivateKeyDetector, gitleaks private-key: the whole block, BEGIN to END;
    # a block cut short (no END line) up to the end of its base64 lines
    _Rule("private-key", re.compile(
        r"(?P<value>-----BEGIN[ A-Z0-9]{0,30} PRIVATE KEY(?: BLOCK)?-----"
        r"(?:[\s\S]{16,12000}?-----END[ A-Z0-9]{0,30} PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:[ \t]*\r?\n[ \t]*[A-Za-z0-9+/=:, -]{16,})+))"), ("private key",), _private_key),
    # detect-secrets JwtTokenDetector (with its formal check), gitleaks jwt
    _Rule("jwt", re.compile(
        rf"(?P<value>eyJ(?<![{_PRE}.]...)[A-Za-z0-9_-]{{8,}}={{0,2}}\.eyJ[A-Za-z0-9_-]{{8,}}={{0,2}}"
        rf"\.[A-Za-z0-9_-]*={{0,2}})(?![{_POST}.])"), ("eyj",), _jwt),
    # gitleaks anthropic-api-key, anthropic-admin-api-key, anthropic-oauth-token
    _Rule("anthropic-key", re.compile(
        rf"(?P<value>sk-ant-{_free(7)}[a-z]{{2,8}}[0-9]{{0,3}}-[A-Za-z0-9_-]{{20,}})(?![{_POST}])"),
        ("sk-ant-",), _token),
    # detect-secrets OpenAIDetector (the old T3BlbkFJ keys), gitleaks openai-api-key; also
    # project, service-account and admin keys (sk-proj-, sk-svcacct-, sk-admin-) and other
    # services' sk- keys (litellm's virtual keys, DeepSeek's)
    _Rule("openai-key", re.compile(
        rf"(?P<value>sk-{_free(3)}(?!ant-)[A-Za-z0-9_-]{{20,}})(?![{_POST}])"), ("sk-",), _token),
    # detect-secrets GitHubTokenDetector; gitleaks github-pat, github-oauth, github-app-token,
    # github-refresh-token, github-fine-grained-pat
    _Rule("github-token", re.compile(
        rf"(?P<value>gh[pousr]_{_free(4)}[A-Za-z0-9]{{36,251}}"
        rf"|github_pat_{_free(11)}[A-Za-z0-9_]{{22,}})(?![{_POST}])"), ("gh", "github_pat_")),
    # gitleaks huggingface-access-token, huggingface-organization-api-token
    _Rule("huggingface-token", re.compile(
        rf"(?P<value>(?:hf_{_free(3)}|api_org_{_free(8)})(?P<body>[A-Za-z]{{34}}))(?![{_POST}])"),
        ("hf_", "api_org_"), _letters_token),
    # detect-secrets SlackDetector; gitleaks slack-bot-token, slack-user-token, ...
    _Rule("slack-token", re.compile(
        rf"(?P<value>xox[baprs]-{_free(5)}[A-Za-z0-9-]{{10,}})(?![{_POST}])"), ("xox",), _token),
    # detect-secrets SlackDetector; gitleaks slack-webhook-url: the path after the host
    _Rule("slack-webhook", re.compile(
        r"hooks\.slack\.com/(?:services|workflows|triggers)/(?P<value>[A-Za-z0-9_/+-]{16,})"),
        ("hooks.slack.com",), _token),
    # detect-secrets AWSKeyDetector; gitleaks aws-access-token
    _Rule("aws-access-key-id", re.compile(
        rf"(?P<value>(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA){_free(4)}[A-Z0-9]{{16}})(?![{_POST}])"),
        ("akia", "asia", "abia", "acca", "a3t"), _aws_key_id),
    # detect-secrets AWSKeyDetector's second pattern, quotes optional: 40 base64 characters
    # assigned to a name about AWS and a secret (aws_secret_access_key, AWS_SECRET_ACCESS_KEY,
    # "SecretAccessKey" in the AWS CLI's JSON)
    _Rule("aws-secret", re.compile(
        r"(?i:aws[\w.-]{0,20}?(?:secret|key|token|pass)|secret_?access_?key)[\w.-]{0,20}"
        rf"{_Q}[ \t]*(?::|=|=>)[ \t]*{_Q}"
        rf"(?P<value>[A-Za-z0-9/+]{{40}})(?![{_POST}])"),
        ("aws", "secretaccesskey", "secret_access_key"), _aws_secret),
    # gitleaks curl-auth-header, outside curl too: Authorization: Bearer|Token|Basic <value>,
    # also "Authorization": "Bearer ..." in JSON or a dict...
    _Rule("auth-header", re.compile(
        rf"(?:[Aa]uthorization|AUTHORIZATION){_Q}[ \t]*[:=][ \t]*{_Q}"
        r"(?i:bearer|token|basic|api-token)[ \t]+(?P<value>[A-Za-z0-9._~+/=-]{8,})"),
        ("authorization",), _token),
    # ...and x-api-key, api-key, x-auth-token, x-access-token, private-token headers
    _Rule("auth-header", re.compile(
        rf"(?P<suffix>-(?:[Kk]ey|KEY|[Tt]oken|TOKEN)){_Q}[ \t]*:[ \t]*{_Q}"
        r"(?P<value>[A-Za-z0-9._~+/=-]{8,})"),
        ("api-key", "-token"), _header),
    # detect-secrets BasicAuthDetector, gitleaks' URL rules: scheme://user:PASSWORD@host
    _Rule("url-password", re.compile(
        r"://(?P<user>[^\s:/?#\[\]@\"'<>]*):"
        r"(?P<value>[^\s:/?#\[\]@\"'<>\\]+)@(?=[A-Za-z0-9\[])"), ("://",), _url_password),
    # detect-secrets KeywordDetector + its high-entropy strings, gitleaks generic-api-key: a
    # random-looking value assigned to a secret's name, in NAME=value, export NAME=value,
    # NAME: value, "name": "value", name := "value" and name => 'value' forms
    _Rule("generic-secret", re.compile(
        r"(?<![\w.-])(?P<name>[A-Za-z_][\w.-]{0,80})"
        rf"{_Q}[ \t]*(?::=|=(?![=>~])|:|=>)[ \t]*\\?[\"'`]?"
        r"(?P<value>[^\s\"'`,;&<>(){}\[\]\\]+)"),
        ("key", "token", "secret", "pass", "pwd", "credential"), _generic),
)


@functools.lru_cache(maxsize=64)
def _rules_for(kinds: frozenset[str]) -> tuple[_Rule, ...]:
    """The rules of ``kinds``, in `_RULES` order."""
    return tuple(rule for rule in _RULES if rule.kind in kinds)


# ---------------------------------------------------------------------------------------
# The redactor


@dataclass(frozen=True, kw_only=True)
class Redactor:
    """Replaces secrets in a text with ``[redacted <kind>, <N> chars]`` markers.

    Frozen and stateless: one redactor can serve many reports at once. Calling it,
    ``redactor(text)``, returns the redacted text; `apply` returns the new text and what it
    replaced by kind; `tally` makes a fresh `RedactionTally` that redacts many texts and
    writes the header line. It never changes text that holds no secret, and redacting its
    output again changes nothing.
    """

    enabled: bool = True
    """``False``: every text is returned unchanged, and `RedactionTally.header` says
    ``redaction off``."""
    kinds: frozenset[str] = frozenset(KINDS)
    """The kinds of secret to look for: any of `KINDS` (an iterable of names, stored as a
    frozenset)."""
    min_length: int = 12
    """``generic-secret`` only: a value assigned to a secret's name (``DB_PASSWORD=…``,
    ``"api_key": "…"``) is redacted when it is at least this many characters long..."""
    min_entropy: float = 3.0
    """...has at least this Shannon entropy in bits per character (`shannon_entropy`), and
    looks random: letters with digits, other characters or both cases, and not a name
    from code, a path, a URL, a UUID, a date or a placeholder."""

    def __post_init__(self) -> None:
        if not isinstance(self.enabled, bool):
            raise RedactionError(f"enabled must be True or False, got {self.enabled!r}")
        if isinstance(self.kinds, (str, bytes)) or not isinstance(self.kinds, Iterable):
            raise RedactionError(f"kinds must be an iterable of kind names such as "
                             f"{{'jwt', 'aws-secret'}}, got {self.kinds!r}")
        kinds = frozenset(self.kinds)
        unknown = sorted(map(repr, kinds - set(KINDS)))
        if unknown:
            raise RedactionError(f"unknown kind {unknown[0]} in kinds; the kinds are: {', '.join(KINDS)}")
        object.__setattr__(self, "kinds", kinds)  # the frozenset, as the field says
        if isinstance(self.min_length, bool) or not isinstance(self.min_length, int) or self.min_length < 1:
            raise RedactionError(f"min_length must be an int >= 1, got {self.min_length!r}")
        if (isinstance(self.min_entropy, bool) or not isinstance(self.min_entropy, (int, float))
                or not 0 <= self.min_entropy <= 8):
            raise RedactionError(f"min_entropy must be a number of bits per character from 0 to 8, "
                             f"got {self.min_entropy!r}")

    def __call__(self, text: str) -> str:
        """``text`` with its secrets replaced by markers."""
        return self.apply(text)[0]

    def apply(self, text: str) -> tuple[str, Counter[str]]:
        """``text`` with its secrets replaced, and how many of each kind were replaced
        (a new `Counter`; empty when nothing was, or when the redactor is off)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        found: Counter[str] = Counter()
        if not self.enabled:
            return text, found
        # Markers are inert (no rule matches inside one), so each pass that replaces
        # something leaves strictly less unredacted text, and the loop ends. A second pass
        # is needed only when a marker cut a longer candidate short (NAME=abc:sk-...);
        # looping makes redacting twice the same as redacting once.
        while True:
            text, more = self._pass(text)
            if not more:
                return text, found
            found.update(more)

    def _pass(self, text: str) -> tuple[str, Counter[str]]:
        """One scan of every rule over ``text``; where matches overlap, the earlier rule's
        wins."""
        lowered = text.lower()
        spans: list[tuple[int, int, str]] = []  # (start, end, kind), none overlapping
        for rule in _rules_for(self.kinds):
            if not any([k in lowered for k in rule.keywords]):
                continue
            for m in rule.pattern.finditer(text):
                if rule.check is not None and not rule.check(m, self):
                    continue
                start, end = m.span("value")
                if not any(start < e and s < end for s, e, _ in spans):
                    spans.append((start, end, rule.kind))
        if not spans:
            return text, Counter()
        spans.sort()
        out: list[str] = []
        at = 0
        for start, end, kind in spans:
            out += [text[at:start], marker(kind, end - start)]
            at = end
        out.append(text[at:])
        return "".join(out), Counter(kind for _, _, kind in spans)

    def tally(self) -> RedactionTally:
        """A fresh `RedactionTally` that redacts with this redactor and counts as it goes."""
        return RedactionTally(self)


class RedactionTally:
    """Redacts many texts with one `Redactor` and counts what it replaced, by kind, for a
    report's header line. Made by `Redactor.tally`; one tally per report or run:

        tally = Redactor(enabled=not no_redact).tally()
        cells = [tally(text) for text in texts]
        print(tally.header())
    """

    def __init__(self, redactor: Redactor) -> None:
        if not isinstance(redactor, Redactor):
            raise TypeError(f"redactor must be a harpe_lab.redact.Redactor, got {redactor!r}")
        self._redactor = redactor
        self._counts: Counter[str] = Counter()

    @property
    def redactor(self) -> Redactor:
        """The redactor this tally applies."""
        return self._redactor

    def __call__(self, text: str) -> str:
        """``text`` redacted; what was replaced is added to the counts."""
        new, found = self._redactor.apply(text)
        self._counts.update(found)
        return new

    def add(self, counts: Mapping[str, int]) -> None:
        """Add counts that `Redactor.apply` returned elsewhere (another process, a cache)."""
        for kind, n in counts.items():
            if kind not in KINDS:
                raise RedactionError(f"unknown kind {kind!r}; the kinds are: {', '.join(KINDS)}")
            if isinstance(n, bool) or not isinstance(n, int) or n < 0:
                raise RedactionError(f"the count of {kind} must be an int >= 0, got {n!r}")
        self._counts.update(counts)

    @property
    def counts(self) -> Counter[str]:
        """Values replaced so far, by kind (a copy)."""
        return Counter({k: n for k, n in self._counts.items() if n > 0})

    @property
    def total(self) -> int:
        """Values replaced so far."""
        return sum(self.counts.values())

    def header(self) -> str:
        """One line for a report's header: ``12 values redacted: 3 aws-secret, 9
        generic-secret`` (kinds in alphabetical order), ``no values redacted``, or
        ``redaction off`` when the redactor is disabled."""
        if not self._redactor.enabled:
            return "redaction off"
        counts = self.counts
        total = sum(counts.values())
        if total == 0:
            return "no values redacted"
        noun = "value" if total == 1 else "values"
        kinds = ", ".join(f"{counts[k]} {k}" for k in sorted(counts))
        return f"{total} {noun} redacted: {kinds}"

    def __repr__(self) -> str:
        return f"<RedactionTally {self.header()!r}>"


_DEFAULT = Redactor()


def redact(text: str) -> str:
    """``text`` with every secret a default `Redactor` finds replaced by a
    ``[redacted <kind>, <N> chars]`` marker."""
    return _DEFAULT(text)
