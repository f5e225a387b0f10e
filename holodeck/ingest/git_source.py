"""A git repository as a knowledge base's source: fetched into ``.holodeck/sources/<tool>/``.

The ``git`` command line does the work (through ``subprocess``, no library), so the user's own
git applies: credential helpers, ``~/.gitconfig`` (``url.insteadOf``, proxies), ssh keys and
agents. The clone is shallow (``--depth 1``: one commit's tree per fetch) and sparse to the
tool's ``path:``; holodeck never commits or pushes to it. The URL is given to each ``git fetch``
and never written into the clone's config, so a credential inside it (``https://user:token@``)
is not stored; every message shows it redacted.

What ingest then reads is the checked-out folder, like any source: unchanged files keep their
mtime across a checkout, so the index's own change detection (size and mtime, then content
hash: a renamed file is a move, not a re-embed) re-reads exactly the files a commit changed.
The commit a library was last ingested at is kept beside the clone (``state.json``) and named
by every search result (``result_place``) and by ``store info``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from holodeck.config.loader import SOURCES_DIR, ResolvedTool
from holodeck.config.vectorstore_tool import GitSource
from holodeck.errors import ConfigError
from holodeck.redact import redact

log = logging.getLogger("holodeck.ingest")

#: Seconds one git command may take (a large first clone over a slow link takes a while).
GIT_TIMEOUT = 600.0
#: ``user@host:path`` (scp-like ssh), which is a URL, not a local path.
_SCP_LIKE = re.compile(r"^[^/\s:]+@[^/\s:]+:")
#: Hosts whose file pages we can link to: the URL of ``path`` at a commit, lines L1-L2.
_BLOB_URLS = {
    "github.com": "https://github.com/{repo}/blob/{commit}/{path}{lines}",
    "gitlab.com": "https://gitlab.com/{repo}/-/blob/{commit}/{path}{lines}",
}
_LINES = re.compile(r"^lines? (\d+)(?:-(\d+))?$")


def redact_remote(url: str) -> str:
    """``url`` safe to print: any user info (a token given as the user included) is ``***``."""
    shown = re.sub(r"^([A-Za-z][A-Za-z0-9+.\-]*://)[^/@\s]+@", r"\1***@", url.strip())
    return redact(shown)


@dataclass
class GitState:
    """What the last fetch brought and what the index holds, kept in ``state.json``."""

    remote: str  # redacted
    ref: str
    path: str
    commit: str  # checked out
    fetched_at: float  # seconds since the epoch
    indexed_commit: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain values for ``state.json``, ``store info`` and ``config show``."""
        return {
            "remote": self.remote,
            "ref": self.ref,
            "path": self.path,
            "commit": self.commit,
            "fetched_at": self.fetched_at,
            "indexed_commit": self.indexed_commit,
        }


