"""A seeded generator of arbitrarily long conversations with planted facts, tool calls and
probes — for teaching and for scaling benchmarks.

``synthesize(turns, seed=...)`` builds a conversation between a user and an operations
assistant. Early on, the user states ``facts`` facts (a gate code, a server address, …),
some reach the conversation only through a tool result, and ``updates`` of them are later
changed; near the end, one `Probe` per fact asks for it, with the message that holds the
(latest) value as evidence. Everything else is plausible filler whose size you set:
``tool_rate`` of the turns run tools, and their results are about ``result_chars``
characters long.

The same arguments always give the same conversation (all randomness comes from
``random.Random(seed)``), and the generator is fast: 10,000 turns take about a second.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from .conversation import Conversation, Probe, Turn
from .messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput

__all__ = ["synthesize"]

# --- word banks (written for this module) --------------------------------------------------

_TOPICS = [
    "the nightly backup job", "the billing export", "our staging cluster", "the onboarding checklist",
    "the search index", "the mobile release", "the vendor contract", "the quarterly report",
    "the load balancer", "the customer survey", "the data retention policy", "the CI pipeline",
    "the office move", "the support rota", "the analytics dashboard", "the payment retries",
    "the password rotation", "the API rate limits", "the design review", "the incident postmortem",
]
_ASKS = [
    "Can you help me think through {topic}?", "What should I check first about {topic}?",
    "I need a short summary of where we are with {topic}.", "Is there anything risky about {topic} this week?",
    "Draft a note to the team about {topic}, please.", "How long would it take to clean up {topic}?",
    "Remind me what we decided about {topic}.", "Could you compare two options for {topic}?",
    "Something looks off with {topic}. Any ideas?", "Let's plan the next step for {topic}.",
]
_USER_EXTRA = [
    "No rush, but I'd like it before lunch.", "Keep it short.", "The team meets at three.",
    "I only have a few minutes.", "Assume the usual constraints.", "Last time this took a while.",
    "Marta asked about it yesterday.", "We can revisit later if needed.", "Use plain language.",
]
_SENTENCES = [
    "The simplest path is to start with the logs from the last run and work backwards.",
    "Two things stand out: the retry count is higher than usual and the queue drains slowly.",
    "I would keep the current schedule and add an alert for the slow step.",
    "The change is small, but it touches a shared config, so it needs a second reviewer.",
    "Most of the time goes into waiting for the external service, not into our own code.",
    "If we split the job in two, each half finishes well inside the maintenance window.",
    "The numbers from last week are consistent with a gradual increase in load.",
    "A rollback is cheap here, so the risk of trying the fix today is low.",
    "I'd write the decision down in the team notes so nobody has to rediscover it.",
    "There is one open question about ownership that someone should settle this week.",
    "The documentation is out of date on this point; the code is the source of truth.",
    "We could automate the manual check, though it only takes a few minutes today.",
    "Nothing here is urgent, but it is worth fixing before the next release.",
    "The old workaround still works, but it hides the real error message.",
    "I checked the history and the same pattern showed up twice last quarter.",
    "A short checklist would prevent most of the mistakes we saw last time.",
    "The cost difference between the two options is small compared to the effort.",
    "Let's keep the scope narrow and measure again after the change.",
    "Here is a draft you can adjust before sending it to the team.",
    "The dependency upgrade is the riskiest part; everything else is routine.",
]
_TOOLS = ["search_docs", "read_file", "run_query", "fetch_metrics"]
_LOG_LINES = [
    "INFO  worker-{n} processed batch {m} in {ms} ms",
    "WARN  retrying request to upstream (attempt {a}/5) after {ms} ms",
    "INFO  cache hit ratio {p}% over the last {m} requests",
    "DEBUG queue depth {m}, consumers {a}, lag {ms} ms",
    "ERROR timeout talking to storage node {n} after {ms} ms",
    "INFO  exported {m} rows to report_{n}.csv",
    "| {n:>4} | job-{m:<6} | {a} | {ms:>6} ms | ok |",
    "- item {m}: owner team-{a}, status open, updated {p} days ago",
]

# --- facts ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Fact:
    key: str
    question: str
    say: str  # how the user states it, "{v}" the value
    value: Callable[[random.Random], str]


def _code(r: random.Random) -> str:
    return f"{r.randint(1000, 9999)}#"


def _ip(r: random.Random) -> str:
    return f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(2, 250)}"


_FIRST = ["Amara", "Jonas", "Keiko", "Rafael", "Ines", "Tobias", "Leila", "Marek", "Sunita", "Owen"]
_LAST = ["Okafor", "Lindqvist", "Tanaka", "Moreau", "Castillo", "Novak", "Haddad", "Byrne", "Iyer", "Fischer"]
_WORDS = ["amber", "falcon", "cedar", "quartz", "harbor", "juniper", "cobalt", "meadow", "sable", "tundra"]
_DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
_MONTHS = ["March", "April", "May", "June", "July", "August", "September", "October"]

_FACTS = [
    _Fact("gate code", "What is the gate code for the server room?",
          "By the way, the gate code for the server room is {v}.", _code),
    _Fact("staging address", "What is the staging server's IP address?",
          "For the record, the staging server lives at {v}.", _ip),
    _Fact("manager", "Who is the user's new manager?",
          "Quick update on my side: my new manager is {v}.", lambda r: f"{r.choice(_FIRST)} {r.choice(_LAST)}"),
    _Fact("codename", "What is the project's codename?",
          "We're calling the project {v} internally, please use that name.",
          lambda r: f"{r.choice(_WORDS).title()} {r.choice(_WORDS).title()}"),
    _Fact("budget", "What is the budget for the migration?",
          "Finance approved a budget of ${v} for the migration.", lambda r: f"{r.randint(12, 95)},{r.randint(0, 9)}00"),
    _Fact("release date", "When is the release scheduled?",
          "The release is scheduled for {v}.", lambda r: f"{r.choice(_MONTHS)} {r.randint(1, 28)}"),
    _Fact("on-call day", "On which weekday does the user's on-call shift start?",
          "My on-call shift starts every {v}, so plan around that.", lambda r: r.choice(_DAYS)),
    _Fact("database port", "Which port does the reporting database listen on?",
          "The reporting database listens on port {v}.", lambda r: str(r.randint(5400, 5499))),
    _Fact("dog", "What is the name of the user's dog?",
          "Sorry, I was out walking my dog {v}. Where were we?",
          lambda r: r.choice(["Biscuit", "Pepper", "Nimbus", "Olive", "Taco"])),
    _Fact("badge", "What is the user's badge number?",
          "If security asks, my badge number is {v}.", lambda r: f"B-{r.randint(10000, 99999)}"),
]
_TOOL_FACTS = [
    ("license key", "What license key did the license lookup return?", "license_key", lambda r: "-".join(
        "".join(r.choice("ABCDEFGHJKLMNPQRSTUVWXYZ23456789") for _ in range(4)) for _ in range(3))),
    ("ticket", "What ticket number did the tracker assign to the outage?", "ticket",
     lambda r: f"OPS-{r.randint(1000, 9999)}"),
    ("owner", "Which team owns the export job according to the service catalog?", "owner_team",
     lambda r: f"team-{r.choice(_WORDS)}"),
]


def _filler(r: random.Random, lo: int, hi: int) -> str:
    return " ".join(r.choices(_SENTENCES, k=r.randint(lo, hi)))


def _line_pool(r: random.Random, n: int = 2048) -> list[str]:
    """Formatted log and table lines, made once per conversation: picking from a pool is
    what keeps 10,000 turns fast."""
    return [
        r.choice(_LOG_LINES).format(n=r.randint(1, 64), m=r.randint(100, 99999), ms=r.randint(3, 4000),
                                    a=r.randint(1, 5), p=r.randint(1, 99))
        for _ in range(n)
    ]


def _tool_text(r: random.Random, pool: list[str], mean_line: float, chars: int) -> str:
    target = max(40, int(chars * (0.5 + r.random())))
    text = "\n".join(r.choices(pool, k=int(target / mean_line) + 2))
    return text[:target]


def _check(name: str, value: object, ok: bool, want: str) -> None:
    if not ok:
        raise ValueError(f"{name} must be {want}, got {value!r}")


def synthesize(
    turns: int,
    *,
    seed: int = 0,
    facts: int = 8,
    updates: int = 0,
    tool_rate: float = 0.3,
    result_chars: int = 1200,
) -> Conversation:
    """A deterministic synthetic conversation of ``turns`` turns.

    ``facts`` planted facts (up to 13: ten the user states, three that arrive in tool
    results) are placed in the first half; ``updates`` of the user-stated ones are changed
    later (the probe's answer is then the newest value, category ``"knowledge-update"``);
    one probe per fact is asked in the last fifth, always after its evidence. ``tool_rate``
    is the share of turns that call tools (one to three rounds, one or two calls each), with
    results around ``result_chars`` characters. Message ids are ``"<turn>.<index>"``.
    """
    _check("turns", turns, isinstance(turns, int) and not isinstance(turns, bool) and turns >= 1, "an int >= 1")
    _check("facts", facts, isinstance(facts, int) and 0 <= facts <= len(_FACTS) + len(_TOOL_FACTS),
           f"an int from 0 to {len(_FACTS) + len(_TOOL_FACTS)}")
    _check("updates", updates, isinstance(updates, int) and 0 <= updates <= min(facts, len(_FACTS)),
           "an int from 0 to the number of user-stated facts")
    _check("tool_rate", tool_rate, isinstance(tool_rate, (int, float)) and 0 <= tool_rate <= 1, "between 0 and 1")
    _check("result_chars", result_chars, isinstance(result_chars, int) and result_chars >= 1, "an int >= 1")
    _check("turns", turns, facts == 0 or turns >= 3, "at least 3 when facts are planted")
    # one generator, drawn from in a fixed order: the same seed gives the same conversation
    r = random.Random(seed)
    pool = _line_pool(r)
    writer = _Writer(r, pool, sum(len(line) + 1 for line in pool) / len(pool), result_chars, min(facts, len(_FACTS)))
    writer.user_facts = r.sample(_FACTS, writer.n_user)
    writer.tool_facts = r.sample(_TOOL_FACTS, facts - writer.n_user)
    plans, probe_from = _schedule(r, turns, facts, updates)
    out = [writer.turn(t, plans.get(t, []), tool_rate) for t in range(turns)]
    probes = sorted((writer.probe(k, probe_from, turns) for k in range(facts)), key=lambda p: (p.asked_at, p.id))
    return Conversation(
        turns=tuple(out),
        id=f"synth-{turns}-seed{seed}",
        source="harpe_lab.synth",
        metadata={"format": "synthetic", "seed": seed, "facts": facts, "updates": updates,
                  "tool_rate": tool_rate, "result_chars": result_chars},
        probes=tuple(probes),
        system="You are a careful operations assistant. Answer briefly and use tools to check facts.",
    )


def _schedule(r: random.Random, turns: int, facts: int, updates: int) -> tuple[dict[int, list[tuple[str, int]]], int]:
    """(turn → the plants and updates it holds, the first turn a probe may be asked at):
    plants in the first half, updates after them, probes in the last fifth and always after
    every message a probe's answer depends on."""
    early = max(1, turns // 2)
    late = turns - max(1, turns // 5)
    plant_turns = [r.randrange(0, early) for _ in range(facts)]
    plans: dict[int, list[tuple[str, int]]] = {}
    for k, t in enumerate(plant_turns):
        plans.setdefault(t, []).append(("plant", k))
    update_turns = []
    for k in range(updates):
        lo = plant_turns[k] + 1
        t = r.randint(lo, max(lo, late - 1))
        update_turns.append(t)
        plans.setdefault(t, []).append(("update", k))
    return plans, max([late, *(t + 1 for t in plant_turns), *(t + 1 for t in update_turns)])


class _Writer:
    """Writes the turns one by one and remembers, per fact ``k`` (the user-stated first,
    then those in tool results), its current value, the id of the message that says it and
    its probe's category."""

    def __init__(self, r: random.Random, pool: list[str], mean_line: float, result_chars: int, n_user: int) -> None:
        self.r, self.pool, self.mean_line, self.result_chars, self.n_user = r, pool, mean_line, result_chars, n_user
        self.user_facts: list[Any] = []
        self.tool_facts: list[Any] = []
        self.values: dict[int, str] = {}
        self.evidence: dict[int, str] = {}
        self.categories: dict[int, str] = {}
        self.call_no = 0  # tool call ids count through the whole conversation

    def turn(self, t: int, todo: list[tuple[str, int]], tool_rate: float) -> Turn:
        r = self.r
        topic = r.choice(_TOPICS)
        text, stated = self._user_text(r.choice(_ASKS).format(topic=topic), todo)
        ids = [f"{t}.0"]
        for k in stated:
            self.evidence[k] = ids[0]
        messages: list = []
        tool_plants = [k for kind, k in todo if kind == "plant" and k >= self.n_user]
        if tool_plants or r.random() < tool_rate:
            self._tool_rounds(t, topic, tool_plants, messages, ids)
        messages.append(AssistantMessage(_filler(r, 2, 6)))
        ids.append(f"{t}.{len(ids)}")
        return Turn(UserInput(text), tuple(messages), ids=tuple(ids))

    def _user_text(self, text: str, todo: list[tuple[str, int]]) -> tuple[str, list[int]]:
        """The user's message with the facts it plants or corrects put in front, and which."""
        r = self.r
        if r.random() < 0.4:
            text += " " + r.choice(_USER_EXTRA)
        stated: list[int] = []
        for kind, k in todo:
            if k >= self.n_user:
                continue
            fact = self.user_facts[k]
            if kind == "plant":
                self.values[k] = fact.value(r)
                text = fact.say.format(v=self.values[k]) + " " + text
                self.categories[k] = "user-fact"
            else:
                new = fact.value(r)
                while new == self.values[k]:
                    new = fact.value(r)
                self.values[k] = new
                text = f"Correction: the {fact.key} changed, it is now {new}. " + text
                self.categories[k] = "knowledge-update"
            stated.append(k)
        return text, stated

    def _tool_rounds(self, t: int, topic: str, tool_plants: list[int], messages: list, ids: list[str]) -> None:
        """One to three rounds of one or two calls and their results; the facts planted in
        tool results go in front of the first round's first result."""
        r = self.r
        for rnd in range(r.randint(1, 3)):
            calls = []
            for _ in range(r.randint(1, 2)):
                self.call_no += 1
                calls.append(ToolCall(f"call_{self.call_no:06d}", r.choice(_TOOLS), {"query": topic, "page": rnd + 1}))
            messages.append(AssistantMessage("Let me look that up." if rnd == 0 else "Checking one more source.",
                                             tuple(calls)))
            ids.append(f"{t}.{len(ids)}")
            results = [ToolResult(c.id, _tool_text(r, self.pool, self.mean_line, self.result_chars)) for c in calls]
            if rnd == 0:
                for k in tool_plants:
                    _key, _q, field_name, make = self.tool_facts[k - self.n_user]
                    self.values[k] = make(r)
                    self.categories[k] = "tool-fact"
                    first = results[0]
                    results[0] = ToolResult(first.id, f"{field_name}: {self.values[k]}\n{first.content}")
            messages.append(ToolResults(tuple(results)))
            ids.append(f"{t}.{len(ids)}")
            if rnd == 0:
                for k in tool_plants:
                    self.evidence[k] = ids[-1]

    def probe(self, k: int, probe_from: int, turns: int) -> Probe:
        question = self.user_facts[k].question if k < self.n_user else self.tool_facts[k - self.n_user][1]
        asked_at = self.r.randint(probe_from, turns) if probe_from < turns else turns
        return Probe(id=f"p{k}", asked_at=asked_at, question=question, answer=self.values[k],
                     evidence=(self.evidence[k],), category=self.categories[k])
