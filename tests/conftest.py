"""Shared fixtures: one real Redis (with the Query Engine) for the whole session.

``REDIS_URL`` in the environment points the tests at an existing server instead; nothing is
started then. Each test gets its own index name (``redis_index_name``), removed afterwards,
so tests never see each other's chunks.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator

import pytest
from redis_server import (  # tests/ is on sys.path (rootdir-relative conftest)
    RedisServer,
    drop_index,
)


@pytest.fixture(scope="session")
def redis_url() -> Iterator[str]:
    """URL of a Redis with the Query Engine: ``$REDIS_URL``, or a server started for the session."""
    env_url = os.environ.get("REDIS_URL")
    if env_url:
        yield env_url
        return
    with RedisServer() as server:
        yield server.url


@pytest.fixture
def redis_index_name(redis_url: str) -> Iterator[str]:
    """A fresh index name; the index, its chunks and every ``<name>:*`` key go afterwards."""
    name = f"hdtest_{uuid.uuid4().hex[:12]}"
    yield name
    drop_index(redis_url, name)


@pytest.fixture
def redis_server_factory() -> Iterator[Callable[..., RedisServer]]:
    """Start disposable servers (``RedisServer`` keyword arguments); all removed after the test."""
    servers: list[RedisServer] = []

    def start(**kwargs: object) -> RedisServer:
        server = RedisServer(**kwargs)  # type: ignore[arg-type]
        servers.append(server)
        server.start()
        return server

    yield start
    for server in servers:
        server.cleanup()
