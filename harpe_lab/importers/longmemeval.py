"""LongMemEval: a question asked after a haystack of user–assistant chat sessions.

A LongMemEval file (``longmemeval_s``, ``_m`` or ``_oracle``) is a list of questions; each
becomes one conversation: its ``haystack_sessions`` in order, then the question as a
`Probe` asked after the last turn. Use `load_longmemeval_all` or ``index=`` (a position or
the ``question_id``).

Message ids are ``"<session id>:<position>"``. Messages marked ``has_answer`` are the
probe's evidence (abstention questions, ``*_abs``, have none). Each turn's metadata has
``session_id`` and ``date``; the conversation's has ``question_date``, ``question_type``
and ``answer_session_ids``. A session that opens with the assistant gets a synthetic empty
input (``"<session id>:start"``).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..conversation import Conversation, Probe
from ..messages import AssistantMessage, UserInput
from ._common import Format, Source, TurnBuilder, checked_items, conversation, document_items, item_where

__all__ = ["load_longmemeval", "load_longmemeval_all"]

NAME = "longmemeval"


def load_longmemeval(path: Any, *, index: int | str = 0) -> Conversation:
    """Read one LongMemEval question as a conversation ending in a probe."""
    return FORMAT.load(path, index=index)


def load_longmemeval_all(path: Any) -> list[Conversation]:
    """Read every question of a LongMemEval file."""
    return FORMAT.load_all(path)


def sniff(src: Source) -> str | None:
    """``None`` when the file is LongMemEval, else why not."""
    doc = src.doc
    items = document_items(src)
    if isinstance(items, str):
        return items
    for k, q in enumerate(items):
        if not isinstance(q, Mapping) or not isinstance(q.get("haystack_sessions"), list):
            return f"{item_where(doc, k)}: has no 'haystack_sessions' list"
        if "question" not in q:
            return f"{item_where(doc, k)}: has no 'question'"
    return None


def _items(src: Source) -> list[Mapping[str, Any]]:
    return checked_items(src, sniff, "LongMemEval")


def _convert(src: Source, item: Mapping[str, Any], k: int) -> Conversation:
    ident = str(item.get("question_id", f"{src.path.stem}-{k}"))
    sessions = item["haystack_sessions"]
    session_ids = list(item.get("haystack_session_ids") or [f"s{j}" for j in range(len(sessions))])
    dates = list(item.get("haystack_dates") or [""] * len(sessions))
    if len(session_ids) != len(sessions) or len(dates) != len(sessions):
        raise src.error(
            f"question {ident}",
            f"{len(sessions)} haystack_sessions but {len(session_ids)} haystack_session_ids "
            f"and {len(dates)} haystack_dates",
        )
    builder = TurnBuilder()
    evidence: list[str] = []
    seen: dict[str, int] = {}
    for j, (session, sid, date) in enumerate(zip(sessions, session_ids, dates)):
        # the same session can appear twice in a haystack; keep ids unique
        seen[str(sid)] = seen.get(str(sid), 0) + 1
        base = str(sid) if seen[str(sid)] == 1 else f"{sid}#{seen[str(sid)]}"
        if not isinstance(session, list):
            raise src.error(f"question {ident} session {j}",
                            f"expected a list of messages, got {type(session).__name__}")
        for t, m in enumerate(session):
            if not isinstance(m, Mapping) or m.get("role") not in ("user", "assistant"):
                raise src.error(f"question {ident} session {j} message {t}",
                                "expected {'role': 'user'|'assistant', 'content'}")
            mid = f"{base}:{t}"
            text = str(m.get("content", ""))
            if m["role"] == "user":
                builder.user(UserInput(text), mid, session_id=str(sid), date=str(date))
            else:
                if t == 0:
                    builder.user(UserInput(""), f"{base}:start", session_id=str(sid), date=str(date),
                                 synthetic_input=True)
                builder.assistant(AssistantMessage(text), mid)
            if m.get("has_answer"):
                evidence.append(mid)
    turns = builder.build()
    qtype = str(item.get("question_type", ""))
    if ident.endswith("_abs"):
        qtype = f"{qtype}-abstention" if qtype else "abstention"
    probe = Probe(id=ident, asked_at=len(turns), question=str(item["question"]), answer=str(item.get("answer", "")),
                  evidence=tuple(evidence), category=qtype)
    meta = {
        "question_type": str(item.get("question_type", "")),
        "question_date": str(item.get("question_date", "")),
        "answer_session_ids": list(item.get("answer_session_ids") or []),
    }
    return conversation(turns, id=ident, source=src.path, format=NAME, metadata=meta, probes=[probe])


FORMAT = Format(NAME, "a LongMemEval question file", sniff, _convert, items=_items,
                ident=lambda _src, q, k: str(q.get("question_id", k)), what="questions")
