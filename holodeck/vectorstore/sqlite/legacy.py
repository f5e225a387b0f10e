"""Reading the ``index.npz`` snapshots of earlier releases, for their one-way import into the
SQLite index (``LocalIndexAdapter`` writes what this reads; nothing here knows the index).

Vectors are reused as they are (nothing is re-embedded). The old file is renamed, not
deleted, so nothing stored is lost if the import is interrupted or the user goes back.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from holodeck.errors import IngestError
from holodeck.vectorstore.records import ChunkRecord, DocState, IndexInfo

log = logging.getLogger("holodeck.vectorstore")

#: The file earlier releases kept a tool's index in.
LEGACY_FILE = "index.npz"
#: The only npz layout ever released.
NPZ_VERSION = 1


@dataclass
class NpzSnapshot:
    """Everything an ``index.npz`` held."""

    info: IndexInfo | None
    records: list[ChunkRecord]
    #: Document states by (tenant, library).
    states: dict[tuple[str, str], list[DocState]]


def read_npz(path: Path, set_aside_unreadable: bool) -> NpzSnapshot | None:
    """The snapshot in ``path``; an unreadable one is refused, or with
    ``set_aside_unreadable`` renamed out of the way (None: nothing to import)."""
    try:
        with np.load(path, allow_pickle=False) as data:
            vectors = data["vectors"].astype(np.float32, copy=False)
            meta = json.loads(data["meta"].tobytes().decode("utf-8"))
        if meta.get("version") != NPZ_VERSION:
            raise ValueError(f"format version {meta.get('version')!r}, expected {NPZ_VERSION}")
    except Exception as exc:  # BadZipFile, truncated arrays, bad JSON, another version
        if not set_aside_unreadable:
            raise IngestError(
                f"{path}: the old local index cannot be read ({exc}); run "
                f"`holodeck ingest --force-ingest` to rebuild the index without it"
            ) from exc
        aside = path.with_name(f"{path.name}.unusable-{time.strftime('%Y%m%d-%H%M%S')}")
        path.rename(aside)
        log.warning("The old local index %s was unreadable (%s); moved it to %s", path, exc, aside)
        return None
    info = meta.get("info")
    return NpzSnapshot(
        info=IndexInfo(info["embedding_model"], int(info["dimensions"])) if info else None,
        records=[ChunkRecord(vector=vectors[i], **rec) for i, rec in enumerate(meta["records"])],
        states={
            (group["tenant"], group["library"]): [DocState(**doc) for doc in group["docs"]]
            for group in meta["states"]
        },
    )


def mark_imported(path: Path, count: int, into: str) -> None:
    """Keep the old file beside the index under a name that is never imported again."""
    kept = path.with_name(f"{path.name}.imported")
    path.rename(kept)
    log.info(
        "Imported %d chunks from %s into %s (nothing re-embedded); the old file is kept as %s "
        "and can be deleted",
        count, path.name, into, kept.name,
    )  # fmt: skip
