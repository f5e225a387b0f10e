"""How much one file of a knowledge base may cost to convert: a tool's ``limits:``.

A file past a limit is skipped with a warning naming the limit, instead of being converted
for minutes and embedded as thousands of chunks of junk (a zip bomb: a small .docx whose
part unzips to hundreds of MB). The defaults are far beyond any real manual, so only a file
that is not really a document meets one; each is a key to raise for a file that is trusted.
"""

from __future__ import annotations

from pydantic import Field

from holodeck.config.base import Float, Int, StrictModel

#: Bytes in one MB of the limits (and of the messages that name them).
MB = 1 << 20

#: Read whole as text: their size is what parsing them costs (``max_text_file_mb``).
TEXT_FILE_TYPES = (".txt", ".md", ".csv", ".json", ".html", ".htm", ".adoc")
#: Web pages: parsed into a tree whole, so their size has a limit of its own (``max_html_mb``).
HTML_FILE_TYPES = (".html", ".htm")
#: Zip archives of XML parts (Office Open XML): checked before they are unzipped.
ZIP_FILE_TYPES = (".docx", ".pptx", ".xlsx")


class FileLimits(StrictModel):
    """Per-file caps on what converting one file may cost; past one, the file is skipped."""

    max_text_chars: Int = Field(
        default=25_000_000,
        ge=1,
        description="Characters of text one file may convert to, of any type (a PDF: its "
        "text layer, counted page by page as it is read).",
    )
    max_text_file_mb: Float = Field(
        default=32,
        gt=0,
        description="Size in MB of a .txt, .md, .csv, .json, .html, .htm or .adoc file "
        "(read whole).",
    )
    max_html_mb: Float = Field(
        default=8,
        gt=0,
        description="Size in MB of an .html or .htm page: parsing one costs far more than "
        "reading text (an 11 MB page took 50 s and 878 MB).",
    )
    max_pdf_pages: Int = Field(default=10_000, ge=1, description="Pages of a PDF.")
    max_unzipped_mb: Float = Field(
        default=500,
        gt=0,
        description="What a .docx, .pptx or .xlsx unzips to, in MB, all its parts together.",
    )
    max_zip_ratio: Float = Field(
        default=100,
        ge=1,
        description="How many times its zipped size a .docx, .pptx or .xlsx may unzip to: "
        "each part of more than 1 MB unzipped, and all its parts together when they pass 1 MB "
        "(a zip bomb's: hundreds of times).",
    )
    max_zip_entries: Int = Field(
        default=10_000, ge=1, description="Entries (parts) in a .docx, .pptx or .xlsx."
    )
