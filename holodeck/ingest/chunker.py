"""Splits a document's text into overlapping chunks that the embedding model reads whole.

Sizes are in the model's own tokens (the ``TokenCounter``), so no chunk is silently
truncated by the model. Cuts go at the best natural boundary in the second half of the token
budget: paragraph break, then sentence end, then line break, then any space, never inside a
word unless one "word" alone exceeds the budget. Among equally good boundaries the choice
depends only on the text around each boundary (a hash), not on where the chunk started, so
after an edit the chunk boundaries fall back in step with the old ones and unchanged chunks
keep their text, and with it their stored vectors.
"""

from __future__ import annotations

import re
import zlib
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from holodeck.embeddings.base import TokenCounter
from holodeck.errors import ConfigError, IngestError

# A gap between words: a whitespace run, or the empty gap after CJK sentence punctuation
# (CJK text has no spaces, so without it a whole paragraph would be one "word").
_CJK_SENTENCE_END = "\u3002\uff01\uff1f"  # ideographic full stop, fullwidth ! and ?
_GAP = re.compile(rf"\s+|(?<=[{_CJK_SENTENCE_END}])")
_PARAGRAPH_BREAK = re.compile(r"\n[^\S\n]*\n")
# A sentence end, possibly followed by closing quotes or brackets.
_SENTENCE_END = re.compile(rf"[.!?\u2026{_CJK_SENTENCE_END}][\"')\]\u201d\u2019\u00bb]*\Z")

_PARAGRAPH, _SENTENCE, _LINE, _SPACE = 4, 3, 2, 1
_HASH_CONTEXT = 32  # characters either side of a gap that decide ties between equal gaps


@dataclass(frozen=True)
class Chunk:
    """One chunk: stripped text, its exact token count, and its span in the input text."""

    text: str
    token_count: int
    start: int
    end: int


def chunk_text(
    text: str, counter: TokenCounter, chunk_size: int, chunk_overlap: int
) -> list[Chunk]:
    """Chunks of ``text`` of at most ``chunk_size`` tokens (special tokens included).

    Successive chunks share up to ``chunk_overlap`` tokens: the next chunk starts at the
    first word that begins at most that many tokens before the previous chunk's end.
    Raises ``ConfigError`` if the overlap leaves no room for new text.
    """
    budget = chunk_size - counter.special_tokens
    if budget < 1:
        raise ConfigError(
            f"chunk_size {chunk_size} leaves no room for text after the model's "
            f"{counter.special_tokens} special tokens"
        )
    if not 0 <= chunk_overlap < budget:
        raise ConfigError(
            f"chunk_overlap {chunk_overlap} must be at least 0 and less than chunk_size "
            f"{chunk_size} minus {counter.special_tokens} special tokens"
        )
    return _Chunker(text, counter, chunk_size, chunk_overlap).run()


