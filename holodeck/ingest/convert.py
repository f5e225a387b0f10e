"""Turn one source file into text plus where each part of it came from, or say why it cannot be.

Text and markdown are decoded here (UTF-8 first, chardet's guess as the fallback); PDF text
is extracted page by page with pypdfium2 (markitdown's PDF path glued words together,
turned prose into fake tables and took far more CPU: see benchmarks/README.md, 'PDF
text'); CSV becomes a markdown table, one line
per record, so chunks can name their rows; JSON is pretty-printed as a fenced block so
keys and values stay searchable; .docx, .pptx and .xlsx go through markitdown's
converters (a .docx's paragraphs are counted, to name a chunk's place); an HTML page's
content (``html_page``) through trafilatura. markitdown and pypdfium2 are imported lazily:
importing them is slow, and a run with nothing new to convert must not pay for it.

Every file is read from one descriptor whose real path is checked, after opening, to lie
inside the source folder: a file swapped for a symlink to ``/etc/passwd`` between discovery
and reading is refused, never read.

A file past one of its tool's ``limits`` (``config.file_limits``) is refused with
``OverLimit`` before the costly part: a text file by its size before it is read (a web
page by a smaller size of its own), an office file by its zip directory before anything is
unzipped, a PDF by its page count before a page is read; and every file once its text
passes ``max_text_chars`` (a PDF or CSV as soon as the text read so far does, a workbook at
the row where its cells' text does, before markitdown converts it: ``sheet_limit``; the
others when converted).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import os
import re
import stat
import sys
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import IO, Any

import chardet

from holodeck.config.file_limits import (
    HTML_FILE_TYPES,
    MB,
    TEXT_FILE_TYPES,
    ZIP_FILE_TYPES,
    FileLimits,
)
from holodeck.ingest.clean import clean_markdown, html_main_text, pdf_pages, unescape_markdown
from holodeck.ingest.discover import REASON_EMPTY, REASON_OUTSIDE, SourceFile, path_text, within
from holodeck.ingest.locations import Anchors
from holodeck.ingest.sections import (
    Heading,
    markdown_headings,
    outline_headings,
    text_headings,
)
from holodeck.ingest.sheet_limit import sheet_row_past

log = logging.getLogger("holodeck.ingest")

REASON_UNDECODABLE = "undecodable text"
REASON_NO_TEXT_LAYER = "conversion failed: no text layer (scanned PDF? no OCR)"
REASON_NAVIGATION_ONLY = "no content besides the page's navigation, header and footer"

# Control characters other than tab, newlines and form feed: text has almost none.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f]")
# Share of control characters above which a decoded "text" is really binary data.
_MAX_CONTROL_SHARE = 0.05
# Deepest JSON that is pretty-printed: json's parser and printer recurse once per level, and
# each level indents every line below it, so a deeper file is indexed as written.
MAX_JSON_DEPTH = 64

# Documents are modern files: leaving out DOS, Mac and mainframe code pages makes chardet
# (6+) guess Latin-1 prose right instead of, say, MacLatin2. Older chardet has no eras.
_DETECT_OPTIONS: dict[str, Any] = (
    {"encoding_era": chardet.EncodingEra.MODERN_WEB} if hasattr(chardet, "EncodingEra") else {}
)

# pdfium marks a hyphen that ends a line (a word broken by the typesetter) as \x02 and has
# already joined the two lines; other control characters are glyphs of symbol fonts.
_PDF_SOFT_HYPHEN = "\x02"
_PDF_CONTROL = re.compile(r"[\x00\x01\x03-\x08\x0b\x0e-\x1f]")
_PDF_NEWLINES = re.compile(r"\r\n?|\x0c")
# pdfium is not thread-safe: one document at a time per process.
_pdfium_lock = threading.Lock()

# markitdown marks each slide with this comment; it becomes an anchor instead of text.
_SLIDE_MARK = re.compile(r"^<!-- Slide number: (\d+) -->[ \t]*\n?", re.MULTILINE)
# markitdown heads each sheet of a workbook with "## <sheet name>".
_SHEET_HEADING = re.compile(r"^## (.+)$", re.MULTILINE)

#: Fewer words of main text than this: the page's content is converted whole instead.
_MIN_MAIN_WORDS = 50
#: Headings of a page looked through for the one a converted heading is (the extractor may
#: have left some out); a bound, so a page of many headings costs no quadratic search.
_MATCH_AHEAD = 50

#: The limits of a tool that sets none.
DEFAULT_LIMITS = FileLimits()
#: A zip part that unzips to less than this is no bomb whatever its ratio: small XML parts of
#: repeated markup zip far tighter than a document's text does.
_RATIO_CHECKED_FROM = MB

_markitdown: dict[str, Any] = {}
_markitdown_lock = threading.Lock()
#: markitdown's converter class for each optional format.
_MARKITDOWN_CONVERTERS = {
    ".docx": "DocxConverter",
    ".pptx": "PptxConverter",
    ".xlsx": "XlsxConverter",
    ".html": "HtmlConverter",
    ".htm": "HtmlConverter",
}


class ConversionError(Exception):
    """A file that cannot be turned into text; ``reason`` is the short cause shown to users."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OverLimit(ConversionError):
    """A file past one of its tool's ``limits``: ``what`` about it, and the ``key`` that would
    let it in, so the skip's reason says how to ingest it after all."""

    def __init__(self, what: str, key: str) -> None:
        super().__init__(f"{what}; to ingest it, raise limits.{key}")
        self.what = what
        self.key = key


