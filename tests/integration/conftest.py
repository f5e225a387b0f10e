"""Fixtures of the Redis integration tests: several fresh index names per test.

The session Redis (``redis_url``) is shared; every index a test makes is dropped afterwards
with all its keys, as ``redis_index_name`` does for one.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator

import pytest
from redis_server import drop_index


@pytest.fixture
def index_names(redis_url: str) -> Iterator[Callable[[], str]]:
    """Call it for a fresh index name on the session Redis; all are removed after the test."""
    names: list[str] = []

    def new() -> str:
        names.append(f"hdit_{uuid.uuid4().hex[:12]}")
        return names[-1]

    yield new
    for name in names:
        drop_index(redis_url, name)
