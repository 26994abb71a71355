"""Write harpe_lab's bundled datasets (the ``*.json``, ``*.jsonl`` and ``*.md`` files in
``harpe_lab/datasets/data/``).

Run from the repository root::

    .venv/bin/python tools/datasets/make_datasets.py            # rewrite the bundled files
    .venv/bin/python tools/datasets/make_datasets.py --out DIR  # write them elsewhere (tests compare)

Everything here was written for harpe_lab: the people, companies, code and numbers are
invented. The scripts are fixed text; a seeded ``random.Random`` only varies the small
things (speed-test numbers, timings, ids), so the output is identical on every run and is
committed. Each dataset gets a card ``<name>.md`` with its numbers computed from the data.
"""

from __future__ import annotations

import json
import random
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
DATA = ROOT / "harpe_lab" / "datasets" / "data"
sys.path.insert(0, str(ROOT))

from harpe_lab.conversation import Conversation, Probe, Turn  # noqa: E402
from harpe_lab.messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput  # noqa: E402

import coding_agent_script  # noqa: E402  (the coding agent's session, kept in its own file)
import research_script  # noqa: E402
import support_script  # noqa: E402


@dataclass
class Script:
    """Builds a conversation turn by turn and remembers which message holds each fact."""

    prefix: str = ""
    turns: list[Turn] = field(default_factory=list)
    where: dict[str, str] = field(default_factory=dict)
    calls: int = 0

    def _id(self, t: int, j: int) -> str:
        return f"{self.prefix}{t}.{j}"

    def turn(self, user: str, reply: str, *, tools: list | None = None, facts: dict[str, str] | None = None,
             meta: dict[str, Any] | None = None) -> int:
        """One turn. ``tools``: rounds of ``(assistant text, [(name, input, result), ...])``.
        ``facts`` maps a fact key to where it is stated: ``"user"``, ``"reply"`` or
        ``"tool:<round>"``."""
        t = len(self.turns)
        ids = [self._id(t, 0)]
        messages: list = []
        round_ids: list[str] = []
        for text, calls in tools or []:
            made = []
            results = []
            for name, args, result in calls:
                self.calls += 1
                call_id = f"call_{self.prefix}{self.calls:04d}"
                made.append(ToolCall(call_id, name, args))
                results.append(ToolResult(call_id, result))
            messages.append(AssistantMessage(text, tuple(made)))
            ids.append(self._id(t, len(ids)))
            messages.append(ToolResults(tuple(results)))
            ids.append(self._id(t, len(ids)))
            round_ids.append(ids[-1])
        messages.append(AssistantMessage(reply))
        ids.append(self._id(t, len(ids)))
        for key, place in (facts or {}).items():
            if place == "user":
                self.where[key] = ids[0]
            elif place == "reply":
                self.where[key] = ids[-1]
            elif place.startswith("tool:"):
                self.where[key] = round_ids[int(place[5:])]
            else:
                raise ValueError(f"fact place must be user, reply or tool:<n>, got {place!r}")
        self.turns.append(Turn(UserInput(user), tuple(messages), ids=tuple(ids), metadata=dict(meta or {})))
        return t

    def probe(self, pid: str, question: str, answer: str, facts: list[str], category: str,
              asked_at: int | None = None) -> Probe:
        return Probe(id=pid, asked_at=len(self.turns) if asked_at is None else asked_at, question=question,
                     answer=answer, evidence=tuple(self.where[f] for f in facts), category=category)


def _counts(c: Conversation) -> dict[str, int]:
    s = c.summary()
    chars = 0
    for m in c.messages():
        if isinstance(m, UserInput):
            chars += len(m.text)
        elif isinstance(m, AssistantMessage):
            chars += len(m.text)
        else:
            chars += sum(len(r.content) for r in m.results)
    s["chars"] = chars
    return s


def _probe_table(c: Conversation) -> str:
    if not c.probes:
        return "None.\n"
    rows = ["| id | asked at turn | category | question | answer | evidence |", "|---|---|---|---|---|---|"]
    for p in c.probes:
        rows.append(f"| {p.id} | {p.asked_at} | {p.category} | {p.question} | {p.answer} | {', '.join(p.evidence)} |")
    return "\n".join(rows) + "\n"


