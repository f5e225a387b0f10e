"""The ``HOLODECK_*`` environment variables: read when used, validated, named when wrong.

Each one is read by the code that needs it at the moment it needs it, never when a module
loads, so ``--help`` and the commands that do not use it never trip on it. A bad value
(not a number, ``nan``, ``inf``, out of range) is one ``ConfigError`` line (exit 2) naming
the variable, the value and what is allowed; unset or empty means the default.

- ``HOLODECK_LOCK_TIMEOUT``: seconds an ingest waits for another ingest of the same library.
- ``HOLODECK_REDIS_LOCK_TTL``: seconds a Redis library lock outlives a crashed ingest.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from holodeck.errors import ConfigError


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


LOCK_TIMEOUT = Seconds("HOLODECK_LOCK_TIMEOUT", 60.0, 0.0, 86400.0)
#: A TTL under 0.1 s would lapse before the holder could renew it.
REDIS_LOCK_TTL = Seconds("HOLODECK_REDIS_LOCK_TTL", 30.0, 0.1, 3600.0)

#: Every variable, for documentation and tests.
ALL = (LOCK_TIMEOUT, REDIS_LOCK_TTL)