class _Chunker:
    """State of one ``chunk_text`` call: the text tokenized once, and its word gaps."""

    def __init__(self, text: str, counter: TokenCounter, chunk_size: int, overlap: int) -> None:
        self.text = text
        self.counter = counter
        self.chunk_size = chunk_size
        self.budget = chunk_size - counter.special_tokens
        self.overlap = overlap
        spans = counter.offsets(text)
        self.tok_starts = [start for start, _ in spans]
        self.tok_ends = [end for _, end in spans]
        gaps = [(m.start(), m.end()) for m in _GAP.finditer(text)]
        self.gap_starts = [start for start, _ in gaps]
        self.gap_ends = [end for _, end in gaps]
        self.content_end = len(text.rstrip())

    def run(self) -> list[Chunk]:
        """Walk the text chunk by chunk; each verified with a real count."""
        chunks: list[Chunk] = []
        n = len(self.tok_starts)
        c0 = len(self.text) - len(self.text.lstrip())
        while c0 < self.content_end:
            s = bisect_right(self.tok_ends, c0)  # first token reaching past c0
            if s >= n:
                break
            limit = s + self.budget  # tokens s .. limit-1 fit, by the whole-text estimate
            while True:
                if limit >= n:
                    c1, in_word = len(self.text), False
                else:
                    c1, in_word = self._choose_cut(c0, s, limit)
                chunk = self._make_chunk(c0, c1)
                if chunk is None or chunk.token_count <= self.chunk_size:
                    break
                # Retokenizing the chunk alone gave more tokens than estimated: shrink.
                if min(limit, n) <= s + 1:
                    raise IngestError(
                        f"text at character {c0} does not fit in {self.chunk_size} tokens "
                        "even one token at a time"
                    )
                limit = max(s + 1, min(limit, n) - (chunk.token_count - self.chunk_size))
            if chunk is not None:
                chunks.append(chunk)
            if c1 >= self.content_end:
                break
            c0 = self._next_start(c0, c1, in_word)
        return chunks

    def _choose_cut(self, c0: int, s: int, limit: int) -> tuple[int, bool]:
        """Where the chunk starting at ``c0`` (token ``s``) ends, and whether inside a word."""
        hi = self.tok_starts[limit]  # cutting at or before hi keeps tokens < limit
        lo = self.tok_starts[s + max(1, (limit - s) // 2)]
        first, last = self._gaps_between(max(lo, c0 + 1), hi)
        if first == last:  # no gap in the second half: take any gap after c0
            first, last = self._gaps_between(c0 + 1, hi)
        if first < last:
            best = max(range(first, last), key=self._gap_rank)
            return self.gap_starts[best], False
        # One "word" longer than the budget (a base64 blob, a URL): cut between tokens.
        if hi > c0:
            return hi, True
        return self.tok_ends[s] if self.tok_ends[s] > c0 else c0 + 1, True

    def _gaps_between(self, lo: int, hi: int) -> tuple[int, int]:
        """Index range of gaps starting in ``[lo, hi]``."""
        return bisect_left(self.gap_starts, lo), bisect_right(self.gap_starts, hi)

    def _gap_rank(self, i: int) -> tuple[int, int, int]:
        """Boundary quality first; ties go to a hash of the surrounding text, then position."""
        start, end = self.gap_starts[i], self.gap_ends[i]
        gap = self.text[start:end]
        if _PARAGRAPH_BREAK.search(gap):
            level = _PARAGRAPH
        elif _SENTENCE_END.search(self.text, max(0, start - 4), start):
            level = _SENTENCE
        elif "\n" in gap:
            level = _LINE
        else:
            level = _SPACE
        context = self.text[max(0, start - _HASH_CONTEXT) : end + _HASH_CONTEXT]
        return level, zlib.crc32(context.encode("utf-8", "surrogatepass")), start

    def _next_start(self, c0: int, c1: int, in_word: bool) -> int:
        """Start of the next chunk: the first word start at most ``overlap`` tokens before c1."""
        if self.overlap:
            end_tok = bisect_left(self.tok_starts, c1)  # tokens starting before c1
            target = self.tok_starts[max(0, end_tok - self.overlap)]
            i = bisect_left(self.gap_ends, max(target, c0 + 1))
            if i < len(self.gap_ends) and self.gap_ends[i] < c1:
                return self.gap_ends[i]
        if in_word:
            return c1
        i = bisect_left(self.gap_ends, c1)  # the gap at c1: the next word starts at its end
        return self.gap_ends[i] if i < len(self.gap_ends) else len(self.text)

    def _make_chunk(self, c0: int, c1: int) -> Chunk | None:
        """The stripped text of ``[c0, c1)`` with its exact token count, or None if blank."""
        raw = self.text[c0:c1]
        stripped = raw.strip()
        if not stripped:
            return None
        start = c0 + len(raw) - len(raw.lstrip())
        return Chunk(stripped, self.counter.count(stripped), start, start + len(stripped))
