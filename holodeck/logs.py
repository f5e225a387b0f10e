"""Logging set-up: one line per record on stderr, secrets redacted from every line.

The redaction runs on the formatted record, so it covers the message, its arguments and
the traceback ``-v`` adds (an HTTP error there may quote a key or a connection string).
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from holodeck.redact import redact


class RedactingFormatter(logging.Formatter):
    """Formats a record as usual, then hides every secret in the whole text."""

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class OneLineFormatter(RedactingFormatter):
    """A library's record as one line: its exception's type and message instead of the
    traceback (which ``-v`` keeps), so a misbehaving server never floods the terminal."""

    def format(self, record: logging.LogRecord) -> str:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record = logging.makeLogRecord(
                {**record.__dict__, "exc_info": None, "exc_text": None, "stack_info": None}
            )
            record.msg = f"{record.getMessage()} ({type(exc).__name__}: {exc})"
            record.args = None
        return super().format(record)


class CurrentStderrHandler(logging.StreamHandler[TextIO]):
    """Writes to whatever ``sys.stderr`` is now, so a live progress bar can print above it."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def setup_logging(level: int) -> None:
    """Send ``holodeck.*`` logs to stderr as ``LEVEL: message`` (debug adds the logger name)."""
    logger = logging.getLogger("holodeck")
    for old in list(logger.handlers):
        logger.removeHandler(old)
    handler = CurrentStderrHandler()
    fmt = (
        "%(levelname)s %(name)s: %(message)s"
        if level <= logging.DEBUG
        else "%(levelname)s: %(message)s"
    )
    handler.setFormatter(RedactingFormatter(fmt))
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    _libraries_say(level)


#: Libraries whose warnings a user should see (the MCP SDK: a server that misbehaves;
#: OpenTelemetry's exporters: a collector that cannot be reached).
_LIBRARIES = ("mcp", "opentelemetry")


def _libraries_say(level: int) -> None:
    """Their warnings and errors as one ``WARNING mcp: ...`` line each on stderr (the whole
    record, traceback too, with ``-v``), instead of Python's bare last-resort output."""
    debug = level <= logging.DEBUG
    for name in _LIBRARIES:
        logger = logging.getLogger(name)
        for old in list(logger.handlers):
            logger.removeHandler(old)
        handler = CurrentStderrHandler()
        fmt = "%(levelname)s %(name)s: %(message)s"
        handler.setFormatter(RedactingFormatter(fmt) if debug else OneLineFormatter(fmt))
        logger.addHandler(handler)
        logger.setLevel(max(level, logging.WARNING))
        logger.propagate = False
