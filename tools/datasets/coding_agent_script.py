"""coding_agent: a developer and a coding agent work on the invented "ledgerly" library for a
morning. Written as a Harpe G5 journal with harpe_lab's `JsonlLogger` and `TurnLog`, the
way Harpe's ``Agent.ask`` writes one: a driver bracket per turn, the turn's messages, model
events and one ``harpe.metering.usage`` per reply.

The repository is simulated: files live in a dict, patches are real unified diffs computed
with difflib, and the test runner's output is derived from which fixes have been applied,
so what the agent reads, changes and runs stays consistent from turn to turn.
"""

from __future__ import annotations

import difflib
import json
import random
import re
import string
from pathlib import Path
from typing import Any, Callable

from harpe_lab.journal import Journal, JsonlLogger, TurnLog
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, Usage, UserInput

import ledgerly_files as L

WHAT = """
A morning's session between a developer and a coding agent on `ledgerly`, a small invented
invoicing library: exploring the code, running the tests (three failures), fixing rounding
and a missing tax rate, adding a CSV export with its tests, asking a documentation subagent
about CSV conventions, an abandoned refactor, the day's diff, a coverage run, a release bump
and release notes. Tool results are large and realistic — whole files, pytest and coverage
output, unified diffs — so the context grows quickly, which is what context strategies are
for. It is stored as a Harpe G5 journal (`coding_agent.jsonl`) and read back with
`load_harpe`, like any journal Harpe writes.
"""

HOW = """
Written by `tools/datasets/coding_agent_script.py` with harpe_lab's `JsonlLogger` and `TurnLog`
(deterministic clock and turn ids from a seeded generator). The repository is simulated in
memory (`tools/datasets/ledgerly_files.py`): patches are real unified diffs and test output is
derived from the fixes applied so far. Usage rows are synthetic but consistent: each
request's `inputTokens` is the characters the agent's full context would hold divided by
3.7, with the previous request's prompt counted as `cacheReadTokens` and the new part as
`cacheWriteTokens`.
"""

EXTRA = """
## Shape

* a **failed** turn: the provider rate-limits every attempt (`harpe.model.failed`,
  four `harpe.model.retried`, `harpe.model.gaveUp`, `harpe.turn.failed`);
* an **interrupted** turn: the developer cancels a refactor mid-round
  (`harpe.turn.interrupted`; Harpe keeps only its input);
* a **nested subagent** turn: the agent's `delegate` tool runs a documentation helper whose
  own turn (messages and usage) is logged inside the tool call's scope
  (`harpe.tools.call=…`, second `harpe.turn.id=…`), counted in the outer turn's
  `metadata["nested_usage"]`;
* one `harpe.metering.usage` per model reply (`Turn.usage`).

The probes (`coding_agent.probes.json`, attached by `harpe_lab.datasets.load`) ask about
tool results from early turns.
"""

SYSTEM = (
    "You are a coding agent working in the user's repository at /home/dev/ledgerly. Use the tools to read, "
    "search, test and patch code. Make small, reviewed changes and run the tests after each one."
)
TOOLS_SPEC_CHARS = 2900  # the tool definitions sent with every request
PROVIDER = "anthropic"
MODEL = "claude-sonnet-4-5"
HELPER_MODEL = "claude-haiku-4-5"
CHARS_PER_TOKEN = 3.7
START = 1788426000.0  # 2026-09-03T09:00:00Z


# --- the simulated repository -----------------------------------------------------------------


class Repo:
    def __init__(self) -> None:
        self.files = dict(L.FILES)
        self.original = dict(L.FILES)

    def read(self, path: str) -> str:
        text = self.files[path]
        return "\n".join(f"{n:>5}  {line}" for n, line in enumerate(text.splitlines(), 1))

    def patch(self, path: str, new: str) -> tuple[str, str]:
        """Change ``path`` to ``new``; returns (the unified diff the agent sends, the tool's reply)."""
        old = self.files.get(path, "")
        diff = "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                            f"a/{path}" if old else "/dev/null", f"b/{path}", n=3))
        added = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
        removed = sum(1 for line in diff.splitlines() if line.startswith("-") and not line.startswith("---"))
        hunks = sum(1 for line in diff.splitlines() if line.startswith("@@"))
        self.files[path] = new
        verb = "Created" if not old else "Patched"
        return diff, f"{verb} {path}: {hunks} hunk{'s' if hunks != 1 else ''}, +{added} -{removed}"

    def git_diff(self) -> str:
        out = []
        for path in sorted(self.files):
            old, new = self.original.get(path, ""), self.files[path]
            if old == new:
                continue
            out.append(f"diff --git a/{path} b/{path}\n")
            if not old:
                out.append("new file mode 100644\n")
            out.extend(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                            f"a/{path}" if old else "/dev/null", f"b/{path}", n=3))
        return "".join(out)

    def tree(self) -> str:
        lines = [f"{len(text.encode()):>7}  {path}" for path, text in sorted(self.files.items())]
        return "\n".join(lines + [f"{len(self.files)} files"])

    def grep(self, pattern: str) -> str:
        rx = re.compile(pattern)
        hits = [f"{path}:{n}:{line}" for path, text in sorted(self.files.items())
                for n, line in enumerate(text.splitlines(), 1) if rx.search(line)]
        return "\n".join(hits) if hits else "(no matches)"


_PARAMS = {"test_addition": ["1.00-2.00-3.00", "0.10-0.20-0.30", "-1.00-1.00-0.00"],
           "test_lines_scale_with_quantity": ["1", "2", "3", "7", "12", "250"]}


def _tests(repo: Repo) -> list[tuple[str, str]]:
    """(file, test id) of every test the repository holds now, in file order."""
    out = []
    for path in sorted(p for p in repo.files if p.startswith("tests/")):
        for name in re.findall(r"^def (test_\w+)", repo.files[path], re.M):
            out.extend((path, f"{name}[{i}]") for i in _PARAMS[name]) if name in _PARAMS else out.append((path, name))
    return out


def _function_source(repo: Repo, path: str, name: str) -> list[str]:
    text = repo.files[path].splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith(f"def {name.split('[')[0]}("))
    end = start + 1
    while end < len(text) and (text[end].startswith(" ") or not text[end].strip()):
        end += 1
    while not text[end - 1].strip():
        end -= 1
    return text[start:end]


