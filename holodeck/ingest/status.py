"""Where an ingest stands, for a progress display that moves with the work.

An ingest's time is the model's time, and the model's time follows tokens, not files: one
long PDF can take longer than hundreds of notes. So progress is counted in tokens
embedded, against an estimate of the tokens to embed: exact for the files already chunked,
and for the files still ahead, their size times the tokens per byte seen so far in files of
the same kind (a PDF's bytes hold far fewer tokens than a text file's).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath

from holodeck.ingest.discover import SourceFile

#: Tokens per byte assumed before any file of a kind was chunked (English text: ~4 bytes).
DEFAULT_TOKENS_PER_BYTE = 0.25
#: ... and for the kinds whose bytes hold far fewer: real manuals' PDFs chunk to 0.07 tokens
#: a byte (fonts and images take the rest; docs/ingestion.md, "A first ingest").
PRIOR_TOKENS_PER_BYTE = {".pdf": 0.07}


@dataclass(frozen=True)
class IngestStatus:
    """A snapshot for the display, sent when a window starts embedding, after every
    embedding call and after every finished file."""

    files_todo: int
    files_done: int = 0
    chunks_embedded: int = 0
    tokens_embedded: int = 0
    #: Tokens this run will embed in all: an estimate until the last file is chunked.
    tokens_total: int = 0
    #: The file being embedded now (with ``(+N)`` other files embedded with it, or, for a
    #: file bigger than a window, ``(120/900 chunks)`` of it); empty until the model starts.
    current: str = ""


@dataclass
class Progress:
    """Callbacks for a progress display; all optional.

    ``start(files, todo)`` once the plan is made; ``update(status)`` as chunks are embedded
    and files stored; ``advance(rel_path)`` each time a file is finished (stored or failed).
    """

    start: Callable[[int, int], None] = lambda files, todo: None
    advance: Callable[[str], None] = lambda rel_path: None
    update: Callable[[IngestStatus], None] = lambda status: None
    #: ``first_ingest(files, tokens, provider)`` once, before a library's first ingest: the
    #: files to ingest, the tokens expected from their sizes, the embedding provider ("":
    #: the local model).
    first_ingest: Callable[[int, int, str], None] = lambda files, tokens, provider: None
    #: ``reading(rel_path, pages read, pages)`` after each page of a PDF being converted;
    #: called from the thread that converts, not the one that embeds.
    reading: Callable[[str, int, int], None] = lambda rel_path, done, total: None


def expected_tokens(files: list[SourceFile]) -> int:
    """The tokens ``files`` should chunk to, from their sizes alone (before reading any)."""
    return round(
        sum(f.size * PRIOR_TOKENS_PER_BYTE.get(_kind(f), DEFAULT_TOKENS_PER_BYTE) for f in files)
    )


class TokenEstimate:
    """The running estimate of ``IngestStatus.tokens_total`` for one run's files."""

    def __init__(self, todo: list[SourceFile]) -> None:
        self._bytes_left: dict[str, int] = {}
        for f in todo:
            kind = _kind(f)
            self._bytes_left[kind] = self._bytes_left.get(kind, 0) + f.size
        self._seen_bytes: dict[str, int] = {}
        self._seen_tokens: dict[str, int] = {}
        self.known = 0  # tokens to embed of the files chunked so far

    def chunked(self, file: SourceFile, tokens_to_embed: int) -> None:
        """``file`` was chunked: ``tokens_to_embed`` of its tokens need the model."""
        kind = _kind(file)
        self._bytes_left[kind] -= file.size
        self._seen_bytes[kind] = self._seen_bytes.get(kind, 0) + file.size
        self._seen_tokens[kind] = self._seen_tokens.get(kind, 0) + tokens_to_embed
        self.known += tokens_to_embed

    def skipped(self, file: SourceFile) -> None:
        """``file`` will not be embedded (it failed): its bytes are no longer ahead."""
        self._bytes_left[_kind(file)] -= file.size

    def total(self) -> int:
        """Known tokens plus the estimate for the files not chunked yet."""
        seen_bytes = sum(self._seen_bytes.values())
        overall = (
            sum(self._seen_tokens.values()) / seen_bytes if seen_bytes else DEFAULT_TOKENS_PER_BYTE
        )
        ahead = 0.0
        for kind, left in self._bytes_left.items():
            seen = self._seen_bytes.get(kind, 0)
            ratio = self._seen_tokens[kind] / seen if seen else overall
            ahead += left * ratio
        return self.known + round(ahead)


def _kind(file: SourceFile) -> str:
    return PurePosixPath(file.rel_path).suffix.lower()