class GitRepository:
    """One tool's clone: fetch the configured ref, check it out, remember the commit."""

    def __init__(self, spec: GitSource, project_root: Path, tool: str, checkout: Path) -> None:
        self.spec = spec
        self.project_root = project_root
        self.tool = tool
        self.checkout = checkout
        self.state_file = checkout.parent / "state.json"

    @classmethod
    def of(cls, tool: ResolvedTool, project_root: Path) -> GitRepository | None:
        """The git repository of a resolved tool (its clone under ``.holodeck/sources``), or
        None when its source is a folder or file."""
        spec = tool.config.git
        if spec is None:
            return None
        return cls(spec, project_root, tool.name, project_root / SOURCES_DIR / tool.name / "repo")

    def describe(self) -> dict[str, Any]:
        """Remote (redacted), ref, path, the commit checked out and the one indexed, and when
        it was last fetched (None before the first fetch): for ``store info``, ``config show``."""
        state = self.state()
        if state is None:
            state = GitState(self.shown, self.spec.ref or "HEAD", self.spec.path or "", "", 0.0)
        out = state.as_dict()
        out["remote"] = self.shown
        out["commit"] = out["commit"] or None
        out["fetched_at"] = (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(state.fetched_at))
            if state.fetched_at
            else None
        )
        return out

    @property
    def url(self) -> str:
        """The URL git is given: a relative local path is relative to agent.yaml."""
        url = self.spec.git
        if "://" in url or _SCP_LIKE.match(url) or os.path.isabs(url):
            return url
        return str((self.project_root / url).resolve())

    @property
    def shown(self) -> str:
        """The remote as every message names it (credentials redacted)."""
        return redact_remote(self.spec.git)

    def state(self) -> GitState | None:
        """The state recorded by the last fetch, or None before the first."""
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
            return GitState(**data)
        except (OSError, ValueError, TypeError):
            return None

    def _save(self, state: GitState) -> None:
        tmp = self.state_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(state.as_dict(), indent=2), encoding="utf-8")
        os.replace(tmp, self.state_file)

    def sync(self) -> GitState:
        """Fetch the ref and check it out; when the remote cannot be reached and an earlier
        fetch brought a checkout, warn once (naming the remote and when it was fetched) and
        keep that; with none, refuse in one line."""
        try:
            return self._fetch()
        except _GitFailed as exc:
            state = self.state()
            if state is None or not self.checkout.is_dir():
                raise ConfigError(
                    f"tool {self.tool}: cannot fetch git source {self.shown}: {exc}; check the "
                    "URL, the network and git's credentials (`git ls-remote` the URL)"
                ) from None
            when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(state.fetched_at))
            log.warning(
                "%s: cannot reach git remote %s (%s); using what the last fetch brought "
                "(commit %s, fetched %s)",
                self.tool,
                self.shown,
                exc,
                state.commit[:12],
                when,
            )
            return state

    def _fetch(self) -> GitState:
        spec = self.spec
        self.checkout.mkdir(parents=True, exist_ok=True)
        if not (self.checkout / ".git").exists():
            self._git("init", "--quiet")
        if spec.path:
            self._git("sparse-checkout", "set", "--no-cone", f"/{spec.path}/")
        elif (self.checkout / ".git" / "info" / "sparse-checkout").exists():
            self._git("sparse-checkout", "disable")
        ref = spec.ref or "HEAD"
        self._git("fetch", "--quiet", "--depth=1", "--no-tags", self.url, ref, network=True)
        self._git("checkout", "--quiet", "--force", "--detach", "FETCH_HEAD")
        commit = self._git("rev-parse", "HEAD").strip()
        old = self.state()
        state = GitState(
            remote=self.shown,
            ref=ref,
            path=spec.path or "",
            commit=commit,
            fetched_at=time.time(),
            indexed_commit=old.indexed_commit if old else None,
        )
        self._save(state)
        return state

    def mark_indexed(self, commit: str) -> None:
        """Record that the index now holds ``commit`` (after an ingest of its checkout)."""
        state = self.state()
        if state is not None and state.indexed_commit != commit:
            state.indexed_commit = commit
            self._save(state)

    def changes(self, old: str, new: str) -> dict[str, int] | None:
        """What ``git diff --name-status -M old new`` says changed (counts by kind), or None
        when ``old`` is not in the clone (a new clone, a history rewritten and gc'd)."""
        if old == new:
            return {}
        try:
            self._git("cat-file", "-e", f"{old}^{{commit}}")
            args = ["diff", "--name-status", "-M", old, new]
            if self.spec.path:
                args += ["--", self.spec.path]
            out = self._git(*args)
        except _GitFailed:
            return None
        kinds = {"A": "added", "M": "modified", "D": "deleted", "R": "renamed"}
        counts: dict[str, int] = {}
        for line in out.splitlines():
            kind = kinds.get(line[:1], "other")
            counts[kind] = counts.get(kind, 0) + 1
        return counts

    def _git(self, *args: str, network: bool = False) -> str:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}  # never prompt: fail instead
        if network:
            env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")
        try:
            done = subprocess.run(
                ["git", "-C", str(self.checkout), *args],
                capture_output=True,
                text=True,
                env=env,
                timeout=GIT_TIMEOUT,
                check=False,
            )
        except FileNotFoundError:
            raise ConfigError(
                f"tool {self.tool}: its source is a git repository, and git is not installed "
                "(install git, or give a folder as source)"
            ) from None
        except subprocess.TimeoutExpired:
            raise _GitFailed(f"git {args[0]} took over {GIT_TIMEOUT:g} s") from None
        if done.returncode != 0:
            lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
            fatal = [ln for ln in lines if ln.startswith(("fatal:", "error:"))]
            why = (fatal or lines or [f"git {args[0]} exited with {done.returncode}"])[0]
            raise _GitFailed(
                redact_remote(redact(why.removeprefix("fatal: ").removeprefix("error: ")))
            )
        return done.stdout


class _GitFailed(Exception):
    """A git command failed; its message is git's last line, redacted."""


def blob_url(remote: str, commit: str, path: str, location: str) -> str | None:
    """A link to ``path`` at ``commit`` (and its lines) on github.com or gitlab.com; None for
    another host. ``remote`` is the configured URL (https, ssh or scp-like)."""
    m = re.match(r"^(?:[a-z+]+://)?(?:[^@/]+@)?([^/:]+)[:/](.+?)(?:\.git)?/?$", remote.strip())
    if not m or m.group(1).lower() not in _BLOB_URLS:
        return None
    host, repo = m.group(1).lower(), m.group(2).lstrip("/")
    lines = ""
    found = _LINES.match(location)
    if found:
        start, end = found.group(1), found.group(2)
        if host == "github.com":
            lines = f"#L{start}" + (f"-L{end}" if end else "")
        else:
            lines = f"#L{start}" + (f"-{end}" if end else "")
    return _BLOB_URLS[host].format(repo=repo, commit=commit, path=quote(path), lines=lines)
