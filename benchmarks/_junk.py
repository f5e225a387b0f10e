"""What a reader calls junk in a search result: a table of contents or an index page, a list
of links, or a fragment too short to answer anything. The benchmarks count these with rules of
their own (simple, written for counting, not the product's cleaning rules), so the product is
not judged by its own detectors."""

from __future__ import annotations

import re

#: A result of fewer words than this cannot answer a question on its own.
FRAGMENT_WORDS = 15

_WORD = re.compile(r"[^\W\d_][\w'-]*")
# "Why does backslash behave . . . . . . 39", "Introduction ........ 3", "3.2 Lists … 12"
_LEADER = re.compile(r"(?:\.\s?){4,}\s*[\divxlc]+\s*$|…\s*\d+\s*$", re.IGNORECASE)
# an index line: a term, then page numbers ("regular expressions, 12, 45-47")
_INDEX_LINE = re.compile(r"^\D.{0,80}?[\s,]\d{1,4}(?:\s*[,\u2013-]\s*\d{1,4})*\s*$")
_LINK = re.compile(r"\[[^\]\n]*\]\([^)\n]*\)|^\s*\[[^\]\n]+\]:\s*\S+.*$|https?://\S+", re.MULTILINE)
_BULLET = re.compile(r"^\s*(?:[*+-]|\d+[.)])\s+")


def words(text: str) -> int:
    """Words of a text (runs of letters, with inner digits, hyphens, apostrophes)."""
    return len(_WORD.findall(text))


def is_fragment(text: str) -> bool:
    return words(text) < FRAGMENT_WORDS


def is_toc(text: str) -> bool:
    """Most lines are dot-leader entries or index entries ending in page numbers."""
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) < 3:
        return bool(lines) and sum(bool(_LEADER.search(x)) for x in lines) >= 2
    leaders = sum(bool(_LEADER.search(x)) for x in lines)
    index = sum(bool(_INDEX_LINE.match(x.strip())) for x in lines)
    return leaders >= max(3, 0.3 * len(lines)) or (index >= 5 and index >= 0.6 * len(lines))


def is_link_list(text: str) -> bool:
    """Most of the text is links: markdown links, link-reference definitions, bare URLs."""
    stripped = text.strip()
    if not stripped:
        return False
    linked = sum(len(m.group()) for m in _LINK.finditer(stripped))
    if linked >= 0.5 * len(stripped):
        return True
    lines = [line for line in stripped.splitlines() if line.strip()]
    linky = 0
    for line in lines:
        rest = _LINK.sub(" ", _BULLET.sub("", line))
        if _LINK.search(line) and words(rest) < 3:
            linky += 1
    return len(lines) >= 3 and linky >= 0.5 * len(lines)


def kind(text: str) -> str | None:
    """``toc``, ``links``, ``fragment`` or None for a readable passage."""
    if is_toc(text):
        return "toc"
    if is_link_list(text):
        return "links"
    if is_fragment(text):
        return "fragment"
    return None
