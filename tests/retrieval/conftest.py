"""Fixtures of the retrieval tests: each runs on the local index, a real Redis and a real
PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from test_hybrid_search import postgres_database, redis_database

from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.postgres import PostgresIndexAdapter
from holodeck.vectorstore.redis.adapter import RedisIndexAdapter
from holodeck.vectorstore.store import VectorStore


@pytest.fixture(params=["local", "redis", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def database(backend: str, request: pytest.FixtureRequest) -> str:
    """The agent.yaml ``database:`` lines of the backend under test (empty: local)."""
    if backend == "local":
        return ""
    if backend == "postgres":
        url = request.getfixturevalue("pg_url")
        return postgres_database(url, request.getfixturevalue("pg_index_name"))
    url = request.getfixturevalue("redis_url")
    return redis_database(url, request.getfixturevalue("redis_index_name"))


@pytest.fixture
def empty_store(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> Iterator[VectorStore]:
    """An empty store of the backend under test (a fresh Redis index), closed afterwards."""
    if backend == "local":
        store = VectorStore(LocalIndexAdapter(tmp_path / "index"))
    elif backend == "postgres":
        url = request.getfixturevalue("pg_url")
        store = VectorStore(PostgresIndexAdapter(url, request.getfixturevalue("pg_index_name")))
    else:
        url = request.getfixturevalue("redis_url")
        store = VectorStore(RedisIndexAdapter(url, request.getfixturevalue("redis_index_name")))
    yield store
    store.adapter.close()
