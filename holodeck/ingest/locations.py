"""Where in its file a chunk came from, in the words a reader uses: ``page 3``, ``lines 10-42``.

A converter hands the chunker plain text plus ``Anchors`` (the character offset where each
page, slide, sheet... starts); the chunker reports each chunk's character span; this module
turns the span into the location stored with the chunk. Lines and rows are not listed one
by one (a big log has millions): they are counted as newlines, walking the spans in order.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable
from dataclasses import dataclass

from holodeck.vectorstore.records import range_name

#: Units counted as newlines of the converted text rather than listed as anchors.
_LINE_UNITS = ("line", "row")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+\S")
_ATX = re.compile(r"^ {0,3}#{1,6}[ \t]")


@dataclass(frozen=True)
class Anchors:
    """How to name a place in one converted text.

    ``unit`` is what a reader counts (``page``, ``slide``, ``sheet``, ``line``, ``row``).
    For pages, slides and sheets, ``starts[i]`` is the character offset where the unit
    named ``labels[i]`` begins (sorted). For lines and rows, the text's own lines are the
    units: text line ``n`` (from 1) is named ``n + shift``, kept within ``1..last``, so a
    fenced JSON block (a fence line before and after) or a CSV table (one separator line)
    still names the file's own lines.
    """

    unit: str
    starts: tuple[int, ...] = ()
    labels: tuple[str, ...] = ()
    shift: int = 0
    last: int | None = None

    @classmethod
    def lines(cls, unit: str = "line", shift: int = 0, last: int | None = None) -> Anchors:
        """Every line of the text is one unit (``line`` or ``row``)."""
        return cls(unit=unit, shift=shift, last=last)

    @classmethod
    def at(cls, unit: str, marks: Iterable[tuple[int, str]]) -> Anchors:
        """Units starting at the given ``(offset, label)`` marks, in text order."""
        pairs = list(marks)
        return cls(unit=unit, starts=tuple(p[0] for p in pairs), labels=tuple(p[1] for p in pairs))

    @classmethod
    def paragraphs(cls, markdown: str) -> Anchors:
        """The paragraphs of a converted document (.docx, HTML), counted from 1 as a reader
        counts them down the page: each heading, paragraph, list item, table and code
        block is one."""
        return cls.at("paragraph", ((o, str(n)) for n, o in enumerate(_blocks(markdown), 1)))


def _blocks(markdown: str) -> list[int]:
    """Where each paragraph of Markdown starts (see ``Anchors.paragraphs``)."""
    starts: list[int] = []
    fence = ""
    inside = False  # within a paragraph, table or list item already counted
    offset = 0
    for line in markdown.splitlines(keepends=True):
        at, offset = offset, offset + len(line)
        text = line.rstrip("\r\n")
        if fence:
            close = _FENCE.match(text)
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                fence = ""
            continue
        if not text.strip():
            inside = False
            continue
        opening = _FENCE.match(text)
        heading = _ATX.match(text)
        if opening or heading or not inside or _LIST_ITEM.match(text):
            starts.append(at + len(text) - len(text.lstrip()))
        fence = opening.group(1) if opening else ""
        inside = not (opening or heading)  # the line after a code block or heading: a new one
    return starts


def locate(text: str, anchors: Anchors | None, spans: Iterable[tuple[int, int]]) -> list[str]:
    """The location of each ``[start, end)`` span of ``text``; ``""`` where unknown.

    Spans are expected in text order (as the chunker makes them); any order is correct,
    only slower.
    """
    spans = list(spans)
    if anchors is None:
        return ["" for _ in spans]
    if anchors.unit in _LINE_UNITS:
        return _locate_lines(text, anchors, spans)
    names: list[str] = []
    for start, end in spans:
        if not anchors.starts:
            names.append("")
            continue
        first = max(0, bisect_right(anchors.starts, start) - 1)
        last = max(first, bisect_right(anchors.starts, max(start, end - 1)) - 1)
        names.append(range_name(anchors.unit, anchors.labels[first], anchors.labels[last]))
    return names


def _locate_lines(text: str, anchors: Anchors, spans: list[tuple[int, int]]) -> list[str]:
    """Line numbers by counting newlines from a cursor that moves with the spans."""
    cursor = [0, 1]  # offset, line number at that offset

    def line_at(offset: int) -> int:
        pos, line = cursor
        if offset >= pos:
            line += text.count("\n", pos, offset)
        else:
            line -= text.count("\n", offset, pos)
        cursor[:] = [offset, line]
        label = max(1, line + anchors.shift)
        return label if anchors.last is None else min(label, anchors.last)

    names = []
    for start, end in spans:
        first = line_at(start)
        last = line_at(max(start, end - 1))
        names.append(range_name(anchors.unit, str(first), str(last)))
    return names
