"""Keyword feedback (RM3's idea) for a query that names a topic: the words its best fused
chunks share count beside the query's own, so a candidate that says the topic in those
words, not the query's, gains on the keyword side. The words are counted in the best
candidates the first fusion ranked (from their text, with the index's IDFs), not asked in a
second search of the index: the cost stays the same at any size (a second search for them,
common words among them, is slow on a large index, and the candidates it adds are worth
little).

Only for a topic (``dielectric constant of liquids``, ``git stash untracked files``: what an
agent's tool call often looks like), never for a question (``how do I ...?``): there the one
answer is among the first candidates already, and the shared words would pull in its
neighbours instead. For topics alone it helps, and leaves the question sets as they were
(see benchmarks/README.md, 'Search quality', "Issue 25, fifth pass"). A model sure of its
best chunk adds fewer words, or none.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from holodeck.text.analysis import (
    BM25_B,
    BM25_K1,
    STOPWORDS,
    stem_counter,
    stems_text,
    word_stem,
)
from holodeck.vectorstore.records import ChunkHit, ChunkRecord

#: Best fused chunks the words come from ...
SOURCE_CHUNKS = 3
#: ... a word held by fewer of them is one chunk's own, not the topic's.
MIN_HOLDERS = 2
#: Most words added (times how unsure the model is: a sure model's best chunks are the
#: answer already).
MAX_TERMS = 10
#: The openings of a question: a query that starts so asks for an answer, not a topic.
QUESTION_WORDS = frozenset(
    {
        *("what", "how", "why", "when", "where", "which", "who", "whom", "whose"),
        *("is", "are", "was", "were", "am", "can", "could", "do", "does", "did"),
        *("should", "would", "will", "shall", "may", "might", "must", "has", "have", "had"),
    }
)
#: An added word weighs this share of a query term (weighed as the query's own words, the
#: added ones take the ranking elsewhere).
WORD_WEIGHT = 2 / 3
#: The best candidates of the first fusion the added words are counted in (the rest keep
#: their keyword score: counting more candidates costs time and ranks no better).
RESCORED = 50
_WORD = re.compile(r"[^\W\d_]{2,}")


def is_question(query: str) -> bool:
    """Whether the query is asked as a question (a ``?`` or a question's first word)."""
    words = query.strip().split()
    if not words:
        return False
    return query.rstrip().endswith("?") or words[0].casefold().strip("\"'(") in QUESTION_WORDS


def expansion_words(
    query: str,
    best: Sequence[ChunkRecord],
    idfs: Callable[[Sequence[str]], dict[str, float]],
    unsure: float,
) -> dict[str, float]:
    """Up to ``round(MAX_TERMS x unsure)`` words of the ``best`` chunks that at least
    ``MIN_HOLDERS`` of them hold and the query does not, each (its most used spelling) with
    its IDF, best first by summed share of each chunk's words x IDF (``idfs``: the store's,
    by ``casefold``)."""
    wanted = round(MAX_TERMS * unsure)
    if wanted <= 0 or len(best) < MIN_HOLDERS:
        return {}
    asked = set(stems_text(query).split())
    weight: dict[str, float] = {}
    holders: Counter[str] = Counter()
    spelling: dict[str, Counter[str]] = {}
    for record in best[:SOURCE_CHUNKS]:
        said = [w for w in _WORD.findall(record.content.casefold()) if w not in STOPWORDS]
        stems = [word_stem(w) for w in said]
        for word, stem in zip(said, stems, strict=True):
            spelling.setdefault(stem, Counter())[word] += 1
        for stem, n in Counter(stems).items():
            weight[stem] = weight.get(stem, 0.0) + n / len(stems)
            holders[stem] += 1
    candidates = [s for s in weight if s and holders[s] >= MIN_HOLDERS and s not in asked]
    spelled = {s: spelling[s].most_common(1)[0][0] for s in candidates}
    idf = idfs(list(spelled.values())) if spelled else {}
    scored = sorted(candidates, key=lambda s: (-weight[s] * idf.get(spelled[s], 0.0), s))
    return {spelled[s]: idf.get(spelled[s], 0.0) for s in scored[:wanted]}


def rescored(
    keyword: Sequence[ChunkHit],
    candidates: Sequence[ChunkRecord],
    words: dict[str, float],
    floor: float,
) -> list[ChunkHit]:
    """Every candidate (best first by the first fusion) with its keyword score plus, for the
    first ``RESCORED`` of them, the added ``words``' BM25 shares (each with its IDF, weighed
    ``WORD_WEIGHT`` of a query term), best first: FTS5's formula over the candidates' own
    words, their mean length standing in for the index's. ``floor``: the keyword score of a
    candidate the keyword list did not hold."""
    stems = [word_stem(w.casefold()) for w in words]
    weights = {s: idf * WORD_WEIGHT for s, idf in zip(stems, words.values(), strict=True) if s}
    if not weights:
        return list(keyword)
    counts_in = stem_counter(weights)
    own = {h.record.chunk_id: h.score for h in keyword}
    every = list({r.chunk_id: r for r in candidates}.values())
    pool = every[:RESCORED]
    # the model's tokens (each record has them counted): a length proportional to the index's
    lengths = [r.token_count or len(r.content.split()) for r in pool]
    mean = max(1.0, sum(lengths) / len(lengths)) if pool else 1.0
    scored = [ChunkHit(r, own.get(r.chunk_id, floor)) for r in every]
    for hit, length in zip(scored, lengths, strict=False):  # the pool: the first ones
        if counts := counts_in(hit.record.content):
            norm = BM25_K1 * (1 - BM25_B + BM25_B * length / mean)
            hit.score += sum(weights[s] * f * (BM25_K1 + 1) / (f + norm) for s, f in counts.items())
    return sorted(scored, key=lambda h: (-h.score, h.record.chunk_id))
