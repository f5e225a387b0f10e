"""Query words that stand side by side in the query, found together in a chunk: the keyword
side's bonus for them (hybrid mode).

BM25 scores each query word on its own, so a chunk that says ``dielectric`` five times and
nothing else of ``dielectric constant of liquids`` can outrank one about the constant of
liquids. Here each two words next to each other in the query (stop words out) add, to every
one of the best keyword hits holding both, ``PAIR_WEIGHT`` x the rarer word's IDF x BM25's
saturation of how often the chunk holds the pair (the fewer of the two words' counts). It
is what term-dependence models (Metzler and Croft's sequential dependence, BM25 with term
proximity) add to BM25, at a chunk's scale: how near the two words stand inside a chunk
does not matter at a chunk's size (the chunk is the window), so no positions are needed.
Neighbours only: every two of the query's words rank worse. It helps most sets and costs
perlfaq a little (its questions' neighbours are common words: ``tell whether a certain
element``); hybrid stays above the better single mode everywhere (see
benchmarks/README.md, 'Search quality', "Issue 25, sixth pass").
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable, Sequence

from holodeck.text.analysis import BM25_K1, said_terms, stem_counter, word_stem
from holodeck.vectorstore.records import ChunkHit

#: A pair found together weighs this share of its rarer word's IDF (chosen on NPL and
#: Cranfield).
PAIR_WEIGHT = 0.5
#: The best BM25 hits looked at (the rest keep their score): each is a regex over the hit's
#: text, and more hits rank no better.
PAIRED = 100
_PART = re.compile(r"[^\W_]+")


def query_pairs(query: str) -> list[tuple[str, str]]:
    """The stems of each two words next to each other in the query's keyword terms (stop
    words out, an identifier by its parts, each pair once, a word beside itself no pair)."""
    return _pairs(_words(query))


def paired(
    query: str, keyword: Sequence[ChunkHit], idfs: Callable[[Sequence[str]], dict[str, float]]
) -> list[ChunkHit]:
    """``keyword`` (BM25 hits) with each hit's pair bonus added, best first (ties by chunk
    id); as given when the query has no pair. ``idfs``: the store's, by ``casefold``."""
    words = _words(query)
    pairs = query_pairs(query)
    if not pairs or not keyword:
        return list(keyword)
    idf: dict[str, float] = {}
    for word, value in idfs(sorted(set(words))).items():
        stem = word_stem(word)
        idf[stem] = max(idf.get(stem, 0.0), value)
    weights = {(a, b): min(idf.get(a, 0.0), idf.get(b, 0.0)) for a, b in pairs}  # the rarer's
    counts_in = stem_counter({s for pair in pairs for s in pair})
    scored = list(keyword[PAIRED:])
    for hit in keyword[:PAIRED]:
        counts = counts_in(hit.record.content)
        bonus = 0.0
        if len(counts) > 1:
            for (a, b), weight in weights.items():
                if a in counts and b in counts:
                    together = min(counts[a], counts[b])
                    bonus += weight * together * (BM25_K1 + 1) / (together + BM25_K1)
        scored.append(ChunkHit(hit.record, hit.score + PAIR_WEIGHT * bonus))
    return sorted(scored, key=lambda h: (-h.score, h.record.chunk_id))


def _words(query: str) -> list[str]:
    """The query's plain keyword words, lower-case, in its order (identifiers by parts)."""
    return [t.casefold() for t in said_terms(query) if _PART.fullmatch(t)]


def _pairs(words: list[str]) -> list[tuple[str, str]]:
    said = [s for s, _ in itertools.groupby(s for s in map(word_stem, words) if s)]
    return list(dict.fromkeys((a, b) for a, b in itertools.pairwise(said) if a != b))
