"""The spans of an ingest (``holodeck.tracing``): what one run did, and each file.

Its own module because the pass (``pipeline``) and its windows (``embed_windows``) both
report files.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from holodeck import tracing
from holodeck.ingest.summary import IngestSummary


def traced_counts(summary: IngestSummary) -> dict[str, int | bool]:
    """What a span of an ingest says: files by what happened to them, chunks by how."""
    return {
        "files.new": summary.new,
        "files.changed": summary.changed,
        "files.unchanged": summary.unchanged + summary.touched,
        "files.moved": summary.moved,
        "files.removed": summary.removed,
        "files.skipped": summary.skipped + summary.failed,
        "chunks.embedded": summary.chunks_embedded,
        "chunks.reused": summary.chunks_reused,
        "chunks.total": summary.chunks_total,
        "rebuilt": summary.rebuilt,
    }


def file_span(rel_path: str, size: int | None, **attributes: object) -> None:
    """One ``holodeck.ingest.file`` span: a file's type, size and what became of it."""
    if not tracing.on():
        return
    with tracing.span("holodeck.ingest.file") as span:
        span.set_all(
            {
                "holodeck.file.path": rel_path,
                "holodeck.file.type": PurePosixPath(rel_path).suffix.lower() or None,
                "holodeck.file.size": size,
                **{f"holodeck.file.{k}": v for k, v in attributes.items()},
            }
        )
