"""What a tool's source may hold: the file types holodeck reads (the tool contract's five
by default, the rest opt-in per tool) and gitignore-style exclude patterns, compiled here so
loading a configuration refuses a bad one and discovery uses the same rule."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pathspec

#: The tool contract's five file types (docs/contract.md), ingested when a tool sets no
#: ``file_types``.
DEFAULT_FILE_TYPES = (".txt", ".md", ".pdf", ".csv", ".json")
#: Every file type holodeck can convert; those beyond the default are opt-in per tool.
ALL_FILE_TYPES = (*DEFAULT_FILE_TYPES, ".docx", ".pptx", ".xlsx", ".html", ".htm", ".adoc")


def ignore_spec(patterns: list[str]) -> pathspec.PathSpec | None:
    """Compile gitignore-style patterns (None when there are none); ValueError if invalid,
    saying why (pathspec lets the regex error of a range like ``[z-a]`` through)."""
    lines = [p for p in patterns if p.strip() and not p.lstrip().startswith("#")]
    if not lines:
        return None
    import pathspec  # only for a tool with patterns: a search checks its files first

    try:
        return pathspec.GitIgnoreSpec.from_lines(lines)
    except re.error as exc:
        raise ValueError(exc.msg) from None
    except ValueError:  # pathspec's own message only repeats the pattern
        raise ValueError("") from None