def _failures(repo: Repo) -> dict[str, tuple[str, str]]:
    """test id -> (the failing line, the error lines) for the repository's current state."""
    money, tax, export = repo.files["ledgerly/money.py"], repo.files["ledgerly/tax.py"], repo.files["ledgerly/export.py"]
    half_up = "ROUND_HALF_UP" in money
    fails: dict[str, tuple[str, str]] = {}
    if not half_up:
        fails["test_total_rounds_half_up"] = ('assert inv.total() == Money("10.14")',
                                              "AssertionError: assert Money('10.13') == Money('10.14')")
        fails["test_json_totals_are_strings"] = ('assert doc["total"] == "913.33"',
                                                 "AssertionError: assert '913.32' == '913.33'\n  - 913.33\n  + 913.32")
    if '"books"' not in tax:
        fails["test_reduced_rate_for_books"] = (
            'assert inv.tax() == Money("7.00")',
            "ledgerly.tax.UnknownCategory: \"no tax rate for category 'books'; known: exempt, food, goods, services\"")
    if "def to_csv" in export and 'lineterminator="\\n"' not in export:
        fails["test_csv_header_and_rows"] = (
            'assert text.splitlines(keepends=True)[0] == "number,description,quantity,unit_price,category,net,tax\\n"',
            "AssertionError: assert 'number,description,quantity,unit_price,category,net,tax\\r\\n' == "
            "'number,description,quantity,unit_price,category,net,tax\\n'\n"
            "  - number,description,quantity,unit_price,category,net,tax\n"
            "  + number,description,quantity,unit_price,category,net,tax\\r")
    return fails


def pytest_output(repo: Repo, r: random.Random, *, select: str = "", verbose: bool = False, cov: bool = False) -> str:
    tests = [(p, t) for p, t in _tests(repo) if select in t]
    fails = _failures(repo)
    failed = [(p, t) for p, t in tests if t.split("[")[0] in fails]
    head = [
        "============================= test session starts ==============================",
        "platform linux -- Python 3.12.4, pytest-8.3.2, pluggy-1.5.0" + (" -- /home/dev/ledgerly/.venv/bin/python" if verbose else ""),
        "rootdir: /home/dev/ledgerly",
        "configfile: pyproject.toml",
    ]
    if cov:
        head.append("plugins: cov-5.0.0")
    deselected = len(_tests(repo)) - len(tests)
    head.append(f"collected {len(_tests(repo))} items" + (f" / {deselected} deselected / {len(tests)} selected" if deselected else ""))
    head.append("")
    body: list[str] = []
    if verbose:
        for k, (p, t) in enumerate(tests, 1):
            status = "FAILED" if (p, t) in failed else "PASSED"
            body.append(f"{p}::{t} {status}".ljust(72) + f"[{100 * k // len(tests):>3}%]")
    else:
        done = 0
        for path in sorted({p for p, _ in tests}):
            marks = "".join("F" if (p, t) in failed else "." for p, t in tests if p == path)
            done += len(marks)
            body.append(f"{path} {marks}".ljust(72) + f"[{100 * done // len(tests):>3}%]")
    out = head + body
    if failed:
        out += ["", "=================================== FAILURES ==================================="]
        for p, t in failed:
            line, error = fails[t.split("[")[0]]
            out.append(f"_{'_' * 20} {t} {'_' * 20}")
            out.append("")
            for src in _function_source(repo, p, t):
                if src.strip() == line:  # pytest shows the test up to the failing line
                    out.append(">   " + src)
                    break
                out.append("    " + src)
            for e in error.splitlines():
                out.append("E       " + e)
            out.append("")
            n = next(i for i, s in enumerate(repo.files[p].splitlines(), 1) if s.strip() == line)
            out.append(f"{p}:{n}: {error.splitlines()[0].split(':')[0]}")
    if cov:
        out += ["", "---------- coverage: platform linux, python 3.12.4-final-0 ----------",
                "Name                   Stmts   Miss  Cover   Missing", "----------------------------------------------------"]
        total_s = total_m = 0
        for path in sorted(p for p in repo.files if p.startswith("ledgerly/")):
            stmts = sum(1 for line in repo.files[path].splitlines() if line.strip() and not line.strip().startswith(("#", '"""')))
            miss = {"ledgerly/money.py": 2, "ledgerly/invoice.py": 1, "ledgerly/tax.py": 0}.get(path, 0)
            total_s += stmts
            total_m += miss
            missing = {"ledgerly/money.py": "43, 51", "ledgerly/invoice.py": "71"}.get(path, "")
            out.append(f"{path:<22} {stmts:>5} {miss:>6} {100 * (stmts - miss) // stmts:>5}%   {missing}")
        out += ["----------------------------------------------------",
                f"{'TOTAL':<22} {total_s:>5} {total_m:>6} {100 * (total_s - total_m) // total_s:>5}%"]
    secs = r.uniform(0.3, 1.6)
    summary = ", ".join(x for x in (f"{len(failed)} failed" if failed else "", f"{len(tests) - len(failed)} passed",
                                     f"{deselected} deselected" if deselected else "") if x)
    if failed:
        out += ["=========================== short test summary info ============================"]
        for p, t in failed:
            out.append(f"FAILED {p}::{t} - {fails[t.split('[')[0]][1].splitlines()[0]}"[:160])
    out.append(f" {summary} in {secs:.2f}s ".center(80, "="))
    return "\n".join(out)


# --- the session --------------------------------------------------------------------------------


class Clock:
    def __init__(self, start: float) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def tick(self, lo: float, hi: float, r: random.Random) -> None:
        self.now += r.uniform(lo, hi)


def _tool_id(r: random.Random) -> str:
    return "toolu_01" + "".join(r.choice(string.ascii_letters + string.digits) for _ in range(22))


def _chars(m: Any) -> int:
    if isinstance(m, UserInput):
        return len(m.text)
    if isinstance(m, AssistantMessage):
        return len(m.text) + sum(len(json.dumps(c.input)) + len(c.name) + 20 for c in m.calls)
    return sum(len(x.content) + 20 for x in m.results)


