"""``response_format:``: the JSON schema the model's answer must fit (the original HoloDeck's
structured output), written inline or as the path of a JSON file next to agent.yaml.

Loading checks it is a JSON schema (``jsonschema``'s meta-schema check), so a typo in it is a
config error before any request, not a model that is asked for an impossible shape.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from holodeck.config.yaml_lines import line_of
from holodeck.errors import ConfigError


def load_response_schema(
    value: dict[str, Any] | str | None, root: Path, node: yaml.Node | None, label: str
) -> dict[str, Any] | None:
    """The schema ``response_format`` gives (None without one), or a ConfigError line."""
    if value is None:
        return None
    where = f"{label}:{line_of(node, ('response_format',))}: response_format"
    if isinstance(value, str):
        path = root / value
        try:
            schema = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConfigError(
                f"{where}: {value} not found (a JSON schema file, relative to {label})"
            ) from None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ConfigError(f"{where}: cannot read {value} as JSON: {exc}") from None
        if not isinstance(schema, dict):
            raise ConfigError(f"{where}: {value} must hold a JSON schema object")
    else:
        schema = value
    import jsonschema  # loaded only for agents with structured output

    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as exc:
        at = "/".join(str(p) for p in exc.absolute_path) or "the top level"
        raise ConfigError(
            f"{where}: not a valid JSON schema at {at}: {exc.message} "
            "(see https://json-schema.org/understanding-json-schema)"
        ) from None
    return schema
