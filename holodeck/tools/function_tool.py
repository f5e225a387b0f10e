"""Function tools: a Python function of a file next to agent.yaml, called in-process.

The model sees the function's JSON Schema: from ``parameters:`` when agent.yaml gives it,
else from the signature, its type hints and its docstring (Google, reST or numpy style). The
model's arguments are validated against that schema first (pydantic); the function runs off
the loop's thread (``holodeck.tools.worker``: a sync one in a thread of its own, an async one
on the function tools' event loop) for at most ``request_timeout`` seconds. Whatever the
function returns is the tool's result (text as is, anything else as JSON); whatever it
raises (``SystemExit`` and ``KeyboardInterrupt`` too), an invalid argument or running past the
limit is a ``ToolError`` the model reads, never a crash or a frozen chat. A file or function
that cannot be loaded is a ``ConfigError`` (exit 2) naming the file and the line.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
import json
import logging
import sys
import traceback
import typing
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

import docstring_parser
import pydantic

from holodeck.config.loader import Project
from holodeck.config.tool_configs import FunctionParameter, FunctionToolConfig
from holodeck.errors import ConfigError
from holodeck.tools import worker
from holodeck.tools.callables import CallableTool, ToolError, bounded

log = logging.getLogger("holodeck.tools")

#: Python types of the ``type:`` words of ``parameters:``.
_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "float": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
_FORBID = pydantic.ConfigDict(extra="forbid")  # an argument the schema lacks is an error


def load_function_tools(project: Project) -> list[CallableTool]:
    """Every ``type: function`` tool of ``project``, imported and ready to call."""
    return [load_function_tool(c, project) for c in project.agent.tools_of(FunctionToolConfig)]


def load_function_tool(config: FunctionToolConfig, project: Project) -> CallableTool:
    """Import the file, find the function and build its schema; ConfigError when it cannot."""
    path = (project.root / config.file).resolve()
    module = _import(path, config.file, project.where(config.name, "file"))
    function = getattr(module, config.function, None)
    if not callable(function):
        found = [n for n, v in vars(module).items() if inspect.isfunction(v) and n[0] != "_"]
        raise ConfigError(
            f"{project.where(config.name, 'function')}: no function {config.function!r} in "
            f"{config.file} (functions there: {', '.join(found) or 'none'})"
        )
    doc = docstring_parser.parse(inspect.getdoc(function) or "")
    arguments = _arguments_model(config, function, doc, project.where(config.name))
    description = config.description or _docstring_summary(doc) or f"Calls {config.function}"
    return CallableTool(
        name=config.name,
        description=description,
        parameters=_schema(arguments),
        kind="function",
        run=functools.partial(_call, config.name, function, arguments, config.request_timeout),
    )


def _import(path: Path, shown: str, site: str) -> ModuleType:
    """The file as a module of its own; its folder is importable, as for a script."""
    name = "holodeck_tool_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"{site}: {shown} is not a Python file holodeck can import")
    module = importlib.util.module_from_spec(spec)
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # its own helpers: ``from helpers import x``
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:
        raise ConfigError(f"{shown}:{exc.lineno or 1}: {exc.msg} (the file of {site})") from None
    except Exception as exc:
        line = _line_in(exc, path)
        raise ConfigError(
            f"{shown}:{line}: importing it raised {type(exc).__name__}: {exc} (the file of {site})"
        ) from exc
    sys.modules[name] = module
    return module


def _line_in(exc: BaseException, path: Path) -> int:
    """The last line of ``path`` the exception's traceback went through (1 if none)."""
    lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == path]
    return (lines[-1] or 1) if lines else 1


def _docstring_summary(doc: docstring_parser.Docstring) -> str:
    return " ".join(part for part in (doc.short_description, doc.long_description) if part)


