"""A postings file's bytes: every term's rows read out of FTS5 (``fts5vocab``), written
after a header naming each array's type, length and offset, and memory-mapped back
read-only. Apart from ``postings``, which decides when a file is written and which one a
search may trust.
"""

from __future__ import annotations

import itertools
import json
import sqlite3
from pathlib import Path

import numpy as np

from holodeck.vectorstore.progress import build_progress

_MAGIC = b"HOLODECK-POSTINGS-1\n"
_ALIGN = 64
#: Term occurrences read from FTS5 per step while a file is built (memory stays bounded).
_BUILD_OCCURRENCES = 2_000_000


class PostingsFile:
    """A postings file, memory-mapped read-only: a search reads only its terms' pages."""

    def __init__(self, path: Path) -> None:
        if not path.is_file():
            raise FileNotFoundError(f"{path.name} is missing")
        # a plain array over the map: numpy's memmap class adds a Python call to every slice
        data = np.memmap(path, dtype=np.uint8, mode="r").view(np.ndarray)
        if bytes(data[: len(_MAGIC)]) != _MAGIC:
            raise ValueError("not a postings file")
        start = len(_MAGIC) + 8
        size = int(np.frombuffer(bytes(data[len(_MAGIC) : start]), dtype="<u8")[0])
        header = json.loads(bytes(data[start : start + size]))
        self.rows: int = header["rows"]
        arrays: dict[str, np.ndarray] = {}
        for name, (dtype, length, offset) in header["arrays"].items():
            end = offset + length * np.dtype(dtype).itemsize
            if end > data.size:
                raise ValueError("the file is cut short")
            arrays[name] = data[offset:end].view(dtype)
        self._term_bytes = arrays["term_bytes"]
        self._term_starts = arrays["term_starts"]
        self._starts = arrays["starts"]
        self.docs = arrays["docs"]
        self.freqs = arrays["freqs"]
        self.lengths = arrays["lengths"]
        self.postings = int(self.docs.size)

    def find(self, token: str) -> int | None:
        """The position of ``token`` among the file's terms (None: no row held it)."""
        key = token.encode()
        lo, hi = 0, self._term_starts.size - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if self._term(mid) < key:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < self._term_starts.size - 1 and self._term(lo) == key else None

    def _term(self, i: int) -> bytes:
        return bytes(self._term_bytes[self._term_starts[i] : self._term_starts[i + 1]])

    def rows_of(self, term: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The rows holding term ``term`` (ascending) and its weighted count in each."""
        if term is None:
            return np.zeros(0, np.int64), np.zeros(0, np.uint16)
        a, b = int(self._starts[term]), int(self._starts[term + 1])
        return self.docs[a:b], self.freqs[a:b]


def read_postings(db: sqlite3.Connection, least: int) -> tuple[dict[str, np.ndarray], int]:
    """Every term's rows and weighted counts, and each row's length, out of FTS5 (its
    progress shown from ``least`` words: ``build_progress``)."""
    db.execute("DROP TABLE IF EXISTS temp.postings_terms")
    db.execute("DROP TABLE IF EXISTS temp.postings_rows")
    db.execute("CREATE VIRTUAL TABLE temp.postings_terms USING fts5vocab(main, chunks_fts, row)")
    db.execute(
        "CREATE VIRTUAL TABLE temp.postings_rows USING fts5vocab(main, chunks_fts, instance)"
    )
    try:
        vocab = db.execute("SELECT term, cnt FROM temp.postings_terms").fetchall()
        rows = int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        last = int(db.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()[0])
        terms = [t for t, _ in vocab]
        if any(a >= b for a, b in itertools.pairwise(terms)):
            raise ValueError("FTS5's terms are not in order")
        counts = np.array([c for _, c in vocab], dtype=np.int64)
        lengths = np.zeros(last + 1, dtype=np.int64)
        docs_parts, freq_parts, starts = [], [], [np.zeros(1, np.int64)]
        held = 0
        words = int(counts.sum())
        with build_progress("keyword index", words, least, "words") as advance:
            for lo, hi in _term_blocks(counts):
                docs, freqs, per_term = _read_block(db, terms, counts, lo, hi, lengths)
                docs_parts.append(docs)
                freq_parts.append(freqs)
                starts.append(held + np.cumsum(per_term))
                held += int(per_term.sum())
                advance(int(counts[lo:hi].sum()))
    finally:
        db.execute("DROP TABLE temp.postings_terms")
        db.execute("DROP TABLE temp.postings_rows")
    blob = "".join(terms).encode()
    term_starts = np.zeros(len(terms) + 1, dtype=np.int64)
    term_starts[1:] = np.cumsum([len(t.encode()) for t in terms])
    arrays: dict[str, np.ndarray] = {
        "term_bytes": np.frombuffer(blob, dtype=np.uint8),
        "term_starts": term_starts,
        "starts": np.concatenate(starts),
        "docs": np.concatenate([np.zeros(0, np.int32), *docs_parts]),
        "freqs": np.concatenate([np.zeros(0, np.uint16), *freq_parts]),
        "lengths": lengths.astype(np.uint32),
    }
    return arrays, rows


def _term_blocks(counts: np.ndarray) -> list[tuple[int, int]]:
    """Ranges of terms holding about ``_BUILD_OCCURRENCES`` occurrences each."""
    blocks, lo, held = [], 0, 0
    for i, n in enumerate(counts.tolist()):
        held += n
        if held >= _BUILD_OCCURRENCES:
            blocks.append((lo, i + 1))
            lo, held = i + 1, 0
    if lo < counts.size:
        blocks.append((lo, int(counts.size)))
    return blocks


def _read_block(
    db: sqlite3.Connection,
    terms: list[str],
    counts: np.ndarray,
    lo: int,
    hi: int,
    lengths: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The postings of terms ``lo`` to ``hi``: rows, weighted counts (``idents`` twice)
    and postings per term; adds every occurrence to its row's length."""
    sql = "SELECT group_concat(doc * 2 + (col = 'idents')) FROM temp.postings_rows WHERE term >= ?"
    args: tuple[str, ...] = (terms[lo],)
    if hi < len(terms):
        sql, args = sql + " AND term < ?", (terms[lo], terms[hi])
    text = db.execute(sql, args).fetchone()[0] or ""
    # one string of numbers parsed in C: a Python object per occurrence would cost far more
    found = np.array(text.split(","), dtype=np.int64) if text else np.zeros(0, np.int64)
    if found.size != int(counts[lo:hi].sum()):
        raise ValueError("FTS5's occurrences changed while they were read")
    docs, weight = found >> 1, 1 + (found & 1)
    lengths += np.bincount(docs, minlength=lengths.size)
    term = np.repeat(np.arange(hi - lo), counts[lo:hi])
    new = np.ones(found.size, dtype=bool)
    new[1:] = (term[1:] != term[:-1]) | (docs[1:] != docs[:-1])
    same_term = term[1:] == term[:-1]
    if np.any(same_term & (docs[1:] < docs[:-1])):
        raise ValueError("FTS5's occurrences are not in row order")
    firsts = np.flatnonzero(new)
    freqs = np.minimum(np.add.reduceat(weight, firsts), np.iinfo(np.uint16).max)
    per_term = np.bincount(term[firsts], minlength=hi - lo)
    row_ids = np.int32 if lengths.size <= np.iinfo(np.int32).max else np.int64
    return docs[firsts].astype(row_ids), freqs.astype(np.uint16), per_term


def save(path: str, arrays: dict[str, np.ndarray], rows: int) -> None:
    """Write ``arrays`` after a header naming each one's type, length and offset."""
    layout: dict[str, tuple[str, int, int]] = {}
    offset = 0
    for name, array in arrays.items():
        layout[name] = (array.dtype.str, int(array.size), offset)
        offset += -(-array.nbytes // _ALIGN) * _ALIGN
    # offsets count from the end of the header, padded: fix them once its size is known
    draft = json.dumps({"rows": rows, "arrays": layout}).encode()
    base = -(-(len(_MAGIC) + 8 + len(draft) + 64) // _ALIGN) * _ALIGN
    header = json.dumps(
        {"rows": rows, "arrays": {n: (t, s, o + base) for n, (t, s, o) in layout.items()}}
    ).encode()
    assert len(_MAGIC) + 8 + len(header) <= base
    with open(path, "wb") as fh:
        fh.write(_MAGIC + np.array([len(header)], dtype="<u8").tobytes() + header)
        for name, array in arrays.items():
            fh.seek(layout[name][2] + base)
            fh.write(np.ascontiguousarray(array).tobytes())
        fh.truncate(base + offset)
