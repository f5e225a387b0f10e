"""Import of the ``index.npz`` snapshots of earlier releases into the SQLite index, once.

Vectors are reused as they are (nothing is re-embedded). The old file is renamed, not
deleted, so nothing stored is lost if the import is interrupted or the user goes back.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from holodeck.errors import IngestError
from holodeck.vectorstore.records import ChunkRecord, DocState

if TYPE_CHECKING:
    from holodeck.vectorstore.adapters.local import LocalIndexAdapter

log = logging.getLogger("holodeck.vectorstore")

#: The only npz layout ever released.
NPZ_VERSION = 1


def import_npz(adapter: LocalIndexAdapter, path: Path, set_aside_unreadable: bool) -> None:
    """Copy every chunk and document state of ``path`` into ``adapter`` in one transaction."""
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
        return
    records = [ChunkRecord(vector=vectors[i], **rec) for i, rec in enumerate(meta["records"])]
    with adapter._writing() as db:
        if db.execute("SELECT count(*) FROM chunks").fetchone()[0] == 0:
            if meta.get("info"):
                db.executemany(
                    "INSERT OR REPLACE INTO meta VALUES (?, ?)",
                    [
                        ("embedding_model", meta["info"]["embedding_model"]),
                        ("dimensions", str(meta["info"]["dimensions"])),
                    ],
                )
            adapter._insert(db, records)
            for group in meta["states"]:
                lib = adapter._lib(db, group["tenant"], group["library"], create=True)
                assert lib is not None
                for doc in group["docs"]:
                    adapter._set_state(db, lib, DocState(**doc))
    kept = path.with_name(f"{path.name}.imported")
    path.rename(kept)
    log.info(
        "Imported %d chunks from %s into %s (nothing re-embedded); the old file is kept as %s "
        "and can be deleted",
        len(records), path.name, adapter.path.name, kept.name,
    )  # fmt: skip
