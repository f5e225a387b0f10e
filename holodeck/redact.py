"""Redaction of secrets (connection-string passwords, API keys) from everything holodeck prints.

Two layers, because a secret reaches a message in shapes no single pattern foresees: redis-py
quoting half a password from a URL it could not parse (``redis://:pw#frag@host`` gives
"Port could not be cast to integer value as 'pw'"), a validation error echoing a string with
no scheme or one slash, a server echoing the API key in a 401 body.

- The secrets themselves: every connection string and key the configuration holds is
  remembered when it is loaded (:func:`remember_connection_string`, :func:`remember_secret`),
  and :func:`redact` replaces each of them, and each piece of them, wherever it appears.
- Patterns, for what was never remembered: ``scheme://user:pw@host`` (any number of
  slashes, or none), ``?password=``, ``sk-...`` keys, ``Bearer`` tokens, ``api_key=...``.

Every line holodeck prints goes through :func:`redact`: the log formatter, the CLI's error
lines and tracebacks (``-v``), chat's error lines and the test reports.
"""

from __future__ import annotations

import re
import threading
from urllib.parse import unquote

MASK = "***"

#: ``scheme:`` + any slashes + user (no ``:``, ``@``, ``/``) + ``:`` + password up to the last
#: ``@`` of the whitespace-free run. Greedy on purpose: a password holding a raw ``@`` or
#: ``/`` is still hidden whole; at worst a little of what follows is hidden too.
_USERINFO = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.\-]*:/*[^\s:@/]*):\S*@")
#: The same without a scheme (``:pw@host``, ``user:pw@host``), at the start of a word.
_BARE_USERINFO = re.compile(r"(?P<head>(?:^|(?<=[\s'\"(=\[,]))[^\s:@/'\"]*):(?!/)[^\s'\"]+@")
#: ``?password=`` / ``&password=`` query parameters, which redis-py also reads.
_QUERY_PASSWORD = re.compile(r"(?P<head>[?&]password=)[^&#\s'\"]*", re.IGNORECASE)
#: OpenAI-style keys (``sk-...``, ``sk-proj-...``), whole or as a server masks them.
_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-.*]{6,}")
_BEARER = re.compile(r"(?P<head>\bBearer\s+)[A-Za-z0-9._~+/\-]+=*", re.IGNORECASE)
#: ``api_key=VALUE`` / ``"api-key": "VALUE"`` with a value that looks like a key: one holding
#: a digit, or a long run (a key is random); a word of a message ("api_key: environment
#: variable ... is not set", "${API_KEY:-default}") is text, not a secret, and stays.
_KEY_ASSIGNMENT = re.compile(
    r"(?P<head>api[_-]?key[\"']?\s*[:=]\s*[\"']?)"
    r"(?:(?=[A-Za-z_\-.]*[0-9])[A-Za-z0-9_\-.]{8,}|[A-Za-z0-9_\-.]{32,})",
    re.IGNORECASE,
)
#: Where a remembered value is split into pieces a parser may quote on their own.
_PIECE_SPLIT = re.compile(r"[\s#?/@&;,'\"]+")
#: Secrets this long are replaced anywhere; shorter ones only as a whole word, so a two-letter
#: password does not mangle every word it happens to occur in.
_ANYWHERE = 8

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern[str] | None = None


def remember_secret(value: str | None) -> None:
    """Never print ``value`` (an API key, a password), nor any piece of it, from now on."""
    if not value:
        return
    found = {value, value.strip(), unquote(value)}
    for whole in list(found):
        found.update(_PIECE_SPLIT.split(whole))
    found = {s for s in found if len(s) >= 2 and s != MASK}
    global _pattern
    with _lock:
        if found <= _secrets:
            return
        _secrets.update(found)
        parts = []
        for secret in sorted(_secrets, key=len, reverse=True):  # longest first
            escaped = re.escape(secret)
            if len(secret) < _ANYWHERE:
                escaped = rf"(?<![A-Za-z0-9]){escaped}(?![A-Za-z0-9])"
            parts.append(escaped)
        _pattern = re.compile("|".join(parts))


def remember_connection_string(url: str | None) -> None:
    """Remember the password of a connection string, however malformed the string is.

    Read by hand rather than with a URL parser, because the strings that leak are the ones a
    parser misreads: the password is what lies between the first ``:`` of the user info and
    the last ``@`` (``redis://:pw#frag@host``, ``:pw@host``, ``redis:/u:p w@host``), plus any
    ``password=`` query parameter.
    """
    if not url:
        return
    rest = re.sub(r"^\s*[A-Za-z][A-Za-z0-9+.\-]*:/+", "", url)
    if "@" in rest:
        userinfo = rest.rsplit("@", 1)[0]
        if ":" in userinfo:
            remember_secret(userinfo.split(":", 1)[1])
    for value in re.findall(r"[?&]password=([^&#]*)", url, re.IGNORECASE):
        remember_secret(value)


def redact(text: str) -> str:
    """``text`` with every remembered secret and every password or key pattern as ``***``."""
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    text = _USERINFO.sub(rf"\g<head>:{MASK}@", text)
    text = _BARE_USERINFO.sub(rf"\g<head>:{MASK}@", text)
    text = _QUERY_PASSWORD.sub(rf"\g<head>{MASK}", text)
    text = _KEY.sub(f"sk-{MASK}", text)
    text = _BEARER.sub(rf"\g<head>{MASK}", text)
    return _KEY_ASSIGNMENT.sub(rf"\g<head>{MASK}", text)


def redact_url(url: str) -> str:
    """A URL (or any string holding URLs) safe to print: passwords become ``***``."""
    return redact(url)
