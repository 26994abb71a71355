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

Variants of the LoCoMo family are read by the same importer; ``metadata["variant"]`` says
which one it chose:

``locomo``
    the original: samples with a ``conversation`` object holding ``speaker_a``,
    ``speaker_b`` and the ``session_N`` lists.
``realtalk``
    REALTALK (real messaging-app chats over 21 days): the ``session_N`` lists are top-level
    keys of each sample, with no ``conversation`` wrapper and no ``speaker_a``; utterances
    hold ``clean_text`` (or ``text``); a speaker's name may differ in case between
    utterances; shared images are URLs (``img_url``), not captions. The first speaker of the
    first session plays the user, unless the sample names its speakers (``name`` with
    ``speaker_1``, or ``speaker_a``). Speakers are matched without regard to case; an image
    is shown as ``[shares a photo: <caption or URL>]``; an utterance without a ``dia_id``
    gets ``D<session>:<position>``. Session dates come from ``session_N_date_time`` or the
    first utterance's ``date_time``.
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from ..conversation import Conversation, Probe
from ..messages import AssistantMessage, UserInput
from ._common import Format, Source, TurnBuilder, checked_items, conversation, document_items, item_where

__all__ = ["load_locomo", "load_locomo_all", "LOCOMO_CATEGORIES", "VARIANTS"]

NAME = "locomo"
LOCOMO_CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
NOT_MENTIONED = "Not mentioned in the conversation"
_SESSION = re.compile(r"session_(\d+)")


def load_locomo(path: Any, *, index: int | str = 0) -> Conversation:
    """Read one LoCoMo sample as a conversation with its QA as probes."""
    return FORMAT.load(path, index=index)


def load_locomo_all(path: Any) -> list[Conversation]:
    """Read every sample of a LoCoMo file."""
    return FORMAT.load_all(path)


VARIANTS = ("locomo", "realtalk")
"""The LoCoMo-family variants this importer reads (see the module doc)."""


def _variant(sample: Any) -> str | None:
    """``"locomo"`` or ``"realtalk"`` for a sample of either shape, else why not (prefixed
    with ``"!"``)."""
    if not isinstance(sample, Mapping):
        return "!is not an object"
    if not isinstance(sample.get("qa", []), list):
        return "!'qa' is not a list"
    conv = sample.get("conversation")
    if isinstance(conv, Mapping):
        if "speaker_a" not in conv or not any(_SESSION.fullmatch(key) for key in conv):
            return "!'conversation' has no speaker_a and session_N keys"
        return "locomo"
    sessions = [key for key in sample if _SESSION.fullmatch(key)]
    if not sessions:
        return "!has no 'conversation' object (LoCoMo) and no top-level session_N lists (REALTALK)"
    for key in sessions:
        utterances = sample[key]
        if not isinstance(utterances, list):
            return f"!{key} is not a list of utterances"
        if utterances:
            u = utterances[0]
            if not isinstance(u, Mapping) or "speaker" not in u or not ("clean_text" in u or "text" in u):
                return f"!{key}[0] is not an utterance with 'speaker' and 'clean_text' or 'text'"
    return "realtalk"


def sniff(src: Source) -> str | None:
    """``None`` when the file is LoCoMo or a LoCoMo-family variant, else why not."""
    doc = src.doc
    items = document_items(src)
    if isinstance(items, str):
        return items
    for k, s in enumerate(items):
        variant = _variant(s)
        if variant is not None and variant.startswith("!"):
            return f"{item_where(doc, k)}: {variant[1:]}"
    return None


def _samples(src: Source) -> list[Mapping[str, Any]]:
    return checked_items(src, sniff, "LoCoMo")


def _images(utterance: Mapping[str, Any]) -> list[str]:
    """What a shared image shows: its caption when the source has one, else its URL(s)."""
    caption = utterance.get("blip_caption")
    if caption:
        return [str(c) for c in caption] if isinstance(caption, list) else [str(caption)]
    urls = utterance.get("img_url")
    if isinstance(urls, str):
        urls = [urls]
    return [str(u) for u in urls or () if u]


