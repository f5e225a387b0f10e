"""The real ``holodeck`` in a real pseudo-terminal (pexpect), read back through a terminal
emulator (pyte): what a person at a ``rows`` x ``columns`` screen would see.

The environment is the test's own (the autouse fixture in conftest.py has already removed
the user's keys, colour and terminal-size settings), plus a HOME in the project and a TERM.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pyte


def spawn_holodeck(
    *args: str,
    cwd: Path,
    size: tuple[int, int],
    env: dict[str, str] | None = None,
    no_color: bool = True,
    timeout: float = 240,
) -> pexpect.spawn:
    """``holodeck ARGS`` on a terminal of ``size`` (rows, columns), HOME in ``cwd``."""
    full_env = dict(os.environ, HOME=str(cwd / "home"), TERM="xterm-256color")
    if no_color:
        full_env["NO_COLOR"] = "1"
    full_env.update(env or {})
    return pexpect.spawn(
        sys.executable,
        ["-m", "holodeck", *args],
        cwd=str(cwd),
        env=full_env,
        encoding="utf-8",
        dimensions=size,
        timeout=timeout,
    )


def screens(child: pexpect.spawn, size: tuple[int, int]) -> list[list[str]]:
    """Every screen ``child`` drew until it ended (one per read), rows right-stripped; the
    last is what stays on the terminal. Asserts the command exited 0."""
    rows, columns = size
    screen = pyte.Screen(columns, rows)
    stream = pyte.Stream(screen)
    frames: list[list[str]] = []
    while True:
        try:
            stream.feed(child.read_nonblocking(4096, timeout=child.timeout))
        except pexpect.EOF:
            break
        frames.append([row.rstrip() for row in screen.display])
    child.close()
    assert child.exitstatus == 0, "\n".join(frames[-1] if frames else [])
    return frames or [[]]


def final_screen(child: pexpect.spawn, size: tuple[int, int]) -> list[str]:
    """The non-blank rows left on the screen when ``child`` ended (it must exit 0)."""
    return [row for row in screens(child, size)[-1] if row.strip()]
