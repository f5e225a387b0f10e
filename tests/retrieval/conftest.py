"""Fixtures of the retrieval tests: each runs on the local index and on a real Redis."""

from __future__ import annotations

import pytest
from test_hybrid_search import redis_database


@pytest.fixture(params=["local", "redis"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(backend: str, request: pytest.FixtureRequest) -> str:
    """The agent.yaml ``database:`` lines of the backend under test (empty: local)."""
    if backend == "local":
        return ""
    url = request.getfixturevalue("redis_url")
    return redis_database(url, request.getfixturevalue("redis_index_name"))
