"""LoCoMo: long multi-session dialogues between two people, with questions whose evidence
is named by dialogue id (``"D3:7"`` = session 3, utterance 7).

A LoCoMo file is a list of samples (``{"sample_id", "conversation", "qa", ...}``); use
`load_locomo_all` or ``index=`` (a position or the ``sample_id``).

Mapping: ``speaker_a`` plays the user and ``speaker_b`` the assistant, so each of
``speaker_a``'s utterances starts a turn. A session that opens with ``speaker_b`` gets a
synthetic empty input (id ``"D<n>:start"``, ``metadata["synthetic_input"]``). Every
utterance keeps its ``dia_id`` as message id; a shared photo is appended to the text as
``[shares a photo: <caption>]``, the way LoCoMo's own evaluation shows it. Each turn's
metadata has ``session`` and ``date_time``.

Every QA item becomes a `Probe` asked after the last turn (``asked_at = len(turns)``),
with ``category`` one of ``multi-hop`` (1), ``temporal`` (2), ``open-domain`` (3),
``single-hop`` (4), ``adversarial`` (5). Adversarial questions have no answer in the
dialogue; their ``answer`` is ``"Not mentioned in the conversation"`` and the misleading
answer LoCoMo offers is kept in ``metadata["adversarial_answers"]``. Evidence written as
``"D8:6; D9:17"`` is split; ids that name no utterance are dropped and listed in
``metadata["unknown_evidence"]``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..conversation import Conversation, Probe
from ..messages import AssistantMessage, UserInput
from ._common import Source, TurnBuilder, checked_items, conversation, document_items, item_where, read_source, select

__all__ = ["load_locomo", "load_locomo_all", "LOCOMO_CATEGORIES"]

FORMAT = "locomo"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
NOT_MENTIONED = "Not mentioned in the conversation"
_SESSION = re.compile(r"session_(\d+)")


def load_locomo(path: Any, *, index: int | str = 0) -> Conversation:
    """Read one LoCoMo sample as a conversation with its QA as probes."""
    src = read_source(path)
    samples = _samples(src)
    i = select(samples, index, lambda s, k: str(s.get("sample_id", k)), src.path, "samples")
    return _convert(src, samples[i], i)


def load_locomo_all(path: Any) -> list[Conversation]:
    """Read every sample of a LoCoMo file."""
    src = read_source(path)
    return [_convert(src, s, k) for k, s in enumerate(_samples(src))]


def sniff(src: Source) -> str | None:
    """``None`` when the file is LoCoMo, else why not."""
    doc = src.doc
    items = document_items(src)
    if isinstance(items, str):
        return items
    for k, s in enumerate(items):
        if not isinstance(s, Mapping) or not isinstance(s.get("conversation"), Mapping):
            return f"{item_where(doc, k)}: has no 'conversation' object"
        if not isinstance(s.get("qa", []), list):
            return f"{item_where(doc, k)}: 'qa' is not a list"
        conv = s["conversation"]
        if "speaker_a" not in conv or not any(_SESSION.fullmatch(key) for key in conv):
            return f"{item_where(doc, k)}: 'conversation' has no speaker_a and session_N keys"
    return None


def _samples(src: Source) -> list[Mapping[str, Any]]:
    return checked_items(src, sniff, "LoCoMo")


def _text(utterance: Mapping[str, Any]) -> str:
    text = str(utterance.get("text", ""))
    caption = utterance.get("blip_caption")
    if caption:
        text = f"{text} [shares a photo: {caption}]" if text else f"[shares a photo: {caption}]"
    return text


def _convert(src: Source, sample: Mapping[str, Any], k: int) -> Conversation:
    conv = sample["conversation"]
    ident = str(sample.get("sample_id", f"{src.path.stem}-{k}"))
    speaker_a = conv["speaker_a"]
    sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION.fullmatch(key)))
    builder = TurnBuilder()
    known: set[str] = set()
    for n, key in sessions:
        utterances = conv[key]
        if not isinstance(utterances, list):
            raise src.error(f"sample {ident} {key}", f"expected a list of utterances, got {type(utterances).__name__}")
        date = str(conv.get(f"{key}_date_time", ""))
        for j, u in enumerate(utterances):
            if not isinstance(u, Mapping) or "dia_id" not in u or "speaker" not in u:
                raise src.error(f"sample {ident} {key}[{j}]", "an utterance needs 'speaker', 'dia_id' and 'text'")
            dia = str(u["dia_id"])
            if dia in known:
                raise src.error(f"sample {ident} {key}[{j}]", f"dia_id {dia!r} appears twice")
            known.add(dia)
            if u["speaker"] == speaker_a:
                builder.user(UserInput(_text(u)), dia, session=n, date_time=date)
            else:
                if j == 0:
                    builder.user(UserInput(""), f"D{n}:start", session=n, date_time=date, synthetic_input=True)
                builder.assistant(AssistantMessage(_text(u)), dia)
    turns = builder.build()
    probes = []
    unknown: dict[str, list[str]] = {}
    adversarial: dict[str, str] = {}
    for q, item in enumerate(sample.get("qa", [])):
        if not isinstance(item, Mapping) or "question" not in item:
            raise src.error(f"sample {ident} qa[{q}]", "a QA item needs 'question', 'evidence' and 'category'")
        pid = f"{ident}:q{q}"
        raw = item.get("evidence") or []
        ids = [e for entry in raw for e in re.split(r"[;,\s]+", str(entry)) if e]
        evidence = [e for e in ids if e in known]
        if len(evidence) != len(ids):
            unknown[pid] = [e for e in ids if e not in known]
        category = item.get("category")
        name = LOCOMO_CATEGORIES.get(category, str(category) if category is not None else "")
        if "answer" in item:
            answer = str(item["answer"])
        else:
            answer = NOT_MENTIONED
            if "adversarial_answer" in item:
                adversarial[pid] = str(item["adversarial_answer"])
        probes.append(Probe(id=pid, asked_at=len(turns), question=str(item["question"]), answer=answer,
                            evidence=tuple(evidence), category=name))
    meta: dict[str, Any] = {
        "speaker_a": speaker_a,
        "speaker_b": conv.get("speaker_b", ""),
        "sessions": len(sessions),
    }
    if unknown:
        meta["unknown_evidence"] = unknown
    if adversarial:
        meta["adversarial_answers"] = adversarial
    return conversation(turns, id=ident, source=src.path, format=FORMAT, metadata=meta, probes=probes)