class TurnWriter:
    """Writes one turn like ``Agent.ask``: model events, usage and messages."""

    def __init__(self, session: "Session", log: TurnLog, text: str, *, base_chars: int, model: str,
                 nested: bool = False) -> None:
        self.s, self.log, self.model, self.is_nested = session, log, model, nested
        self.messages: list[Any] = [UserInput(text)]
        self.base_chars = base_chars  # system prompt, tool definitions and earlier turns
        self.prev_tokens = 0
        log.user(self.messages[0])

    def context_tokens(self) -> int:
        return int((self.base_chars + sum(_chars(m) for m in self.messages)) / CHARS_PER_TOKEN)

    def reply(self, text: str, calls: list[tuple[str, dict, Any]] = (), *, cancel_after_calls: bool = False) -> None:
        s, r = self.s, self.s.r
        s.clock.tick(0.05, 0.2, r)
        self.log.model_sent(PROVIDER, self.model)
        made = [ToolCall(_tool_id(r), name, args) for name, args, _ in calls]
        message = AssistantMessage(text, tuple(made))
        tokens = self.context_tokens()
        cached = min(self.prev_tokens or (0 if self.is_nested else s.cache_carry(tokens)), tokens)
        out = int(len(text) / 4) + sum(12 + int(len(json.dumps(c.input)) / 3.2) for c in made) + r.randint(1, 9)
        s.clock.tick(1.0 + out / 60, 3.0 + out / 40, r)
        self.log.model_replied(PROVIDER, self.model)
        self.log.usage(Usage(input_tokens=tokens, output_tokens=out, cache_read_tokens=cached,
                             cache_write_tokens=tokens - cached, provider=PROVIDER, model=self.model))
        self.prev_tokens = tokens
        self.log.assistant(message)
        self.messages.append(message)
        if not made:
            return
        results = []
        for call, (_name, _args, result) in zip(made, calls):
            s.clock.tick(0.2, 4.0, r)
            results.append(ToolResult(call.id, result(call.id) if callable(result) else result))
        if cancel_after_calls:
            return  # Harpe does not log the results of a round that was cancelled
        tr = ToolResults(tuple(results))
        self.log.tool_results(tr)
        self.messages.append(tr)

    def nested(self, call_id: str, task: str) -> "TurnWriter":
        log = self.log.nested(call_id, self.s.turn_id())
        return TurnWriter(self.s, log, task, base_chars=len(HELPER_SYSTEM) + 900, model=HELPER_MODEL, nested=True)


HELPER_SYSTEM = "You are a documentation helper. Search the docs you are given and answer in five sentences or fewer."


class Session:
    def __init__(self, logger: JsonlLogger, clock: Clock, r: random.Random) -> None:
        self.journal = Journal(logger)
        self.logger = logger
        self.clock = clock
        self.r = r
        self.history: list[Any] = []  # what Harpe's FullContext keeps across turns
        self.last_tokens = 0
        self.last_time = clock.now

    def turn_id(self) -> str:
        return f"{self.r.getrandbits(64):016x}"

    def cache_carry(self, tokens: int) -> int:
        # the prompt cache lives five minutes: a new turn soon after the last reuses its prefix
        if self.clock.now - self.last_time < 300:
            return min(self.last_tokens, tokens)
        return 0

    def ask(self, text: str, body: Callable[[TurnWriter], str], *, pause: tuple[float, float] = (20, 120)) -> None:
        """One turn: ``body`` writes the replies and returns the outcome."""
        self.clock.tick(*pause, self.r)
        self.journal.request({"text": text})
        self.clock.tick(0.005, 0.02, self.r)
        log = TurnLog(self.logger, self.turn_id())
        base = len(SYSTEM) + TOOLS_SPEC_CHARS + sum(_chars(m) for m in self.history)
        w = TurnWriter(self, log, text, base_chars=base, model=MODEL)
        outcome = body(w)
        self.clock.tick(0.001, 0.01, self.r)
        if outcome == "answered":
            log.answered()
            self.history.extend(w.messages)
        elif outcome == "interrupted":
            log.interrupted()
            self.history.append(w.messages[0])
        else:
            self.history.append(w.messages[0])
        self.last_tokens = w.prev_tokens
        self.last_time = self.clock.now
        self.clock.tick(0.001, 0.01, self.r)
        self.journal.response("turnEnd")


def write(path: Path, r: random.Random) -> None:
    repo = Repo()
    clock = Clock(START + r.uniform(0, 600))
    with JsonlLogger(path, clock=clock) as logger:
        s = Session(logger, clock, r)
        _script(s, repo, r)


