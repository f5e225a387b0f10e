"""Redaction of passwords in URLs, so a connection string never reaches a message or a log.

Redis URLs carry their password inline (``redis://user:secret@host:6379/0``, or redis-py's
``?password=secret``); every error and log line that names a server goes through
:func:`redact` first.
"""

from __future__ import annotations

import re

#: ``scheme://`` + user (no ``:``, ``@``, ``/``) + ``:`` + password up to the last ``@`` of the
#: whitespace-free run. Greedy on purpose: a password holding a raw ``@`` or ``/`` is still
#: hidden whole; at worst a little of what follows is hidden too, never the other way round.
_USERINFO = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.\-]*://[^\s:@/]*):\S*@")
#: ``?password=`` / ``&password=`` query parameters, which redis-py also reads.
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)[^&#\s]*", re.IGNORECASE)


def redact(text: str) -> str:
    """``text`` with every URL password (``scheme://user:pw@host``, ``?password=pw``) as ``***``."""
    return _QUERY_PASSWORD.sub(r"\g<head>***", _USERINFO.sub(r"\g<head>:***@", text))


def redact_url(url: str) -> str:
    """A URL (or any string holding URLs) safe to print: passwords become ``***``."""
    return redact(url)
