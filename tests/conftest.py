"""Shared fixtures: one real Redis (with the Query Engine) for the whole session, and one
real PostgreSQL with pgvector for the whole run (a database per xdist worker).

``REDIS_URL`` in the environment points the tests at an existing server instead; nothing is
started then. Each test gets its own index name (``redis_index_name``), removed afterwards,
so tests never see each other's chunks. The same for ``PG_URL`` and ``pg_index_name``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fake_openai import fake_openai  # noqa: F401  (the per-test fake LLM server fixture)
from filelock import FileLock
from postgres_server import PostgresServer, fresh_database
from postgres_server import drop_index as drop_pg_index
from redis_server import (  # tests/ is on sys.path (rootdir-relative conftest)
    RedisServer,
    drop_index,
)

#: Variables of the user's shell that would change what a test sees: their keys and endpoints
#: (a test must never reach a real LLM), holodeck's own settings, colour settings, and the
#: terminal size (pytest-xdist's workers set COLUMNS=80: a pty's own width would lose to it).
USER_VARIABLES = (
    "OPENAI_", "AZURE_", "ANTHROPIC_", "OLLAMA_", "HOLODECK_", "NO_COLOR", "COLUMNS", "LINES"
)  # fmt: skip


@pytest.fixture(autouse=True)
def isolated_from_the_user(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each test runs as a user with no ``~/.holodeck/config.yaml`` (which would send its
    knowledge bases to that user's Redis), no API keys and no HOLODECK_* settings, in
    process and in the subprocesses it starts, whatever the machine's own user has."""
    monkeypatch.setenv("HOME", str(tmp_path_factory.mktemp("home")))
    for name in list(os.environ):
        if name.startswith(USER_VARIABLES):
            monkeypatch.delenv(name)


@pytest.fixture(autouse=True)
def tracing_off() -> Iterator[None]:
    """Each test starts with tracing off and leaves it off (``--trace`` or an
    ``observability:`` block read in process would otherwise trace the tests after it)."""
    from holodeck import tracing

    yield
    tracing.reset()


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


@pytest.fixture(autouse=True)
def ctrl_c_as_a_shell_leaves_it() -> None:
    """SIGINT and SIGQUIT at their defaults in the kernel, as an interactive shell starts a
    command: the processes a test starts inherit ignored signals, and Python keeps an
    ignored SIGINT ignored (Ctrl-C then does nothing). Under pytest-xdist, in a full run,
    workers were seen passing SIGINT and SIGQUIT ignored to their children while Python's
    own view (``signal.getsignal``) still said default: something in C set them outside
    any test (not found yet); this puts them back before each test."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


#: The folder where the run's one PostgreSQL is recorded (set by the controlling process,
#: inherited by the xdist workers; no HOLODECK_ prefix, which each test's environment drops).
PG_RUN_DIR = "HDTEST_PG_RUN_DIR"


def pytest_configure(config: pytest.Config) -> None:
    """The controlling process (not an xdist worker) names the run's PostgreSQL folder; the
    server itself starts only when a test first asks for it."""
    if not hasattr(config, "workerinput") and PG_RUN_DIR not in os.environ:
        os.environ[PG_RUN_DIR] = tempfile.mkdtemp(prefix="holodeck-pgrun-")
        config.stash[_PG_OWNER] = True


def pytest_unconfigure(config: pytest.Config) -> None:
    """The controlling process stops the run's PostgreSQL, if a worker started one."""
    if not config.stash.get(_PG_OWNER, False):
        return
    run_dir = Path(os.environ.pop(PG_RUN_DIR))
    record = run_dir / "server.json"
    if record.is_file():
        started = json.loads(record.read_text())
        PostgresServer(started["port"], Path(started["folder"])).cleanup()
    shutil.rmtree(run_dir, ignore_errors=True)


_PG_OWNER = pytest.StashKey[bool]()


@pytest.fixture(scope="session")
def pg_url() -> str:
    """URL of a PostgreSQL database with pgvector: ``$PG_URL``, or this worker's own database
    on the run's one server (started by the first worker that needs it)."""
    env_url = os.environ.get("PG_URL")
    if env_url:
        return env_url
    run_dir = Path(os.environ[PG_RUN_DIR])
    record = run_dir / "server.json"
    with FileLock(str(run_dir / "server.lock")):
        if record.is_file():
            started = json.loads(record.read_text())
            server = PostgresServer(started["port"], Path(started["folder"]))
        else:
            server = PostgresServer()
            server.start()
            record.write_text(json.dumps({"port": server.port, "folder": str(server._dir)}))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    return fresh_database(server.url(), f"holodeck_{worker}")


@pytest.fixture
def pg_index_name(pg_url: str) -> Iterator[str]:
    """A fresh index name on the test PostgreSQL; its tables go afterwards."""
    name = f"hdtest_{uuid.uuid4().hex[:12]}"
    yield name
    drop_pg_index(pg_url, name)
