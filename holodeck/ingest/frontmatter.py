"""YAML front matter: metadata (tags, language) a writer puts at the top of a markdown file.

The metadata is split off so it is stored as filters on every chunk of the file instead of
being embedded as text; a broken block is kept as text (with a warning) rather than lost.
It is parsed with limits (``bounded_yaml``): a few hundred bytes of aliases must not become
billions of tags.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import yaml

from holodeck.bounded_yaml import YAMLLimitError, load_bounded

logger = logging.getLogger("holodeck.ingest")

#: Values aliases may add to front matter: metadata needs few, if any.
MAX_ALIAS_VALUES = 1_000

# '---' alone on the first line, the YAML, then '---' (or '...') alone on a line.
_FRONT_MATTER = re.compile(
    r"\A\ufeff?---[ \t]*\r?\n(?P<yaml>.*?)(?:^|\r?\n)(?:---|\.\.\.)[ \t]*(?:\r?\n|\Z)",
    re.DOTALL | re.MULTILINE,
)


def split_front_matter(markdown: str, *, name: str = "") -> tuple[dict[str, Any], str]:
    """Return (metadata, body without the front matter); ({}, text) when there is none.

    Bad YAML, or YAML that is not a mapping, logs a WARNING (naming ``name``, the file, when
    given) and leaves the text untouched, so the document is still ingested and the writer
    learns what to fix.
    """
    where = f" in {name}" if name else ""
    match = _FRONT_MATTER.match(markdown)
    if match is None:
        return {}, markdown
    try:
        meta, _ = load_bounded(match.group("yaml"), MAX_ALIAS_VALUES)
    except YAMLLimitError as exc:
        line = exc.problem_mark.line + 2 if exc.problem_mark else 2
        logger.warning("Ignored front matter%s (line %d): %s", where, line, exc.problem)
        return {}, markdown
    except yaml.YAMLError as exc:
        logger.warning("Ignored front matter%s: not valid YAML (%s)", where, _describe(exc))
        return {}, markdown
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        logger.warning("Ignored front matter%s: not a YAML mapping of keys to values", where)
        return {}, markdown
    return meta, markdown[match.end() :]


def _describe(exc: yaml.YAMLError) -> str:
    """'<problem> at line N' of the file (the YAML starts on line 2), for the writer to fix."""
    problem = getattr(exc, "problem", None) or type(exc).__name__
    mark = getattr(exc, "problem_mark", None)
    return f"{problem} at line {mark.line + 2}" if mark is not None else str(problem)


def tags_of(meta: dict[str, Any]) -> list[str]:
    """Tags as a list of non-empty strings, from ``tags: [a, b]`` or ``tags: "a, b"``."""
    raw = meta.get("tags")
    if raw is None:
        return []
    items = raw.split(",") if isinstance(raw, str) else raw if isinstance(raw, list) else [raw]
    tags = [str(item).strip() for item in items if item is not None]
    return [tag for tag in tags if tag]


def language_of(meta: dict[str, Any]) -> str | None:
    """The document's language from ``language:`` or its short form ``lang:``."""
    value = meta.get("language", meta.get("lang"))
    if value is None:
        return None
    text = str(value).strip()
    return text or None
