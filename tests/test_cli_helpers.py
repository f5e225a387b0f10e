"""The in-process runner of tests/cli_helpers.py starts each command as a new process would:
nothing one test's command remembered reaches the next test's.

A new process starts with every module-level container of the package as its import made
it. The runner empties the ones holodeck fills while it runs (PER_PROCESS_STATE); this finds
every module-level container that starts empty, so one added later must be named there (or
here, when it is filled once at import and only read afterwards). That emptying matters is
shown by tests/ingest/test_ignore_and_skips.py: a quiet search, then an ingest that must warn.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

from cli_helpers import PER_PROCESS_STATE

PACKAGE = Path(__file__).resolve().parent.parent / "holodeck"

#: Empty at first, but filled at import (a registry of migrations) or a cache of pure
#: values keyed by what they depend on (a converter per file type): sharing changes nothing.
FILLED_AT_IMPORT_OR_PURE = {
    "holodeck.vectorstore.sqlite.schema": {"MIGRATIONS"},
    "holodeck.ingest.convert": {"_markitdown"},
}

EMPTY = ("set", "dict", "list", "defaultdict", "OrderedDict")


def empty_module_level_containers() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
                value = node.value
                empty_literal = isinstance(value, ast.Set | ast.Dict | ast.List) and not (
                    getattr(value, "elts", None) or getattr(value, "keys", None)
                )
                empty_call = (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name)
                    and value.func.id in EMPTY
                    and not value.args
                )
                if empty_literal or empty_call:
                    target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                    found.setdefault(module, set()).add(ast.unparse(target))
    return found


def test_every_container_holodeck_fills_while_running_is_emptied_between_commands() -> None:
    named = {module: set(names) for module, names in PER_PROCESS_STATE.items()}
    for module, names in FILLED_AT_IMPORT_OR_PURE.items():
        named.setdefault(module, set()).update(names)
    assert empty_module_level_containers() == named
    for module, names in PER_PROCESS_STATE.items():
        for name in names:
            assert hasattr(importlib.import_module(module), name), f"{module}.{name}"