@dataclass(frozen=True)
class Converted:
    """A file's text as it is chunked, how to name a place in it (None: unknown), and its
    headings (each chunk's section path is made from them)."""

    text: str
    anchors: Anchors | None = None
    headings: tuple[Heading, ...] = ()


#: ``(pages read, pages)`` after each page of a PDF: progress inside a long one.
PageCallback = Callable[[int, int], None]


def convert(
    file: SourceFile, limits: FileLimits | None = None, on_page: PageCallback | None = None
) -> Converted:
    """Convert a discovered file; raises ConversionError with a short reason.

    A file that cannot be read (deleted since discovery, permission, swapped for a link
    leading outside the source) is a ConversionError too, so one bad file is skipped with
    its reason and ingestion goes on; a file past one of ``limits`` (default: the defaults)
    is an ``OverLimit``.
    """
    limits = limits or DEFAULT_LIMITS
    suffix = file.path.suffix.lower()

    def check(stream: IO[bytes]) -> None:
        _check_before_reading(stream, suffix, limits)

    try:
        data = read_checked(file, check)
    except OSError as exc:
        raise ConversionError(f"conversion failed: {exc.strerror or exc}") from exc
    converted = _convert(data, suffix, file.rel_path, limits, on_page)
    if not converted.text.strip():
        raise ConversionError(REASON_EMPTY)
    if len(converted.text) > limits.max_text_chars:
        raise OverLimit(
            f"its text is {len(converted.text):,} characters (limit {limits.max_text_chars:,})",
            "max_text_chars",
        )
    return converted


def convert_bytes(data: bytes, suffix: str, name: str) -> Converted:
    """A file's bytes converted as ingestion converts a file of that extension (a test
    case's ``files:``); ConversionError when it cannot be, or holds no text."""
    converted = _convert(data, suffix.lower(), name)
    if not converted.text.strip():
        raise ConversionError(REASON_EMPTY)
    return converted


