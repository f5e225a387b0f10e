"""``api_key`` in config files: only ever a ``${VAR}``, and an unset one waits for its model.

A key lives in the environment, never in a file (docs/contract.md). An unset variable stops
only the command that calls that model (chat, test, remote embeddings): the local index, its
search and its MCP server need no key, so loading leaves the key out, gives the model the
error line to raise when it is called, and has a warning for the commands that never call it.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

import yaml

from holodeck.config.envsubst import VariableError, substitute
from holodeck.config.yaml_lines import Loc, dotted, line_of
from holodeck.errors import ConfigError

#: The only forms ``api_key`` may take: ``${VAR}``, or ``${VAR:?message}`` (no default).
ONE_VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::\?(?P<said>[^}$]*))?\}")


@dataclass(frozen=True)
class UnsetKey:
    """An ``api_key`` whose variable is not set: where it is, and what to say about it."""

    loc: Loc
    where: str  # agent.yaml:12: model.api_key
    why: str  # OPENAI_API_KEY is not set
    fix: str

    @property
    def error(self) -> str:
        """The line a command that calls the model stops with."""
        return f"{self.where}: {self.why} ({self.fix})"

    @property
    def warning(self) -> str:
        """The line a command that never calls it says once."""
        return f"{self.where}: {self.why}; {_users(self.loc)} will need it ({self.fix})"


def model_sections(data: Any, loc: Loc = ()) -> list[tuple[Loc, dict[str, Any]]]:
    """Every ``model:`` mapping of a file (the agent's, the evaluation judges'), and
    ``embedding_provider:``."""
    found: list[tuple[Loc, dict[str, Any]]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key in ("model", "embedding_provider") and isinstance(value, dict):
                found.append(((*loc, key), value))
            elif isinstance(value, dict | list):
                found += model_sections(value, (*loc, key))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            found += model_sections(item, (*loc, i))
    return found


def refuse_literal_api_key(data: dict[str, Any], node: yaml.Node | None, label: str) -> None:
    """The value must be exactly one ``${VAR}`` (or ``${VAR:?message}``, which only requires
    it set): a literal, a literal around a variable (``sk-...${NOPE:-}``) or a default
    (``${KEY:-sk-...}``) would all keep a key in the file.

    The value is never echoed: it may be the key.
    """
    for loc, model in model_sections(data):
        key = model.get("api_key")
        if key is None or (isinstance(key, str) and ONE_VARIABLE.fullmatch(key)):
            continue
        line = line_of(node, (*loc, "api_key"))
        raise ConfigError(
            f"{label}:{line}: {dotted((*loc, 'api_key'))}: must be exactly one ${{VAR}} "
            "reference without a default (a literal key or a default would keep the key in "
            "the file); write api_key: ${OPENAI_API_KEY} (or another variable) and set it in "
            "the environment or .env"
        )


def defer_unset_keys(
    data: Any, env: dict[str, str], node: yaml.Node | None, label: str
) -> tuple[Any, list[UnsetKey]]:
    """``data`` without the ``api_key``s whose variable is unset, and those keys."""
    unset: list[UnsetKey] = []
    for loc, model in model_sections(data):
        key = model.get("api_key")
        if not isinstance(key, str):
            continue
        try:
            substitute(key, env)
        except VariableError:
            match = ONE_VARIABLE.fullmatch(key)
            if match is None:
                continue  # not a key reference: substitution says what is wrong with it
            where = f"{label}:{line_of(node, (*loc, 'api_key'))}: {dotted((*loc, 'api_key'))}"
            name, said = match.group("name", "said")
            why = f"{name} is not set or empty: {said}" if said else f"{name} is not set"
            fix = f"export it, or add {name}=... to .env next to {label}"
            unset.append(UnsetKey(loc, where, why, fix))
    if not unset:
        return data, unset
    data = copy.deepcopy(data)
    for item in unset:
        section = data
        for part in item.loc:
            section = section[part]
        section["api_key"] = None
    return data, unset


def attach_unset_keys(validated: Any, unset: list[UnsetKey]) -> None:
    """Give each validated model whose key was left out the line to raise when it is called."""
    for item in unset:
        target = validated
        for part in item.loc:
            target = target[part] if isinstance(part, int) else getattr(target, part)
        target.key_unset(item.error)


def _users(loc: Loc) -> str:
    """The commands that call the model at ``loc``."""
    if loc == ("model",):
        return "holodeck chat and holodeck test"
    if loc == ("embedding_provider",):
        return "a knowledge base with a remote embedding model"
    return "holodeck test's judge"
