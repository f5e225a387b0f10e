"""What one client may send the REST server: a body size limit read as the body streams
in, and a rate of chat requests per client address (a token bucket per address).

Each refusal is a clear problem body: 413 names the limit, 429 says when to try again.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.requests import Request

#: The largest request body accepted: a message of 10,000 characters fits many times over.
MAX_BODY_BYTES = 256 * 1024
#: Chat requests per minute per client address, unless ``--rate-limit`` says otherwise.
DEFAULT_RATE_PER_MINUTE = 60
#: Client addresses remembered at most (the least recently seen are forgotten).
_MAX_CLIENTS = 10_000


class BodyTooLarge(Exception):
    """The request's body is larger than the server accepts."""


async def read_body(request: Request, limit: int = MAX_BODY_BYTES) -> bytes:
    """The whole body, or ``BodyTooLarge`` as soon as it (or its Content-Length) passes
    ``limit``: a huge body is never held in memory."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge(_too_large(limit))
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise BodyTooLarge(_too_large(limit))
    return bytes(body)


def _too_large(limit: int) -> str:
    return f"the request body is larger than {limit // 1024} KiB; send a shorter message"


class RateLimiter:
    """``per_minute`` requests per client, in bursts of up to ``per_minute``."""

    def __init__(self, per_minute: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # tokens, when

    def retry_after(self, client: str) -> int:
        """0 when ``client`` may go on (one request is counted), else the seconds to wait."""
        now = self._clock()
        rate = self.per_minute / 60.0
        tokens, then = self._buckets.pop(client, (float(self.per_minute), now))
        tokens = min(float(self.per_minute), tokens + (now - then) * rate)
        wait = 0
        if tokens >= 1.0:
            tokens -= 1.0
        else:
            wait = max(1, math.ceil((1.0 - tokens) / rate))
        self._buckets[client] = (tokens, now)
        while len(self._buckets) > _MAX_CLIENTS:
            self._buckets.popitem(last=False)
        return wait
