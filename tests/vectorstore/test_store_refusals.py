"""Every refusal of the store (the storage contract, docs/contract.md): the stable code,
status 400, and nothing written.

Run against the memory, the local and the postgres adapter (the Redis adapter has its own
suite); the local one is reopened from disk, the postgres one on a new connection, to prove
nothing reached the file or the server either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from holodeck.vectorstore.errors import (
    MODEL_MISMATCH,
    QUERY_DIMENSION_MISMATCH,
    TENANT_MISMATCH,
    StoreError,
)
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.postgres import PostgresIndexAdapter
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, chunk_id_for
from holodeck.vectorstore.store import VectorStore

DIMS = 8


def record(
    tenant: str = "t1",
    library: str = "lib",
    doc: str = "a.md",
    index: int = 0,
    model: str = "m1",
    dims: int = DIMS,
    seed: int = 0,
) -> ChunkRecord:
    vec = np.random.default_rng(seed).normal(size=dims).astype(np.float32)
    return ChunkRecord(
        chunk_id=chunk_id_for(tenant, library, doc, index),
        tenant_id=tenant,
        library_id=library,
        book_id=".",
        doc_id=doc,
        chunk_index=index,
        content=f"chunk {index} of {doc}",
        vector=vec / np.linalg.norm(vec),
        embedding_model=model,
        source_path=doc,
        mtime=1.0,
        content_hash=str(seed),
        token_count=3,
    )


@pytest.fixture(params=["memory", "local", pytest.param("postgres", marks=pytest.mark.postgres)])
def make_store(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[Callable[[], VectorStore]]:
    """A factory: calling it again for ``local`` (``postgres``) reopens the index from disk
    (the server)."""
    opened: list[VectorStore] = []

    def make() -> VectorStore:
        if request.param == "postgres":
            url = request.getfixturevalue("pg_url")
            name = request.getfixturevalue("pg_index_name")
            opened.append(VectorStore(PostgresIndexAdapter(url, name)))
            return opened[-1]
        if request.param == "memory":
            if not hasattr(make, "adapter"):
                make.adapter = MemoryIndexAdapter()  # type: ignore[attr-defined]
            return VectorStore(make.adapter)  # type: ignore[attr-defined]
        return VectorStore(LocalIndexAdapter(tmp_path / "index"))

    yield make
    for store in opened:
        store.adapter.close()


def seeded(make_store: Callable[[], VectorStore]) -> VectorStore:
    store = make_store()
    store.upsert_chunks("t1", [record(index=0, seed=1), record(index=1, seed=2)])
    store.adapter.flush()
    return store


def stored_count(make_store: Callable[[], VectorStore]) -> int:
    return make_store().adapter.total_count()


def test_record_of_another_tenant_refuses_the_whole_batch(make_store) -> None:  # type: ignore[no-untyped-def]
    store = seeded(make_store)
    batch = [record(doc="b.md", seed=3), record(tenant="t2", doc="b.md", index=1, seed=4)]
    with pytest.raises(StoreError) as err:
        store.upsert_chunks("t1", batch)
    assert (err.value.code, err.value.status) == (TENANT_MISMATCH, 400)
    assert err.value.code == 5372772694716
    store.adapter.flush()
    assert stored_count(make_store) == 2
    assert store.adapter.get_doc_chunks("t1", "lib", "b.md") == []


def test_vector_of_another_model_refuses_the_whole_batch(make_store) -> None:  # type: ignore[no-untyped-def]
    store = seeded(make_store)
    batch = [record(doc="b.md", seed=3), record(doc="b.md", index=1, model="m2", seed=4)]
    with pytest.raises(StoreError) as err:
        store.upsert_chunks("t1", batch)
    assert (err.value.code, err.value.status) == (MODEL_MISMATCH, 400)
    assert err.value.code == 5372772694902
    store.adapter.flush()
    assert stored_count(make_store) == 2


def test_vector_of_another_length_refuses_the_whole_batch(make_store) -> None:  # type: ignore[no-untyped-def]
    store = seeded(make_store)
    batch = [record(doc="b.md", seed=3), record(doc="b.md", index=1, dims=DIMS + 1, seed=4)]
    with pytest.raises(StoreError) as err:
        store.upsert_chunks("t1", batch)
    assert err.value.code == MODEL_MISMATCH
    store.adapter.flush()
    assert stored_count(make_store) == 2


def test_query_vector_of_another_length_is_refused(make_store) -> None:  # type: ignore[no-untyped-def]
    store = seeded(make_store)
    with pytest.raises(StoreError) as err:
        store.search("t1", np.ones(DIMS + 2, dtype=np.float32), 5)
    assert (err.value.code, err.value.status) == (QUERY_DIMENSION_MISMATCH, 400)
    assert err.value.code == 5372772695100


def test_empty_library_scope_finds_nothing_without_asking_the_adapter(make_store) -> None:  # type: ignore[no-untyped-def]
    store = seeded(make_store)
    asked = []
    original = store.adapter.search
    store.adapter.search = lambda *a, **k: asked.append(a) or original(*a, **k)  # type: ignore[method-assign]
    assert store.search("t1", record(seed=1).vector, 5, ChunkFilters(library_ids=[])) == []
    assert asked == []
    assert len(store.search("t1", record(seed=1).vector, 5)) == 2  # the spy does work
    assert len(asked) == 1


def test_empty_batch_is_a_no_op(make_store) -> None:  # type: ignore[no-untyped-def]
    store = make_store()
    store.upsert_chunks("t1", [])
    assert store.describe_index() is None
    assert store.adapter.total_count() == 0


def test_first_batch_fixes_the_ruler_and_search_is_tenant_scoped(make_store) -> None:  # type: ignore[no-untyped-def]
    store = seeded(make_store)
    info = store.describe_index()
    assert info is not None and (info.embedding_model, info.dimensions) == ("m1", DIMS)
    store.upsert_chunks("t2", [record(tenant="t2", seed=1)])
    hits = store.search("t1", record(seed=1).vector, 10)
    assert {h.record.tenant_id for h in hits} == {"t1"}
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_delete_by_doc_and_move_book_return_counts(make_store) -> None:  # type: ignore[no-untyped-def]
    store = seeded(make_store)
    assert store.move_book("t1", ".", "other") == 2
    assert store.move_book("t2", ".", "other") == 0  # another tenant's book: untouched
    assert store.delete_by_doc("t1", "other", "a.md") == 2
    assert store.delete_by_doc("t1", "other", "a.md") == 0


def test_moved_book_is_searched_in_its_new_library(make_store) -> None:  # type: ignore[no-untyped-def]
    store = seeded(make_store)
    query = record(seed=1).vector
    assert len(store.search("t1", query, 5, ChunkFilters(library_ids=["lib"]))) == 2
    store.move_book("t1", ".", "other")
    assert store.search("t1", query, 5, ChunkFilters(library_ids=["lib"])) == []
    assert len(store.search("t1", query, 5, ChunkFilters(library_ids=["other"]))) == 2