def card(name: str, title: str, what: str, how: str, c: Conversation, file: Path, extra: str = "") -> str:
    s = _counts(c)
    outcomes: dict[str, int] = {}
    for t in c.turns:
        outcomes[t.outcome] = outcomes.get(t.outcome, 0) + 1
    text = f"""# {title}

`harpe_lab.datasets.load("{name}")`

## What

{what.strip()}

## How it was made

{how.strip()}

Written by `tools/datasets/make_datasets.py` (seeded, deterministic); nothing in it comes from
real people or real transcripts.

## Size

| | |
|---|---|
| file | `{file.name}` ({file.stat().st_size:,} bytes) |
| turns | {s['turns']} |
| messages | {s['messages']} |
| tool calls / results | {s['tool_calls']} / {s['tool_results']} |
| recorded usage rows | {s['usage_rows']} |
| message characters | {s['chars']:,} |
| outcomes | {", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))} |
| probes | {s['probes']} |

## Probes

{_probe_table(c)}"""
    if extra:
        text += "\n" + extra.strip() + "\n"
    return text


def coding_probes(c: Conversation) -> list[Probe]:
    """The coding agent's probes, with evidence ids found in the journal as read back."""
    out = []
    def turn_of(prefix: str) -> int:
        found = [k for k, t in enumerate(c.turns) if t.input.text.startswith(prefix)]
        if len(found) != 1:
            raise SystemExit(f"{len(found)} turns start with {prefix!r}, expected exactly one")
        return found[0]

    for pid, question, answer, (prefix, needle), category in coding_agent_script.PROBES:
        turn = turn_of(prefix)
        ids = []
        for mid, m in zip(c.turns[turn].ids, c.turns[turn].all_messages):
            texts = [r.content for r in m.results] if isinstance(m, ToolResults) else [m.text]
            if any(needle in x for x in texts):
                ids.append(mid)
        if len(ids) != 1:
            raise SystemExit(f"probe {pid}: {needle!r} is in {len(ids)} messages of turn {turn}, expected exactly one")
        before = coding_agent_script.PROBE_ASKED_AT.get(pid)
        asked_at = turn_of(before) if before else len(c.turns)
        out.append(Probe(id=pid, asked_at=asked_at, question=question, answer=answer, evidence=tuple(ids),
                         category=category))
    return out


def main(argv: list[str] | None = None) -> None:
    import argparse

    from harpe_lab.importers import load_any
    from harpe_lab.importers.native import save_conversation

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DATA,
                        help="folder to write to (default: harpe_lab/datasets/data, the bundled files)")
    out = parser.parse_args(argv).out
    out.mkdir(parents=True, exist_ok=True)
    written = []

    support = support_script.build(Script(), random.Random(20260301))
    path = save_conversation(support, out / "support_chat.json")
    (out / "support_chat.md").write_text(card("support_chat", "support_chat — a long customer-support chat",
                                               support_script.WHAT, support_script.HOW, load_any(path), path),
                                          encoding="utf-8")
    written.append(path)

    research = research_script.build(Script(), random.Random(20250303))
    path = save_conversation(research, out / "research_assistant.json")
    (out / "research_assistant.md").write_text(
        card("research_assistant", "research_assistant — a grant proposal over six sessions", research_script.WHAT,
             research_script.HOW, load_any(path), path), encoding="utf-8")
    written.append(path)

    path = out / "coding_agent.jsonl"
    if path.exists():
        path.unlink()
    coding_agent_script.write(path, random.Random(20260903))
    coding = load_any(path)
    probes = coding_probes(coding)
    sidecar = out / "coding_agent.probes.json"
    sidecar.write_text(json.dumps({"probes": [
        {"id": p.id, "asked_at": p.asked_at, "question": p.question, "answer": p.answer,
         "evidence": list(p.evidence), "category": p.category} for p in probes]}, indent=2) + "\n", encoding="utf-8")
    (out / "coding_agent.md").write_text(
        card("coding_agent", "coding_agent — a coding-agent session as a Harpe journal", coding_agent_script.WHAT,
             coding_agent_script.HOW, coding.with_(probes=tuple(probes)), path, coding_agent_script.EXTRA),
        encoding="utf-8")
    written += [path, sidecar]

    total = sum(p.stat().st_size for p in out.iterdir() if p.suffix in (".json", ".jsonl", ".md"))
    for p in written:
        print(f"{p.name}: {p.stat().st_size:,} bytes")
    print(f"total bundled: {total:,} bytes")


if __name__ == "__main__":
    main()
