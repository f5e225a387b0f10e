"""Skipped files, told once: one warning per file per run, and a one-line reminder after that.

A folder with a few images or a scanned PDF would otherwise repeat the same warnings on every
``ingest``, ``search``, ``chat`` and ``test``, and the one new problem would drown in them.
So each skip is warned the first time it is seen; the skips of a library are remembered in a
small file under the project's ``.holodeck/index/.skipped/`` (machine-local state, ignored
by git with the local index), and a run that meets the same skips again says ``N files
skipped (see -v)`` instead (``-v`` lists them). A file is warned at most once per process,
even when two tools read the same folder.

The memory is only a courtesy: failing to read or write it never stops an ingest (the
warnings are then repeated), and it is only updated when the warnings could be seen.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
from pathlib import Path

log = logging.getLogger("holodeck.ingest")

#: Skips warned in this process: (absolute path, reason).
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


class SkipReport:
    """The skips of one library's ingest: warned, counted, remembered for the next run."""

    def __init__(self, project_root: Path, tenant_id: str, library_id: str, source: Path) -> None:
        name = f"{_UNSAFE.sub('_', library_id)}--{_UNSAFE.sub('_', tenant_id)}.json"
        self.memory = project_root / ".holodeck" / "index" / ".skipped" / name
        self.library_id = library_id
        self.tenant_id = tenant_id
        self.source = source
        self.entries: list[tuple[str, str]] = []
        self.quiet = 0  # skips not warned because the last run had them too
        self.warned_new = 0
        self.previous = self._load()

    def skip(self, rel_path: str, reason: str) -> None:
        """Record one skipped file; warn unless the last run or this process already did."""
        entry = (rel_path, reason)
        self.entries.append(entry)
        key = (os.path.join(self.source, rel_path), reason)
        with _warned_lock:
            seen = key in _warned
            _warned.add(key)
        if seen:
            log.debug("Skipped %s: %s (warned above)", rel_path, reason)
        elif entry in self.previous and not log.isEnabledFor(logging.DEBUG):
            self.quiet += 1
        else:
            self.warned_new += 1
            log.warning("Skipped %s: %s", rel_path, reason)

    def finish(self) -> None:
        """Say how many known skips were not repeated, and remember this run's skips."""
        if self.quiet:
            files = "file" if self.quiet == 1 else "files"
            other = " other" if self.warned_new else ""
            log.info("%s: %d%s %s skipped (see -v)", self.library_id, self.quiet, other, files)
        if log.isEnabledFor(logging.WARNING):  # only what a user could have seen is "known"
            self._save()

    def _load(self) -> set[tuple[str, str]]:
        self._stored: object = None  # the file's content as read: unchanged, it is not rewritten
        try:
            self._stored = data = json.loads(self.memory.read_text(encoding="utf-8"))
            if data.get("tenant") != self.tenant_id:
                return set()
            return {(str(p), str(r)) for p, r in data.get("skipped", [])}
        except (OSError, ValueError, TypeError, AttributeError):
            return set()

    def _save(self) -> None:
        if not self.entries and not self.memory.exists():
            return
        data = {"tenant": self.tenant_id, "skipped": [list(e) for e in sorted(self.entries)]}
        if data == self._stored:  # the usual re-run: same skips, nothing to write
            return
        tmp = None
        try:
            self.memory.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.memory.parent, suffix=".tmp")
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(data, out, indent=1)
            os.replace(tmp, self.memory)
        except OSError as exc:
            log.debug("Could not remember skipped files in %s: %s", self.memory, exc)
            if tmp is not None and os.path.exists(tmp):
                os.unlink(tmp)
