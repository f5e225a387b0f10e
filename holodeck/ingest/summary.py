"""What one ingest did: the counts behind the one-line summary and ``--json``.

Its own module because the library-level pass (``pipeline``) and the windows that embed and
store the changed files (``embed_windows``) both count into it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class IngestSummary:
    """What one ingest did, for the one-line summary and ``--json``."""

    tool: str
    backend: str
    new: int = 0
    changed: int = 0
    touched: int = 0
    unchanged: int = 0
    removed: int = 0
    moved: int = 0
    skipped: int = 0
    failed: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    rebuilt: bool = False
    #: Each skipped file: ``path``, ``reason``, ``as_before`` (past a limit, not converted again).
    skipped_files: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain values for JSON output."""
        return asdict(self)

    @property
    def did_work(self) -> bool:
        """Files were ingested, moved or removed (a file failing again, as it did last time,
        and files only touched are not news)."""
        return bool(self.new + self.changed + self.removed + self.moved)

    def line(self) -> str:
        """The one-line summary a user reads after an ingest (``moved`` only when some were)."""
        moved = f"{self.moved} moved, " if self.moved else ""
        return (
            f"{self.tool}: {self.new} new, {self.changed} changed, {self.touched} touched, "
            f"{self.unchanged} unchanged, {self.removed} removed, {moved}"
            f"{self.skipped + self.failed} skipped; {self.chunks_embedded} chunks embedded, "
            f"{self.chunks_total} stored [{self.backend}] in {self.seconds:.2f} s"
        )