def _text(utterance: Mapping[str, Any]) -> str:
    text = str(utterance.get("clean_text", utterance.get("text", "")) or "")
    for shown in _images(utterance):
        text = f"{text} [shares a photo: {shown}]" if text else f"[shares a photo: {shown}]"
    return text


def _realtalk_speakers(sample: Mapping[str, Any], sessions: list[tuple[int, str]]) -> tuple[str, str]:
    """(user, other) for a REALTALK sample: named speakers when given, else the first two
    speakers in order of appearance."""
    names = sample.get("name")
    if isinstance(names, Mapping) and names.get("speaker_1"):
        return str(names["speaker_1"]), str(names.get("speaker_2", ""))
    if sample.get("speaker_a"):
        return str(sample["speaker_a"]), str(sample.get("speaker_b", ""))
    seen: list[str] = []
    for _, key in sessions:
        for u in sample[key]:
            name = str(u.get("speaker", "")) if isinstance(u, Mapping) else ""
            if name and name.casefold() not in [s.casefold() for s in seen]:
                seen.append(name)
            if len(seen) == 2:
                return seen[0], seen[1]
    return (seen + ["", ""])[0], (seen + ["", ""])[1]


def _convert(src: Source, sample: Mapping[str, Any], k: int) -> Conversation:
    variant = _variant(sample)
    # a file holding one sample is named after the file; samples of a list by position
    ident = str(sample.get("sample_id") or (f"{src.path.stem}-{k}" if isinstance(src.doc, list) else src.path.stem))
    if variant == "locomo":
        conv = sample["conversation"]
        sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION.fullmatch(key)))
        speaker_a, speaker_b = str(conv["speaker_a"]), str(conv.get("speaker_b", ""))
    else:
        conv = sample
        sessions = sorted((int(m.group(1)), key) for key in conv if (m := _SESSION.fullmatch(key)))
        speaker_a, speaker_b = _realtalk_speakers(sample, sessions)
    user = speaker_a.casefold()
    builder = TurnBuilder()
    known: set[str] = set()
    for n, key in sessions:
        utterances = conv[key]
        if not isinstance(utterances, list):
            raise src.error(f"sample {ident} {key}", f"expected a list of utterances, got {type(utterances).__name__}")
        date = str(conv.get(f"{key}_date_time", ""))
        if not date and utterances and isinstance(utterances[0], Mapping):
            date = str(utterances[0].get("date_time", "") or "")
        for j, u in enumerate(utterances):
            if variant == "locomo" and (not isinstance(u, Mapping) or "dia_id" not in u or "speaker" not in u):
                raise src.error(f"sample {ident} {key}[{j}]", "an utterance needs 'speaker', 'dia_id' and 'text'")
            if not isinstance(u, Mapping) or "speaker" not in u:
                raise src.error(f"sample {ident} {key}[{j}]", "an utterance needs 'speaker' and 'clean_text' or 'text'")
            dia = str(u.get("dia_id") or f"D{n}:{j + 1}")
            if dia in known:
                raise src.error(f"sample {ident} {key}[{j}]", f"dia_id {dia!r} appears twice")
            known.add(dia)
            if str(u["speaker"]).casefold() == user:
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
        "variant": variant,
        "speaker_a": speaker_a,
        "speaker_b": speaker_b,
        "sessions": len(sessions),
    }
    if unknown:
        meta["unknown_evidence"] = unknown
    if adversarial:
        meta["adversarial_answers"] = adversarial
    return conversation(turns, id=ident, source=src.path, format=NAME, metadata=meta, probes=probes)


FORMAT = Format(NAME, "a LoCoMo-family dialogue file", sniff, _convert, items=_samples,
                ident=lambda _src, s, k: str(s.get("sample_id", k)), what="samples")
