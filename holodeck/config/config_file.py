"""One config file read as its author wrote it: YAML kept with its node tree, ``${VAR}``s
substituted, secrets told to the redaction, and the values validated against a model.

Every mistake becomes one ``ConfigError`` line: ``file:line: field.path: what is wrong (how
to fix)``. Line numbers come from the YAML node tree, so they point at the offending value.
agent.yaml, the config.yaml files and a test cases file are all read this way.
"""

from __future__ import annotations

import datetime
import difflib
import re
import typing
from pathlib import Path
from typing import Any

import pydantic
import yaml

from holodeck.bounded_yaml import DuplicateKeyError, YAMLLimitError, load_bounded
from holodeck.config.api_keys import UnsetKey, attach_unset_keys, defer_unset_keys
from holodeck.config.compat import original_keys
from holodeck.config.envsubst import VariableError, substitute
from holodeck.config.files import home_dir as home_dir  # also read from here by chat
from holodeck.config.files import read_utf8
from holodeck.config.yaml_lines import Loc, dotted, line_of
from holodeck.errors import ConfigError
from holodeck.redact import redact_url, remember_connection_string, remember_secret

#: Environment variables of an MCP server whose values are never printed.
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH", re.IGNORECASE)


def _read_yaml(path: Path, label: str) -> tuple[Any, yaml.Node | None]:
    """The file's value and node tree; a ``ConfigError`` line for text that is not UTF-8,
    not YAML, over a limit, or with a key given twice in a mapping."""
    text = read_utf8(path, label)
    try:
        return load_bounded(text, unique_keys=True)
    except DuplicateKeyError as exc:
        raise ConfigError(_twice(exc, label)) from None
    except YAMLLimitError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else 1
        raise ConfigError(f"{label}:{line}: {exc.problem}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else 1
        raise ConfigError(
            f"{label}:{line}: invalid YAML: {exc.problem or exc.context} (check the indentation "
            "and quoting)"
        ) from exc
    except yaml.reader.ReaderError as exc:
        raise ConfigError(_unreadable_character(exc, text, label)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{label}: invalid YAML: {exc}") from exc


def _twice(exc: DuplicateKeyError, label: str) -> str:
    """``file:line: path: given twice (lines 3 and 5)``; the columns when on one line."""
    first, repeat = exc.context_mark, exc.problem_mark
    assert first is not None and repeat is not None  # a DuplicateKeyError has both
    if first.line == repeat.line:
        where = f"line {repeat.line + 1}, columns {first.column + 1} and {repeat.column + 1}"
    else:
        where = f"lines {first.line + 1} and {repeat.line + 1}"
    return (
        f"{label}:{repeat.line + 1}: {dotted(exc.path)}: given twice ({where}); a key may "
        "appear only once in a mapping: delete one of them"
    )


def _unreadable_character(exc: yaml.reader.ReaderError, text: str, label: str) -> str:
    """A character YAML does not allow (a control character, U+FFFE), by line and column."""
    line = text.count("\n", 0, exc.position) + 1
    column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
    code = int(exc.character)
    kind = "control character" if code < 0x20 or 0x7F <= code <= 0x9F else "character"
    escape = f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"
    return (
        f"{label}:{line}: {kind} U+{code:04X} at column {column} is not allowed in YAML; "
        f"delete it (or write it as {escape} in a double-quoted string)"
    )


def _substitute_and_validate(
    model: type[pydantic.BaseModel],
    data: Any,
    env: dict[str, str],
    node: yaml.Node | None,
    label: str,
) -> tuple[Any, list[UnsetKey]]:
    """``data`` substituted and validated as ``model``, and the ``api_key``s left out because
    their variable is unset (each model raises its own when it is called)."""
    data, unset = defer_unset_keys(data, env, node, label)
    validated = _validate(model, _substitute(data, env, node, label), node, label)
    attach_unset_keys(validated, unset)
    return validated, unset


def _substitute(data: Any, env: dict[str, str], node: yaml.Node | None, label: str) -> Any:
    try:
        values = substitute(data, env)
    except VariableError as exc:
        line = line_of(node, exc.path)
        raise ConfigError(f"{label}:{line}: {dotted(exc.path)}: {exc.problem}") from None
    _remember_secrets(values)
    return values


def _remember_secrets(data: Any) -> None:
    """Tell the redaction every connection string and key, before any message can echo one.

    Done on the substituted values and before validation, whose errors quote what they got.
    """
    stack = [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                if key in ("connection_string", "endpoint", "url") and isinstance(value, str):
                    remember_connection_string(value)
                elif key == "api_key" and isinstance(value, str):
                    remember_secret(value)
                elif key in ("headers", "env") and isinstance(value, dict):
                    # An MCP server's: every header, and variables named like a secret.
                    for name, text in value.items():
                        if key == "headers" or _SECRET_NAME.search(str(name)):
                            remember_secret(str(text))
                else:
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(item)


def _validate(
    model: type[pydantic.BaseModel], data: Any, node: yaml.Node | None, label: str
) -> Any:
    """Validate ``data``; a text field given an unquoted YAML date, number or boolean
    (``api_version: 2024-06-01``, ``1.10``) keeps the text as written in the file."""
    while True:
        try:
            return model.model_validate(data)
        except pydantic.ValidationError as exc:
            errors = exc.errors(include_url=False)
            in_file = [_walk(model, tuple(e["loc"]))[0] for e in errors if _texty(e)]
            if not any(_as_written(data, node, loc) for loc in in_file):
                err = errors[0]
                loc: Loc = tuple(err["loc"])
                raise ConfigError(_describe_error(model, err, loc, node, label)) from None


def _texty(err: Any) -> bool:
    """A string was expected and YAML made something else of a plain scalar."""
    return err["type"] == "string_type" and isinstance(
        err.get("input"), int | float | bool | datetime.date
    )


def _as_written(data: Any, node: yaml.Node | None, loc: Loc) -> bool:
    """Put the text of the plain scalar at ``loc`` in place of its value; False if none."""
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            return False
    if not (isinstance(node, yaml.ScalarNode) and node.style is None):
        return False
    parent: Any = data
    try:
        for part in loc[:-1]:
            parent = parent[part]
        if isinstance(parent[loc[-1]], str):
            return False
        parent[loc[-1]] = node.value
    except (KeyError, IndexError, TypeError):
        return False
    return True


def _describe_error(
    model: type[pydantic.BaseModel], err: Any, loc: Loc, node: yaml.Node | None, label: str
) -> str:
    """One line for the first validation error: file, line, field path, what would be valid.

    ``loc`` is pydantic's, which names the ``type`` of a tool or metric between its index and
    its keys (``tools.0.mcp.url``); the line and the path shown are the file's.
    """
    kind = err["type"]
    in_file, _ = _walk(model, loc)
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        in_file = (*in_file, "type")
    line = line_of(node, in_file)
    where = dotted(in_file) or "(top level)"
    if kind == "extra_forbidden":
        key = str(loc[-1])
        valid = _fields_at(model, loc[:-1])
        near = difflib.get_close_matches(key, valid, n=1, cutoff=0.6)
        hint = f"did you mean {near[0]!r}? " if near else ""
        theirs = difflib.get_close_matches(key, original_keys(in_file[:-1]), n=1, cutoff=0.8)
        if not near and theirs:
            hint = f"did you mean {theirs[0]!r} (a key of the original HoloDeck, ignored here)? "
        return f"{label}:{line}: {where}: unknown key; {hint}valid keys: {', '.join(valid)}"
    if kind == "missing":
        return f"{label}:{line}: {where}: is required"
    if kind == "union_tag_not_found":
        return f"{label}:{line}: {where}: is required ({err['ctx']['discriminator']} ...)"
    if kind == "union_tag_invalid":
        ctx = err["ctx"]
        return redact_url(
            f"{label}:{line}: {where}: {ctx['tag']!r} is not a type holodeck runs; "
            f"valid: {ctx['expected_tags']}"
        )
    msg = str(err["msg"]).removeprefix("Value error, ")
    got = err.get("input")
    if kind == "finite_number" and isinstance(got, float):  # .inf, -.inf or .nan
        written = ".nan" if got != got else ("-.inf" if got < 0 else ".inf")
        fix = "for no limit, write a large one"
        return f"{label}:{line}: {where}: a finite number, not {written} ({fix})"
    plain = isinstance(got, dict | list) or got is None or kind == "bool_for_number"
    shown = "" if plain else f" (got {got!r})"
    if _texty(err):
        shown = f" (got {got!r}; put the value in quotes to keep it as text)"
    return redact_url(f"{label}:{line}: {where}: {msg}{shown}")


def _fields_at(model: type[pydantic.BaseModel], loc: Loc) -> list[str]:
    """The valid keys of the model found by following ``loc`` through nested models."""
    _, current = _walk(model, loc)
    if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
        return list(current.model_fields)
    return []


def _walk(model: type[pydantic.BaseModel], loc: Loc) -> tuple[Loc, Any]:
    """``loc`` without the tags pydantic adds after a discriminated union (``metrics[0]
    .geval.name`` is ``metrics[0].name`` in the file, ``tools[0].mcp.url`` is
    ``tools[0].url``), and the model it ends at."""
    current: Any = model
    kept: list[str | int] = []
    for part in loc:
        if isinstance(part, int):
            kept.append(part)
            continue
        members = [m for m in _models_in(current) if part in _tags_of(m)]
        if len(_models_in(current)) > 1 and members:
            current = members[0]  # a union's tag: not a key of the file
            continue
        kept.append(part)
        if not (isinstance(current, type) and issubclass(current, pydantic.BaseModel)):
            current = None
            continue
        info = current.model_fields.get(part)
        current = None if info is None else _field_model(info.annotation)
    return tuple(kept), current


def _field_model(annotation: Any) -> Any:
    """The model a field holds (``X | None``, ``list[X]``), or its union of models."""
    models = _models_in(annotation)
    if len(models) == 1:
        return models[0]
    return annotation if models else None


def _models_in(annotation: Any) -> list[type[pydantic.BaseModel]]:
    """Every pydantic model inside ``X | None``, ``list[X]``, ``Annotated[...]`` or a union."""
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return [annotation]
    found: list[type[pydantic.BaseModel]] = []
    for arg in getattr(annotation, "__args__", ()) or ():
        found += [m for m in _models_in(arg) if m not in found]
    origin = getattr(annotation, "__origin__", None)
    if origin is not None and not found and origin is not annotation:
        found = _models_in(origin)
    return found


def _tags_of(model: type[pydantic.BaseModel]) -> tuple[Any, ...]:
    """The ``type`` values a member of a discriminated union is chosen by: its default, or
    the values of its ``Literal`` (a tool's ``type`` has no default)."""
    info = model.model_fields.get("type")
    if info is None:
        return ()
    literal = typing.get_args(info.annotation)
    return literal or (info.default,)