def read_checked(file: SourceFile, check: Callable[[IO[bytes]], None] | None = None) -> bytes:
    """The file's bytes, read from a descriptor whose real path lies inside ``file.root``.

    Discovery checked the path; between then and now it may have been replaced by a link
    to anywhere. Checking the descriptor itself (not the name again) closes that gap.
    O_NONBLOCK keeps a FIFO swapped in from blocking the open; it is refused right after.
    ``check`` sees the open file before it is read, to refuse it unread.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(file.path, flags)
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ConversionError("not a regular file")
        if file.root and not within(_real_path_of(fd, file), file.root):
            raise ConversionError(REASON_OUTSIDE)
        if check is not None:
            check(stream)
            stream.seek(0)
        return stream.read()


def _check_before_reading(stream: IO[bytes], suffix: str, limits: FileLimits) -> None:
    """Refuse a text file by its size, and an office file by its zip directory, unread."""
    if suffix in TEXT_FILE_TYPES:
        size = os.fstat(stream.fileno()).st_size
        if size > limits.max_text_file_mb * MB:
            raise OverLimit(
                f"the file is {_mb(size)} (limit {limits.max_text_file_mb:g} MB)",
                "max_text_file_mb",
            )
        if suffix in HTML_FILE_TYPES and size > limits.max_html_mb * MB:
            raise OverLimit(
                f"the page is {_mb(size)} (limit {limits.max_html_mb:g} MB)", "max_html_mb"
            )
    elif suffix in ZIP_FILE_TYPES:
        _check_zip(stream, limits)


def _check_zip(stream: IO[bytes], limits: FileLimits) -> None:
    """Refuse an office file whose zip directory says it is a bomb, without unzipping it.

    Only the directory is read: each entry's sizes, as the archive states them. Those bound
    what the converters can inflate, since they all unzip with ``zipfile``, which stops at
    an entry's stated size. Checked in turn: the number of entries, each part's ratio
    (unzipped to zipped size), the ratio of all parts together (many small parts), and their
    total unzipped size.
    """
    try:
        with zipfile.ZipFile(stream) as archive:
            entries = archive.infolist()
    except Exception as exc:  # not a zip, or a damaged one: the converter would fail too
        raise ConversionError(f"conversion failed: {_short_cause(exc)}") from exc
    if len(entries) > limits.max_zip_entries:
        raise OverLimit(
            f"it holds {len(entries):,} zip entries (limit {limits.max_zip_entries:,})",
            "max_zip_entries",
        )
    for entry in entries:
        packed = max(entry.compress_size, 1)
        if (
            entry.file_size > _RATIO_CHECKED_FROM
            and entry.file_size > limits.max_zip_ratio * packed
        ):
            raise OverLimit(
                f"{_part_name(entry.filename)} unzips to {_mb(entry.file_size)}, "
                f"{entry.file_size / packed:,.0f} times its zipped size "
                f"(limit {limits.max_zip_ratio:g}: a zip bomb?)",
                "max_zip_ratio",
            )
    total = sum(entry.file_size for entry in entries)
    packed = max(sum(entry.compress_size for entry in entries), 1)
    if total > _RATIO_CHECKED_FROM and total > limits.max_zip_ratio * packed:
        # Many parts each under the floor above add up to a bomb too (90 parts of 0.99 MB).
        raise OverLimit(
            f"its {len(entries):,} parts unzip to {_mb(total)}, {total / packed:,.0f} times "
            f"their zipped size (limit {limits.max_zip_ratio:g}: a zip bomb?)",
            "max_zip_ratio",
        )
    if total > limits.max_unzipped_mb * MB:
        raise OverLimit(
            f"unzips to {_mb(total)} (limit {limits.max_unzipped_mb:g} MB)", "max_unzipped_mb"
        )


def _part_name(name: str) -> str:
    """A zip entry's name as a warning may show it: escaped as paths are, and not too long."""
    shown = path_text(name)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def _mb(size: float) -> str:
    """A size in the MB of the limits, with the digits that tell it from a limit near it."""
    mb = size / MB
    if mb >= 10:
        return f"{mb:,.0f} MB"
    return f"{mb:.1f} MB" if mb >= 1 else f"{mb:.2f} MB"


