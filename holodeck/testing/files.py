"""A test case's ``files:``: each file's text added to the message the agent is sent.

Converted by ingestion's converters (``holodeck.ingest.convert``), so a PDF, a workbook or
a deck reads here as it does in a knowledge base; ``pages`` keeps those pages of a PDF (or
slides of a deck), ``sheet`` one sheet of a workbook, and ``range`` its cells, read with
openpyxl (markitdown's own xlsx reader, already installed), which knows cell addresses.
Each file comes after the input, between lines naming it.
"""

from __future__ import annotations

import io
from pathlib import Path

from holodeck.config.cases import FILE_TYPES, FileInput, Turn
from holodeck.errors import ConfigError
from holodeck.extras import require_for_types
from holodeck.ingest.convert import ConversionError, Converted, convert_bytes


def message_with_files(step: Turn, root: Path) -> str:
    """The step's input, followed by the text of each of its files."""
    if not step.files:
        return step.input
    parts = [step.input]
    for spec in step.files:
        assert spec.path is not None
        heading = spec.path + "".join(f", {label}" for label in _selection(spec) if label)
        if spec.description:
            heading += f" ({spec.description})"
        parts.append(f"--- file {heading} ---\n{file_text(spec, root)}\n--- end of file ---")
    return "\n\n".join(parts)


def _selection(spec: FileInput) -> list[str]:
    pages = "pages " + ", ".join(map(str, spec.pages)) if spec.pages else ""
    sheet = f"sheet {spec.sheet}" if spec.sheet else ""
    cells = f"cells {spec.range}" if spec.range else ""
    return [pages, sheet, cells]


def file_text(spec: FileInput, root: Path) -> str:
    """The text of one file (its pages, sheet or cells); a ConfigError line naming it."""
    assert spec.path is not None
    path = root / spec.path
    suffix = path.suffix.lower()
    if suffix not in FILE_TYPES[spec.type]:
        raise ConfigError(
            f"files: {spec.path}: type {spec.type} reads {', '.join(FILE_TYPES[spec.type])} "
            "files; give the type of this file"
        )
    require_for_types({suffix}, f"files: {spec.path}")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"files: cannot read {spec.path}: {exc.strerror or exc}") from None
    if spec.range is not None:
        return _cells(data, spec)
    try:
        converted = convert_bytes(data, suffix, spec.path)
    except ConversionError as exc:
        raise ConfigError(f"files: {spec.path}: {exc.reason}") from None
    if spec.pages:
        return _units(converted, [str(p) for p in spec.pages], ("page", "slide"), spec.path)
    if spec.sheet:
        return _units(converted, [spec.sheet], ("sheet",), spec.path)
    return converted.text.strip()


def _units(converted: Converted, wanted: list[str], units: tuple[str, ...], name: str) -> str:
    """The text of the named pages, slides or sheets, in the order asked."""
    anchors = converted.anchors
    if anchors is None or anchors.unit not in units or not anchors.starts:
        raise ConfigError(f"files: {name} has no {units[0]}s to pick from")
    ends = [*anchors.starts[1:], len(converted.text)]
    spans = dict(zip(anchors.labels, zip(anchors.starts, ends, strict=True), strict=True))
    missing = [w for w in wanted if w not in spans]
    if missing:
        have = ", ".join(anchors.labels)
        raise ConfigError(
            f"files: {name}: no {anchors.unit} {', '.join(missing)} with text "
            f"({anchors.unit}s with text: {have})"
        )
    return "\n\n".join(converted.text[spans[w][0] : spans[w][1]].strip() for w in wanted)


def _cells(data: bytes, spec: FileInput) -> str:
    """A cell range of one sheet as a Markdown table (its first row the header)."""
    import openpyxl
    from openpyxl.utils.cell import range_boundaries

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:
        raise ConfigError(f"files: {spec.path}: not a workbook openpyxl reads ({exc})") from None
    try:
        if spec.sheet is not None and spec.sheet not in book.sheetnames:
            raise ConfigError(
                f"files: {spec.path}: no sheet {spec.sheet!r} (sheets: "
                f"{', '.join(book.sheetnames)})"
            )
        sheet = book[spec.sheet] if spec.sheet else book.worksheets[0]
        assert spec.range is not None
        first_col, first_row, last_col, last_row = range_boundaries(spec.range.upper())
        rows = sheet.iter_rows(
            min_row=first_row,
            max_row=last_row,
            min_col=first_col,
            max_col=last_col,
            values_only=True,
        )
        table = [["" if v is None else str(v) for v in row] for row in rows]
    finally:
        book.close()
    if not table or not any(any(row) for row in table):
        raise ConfigError(f"files: {spec.path}: cells {spec.range} are empty")
    lines = ["| " + " | ".join(table[0]) + " |", "|" + " --- |" * len(table[0])]
    lines += ["| " + " | ".join(row) + " |" for row in table[1:]]
    return "\n".join(lines)
