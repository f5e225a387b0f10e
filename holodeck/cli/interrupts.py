"""Running a command's async work so that Ctrl-C and SIGTERM stop it cleanly.

Both cancel the work, so every ``finally`` runs (MCP servers are stopped, clients closed)
before the command ends with "Interrupted." (exit 130), as Ctrl-C always did.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from contextlib import suppress
from typing import Any, TypeVar

T = TypeVar("T")


def run_interruptible(work: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(work)`` where SIGTERM cancels the work as Ctrl-C does."""
    return asyncio.run(_guarded(work))


async def _guarded(work: Coroutine[Any, Any, T]) -> T:
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()
    terminated = False

    def terminate() -> None:
        nonlocal terminated
        terminated = True
        task.cancel()

    with suppress(NotImplementedError, RuntimeError):  # not on Windows, not off the main thread
        loop.add_signal_handler(signal.SIGTERM, terminate)
    try:
        return await work
    except asyncio.CancelledError:
        if terminated:
            raise KeyboardInterrupt from None
        raise
