"""Splits a document's text into overlapping chunks that the embedding model reads whole.

Sizes are in the model's own tokens (the ``TokenCounter``), so no chunk is silently
truncated by the model, and in characters too (``max_chunk_chars``): text the tokenizer
sees as one huge token (a megabyte of base64 on one line) is still cut, so no chunk, search
result or LLM context is ever longer than that bound. Cuts go at the best natural boundary
in the second half of the token budget: paragraph break, then sentence end, then line
break, then any space, never inside a word unless one "word" alone exceeds the budget.
Among equally good boundaries the choice is a draw seeded by the text around each boundary
(a hash) and weighted toward the end of the budget: chunks fill up (fewer chunks to embed
than with an unweighted draw), while the draw still depends mostly on the text, not on where
the chunk started, so after an edit the boundaries fall back in step with the old ones
within a chunk or two and unchanged chunks keep their text, and with it their stored
vectors.

The overlap is whole sentences where the text has them: the next chunk starts at the
earliest best boundary (paragraph, sentence, line, word) within ``chunk_overlap`` tokens of
the cut. A chunk then reads from a sentence's start, and repeats only what whole sentences
need. A cut between paragraphs splits no passage, so the chunk after it repeats nothing:
it starts at the next paragraph, and ends where it would have with the overlap, so the
cuts (and what an edit re-embeds) do not depend on it. Most cuts fall between paragraphs on
real documentation, so together these give the model fewer tokens than starting at the word
exactly ``chunk_overlap`` tokens back (see benchmarks/README.md, 'Chunking').

A chunk lies in one section: it ends before the first heading past its floor (below), so
the section it is labelled with is the one its text sits under, never a later heading it
runs into.

No chunk is a sliver: each cut lies past the previous chunk's end and leaves the chunk (and,
near the end of the text, what follows it) at least ``MIN_CHUNK_TOKENS``; a line or a table
row wider than the budget is cut inside itself instead of at the last gap before it (which
would give a run of chunks of one heading, each a word shorter than the last).

The text is tokenized in windows of a few dozen chunks, not whole: a 50 MB file costs the
same memory as a small one, and tokenizers that slow down on very long inputs never see one.
"""

from __future__ import annotations

import re
import zlib
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
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

_PARAGRAPH, _SENTENCE, _LINE, _SPACE, _IN_WORD = 4, 3, 2, 1, 0
_HASH_CONTEXT = 32  # characters either side of a gap that decide ties between equal gaps
#: How strongly the draw between equal gaps favours late ones: a gap's weight is its
#: distance from the chunk start to the power of this. 0 is an even draw (stablest, least
#: full); a higher power fills chunks more and re-embeds more chunks per edit, and past
#: this one it costs stability faster than it adds fill (see benchmarks/README.md,
#: 'Chunking').
_FILL_BIAS = 4

#: The fewest tokens a chunk holds (a quarter of the budget when that is less) unless its
#: document has no more: a chunk of a heading alone, or the last words of a line, answers
#: nothing and wins queries by its few words.
MIN_CHUNK_TOKENS = 32
#: Characters of prose per token, to weigh text the tokenizer sees as few tokens.
_PROSE_CHARS_PER_TOKEN = 4

#: Characters allowed per token of the budget: well above what prose, code or tables run
#: at, so only text the tokenizer cannot split (one endless "word") is cut by this bound.
MAX_CHARS_PER_TOKEN = 10
#: A tokenizer window holds this many chunks' worth of characters (at least).
_WINDOW_CHUNKS = 16
_MIN_WINDOW = 1 << 16


def max_chunk_chars(chunk_size: int) -> int:
    """The most characters a chunk of ``chunk_size`` tokens may hold."""
    return chunk_size * MAX_CHARS_PER_TOKEN


@dataclass(frozen=True)
class Chunk:
    """One chunk: stripped text, its exact token count, and its span in the input text."""

    text: str
    token_count: int
    start: int
    end: int