def _script(s: Session, repo: Repo, r: random.Random) -> None:
    def t1(w: TurnWriter) -> str:
        w.reply("I'll start with the layout and the README.", [
            ("list_files", {"path": "."}, repo.tree()),
            ("read_file", {"path": "README.md"}, repo.read("README.md")),
        ])
        w.reply("Now the invoice and money modules, where totals are computed.", [
            ("read_file", {"path": "ledgerly/invoice.py"}, repo.read("ledgerly/invoice.py")),
            ("read_file", {"path": "ledgerly/money.py"}, repo.read("ledgerly/money.py")),
        ])
        w.reply("And the tax table the lines use.", [("read_file", {"path": "ledgerly/tax.py"}, repo.read("ledgerly/tax.py"))])
        w.reply(
            "Here's how an invoice total is computed:\n\n"
            "1. Each `Line` computes `net()` = unit price × quantity, quantised to cents by `Money`.\n"
            "2. `tax()` = net × the rate for the line's category from `ledgerly.tax.TAX_RATES` "
            "(19% goods and services, 7% food, 0 exempt), quantised again.\n"
            "3. `gross()` = net + tax, per line.\n"
            "4. `Invoice.total()` sums the gross amounts and then applies the invoice-level `discount` fraction.\n\n"
            "So rounding happens per line, before summing, as the README says. One thing to note: `Money` quantises with "
            "`ROUND_HALF_EVEN` (banker's rounding), while the README calls this 'the accountants' convention', which is "
            "usually round-half-up. That may matter for half-cent amounts.")
        return "answered"

    s.ask("Have a look at this repo and tell me how invoice totals are computed.", t1, pause=(5, 20))

    def t_todo(w: TurnWriter) -> str:
        w.reply("", [("grep", {"pattern": "TODO|FIXME|XXX"}, repo.grep(r"TODO|FIXME|XXX"))])
        w.reply("Two TODOs, no FIXMEs:\n\n"
                "- `ledgerly/invoice.py`: per-line discounts, requested by the Ferreira Studio account.\n"
                "- `ledgerly/export.py`: a `schema` version field in the JSON, waiting on the accounting team.\n\n"
                "Neither blocks anything today.")
        return "answered"

    s.ask("Search the code for TODO and FIXME comments.", t_todo)

    def t2(w: TurnWriter) -> str:
        w.reply("Running the full suite.", [("run_tests", {"args": ""}, pytest_output(repo, r))])
        w.reply(
            "26 tests, 3 failures:\n\n"
            "- `test_total_rounds_half_up`: total is 10.13 but 10.14 is expected. The half-cent stamp rounds to 0.00 under "
            "banker's rounding; the test expects half-up.\n"
            "- `test_json_totals_are_strings` (export): 913.32 vs 913.33, the same rounding cause (250 × 1.15 × 19% = "
            "54.625 in tax).\n"
            "- `test_reduced_rate_for_books`: there is no `books` category in the tax table, so `UnknownCategory` is raised.\n\n"
            "The first two need a rounding decision; the third needs the books rate.")
        return "answered"

    s.ask("Run the tests.", t2)

    def t3(w: TurnWriter) -> str:
        new = repo.files["ledgerly/money.py"].replace("ROUND_HALF_EVEN, Decimal", "ROUND_HALF_UP, Decimal").replace(
            '    def __init__(self, value: object = "0") -> None:\n',
            '    def __init__(self, value: object = "0") -> None:\n'
            "        # invoices round half up, as the accountants' ledger does (not banker's rounding)\n").replace(
            "rounding=ROUND_HALF_EVEN", "rounding=ROUND_HALF_UP")
        diff, reply = repo.patch("ledgerly/money.py", new)
        w.reply("Switching `Money` to half-up rounding.", [("apply_patch", {"patch": diff}, reply)])
        w.reply("Running the rounding-related tests.", [
            ("run_tests", {"args": "-k 'rounds or totals'"}, pytest_output(repo, r, select="tot")),
        ])
        w.reply("Both rounding failures are fixed: `Money` now quantises with `ROUND_HALF_UP`, so the half-cent stamp "
                "becomes 0.01 and the export total is 913.33. I added a comment saying why, since banker's rounding is "
                "`decimal`'s default and someone may be tempted to 'fix' it back.")
        return "answered"

    s.ask("Fix the rounding one first. We want half-up rounding like the accountants do.", t3)

    def t4(w: TurnWriter) -> str:
        w.reply("", [("read_file", {"path": "ledgerly/tax.py"}, repo.read("ledgerly/tax.py"))])
        new = repo.files["ledgerly/tax.py"].replace('    "food": Decimal("0.07"),\n',
                                                    '    "food": Decimal("0.07"),\n    "books": Decimal("0.07"),\n')
        diff, reply = repo.patch("ledgerly/tax.py", new)
        w.reply("Adding the books rate.", [("apply_patch", {"patch": diff}, reply)])
        w.reply("Full suite again.", [("run_tests", {"args": ""}, pytest_output(repo, r))])
        w.reply("Done: `books` is taxed at 7% like food, and all 26 tests pass.")
        return "answered"

    s.ask("Now the books rate. It's 7% in our jurisdiction, same as food.", t4)

    def t_mypy(w: TurnWriter) -> str:
        money = repo.files["ledgerly/money.py"]
        n = next(k for k, line in enumerate(money.splitlines(), 1) if "# type: ignore" in line)
        w.reply("", [("run_bash", {"command": "mypy ledgerly"}, "Success: no issues found in 5 source files")])
        w.reply("Plain mypy is clean; trying strict mode as well.", [
            ("run_bash", {"command": "mypy --strict ledgerly"},
             f'ledgerly/money.py:{n}: error: Unused "type: ignore" comment  [unused-ignore]\n'
             "Found 1 error in 1 file (checked 5 source files)")])
        new = money.replace("        return Decimal(value)  # type: ignore[arg-type]\n", "        return Decimal(value)\n")
        diff, reply = repo.patch("ledgerly/money.py", new)
        w.reply("The ignore comment is stale: `_to_decimal` accepts `object` and `Decimal()` is typed to take it "
                "since the stubs were updated. Removing it.", [("apply_patch", {"patch": diff}, reply)])
        w.reply("", [("run_bash", {"command": "mypy --strict ledgerly"}, "Success: no issues found in 5 source files")])
        w.reply("mypy passes in strict mode now. The only finding was an unused `# type: ignore` in "
                f"`ledgerly/money.py` line {n}, which I removed.")
        return "answered"

    s.ask("Can you run mypy on the package too?", t_mypy)

    def t5(w: TurnWriter) -> str:
        error = "RateLimitError: 429 Too Many Requests: rate limit exceeded for model claude-sonnet-4-5"
        log = w.log
        for attempt in range(1, 6):
            s.clock.tick(0.3, 0.9, r)
            log.model_sent(PROVIDER, MODEL)
            s.clock.tick(0.2, 0.6, r)
            log.model_failed(error, provider=PROVIDER, model=MODEL, retryable=True)
            if attempt <= 4:
                delay = float(min(2 ** (attempt - 1), 30))
                log.model_retried(error, attempt=attempt, retry_in_seconds=delay)
                s.clock.tick(delay, delay + 0.01, r)
        log.model_gave_up(error, retries=4)
        log.failed(error)
        return "failed"

    s.ask("Add a CSV export for invoices, one row per line.", t5)

    def t6(w: TurnWriter) -> str:
        w.reply("Let me look at the current export module and its tests.", [
            ("read_file", {"path": "ledgerly/export.py"}, repo.read("ledgerly/export.py")),
            ("read_file", {"path": "tests/test_export.py"}, repo.read("tests/test_export.py")),
        ])
        export = repo.files["ledgerly/export.py"].replace("import json\n", "import csv\nimport io\nimport json\n").replace(
            '__all__ = ["to_json"]', '__all__ = ["to_json", "to_csv"]') + '''

CSV_COLUMNS = ["number", "description", "quantity", "unit_price", "category", "net", "tax"]


def to_csv(invoice: Invoice) -> str:
    """The invoice as CSV: a header row, then one row per line."""
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(CSV_COLUMNS)
    for line in invoice.lines:
        writer.writerow([invoice.number, line.description, line.quantity, line.unit_price, line.category,
                         line.net(), line.tax()])
    return buf.getvalue()
'''
        diff, reply = repo.patch("ledgerly/export.py", export)
        w.reply("Adding `to_csv` next to `to_json`, using the csv module so descriptions with commas are quoted.",
                [("apply_patch", {"patch": diff}, reply)])
        tests = repo.files["tests/test_export.py"].replace("from ledgerly.export import to_json",
                                                           "from ledgerly.export import to_csv, to_json") + '''

def test_csv_header_and_rows():
    text = to_csv(sample())
    assert text.splitlines(keepends=True)[0] == "number,description,quantity,unit_price,category,net,tax\\n"
    assert len(text.splitlines()) == 3


def test_csv_quotes_commas():
    inv = sample()
    inv.add("Paper, recycled", quantity=10, unit_price=Money("4.20"), category="goods")
    assert '"Paper, recycled"' in to_csv(inv)


def test_csv_amounts_match_json():
    inv = sample()
    rows = to_csv(inv).splitlines()[1:]
    assert [row.split(",")[-2] for row in rows] == [str(line.net()) for line in inv.lines]
'''
        diff, reply = repo.patch("tests/test_export.py", tests)
        w.reply("And tests for the header, quoting, and consistency with the JSON amounts.",
                [("apply_patch", {"patch": diff}, reply)])
        w.reply("Running the export tests.", [("run_tests", {"args": "tests/test_export.py"},
                                               pytest_output(repo, r, select="csv"))])
        fixed = repo.files["ledgerly/export.py"].replace("writer = csv.writer(buf)",
                                                         'writer = csv.writer(buf, lineterminator="\\n")')
        diff, reply = repo.patch("ledgerly/export.py", fixed)
        w.reply("The csv module ends rows with \\r\\n by default; the test (and most of our tooling) expects \\n. "
                "Setting the line terminator explicitly.", [("apply_patch", {"patch": diff}, reply)])
        w.reply("Full suite.", [("run_tests", {"args": ""}, pytest_output(repo, r))])
        w.reply("CSV export is in: `ledgerly.export.to_csv(invoice)` returns a header row and one row per line "
                "(number, description, quantity, unit_price, category, net, tax). Commas in descriptions are quoted. "
                "The first test run failed only because `csv.writer` uses \\r\\n line endings by default; rows now end "
                "with \\n. All 29 tests pass.")
        return "answered"

    s.ask("Let's try that again: add a CSV export for invoices, one row per line, with a header row.", t6,
          pause=(40, 90))

    def t7(w: TurnWriter) -> str:
        def helper(call_id: str) -> str:
            sub = w.nested(call_id, "What CSV conventions do accounting imports expect (Excel vs LibreOffice)? "
                                    "Line endings, separators, encoding, decimal marks. Five sentences max.")
            sub.reply("", [
                ("search_docs", {"query": "Excel CSV import line endings encoding BOM"},
                 "\n\n".join([
                     "[doc 1] Importing text files in spreadsheets (internal wiki, 2025)\n"
                     "Excel opens .csv files using the system list separator: a comma in English locales, a semicolon in "
                     "most European locales where the comma is the decimal mark. Files without a UTF-8 byte order mark "
                     "are read in the legacy code page, so accented names are garbled unless the file starts with a BOM. "
                     "Both \\r\\n and \\n line endings are accepted.",
                     "[doc 2] Accounting import guide, section 4.2\n"
                     "Our accounting system expects UTF-8 without BOM, comma separated, '.' as decimal mark, and a header "
                     "row. Amounts must not contain thousands separators. Line endings may be \\n or \\r\\n.",
                 ])),
                ("search_docs", {"query": "LibreOffice Calc CSV import options"},
                 "[doc 3] LibreOffice Calc: Text Import dialog\n"
                 "Calc shows an import dialog for .csv files where the user picks the character set, the separator and "
                 "the language used for number recognition. It detects UTF-8 reliably, with or without BOM. Quoted "
                 "fields may contain separators and line breaks."),
            ])
            answer = ("For the accounting system: UTF-8 without BOM, comma separator, '.' decimal mark, header row, no "
                      "thousands separators; \\n or \\r\\n both work. Excel is the trouble spot: it uses the locale's list "
                      "separator (a semicolon in much of Europe) and needs a UTF-8 BOM to show accented characters "
                      "correctly. LibreOffice asks the user and detects UTF-8 with or without a BOM. So: keep the current "
                      "format for the accounting import, and if people open the file in Excel, offer an 'excel' variant "
                      "with a BOM (and optionally semicolons).")
            sub.reply(answer)
            sub.log.answered()
            return answer

        w.reply("I'll ask the documentation helper.", [("delegate", {"task": "CSV conventions for accounting imports: "
                                                                             "Excel vs LibreOffice", "helper": "docs"},
                                                        helper)])
        w.reply("Summary from the docs helper:\n\n"
                "- **Accounting import** (what `to_csv` is for): UTF-8 without BOM, comma-separated, '.' decimals, header "
                "row, no thousands separators. Our output already matches.\n"
                "- **Excel**: uses the locale's list separator (semicolon in much of Europe) and needs a UTF-8 BOM to "
                "show accented characters, so double-clicking our file in a German Excel gives one column and garbled "
                "'Cafè'.\n"
                "- **LibreOffice**: shows an import dialog and detects UTF-8 either way.\n\n"
                "If people will open these in Excel, I'd add `to_csv(invoice, dialect='excel')` that writes a BOM; I "
                "wouldn't change the default.")
        return "answered"

    s.ask("Ask the docs helper what CSV conventions accounting imports expect, Excel vs LibreOffice, and summarise.", t7)

    def t_reports(w: TurnWriter) -> str:
        w.reply("I'll re-read the invoice module to build on its API.", [
            ("read_file", {"path": "ledgerly/invoice.py"}, repo.read("ledgerly/invoice.py")),
            ("read_file", {"path": "ledgerly/__init__.py"}, repo.read("ledgerly/__init__.py")),
        ])
        module = '''"""Reports over many invoices."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from typing import Iterable

from .invoice import Invoice
from .money import Money

__all__ = ["CustomerMonth", "monthly_by_customer"]


@dataclass(frozen=True)
class CustomerMonth:
    """Totals of one customer's invoices in one month."""

    customer: str
    month: str
    """``YYYY-MM``."""
    invoices: int
    net: Money
    tax: Money
    total: Money


def _month(d: date) -> str:
    return f"{d.year:04d}-{d.month:02d}"


def monthly_by_customer(invoices: Iterable[Invoice]) -> list[CustomerMonth]:
    """One row per (customer, month), sorted by month then customer."""
    groups: dict[tuple[str, str], list[Invoice]] = {}
    for inv in invoices:
        groups.setdefault((inv.customer, _month(inv.issued)), []).append(inv)
    rows = [
        CustomerMonth(
            customer=customer,
            month=month,
            invoices=len(group),
            net=Money.sum([inv.net() for inv in group]),
            tax=Money.sum([inv.tax() for inv in group]),
            total=Money.sum([inv.total() for inv in group]),
        )
        for (customer, month), group in groups.items()
    ]
    return sorted(rows, key=lambda row: (row.month, row.customer))
'''
        tests = '''from datetime import date

from ledgerly import Invoice, Money
from ledgerly.reports import monthly_by_customer


def inv(customer, day, amount):
    i = Invoice(number=f"{customer}-{day}", customer=customer, issued=day)
    i.add("Work", quantity=1, unit_price=Money(amount), category="services")
    return i


def test_groups_by_customer_and_month():
    rows = monthly_by_customer([
        inv("Ferreira Studio", date(2026, 8, 3), "100.00"),
        inv("Ferreira Studio", date(2026, 8, 20), "50.00"),
        inv("Lund AB", date(2026, 8, 9), "10.00"),
        inv("Ferreira Studio", date(2026, 9, 1), "10.00"),
    ])
    assert [(r.customer, r.month, r.invoices) for r in rows] == [
        ("Ferreira Studio", "2026-08", 2), ("Lund AB", "2026-08", 1), ("Ferreira Studio", "2026-09", 1)]
    assert rows[0].net == Money("150.00")
    assert rows[0].total == Money("178.50")


def test_no_invoices_no_rows():
    assert monthly_by_customer([]) == []
'''
        d1, r1 = repo.patch("ledgerly/reports.py", module)
        d2, r2 = repo.patch("tests/test_reports.py", tests)
        w.reply("Creating `ledgerly/reports.py` with `monthly_by_customer()` and its tests.", [
            ("apply_patch", {"patch": d1}, r1), ("apply_patch", {"patch": d2}, r2)])
        w.reply("", [("run_tests", {"args": "tests/test_reports.py"}, pytest_output(repo, r, select="rows"))])
        w.reply("Added `ledgerly.reports.monthly_by_customer(invoices)`: one `CustomerMonth` row per customer and "
                "month (invoice count, net, tax, total), sorted by month then customer. Totals are sums of the "
                "invoices' own rounded totals, so a report always agrees with the invoices it lists. Both new tests pass.")
        return "answered"

    s.ask("We also need a monthly report: net, tax and total per customer for a list of invoices. Put it in "
          "ledgerly/reports.py.", t_reports)

    def t_spec(w: TurnWriter) -> str:
        w.reply("", [("read_file", {"path": "docs/accounting-import-spec.md"}, repo.read("docs/accounting-import-spec.md")),
                     ("read_file", {"path": "ledgerly/export.py"}, repo.read("ledgerly/export.py"))])
        w.reply("Checking `to_json` against format 2 of the spec:\n\n"
                "- **Missing `schema`** (required, must be 2). That's the TODO in export.py.\n"
                "- **Missing `currency`** (required in format 2). `Money` has no currency, so we'd write a configured one.\n"
                "- **Discount**: the spec wants an absolute `discount` amount; we don't export it at all, and "
                "`Invoice.discount` is a fraction, so it must be converted.\n"
                "- **Rounding**: half up, per line, net then tax, which is exactly what we switched to today. "
                "Before today's fix, documents with half-cent amounts would have been rejected.\n"
                "- **Books at 7%** matches section 5.\n"
                "- **CSV**: our `to_csv` matches section 7 (UTF-8 without BOM, header, quoting, `\\n`).\n\n"
                "So format 2 needs `schema`, `currency` and `discount` added to the JSON.")
        return "answered"

    s.ask("Read the accounting import spec in docs/ and check our JSON export against it.", t_spec)

    def t_samples(w: TurnWriter) -> str:
        text, table, changed = sample_invoices(r)
        repo.files["data/sample_invoices.json"] = repo.original["data/sample_invoices.json"] = text
        w.reply("", [("read_file", {"path": "data/sample_invoices.json"}, repo.read("data/sample_invoices.json"))])
        w.reply("Recomputing every sample invoice with the current code and comparing with the stored totals.", [
            ("run_bash", {"command": "python scripts/compare_totals.py data/sample_invoices.json"}, table)])
        w.reply(f"{changed} of the {len(json.loads(text))} sample invoices change total with half-up rounding, each by "
                "exactly one cent; all of them have a half-cent amount somewhere (a unit price like 0.125, or a tax "
                "like 54.625). Every other invoice is unchanged. Those are the invoices the release notes should warn "
                "about.")
        return "answered"

    s.ask("Load data/sample_invoices.json and compare the stored totals with what our code computes now.", t_samples)

    def t8(w: TurnWriter) -> str:
        w.reply("Let me see how the tax table is used across the code first.", [
            ("read_file", {"path": "ledgerly/tax.py"}, repo.read("ledgerly/tax.py")),
            ("grep", {"pattern": "TAX_RATES|rate_for"}, repo.grep(r"TAX_RATES|rate_for")),
        ])
        w.reply("I'll introduce a `TaxRule` dataclass and load rules from YAML, starting with the module skeleton.", [
            ("apply_patch", {"patch": "--- a/ledgerly/tax.py\n+++ b/ledgerly/tax.py\n@@ -1,6 +1,9 @@\n"
                                      ' """Tax rates by line category."""\n \n from __future__ import annotations\n \n'
                                      "+from dataclasses import dataclass\n+from pathlib import Path\n+\n"
                                      " from decimal import Decimal\n"}, "(cancelled)"),
        ], cancel_after_calls=True)
        return "interrupted"

    s.ask("Refactor the whole tax module into a rules engine with YAML config.", t8)

    def t9(w: TurnWriter) -> str:
        w.reply("", [("run_bash", {"command": "git diff"}, repo.git_diff())])
        w.reply("Today's changes:\n\n"
                "- `ledgerly/money.py`: `ROUND_HALF_EVEN` → `ROUND_HALF_UP` with a comment explaining why, and the "
                "stale `# type: ignore` removed.\n"
                "- `ledgerly/tax.py`: new `books` category at 7%.\n"
                "- `ledgerly/export.py`: `to_csv()` with `CSV_COLUMNS`, `\\n` line endings.\n"
                "- `ledgerly/reports.py` (new): `monthly_by_customer()`.\n"
                "- `tests/test_export.py`: three CSV tests; `tests/test_reports.py` (new): two report tests.\n\n"
                "The cancelled refactor left nothing behind: its patch was never applied.")
        return "answered"

    s.ask("Never mind the refactor. Show me the full diff of what we changed today.", t9, pause=(30, 60))

    def t_log(w: TurnWriter) -> str:
        w.reply("", [("run_bash", {"command": "git log --stat -n 20"}, git_log(r))])
        w.reply("The last 20 commits go back to mid-June: mostly the 0.3.x work (discounts, the tax breakdown, the float "
                "fix) by Amara Okafor and Jonas Lindqvist, plus CI and dependency housekeeping. Nothing touches "
                "rounding since the initial `Money` commit, which is consistent with the half-even behaviour being "
                "an original default rather than a deliberate choice.")
        return "answered"

    s.ask("Show me the git log with stats, the last 20 commits. Was the rounding mode ever discussed?", t_log)

    def t_review(w: TurnWriter) -> str:
        w.reply("Reading all the test files.", [
            ("read_file", {"path": path}, repo.read(path)) for path in sorted(p for p in repo.files if p.startswith("tests/"))
        ])
        w.reply("What the tests do not cover yet:\n\n"
                "1. `Money` subtraction and negation (credit notes will need them).\n"
                "2. Discounts combined with several tax categories, where rounding order matters.\n"
                "3. `to_json` with a discount (the JSON `total` includes it, but no test says so).\n"
                "4. Category names with different case or spaces (`rate_for` strips and lower-cases them).\n"
                "5. `monthly_by_customer` with several currencies. Not possible today, as `Money` has no currency.\n\n"
                "I'd start with 2 and 3: they are the paths most likely to produce a one-cent dispute.")
        return "answered"

    s.ask("Read the test files and tell me which behaviours aren't tested yet.", t_review)

    def t10(w: TurnWriter) -> str:
        w.reply("", [("run_bash", {"command": "pytest -v --cov=ledgerly --cov-report=term-missing"},
                      pytest_output(repo, r, verbose=True, cov=True))])
        w.reply(f"All {len(_tests(repo))} tests pass. Coverage is high; the misses are `Money.exact` and the `__neg__`/`__bool__` paths "
                "in `money.py`, and `Invoice.is_empty` on the empty path in `invoice.py`. None of them are on the "
                "paths we changed today.")
        return "answered"

    s.ask("Run the full suite with coverage, verbose.", t10, pause=(400, 900))

    def t11(w: TurnWriter) -> str:
        w.reply("", [("read_file", {"path": "CHANGELOG.md"}, repo.read("CHANGELOG.md")),
                     ("read_file", {"path": "pyproject.toml"}, repo.read("pyproject.toml"))])
        changelog = repo.files["CHANGELOG.md"].replace("# Changelog\n\n", "# Changelog\n\n## 0.4.0 — 2026-09-03\n"
                                                       "- CSV export (`ledgerly.export.to_csv`).\n"
                                                       "- New tax category `books` (7%).\n"
                                                       "- Amounts now round half up (was banker's rounding); totals with "
                                                       "half-cent amounts can change by one cent.\n\n")
        d1, r1 = repo.patch("CHANGELOG.md", changelog)
        d2, r2 = repo.patch("pyproject.toml", repo.files["pyproject.toml"].replace('version = "0.3.2"', 'version = "0.4.0"'))
        d3, r3 = repo.patch("ledgerly/__init__.py",
                            repo.files["ledgerly/__init__.py"].replace('__version__ = "0.3.2"', '__version__ = "0.4.0"'))
        w.reply("Updating the changelog and both version strings.", [
            ("apply_patch", {"patch": d1}, r1), ("apply_patch", {"patch": d2}, r2), ("apply_patch", {"patch": d3}, r3)])
        w.reply("Done: CHANGELOG has a 0.4.0 section (CSV export, books rate, and the rounding change flagged as "
                "behaviour-changing), and the version is 0.4.0 in both `pyproject.toml` and `ledgerly/__init__.py`.")
        return "answered"

    s.ask("Update the CHANGELOG and bump the version to 0.4.0.", t11)

    def t12(w: TurnWriter) -> str:
        w.reply("## ledgerly 0.4.0\n\n"
                "### New\n"
                "- **CSV export**: `ledgerly.export.to_csv(invoice)` writes a header row and one row per invoice line "
                "(number, description, quantity, unit_price, category, net, tax), UTF-8, comma-separated, `\\n` line "
                "endings, ready for the accounting import.\n"
                "- **Books tax category**: `books` is taxed at 7%.\n\n"
                "### Changed\n"
                "- **Rounding**: amounts now round half up (previously half-even). Invoices with half-cent amounts can "
                "differ by one cent from 0.3.x; this matches how the accounting team rounds.\n\n"
                "### Upgrade notes\n"
                "- If you compared stored totals against recomputed ones, expect one-cent differences on a few "
                "invoices with half-cent unit prices.\n"
                "- Opening the CSV in Excel in a semicolon locale needs the import wizard; an Excel-friendly variant "
                "may follow.")
        return "answered"

    s.ask("Write release notes for 0.4.0 that I can paste into GitHub.", t12)

    def t13(w: TurnWriter) -> str:
        w.reply("In the first test run, `test_total_rounds_half_up` failed on `assert inv.total() == Money(\"10.14\")` "
                "with `AssertionError: assert Money('10.13') == Money('10.14')`.")
        return "answered"

    s.ask("Quick one: what was the exact failing assertion for rounding in the first test run?", t13)

    def t14(w: TurnWriter) -> str:
        w.reply(f"You're welcome! Everything is ready to commit: {len(_tests(repo))} passing tests, version 0.4.0, "
                "changelog and release notes written.")
        return "answered"

    s.ask("Thanks, that's all for today.", t14)


