"""Damage a file as a failing disk or a stray write would: bytes changed, its size kept."""

from __future__ import annotations

from pathlib import Path


def flip_bytes(path: Path, start: float = 1 / 3, every: float = 1 / 50) -> int:
    """Invert one byte every ``every`` of ``path``'s length from ``start`` of the way in (the
    size stays the same); how many bytes were changed."""
    data = bytearray(path.read_bytes())
    step = max(1, int(len(data) * every))
    places = range(int(len(data) * start), len(data), step)
    for i in places:
        data[i] ^= 0xFF
    path.write_bytes(bytes(data))
    return len(places)
