"""Neighbouring chunks of one document in one answer become one passage.

Chunks overlap their neighbours (``chunk_overlap``) or, after a paragraph break, adjoin
them, so two adjacent chunks in one answer show the agent the same sentences twice (or one
passage in two halves) and spend two of its ``top_k`` slots on one place.
Merging them keeps ``top_k`` results ``top_k`` different passages, each with its best score.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from holodeck.vectorstore.records import ChunkRecord, range_name

#: A passage never grows past this many chunks (the answer stays a few chunks long).
MAX_CHUNKS = 3
#: Shorter common text at a seam is chance, not the chunk overlap.
MIN_OVERLAP_CHARS = 16
_RANGE = re.compile(r"^(?P<kind>[a-z]+) (?P<lo>\d+)(?:-(?P<hi>\d+))?$")


@dataclass(slots=True)
class Scored:
    """One chunk with the score it ranks by and its semantic similarity to the query."""

    record: ChunkRecord
    score: float  # the mode's relevance in [0, 1], higher is better
    similarity: float  # cosine similarity with the query, in [0, 1]


@dataclass
class Passage:
    """Adjacent chunks of one document, in document order, with the best of their scores."""

    chunks: list[Scored] = field(default_factory=list)

    @property
    def best(self) -> Scored:
        return max(self.chunks, key=lambda c: c.score)

    @property
    def score(self) -> float:
        return self.best.score

    @property
    def similarity(self) -> float:
        return max(c.similarity for c in self.chunks)

    @property
    def first(self) -> int:
        return self.chunks[0].record.chunk_index

    @property
    def last(self) -> int:
        return self.chunks[-1].record.chunk_index

    @property
    def content(self) -> str:
        """The chunks' text joined with the overlap between neighbours said once."""
        text = self.chunks[0].record.content
        for chunk in self.chunks[1:]:
            text = _join(text, chunk.record.content)
        return text

    def text_within(self, bound: int) -> str:
        """The passage's text, at most ``bound`` characters: around its best chunk, cut at
        whitespace (a chunk is never longer than the bound; two or three together may be)."""
        text = self.content
        if len(text) <= bound:
            return text
        best = self.best.record.content
        start = max(0, text.find(best[: min(len(best), 200)]))
        start = max(0, min(start - (bound - min(len(best), bound)) // 2, len(text) - bound))
        window = text[start : start + bound]
        if start > 0 and not text[start - 1].isspace() and " " in window[:80]:
            window = window[window.index(" ") + 1 :]  # no word cut in half at the start
        end = start + bound
        if end < len(text) and not text[end].isspace() and " " in window[-80:]:
            window = window[: window.rindex(" ")]  # nor at the end
        return window

    def places_within(self, text: str) -> list[tuple[int, int, str]]:
        """Each chunk's ``[start, end)`` in ``text`` (this passage's ``content`` or
        ``text_within``) and its location, in document order; ``(0, 0, location)`` for a
        chunk not found there (cut off by ``text_within``)."""
        out = []
        for chunk in self.chunks:
            body = chunk.record.content
            start = text.find(body[: min(len(body), 200)]) if body else -1
            found = (start, min(len(text), start + len(body))) if start >= 0 else (0, 0)
            out.append((*found, chunk.record.location))
        return out

    @property
    def section(self) -> str:
        """The heading path of the passage's best chunk (its neighbours may start the next
        section; the best one is what the result is about)."""
        return self.best.record.section

    @property
    def location(self) -> str:
        """Where the best chunk sits (``page 3``): where the answer is, however far the
        merged neighbours reach (a three-page passage answered from page 3 says page 3)."""
        return self.best.record.location

    @property
    def span(self) -> str:
        """Where the whole passage's text comes from, as one range where its chunks'
        locations are of one kind (``pages 1-3``)."""
        return merge_locations([c.record.location for c in self.chunks])

    def add(self, chunk: Scored) -> None:
        self.chunks.append(chunk)
        self.chunks.sort(key=lambda c: c.record.chunk_index)


def merge(ranked: Iterable[Scored], k: int) -> list[Passage]:
    """The first ``k`` passages of a ranking, ordered by their best score.

    A chunk next to a passage of its document joins it (and joins two passages it bridges);
    one that would make a passage longer than ``MAX_CHUNKS`` is left out, since that place is
    shown already. So no two passages of an answer touch. Linear in the chunks: a passage is
    a run of adjacent chunks, so a chunk looks up only the passages holding its neighbours.
    """
    passages: dict[int, Passage] = {}  # by number, in the order they were started
    holder: dict[tuple[str, str, int], int] = {}  # a shown chunk's place -> its passage
    for chunk in ranked:
        rec = chunk.record
        place = (rec.library_id, rec.doc_id, rec.chunk_index)
        if place in holder:
            continue  # shown already
        before = holder.get((rec.library_id, rec.doc_id, rec.chunk_index - 1))
        after = holder.get((rec.library_id, rec.doc_id, rec.chunk_index + 1))
        if before is None and after is None:
            if len(passages) < k:
                holder[place] = number = len(holder)  # new places only: unique
                passages[number] = Passage([chunk])
            continue  # past k, still read on: a later chunk may extend a kept passage
        near = sorted({n for n in (before, after) if n is not None})
        if sum(len(passages[n].chunks) for n in near) + 1 > MAX_CHUNKS:
            continue
        home = near[0]  # the earlier passage takes in the chunk and the one it bridges to
        for other in near[1:]:
            for part in passages.pop(other).chunks:
                passages[home].add(part)
                holder[_place(part)] = home
        passages[home].add(chunk)
        holder[place] = home
    return sorted(passages.values(), key=lambda p: -p.score)


def spread(passages: list[Passage], k: int, share: float) -> list[Passage]:
    """The first ``k`` of ``passages`` (best first) when each ranks as its score less
    ``share`` x the best score per passage of its document ranked above it, so results
    cover the question rather than one file: a file keeps several places only when its
    passages really score above the others'. Each document's first passage keeps its order
    among the other firsts; a demoted passage's score becomes the one it ranks by, so scores
    still never increase down the list."""
    if not passages or share <= 0:
        return passages[:k]
    step = share * passages[0].score
    shown: dict[tuple[str, str], int] = {}
    # (-rank score, position, demotions it was scored with); a popped entry scored with
    # fewer demotions than its document has now goes back in with the new score
    heap = [(-p.score, i, 0) for i, p in enumerate(passages)]
    out: list[Passage] = []
    while heap and len(out) < k:
        negative, i, seen = heapq.heappop(heap)
        passage = passages[i]
        now = shown.get(_doc(passage), 0)
        if now != seen:
            heapq.heappush(heap, (-(passage.score - step * now), i, now))
            continue
        if now:
            lowered = max(0.0, -negative)
            for chunk in passage.chunks:
                chunk.score = min(chunk.score, lowered)
        shown[_doc(passage)] = now + 1
        out.append(passage)
    return out


def _doc(passage: Passage) -> tuple[str, str]:
    record = passage.chunks[0].record
    return record.library_id, record.doc_id


def _place(chunk: Scored) -> tuple[str, str, int]:
    return chunk.record.library_id, chunk.record.doc_id, chunk.record.chunk_index


def merge_locations(locations: list[str]) -> str:
    """``lines 3-10`` + ``lines 9-20`` -> ``lines 3-20``; mixed or unknown kinds: the first."""
    known = [loc for loc in locations if loc]
    if not known:
        return ""
    parsed = [_RANGE.match(loc) for loc in known]
    if not all(parsed):
        return known[0]
    kinds = {m["kind"].removesuffix("s") for m in parsed if m}  # "lines 3-9" is of "line"
    if len(kinds) != 1:
        return known[0]
    lo = min(int(m["lo"]) for m in parsed if m)
    hi = max(int(m["hi"] or m["lo"]) for m in parsed if m)
    return range_name(kinds.pop(), str(lo), str(hi))


def _join(left: str, right: str) -> str:
    """``left`` then ``right`` without the text they share (the chunk overlap) twice."""
    longest = min(len(left), len(right), 4000)
    for size in range(longest, MIN_OVERLAP_CHARS - 1, -1):
        if left.endswith(right[:size]):
            return left + right[size:]
    return left + "\n\n" + right
