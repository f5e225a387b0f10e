"""The heading path of every chunk: ``EXAMPLES › Undo a commit``, as a reader finds a place.

A converter's text is read for its headings (Markdown ``#`` and underlined titles; in plain
text the underlined titles of reStructuredText and AsciiDoc, and AsciiDoc's ``term::`` items
where a list's entries are long enough to be sections, as in a man page's EXAMPLES; never
an admonition, a block's attributes or a list of one-line entries), or handed them (a PDF's
outline). Each chunk then gets the path of the section holding most of its text: a chunk
of ``dgram.html`` says ``UDP/datagram sockets › dgram.createSocket(options[, callback])``,
and where the page's heading has an id, its anchor (``section_anchors``) is the chunk's
location.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

#: Joins the headings of a path, as breadcrumbs do.
SEPARATOR = " › "
#: A heading longer than this is cut (a path stays one readable line).
MAX_TITLE = 80
#: Headings kept in a path, the deepest ones (a path stays short).
MAX_DEPTH = 3

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+_:.])\1{2,}[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# AsciiDoc's one-line titles: "== Title"
_ADOC_TITLE = re.compile(r"^(={1,5})[ \t]+(\S.*?)[ \t]*$")
# An AsciiDoc labelled-list term: "--soft::", "Undo a commit::" (not a reST "::" paragraph,
# which a blank line follows, nor a directive ".. note::")
_TERM = re.compile(r"^(\S.{0,150}?)::[ \t]*$")
# reStructuredText's descriptions of an API: ".. function:: dumps(obj, *, skipkeys=False)"
_DIRECTIVE = re.compile(
    r"^([ \t]*)\.\. (?:py:)?(?:function|method|class|attribute|exception|decorator|data|"
    r"classmethod|staticmethod|describe|option|cmdoption|envvar)::[ \t]+(\S.*?)[ \t]*$"
)
# What AsciiDoc writes on a line of its own that is no title: an admonition paragraph
# ("NOTE: ..."), a block's attributes ("[NOTE]", "[source,c]") or title (".Example"), above
# the "====" or "----" that opens its block (which reads as an underline).
_ADMONITION = re.compile(r"^(?:NOTE|TIP|WARNING|IMPORTANT|CAUTION):(?:\s|$)")
_BLOCK_LINE = re.compile(r"^(?:\[[^\]]*\]|\.[^\s.].*)$")
#: A labelled list heads sections (each entry is one: a man page's EXAMPLES) when at least
#: half its entries are long: this many characters, or more than one block ("+" joins a
#: block to an entry). A list of short entries (a list of commands, one line each) is a list:
#: its text sits under the title above it.
LONG_ENTRY_CHARS = 200
_TRAILING_MARKS = re.compile(r"[ \t]*[#¶][ \t]*$")
_MARKUP = re.compile(r":[\w-]+:(?=`)|`+|\*\*|\\(?=[^\w\s])")


@dataclass(frozen=True)
class Heading:
    """A heading at character ``offset`` of the text, of ``level`` (1 is the top), and the
    anchor a browser opens it by (``#bleeding-air``; ``""`` when it has none)."""

    offset: int
    level: int
    title: str
    anchor: str = ""


def markdown_headings(text: str) -> list[Heading]:
    """``#`` headings and setext (underlined) headings, outside fenced code."""
    found: list[Heading] = []
    fence = ""
    offset = 0
    para: list[tuple[int, str]] = []  # the lines of the paragraph being read
    for line in text.splitlines(keepends=True):
        stripped = line.rstrip("\r\n")
        match = _FENCE.match(stripped)
        if fence:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
        elif match:
            fence = match.group(1)
            para = []
        elif atx := _ATX.match(stripped):
            found.append(Heading(offset, len(atx.group(1)), atx.group(2)))
            para = []
        elif len(para) == 1 and _SETEXT.match(stripped):
            level = 1 if stripped.strip()[0] == "=" else 2
            found.append(Heading(para[0][0], level, para[0][1]))
            para = []
        elif stripped.strip() and not stripped.startswith(("    ", "\t", "|", ">", "- ", "* ")):
            para.append((offset, stripped.strip()))
        else:
            para = []
        offset += len(line)
    return _clean(found)


def text_headings(text: str) -> list[Heading]:
    """Underlined titles (reStructuredText, AsciiDoc), ``== Title`` lines, and one level
    below the title they follow, AsciiDoc ``term::`` items (of lists whose entries are
    sections: ``LONG_ENTRY_CHARS``) and reStructuredText's API descriptions
    (``.. function:: name(args)``). AsciiDoc's admonitions (``NOTE:``) and block lines
    (``[NOTE]``, ``.Title``) above a block's ``====`` are no titles.

    Underline characters get their levels in the order the document first uses them, as
    reStructuredText defines it (AsciiDoc's usual ``= - ~ ^`` order comes out the same).
    """
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    plain = [line.rstrip("\r\n") for line in lines]
    order: list[str] = []
    found: list[Heading] = []
    terms: list[tuple[Heading, int]] = []  # each with its list: the titles found before it
    depth = 0  # level of the last title, for the terms under it
    in_term = False
    i = 0
    while i < len(plain):
        line = plain[i]
        nxt = plain[i + 1] if i + 1 < len(plain) else ""
        title = line.strip()
        under = _UNDERLINE.match(nxt)
        if (
            title
            and under
            and not line[:1].isspace()
            and not _UNDERLINE.match(line)
            and not _BLOCK_LINE.match(title)
            and not _ADMONITION.match(title)
            and abs(len(nxt.rstrip()) - len(title)) <= 2
        ):
            above = plain[i - 1].rstrip() if i > 0 else ""
            overlined = above == nxt.rstrip()
            if above.strip() and not overlined:  # a title stands apart: not a table's header
                i += 1
                continue
            mark = under.group(1) + ("o" if overlined else "")
            if mark not in order:
                order.append(mark)
            depth = order.index(mark) + 1
            found.append(Heading(starts[i], depth, title))
            in_term = False
            i += 2
            continue
        if api := _DIRECTIVE.match(line):
            level = depth + 1 + (len(api.group(1).expandtabs()) + 2) // 3
            found.append(Heading(starts[i], level, api.group(2).rstrip("\\ ")))
            in_term = False
        elif adoc := _ADOC_TITLE.match(line):
            depth = len(adoc.group(1))
            found.append(Heading(starts[i], depth, adoc.group(2)))
            in_term = False
        elif (
            (term := _TERM.match(line))
            and nxt.strip()
            and not line.startswith(".. ")
            and not _ADMONITION.match(line)
            and not _continues_paragraph(plain[i - 1] if i else "")
        ):
            name = term.group(1).strip()
            if in_term and terms and terms[-1][0].offset == starts[i - 1]:
                last, _ = terms.pop()  # "-a::" then "--all::": one entry, two names
                name = f"{last.title}, {name}"
                terms.append((Heading(last.offset, last.level, name), len(found)))
            else:
                terms.append((Heading(starts[i], depth + 1, name), len(found)))
            in_term = True
            i += 1
            continue
        elif line.strip():
            in_term = False
        i += 1
    return _clean(found + _sectional_terms(text, found, terms))


def _continues_paragraph(previous: str) -> bool:
    """A line after ``previous`` is inside its paragraph (so no list term): ``previous`` is
    prose at the margin, not a blank line, an entry's indented text, a term or an underline."""
    return bool(
        previous.strip()
        and not previous[:1].isspace()
        and not _TERM.match(previous)
        and not _UNDERLINE.match(previous)
    )


def _sectional_terms(
    text: str, titles: list[Heading], terms: list[tuple[Heading, int]]
) -> list[Heading]:
    """The terms of the labelled lists whose entries are sections (``LONG_ENTRY_CHARS``).

    An entry runs to the next term or title; ``terms`` pairs each term with its list (the
    number of titles before it: the terms between two titles are one list).
    """
    bounds = sorted({h.offset for h in titles} | {t.offset for t, _ in terms} | {len(text)})
    lists: dict[int, list[Heading]] = {}
    for term, number in terms:
        lists.setdefault(number, []).append(term)
    kept: list[Heading] = []
    for entries in lists.values():
        long = 0
        for entry in entries:
            end = bounds[bisect_right(bounds, entry.offset)]
            body = text[entry.offset : end]
            blocks = sum(1 for line in body.splitlines() if line.strip() == "+")
            long += len(body.strip()) >= LONG_ENTRY_CHARS or blocks > 0
        if 2 * long >= len(entries):
            kept.extend(entries)
    return kept


def outline_headings(items: Iterable[tuple[int, int, str]]) -> list[Heading]:
    """Headings given by the document itself (a PDF's outline): ``(offset, level, title)``."""
    return _clean([Heading(offset, level, title) for offset, level, title in items])


def _clean(found: list[Heading]) -> list[Heading]:
    """Titles as a reader reads them: markup, trailing anchors (``#``, ``¶``) and
    extra spaces out, long ones cut; empty ones dropped."""
    cleaned = []
    for h in found:
        title = " ".join(_MARKUP.sub("", _TRAILING_MARKS.sub("", h.title)).split())
        if len(title) > MAX_TITLE:
            title = title[: MAX_TITLE - 1].rstrip() + "…"
        if title:
            cleaned.append(Heading(h.offset, max(1, h.level), title, h.anchor))
    cleaned.sort(key=lambda h: h.offset)
    return cleaned


def section_paths(headings: Sequence[Heading], spans: Iterable[tuple[int, int]]) -> list[str]:
    """The heading path of each ``[start, end)`` span: the section holding most of it.

    A path lists the headings above that section, outermost first (the deepest
    ``MAX_DEPTH``), joined by ``SEPARATOR``; ``""`` for text before the first heading.
    """
    paths = _paths(headings)
    return [paths[i] if i >= 0 else "" for i in _sections_of(headings, spans)]


def section_anchors(headings: Sequence[Heading], spans: Iterable[tuple[int, int]]) -> list[str]:
    """The anchor of each span's section (the one ``section_paths`` names); ``""`` where its
    heading has none (a heading above it would open the page elsewhere than the text)."""
    return [headings[i].anchor if i >= 0 else "" for i in _sections_of(headings, spans)]


def _sections_of(headings: Sequence[Heading], spans: Iterable[tuple[int, int]]) -> list[int]:
    """The index of the heading of the section holding most of each span (-1: before the
    first heading)."""
    spans = list(spans)
    if not headings:
        return [-1 for _ in spans]
    offsets = [h.offset for h in headings]
    found = []
    for start, end in spans:
        first = bisect_right(offsets, start) - 1  # the section the span starts in
        last = bisect_right(offsets, max(start, end - 1)) - 1
        best, best_len = first, -1
        for i in range(first, last + 1):
            lo = max(start, offsets[i] if i >= 0 else start)
            hi = min(end, offsets[i + 1] if i + 1 < len(offsets) else end)
            if hi - lo > best_len:
                best, best_len = i, hi - lo
        found.append(best)
    return found


def _paths(headings: Sequence[Heading]) -> list[str]:
    """The path down to each heading, keeping only headings above it in level."""
    stack: list[Heading] = []
    paths = []
    for h in headings:
        while stack and stack[-1].level >= h.level:
            stack.pop()
        stack.append(h)
        paths.append(SEPARATOR.join(s.title for s in stack[-MAX_DEPTH:]))
    return paths
