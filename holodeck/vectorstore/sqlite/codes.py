"""The 8-bit codes beside a vector index file: every vector of the file, one byte a dimension.

The inverted file's 4-bit codes are cheap to scan but too coarse to rank its candidates
(their error is as large as the gaps between the best scores); re-scoring thousands of
candidates exactly would mean thousands of reads from SQLite. These codes rank the
candidates in memory instead, so only the best few are read exactly. The file
(``<index file>.sq8``) is memory-mapped: a header, each dimension's low end and span, the ids
in ascending order, then the codes in the ids' order. It is written, checked and removed
with its index file, and never trusted when its header, size or count is not what it says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

SUFFIX = ".sq8"
_MAGIC = b"HDSQ8v1\x00"
_HEADER = len(_MAGIC) + 16  # magic, count (int64), dims (int64)


@dataclass(frozen=True)
class Scale:
    """Each dimension's low end and span: a code c stands for low + span * c / 255."""

    low: np.ndarray  # float32, (dims,)
    span: np.ndarray  # float32, (dims,)

    @staticmethod
    def of(sample: np.ndarray) -> Scale:
        """The scale covering ``sample``'s values in each dimension."""
        low = sample.min(axis=0).astype(np.float32)
        span = np.maximum(sample.max(axis=0) - low, 1e-6).astype(np.float32)
        return Scale(low, span)

    def encode(self, vectors: np.ndarray) -> np.ndarray:
        """The codes of ``vectors`` (values outside the scale clipped to its ends)."""
        scaled = (vectors - self.low) * (255.0 / self.span)
        return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


@dataclass(frozen=True)
class Codes:
    """A code file as read: ids ascending, and their codes."""

    scale: Scale
    ids: np.ndarray  # int64, ascending
    codes: np.ndarray  # uint8, (n, dims)

    @staticmethod
    def empty(scale: Scale) -> Codes:
        """No codes yet, on ``scale``."""
        dims = scale.low.shape[0]
        return Codes(scale, np.zeros(0, np.int64), np.zeros((0, dims), np.uint8))

    def scores(self, ids: np.ndarray, query: np.ndarray) -> np.ndarray:
        """Estimated ``vector @ query`` for each of ``ids`` (-inf for an id not held)."""
        at = np.minimum(np.searchsorted(self.ids, ids), max(self.ids.size - 1, 0))
        held = self.ids[at] == ids if self.ids.size else np.zeros(ids.size, dtype=bool)
        weights = (query * self.scale.span / 255.0).astype(np.float32)
        out = np.full(ids.size, -np.inf, dtype=np.float32)
        rows = at[held]
        out[held] = self.codes[rows].astype(np.float32) @ weights + float(query @ self.scale.low)
        return out


def write(path: str, scale: Scale, ids: np.ndarray, codes: np.ndarray) -> None:
    """Write a code file at ``path`` (ids ascending, codes in their order)."""
    with open(path, "wb") as fh:
        fh.write(_MAGIC)
        fh.write(np.array([ids.size, codes.shape[1]], dtype=np.int64).tobytes())
        fh.write(scale.low.astype(np.float32).tobytes())
        fh.write(scale.span.astype(np.float32).tobytes())
        fh.write(ids.astype(np.int64).tobytes())
        fh.write(np.ascontiguousarray(codes, dtype=np.uint8).tobytes())


def read(path: Path, dims: int) -> Codes:
    """The code file at ``path``, memory-mapped; ValueError when it is not whole and of
    ``dims`` dimensions, FileNotFoundError when it is missing."""
    if not path.is_file():
        raise FileNotFoundError(f"{path.name} is missing")
    size = path.stat().st_size
    with open(path, "rb") as fh:
        head = fh.read(_HEADER)
    if len(head) < _HEADER or head[: len(_MAGIC)] != _MAGIC:
        raise ValueError(f"{path.name} is not a code file")
    count, file_dims = (int(v) for v in np.frombuffer(head[len(_MAGIC) :], dtype=np.int64))
    if file_dims != dims or count < 0 or size != _HEADER + 8 * dims + count * (8 + dims):
        raise ValueError(f"{path.name} is cut or of another model")
    data = np.memmap(path, dtype=np.uint8, mode="r")
    offset = _HEADER
    low = np.frombuffer(data, np.float32, dims, offset)
    span = np.frombuffer(data, np.float32, dims, offset + 4 * dims)
    offset += 8 * dims
    ids = np.frombuffer(data, np.int64, count, offset)
    codes = np.frombuffer(data, np.uint8, count * dims, offset + 8 * count).reshape(count, dims)
    if count > 1 and not bool(np.all(ids[1:] > ids[:-1])):
        raise ValueError(f"{path.name} has its ids out of order")
    return Codes(Scale(low, span), ids, codes)


def path_of(index_path: Path) -> Path:
    """The code file of the index file at ``index_path``."""
    return index_path.with_name(index_path.name + SUFFIX)