def _arguments_model(
    config: FunctionToolConfig,
    function: Callable[..., Any],
    doc: docstring_parser.Docstring,
    site: str,
) -> type[pydantic.BaseModel]:
    """A pydantic model of the arguments: it validates a call and gives the JSON Schema."""
    signature = inspect.signature(function)
    described = {p.arg_name: p.description for p in doc.params}
    if config.parameters is not None:
        fields = {
            name: _declared_field(spec, signature.parameters.get(name), described.get(name))
            for name, spec in config.parameters.items()
        }
    else:
        try:
            hints = typing.get_type_hints(function)
        except Exception:  # a hint naming something the file cannot resolve
            hints = {}
        fields = {
            name: _signature_field(param, hints.get(name, Any), described.get(name))
            for name, param in signature.parameters.items()
            if param.kind not in (param.VAR_POSITIONAL, param.VAR_KEYWORD)
        }
    try:
        return pydantic.create_model(  # type: ignore[call-overload]
            f"{config.name}_arguments", __config__=_FORBID, **fields
        )
    except (pydantic.PydanticSchemaGenerationError, TypeError) as exc:
        raise ConfigError(
            f"{site}: the arguments of {config.function} cannot be described to the model "
            f"({exc}); give them under parameters:"
        ) from None


def _signature_field(
    param: inspect.Parameter, hint: Any, description: str | None
) -> tuple[Any, Any]:
    default = ... if param.default is param.empty else param.default
    return (hint, pydantic.Field(default, description=description))


def _declared_field(
    spec: FunctionParameter, param: inspect.Parameter | None, description: str | None
) -> tuple[Any, Any]:
    """A ``parameters:`` entry: its type (or enum), default, description and other keywords."""
    kind: Any = _TYPES.get(spec.type, Any) if spec.type else Any
    if spec.enum:
        kind = Literal[tuple(spec.enum)]
    if "default" in spec.model_fields_set:
        default = spec.default
    elif param is not None and param.default is not param.empty:
        default = param.default
    else:
        default = ...
    extra = dict(spec.model_extra or {})
    return (
        kind,
        pydantic.Field(
            default,
            description=spec.description or description,
            json_schema_extra=extra or None,
        ),
    )


def _schema(model: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The model's JSON Schema without pydantic's ``title`` keys (noise to the LLM)."""
    schema = model.model_json_schema()
    _drop_titles(schema)
    schema.setdefault("properties", {})
    return schema


def _drop_titles(node: Any) -> None:
    if isinstance(node, dict):
        node.pop("title", None)
        for key, value in node.items():
            if key != "properties":
                _drop_titles(value)
            else:
                for prop in value.values():
                    _drop_titles(prop)
    elif isinstance(node, list):
        for item in node:
            _drop_titles(item)


async def _call(
    name: str,
    function: Callable[..., Any],
    arguments_model: type[pydantic.BaseModel],
    timeout: float,
    arguments: dict[str, Any],
) -> str:
    """Validate, call, and turn the result (or what went wrong) into the tool's text."""
    try:
        parsed = arguments_model.model_validate(arguments)
    except pydantic.ValidationError as exc:
        raise ToolError(f"invalid arguments for {name}: {_problems(exc)}") from None
    values = {key: getattr(parsed, key) for key in type(parsed).model_fields}
    try:
        result = await worker.call(name, function, values, timeout)
    except worker.TimedOut:
        log.debug("function tool %s ran past %g s; left running in its thread", name, timeout)
        raise ToolError(f"{name} did not return within {timeout:g} s (request_timeout)") from None
    except worker.Ended as exc:
        log.debug("function tool %s ended with %r", name, exc.cause, exc_info=exc.cause)
        raise ToolError(f"{name} ended with {exc.cause!r}") from exc
    except Exception as exc:
        log.debug("function tool %s raised", name, exc_info=True)
        raise ToolError(f"{name} raised {type(exc).__name__}: {exc}") from exc
    return bounded(_as_text(result))


def _problems(exc: pydantic.ValidationError) -> str:
    """Every invalid argument on one line: ``order_id: Field required; limit: ...``."""
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        parts.append(f"{where}: {err['msg']}")
    return "; ".join(parts)


def _as_text(result: Any) -> str:
    """What the model reads: text as is, anything else as JSON (str() for the rest)."""
    if isinstance(result, str):
        return result
    if isinstance(result, pydantic.BaseModel):
        return result.model_dump_json()
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)
