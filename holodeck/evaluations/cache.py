"""Judge replies kept on disk, so a re-run of unchanged cases costs no call.

One SQLite file, ``.holodeck/cache/judge.sqlite3``, keyed by a hash of everything a reply
depends on: the metric, the judge (provider, model, endpoint) and the exact request (the
prompt holds the inputs). The folder ignores itself in git (a ``.gitignore`` of ``*``, as
pytest's cache does); CI can keep it between runs (``actions/cache`` on ``.holodeck/cache``).
A cache that cannot be opened is a warning, and the run goes on asking the judge.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

log = logging.getLogger("holodeck.evaluations")

CACHE_DIR = Path(".holodeck") / "cache"
CACHE_FILE = "judge.sqlite3"


def cache_key(*parts: Any) -> str:
    """A stable hash of JSON-able parts."""
    text = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class JudgeCache:
    """Replies by key; ``read=False`` (``--no-cache``) asks again but still stores the reply."""

    def __init__(self, root: Path, read: bool = True) -> None:
        self.read = read
        self.path = root / CACHE_DIR / CACHE_FILE
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored reply, or None (not stored, reading disabled, or the cache unusable)."""
        if not self.read:
            return None
        db = self._open()
        if db is None:
            return None
        with self._lock:
            row = db.execute("SELECT value FROM replies WHERE key = ?", (key,)).fetchone()
        if row is None:
            return None
        try:
            value = json.loads(row[0])
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def put(self, key: str, value: dict[str, Any]) -> None:
        """Store a reply (replacing an older one of the same key)."""
        db = self._open()
        if db is None:
            return
        with self._lock:
            try:
                db.execute(
                    "INSERT OR REPLACE INTO replies (key, value, stored_at) VALUES (?, ?, ?)",
                    (key, json.dumps(value, ensure_ascii=False), time.time()),
                )
                db.commit()
            except sqlite3.Error as exc:
                self._give_up(exc)

    def close(self) -> None:
        """Close the database file."""
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    def _open(self) -> sqlite3.Connection | None:
        with self._lock:
            if self._db is not None or self._broken:
                return self._db
            try:
                folder = self.path.parent
                folder.mkdir(parents=True, exist_ok=True)
                ignore = folder / ".gitignore"
                if not ignore.exists():
                    ignore.write_text("# holodeck's judge cache: not for git\n*\n", "utf-8")
                db = sqlite3.connect(self.path, timeout=30, check_same_thread=False)
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(
                    "CREATE TABLE IF NOT EXISTS replies "
                    "(key TEXT PRIMARY KEY, value TEXT NOT NULL, stored_at REAL NOT NULL)"
                )
                db.commit()
            except (OSError, sqlite3.Error) as exc:
                self._give_up(exc)
                return None
            self._db = db
            return db

    def _give_up(self, exc: BaseException) -> None:
        if not self._broken:
            log.warning(
                "The judge cache %s cannot be used (%s); judge calls are not cached in this run",
                self.path,
                exc,
            )
        self._broken = True
