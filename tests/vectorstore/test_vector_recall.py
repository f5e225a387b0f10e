"""A library with a vector index file finds exact search's top ten, filtered or not, for
queries near stored chunks and for queries near none (a question about nothing the library
holds): the lists nearest the query alone, ranked by their 4-bit codes, miss about half of
those (recall on real embeddings is measured in benchmarks/)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from test_local_index import DIMS, rec

from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import ChunkFilters, DocState
from holodeck.vectorstore.sqlite import lists as sqlite_lists
from holodeck.vectorstore.sqlite import vector_upkeep as sqlite_vector_upkeep
from holodeck.vectorstore.sqlite import vectors as sqlite_vectors
from holodeck.vectorstore.store import VectorStore

BOOKS, DOCS, PARTS = 3, 75, 20  # 4,500 chunks: 1,500 a book
K = 10


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module", params=["one level", "two levels"])
def stores(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[tuple[VectorStore, VectorStore, np.ndarray]]:
    """The local index (with a file) and exact search, fed chunks drawn around 60 topics;
    the file's 32 lists drawn by one k-means (and every list read), or 128 drawn in two
    levels as a large library's are, of which a search reads a third."""
    patch = pytest.MonkeyPatch()
    patch.setattr(sqlite_vector_upkeep, "ANN_MIN_ROWS", 2_000)
    if request.param == "two levels":
        patch.setattr(sqlite_vector_upkeep, "ROWS_PER_LIST", 32)
        patch.setattr(sqlite_vectors, "MIN_PROBES", 1)
        patch.setattr(sqlite_lists, "TWO_LEVEL_MIN_LISTS", 64)
    folder = Path(tmp_path_factory.mktemp("recall"))
    local, exact = VectorStore(LocalIndexAdapter(folder)), VectorStore(MemoryIndexAdapter())
    rng = np.random.default_rng(7)
    topics = _unit(rng.standard_normal((60, DIMS)))
    n = BOOKS * DOCS * PARTS
    vectors = _unit(topics[rng.integers(0, 60, n)] + 0.9 * _unit(rng.standard_normal((n, DIMS))))
    for doc in range(BOOKS * DOCS):
        path = f"b{doc % BOOKS}/d{doc}.md"
        records = []
        for i in range(PARTS):
            r = rec("t", path, i, f"doc {doc} part {i}", doc * PARTS + i)
            r.vector = vectors[doc * PARTS + i]
            r.book_id = f"b{doc % BOOKS}"
            records.append(r)
        for store in (local, exact):
            store.write_document(
                "t", "kb", path, records, DocState(path, 1.0, 10, f"d{doc}", PARTS)
            )
    local.flush()
    assert local.adapter.stats("t", "kb")["algorithm"] == "IVF"
    yield local, exact, vectors
    patch.undo()


def _ids(store: VectorStore, query: np.ndarray, books: list[str] | None) -> set[str]:
    filters = ChunkFilters(library_ids=["kb"], book_ids=books)
    return {h.record.chunk_id for h in store.search("t", query, K, filters)}


@pytest.mark.parametrize("kind", ["near", "nothing"])
@pytest.mark.parametrize(
    "books", [None, ["b0", "b1"], ["b2"]], ids=["all", "two books", "one book"]
)
def test_top_ten_is_exact_searchs(
    stores: tuple[VectorStore, VectorStore, np.ndarray], kind: str, books: list[str] | None
) -> None:
    local, exact, vectors = stores
    rng = np.random.default_rng(11)
    if kind == "near":
        picks = rng.choice(len(vectors), 30, replace=False)
        queries = _unit(vectors[picks] + 0.25 * _unit(rng.standard_normal((30, DIMS))))
    else:
        queries = _unit(rng.standard_normal((30, DIMS)))
    found = [_ids(local, q, books) for q in queries]
    truth = [_ids(exact, q, books) for q in queries]
    recall = np.mean([len(f & t) / K for f, t in zip(found, truth, strict=True)])
    # a row at the edge may swap with one scoring the same to float32; most are found or none
    assert recall >= 0.98


def test_an_unsure_cut_takes_more_candidates_and_finds_more_of_the_top_ten(
    stores: tuple[VectorStore, VectorStore, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a tight candidate cut, queries near nothing the library holds (their scores
    flat, so the 4-bit codes' error decides what is cut) take twice the candidates and find
    more of exact search's top ten than the cut alone does."""
    local, exact, _ = stores
    monkeypatch.setattr(sqlite_vectors, "CANDIDATES", 150)
    asked: list[int] = []
    probe = sqlite_vectors._probe

    def counted(view: object, query: np.ndarray, wanted: int, probes: int, chosen: object):  # type: ignore[no-untyped-def]
        asked.append(wanted)
        return probe(view, query, wanted, probes, chosen)

    monkeypatch.setattr(sqlite_vectors, "_probe", counted)
    queries = _unit(np.random.default_rng(13).standard_normal((30, DIMS)))
    truth = [_ids(exact, q, None) for q in queries]

    def recall() -> float:
        found = [_ids(local, q, None) for q in queries]
        return float(np.mean([len(f & t) / K for f, t in zip(found, truth, strict=True)]))

    widened = recall()
    assert asked.count(300) >= 25  # most of the 30 were unsure, none widened twice
    assert asked.count(600) == 0
    monkeypatch.setattr(sqlite_vectors, "UNSURE_CUT", 0.0)  # the cut as it was
    assert widened >= recall() + 0.05


def test_a_cut_is_unsure_only_where_the_codes_error_could_reorder_it() -> None:
    """The rule itself, on 40,000 rows whose 4-bit estimates are off by a known error: the
    best 3,000 by those are cut sure when ten rows stand far above the rest, unsure when
    every score is alike (a query near nothing)."""
    rng = np.random.default_rng(5)
    spread = (0.1 + 0.03 * rng.standard_normal(40_000)).astype(np.float32)
    noise = (0.02 * rng.standard_normal(40_000)).astype(np.float32)
    sharp = spread.copy()
    sharp[:10] = 0.9
    for scores, unsure in ((sharp, False), (spread, True)):
        rough = scores + noise  # the 4-bit estimates, off by their error
        cut = np.argsort(-rough, kind="stable")[:3000]  # candidates come best first by those
        assert sqlite_vectors._unsure(rough[cut], scores[cut], K) is unsure
