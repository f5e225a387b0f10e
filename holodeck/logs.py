"""Logging set-up: one line per record on stderr, passwords redacted from every line."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from holodeck.redact import redact_url


class RedactingFilter(logging.Filter):
    """Replaces the password of any URL in a record's final message by ``***``."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg = redact_url(record.getMessage())
        record.args = None
        return True


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
    handler.setFormatter(logging.Formatter(fmt))
    handler.addFilter(RedactingFilter())
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
