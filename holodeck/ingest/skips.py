"""Skipped files, told once: one warning per file per run, and a one-line reminder after that.

A folder with a few images or a scanned PDF would otherwise repeat the same warnings on every
``ingest``, ``search``, ``chat`` and ``test``, and the one new problem would drown in them.
So each skip is warned the first time it is seen; the skips of a library are remembered in a
small file under the project's ``.holodeck/index/.skipped/`` (machine-local state, ignored
by git with the local index), and a run that meets the same skips again says ``N files
skipped (see -v)`` instead (``-v`` lists them). A file is warned at most once per process,
even when two tools read the same folder.

A file skipped for one of its tool's ``limits`` (a zip bomb, a huge PDF) cost its whole
conversion to find out, so the same file also keeps its size, mtime and content hash there,
with the limits it was measured against: the next run (and every ``search``, which ingests
first) skips it "as before" without converting it, until the file, its tool's limits or the
chunking rules change (``--force-ingest`` converts it again).

The memory is only a courtesy: failing to read or write it never stops an ingest (the
warnings are then repeated and the file converted again), and the list of warned skips is
only updated when the warnings could be seen.
"""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

log = logging.getLogger("holodeck.ingest")

#: Skips warned in this process: (absolute path, reason).
_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class OverLimitSkip:
    """A file skipped for a limit: its reason, and the file and limits it was measured on."""

    reason: str
    mtime: float
    size: int
    content_hash: str  # the pipeline's file hash (sha256 tagged with the chunking rules)
    limits: dict[str, Any]


def memory_path(project_root: Path, tenant_id: str, library_id: str) -> Path:
    """The file that remembers one library's skips (machine-local, next to the index)."""
    name = f"{_UNSAFE.sub('_', library_id)}--{_UNSAFE.sub('_', tenant_id)}.json"
    return project_root / ".holodeck" / "index" / ".skipped" / name


def remembered_over_limit(
    project_root: Path, tenant_id: str, library_id: str, limits: dict[str, Any]
) -> dict[str, tuple[float, int]]:
    """(mtime, size) by path of the files remembered as past ``limits``: what a reader's
    check for changed files counts as current along with the stored documents."""
    data = _read(memory_path(project_root, tenant_id, library_id), tenant_id)
    return {p: (e.mtime, e.size) for p, e in _over_limit(data).items() if e.limits == limits}


class SkipReport:
    """The skips of one library's ingest: warned, counted, remembered for the next run."""

    def __init__(
        self,
        project_root: Path,
        tenant_id: str,
        library_id: str,
        source: Path,
        limits: dict[str, Any] | None = None,
    ) -> None:
        self.memory = memory_path(project_root, tenant_id, library_id)
        self.library_id = library_id
        self.tenant_id = tenant_id
        self.source = source
        self.limits = limits or {}
        self.entries: list[tuple[str, str]] = []
        self.quiet = 0  # skips not warned because the last run had them too
        self.quiet_as_before = 0  # of those, files past a limit not converted again
        self.warned_new = 0
        #: Files past a limit: as remembered from the last run, and as this run found them.
        self.known_over_limit: dict[str, OverLimitSkip] = {}
        self.over_limit: dict[str, OverLimitSkip] = {}
        self.as_before: set[str] = set()
        self.previous = self._load()

    def over_limit_as_before(
        self, rel_path: str, mtime: float, size: int, digest: str, rules: str
    ) -> str:
        """The reason a file was skipped for a limit last time when it is still that file
        under the same limits and chunking ``rules`` (the tag of a file hash): same size and
        mtime, or same hash (``digest``; "" when not computed yet); else "". A file seen so
        is skipped without being converted."""
        known = self.known_over_limit.get(rel_path)
        if known is None or known.limits != self.limits:
            return ""
        if digest:
            same = digest == known.content_hash
        else:
            same = (known.mtime, known.size) == (mtime, size) and known.content_hash.endswith(rules)
        if not same:
            return ""
        self.over_limit[rel_path] = replace(known, mtime=mtime, size=size)
        self.as_before.add(rel_path)
        return known.reason

    def remember_over_limit(
        self, rel_path: str, reason: str, mtime: float, size: int, digest: str
    ) -> None:
        """A file just found past a limit: the next runs skip it unconverted until it changes."""
        self.over_limit[rel_path] = OverLimitSkip(reason, mtime, size, digest, self.limits)

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
            self.quiet_as_before += rel_path in self.as_before
        else:
            self.warned_new += 1
            again = " (as before: not converted again until it changes)"
            log.warning("Skipped %s: %s%s", rel_path, reason, again * (rel_path in self.as_before))

    def finish(self) -> None:
        """Say how many known skips were not repeated, and remember this run's skips."""
        if self.quiet:
            files = "file" if self.quiet == 1 else "files"
            other = " other" if self.warned_new else ""
            line = f"{self.library_id}: {self.quiet}{other} {files} skipped (see -v)"
            before = sorted(p for p, _ in self.entries if p in self.as_before)
            if self.quiet_as_before:
                more = f" and {len(before) - 3} more" if len(before) > 3 else ""
                line += (
                    "; skipped as before, past a limit (not converted again until changed): "
                    + ", ".join(before[:3])
                    + more
                )
            log.info("%s", line)
        self._save(told=log.isEnabledFor(logging.WARNING))

    def _load(self) -> set[tuple[str, str]]:
        self._stored = data = _read(self.memory, self.tenant_id)
        self.known_over_limit = _over_limit(data)
        try:
            return {(str(p), str(r)) for p, r in data.get("skipped", [])}
        except (ValueError, TypeError, AttributeError):
            return set()

    def _save(self, told: bool) -> None:
        """Write this run's skips; those warned only when a user could have seen them (only
        what was told is "known"), those past a limit always (they are a cost saved)."""
        if not self.entries and not self.memory.exists():
            return
        if told:
            skipped: Any = [list(e) for e in sorted(self.entries)]
        else:
            skipped = self._stored.get("skipped", [])
        data = {
            "tenant": self.tenant_id,
            "skipped": skipped,
            "over_limit": {p: asdict(e) for p, e in sorted(self.over_limit.items())},
        }
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


def _read(memory: Path, tenant_id: str) -> dict[str, Any]:
    """The memory file's content for ``tenant_id``; empty when missing, damaged or another's."""
    try:
        data = json.loads(memory.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("tenant") != tenant_id:
        return {}
    return data


def _over_limit(data: dict[str, Any]) -> dict[str, OverLimitSkip]:
    """The files remembered as past a limit, by path; entries that do not read are left out."""
    found: dict[str, OverLimitSkip] = {}
    entries = data.get("over_limit")
    if not isinstance(entries, dict):
        return found
    for path, entry in entries.items():
        try:
            skip = OverLimitSkip(**entry)
        except TypeError:
            continue
        if isinstance(skip.limits, dict) and isinstance(skip.content_hash, str):
            found[str(path)] = skip
    return found
