"""Passages: which chunks of an answer merge, how their text and locations join."""

from __future__ import annotations

import itertools

import numpy as np

from holodeck.retrieval.passages import MAX_CHUNKS, Scored, merge, merge_locations, spread
from holodeck.vectorstore.records import ChunkRecord


def chunk(doc: str, index: int, text: str, score: float, location: str = "") -> Scored:
    record = ChunkRecord(
        chunk_id=f"{doc}#{index}",
        tenant_id="t",
        library_id="kb",
        book_id=".",
        doc_id=doc,
        chunk_index=index,
        content=text,
        vector=np.zeros(3, dtype=np.float32),
        embedding_model="m",
        source_path=doc,
        mtime=0.0,
        content_hash="h",
        token_count=3,
        location=location,
    )
    return Scored(record, score, score)


def test_adjacent_chunks_of_one_document_merge_with_the_overlap_said_once() -> None:
    overlap = "the shared sentence at the seam of two chunks."
    first = chunk("a.md", 4, "Opening words. " + overlap, 0.9, "lines 10-20")
    second = chunk("a.md", 5, overlap + " Closing words.", 0.7, "lines 19-30")
    other = chunk("b.md", 5, "Elsewhere.", 0.8)
    passages = merge([first, other, second], k=5)
    assert [p.best.record.doc_id for p in passages] == ["a.md", "b.md"]
    assert passages[0].score == 0.9
    assert passages[0].content == "Opening words. " + overlap + " Closing words."
    assert passages[0].location == "lines 10-20"  # the best chunk's: where the answer is
    assert passages[0].span == "lines 10-30"  # what the merged text covers


def test_top_k_counts_passages_and_later_chunks_still_join_them() -> None:
    ranked = [chunk("a.md", 1, "a1", 0.9), chunk("b.md", 7, "b7", 0.8)]
    ranked += [chunk("c.md", 3, "c3", 0.7), chunk("a.md", 2, "a2", 0.6)]
    passages = merge(ranked, k=2)
    assert [(p.first, p.last, p.best.record.doc_id) for p in passages] == [
        (1, 2, "a.md"),
        (7, 7, "b.md"),
    ]


def test_passages_never_touch_and_never_grow_past_the_cap() -> None:
    ranked = [chunk("a.md", i, f"a{i}", 1.0 - i / 100) for i in (0, 1, 3, 4, 2, 5, 6, 7)]
    passages = merge(ranked, k=10)
    spans = sorted((p.first, p.last) for p in passages)
    assert all(hi - lo + 1 <= MAX_CHUNKS for lo, hi in spans)
    assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(spans))


def test_no_false_overlap_at_a_seam() -> None:
    passages = merge([chunk("a.md", 0, "ends with a.", 0.9), chunk("a.md", 1, "a. starts", 0.8)], 5)
    assert passages[0].content == "ends with a.\n\na. starts"


def test_locations_join_where_they_are_one_kind() -> None:
    assert merge_locations(["page 3", "page 4"]) == "pages 3-4"
    assert merge_locations(["pages 3-4", "page 4"]) == "pages 3-4"
    assert merge_locations(["rows 2-40", "rows 38-80"]) == "rows 2-80"
    assert merge_locations(["lines 5-9", ""]) == "lines 5-9"
    assert merge_locations(["slide 3", "sheet Budget"]) == "slide 3"
    assert merge_locations(["", ""]) == ""


def test_a_long_passage_is_cut_to_the_chunk_bound_around_its_best_chunk() -> None:
    left = chunk("a.md", 0, "alpha " * 100 + "shared seam of the two chunks here", 0.5)
    best = chunk("a.md", 1, "shared seam of the two chunks here " + "omega " * 100, 0.9)
    passage = merge([best, left], k=1)[0]
    assert len(passage.content) > 600
    cut = passage.text_within(400)
    assert len(cut) <= 400
    assert "shared seam" in cut and cut.count("omega") > cut.count("alpha")
    assert passage.text_within(10_000) == passage.content


def _merged_one_by_one(ranked: list[Scored], k: int) -> list[list[str]]:
    """The rule of ``merge`` said plainly (each chunk against every kept passage): the
    reference the linear ``merge`` must match."""
    passages: list[list[Scored]] = []
    for chunk in ranked:
        rec = chunk.record
        near = [
            p
            for p in passages
            if p[0].record.doc_id == rec.doc_id
            and min(c.record.chunk_index for c in p) - 1
            <= rec.chunk_index
            <= max(c.record.chunk_index for c in p) + 1
        ]
        if not near:
            if len(passages) < k:
                passages.append([chunk])
            continue
        if any(c.record.chunk_id == rec.chunk_id for p in near for c in p):
            continue
        if sum(len(p) for p in near) + 1 > MAX_CHUNKS:
            continue
        for other in near[1:]:
            near[0].extend(other)
            passages.remove(other)
        near[0].append(chunk)
    passages.sort(key=lambda p: -max(c.score for c in p))
    return [sorted(c.record.chunk_id for c in p) for p in passages]


