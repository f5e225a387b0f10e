"""The one way holodeck builds a rich ``Console``, so ``NO_COLOR`` means plain text everywhere.

rich alone already writes plain text to a pipe or a file, but under ``NO_COLOR`` it only drops
colours: bold, dim and underline still arrive as escape codes. https://no-color.org asks for
no styling at all, and scripts that capture a terminal session expect none, so here a set
``NO_COLOR`` turns every style off.
"""

from __future__ import annotations

import os
from typing import Any

from rich.console import Console


def no_color() -> bool:
    """True when ``NO_COLOR`` is set to anything but the empty string (no-color.org)."""
    return os.environ.get("NO_COLOR", "") != ""


def make_console(**kwargs: Any) -> Console:
    """A rich ``Console`` (``Console``'s own arguments) that styles nothing under ``NO_COLOR``."""
    if no_color():
        kwargs["color_system"] = None
    return Console(**kwargs)
