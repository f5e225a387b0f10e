"""Files on web servers as a knowledge base's source, fetched into ``.holodeck/sources/``.

Each URL is one file, stored as ``<host>/<path>`` (``index.html`` for a path ending in
``/``). A URL fetched before is asked for again with its ``ETag`` (``If-None-Match``) and
``Last-Modified`` (``If-Modified-Since``): a server that answers 304 sends nothing and the
file stays as it was, mtime included, so the ingest finds it unchanged. A body equal to the
stored one is not rewritten either. A URL no longer listed loses its file (and so its
chunks). The standard library's ``urllib`` does the requests: a GET with two headers needs
no new dependency. A URL that cannot be fetched keeps its last copy, with one warning.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import time
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from holodeck.config.loader import SOURCES_DIR, ResolvedTool
from holodeck.config.vectorstore_tool import UrlSource
from holodeck.redact import redact

log = logging.getLogger("holodeck.ingest")

#: Seconds one request may take.
TIMEOUT = 60.0


def local_name(url: str) -> str:
    """Where a URL's file is kept below the files folder: ``host/path`` (``index.html``
    for a folder URL), with no ``..`` or empty parts."""
    parts = urlsplit(url)
    path = unquote(parts.path)
    name = path.rstrip("/").rsplit("/", 1)[-1] if not path.endswith("/") else ""
    pieces = [p for p in PurePosixPath(path).parts if p not in ("/", "", ".", "..")]
    if not name:
        pieces.append("index.html")
    host = (parts.hostname or "host") + (f"_{parts.port}" if parts.port else "")
    return "/".join([host, *pieces])


def _utc(entry: dict[str, Any]) -> str | None:
    """An entry's ``fetched_at`` as ISO 8601 UTC, or None when never fetched."""
    when = entry.get("fetched_at")
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(when)) if when else None


def _request(url: str) -> urllib.request.Request:
    """A GET of ``url``; a user and password in it go as HTTP Basic auth (urllib would take
    them for part of the host name)."""
    parts = urlsplit(url)
    headers = {"User-Agent": "holodeck"}
    if parts.username is not None:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")
        netloc = parts.hostname or ""
        netloc = f"[{netloc}]" if ":" in netloc else netloc
        netloc += f":{parts.port}" if parts.port else ""
        url = urlunsplit(parts._replace(netloc=netloc))
    return urllib.request.Request(url, headers=headers)


class WebFiles:
    """One tool's web files: fetch what changed, keep what did not, drop what is unlisted."""

    def __init__(self, spec: UrlSource, tool: str, folder: Path) -> None:
        self.spec = spec
        self.tool = tool
        self.folder = folder
        self.state_file = folder.parent / "state.json"

    @classmethod
    def of(cls, tool: ResolvedTool, project_root: Path) -> WebFiles | None:
        """The web files of a resolved tool, or None when its source is something else."""
        spec = tool.config.web
        if spec is None:
            return None
        return cls(spec, tool.name, project_root / SOURCES_DIR / tool.name / "files")

    def state(self) -> dict[str, dict[str, Any]]:
        """Per file (``local_name`` of its URL): ETag, Last-Modified, when last fetched."""
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def describe(self) -> list[dict[str, Any]]:
        """Each URL (credentials redacted) and when it was last fetched (None before the
        first fetch): for ``store info`` and ``config show``."""
        state = self.state()
        return [
            {"url": redact(url), "fetched_at": _utc(state.get(local_name(url), {}))}
            for url in self.spec.urls
        ]

    def url_of(self, doc_id: str) -> str:
        """The URL a stored document came from (its id is its name below the folder),
        credentials redacted."""
        return redact(next((u for u in self.spec.urls if local_name(u) == doc_id), ""))

    def sync(self) -> dict[str, int]:
        """Fetch every URL that changed; counts of ``fetched``, ``not_modified``, ``failed``
        and ``removed``."""
        self.folder.mkdir(parents=True, exist_ok=True)
        old = self.state()
        new: dict[str, dict[str, Any]] = {}
        counts = {"fetched": 0, "not_modified": 0, "failed": 0, "removed": 0}
        for url in self.spec.urls:
            name = local_name(url)  # the key: a URL may hold a credential, never stored
            entry = dict(old.get(name, {}))
            target = self.folder / name
            try:
                counts[self._get(url, entry, target)] += 1
                entry["fetched_at"] = time.time()
            except (urllib.error.URLError, OSError, ValueError) as exc:
                counts["failed"] += 1
                why = getattr(exc, "reason", None) or exc
                kept = (
                    "keeping the copy fetched "
                    + time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(entry["fetched_at"]))
                    if target.is_file() and "fetched_at" in entry
                    else "not ingested"
                )
                log.warning(
                    "%s: cannot fetch %s (%s); %s", self.tool, redact(url), redact(str(why)), kept
                )
            if target.is_file():
                new[name] = entry
        listed = {local_name(u) for u in self.spec.urls}
        for name in old:
            if name not in listed:
                gone = self.folder / name
                if gone.is_file():
                    gone.unlink()
                    counts["removed"] += 1
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(new, indent=2), encoding="utf-8")
        os.replace(tmp, self.state_file)
        return counts

    def _get(self, url: str, entry: dict[str, Any], target: Path) -> str:
        """One conditional GET; ``fetched`` or ``not_modified``."""
        request = _request(url)
        if target.is_file():
            if entry.get("etag"):
                request.add_header("If-None-Match", entry["etag"])
            if entry.get("last_modified"):
                request.add_header("If-Modified-Since", entry["last_modified"])
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                body = response.read()
                headers = response.headers
        except urllib.error.HTTPError as exc:
            if exc.code == 304 and target.is_file():
                return "not_modified"
            raise
        entry["etag"] = headers.get("ETag")
        entry["last_modified"] = headers.get("Last-Modified")
        if target.is_file() and target.read_bytes() == body:
            return "not_modified"  # the same bytes: the file (and its mtime) stay
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f".{target.name}.part")  # hidden: never discovered
        part.write_bytes(body)
        os.replace(part, target)
        return "fetched"