_ITEMS = [("Logo design", "services", ["480.00", "650.00"]), ("Printed booklets", "goods", ["1.15", "0.985", "1.125"]),
          ("Catering lunch", "food", ["14.50", "12.125"]), ("Consulting hour", "services", ["95.00", "120.00"]),
          ("Handbook", "books", ["24.90", "19.995"]), ("Stickers", "goods", ["0.125", "0.335"]),
          ("Workshop day", "services", ["840.00"]), ("Coffee beans 1kg", "food", ["18.40", "21.305"]),
          ("Shipping", "exempt", ["6.90", "4.995"])]
_CUSTOMERS = ["Ferreira Studio", "Lund AB", "Okafor & Daughters", "Café Sørensen", "Moreau Atelier", "Haddad Print"]
_RATES = {"goods": "0.19", "services": "0.19", "food": "0.07", "books": "0.07", "exempt": "0"}


def _total(lines: list, rounding: str) -> str:
    from decimal import Decimal
    cent = Decimal("0.01")
    total = Decimal("0")
    for _desc, qty, price, cat in lines:
        unit = Decimal(price).quantize(cent, rounding=rounding)
        net = (unit * Decimal(qty)).quantize(cent, rounding=rounding)
        tax = (net * Decimal(_RATES[cat])).quantize(cent, rounding=rounding)
        total += net + tax
    return str(total.quantize(cent))