def chunk_text(
    text: str,
    counter: TokenCounter,
    chunk_size: int,
    chunk_overlap: int,
    sections: Sequence[int] = (),
) -> list[Chunk]:
    """Chunks of ``text`` of at most ``chunk_size`` tokens (special tokens included).

    Successive chunks share up to ``chunk_overlap`` tokens: the next chunk starts after the
    best boundary (paragraph, sentence, line, word) at most that many tokens before the
    previous chunk's end, the earliest of the best; after a cut between paragraphs, at the
    next paragraph. ``sections``: the offsets where a section starts (its heading); a chunk
    ends before the first of them past its floor, so it lies in one section.
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
    return _Chunker(text, counter, chunk_size, chunk_overlap, sections).run()


@dataclass
class _Window:
    """The tokens and word gaps of ``text[start:end]``, in offsets of the whole text.

    ``exact_end``: tokens that start before it are those of the whole text (the window
    ends at a word start, or it is the end of the text).
    """

    start: int
    end: int
    exact_end: int
    tok_starts: list[int]
    tok_ends: list[int]
    gap_starts: list[int]
    gap_ends: list[int]


class _Chunker:
    """State of one ``chunk_text`` call: the text, and the window tokenized around the cut."""

    def __init__(
        self,
        text: str,
        counter: TokenCounter,
        chunk_size: int,
        overlap: int,
        sections: Sequence[int] = (),
    ) -> None:
        self.text = text
        self.sections = sorted(sections)
        self.counter = counter
        self.chunk_size = chunk_size
        self.budget = chunk_size - counter.special_tokens
        self.overlap = overlap
        self.max_chars = max_chunk_chars(chunk_size)
        self.window_size = max(_MIN_WINDOW, _WINDOW_CHUNKS * self.max_chars)
        self.content_end = len(text.rstrip())
        self.w = self._window(len(text) - len(text.lstrip()))
        #: The fewest tokens a chunk may hold unless the text has no more (no slivers).
        self.floor = min(MIN_CHUNK_TOKENS, self.budget // 4)
        self._floor_chars = self.floor * _PROSE_CHARS_PER_TOKEN
        self.last_cut = -1  # where the previous chunk ended: every cut lies past it

    def run(self) -> list[Chunk]:
        """Walk the text chunk by chunk; each verified with a real count."""
        chunks: list[Chunk] = []
        c0 = len(self.text) - len(self.text.lstrip())
        head = c0  # where the chunk's text starts: c0, or past c0 after a paragraph break
        while c0 < self.content_end:
            w = self._window_for(c0)
            n = len(w.tok_starts)
            s = bisect_right(w.tok_ends, c0)  # first token reaching past c0
            if s >= n:
                if w.end >= self.content_end:
                    break  # only text the tokenizer ignores is left
                c0 = w.end  # a whole window the tokenizer ignores (control characters)
                continue
            limit = s + self.budget  # tokens s .. limit-1 fit, by the window's estimate
            while True:
                c1, level = self._choose_cut(w, c0, s, limit, max(c0, head))
                start = head if head < c1 else c0  # where the chunk's text starts
                chunk = self._make_chunk(w, start, c1)
                if chunk is None or chunk.token_count <= self.chunk_size:
                    break
                # Retokenizing the chunk alone gave more tokens than estimated: shrink.
                taken = bisect_left(w.tok_starts, c1)  # tokens starting before c1
                if taken <= s + 1:
                    raise IngestError(
                        f"text at character {c0} does not fit in {self.chunk_size} tokens "
                        "even one token at a time"
                    )
                limit = max(s + 1, taken - (chunk.token_count - self.chunk_size))
            if chunk is not None:
                chunks.append(chunk)
            if c1 >= self.content_end:
                break
            self.last_cut = c1
            # The overlap never reaches back to this chunk's own start (which, after a
            # paragraph cut, lies past c0): no chunk holds another, or a tail of it.
            c0 = self._next_start(w, c0, c1, level)
            if c0 <= start:
                c0 = c1 if level == _IN_WORD else self._word_after(w, c1)
            # A cut between paragraphs splits no passage: the next chunk's text starts at
            # the next paragraph, without the overlap. Its cut is still chosen from c0, so
            # the cuts (and the chunks an edit re-embeds) stay where the overlap put them.
            head = self._word_after(w, c1) if level == _PARAGRAPH else c0
        return chunks

    def _window_for(self, c0: int) -> _Window:
        """The current window if it covers a whole chunk from ``c0``, else a new one there."""
        w = self.w
        if w.start <= c0 and (w.end >= self.content_end or c0 + self.max_chars < w.exact_end):
            return w
        self.w = self._window(c0)
        return self.w

    def _window(self, start: int) -> _Window:
        """Tokenize from ``start`` to a word start about ``window_size`` characters on, or
        to the end of the text's content (trailing whitespace left out, so that a chunk
        holding the rest of the text is exactly the window and needs no count of its own)."""
        text = self.text
        end = exact_end = min(self.content_end, start + self.window_size)
        if end < self.content_end:
            # End where a word starts, past a whole chunk's worth of characters; inside one
            # endless "word" cut anywhere: every chunk there is cut by characters anyway.
            lo = max(start + self.max_chars + 1, end - self.max_chars)
            breaks = [m for m in _GAP.finditer(text, lo, end) if m.end() < end]
            if breaks:
                end, exact_end = breaks[-1].end(), breaks[-1].start()
        spans = self.counter.offsets(text[start:end])
        gaps = [(m.start(), m.end()) for m in _GAP.finditer(text, start, end)]
        return _Window(
            start=start,
            end=end,
            exact_end=exact_end,
            tok_starts=[start + a for a, _ in spans],
            tok_ends=[start + b for _, b in spans],
            gap_starts=[a for a, _ in gaps],
            gap_ends=[b for _, b in gaps],
        )

    def _choose_cut(
        self, w: _Window, c0: int, s: int, limit: int, text_start: int
    ) -> tuple[int, int]:
        """Where the chunk starting at ``c0`` (token ``s``) ends, and the level of that
        boundary (``_IN_WORD`` if it cuts a word). ``text_start``: where the chunk's text
        starts (past ``c0`` after a cut between paragraphs, which repeats no overlap).

        The cut lies past the previous chunk's end (no chunk is a tail of its neighbour) and
        leaves the chunk at least ``floor`` tokens, and the text after it too when the end
        of the text is near (no slivers); with no such gap (one line, or one table row,
        longer than the budget) it cuts inside that line, between tokens.
        """
        n = len(w.tok_starts)
        cap = c0 + self.max_chars
        if limit >= n and w.end >= self.content_end and self.content_end <= cap:
            return self.content_end, _PARAGRAPH  # the rest fits
        # Cutting at or before hi keeps tokens < limit and the characters within the bound.
        hi = min(w.tok_starts[limit] if limit < n else w.end, cap)
        taken = bisect_left(w.tok_starts, hi)  # tokens starting before hi
        if w.end >= self.content_end and n - self.floor > s + self.floor:
            # Near the end: leave the last chunk at least a floor's worth of its own.
            tail = max(w.tok_starts[n - self.floor], self.content_end - self._floor_chars)
            if tail < hi:
                hi = tail
                taken = bisect_left(w.tok_starts, hi)
        half = s + max(1, (taken - s) // 2)
        lo = w.tok_starts[half] if half < taken else hi
        # The chunk holds at least a floor's worth: ``floor`` tokens, or as many characters
        # as that many tokens of prose (a run the tokenizer sees as one token counts too).
        least = max(c0 + 1, self.last_cut + 1)
        own = bisect_right(w.tok_ends, text_start)  # the first token of the chunk's text
        enough = text_start + self._floor_chars
        if own + self.floor < taken:
            enough = min(enough, w.tok_starts[own + self.floor])
        least = max(least, enough)
        heading = self._section_gap(w, least, hi)
        if heading is not None:  # a section starts within reach: the chunk ends before it
            return w.gap_starts[heading], _PARAGRAPH
        first, last = self._gaps_between(w, max(lo, least), hi)
        if first == last:  # no gap in the second half: take any gap the floor allows
            first, last = self._gaps_between(w, least, hi)
        if first < last:
            levels = [self._gap_level(w, i) for i in range(first, last)]
            top = max(levels)
            tied = [first + k for k, level in enumerate(levels) if level == top]
            reach = hi - c0
            best = max(tied, key=lambda i: self._draw(w, i, c0, reach))
            return w.gap_starts[best], top
        # One "word" or line longer than the budget (a base64 blob, a URL, a wide table
        # row): cut it between tokens.
        if hi > c0:
            return hi, _IN_WORD
        return w.tok_ends[s] if w.tok_ends[s] > c0 else c0 + 1, _IN_WORD

    def _section_gap(self, w: _Window, lo: int, hi: int) -> int | None:
        """The first gap starting in ``[lo, hi]`` that ends where a section starts."""
        for k in range(bisect_right(self.sections, lo), len(self.sections)):
            offset = self.sections[k]
            i = bisect_left(w.gap_ends, offset)  # the gap ending at or after the heading
            if i >= len(w.gap_ends) or w.gap_starts[i] > hi:
                return None
            if w.gap_starts[i] >= lo and w.gap_starts[i] < offset <= w.gap_ends[i]:
                return i
        return None

    def _gaps_between(self, w: _Window, lo: int, hi: int) -> tuple[int, int]:
        """Index range of the window's gaps starting in ``[lo, hi]``."""
        return bisect_left(w.gap_starts, lo), bisect_right(w.gap_starts, hi)

    def _gap_level(self, w: _Window, i: int) -> int:
        """How good a boundary gap ``i`` is: paragraph break, sentence end, line, space."""
        start, end = w.gap_starts[i], w.gap_ends[i]
        gap = self.text[start:end]
        newline = "\n" in gap
        if newline and _PARAGRAPH_BREAK.search(gap):
            return _PARAGRAPH
        if _SENTENCE_END.search(self.text, max(0, start - 4), start):
            return _SENTENCE
        return _LINE if newline else _SPACE

    def _draw(self, w: _Window, i: int, c0: int, reach: int) -> tuple[float, int]:
        """Ties between gaps of the best level go to a draw seeded by the surrounding text.

        The draw is a weighted random choice (Efraimidis-Spirakis: the largest
        ``u ** (1 / weight)`` wins, ``u`` uniform in (0, 1]), with ``u`` a hash of the text
        around the gap and the weight growing with the gap's distance from ``c0``.
        """
        start, end = w.gap_starts[i], w.gap_ends[i]
        context = self.text[max(0, start - _HASH_CONTEXT) : end + _HASH_CONTEXT]
        u = (zlib.crc32(context.encode("utf-8", "surrogatepass")) + 1) / 2**32
        weight = ((start - c0) / reach) ** _FILL_BIAS
        return u ** (1 / weight) if weight > 0 else 0.0, start

    def _next_start(self, w: _Window, c0: int, c1: int, level: int) -> int:
        """Start of the next chunk: after the best boundary at most ``overlap`` tokens before
        c1 (paragraph, sentence, line, word), the earliest of the best. The overlap is whole
        sentences where the text has them, as a reader would quote it, and no longer than
        they need."""
        if self.overlap:
            end_tok = bisect_left(w.tok_starts, c1)  # tokens starting before c1
            target = w.tok_starts[max(0, end_tok - self.overlap)]
            first = bisect_left(w.gap_ends, max(target, c0 + 1))
            last = bisect_left(w.gap_ends, c1, lo=first)  # gaps ending before c1
            if first < last:
                best = max(range(first, last), key=lambda i: (self._gap_level(w, i), -i))
                return w.gap_ends[best]
        return c1 if level == _IN_WORD else self._word_after(w, c1)

    def _word_after(self, w: _Window, c1: int) -> int:
        """Where the first word after the gap at ``c1`` starts."""
        i = bisect_left(w.gap_ends, c1)
        if i < len(w.gap_ends):
            return w.gap_ends[i]
        match = _GAP.search(self.text, c1)  # the gap at c1 lies past the window's end
        return match.end() if match else len(self.text)

    def _make_chunk(self, w: _Window, c0: int, c1: int) -> Chunk | None:
        """The stripped text of ``[c0, c1)`` with its exact token count, or None if blank.

        A chunk that is exactly the window's text has the window's tokens (most small files
        are one such chunk); any other is tokenized again, since a tokenizer may split text
        differently at its edges than inside a longer text."""
        raw = self.text[c0:c1]
        stripped = raw.strip()
        if not stripped:
            return None
        start = c0 + len(raw) - len(raw.lstrip())
        end = start + len(stripped)
        if start == w.start and end == w.end:
            count = len(w.tok_starts) + self.counter.special_tokens
        else:
            count = self.counter.count(stripped)
        return Chunk(stripped, count, start, end)
