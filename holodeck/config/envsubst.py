"""``${VAR}`` and ``${VAR:-default}`` in string values, from the environment and ``.env``.

Substitution happens after YAML parsing, on string values only, so a value can never change
the structure of the file. The real environment wins over ``.env``. ``$${`` is a literal
``${`` (the Compose convention): ``$${HOME}`` stays the text ``${HOME}``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

_VAR = re.compile(r"\$\$\{|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class MissingVariable(Exception):
    """A ``${VAR}`` with no value and no default; carries the variable and the value's path."""

    def __init__(self, name: str, path: tuple[str | int, ...]) -> None:
        super().__init__(name)
        self.name = name
        self.path = path


def environment_for(project_root: Path) -> dict[str, str]:
    """The variables visible to config files: ``<project>/.env`` overlaid by the real env."""
    env: dict[str, str] = {}
    dotenv = project_root / ".env"
    if dotenv.is_file():
        from dotenv import dotenv_values  # only for a project that has one

        env.update({k: v for k, v in dotenv_values(dotenv).items() if v is not None})
    env.update(os.environ)
    return env


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