def _real_path_of(fd: int, file: SourceFile) -> str:
    """Where the open descriptor really points: /proc on Linux, F_GETPATH on macOS."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    if sys.platform == "darwin":
        import fcntl

        raw = fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024))  # type: ignore[attr-defined]
        return os.fsdecode(raw.rstrip(b"\x00"))
    # Elsewhere: the file the name resolves to now must be the one that was opened.
    real = os.path.realpath(file.path)
    opened, named = os.fstat(fd), os.stat(real)
    return real if (opened.st_dev, opened.st_ino) == (named.st_dev, named.st_ino) else ""


def _convert(
    data: bytes,
    suffix: str,
    name: str,
    limits: FileLimits = DEFAULT_LIMITS,
    on_page: PageCallback | None = None,
) -> Converted:
    """Pick the conversion by extension (discovery already kept only enabled ones).

    ``name`` (the file's path in its source) is for warnings; a PDF or CSV stops as soon as
    its text passes ``limits.max_text_chars``.
    """
    if suffix == ".md":
        text = clean_markdown(decode_text(data))
        return Converted(text, Anchors.lines(), tuple(markdown_headings(text)))
    if suffix in (".txt", ".adoc"):  # plain text, reStructuredText, AsciiDoc
        text = decode_text(data)
        return Converted(text, Anchors.lines(), tuple(text_headings(text)))
    if suffix == ".json":
        # A fence line before and after: JSON line n is text line n + 1.
        text = _json_to_markdown(data, name)
        return Converted(text, Anchors.lines(shift=-1, last=text.count("\n") - 2))
    if suffix == ".csv":
        return _csv_to_markdown(decode_text(data), limits.max_text_chars)
    if suffix == ".pdf":
        return _pdf_text(data, limits, on_page)
    if suffix in (".html", ".htm"):
        return _html_text(decode_text(data), suffix)
    if suffix == ".pptx":
        return _with_headings(_slides(_markitdown_convert(data, suffix)))
    if suffix == ".xlsx":
        past = sheet_row_past(data, limits.max_text_chars)  # before converting it whole
        if past is not None:
            raise OverLimit(
                f"its text passes the limit of {limits.max_text_chars:,} characters at sheet "
                f"{path_text(past[0])}, row {past[1]:,}",
                "max_text_chars",
            )
        markdown = _markitdown_convert(data, suffix)
        marks = ((m.start(), m.group(1).strip()) for m in _SHEET_HEADING.finditer(markdown))
        return _with_headings(Converted(markdown, Anchors.at("sheet", marks)))
    if suffix == ".docx":
        text = clean_markdown(unescape_markdown(_markitdown_convert(data, suffix)))
        return _with_headings(Converted(text, Anchors.paragraphs(text)))
    raise ConversionError(f"conversion failed: unsupported file type {suffix or '(none)'}")


def _with_headings(converted: Converted) -> Converted:
    """The Markdown a converter made, with its ``#`` headings."""
    headings = tuple(markdown_headings(converted.text))
    return Converted(converted.text, converted.anchors, headings)


def _html_text(html: str, suffix: str) -> Converted:
    """The page's main text (``html_page``: its navigation, header, footer and sidebars
    out), its headings with their anchors, its paragraphs counted.

    trafilatura reads the content first; markitdown converts the same content instead when
    trafilatura finds only a few words of it, or flattens its code examples (a short page
    goes through a fallback that joins the lines of a ``<pre>``).
    """
    from holodeck.ingest.html_page import page_content  # lxml: the html extra's

    page = page_content(html)
    if not page.html:
        raise ConversionError(REASON_EMPTY)
    try:
        markdown = html_main_text(page.html)
    except ImportError:
        raise  # a broken install is a fault to show, never a reason to index the site's chrome
    except Exception as exc:  # a parser failing on one page: its whole text is still worth having
        log.debug("main-text extraction failed (%s); converting the content whole", exc)
        markdown = None
    if (
        markdown is None
        or len(markdown.split()) < _MIN_MAIN_WORDS
        or (page.has_code and "```" not in markdown)
    ):
        # Handed over as UTF-8 (the page was decoded by the same rule as text).
        whole = _markitdown_convert(page.html.encode("utf-8"), suffix, charset="utf-8")
        markdown = unescape_markdown(whole)  # identifiers whole here too (a\_tuple -> a_tuple)
    text = clean_markdown(markdown)
    if not text.strip():  # the page had elements, all of them chrome
        raise ConversionError(REASON_NAVIGATION_ONLY)
    headings = _with_anchors(markdown_headings(text), page.headings)
    return Converted(text, Anchors.paragraphs(text), headings)


def _with_anchors(
    headings: list[Heading], page: tuple[tuple[str, str], ...]
) -> tuple[Heading, ...]:
    """Each converted heading with the anchor of the page's heading of the same title,
    matched in page order (a few headings the extractor left out are skipped over)."""
    from holodeck.ingest.html_page import title_key

    out = []
    at = 0
    for h in headings:
        key = title_key(h.title)
        ahead = range(at, min(at + _MATCH_AHEAD, len(page)))
        match = next((i for i in ahead if page[i][0] == key), None)
        if match is None:
            out.append(h)
            continue
        at = match + 1
        anchor = page[match][1]
        out.append(replace(h, anchor=f"#{anchor}" if anchor else ""))
    return tuple(out)


def decode_text(data: bytes) -> str:
    """Decode text bytes: a BOM wins, then strict UTF-8, then chardet's guess.

    Binary data is refused rather than ingested as mojibake: NUL bytes without a UTF-16
    BOM, no chardet guess, a failed decode, or a result full of control characters. chardet's
    confidence is not used as a gate: chardet 6+ reports confidences below 0.1 even for
    plain Latin-1 prose, and returns no encoding at all for binary data.
    """
    if not data:
        raise ConversionError(REASON_EMPTY)
    if data.startswith(codecs.BOM_UTF8):
        return _strict(data, "utf-8-sig")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return _strict(data, "utf-16")
    if b"\x00" in data:
        raise ConversionError(REASON_UNDECODABLE)
    try:
        return _strict(data, "utf-8")
    except ConversionError:
        pass
    encoding = chardet.detect(data, **_DETECT_OPTIONS).get("encoding")
    if not encoding:
        raise ConversionError(REASON_UNDECODABLE)
    return _strict(data, encoding)


def _strict(data: bytes, encoding: str) -> str:
    """Decode strictly and refuse text that is mostly control characters."""
    try:
        text = data.decode(encoding)
    except (UnicodeDecodeError, LookupError):
        raise ConversionError(REASON_UNDECODABLE) from None
    if len(_CONTROL_CHARS.findall(text)) > _MAX_CONTROL_SHARE * len(text):
        raise ConversionError(REASON_UNDECODABLE)
    return text


def _json_to_markdown(data: bytes, name: str) -> str:
    """Pretty-print JSON in a fenced block; invalid JSON names the line to fix.

    JSON nested deeper than ``MAX_JSON_DEPTH`` (or than the parser's recursion allows) is
    fenced as written, with a warning, instead of stopping on a RecursionError.
    """
    text = decode_text(data)
    if not text.strip():
        raise ConversionError(REASON_EMPTY)
    try:
        value = json.loads(text)
        too_deep = _nesting(value) > MAX_JSON_DEPTH
    except json.JSONDecodeError as exc:
        raise ConversionError(f"conversion failed: invalid JSON at line {exc.lineno}") from None
    except RecursionError:
        too_deep = True
    if too_deep:
        log.warning(
            "%s: JSON nested more than %d levels deep; indexed as written, not pretty-printed",
            name,
            MAX_JSON_DEPTH,
        )
        return f"```json\n{text.strip()}\n```\n"
    pretty = json.dumps(value, indent=2, ensure_ascii=False)
    return f"```json\n{pretty}\n```\n"


def _nesting(value: Any) -> int:
    """How deep arrays and objects nest in ``value`` (0 for a scalar), without recursion.

    Stops counting once past ``MAX_JSON_DEPTH``: only whether it is exceeded matters.
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack and deepest <= MAX_JSON_DEPTH:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _csv_to_markdown(text: str, max_chars: int) -> Converted:
    """A markdown table with one line per CSV record, so text line n + 1 is record n.

    Records are numbered as a spreadsheet numbers rows (the header is row 1). Line breaks
    inside a quoted cell become spaces and pipes are escaped, so no record spans two lines;
    short records are padded to the widest one. Reading stops at the record whose line takes
    the table past ``max_chars``, counted unpadded (so never more than the table will be).
    """
    rows: list[list[str]] = []
    length = 0  # of the table's lines so far, unpadded, separator included once known
    blank = 0  # of the empty records since the last one with text (dropped at the end)
    try:
        for number, row in enumerate(csv.reader(io.StringIO(text.lstrip("\ufeff"), newline="")), 1):
            cells = [" ".join(c.replace("|", "\\|").split()) for c in row]
            rows.append(cells)
            line = 4 + sum(map(len, cells)) + 3 * max(len(cells) - 1, 0) + 1
            if number == 1:
                line += 6 * max(len(cells), 1) + 2  # the separator: at least this wide
            if not any(cells):
                blank += line
                continue
            length += blank + line
            blank = 0
            if length > max_chars:
                raise OverLimit(
                    f"its text passes the limit of {max_chars:,} characters at row {number:,}",
                    "max_text_chars",
                )
    except csv.Error as exc:  # e.g. one cell over the csv module's 128 KB field limit
        raise ConversionError(f"conversion failed: invalid CSV ({exc})") from None
    while rows and not any(rows[-1]):
        rows.pop()
    if not rows:
        raise ConversionError(REASON_EMPTY)
    width = max(len(row) for row in rows)
    lines = [_table_row(rows[0], width), "| " + " | ".join(["---"] * width) + " |"]
    lines += [_table_row(row, width) for row in rows[1:]]
    # Text line 1 is the header (row 1), line 2 the separator, line n (n >= 3) is row n - 1.
    return Converted("\n".join(lines) + "\n", Anchors.lines("row", shift=-1))


def _table_row(cells: list[str], width: int) -> str:
    """One record's escaped cells as a table line, padded to ``width`` cells."""
    return "| " + " | ".join([*cells, *[""] * (width - len(cells))]) + " |"


def _pdf_text(
    data: bytes, limits: FileLimits = DEFAULT_LIMITS, on_page: PageCallback | None = None
) -> Converted:
    """The text of each page that is read (contents and index pages, running headers and
    footers left out: ``clean.pdf_pages``), separated by a blank line and anchored; the
    outline's entries as headings. Refused unread past ``limits.max_pdf_pages``, and at the
    page where the text read so far passes ``limits.max_text_chars``."""
    import pypdfium2 as pdfium

    with _pdfium_lock:
        try:
            pdf = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            raise ConversionError(f"conversion failed: {_short_cause(exc)}") from exc
        try:
            pages = len(pdf)
            if pages > limits.max_pdf_pages:
                raise OverLimit(
                    f"it has {pages:,} pages (limit {limits.max_pdf_pages:,})", "max_pdf_pages"
                )
            raw: list[str] = []
            chars = 0
            for number in range(pages):
                page = pdf[number]
                textpage = page.get_textpage()
                raw.append(_clean_pdf_page(textpage.get_text_bounded()))
                textpage.close()
                page.close()
                chars += len(raw[-1])
                if on_page is not None:
                    on_page(number + 1, pages)
                if chars > limits.max_text_chars:
                    raise OverLimit(
                        f"its text passes the limit of {limits.max_text_chars:,} characters "
                        f"at page {number + 1:,} of {pages:,}",
                        "max_text_chars",
                    )
            outline = _outline(pdf)
        finally:
            pdf.close()
    if not any(raw):
        # A scanned PDF has pages but no text layer; "empty file" would mislead.
        raise ConversionError(REASON_NO_TEXT_LAYER)
    parts: list[str] = []
    marks: list[tuple[int, str]] = []
    starts: dict[int, int] = {}  # page index -> offset of its text
    offset = 0
    for index, text in enumerate(pdf_pages(raw)):
        if not text:
            continue
        starts[index] = offset
        marks.append((offset, str(index + 1)))
        parts.append(text)
        offset += len(text) + 2
    if not parts:
        raise ConversionError(REASON_EMPTY)
    joined = "\n\n".join(parts)
    return Converted(joined, Anchors.at("page", marks), _outline_headings(joined, starts, outline))


def _outline(pdf: Any) -> list[tuple[int, int, str]]:
    """The PDF's outline (bookmarks): (page index, level, title); empty when it has none."""
    items = []
    try:
        for item in pdf.get_toc(max_depth=8):
            dest = item.get_dest()
            index = dest.get_index() if dest is not None else None
            title = (item.get_title() or "").strip()
            if index is not None and title:
                items.append((int(index), int(item.level) + 1, title))
    except Exception as exc:  # a damaged outline costs the sections, not the text
        log.debug("reading the PDF outline failed: %s", exc)
        return []
    return items


def _outline_headings(
    text: str, starts: dict[int, int], outline: list[tuple[int, int, str]]
) -> tuple[Heading, ...]:
    """Outline entries placed in the text: where the title is printed on its page, else at
    the page's start (or the next page read, when its page was left out)."""
    kept = sorted(starts)
    placed = []
    for page, level, title in outline:
        later = [p for p in kept if p >= page]
        if not later:
            continue
        start = starts[later[0]]
        end = starts.get(later[1], len(text)) if len(later) > 1 else len(text)
        found = _find_title(text, title, start, end) if later[0] == page else -1
        placed.append((found if found >= 0 else start, level, title))
    return tuple(outline_headings(placed))


def _find_title(text: str, title: str, start: int, end: int) -> int:
    """Where ``title`` (its first words, spacing aside) is printed in ``text[start:end]``."""
    words = title.split()[:6]
    if not words:
        return -1
    pattern = r"\s+".join(re.escape(w) for w in words)
    match = re.search(pattern, text[start:end], re.IGNORECASE)
    return start + match.start() if match else -1


def _clean_pdf_page(raw: str) -> str:
    """Plain newlines, hyphenated words joined again, symbol-font controls as spaces."""
    text = _PDF_NEWLINES.sub("\n", raw).replace(_PDF_SOFT_HYPHEN, "")
    return _PDF_CONTROL.sub(" ", text).strip()


def _slides(markdown: str) -> Converted:
    """Slide markers out of the text, each slide anchored where its text starts."""
    parts: list[str] = []
    marks: list[tuple[int, str]] = []
    offset, previous = 0, 0
    for match in _SLIDE_MARK.finditer(markdown):
        parts.append(markdown[previous : match.start()])
        offset += match.start() - previous
        marks.append((offset, match.group(1)))
        previous = match.end()
    parts.append(markdown[previous:])
    return Converted("".join(parts), Anchors.at("slide", marks))


def _markitdown_convert(data: bytes, extension: str, charset: str | None = None) -> str:
    """Convert with markitdown's converter for this one type, created once per process.

    The converter is called directly rather than through ``MarkItDown.convert``: that one
    falls back to its plain-text converter when a parser fails, so a corrupt file would be
    ingested as its raw bytes instead of being skipped with a reason.
    """
    with _markitdown_lock:
        converter = _markitdown.get(extension)
        if converter is None:
            from markitdown import converters

            converter = getattr(converters, _MARKITDOWN_CONVERTERS[extension])()
            _markitdown[extension] = converter
    from markitdown import StreamInfo

    info = StreamInfo(extension=extension, charset=charset)
    try:
        result = converter.convert(io.BytesIO(data), info)
    except Exception as exc:  # parsers raise many types; the user needs one short line.
        raise ConversionError(f"conversion failed: {_short_cause(exc)}") from exc
    return str(result.markdown or "")


def _short_cause(exc: BaseException) -> str:
    """The first line of an error, trimmed, so a skip fits on one log line."""
    cause = exc.__cause__ or exc
    first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    return first if len(first) <= 120 else first[:117] + "..."
