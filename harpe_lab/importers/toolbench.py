"""ToolBench answer files: a tool-use search tree whose ``answer_generation.train_messages``
holds the chosen chain as OpenAI messages in the legacy ``function_call`` style.

``train_messages`` lists growing prefixes of one chain; the longest is the whole dialogue
and is the one read. Legacy calls get ids ``"fc<index>"`` (see `harpe_lab.importers.openai`).
A failed run has no ``train_messages``; then the deepest path of the search ``tree`` is read
instead — the ``query`` as input, each ``Action``/``Action Input`` node pair as a call (id
``"node<depth>"``) answered by the node's ``observation`` — and ``metadata["path_from"]``
is ``"tree"``. ``metadata`` keeps ``win``, ``final_answer``, ``query_count`` and
``total_tokens`` (the run's total, not per reply, so no usage rows).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..conversation import Conversation
from ..messages import AssistantMessage, ToolCall, ToolResult, ToolResults, UserInput
from ._common import Format, Source, TurnBuilder, conversation, parse_arguments
from .openai import _check_messages, _turns

__all__ = ["load_toolbench"]

NAME = "toolbench"


def load_toolbench(path: Any) -> Conversation:
    """Read a ToolBench answer file's chosen chain (or, for a failed run, its deepest path)."""
    return FORMAT.load(path)


def _convert(src: Source, _item: Any = None, _k: int = 0) -> Conversation:
    gen = src.doc["answer_generation"]
    meta = {key: gen.get(key) for key in ("valid_data", "final_answer", "query_count", "total_tokens") if key in gen}
    meta["win"] = src.doc.get("win")
    chains = gen.get("train_messages")
    if chains:
        k = max(range(len(chains)), key=lambda j: len(chains[j]))
        turns, system = _turns(src, chains[k], f"train_messages[{k}]")
        meta["path_from"] = "train_messages"
    else:
        turns, system = _from_tree(src, gen), ""
        meta["path_from"] = "tree"
    return conversation(turns, id=src.path.stem, source=src.path, format=NAME, metadata=meta, system=system)


def sniff(src: Source) -> str | None:
    """``None`` when the file is a ToolBench answer, else why not."""
    doc = src.doc
    if doc is None:
        return "a JSON Lines file, not one JSON document"
    if not isinstance(doc, Mapping) or not isinstance(doc.get("answer_generation"), Mapping):
        return "the top-level object has no 'answer_generation'"
    chains = doc["answer_generation"].get("train_messages")
    if chains is None:
        tree = doc.get("tree")
        if isinstance(tree, Mapping) and isinstance(tree.get("tree"), Mapping):
            return None
        return "'answer_generation' has no 'train_messages' and the file has no search 'tree'"
    if not isinstance(chains, list) or not chains:
        return "'answer_generation' has no 'train_messages' list"
    for k, chain in enumerate(chains):
        bad = _check_messages(chain, f"train_messages[{k}]")
        if bad:
            return bad
    return None


def _deepest_path(root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The nodes from the root to the deepest node (the first one found on ties)."""
    best: list[Mapping[str, Any]] = [root]
    stack = [(root, [root])]
    while stack:
        node, path = stack.pop()
        if len(path) > len(best):
            best = path
        for child in reversed(node.get("children") or []):
            stack.append((child, path + [child]))
    return best


def _from_tree(src: Source, gen: Mapping[str, Any]) -> list:
    builder = TurnBuilder()
    builder.user(UserInput(str(gen.get("query", ""))), "query")
    path = _deepest_path(src.doc["tree"]["tree"])
    for k, node in enumerate(path):
        if node.get("node_type") != "Action" or k + 1 >= len(path):
            continue
        args = path[k + 1]
        call_id = f"node{node.get('depth', k)}"
        builder.assistant(AssistantMessage("", (ToolCall(call_id, str(node.get("description", "")),
                                                         parse_arguments(args.get("description"))),)), call_id)
        if "observation" in args:
            builder.results(ToolResults((ToolResult(call_id, str(args["observation"])),)), f"{call_id}:result")
    return builder.build()


FORMAT = Format(NAME, "a ToolBench answer file", sniff, _convert)
