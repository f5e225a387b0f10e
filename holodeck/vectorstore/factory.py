"""Open the index a tool's resolved database names, falling back to the embedded one.

The one place that maps configuration to an adapter: ``None`` (no database anywhere) is the
embedded ``local`` index under ``.holodeck/index/<tool>``; ``redis`` is the Redis Query
Engine, ``postgres`` PostgreSQL with pgvector. When the server cannot be reached at start,
the tool contract (docs/contract.md) asks for a warning and a fallback to the embedded store;
the returned note says so, for summaries and ``config show``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from holodeck.config.vectorstore_tool import DatabaseConfig
from holodeck.errors import HoloDeckError
from holodeck.extras import require
from holodeck.redact import redact_url
from holodeck.vectorstore.adapter import IndexAdapter
from holodeck.vectorstore.local import LocalIndexAdapter

if TYPE_CHECKING:
    from holodeck.vectorstore.postgres import PostgresIndexAdapter
    from holodeck.vectorstore.redis.adapter import RedisIndexAdapter

log = logging.getLogger("holodeck.vectorstore")


@dataclass
class OpenedIndex:
    """An adapter and, when it is not the configured one, why."""

    adapter: IndexAdapter
    fallback_reason: str | None = None


def local_index_folder(project_root: Path, tool_name: str) -> Path:
    """Where the embedded default keeps a tool's index."""
    return project_root / ".holodeck" / "index" / tool_name


def open_index(
    database: DatabaseConfig | None,
    project_root: Path,
    tool_name: str,
    rebuild_unreadable: bool = False,
) -> OpenedIndex:
    """The adapter for a tool; its server unreachable -> WARNING and the embedded local index.

    ``rebuild_unreadable`` (``--force-ingest``): a local index that cannot be read is moved
    aside and started anew instead of refused.
    """
    if database is None:
        folder = local_index_folder(project_root, tool_name)
        return OpenedIndex(LocalIndexAdapter(folder, rebuild_unreadable=rebuild_unreadable))
    try:
        adapter = SERVERS[database.provider](database)
        adapter.describe()  # connects: fail here, at start, not in the middle of work
    except ConnectionError as exc:
        reason = redact_url(str(exc))
        url = redact_url(database.connection_string)
        log.warning(
            "%s at %s is unreachable (%s); tool %s falls back to the embedded local index",
            SERVER_NAMES[database.provider],
            url,
            reason,
            tool_name,
        )
        folder = local_index_folder(project_root, tool_name)
        return OpenedIndex(
            LocalIndexAdapter(folder, rebuild_unreadable=rebuild_unreadable),
            fallback_reason=_unreachable(database.provider, url),
        )
    return OpenedIndex(adapter)


def _redis_adapter(database: DatabaseConfig, **options: Any) -> RedisIndexAdapter:
    """A Redis adapter for a database section (imported here: redisvl loads slowly)."""
    require("redis", "redis", "redisvl", feature="database provider redis")
    from holodeck.vectorstore.redis.adapter import RedisIndexAdapter

    return RedisIndexAdapter(
        database.connection_string,
        index_name=database.index_name,
        algorithm=database.vector_algorithm,
        metric=database.distance_metric,
        **options,
    )


def _postgres_adapter(database: DatabaseConfig, **options: Any) -> PostgresIndexAdapter:
    """A PostgreSQL adapter for a database section (imported here, as Redis's is)."""
    require("postgres", "psycopg", "pgvector", feature="database provider postgres")
    from holodeck.vectorstore.postgres import PostgresIndexAdapter

    return PostgresIndexAdapter(
        database.connection_string,
        index_name=database.index_name,
        algorithm=database.vector_algorithm,
        metric=database.distance_metric,
        **options,
    )


#: The backend each ``database.provider`` names (a new server backend: one line here); no
#: ``database`` section is the embedded ``local`` index.
SERVERS: dict[str, Callable[..., IndexAdapter]] = {
    "redis": _redis_adapter,
    "postgres": _postgres_adapter,
}
#: How messages name each provider's server.
SERVER_NAMES = {"redis": "Redis", "postgres": "PostgreSQL"}


def probe(database: DatabaseConfig | None, timeout: float = 2.0) -> str:
    """Which store a tool would use right now, for ``config show``; opens no index.

    ``local``, ``redis``/``postgres``, ``local (fallback: redis at URL unreachable)`` as
    ``open_index`` would decide, or ``none (why)`` when the server answers but cannot be used
    (a wrong password, no Query Engine or pgvector: errors an ingest would stop on). Bounded
    by ``timeout`` whatever the network does (a thread, so a slow DNS lookup cannot hang the
    command).
    """
    if database is None:
        return "local"
    url = redact_url(database.connection_string)
    result: list[str] = []

    def attempt() -> None:
        try:
            adapter = SERVERS[database.provider](database, connect_timeout=timeout)
        except ConnectionError:
            result.append(f"local (fallback: {_unreachable(database.provider, url)})")
        except HoloDeckError as exc:
            result.append(f"none ({redact_url(str(exc))})")
        else:
            adapter.close()
            result.append(database.provider)

    worker = threading.Thread(target=attempt, name="holodeck-probe", daemon=True)
    worker.start()
    worker.join(timeout + 0.5)
    return result[0] if result else f"local (fallback: {_unreachable(database.provider, url)})"


def _unreachable(provider: str, url: str) -> str:
    """The fallback reason ``open_index`` and ``probe`` both report (``url`` redacted)."""
    return f"{provider} at {url} unreachable"
