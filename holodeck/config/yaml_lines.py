"""Where a value sits in a YAML file: its line, and its path written as ``tools[0].name``.

Every config error and warning names both, so a person finds the value at once.
"""

from __future__ import annotations

import yaml

Loc = tuple[str | int, ...]


def line_of(node: yaml.Node | None, loc: Loc) -> int:
    """1-based line of the deepest node along ``loc`` (the key itself for a missing value)."""
    line = node.start_mark.line + 1 if node is not None else 1
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if key.value == part:
                    line = key.start_mark.line + 1
                    node = value
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(node.value):
                return line
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def dotted(loc: Loc) -> str:
    """``loc`` as a person writes it: ``tools[0].name``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out
