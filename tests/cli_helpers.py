"""Run the real ``holodeck`` command in a project folder of the test's own.

By default the command runs in this process, through the same click group and error
handling the console script uses (``holodeck.cli.main``): argument parsing, logging set-up,
exit codes and what reaches stdout and stderr are all the real ones, but the interpreter
start, the imports and the model load are paid once per test worker instead of once per
command (most of the suite's time when every command was a new process). The process's
working directory, environment and standard streams are swapped for the call and restored.

A real process is used where one is the thing tested, or cannot be shared:
``own_process=True`` (signals, imports, what a shell sees at exit), a call from a thread
other than the main one (several commands at once), and every call when
``HOLODECK_TESTS_OWN_PROCESS=1`` is set (to check the suite agrees both ways).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import textwrap
import threading
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

_PACKAGE = str(Path(__file__).resolve().parent.parent / "holodeck")

#: Read once, before the tests' own fixture clears HOLODECK_* from the environment.
ALWAYS_OWN_PROCESS = os.environ.get("HOLODECK_TESTS_OWN_PROCESS") == "1"


def run_holodeck(
    *args: str,
    cwd: Path,
    home: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 240,
    own_process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``holodeck ARGS`` in ``cwd`` with ``HOME`` pointed at ``home`` (default: cwd/home).

    ``timeout`` bounds a command in its own process; in this one pytest-timeout does.
    """
    full_env = holodeck_env(cwd, home, env)
    in_thread = threading.current_thread() is not threading.main_thread()
    if own_process or ALWAYS_OWN_PROCESS or in_thread:
        return subprocess.run(
            [sys.executable, "-m", "holodeck", *args],
            cwd=cwd,
            env=full_env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    return _run_in_process(list(args), cwd, full_env, stdin)


def _run_in_process(
    args: list[str], cwd: Path, env: dict[str, str], stdin: str | None
) -> subprocess.CompletedProcess[str]:
    """The command as ``main()`` runs it, with its streams captured by click's runner."""
    from click.testing import CliRunner

    from holodeck.cli.main import cli

    runner = CliRunner()
    _forget_what_the_last_command_remembered()
    with (
        _working_directory(cwd),
        _environment(env),
        _imports_undone(),
        _loggers_restored(),
        _signals_restored(),
        _model_sessions_shared(),
    ):
        # obj as main() passes it; without exit_fast's os._exit, which would end the worker.
        result = runner.invoke(
            cli, args, input=stdin or "", obj={}, catch_exceptions=True, prog_name="holodeck"
        )
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # What the interpreter would print for an exception that escaped the command.
        assert result.exc_info is not None
        stderr += "".join(traceback.format_exception(*result.exc_info))
    return subprocess.CompletedProcess(["holodeck", *args], result.exit_code, result.stdout, stderr)


#: What holodeck keeps for the life of a process (warned-once sets, secrets to redact,
#: embedders by project), as ``module: names``: emptied before each command, as a new
#: process would start. tests/test_cli_helpers.py checks that this names every such
#: container in the package, so one added later cannot leak from one test into another.
PER_PROCESS_STATE = {
    "holodeck.ingest.skips": ("_warned",),
    "holodeck.redact": ("_secrets",),
    "holodeck.knowledge_base": ("_WARNED_CHUNK_SIZE", "_EMBEDDERS"),
    "holodeck.ownership": ("_WARNED_MOVED",),
    "holodeck.vectorstore.sqlite.side_files": ("_sound",),
}


def _forget_what_the_last_command_remembered() -> None:
    import importlib

    for module_name, names in PER_PROCESS_STATE.items():
        module = importlib.import_module(module_name)
        for name in names:
            getattr(module, name).clear()
    import holodeck.redact
    import holodeck.tracing

    holodeck.redact._pattern = None  # built from _secrets
    holodeck.tracing.reset()  # a new process traces only if it is asked to


@contextlib.contextmanager
def _signals_restored() -> Iterator[None]:
    """Signal handlers and the blocked-signal mask as they were: commands a test starts in
    its own process afterwards inherit both (an ignored SIGINT would make Ctrl-C do nothing)."""
    numbers = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE, signal.SIGCHLD)
    handlers = {n: signal.getsignal(n) for n in numbers}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [])
    try:
        yield
    finally:
        for number, handler in handlers.items():
            if handler is not None:  # None: set outside Python, never changed by it
                signal.signal(number, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


@contextlib.contextmanager
def _loggers_restored() -> Iterator[None]:
    """Levels a command set on loggers (a search quiets ``holodeck.ingest``) go with it."""
    loggers = [
        logging.getLogger(),
        *(
            logger
            for logger in logging.Logger.manager.loggerDict.values()
            if isinstance(logger, logging.Logger)
        ),
    ]
    kept = [(lg, lg.level, list(lg.handlers), lg.propagate, lg.disabled) for lg in loggers]
    try:
        yield
    finally:
        for logger, level, handlers, propagate, disabled in kept:
            logger.setLevel(level)
            logger.handlers[:] = handlers
            logger.propagate, logger.disabled = propagate, disabled
        known = {id(lg) for lg, *_ in kept}
        for logger in list(logging.Logger.manager.loggerDict.values()):
            if isinstance(logger, logging.Logger) and id(logger) not in known:  # made by it
                logger.setLevel(logging.NOTSET)
                logger.handlers.clear()
                logger.propagate = True


@contextlib.contextmanager
def _imports_undone() -> Iterator[None]:
    """Modules a command imported from a project (its function tools) and the folders it put
    on ``sys.path`` go afterwards: the next command imports the files as they are then."""
    modules, path = set(sys.modules), list(sys.path)
    try:
        yield
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if not file.startswith((sys.prefix, sys.base_prefix, _PACKAGE)):
                del sys.modules[name]


#: onnxruntime sessions by (model sha256, threads, optimised): what a new process would open
#: again is opened once per test worker. Sessions hold no per-call state (``run`` may be
#: called from several threads), so sharing one changes nothing a command computes.
_SESSIONS: dict[tuple[str | None, int, bool], Any] = {}


@contextlib.contextmanager
def _model_sessions_shared() -> Iterator[None]:
    from holodeck.embeddings.onnx_model import ModelFile

    opener = ModelFile.open_session

    def open_once(self: ModelFile, data: bytes, threads: int, optimize: bool = True) -> Any:
        key = (self.sha256, threads, optimize)
        if key[0] is None or key not in _SESSIONS:
            session = opener(self, data, threads, optimize)
            if key[0] is None:
                return session
            _SESSIONS[key] = session
        return _SESSIONS[key]

    with mock.patch.object(ModelFile, "open_session", open_once):
        yield


@contextlib.contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    before = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """``os.environ`` is exactly ``env`` for the call (a new process would see only it)."""
    before: dict[str, Any] = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


def ingest_argv(*args: str, window: int) -> list[str]:
    """The argv of a ``holodeck ingest ARGS`` process that embeds and commits in windows of
    ``window`` chunks instead of ``EMBED_WINDOW``. A test that kills or freezes an ingest
    between two commits needs a corpus of several windows; with small windows a small
    corpus has them, and the model embeds a quarter as much. Everything else is the real
    command in a real process."""
    code = (
        "import holodeck.ingest.embed_windows as w; "
        f"w.EMBED_WINDOW = {int(window)}; "
        "from holodeck.cli.main import main; main()"
    )
    return [sys.executable, "-c", code, "ingest", *args]


def holodeck_env(
    cwd: Path, home: Path | None = None, env: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment ``holodeck`` runs in: no real API keys, HOME of the test, no colour."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    full_env.pop("ANTHROPIC_API_KEY", None)
    full_env["HOME"] = str(home or (cwd / "home"))
    full_env["NO_COLOR"] = "1"
    full_env["COLUMNS"] = "200"
    if env:
        full_env.update(env)
    return full_env


def write(path: Path, text: str) -> Path:
    """Write dedented ``text`` to ``path``, creating folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line a user's mistake prints: exit 2, nothing else on stderr, no traceback."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]