def sample_invoices(r: random.Random) -> tuple[str, str, int]:
    """(the JSON file, the comparison table, how many totals changed)."""
    docs, rows, changed = [], [], 0
    for k in range(40):
        lines = []
        for _ in range(r.randint(1, 5)):
            desc, cat, prices = r.choice(_ITEMS)
            lines.append((desc, str(r.choice([1, 1, 2, 3, 10, 25, 250])), r.choice(prices), cat))
        number = f"2026-{k + 101:04d}"
        old, new = _total(lines, "ROUND_HALF_EVEN"), _total(lines, "ROUND_HALF_UP")
        changed += old != new
        docs.append({"number": number, "customer": r.choice(_CUSTOMERS), "issued": f"2026-08-{r.randint(1, 28):02d}",
                     "lines": [{"description": d, "quantity": q, "unit_price": p, "category": c} for d, q, p, c in lines],
                     "total": old})
        rows.append(f"{number}  {old:>10}  {new:>10}  {'CHANGED' if old != new else 'same'}")
    table = "\n".join(["number      stored      now         result"] + rows +
                       ["", f"{len(docs)} invoices, {changed} changed, {len(docs) - changed} unchanged"])
    return json.dumps(docs, indent=2, ensure_ascii=False), table, changed


_AUTHORS = [("Amara Okafor", "amara@ledgerly.example"), ("Jonas Lindqvist", "jonas@ledgerly.example"),
            ("Keiko Tanaka", "keiko@ledgerly.example")]
