"""A library's vector index file: its name on disk, its row of ``vector_files`` (what it
covers), and the file as a process opens it, read with its 8-bit codes and checked against
that row, so neither the search nor the upkeep ever trusts a file that is not what was recorded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodeck.vectorstore.sqlite import codes as sqlite_codes
from holodeck.vectorstore.sqlite.side_files import out_of_reach

FILE_PREFIX = "vectors-"
FILE_SUFFIX = ".ivf"
#: Files of earlier versions (usearch's HNSW graph): never read, rebuilt at the next ingest.
OLD_SUFFIXES = (".usearch",)

_FILES = "SELECT lib, file, chunk_seq, change_seq, count, removed FROM vector_files"
#: Rows of a library the file made at (chunk_seq, change_seq) lacks.
SINCE = "AND (id > ? OR id IN (SELECT id FROM changes WHERE seq > ?))"


@dataclass(frozen=True)
class FileRow:
    """A library's row of ``vector_files``: the file and what it covers."""

    lib: int
    file: str
    chunk_seq: int  # every chunk id up to this was considered ...
    change_seq: int  # ... and every change up to this one
    count: int  # vectors in the file (removed ones excluded)
    removed: int  # entries removed from it since it was built


@dataclass
class Base:
    """A library's approximate index file as this process opened it."""

    row: FileRow
    view: Any  # faiss.IndexIVFPQFastScan, read from the file
    codes: sqlite_codes.Codes  # the file's 8-bit codes, memory-mapped


def file_rows(db: sqlite3.Connection) -> dict[int, FileRow]:
    """Each library's row of ``vector_files``, by library."""
    return {row[0]: FileRow(*row) for row in db.execute(_FILES)}


def check_base(
    db: sqlite3.Connection, folder: Path | None, row: FileRow, dims: Callable[[], int]
) -> tuple[Base | None, str]:
    """The recorded file, read, or None and why it cannot be trusted."""
    assert folder is not None
    path = folder / row.file
    if row.file.endswith(OLD_SUFFIXES):
        why = "an earlier version's kind of file"
    elif path.is_file() and not sqlite_codes.path_of(path).exists():
        why = "an earlier version's kind of file (no 8-bit codes beside it)"
    else:
        why = out_of_reach(db, row.chunk_seq, row.change_seq)
    if not why:
        try:
            view = _open_view(path)
            codes = sqlite_codes.read(sqlite_codes.path_of(path), dims())
        except (OSError, ValueError, RuntimeError) as exc:
            why = f"it cannot be read ({str(exc).strip().splitlines()[-1]})"
        else:
            if view.ntotal != row.count:
                why = f"it holds {view.ntotal:,} vectors, the database says {row.count:,}"
            elif codes.ids.size != row.count:
                why = f"its codes hold {codes.ids.size:,} vectors, not {row.count:,}"
            else:
                return Base(row, view, codes), ""
    return None, why


def _open_view(path: Path) -> Any:
    """The inverted file at ``path`` (faiss refuses a file cut short anywhere). Lists of
    int8 vectors (an earlier file) are memory-mapped; fast-scan lists faiss reads whole, 48
    bytes a 384-dim vector."""
    import faiss

    if not path.is_file():
        raise FileNotFoundError(f"{path.name} is missing")
    view = faiss.read_index(str(path), faiss.IO_FLAG_MMAP)
    if not isinstance(view, faiss.IndexIVF):
        raise ValueError("not an inverted file")
    return view
