"""A library's vector index file: its name on disk, its row of ``vector_files`` (what it
covers, and the seals of the file and its 8-bit codes), and the file as a process opens it,
its bytes and its codes' checked against their seals (``side_files``), then read and checked
against that row, so neither the search nor the upkeep ever trusts a file that is not what
was recorded.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodeck.vectorstore.sqlite import codes as sqlite_codes
from holodeck.vectorstore.sqlite import side_files
from holodeck.vectorstore.sqlite.side_files import Seal, check_seal, out_of_reach

FILE_PREFIX = "vectors-"
FILE_SUFFIX = ".ivf"
#: Files of earlier versions (usearch's HNSW graph): never read, rebuilt at the next ingest.
OLD_SUFFIXES = (".usearch",)

_FILES = (
    "SELECT lib, file, chunk_seq, change_seq, count, removed, checksum, stamp, "
    "codes_checksum, codes_stamp FROM vector_files"
)
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
    seal: Seal | None  # the file's, as written (None: an earlier version's file)
    codes_seal: Seal | None  # its codes'


@dataclass
class Base:
    """A library's approximate index file as this process opened it."""

    row: FileRow
    view: Any  # faiss.IndexIVFPQFastScan, read from the file
    codes: sqlite_codes.Codes  # the file's 8-bit codes, memory-mapped
    #: The stamps the file and its codes were found sound at, and those to record (read
    #: whole and found sound: their stamps changed), or None each.
    stamps: tuple[str | None, str | None] = (None, None)
    restamps: tuple[str | None, str | None] = (None, None)

    def unchanged(self, folder: Path) -> bool:
        """Whether the file and its codes are as they were found sound (two ``stat``)."""
        path = folder / self.row.file
        return side_files.unchanged(path, self.stamps[0]) and side_files.unchanged(
            sqlite_codes.path_of(path), self.stamps[1]
        )


def file_rows(db: sqlite3.Connection) -> dict[int, FileRow]:
    """Each library's row of ``vector_files``, by library."""
    rows = {}
    for lib, file, chunk_seq, change_seq, count, removed, *seals in db.execute(_FILES):
        seal, codes_seal = _seal(seals[0], seals[1]), _seal(seals[2], seals[3])
        rows[lib] = FileRow(lib, file, chunk_seq, change_seq, count, removed, seal, codes_seal)
    return rows


def _seal(checksum: int | None, stamp: str | None) -> Seal | None:
    return None if checksum is None else Seal(checksum, stamp)


def check_base(
    db: sqlite3.Connection, folder: Path | None, row: FileRow, dims: Callable[[], int]
) -> tuple[Base | None, str]:
    """The recorded file, read, or None and why it cannot be trusted."""
    assert folder is not None
    path = folder / row.file
    codes_path = sqlite_codes.path_of(path)
    if row.file.endswith(OLD_SUFFIXES):
        why = "an earlier version's kind of file"
    elif path.is_file() and not codes_path.exists():
        why = "an earlier version's kind of file (no 8-bit codes beside it)"
    else:
        why = out_of_reach(db, row.chunk_seq, row.change_seq)
    if why:
        return None, why
    checks = (check_seal(path, row.seal), check_seal(codes_path, row.codes_seal))
    why = next((checked.why for checked in checks if checked.why), "")
    if why:  # its bytes are not the ones written: not even parsed
        return None, why
    try:
        view = _open_view(path)
        codes = sqlite_codes.read(codes_path, dims())
    except (OSError, ValueError, RuntimeError) as exc:
        return None, f"it cannot be read ({str(exc).strip().splitlines()[-1]})"
    if view.ntotal != row.count:
        return None, f"it holds {view.ntotal:,} vectors, the database says {row.count:,}"
    if codes.ids.size != row.count:
        return None, f"its codes hold {codes.ids.size:,} vectors, not {row.count:,}"
    stamps = (checks[0].stamp, checks[1].stamp)
    return Base(row, view, codes, stamps, (checks[0].restamp, checks[1].restamp)), ""


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
