"""How redis-py's failures become holodeck's errors, each naming the redacted URL.

At start: an invalid URL, a refused login, a database the server does not have or a server
without the Query Engine is a ``ConfigError``, and an unreachable server the contract's
``ConnectionError`` (the caller falls back to another store). After that: a lost connection
is an ``IngestError``, never a silent switch of store in mid-work, and so is an index that
vanished; a query that ran out of its time budget is refused. redis-py's own messages name
only host and port.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit

import redis
from redisvl.exceptions import RedisVLError

from holodeck.errors import ConfigError, HoloDeckError, IngestError
from holodeck.redact import redact
from holodeck.vectorstore.redis import queries
from holodeck.vectorstore.redis.fields import text_of


def connect(url: str, shown: str, connect_timeout: float) -> redis.Redis:
    """A client for ``url`` (not connected yet); an invalid URL is a ``ConfigError`` naming
    ``shown``, the URL without its password. A path that is no database number (``/abc``)
    is refused too: redis-py would quietly use database 0."""
    path = urlsplit(url).path
    if path not in ("", "/") and not path[1:].isdigit():
        raise ConfigError(
            f"invalid Redis URL {shown}: {path!r} is not a database number; end the "
            f"connection string with /0 (the default, also when left out), /1, ..."
        )
    try:
        return redis.Redis.from_url(
            url,
            socket_connect_timeout=connect_timeout,
            socket_timeout=60,
            health_check_interval=30,
        )
    except ValueError as exc:
        raise ConfigError(f"invalid Redis URL {shown}: {redact(str(exc))}") from None


def index_names(client: redis.Redis, shown: str) -> set[str]:
    """The names of the server's indexes, once it answered a ping (ask it inside
    ``RedisErrors.guard``). A refused login or a server without the Query Engine is a
    ``ConfigError``: reachable, but not usable as it is configured."""
    try:
        client.ping()
    except redis.exceptions.AuthenticationError as exc:  # reachable, wrong credentials
        raise ConfigError(
            f"Redis at {shown} refused the login ({redact(str(exc))}): check the "
            f"user and password in the connection string"
        ) from None
    except redis.exceptions.ResponseError as exc:
        if "db index" not in str(exc).lower():
            raise
        db = client.connection_pool.connection_kwargs.get("db", 0)
        raise ConfigError(  # the URL's /N names a database the server does not have
            f"Redis at {shown} has no database {db} "
            f"({redact(str(exc))}): use a database number the server has (0 unless its "
            f"`databases` setting allows more) in the connection string"
        ) from None
    try:
        listed = client.execute_command("FT._LIST")
    except redis.exceptions.ResponseError as exc:
        raise ConfigError(
            f"Redis at {shown} has no Query Engine (RediSearch): use Redis 8 or "
            f"Redis Stack ({redact(str(exc))})"
        ) from None
    return {text_of(name) for name in listed}


class RedisErrors:
    """The translation for one adapter: its redacted ``url`` and ``index_name`` go into every
    message, and ``forget`` drops what it remembers of the index when the server may have
    lost it (a restart can bring it back empty)."""

    def __init__(self, url: str, index_name: str, forget: Callable[[], None]) -> None:
        self.url = url
        self.index_name = index_name
        self._forget = forget
        #: Until the adapter has connected, a lost connection is the contract's fallback case.
        self.connected = False

    @contextmanager
    def guard(self) -> Iterator[None]:
        """Turn a refused or lost connection into one error naming the redacted URL.

        Unreachable at start: the contract's ``ConnectionError`` (the caller falls back).
        Lost after that: an ``IngestError``, never a silent switch of store in mid-work.
        """
        try:
            yield
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise self.lost(exc) from exc
        except (RedisVLError, redis.exceptions.ResponseError) as exc:  # redisvl wraps redis-py's
            cause = _connection_cause(exc)
            if cause is not None:
                raise self.lost(cause) from exc
            if "no such index" in str(exc).lower():
                raise self.vanished() from exc
            raise

    @contextmanager
    def asking(self) -> Iterator[None]:
        """``guard`` for a query of the Query Engine asked with ``QUERY_TIMEOUT_MS``
        (``queries``): one that ran out of it (the server's error, or a reply that took
        the whole budget: partial under its ``return`` policy) is refused with one error,
        never used."""
        started = time.monotonic()
        try:
            with self.guard():
                yield
        except (RedisVLError, redis.exceptions.ResponseError) as exc:
            if "timeout limit" in str(exc).lower():
                raise self.timed_out() from exc
            raise
        if (time.monotonic() - started) * 1000 >= queries.QUERY_TIMEOUT_MS:
            raise self.timed_out()

    def timed_out(self) -> HoloDeckError:
        return HoloDeckError(
            f"Redis at {self.url} took {queries.QUERY_TIMEOUT_MS / 1000:g} s or more to answer "
            f"a query on index {self.index_name}; its answer would be partial, so none is "
            f"used: run the command again when the server is less busy"
        )

    def lost(self, exc: BaseException) -> Exception:
        self._forget()  # the server may come back empty (restart): read the meta again
        reason = redact(str(exc))
        if not self.connected:
            return ConnectionError(f"cannot use Redis at {self.url}: {reason}")
        return IngestError(
            f"lost the connection to Redis at {self.url} ({reason}); what is stored stays "
            f"consistent: run the command again once Redis is back, the re-run repairs the index"
        )

    def vanished(self) -> IngestError:
        self._forget()
        return IngestError(
            f"Redis index {self.index_name} at {self.url} no longer exists (server restarted "
            f"or flushed?); run the ingest again to rebuild it"
        )


def _connection_cause(exc: BaseException) -> BaseException | None:
    """The redis-py connection error somewhere in ``exc``'s chain, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
