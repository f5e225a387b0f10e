"""Shared fixtures: one real Redis (with the Query Engine) for the whole session.

``REDIS_URL`` in the environment points the tests at an existing server instead; nothing is
started then. Each test gets its own index name (``redis_index_name``), removed afterwards,
so tests never see each other's chunks.
"""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Callable, Iterator

import pytest
import redis
from redis_server import RedisServer  # tests/ is on sys.path (rootdir-relative conftest)


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
    client = redis.Redis.from_url(redis_url)
    try:
        with contextlib.suppress(redis.exceptions.ResponseError):  # never created / dropped
            client.execute_command("FT.DROPINDEX", name, "DD")
        keys = list(client.scan_iter(match=f"{name}:*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
    finally:
        client.close()


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