_COMMITS = [
    ("Add Invoice.tax_breakdown for the summary box", ["ledgerly/invoice.py", "tests/test_invoice.py", "CHANGELOG.md"]),
    ("Money: build floats from repr to avoid binary noise", ["ledgerly/money.py", "tests/test_money.py"]),
    ("Release 0.3.2", ["pyproject.toml", "ledgerly/__init__.py", "CHANGELOG.md"]),
    ("CI: test on Python 3.13", [".github/workflows/test.yml"]),
    ("Bump pytest-cov to 5.0", ["pyproject.toml"]),
    ("Invoice-level discount", ["ledgerly/invoice.py", "tests/test_invoice.py"]),
    ("Document discounts in the README", ["README.md"]),
    ("Release 0.3.1", ["pyproject.toml", "ledgerly/__init__.py", "CHANGELOG.md"]),
    ("tax: clearer error for unknown categories", ["ledgerly/tax.py", "tests/test_invoice.py"]),
    ("Parametrise quantity tests", ["tests/test_invoice.py"]),
    ("export: include per-line tax", ["ledgerly/export.py", "tests/test_export.py"]),
    ("CI: cache pip downloads", [".github/workflows/test.yml"]),
    ("Typo in README example", ["README.md"]),
    ("Release 0.3.0", ["pyproject.toml", "ledgerly/__init__.py", "CHANGELOG.md"]),
    ("JSON export for the accounting system", ["ledgerly/export.py", "tests/test_export.py", "README.md"]),
    ("Tax rates per line category", ["ledgerly/tax.py", "ledgerly/invoice.py", "tests/test_invoice.py"]),
    ("Line.gross and Invoice.total", ["ledgerly/invoice.py", "tests/test_invoice.py"]),
    ("Add Money.sum", ["ledgerly/money.py", "tests/test_money.py"]),
    ("Test layout: one file per module", ["tests/test_invoice.py", "tests/test_money.py"]),
    ("Initial Money and Invoice", ["ledgerly/money.py", "ledgerly/invoice.py", "ledgerly/__init__.py", "pyproject.toml"]),
]


