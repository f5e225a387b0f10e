"""The locks of the Redis backend: one ingest per library at a time, one index creation.

A library's lock is a redis-py ``Lock`` with a TTL, renewed in the background while its holder
lives, so a holder that dies (crash, kill -9) frees the library once the TTL runs out. The
caller names the key (the key layout lives in ``index``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import redis
from redis.lock import Lock

from holodeck.envvars import REDIS_LOCK_TTL
from holodeck.errors import IngestRunning
from holodeck.redact import redact
from holodeck.vectorstore.redis.errors import RedisErrors

logger = logging.getLogger(__name__)


def create_lock(client: redis.Redis, key: str) -> Lock:
    """Serialises create/recreate across processes sharing the index."""
    return client.lock(key, timeout=60, blocking_timeout=60)


@contextmanager
def library_lock(
    client: redis.Redis,
    key: str,
    tenant_id: str,
    library_id: str,
    timeout: float,
    errors: RedisErrors,
) -> Iterator[None]:
    """Hold the library's lock (``key``) while the block runs, so two ingests never interleave.

    Waits at most ``timeout`` s, then refuses with ``IngestRunning``. The lock expires
    ``HOLODECK_REDIS_LOCK_TTL`` s (30) after its holder dies (crash, kill -9) and is renewed
    in the background while it lives.
    """
    ttl = REDIS_LOCK_TTL.read()
    lock = client.lock(key, timeout=ttl, sleep=0.1, blocking_timeout=timeout, thread_local=False)
    deadline = time.monotonic() + timeout
    with errors.guard():
        acquired = lock.acquire()
        remaining = deadline - time.monotonic()
        if not acquired and remaining > 0:  # redis-py stops a sleep short of its timeout
            time.sleep(remaining)
            acquired = lock.acquire(blocking=False)
    if not acquired:
        raise IngestRunning(
            f"another ingest of library {library_id!r} (tenant {tenant_id!r}) is running; "
            f"waited {timeout:g} s"
        )
    stop = threading.Event()
    keeper = threading.Thread(
        target=_keep_lock, args=(lock, stop, library_id, ttl), name="holodeck-redis-lock",
        daemon=True,
    )  # fmt: skip
    keeper.start()
    try:
        yield
    finally:
        stop.set()
        keeper.join()
        try:
            lock.release()
        except redis.exceptions.LockNotOwnedError:
            logger.warning(
                "the lock of library %r had expired before its release: another ingest "
                "may have run at the same time; re-run the ingest to repair the library",
                library_id,
            )
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            logger.warning(
                "could not release the lock of library %r at %s (%s); it expires in %g s",
                library_id, errors.url, redact(str(exc)), ttl,
            )  # fmt: skip


def _keep_lock(lock: Lock, stop: threading.Event, library_id: str, ttl: float) -> None:
    """Renew the lock's TTL until ``stop``; a failed renewal is logged (the lock may lapse)."""
    while not stop.wait(ttl / 3):
        try:
            lock.reacquire()
        except redis.exceptions.RedisError as exc:  # LockError included
            logger.warning(
                "could not renew the lock of library %r: %s", library_id, redact(str(exc))
            )
            return
