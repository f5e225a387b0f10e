"""The ``HOLODECK_*`` environment variables: read when used, validated, named when wrong.

Each one is read by the code that needs it at the moment it needs it, never when a module
loads, so ``--help`` and the commands that do not use it never trip on it. A bad value
(not a number, ``nan``, ``inf``, out of range) is one ``ConfigError`` line (exit 2) naming
the variable, the value and what is allowed; unset or empty means the default. A secret is
the exception: its value is never printed, and set but empty is an error (a template that
did not fill it in), not "no secret".

- ``HOLODECK_LOCK_TIMEOUT``: seconds an ingest waits for another ingest of the same library.
- ``HOLODECK_REDIS_LOCK_TTL``: seconds a Redis library lock outlives a crashed ingest.
- ``HOLODECK_SERVE_TOKEN``: the bearer token every ``serve --http`` request must carry.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

from holodeck.errors import ConfigError
from holodeck.redact import remember_secret


@dataclass(frozen=True)
class Seconds:
    """A variable holding a number of seconds within ``[low, high]``."""

    name: str
    default: float
    low: float
    high: float

    def read(self) -> float:
        """The value now in the environment, or the default; ``ConfigError`` when invalid."""
        raw = os.environ.get(self.name, "")
        if not raw.strip():
            return self.default
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if math.isfinite(value) and self.low <= value <= self.high:
            return value
        raise ConfigError(
            f"environment variable {self.name}={raw!r} is not allowed: give a number of seconds "
            f"from {self.low:g} to {self.high:g} (default {self.default:g}), or unset it"
        )


#: RFC 6750's token68: what an ``Authorization`` header carries as it is.
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


@dataclass(frozen=True)
class Token:
    """A variable holding a secret token for an HTTP ``Authorization: Bearer`` header."""

    name: str
    #: Shorter tokens are guessable by a client that simply tries.
    min_length: int = 16

    def read(self) -> str | None:
        """The token (surrounding blanks dropped), ``None`` when unset; ``ConfigError`` when
        empty or not a header-safe token.

        No message quotes the value. A good one is remembered for redaction, so no output
        shows it; a bad one is not (the command stops at once, and its words would be hidden
        from the very message that explains it).
        """
        raw = os.environ.get(self.name)
        if raw is None:
            return None
        token = raw.strip()
        if not token:
            raise ConfigError(
                f"environment variable {self.name} is set but empty: give the token, "
                "or unset it to serve without one"
            )
        if len(token) < self.min_length or not _TOKEN68.fullmatch(token):
            raise ConfigError(
                f"environment variable {self.name} is too short or holds a character a header "
                f"cannot carry: give at least {self.min_length} of A-Z a-z 0-9 - . _ ~ + / "
                "(e.g. python -c 'import secrets; print(secrets.token_urlsafe(32))'), "
                "or unset it"
            )
        remember_secret(token)
        return token


LOCK_TIMEOUT = Seconds("HOLODECK_LOCK_TIMEOUT", 60.0, 0.0, 86400.0)
#: A TTL under 0.1 s would lapse before the holder could renew it.
REDIS_LOCK_TTL = Seconds("HOLODECK_REDIS_LOCK_TTL", 30.0, 0.1, 3600.0)

SERVE_TOKEN = Token("HOLODECK_SERVE_TOKEN")

#: Every variable, for documentation and tests.
ALL: tuple[Seconds | Token, ...] = (LOCK_TIMEOUT, REDIS_LOCK_TTL, SERVE_TOKEN)
