"""Turn one source file into markdown text, or say in a few words why it cannot be.

Text and markdown are decoded here (UTF-8 first, chardet's guess as the contract's
fallback); PDF and CSV go through markitdown; JSON is pretty-printed as a fenced block so
keys and values stay searchable. markitdown is imported lazily: importing it costs about a
second, which a run with nothing new to convert must not pay.
"""

from __future__ import annotations

import codecs
import io
import json
import logging
import re
import threading
from pathlib import Path
from typing import Any, BinaryIO

import chardet

log = logging.getLogger("holodeck.ingest")

REASON_EMPTY = "empty file"
REASON_UNDECODABLE = "undecodable text"

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

_converters: dict[str, Any] | None = None
_converters_lock = threading.Lock()


class ConversionError(Exception):
    """A file that cannot be turned into text; ``reason`` is the short cause shown to users."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def to_markdown(path: Path) -> str:
    """Convert a supported file to markdown; raises ConversionError with a short reason.

    A file that cannot be read (deleted since discovery, permission) is a ConversionError
    too, so one bad file is skipped with its reason and ingestion goes on.
    """
    path = Path(path)
    try:
        text = _convert(path, path.suffix.lower())
    except OSError as exc:
        raise ConversionError(f"conversion failed: {exc.strerror or exc}") from exc
    if not text.strip():
        raise ConversionError(REASON_EMPTY)
    return text


def _convert(path: Path, suffix: str) -> str:
    """Pick the conversion by extension (discovery already kept only supported ones)."""
    if suffix in (".txt", ".md"):
        return decode_text(path.read_bytes())
    if suffix == ".json":
        return _json_to_markdown(path.read_bytes(), path)
    if suffix == ".csv":
        # markitdown guesses CSV charsets on its own; decode here so CSV follows the same
        # UTF-8-then-chardet rule as text, and hand it over as UTF-8.
        csv_text = decode_text(path.read_bytes())
        return _markitdown_convert(io.BytesIO(csv_text.encode("utf-8")), ".csv")
    if suffix == ".pdf":
        with path.open("rb") as stream:
            text = _markitdown_convert(stream, ".pdf")
        if not text.strip():
            # A scanned PDF has pages but no text layer; "empty file" would mislead.
            raise ConversionError("conversion failed: no text layer (scanned PDF? no OCR)")
        return text
    raise ConversionError(f"conversion failed: unsupported file type {suffix or '(none)'}")


def decode_text(data: bytes) -> str:
    """Decode text bytes: a BOM wins, then strict UTF-8, then chardet's guess (the contract).

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


def _json_to_markdown(data: bytes, path: Path) -> str:
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
            path,
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


def _markitdown_convert(stream: BinaryIO, extension: str) -> str:
    """Convert with markitdown's converter for this one type, created once per process.

    The converter is called directly rather than through ``MarkItDown.convert``: that one
    falls back to its plain-text converter when the PDF parser fails, so a corrupt PDF would
    be ingested as its raw bytes instead of being skipped with a reason.
    """
    global _converters
    with _converters_lock:
        if _converters is None:
            from markitdown.converters import CsvConverter, PdfConverter

            _converters = {".pdf": PdfConverter(), ".csv": CsvConverter()}
        converter = _converters[extension]
    from markitdown import StreamInfo

    charset = "utf-8" if extension == ".csv" else None
    try:
        result = converter.convert(stream, StreamInfo(extension=extension, charset=charset))
    except Exception as exc:  # parsers raise many types; the user needs one short line.
        raise ConversionError(f"conversion failed: {_short_cause(exc)}") from exc
    return str(result.markdown or "")


def _short_cause(exc: BaseException) -> str:
    """The first line of an error, trimmed, so a skip fits on one log line."""
    cause = exc.__cause__ or exc
    first = (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    return first if len(first) <= 120 else first[:117] + "..."
