"""Tools the model may call: a Python callable described as a JSON schema (from its
signature and docstring), and the journal logger a running tool call nests under."""

from __future__ import annotations

import collections.abc
import contextvars
import inspect
import json
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Literal, Mapping, Union

from ..errors import AgentError
from ..journal import JsonlLogger

__all__ = ["Tool", "current_logger"]

_TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_SIMPLE = {str: "string", int: "integer", float: "number", bool: "boolean"}
_ARGS_HEADER = re.compile(r"^(\s*)(Args|Arguments|Parameters|Params):\s*$")
_ARG_LINE = re.compile(r"^\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def _json_schema(annotation: Any, where: str) -> dict[str, Any]:
    """The JSON schema of one parameter annotation."""
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    if annotation is type(None):
        return {"type": "null"}
    if annotation in _SIMPLE:
        return {"type": _SIMPLE[annotation]}
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is Literal:
        kinds = {_SIMPLE.get(type(v)) for v in args}
        schema: dict[str, Any] = {"enum": list(args)}
        if len(kinds) == 1 and None not in kinds:
            schema = {"type": kinds.pop(), **schema}
        return schema
    if origin is Union or origin is types.UnionType:
        options = [a for a in args if a is not type(None)]
        inner = [_json_schema(a, where) for a in options]
        schema = inner[0] if len(inner) == 1 else {"anyOf": inner}
        if len(options) < len(args):  # Optional[X]: the model may send null
            return {"anyOf": [*(schema["anyOf"] if "anyOf" in schema else [schema]), {"type": "null"}]}
        return schema
    if annotation in (list, tuple, set, frozenset) or origin in (list, tuple, set, frozenset,
                                                                 collections.abc.Sequence, collections.abc.Iterable):
        schema = {"type": "array"}
        item_args = [a for a in args if a is not Ellipsis]
        if len(set(item_args)) == 1:
            schema["items"] = _json_schema(item_args[0], where)
        return schema
    if annotation is dict or origin in (dict, collections.abc.Mapping):
        schema = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            schema["additionalProperties"] = _json_schema(args[1], where)
        return schema
    raise AgentError(
        f"{where}: cannot describe the annotation {annotation!r} as JSON; use str, int, float, bool, "
        "list[...], dict[str, ...], Optional[...] or Literal[...], or give Tool(parameters=...) a schema"
    )


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {param: doc}) from a docstring: the first paragraph, and the entries
    of a Google-style ``Args:`` section."""
    lines = doc.splitlines()
    first: list[str] = []
    for line in lines:
        if not line.strip():
            if first:
                break
            continue
        if _ARGS_HEADER.match(line):
            break
        first.append(line.strip())
    params: dict[str, str] = {}
    for i, line in enumerate(lines):
        header = _ARGS_HEADER.match(line)
        if not header:
            continue
        base = len(header.group(1))
        entry_indent: int | None = None
        current: str | None = None
        for body in lines[i + 1:]:
            if not body.strip():
                continue
            indent = len(body) - len(body.lstrip())
            if indent <= base:
                break  # the next section
            if entry_indent is None:
                entry_indent = indent
            m = _ARG_LINE.match(body.strip())
            if indent == entry_indent and m:
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current is not None:
                params[current] = (params[current] + " " + body.strip()).strip()
        break
    return " ".join(first), params


@dataclass(frozen=True)
class Tool:
    """A tool the model may call: a Python callable and the schema that describes it.

    Build one with `Tool.from_function` (or pass the plain function to `ask`): the name is
    the function's, the description the docstring's first paragraph, and the parameters'
    JSON schema comes from the signature — annotations (str, int, float, bool, list, dict,
    Optional, Literal), defaults (a parameter with a default is optional) and the
    docstring's ``Args:`` section.
    """

    name: str
    description: str
    parameters: Mapping[str, Any]
    handler: Callable[..., Any] = field(repr=False)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _TOOL_NAME.fullmatch(self.name):
            raise AgentError(
                f"a tool name is 1-64 letters, digits, '_' or '-' (the providers' rule), got {self.name!r}; "
                "pass name=... to Tool.from_function"
            )
        if not callable(self.handler):
            raise AgentError(f"tool {self.name!r}: the handler must be callable, got {self.handler!r}")
        if inspect.iscoroutinefunction(self.handler):
            raise AgentError(f"tool {self.name!r} is async; ask runs tools synchronously — wrap it, "
                             "e.g. lambda **kw: asyncio.run(f(**kw))")
        if not isinstance(self.parameters, Mapping) or self.parameters.get("type") != "object":
            raise AgentError(f"tool {self.name!r}: parameters must be a JSON schema of type 'object', "
                             f"got {self.parameters!r}")

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None,
                      description: str | None = None) -> "Tool":
        """Describe ``fn`` as a tool (see the class docstring)."""
        if isinstance(fn, Tool):
            return fn
        if not callable(fn):
            raise AgentError(f"a tool is a callable or a Tool, got {fn!r}")
        tool_name = name or getattr(fn, "__name__", "")
        where = f"tool {tool_name!r}"
        doc_text, param_docs = _parse_docstring(inspect.getdoc(fn) or "")
        try:
            signature = inspect.signature(fn)
        except (TypeError, ValueError) as exc:
            raise AgentError(f"{where}: cannot read its signature ({exc}); wrap it in a def") from None
        try:
            hints = typing.get_type_hints(fn)
        except Exception as exc:  # an annotation that names something undefined
            raise AgentError(f"{where}: cannot resolve its annotations ({exc})") from None
        properties: dict[str, Any] = {}
        required: list[str] = []
        for p in signature.parameters.values():
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                continue
            if p.kind is p.POSITIONAL_ONLY:
                raise AgentError(f"{where}: parameter {p.name!r} is positional-only; the model passes "
                                 "arguments by name")
            schema = dict(_json_schema(hints.get(p.name, p.annotation), f"{where}, parameter {p.name!r}"))
            if p.name in param_docs:
                schema["description"] = param_docs[p.name]
            if p.default is p.empty:
                required.append(p.name)
            elif _is_json(p.default) and p.default is not None:
                schema["default"] = p.default
            properties[p.name] = schema
        parameters: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            parameters["required"] = required
        return cls(name=tool_name, description=description if description is not None else doc_text,
                   parameters=parameters, handler=fn)

    @property
    def schema(self) -> dict[str, Any]:
        """The OpenAI ``tools`` entry offered to the model."""
        function: dict[str, Any] = {"name": self.name}
        if self.description:
            function["description"] = self.description
        function["parameters"] = json.loads(json.dumps(self.parameters))
        return {"type": "function", "function": function}

    def __call__(self, **arguments: Any) -> Any:
        return self.handler(**arguments)


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _toolbox(tools: Iterable[Any]) -> dict[str, Tool]:
    box: dict[str, Tool] = {}
    if isinstance(tools, (str, bytes)) or callable(tools):
        raise AgentError(f"tools must be a sequence of callables or Tools, got {tools!r}; "
                         "wrap a single tool in a list")
    for t in tools:
        tool = Tool.from_function(t)
        if tool.name in box:
            raise AgentError(f"two tools are named {tool.name!r}; give one another name with "
                             "Tool.from_function(f, name=...)")
        box[tool.name] = tool
    return box


def _result_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


# Inside a tool call, the logger scoped to it: a subagent's `ask` run by the tool writes
# its turn there (nested under ``harpe.tools.call=ID``) without being told.
_TOOL_LOGGER: contextvars.ContextVar[JsonlLogger | None] = contextvars.ContextVar("harpe_lab_tool_logger",
                                                                                   default=None)


def current_logger() -> JsonlLogger | None:
    """The journal logger of the tool call running now (``None`` outside a logged tool
    call). `ask` uses it when given no logger, so subagent turns nest in the journal."""
    return _TOOL_LOGGER.get()
