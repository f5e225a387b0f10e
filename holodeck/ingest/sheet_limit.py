"""A workbook's text measured row by row before it is converted, so one past
``max_text_chars`` stops at the sheet and row where it passes the limit.

markitdown converts a workbook whole (every sheet read into memory, written as HTML, then as
Markdown) before its length can be compared with the limit: a workbook of millions of cells
cost minutes and gigabytes only to be skipped. openpyxl's read-only mode streams the sheets'
XML instead, and what is counted here is a lower bound of the Markdown markitdown would make
(each cell's text, spacing collapsed, and the `` | `` between cells; a number or date counts
one character), so a workbook refused here would have been refused after converting, never
one that fits.
"""

from __future__ import annotations

import io
import logging

log = logging.getLogger("holodeck.ingest")

#: Characters of the table syntax each non-empty cell adds at least (`` | ``).
_PER_CELL = 3


def sheet_row_past(data: bytes, max_chars: int) -> tuple[str, int] | None:
    """(sheet, row) where the workbook's text passes ``max_chars``, or None when it does not
    (or openpyxl cannot read it: markitdown's conversion then decides)."""
    import openpyxl  # markitdown's xlsx converter needs it too

    try:
        book = openpyxl.load_workbook(io.BytesIO(data), read_only=True, data_only=True)
    except Exception as exc:  # markitdown repairs some workbooks openpyxl refuses
        log.debug("measuring the workbook's text failed (%s); converting it whole", exc)
        return None
    try:
        chars = 0
        for sheet in book.worksheets:
            chars += len(sheet.title) + 4  # its "## <title>" heading
            for number, row in enumerate(sheet.iter_rows(values_only=True), 1):
                for value in row:
                    if value is None:
                        continue
                    text = " ".join(value.split()) if isinstance(value, str) else "0"
                    chars += len(text) + _PER_CELL
                if chars > max_chars:
                    return sheet.title, number
    except Exception as exc:  # a damaged sheet: markitdown's conversion says why
        log.debug("measuring the workbook's text failed (%s); converting it whole", exc)
        return None
    finally:
        book.close()
    return None
