"""``${VAR}`` and ``${VAR:-default}`` in string values, from the environment and ``.env``.

Substitution happens after YAML parsing, on string values only, so a value can never change
the structure of the file. The real environment wins over ``.env``. ``$${`` is a literal
``${`` (the Compose convention): ``$${HOME}`` stays the text ``${HOME}``.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from holodeck.config.files import file_label, read_utf8
from holodeck.errors import ConfigError

_VAR = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class MissingVariable(Exception):
    """A ``${VAR}`` with no value and no default; carries the variable and the value's path."""

    def __init__(self, name: str, path: tuple[str | int, ...]) -> None:
        super().__init__(name)
        self.name = name
        self.path = path


def environment_for(project_root: Path) -> dict[str, str]:
    """The variables visible to config files: ``<project>/.env`` overlaid by the real env.

    A ``.env`` that is not UTF-8, or has a line python-dotenv cannot read (which it would
    skip with a warning naming neither the file nor the fix), is a ``ConfigError``.
    """
    env: dict[str, str] = {}
    dotenv = project_root / ".env"
    if dotenv.is_file():
        env.update(_read_dotenv(dotenv))
    env.update(os.environ)
    return env


def _read_dotenv(path: Path) -> dict[str, str]:
    """``NAME=value`` pairs of a ``.env``; a name alone sets nothing, as python-dotenv reads it."""
    from dotenv import dotenv_values  # only for a project that has one
    from dotenv.parser import parse_stream

    name = file_label(path)
    text = read_utf8(path, name).removeprefix("\ufeff")
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            written = binding.original.string  # from the blank lines before the statement
            blank = written[: len(written) - len(written.lstrip())]
            line = binding.original.line + blank.count("\n")
            raise ConfigError(
                f"{name}:{line}: not a NAME=value line; write NAME=value (in quotes if the "
                'value has spaces or #: NAME="a b"), start a comment with #, or delete the line'
            )
    values = dotenv_values(stream=io.StringIO(text))
    return {k: v for k, v in values.items() if v is not None}


def substitute(data: Any, env: Mapping[str, str], path: tuple[str | int, ...] = ()) -> Any:
    """A copy of ``data`` with every ``${...}`` in its strings replaced.

    Raises ``MissingVariable`` for the first variable that has neither a value nor a default.
    """
    if isinstance(data, str):
        return _VAR.sub(_replacer(env, path), data)
    if isinstance(data, dict):
        return {k: substitute(v, env, (*path, str(k))) for k, v in data.items()}
    if isinstance(data, list):
        return [substitute(v, env, (*path, i)) for i, v in enumerate(data)]
    return data


def _replacer(
    env: Mapping[str, str], path: tuple[str | int, ...]
) -> Callable[[re.Match[str]], str]:
    def repl(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name is None:  # $${: a literal ${
            return "${"
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise MissingVariable(name, path)

    return repl


def literal(text: str) -> str:
    """``text`` written so that substitution gives it back unchanged (``${`` as ``$${``)."""
    return text.replace("${", "$${")
