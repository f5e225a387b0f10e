"""How a long build inside a store (a vector index file, a postings file) shows its progress.

By default a log line at every tenth; a command on a terminal installs its own view (a bar)
with ``show_with``, so the storage layer draws nothing itself.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

log = logging.getLogger("holodeck.vectorstore")

#: A view of one build: ``(title, total, unit)`` -> a context giving ``advance(n)``.
ProgressView = Callable[[str, int, str], AbstractContextManager[Callable[[int], None]]]

_view: ProgressView | None = None


def show_with(view: ProgressView | None) -> None:
    """Show every later build's progress with ``view`` (None: log lines again)."""
    global _view
    _view = view


@contextlib.contextmanager
def build_progress(
    label: str, total: int, least: int, unit: str = "vectors"
) -> Iterator[Callable[[int], None]]:
    """Progress of a build of ``total`` ``unit``: nothing for one of fewer than ``least`` or
    under ``-q``; else the installed view, or a log line at every tenth."""
    if total < least or not log.isEnabledFor(logging.INFO):
        yield lambda n: None
        return
    if _view is not None:
        with _view(f"Building the {label}", total, unit) as shown_by_view:
            yield shown_by_view
        return
    done, shown, started = 0, 0, time.monotonic()

    def advance(n: int) -> None:
        nonlocal done, shown
        done += n
        if done * 10 // total > shown:
            shown = done * 10 // total
            log.info("Building the %s: %d%% of %s %s", label, 10 * shown, f"{total:,}", unit)

    yield advance
    log.info("Built the %s in %.1f s", label, time.monotonic() - started)
