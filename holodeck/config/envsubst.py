"""``${VAR}`` and its shell forms in string values, from the environment and ``.env``.

Substitution happens after YAML parsing, on string values only, so a value can never change
the structure of the file. The real environment wins over ``.env``. The forms, as the shell
reads them:

- ``${NAME}``: the value (empty when set to empty); an error when unset.
- ``${NAME:-default}``: the value, or ``default`` when unset or empty.
- ``${NAME:?message}``: the value; an error with ``message`` when unset or empty.
- ``$${``: a literal ``${`` (the Compose convention): ``$${HOME}`` stays the text ``${HOME}``.

Any other ``${...}`` (``${}``, ``${N:=x}``, a variable inside a default) is refused rather
than kept as text: it would end up in a name, a path or a tenant as written.
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

#: ``$${`` (a literal), or ``${`` with what follows up to the first ``}`` (or the end).
_TOKEN = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)(?P<close>\}?)")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
_FORM = re.compile(rf"(?P<name>{_NAME})(?:(?P<op>:-|:\?)(?P<arg>.*))?", re.DOTALL)
SUPPORTED = "use ${NAME}, ${NAME:-default} or ${NAME:?message} (and $${ for a literal ${)"


class VariableError(Exception):
    """A ``${...}`` that cannot be substituted: ``problem`` says why and how to fix it,
    ``path`` is the value's place in the file."""

    def __init__(self, problem: str, path: tuple[str | int, ...]) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path


def environment_for(project_root: Path) -> dict[str, str]:
    """The variables visible to config files: ``<project>/.env`` overlaid by the real env.

    A ``.env`` that is not UTF-8, or has a line python-dotenv cannot read (which it would
    skip with a warning naming neither the file nor the fix), is a ``ConfigError``.
    """
    env: dict[str, str] = {}
    dotenv = project_root / ".env"
    if dotenv.is_file():
        env.update(read_dotenv(dotenv))
    env.update(os.environ)
    return env


def read_dotenv(path: Path) -> dict[str, str]:
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

    Raises ``VariableError`` for the first one that is unset (without a default), required
    and unset or empty, or not a supported form.
    """
    if isinstance(data, str):
        return _TOKEN.sub(_replacer(env, path), data)
    if isinstance(data, dict):
        return {k: substitute(v, env, (*path, str(k))) for k, v in data.items()}
    if isinstance(data, list):
        return [substitute(v, env, (*path, i)) for i, v in enumerate(data)]
    return data


def _replacer(
    env: Mapping[str, str], path: tuple[str | int, ...]
) -> Callable[[re.Match[str]], str]:
    def repl(match: re.Match[str]) -> str:
        body = match.group("body")
        if body is None:  # $${: a literal ${
            return "${"
        form = _FORM.fullmatch(body)
        if not match.group("close") or "${" in body or form is None:
            raise VariableError(_unsupported(match), path)
        name, op, arg = form.group("name", "op", "arg")
        value = env.get(name)
        if op is None:
            if value is None:
                raise VariableError(
                    f"environment variable {name} is not set (export it, add it to .env next "
                    f"to the agent file, or write ${{{name}:-default}})",
                    path,
                )
            return value
        if value:
            return value
        if op == ":-":
            return str(arg)
        said = f": {arg}" if arg else ""
        raise VariableError(
            f"environment variable {name} is not set or empty{said} (export it, or add it "
            "to .env next to the agent file)",
            path,
        )

    return repl


def _unsupported(match: re.Match[str]) -> str:
    """Why the ``${...}`` at ``match`` is refused, quoting it as written, and what to write."""
    text, body = match.string, match.group("body")
    shown = match.group(0)
    head = re.match(_NAME, body)
    if not match.group("close"):
        why = "no closing }"
    elif "${" in body:
        # Quote up to the } that closes the outer one: ${N:-${M}} rather than ${N:-${M}.
        depth, end = 0, match.end()
        for i in range(match.start(), len(text)):
            if text.startswith("${", i):
                depth += 1
            elif text[i] == "}":
                depth -= 1
                if depth == 0:
                    end = i + 1
                    break
        shown = text[match.start() : max(end, match.end())]
        why = "a variable inside another"
    elif not body:
        why = "no variable name"
    elif head is None or not body[head.end() :].strip():  # ${1N}, ${ N }, ${N }
        why = "not a variable name"
    else:
        why = "not a form holodeck substitutes"
    return f"{shown}: {why}; {SUPPORTED}"


def literal(text: str) -> str:
    """``text`` written so that substitution gives it back unchanged (``${`` as ``$${``)."""
    return text.replace("${", "$${")
