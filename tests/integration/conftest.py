"""Fixtures of the Redis integration tests: several fresh index names per test.

The session Redis (``redis_url``) is shared; every index a test makes is dropped afterwards
with all its keys, as ``redis_index_name`` does for one.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis


@pytest.fixture
def index_names(redis_url: str) -> Iterator[Callable[[], str]]:
    """Call it for a fresh index name on the session Redis; all are removed after the test."""
    names: list[str] = []

    def new() -> str:
        names.append(f"hdit_{uuid.uuid4().hex[:12]}")
        return names[-1]

    yield new
    client = redis.Redis.from_url(redis_url)
    try:
        for name in names:
            with contextlib.suppress(redis.exceptions.ResponseError):
                client.execute_command("FT.DROPINDEX", name, "DD")
            keys = list(client.scan_iter(match=f"{name}:*", count=1000))
            for start in range(0, len(keys), 1000):
                client.delete(*keys[start : start + 1000])
    finally:
        client.close()
