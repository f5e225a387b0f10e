"""Where a function tool's code runs: never on the thread of the chat's (or test's) loop.

A sync function runs in a daemon thread of its own, one per call; an async one on an event
loop that the function tools share, in a daemon thread too. The caller waits at most the
call's time limit and can be cancelled at any moment (Ctrl-C ends the turn at once, however
the function behaves); a call nobody waits for any more is left to finish on its own, since
Python cannot stop a thread, and a daemon thread never keeps the process from exiting.
Whatever the function raises comes back as an ``Exception``, ``SystemExit`` and
``KeyboardInterrupt`` included: signals reach only the main thread, so one raised in a
worker is the tool's own doing, never the user's Ctrl-C, which goes on interrupting the turn.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import threading
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

log = logging.getLogger("holodeck.tools")


class Ended(Exception):
    """The function ended with a ``SystemExit``, ``KeyboardInterrupt`` or the like."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(repr(cause))
        self.cause = cause


class TimedOut(Exception):
    """The call did not return within its time limit (it may still be running)."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"no result within {seconds:g} s")
        self.seconds = seconds


async def call(
    name: str, function: Callable[..., Any], arguments: dict[str, Any], timeout: float
) -> Any:
    """``function(**arguments)`` off the loop's thread: its result, or what it raised.

    Raises ``TimedOut`` past ``timeout`` seconds and ``Ended`` for a ``BaseException`` that is
    not an ``Exception``; a ``TimeoutError`` the function itself raised is passed on as is.
    """
    deadline = asyncio.timeout(timeout)
    try:
        async with deadline:
            if inspect.iscoroutinefunction(function):
                return await _on_tool_loop(function(**arguments))
            result = await _in_thread(name, function, arguments)
            if inspect.isawaitable(result):  # a callable that hands back a coroutine
                result = await _on_tool_loop(result)
            return result
    except TimeoutError:
        if deadline.expired():
            raise TimedOut(timeout) from None
        raise


def _in_thread(
    name: str, function: Callable[..., Any], arguments: dict[str, Any]
) -> asyncio.Future[Any]:
    """A future of the call, run in a new daemon thread (with the caller's context vars)."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():  # cancelled or timed out: nobody waits for it
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def work() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = context.run(function, **arguments)
        except Exception as exc:
            error = exc
        except BaseException as exc:  # SystemExit, KeyboardInterrupt: the tool's own
            error = Ended(exc)
            error.__cause__ = exc
        with suppress(RuntimeError):  # the loop has closed: nobody waits for it
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name=f"holodeck-tool-{name}", daemon=True).start()
    return future


async def _on_tool_loop(awaitable: Awaitable[Any]) -> Any:
    """``awaitable`` run on the function tools' loop; cancelling the caller cancels it there."""
    future = asyncio.run_coroutine_threadsafe(_guarded(awaitable), _ToolLoop.get())
    return await asyncio.wrap_future(future)


async def _guarded(awaitable: Awaitable[Any]) -> Any:
    """The awaitable's result; a ``SystemExit`` or ``KeyboardInterrupt`` it raises is an
    ``Ended``, which ends this task and not the loop (an asyncio task re-raises those two
    out of its loop), and so is a ``CancelledError`` it raised without being cancelled."""
    try:
        return await awaitable
    except asyncio.CancelledError as exc:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
        raise Ended(exc) from exc
    except Exception:
        raise
    except BaseException as exc:
        raise Ended(exc) from exc


class _ToolLoop:
    """The event loop of async function tools, in a daemon thread, started at first use.

    One loop for the life of the process: what a tool's module keeps between calls (a client,
    a lock) stays bound to a loop that is still running.
    """

    _lock = threading.Lock()
    _loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def get(cls) -> asyncio.AbstractEventLoop:
        with cls._lock:
            if cls._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(
                    target=cls._run, args=(loop,), name="holodeck-async-tools", daemon=True
                ).start()
                cls._loop = loop
            return cls._loop

    @staticmethod
    def _run(loop: asyncio.AbstractEventLoop) -> None:
        asyncio.set_event_loop(loop)
        while True:  # a callback a tool scheduled may stop the loop, or raise out of it
            try:
                loop.run_forever()
            except BaseException:
                log.debug("a function tool's callback ended their event loop", exc_info=True)