def git_log(r: random.Random) -> str:
    out = []
    when = START - 3 * 86400
    for message, files in _COMMITS:
        when -= r.uniform(1.5, 6.0) * 86400
        name, email = r.choice(_AUTHORS)
        stamp = __import__("datetime").datetime.fromtimestamp(when, __import__("datetime").timezone.utc)
        out.append(f"commit {r.getrandbits(160):040x}")
        out.append(f"Author: {name} <{email}>")
        out.append(f"Date:   {stamp:%a %b %d %H:%M:%S %Y} +0000")
        out.append("")
        out.append(f"    {message}")
        out.append("")
        adds = dels = 0
        for f in files:
            a, d = r.randint(1, 60), r.randint(0, 25)
            adds, dels = adds + a, dels + d
            out.append(f" {f:<40} | {a + d:>3} {'+' * min(a, 30)}{'-' * min(d, 15)}")
        out.append(f" {len(files)} file{'s' if len(files) > 1 else ''} changed, {adds} insertions(+), {dels} deletions(-)")
        out.append("")
    return "\n".join(out)


PROBES = [
    # (id, question, answer, (the turn's input starts with, text the evidence message contains), category)
    ("first_failures", "How many tests failed in the first full test run?", "3",
     ("Run the tests.", "3 failed, 23 passed"), "tool-fact"),
    ("rounding_assertion", "What did the rounding test expect, and what did it get, in the first run?",
     "expected Money('10.14'), got Money('10.13')", ("Run the tests.", "assert Money('10.13') == Money('10.14')"),
     "tool-fact"),
    ("books_rate", "What tax rate applies to books?", "7%", ("Now the books rate.", "It's 7% in our jurisdiction"),
     "user-fact"),
    ("mypy_error", "Which mypy --strict error did the agent fix?", "an unused 'type: ignore' comment in ledgerly/money.py",
     ("Can you run mypy", 'error: Unused "type: ignore" comment'), "tool-fact"),
    ("csv_failure", "Why did the first CSV test run fail?", "csv.writer ended rows with \\r\\n instead of \\n",
     ("Let's try that again", "'number,description,quantity,unit_price,category,net,tax\\r\\n'"), "tool-fact"),
    ("excel_bom", "What does Excel need to show accented characters in a CSV file correctly, per the docs helper?",
     "a UTF-8 byte order mark (BOM)", ("Ask the docs helper", "needs a UTF-8 BOM to show accented characters correctly"),
     "tool-fact"),
    ("spec_rounding", "Which rounding does the accounting import spec require?", "half up, per line (net, then tax)",
     ("Read the accounting import spec", "Rounding is **half up**"), "tool-fact"),
    ("todo_count", "How many TODO comments did the search find?", "2", ("Search the code for TODO", "TODO: per-line"),
     "tool-fact"),
]

PROBE_ASKED_AT = {"rounding_assertion": "Quick one:"}  # asked before the turn that restates it; others at the end