def test_merging_matches_the_rule_on_random_rankings() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        chunks = sorted(
            {(f"d{rng.integers(4)}.md", int(rng.integers(12))) for _ in range(rng.integers(1, 40))}
        )
        scores = rng.permutation(len(chunks)) / len(chunks)  # distinct: no tie order involved
        pairs = zip(chunks, scores, strict=True)
        ranked = sorted(
            (chunk(doc, i, f"{doc}{i}", float(s)) for (doc, i), s in pairs), key=lambda c: -c.score
        )
        k = int(rng.integers(1, 8))
        merged = [sorted(c.record.chunk_id for c in p.chunks) for p in merge(ranked, k)]
        assert merged == _merged_one_by_one(ranked, k)


def test_a_large_top_k_of_neighbouring_chunks_still_fills_up() -> None:
    # One long document whose chunks rank in document order: every passage takes three
    # neighbours and leaves the fourth out, so 40 passages need 160 candidates, more than
    # the first round asks; the answer holds as many as three candidates per passage allow.
    from holodeck.retrieval.hybrid import retrieve
    from holodeck.vectorstore.memory import MemoryIndexAdapter
    from holodeck.vectorstore.records import ChunkFilters, DocState, chunk_id_for
    from holodeck.vectorstore.store import VectorStore

    store = VectorStore(MemoryIndexAdapter())
    query = np.array([1.0, 0.0], dtype=np.float32)
    records = []
    for i in range(200):
        angle = i / 200  # similarity falls along the document
        rec = chunk("long.md", i, f"part {i}", 0.0).record
        rec.chunk_id = chunk_id_for("t", "kb", "long.md", i)
        rec.vector = np.array([np.cos(angle), np.sin(angle)], dtype=np.float32)
        records.append(rec)
    store.write_document("t", "kb", "long.md", records, DocState("long.md", 1, 1, "h", 200))
    scope = ChunkFilters(library_ids=["kb"])
    passages, _ = retrieve(store, "t", "part", query, 40, scope, mode="semantic")
    assert len(passages) == 30  # 120 candidates (40 x 3), four chunks per passage
    assert [(p.first, p.last) for p in passages[:2]] == [(0, 2), (4, 6)]


def _far_apart(doc: str, scores: list[float]) -> list[Scored]:
    """One chunk per score, far enough apart in ``doc`` never to merge."""
    return [chunk(doc, 10 * i, f"{doc} {i}", score) for i, score in enumerate(scores)]


def test_one_file_does_not_take_every_place_when_others_score_near_it() -> None:
    ranked = _far_apart("manual.pdf", [0.80, 0.79, 0.78, 0.77, 0.76])
    ranked += [chunk("faq.md", 0, "the answer", 0.74), chunk("guide.md", 0, "also", 0.73)]
    top = spread(merge(sorted(ranked, key=lambda c: -c.score), k=10), 5, share=0.07)
    docs = [p.best.record.doc_id for p in top]
    assert docs[0] == "manual.pdf"  # the best passage keeps its place
    assert {"faq.md", "guide.md"} <= set(docs)  # the near ones from other files come in
    scores = [p.score for p in top]
    assert scores == sorted(scores, reverse=True)  # still never increasing


def test_a_file_that_really_holds_the_best_answers_keeps_them() -> None:
    ranked = _far_apart("manual.pdf", [0.90, 0.88, 0.86, 0.84, 0.82])
    ranked += [chunk("faq.md", 0, "far below", 0.40)]
    top = spread(merge(sorted(ranked, key=lambda c: -c.score), k=10), 5, share=0.07)
    assert [p.best.record.doc_id for p in top] == ["manual.pdf"] * 5


def test_each_files_first_passage_keeps_its_order_among_the_others() -> None:
    ranked = _far_apart("a.md", [0.9, 0.89, 0.88])
    ranked += [chunk(d, 0, d, s) for d, s in (("b.md", 0.7), ("c.md", 0.6), ("d.md", 0.5))]
    top = spread(merge(sorted(ranked, key=lambda c: -c.score), k=10), 10, share=0.07)
    firsts = list(dict.fromkeys(p.best.record.doc_id for p in top))
    assert firsts == ["a.md", "b.md", "c.md", "d.md"]
    assert len(top) == 6  # nothing lost, only moved
