"""Only the content goes in: what a reader's eye skips is taken out before chunking.

- Markdown: HTML comments (``<!-- YAML added: v0.9 -->``) and link-reference definitions
  (``[`fs.stat()`]: fs.md#fsstat``) are markup, not text; a table's separator row is cut to
  ``| --- |`` (Node's API tables pad it to hundreds of dashes, which the tokenizer counts one
  by one). They become blank, so every line keeps its number and a chunk still names the
  file's own lines. Fenced code is left as written.
- HTML: the page's main text and its headings, without navigation, headers, footers,
  sidebars and scripts (``html_main_text``).
- PDF: pages that are a table of contents or an index (lines of dot leaders, lines ending in
  page numbers), and running headers and footers (the same first or last line on most
  pages, page numbers aside), stay out (``pdf_pages``).

What each rule takes out of a real corpus: benchmarks/README.md, 'Only the content goes in'.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_LINK_DEFINITION = re.compile(
    r"^ {0,3}\[(?:[^\]\\\n]|\\.){1,999}\]:[ \t]*<?\S+>?"
    r"(?:[ \t]+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$",
    re.MULTILINE,
)
_TABLE_RULE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+(?:[ \t]*:?-{3,}:?[ \t]*)?$")
_DASHES = re.compile(r"-{4,}")


def _blank(match: re.Match[str]) -> str:
    """What replaces removed text: its line breaks, so line numbers do not move."""
    return "\n" * match.group().count("\n")


def clean_markdown(text: str) -> str:
    """Markdown without comments and link-reference definitions, table rules shortened;
    the same number of lines, code fences untouched."""
    return _outside_fences(text, _clean_prose)


def _clean_prose(text: str) -> str:
    text = _COMMENT.sub(_blank, text)
    text = _LINK_DEFINITION.sub("", text)
    if "---" in text:
        text = "".join(
            _DASHES.sub("---", line) if _TABLE_RULE.match(line.rstrip("\r\n")) else line
            for line in text.splitlines(keepends=True)
        )
    return text


# A backslash before a punctuation character: how converters escape Markdown's characters in
# a document's text (``student\\_tuples``), which would hide ``student_tuples`` from search.
_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!<>|~])")


def unescape_markdown(text: str) -> str:
    """Text a converter escaped for Markdown, as written (code fences left alone)."""
    return _outside_fences(text, lambda prose: _ESCAPE.sub(r"\1", prose))


def _outside_fences(text: str, fix: Callable[[str], str]) -> str:
    """Apply ``fix`` to the text between fenced code blocks."""
    out: list[str] = []
    prose: list[str] = []
    fence = ""
    for line in text.splitlines(keepends=True):
        match = _FENCE.match(line)
        if fence:
            out.append(line)
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = ""
            continue
        if match:
            out.append(fix("".join(prose)))
            prose = []
            fence = match.group(1)
            out.append(line)
            continue
        prose.append(line)
    out.append(fix("".join(prose)))
    return "".join(out)


# --- HTML ----------------------------------------------------------------------------------

_HEADING_ANCHOR = re.compile(r"^(#{1,6}[ \t].*?)[ \t]*[#¶]+[ \t]*$", re.MULTILINE)


def html_main_text(html: str) -> str | None:
    """The main text of a page as Markdown (headings, lists, tables, code), or None when
    the extractor finds none (a page of navigation only: the caller keeps the whole page).

    trafilatura finds the main content: on the Python and Node.js manuals it keeps nearly
    all of a page's main element and drops the sidebars, against markitdown's whole page
    and readability-lxml's misses (see benchmarks/README.md, 'Only the content goes in').
    """
    import trafilatura

    markdown = trafilatura.extract(
        html,
        output_format="markdown",
        include_tables=True,
        include_formatting=True,
        include_links=False,
        include_images=False,
        include_comments=False,
        favor_recall=True,
        with_metadata=False,
    )
    if not markdown or not markdown.strip():
        return None
    return unescape_markdown(_HEADING_ANCHOR.sub(r"\1", markdown))


# --- PDF -----------------------------------------------------------------------------------

# "7.37 Why does backslash behave strangely . . . . . . 39", "Introduction ........ iii"
_LEADER = re.compile(
    r"(?:\.[ \t]?){4,}[ \t]*(?:\d{1,4}|[ivxlc]{1,6})(?:[ \t]*,[ \t]*\d{1,4})*[ \t]*$", re.IGNORECASE
)
# an index line whose pages went to the next line: "\morecmidrules . . . ."
_LEADER_ONLY = re.compile(r"(?:\.[ \t]?){4,}$")
# "4.3.1 Packages using DBI 20": a numbered title ending in its page
_NUMBERED_ENTRY = re.compile(r"^(?:\d+(?:\.\d+)*|[A-Z](?:\.\d+)*)\.?[ \t]+\S.*[ \t]\d{1,4}[ \t]*$")
# "\cmidrule, 4, 5" / "regular expressions 12, 45-47": a term and its pages
_INDEX_ENTRY = re.compile(r"^\D.{0,80}?[ \t,]\d{1,4}(?:[ \t]*[,–-][ \t]*\d{1,4})*[ \t]*$")
_PAGE_NUMBER = re.compile(r"^(?:page[ \t]+)?(?:\d{1,4}|[ivxlc]{1,6})(?:[ \t]+of[ \t]+\d+)?$", re.I)
_DIGITS = re.compile(r"\d+")
_ROMAN_END = re.compile(r"(?:^|(?<= ))[ivxlc]{1,6}$")
_CONTENTS_TITLE = re.compile(r"^(?:table of )?contents$", re.IGNORECASE)
_WORDS = re.compile(r"[^\W\d_]{2,}")
#: Contents entries in a row that are a table of contents (fewer: a list in the text).
MIN_CONTENTS_RUN = 5
#: A page that held a table of contents is left out when fewer words than this remain.
MIN_PAGE_WORDS = 15
#: A page in the last third of a document is an index when this share of its lines are
#: index entries (a term and page numbers).
INDEX_SHARE = 0.6
#: A running head is on at least this many pages ...
RUNNING_MIN_PAGES = 3
#: ... and any line at the same edge of this share of the pages is one ...
RUNNING_SHARE = 0.5
#: ... when it is no longer than this and does not end a sentence.
MAX_RUNNING_CHARS = 90
_EDGE_LINES = 2


def pdf_pages(pages: Sequence[str]) -> list[str]:
    """Each page's text as it is read, or ``""`` for a page to leave out: contents and
    index pages go (a contents list sharing a page with text goes alone), running headers,
    footers and page numbers are cut off every page."""
    running = _running_lines(pages)
    kept: list[str] = []
    for number, page in enumerate(pages):
        lines = page.splitlines()
        if number >= len(pages) * 2 / 3 and _is_index(lines):
            kept.append("")
            continue
        rest = _without_contents(lines)
        text = "\n".join(_trim_edges(rest, running)).strip()
        if len(rest) < len(lines) and len(_WORDS.findall(text)) < MIN_PAGE_WORDS:
            text = ""  # a contents page's title and running head are all that is left
        kept.append(text)
    return kept


def _is_entry(line: str) -> bool:
    """A line of a table of contents: dot leaders to a page, or a numbered title and page."""
    text = line.strip()
    return bool(_LEADER.search(text) or _NUMBERED_ENTRY.match(text))


def _without_contents(lines: list[str]) -> list[str]:
    """The lines of a page without its runs of contents entries (a run: at least
    ``MIN_CONTENTS_RUN`` entries, a wrapped title or a blank line between them allowed),
    nor the "Contents" title above one."""
    entries = [_is_entry(x) for x in lines]
    drop = [False] * len(lines)
    i = 0
    while i < len(lines):
        if not entries[i]:
            i += 1
            continue
        j, count, last = i, 0, i
        while j < len(lines) and (entries[j] or (j + 1 < len(lines) and entries[j + 1])):
            if entries[j]:
                count, last = count + 1, j
            j += 1
        if count >= MIN_CONTENTS_RUN:
            start = i
            while start > 0 and (
                not lines[start - 1].strip() or _CONTENTS_TITLE.match(lines[start - 1].strip())
            ):
                start -= 1
                if lines[start].strip():
                    break
            for k in range(start, last + 1):
                drop[k] = True
        i = last + 1
    return [x for x, gone in zip(lines, drop, strict=True) if not gone]


def _is_index(lines: list[str]) -> bool:
    entries = [x.strip() for x in lines if x.strip()]
    if len(entries) < 10:
        return False
    hits = sum(
        bool(_INDEX_ENTRY.match(x) or _LEADER_ONLY.search(x)) or len(x) == 1  # "M": a letter
        for x in entries
    )
    return hits >= INDEX_SHARE * len(entries)


def _shape(line: str) -> str:
    """A line with its numbers masked: "R FAQ 37" and "R FAQ 38" are one running line."""
    return _ROMAN_END.sub("#", _DIGITS.sub("#", " ".join(line.split()).casefold()))


def _running_lines(pages: Sequence[str]) -> set[str]:
    """The shapes of lines that head or foot many pages: a line of words on at least
    ``RUNNING_MIN_PAGES`` pages and a tenth of them at the same edge (a chapter's running
    head), or any line on half of them (``Page 3 / 12``); a short line, not a sentence."""
    if len(pages) < 4:
        return set()
    top: Counter[tuple[int, str]] = Counter()  # (lines from the edge, shape): pages
    bottom: Counter[tuple[int, str]] = Counter()
    for page in pages:
        lines = [x for x in page.splitlines() if x.strip()]
        for seen, edge in ((top, lines[:_EDGE_LINES]), (bottom, lines[-_EDGE_LINES:][::-1])):
            for depth, line in enumerate(edge):
                seen[(depth, _shape(line))] += 1
    running = set()
    for seen in (top, bottom):
        for (depth, shape), n in seen.items():
            if len(shape) > MAX_RUNNING_CHARS or shape.rstrip().endswith((".", "!", "?")):
                continue  # a sentence of the text (pages alike in a generated file), no head
            wordy = depth == 0 and len(_WORDS.findall(shape)) >= 2
            if (wordy and n >= max(RUNNING_MIN_PAGES, 0.1 * len(pages))) or (
                n >= RUNNING_SHARE * len(pages) and shape.strip("# ")
            ):
                running.add(shape)
    return running


def _trim_edges(lines: list[str], running: set[str]) -> list[str]:
    """Lines without the running ones and bare page numbers at the top and the bottom."""

    def skip(line: str) -> bool:
        text = line.strip()
        return not text or _shape(text) in running or bool(_PAGE_NUMBER.match(text))

    start, end = 0, len(lines)
    while start < end and start < _EDGE_LINES + 1 and skip(lines[start]):
        start += 1
    while end > start and len(lines) - end < _EDGE_LINES + 1 and skip(lines[end - 1]):
        end -= 1
    return lines[start:end]
