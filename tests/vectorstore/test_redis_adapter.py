"""The redis adapter against a real Redis with the Query Engine (no mocks).

The memory adapter is the reference: the same records searched through both must give the
same ids and scores, for every algorithm and metric.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import traceback
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import redis
from redis_server import RedisServer, free_port  # tests/ is on sys.path (see conftest)

from holodeck.errors import ConfigError, HoloDeckError, IngestError, ValidationError
from holodeck.vectorstore.errors import StoreError
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import (
    ChunkFilters,
    ChunkRecord,
    DocState,
    IndexInfo,
    chunk_id_for,
)
from holodeck.vectorstore.redis import adapter as redis_adapter
from holodeck.vectorstore.redis import fields as redis_fields
from holodeck.vectorstore.redis import queries as redis_queries
from holodeck.vectorstore.redis.adapter import RedisIndexAdapter
from holodeck.vectorstore.store import VectorStore

pytestmark = pytest.mark.redis

MODEL = "test-model"
DIMS = 384


def unit(rng: np.random.Generator, dims: int = DIMS) -> np.ndarray:
    """A random L2-normalised float32 vector."""
    v = rng.normal(size=dims).astype(np.float32)
    return v / np.linalg.norm(v)


def make_record(
    vector: np.ndarray,
    tenant: str = "t1",
    library: str = "lib",
    book: str = "book",
    doc: str = "book/doc.txt",
    index: int = 0,
    tags: list[str] | None = None,
    language: str | None = None,
    model: str = MODEL,
) -> ChunkRecord:
    return ChunkRecord(
        chunk_id=chunk_id_for(tenant, library, doc, index),
        tenant_id=tenant,
        library_id=library,
        book_id=book,
        doc_id=doc,
        chunk_index=index,
        content=f"{tenant}/{library}/{doc}#{index}",
        vector=vector,
        embedding_model=model,
        source_path=f"/src/{doc}",
        mtime=1700000000.123456,
        content_hash=f"hash-{index}",
        token_count=10 + index,
        tags=list(tags or []),
        language=language,
    )


@pytest.fixture
def open_adapter(
    redis_url: str, redis_index_name: str
) -> Iterator[Callable[..., RedisIndexAdapter]]:
    """Adapters on the test's own index (a new connection each call); all closed after."""
    opened: list[RedisIndexAdapter] = []

    def open_(**kwargs: str) -> RedisIndexAdapter:
        kwargs.setdefault("index_name", redis_index_name)
        adapter = RedisIndexAdapter(redis_url, **kwargs)  # type: ignore[arg-type]
        opened.append(adapter)
        return adapter

    yield open_
    for adapter in opened:
        adapter.close()


def clustered_records(dims: int = DIMS) -> list[ChunkRecord]:
    """240 records in 12 clusters, two tenants, two libraries, books, tags and languages."""
    rng = np.random.default_rng(42)
    records = []
    for c in range(12):
        center = unit(rng, dims)
        for i in range(20):
            v = center + 0.35 * unit(rng, dims)
            records.append(
                make_record(
                    (v / np.linalg.norm(v)).astype(np.float32),
                    tenant="t1" if c % 3 else "t2",
                    library=f"lib{c % 2}",
                    book=f"book{i % 3}",
                    doc=f"book{i % 3}/doc{c}.md",
                    index=i,
                    tags=[f"tag{i % 4}", "all"],
                    language="en" if i % 2 else "de",
                )
            )
    return records


# -- parity with the memory reference ------------------------------------------------------
@pytest.mark.parametrize("algorithm", ["HNSW", "FLAT"])
@pytest.mark.parametrize("metric", ["COSINE", "L2", "IP"])
def test_same_hits_and_scores_as_memory(
    open_adapter: Callable[..., RedisIndexAdapter], algorithm: str, metric: str
) -> None:
    records = clustered_records()
    redis_store = VectorStore(open_adapter(algorithm=algorithm, metric=metric))
    memory_store = VectorStore(MemoryIndexAdapter())
    for tenant in ("t1", "t2"):
        batch = [r for r in records if r.tenant_id == tenant]
        redis_store.upsert_chunks(tenant, batch)
        memory_store.upsert_chunks(tenant, batch)

    rng = np.random.default_rng(7)
    scopes = [
        ChunkFilters(),
        ChunkFilters(library_ids=["lib1"]),
        ChunkFilters(book_ids=["book0", "book2"], tags=["tag1", "tag3"]),
        ChunkFilters(language="de"),
    ]
    compared = 0
    for probe in records[::37]:
        query = probe.vector + 0.2 * unit(rng)
        query = (query / np.linalg.norm(query)).astype(np.float32)
        for scope in scopes:
            got = redis_store.search(probe.tenant_id, query, 8, scope)
            want = memory_store.search(probe.tenant_id, query, 8, scope)
            assert [h.record.chunk_id for h in got] == [h.record.chunk_id for h in want]
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-3)
            assert all(0.0 <= h.score <= 1.0 for h in got)
            compared += len(got)
    assert compared > 100
    assert redis_store.adapter.describe() == IndexInfo(MODEL, DIMS)


def test_scores_are_clamped_cosine(open_adapter: Callable[..., RedisIndexAdapter]) -> None:
    """Same vector -> 1, orthogonal -> 0, opposite -> clamped to 0, for a distance metric."""
    store = VectorStore(open_adapter(metric="L2", algorithm="FLAT"))
    e = np.eye(4, dtype=np.float32)
    store.upsert_chunks(
        "t1",
        [
            make_record(e[0], doc="a", index=0),
            make_record(e[1], doc="a", index=1),
            make_record(-e[0], doc="a", index=2),
        ],
    )
    hits = {h.record.chunk_index: h.score for h in store.search("t1", e[0], 3)}
    # 1 and 2 tie at 0: their order is not promised, only their scores.
    assert hits == pytest.approx({0: 1.0, 1: 0.0, 2: 0.0}, abs=1e-6)
    assert max(hits, key=hits.__getitem__) == 0


def test_search_returns_whole_records(open_adapter: Callable[..., RedisIndexAdapter]) -> None:
    rng = np.random.default_rng(1)
    rec = make_record(unit(rng), tags=["a,b", "x y"], language="en")
    store = VectorStore(open_adapter())
    store.upsert_chunks("t1", [rec])
    (hit,) = store.search("t1", rec.vector, 5)
    got = hit.record
    assert got.vector.dtype == np.float32
    assert np.array_equal(got.vector, rec.vector)
    for field in ("chunk_id", "tenant_id", "library_id", "book_id", "doc_id", "chunk_index",
                  "content", "embedding_model", "source_path", "mtime", "content_hash",
                  "token_count", "tags", "language"):  # fmt: skip
        assert getattr(got, field) == getattr(rec, field), field


def test_upsert_replaces_every_field(open_adapter: Callable[..., RedisIndexAdapter]) -> None:
    rng = np.random.default_rng(2)
    adapter = open_adapter()
    store = VectorStore(adapter)
    rec = make_record(unit(rng), tags=["old"], language="en")
    store.upsert_chunks("t1", [rec])
    rec2 = make_record(rec.vector, tags=[], language=None)
    store.upsert_chunks("t1", [rec2])
    assert adapter.total_count() == 1
    assert store.search("t1", rec.vector, 5, ChunkFilters(language="en")) == []
    assert store.search("t1", rec.vector, 5, ChunkFilters(tags=["old"])) == []
    (hit,) = store.search("t1", rec.vector, 5)
    assert hit.record.tags == [] and hit.record.language is None


# -- tenants, libraries, filters -----------------------------------------------------------
def test_tenants_and_libraries_never_see_each_other(
    open_adapter: Callable[..., RedisIndexAdapter],
) -> None:
    rng = np.random.default_rng(3)
    adapter = open_adapter()
    store = VectorStore(adapter)
    shared = unit(rng)  # the same vector everywhere: only the filters can tell them apart
    for tenant in ("acme", "globex"):
        store.upsert_chunks(
            tenant,
            [
                make_record(shared, tenant=tenant, library=lib, doc="same.txt", index=i)
                for lib in ("docs", "wiki")
                for i in range(3)
            ],
        )
        for lib in ("docs", "wiki"):
            adapter.set_doc_state(tenant, lib, DocState("same.txt", 1.0, 10, "h", 3))
    assert adapter.total_count() == 12

    for tenant in ("acme", "globex"):
        hits = store.search(tenant, shared, 50)
        assert len(hits) == 6 and {h.record.tenant_id for h in hits} == {tenant}
        hits = store.search(tenant, shared, 50, ChunkFilters(library_ids=["wiki"]))
        assert {(h.record.tenant_id, h.record.library_id) for h in hits} == {(tenant, "wiki")}
    assert store.search("nobody", shared, 50) == []
    assert store.search("acme", shared, 50, ChunkFilters(library_ids=[])) == []

    assert adapter.doc_ids("acme", "docs") == {"same.txt"}
    assert adapter.doc_ids("acme", "nothing") == set()
    assert adapter.delete_by_doc("acme", "docs", "same.txt") == 3
    assert adapter.doc_ids("acme", "docs") == set()
    assert adapter.doc_ids("globex", "docs") == {"same.txt"}
    assert adapter.count("acme", "docs") == 0
    assert adapter.count("acme", "wiki") == 3
    assert adapter.count("globex", "docs") == 3

    assert adapter.drop_library("globex", "wiki") == 3
    assert adapter.doc_states("globex", "wiki") == {}
    assert set(adapter.doc_states("globex", "docs")) == {"same.txt"}
    assert set(adapter.doc_states("acme", "wiki")) == {"same.txt"}
    assert adapter.count("acme", "wiki") == 3
    assert adapter.count("globex", "docs") == 3
    assert adapter.total_count() == 6


def test_filters_match_memory(open_adapter: Callable[..., RedisIndexAdapter]) -> None:
    records = clustered_records(dims=16)
    redis_store = VectorStore(open_adapter(algorithm="FLAT"))
    memory_store = VectorStore(MemoryIndexAdapter())
    t1 = [r for r in records if r.tenant_id == "t1"]
    redis_store.upsert_chunks("t1", t1)
    memory_store.upsert_chunks("t1", t1)
    query = t1[5].vector
    cases = [
        ChunkFilters(book_ids=["book1"]),
        ChunkFilters(tags=["tag2"]),
        ChunkFilters(tags=["tag0", "tag2"]),
        ChunkFilters(language="en"),
        ChunkFilters(library_ids=["lib0"], book_ids=["book0"], tags=["tag1"], language="en"),
        ChunkFilters(tags=["missing"]),
        ChunkFilters(book_ids=[]),
        ChunkFilters(tags=[]),
        ChunkFilters(library_ids=["lib0", "lib1"]),
    ]
    for scope in cases:
        got = {h.record.chunk_id for h in redis_store.search("t1", query, 500, scope)}
        want = {h.record.chunk_id for h in memory_store.search("t1", query, 500, scope)}
        assert got == want, scope
    en = redis_store.search("t1", query, 500, ChunkFilters(language="en"))
    assert en and all(h.record.language == "en" for h in en)


def test_ids_with_special_characters_stay_exact(
    open_adapter: Callable[..., RedisIndexAdapter],
) -> None:
    """Commas, spaces, braces, case, unicode: each id matches itself only (library escaping)."""
    rng = np.random.default_rng(4)
    adapter = open_adapter()
    store = VectorStore(adapter)
    docs = ["a,b.txt", "A,B.txt", "x|y {z}.md", "dir/ü-é (1).md", "@:;'\"*?~!$%^&=+<>\\", "-",
            "sp ace.txt", "sp  ace.txt", "中文/文档.txt"]  # fmt: skip
    tenant, library = "Acme Corp, Inc.", "my-lib {v2}"
    store.upsert_chunks(
        tenant,
        [
            make_record(unit(rng), tenant=tenant, library=library, doc=d, index=i, tags=[d])
            for d in docs
            for i in range(2)
        ],
    )
    for d in docs:
        hits = store.search(tenant, unit(rng), 50, ChunkFilters(tags=[d]))
        assert {h.record.doc_id for h in hits} == {d}
        assert [c.doc_id for c in adapter.get_doc_chunks(tenant, library, d)] == [d, d]
    assert adapter.count("acme corp, inc.", library) == 0  # case-sensitive
    assert adapter.doc_ids(tenant, library) == set(docs)
    for n, d in enumerate(docs, start=1):
        assert adapter.delete_by_doc(tenant, library, d) == 2
        assert adapter.count(tenant, library) == 2 * (len(docs) - n)


def test_ids_redis_cannot_match_exactly_are_refused(
    open_adapter: Callable[..., RedisIndexAdapter],
) -> None:
    rng = np.random.default_rng(5)
    adapter = open_adapter()
    store = VectorStore(adapter)
    store.upsert_chunks("t1", [make_record(unit(rng))])
    for bad in [" lead.txt", "trail.txt ", "tab\t.txt", "new\nline.txt", "", "x" * 5000]:
        with pytest.raises(ValidationError, match="cannot be stored in the Redis index"):
            store.upsert_chunks("t1", [make_record(unit(rng)), make_record(unit(rng), doc=bad)])
    with pytest.raises(ValidationError):
        store.upsert_chunks("t1", [make_record(unit(rng), tags=["ok", " bad"])])
    assert adapter.total_count() == 1  # nothing of a refused batch was written


# -- deletes, moves, chunks of a document --------------------------------------------------
def test_delete_and_move_counts(open_adapter: Callable[..., RedisIndexAdapter]) -> None:
    rng = np.random.default_rng(6)
    adapter = open_adapter()
    store = VectorStore(adapter)
    records = [
        make_record(unit(rng), book=book, doc=f"{book}/{d}.txt", index=i)
        for book in ("b1", "b2")
        for d in ("x", "y")
        for i in range(4)
    ]
    store.upsert_chunks("t1", records)
    assert store.delete_by_doc("t1", "lib", "b1/x.txt") == 4
    assert store.delete_by_doc("t1", "lib", "b1/x.txt") == 0
    assert store.delete_by_doc("t1", "lib", "unknown.txt") == 0
    assert store.delete_by_doc("t2", "lib", "b1/y.txt") == 0  # other tenant

    assert store.move_book("t1", "b2", "archive") == 8
    assert store.move_book("t1", "b2", "archive") == 0  # already there
    assert store.move_book("t2", "b1", "archive") == 0
    assert adapter.count("t1", "lib") == 4
    assert adapter.count("t1", "archive") == 8
    moved = adapter.get_doc_chunks("t1", "archive", "b2/y.txt")
    assert [c.chunk_index for c in moved] == [0, 1, 2, 3]
    original = [r for r in records if r.doc_id == "b2/y.txt"]
    for got, want in zip(moved, original, strict=True):
        assert got.library_id == "archive"
        assert np.array_equal(got.vector, want.vector)  # vectors stay, no re-embedding
    assert adapter.get_doc_chunks("t1", "lib", "b2/y.txt") == []


def test_get_doc_chunks_in_order_with_vectors(
    open_adapter: Callable[..., RedisIndexAdapter],
) -> None:
    rng = np.random.default_rng(8)
    adapter = open_adapter()
    records = [make_record(unit(rng), index=i) for i in (3, 0, 2, 1)]
    VectorStore(adapter).upsert_chunks("t1", records)
    chunks = adapter.get_doc_chunks("t1", "lib", "book/doc.txt")
    assert [c.chunk_index for c in chunks] == [0, 1, 2, 3]
    by_index = {r.chunk_index: r for r in records}
    for c in chunks:
        assert np.array_equal(c.vector, by_index[c.chunk_index].vector)
        assert c.mtime == 1700000000.123456 and c.token_count == 10 + c.chunk_index


def test_more_chunks_than_the_servers_result_cap(
    redis_server_factory: Callable[..., RedisServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Deletes, moves and counts past RediSearch's result cap (MAXSEARCHRESULTS: 10,000 on
    some servers; 2,000 here, with pages of 100 instead of PAGE's 1,000, so the same paging
    runs on a fifth of the chunks)."""
    monkeypatch.setattr(redis_adapter, "PAGE", 100)
    server = redis_server_factory(search_args=["MAXSEARCHRESULTS", "2000"])
    adapter = RedisIndexAdapter(server.url, "big", algorithm="FLAT")
    try:
        rng = np.random.default_rng(9)
        vectors = rng.normal(size=(2_040, 8)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        big = [
            make_record(v, book="big", doc="big/huge.csv", index=i) for i, v in enumerate(vectors)
        ]
        small = [
            make_record(v, book="small", doc="small/a.txt", index=i)
            for i, v in enumerate(vectors[:100])
        ]
        store = VectorStore(adapter)
        store.upsert_chunks("t1", big + small)
        assert adapter.total_count() == 2_140
        assert adapter.count("t1", "lib") == 2_140
        assert len(store.search("t1", vectors[0], 5)) == 5
        assert adapter.move_book("t1", "big", "lib2") == 2_040
        assert adapter.count("t1", "lib2") == 2_040
        assert adapter.delete_by_doc("t1", "lib2", "big/huge.csv") == 2_040
        assert adapter.total_count() == 100
        store.upsert_chunks("t1", big)
        assert adapter.drop_library("t1", "lib") == 2_140
        assert adapter.total_count() == 0
    finally:
        adapter.close()


def test_listings_page_without_offsets(
    open_adapter: Callable[..., RedisIndexAdapter], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listings page by chunk_index or by cursor (never by offset): no result cap applies."""
    monkeypatch.setattr(redis_adapter, "PAGE", 7)
    rng = np.random.default_rng(14)
    adapter = open_adapter(algorithm="FLAT")
    VectorStore(adapter).upsert_chunks(
        "t1",
        [make_record(unit(rng, 8), index=i) for i in range(50)]
        + [make_record(unit(rng, 8), doc="other.txt", index=i) for i in range(10)],
    )
    assert [c.chunk_index for c in adapter.get_doc_chunks("t1", "lib", "book/doc.txt")] == list(
        range(50)
    )
    many = [make_record(unit(rng, 8), book="many", doc=f"many/{d}.txt") for d in range(20)]
    VectorStore(adapter).upsert_chunks("t1", many)
    assert adapter.doc_ids("t1", "lib") == {"book/doc.txt", "other.txt"} | {r.doc_id for r in many}
    assert adapter.move_book("t1", "book", "lib2") == 60
    assert adapter.doc_ids("t1", "lib2") == {"book/doc.txt", "other.txt"}
    assert adapter.delete_by_doc("t1", "lib2", "book/doc.txt") == 50
    assert adapter.drop_library("t1", "lib2") == 10


# -- index meta, document states -----------------------------------------------------------
def test_describe_survives_a_new_connection(
    open_adapter: Callable[..., RedisIndexAdapter],
) -> None:
    first = open_adapter(algorithm="FLAT", metric="IP")
    assert first.describe() is None
    assert first.total_count() == 0 and first.count("t1", "lib") == 0
    VectorStore(first).upsert_chunks("t1", [make_record(unit(np.random.default_rng(10)))])
    second = open_adapter(algorithm="FLAT", metric="IP")
    assert second.describe() == IndexInfo(MODEL, DIMS)
    assert second.total_count() == 1
    second.create(IndexInfo(MODEL, DIMS))  # same info: a no-op
    assert second.total_count() == 1
    with pytest.raises(StoreError):
        second.create(IndexInfo("other-model", 8))


def test_index_settings_win_over_configured_ones(
    open_adapter: Callable[..., RedisIndexAdapter], caplog: pytest.LogCaptureFixture
) -> None:
    e0 = np.eye(DIMS, dtype=np.float32)[0]
    first = open_adapter(algorithm="FLAT", metric="L2")
    VectorStore(first).upsert_chunks("t1", [make_record(e0)])
    other = open_adapter(algorithm="HNSW", metric="COSINE")
    with caplog.at_level(logging.WARNING):
        (hit,) = VectorStore(other).search("t1", e0, 1)
    assert "created with FLAT/L2" in caplog.text
    assert hit.score == pytest.approx(1.0, abs=1e-6)  # L2 distance converted as L2
    assert other.stats("t1", "lib")["metric"] == "L2"


def test_recreate_drops_everything(open_adapter: Callable[..., RedisIndexAdapter]) -> None:
    rng = np.random.default_rng(12)
    adapter = open_adapter()
    VectorStore(adapter).upsert_chunks("t1", [make_record(unit(rng), index=i) for i in range(5)])
    adapter.set_doc_state("t1", "lib", DocState("book/doc.txt", 1.0, 5, "h", 5))
    adapter.recreate(IndexInfo("new-model", 16))
    assert adapter.describe() == IndexInfo("new-model", 16)
    assert adapter.total_count() == 0
    assert adapter.doc_states("t1", "lib") == {}
    again = open_adapter()
    assert again.describe() == IndexInfo("new-model", 16)
    VectorStore(again).upsert_chunks("t1", [make_record(unit(rng, 16), model="new-model")])
    assert again.total_count() == 1


def test_doc_states_round_trip(open_adapter: Callable[..., RedisIndexAdapter]) -> None:
    adapter = open_adapter()
    a = DocState("docs/a.md", 1712345678.987654, 1234, "sha-a", 7)
    b = DocState("docs/b, c.md", 1.5, 0, "sha-b", 0)
    adapter.set_doc_state("t1", "lib", a)
    adapter.set_doc_state("t1", "lib", b)
    adapter.set_doc_state("t1", "other", b)
    assert open_adapter().doc_states("t1", "lib") == {a.doc_id: a, b.doc_id: b}
    a2 = DocState("docs/a.md", 2.0, 1, "sha-a2", 1)
    adapter.set_doc_state("t1", "lib", a2)
    adapter.delete_doc_state("t1", "lib", b.doc_id)
    adapter.delete_doc_state("t1", "lib", "never-there")
    assert adapter.doc_states("t1", "lib") == {a.doc_id: a2}
    assert adapter.doc_states("t1", "other") == {b.doc_id: b}
    assert adapter.doc_states("t2", "lib") == {}
    stats = adapter.stats("t1", "lib")
    assert stats["documents"] == 1 and stats["chunks"] == 0


def test_library_owners_round_trip(open_adapter: Callable[..., RedisIndexAdapter]) -> None:
    adapter = open_adapter()
    owner = {"project_id": "p1", "source": "docs", "description": "docs of /a"}
    assert adapter.library_owner("t1", "lib") is None
    adapter.set_library_owner("t1", "lib", owner)
    adapter.set_library_owner("t1", "lib, other", {"project_id": "p2", "source": "x"})
    assert open_adapter().library_owner("t1", "lib") == owner
    adapter.set_library_owner("t1", "lib", {"project_id": "p3", "source": "y"})
    assert adapter.library_owner("t1", "lib") == {"project_id": "p3", "source": "y"}  # replaced
    assert adapter.library_owner("t2", "lib") is None
    adapter.recreate(IndexInfo("new-model", 16))  # drops chunks, not who fills the library
    assert adapter.library_owner("t1", "lib, other") == {"project_id": "p2", "source": "x"}


# -- connections, passwords, locks ---------------------------------------------------------
def _all_text(exc: BaseException) -> str:
    """The exception with its whole chain, as a traceback would print it."""
    return "".join(traceback.format_exception(exc))


def test_connection_refused_names_the_redacted_url() -> None:
    url = f"redis://holo:s3cr3t-pw@127.0.0.1:{free_port()}/0"
    with pytest.raises(ConnectionError) as info:
        RedisIndexAdapter(url)
    assert f"redis://holo:***@127.0.0.1:{url.rsplit(':', 1)[1]}" in str(info.value)
    assert "s3cr3t-pw" not in _all_text(info.value)


def test_password_protected_server(
    redis_server_factory: Callable[..., RedisServer],
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
) -> None:
    password = "hunter2-very-secret"
    server = redis_server_factory(password=password)
    url: str = server.url
    assert url.startswith(f"redis://:{password}@")
    caplog.set_level(logging.DEBUG)
    adapter = RedisIndexAdapter(url, "pw_index")
    rng = np.random.default_rng(13)
    store = VectorStore(adapter)
    rec = make_record(unit(rng))
    store.upsert_chunks("t1", [rec])
    assert store.search("t1", rec.vector, 1)[0].record.chunk_id == rec.chunk_id
    assert password not in repr(adapter) and "***" in repr(adapter)
    assert password not in str(adapter.stats("t1", "lib"))

    errors: list[BaseException] = []
    for wrong in (url.replace(password, "wrong-pw"), url.replace(f":{password}@", "")):
        with pytest.raises(ConfigError, match="refused the login") as refused:
            RedisIndexAdapter(wrong, "pw_index")  # a user's mistake, not an outage
        errors.append(refused.value)
    assert "redis://:***@127.0.0.1" in str(errors[0])

    server.kill()  # lost after start: an IngestError (exit 3), never the start-up fallback
    for call in (
        lambda: store.upsert_chunks("t1", [make_record(unit(rng), index=1)]),
        lambda: store.search("t1", rec.vector, 1),
        lambda: adapter.delete_by_doc("t1", "lib", rec.doc_id),
        lambda: adapter.doc_states("t1", "lib"),
    ):
        with pytest.raises(IngestError, match="lost the connection to Redis") as info:
            call()
        assert "redis://:***@127.0.0.1" in str(info.value)
        assert "re-run repairs the index" in str(info.value)
        assert not isinstance(info.value, ConnectionError)
        errors.append(info.value)
    adapter.close()

    out = capsys.readouterr()
    for text in [out.out, out.err, caplog.text, *(_all_text(e) for e in errors)]:
        assert password not in text


def test_a_restarted_empty_server_is_never_written_blindly(
    redis_server_factory: Callable[..., RedisServer],
) -> None:
    """The meta is cached; a server that came back empty is noticed, never half-written."""
    server = redis_server_factory()
    adapter = RedisIndexAdapter(server.url, "restart")
    store = VectorStore(adapter)
    rng = np.random.default_rng(15)
    store.upsert_chunks("t1", [make_record(unit(rng))])
    server.kill()
    server.start()  # same port, no persistence: empty
    with pytest.raises(IngestError, match="no longer exists"):
        store.search("t1", unit(rng), 3)
    assert adapter.describe() is None
    store.upsert_chunks("t1", [make_record(unit(rng), index=1)])  # creates it anew

    server.kill()
    server.start()
    with pytest.raises(IngestError, match="no longer exists"):
        store.upsert_chunks("t1", [make_record(unit(rng), index=2)])
    assert not redis.Redis.from_url(server.url).keys("restart:chunk:*")
    store.upsert_chunks("t1", [make_record(unit(rng), index=3)])
    assert adapter.total_count() == 1
    adapter.close()


def test_server_without_query_engine(redis_server_factory: Callable[..., RedisServer]) -> None:
    server = redis_server_factory(search=False)
    with pytest.raises(ConfigError, match="no Query Engine"):
        RedisIndexAdapter(server.url)


def test_bad_settings_are_config_errors(redis_url: str) -> None:
    with pytest.raises(ConfigError, match="algorithm"):
        RedisIndexAdapter(redis_url, algorithm="IVF")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="metric"):
        RedisIndexAdapter(redis_url, metric="DOT")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="index name"):
        RedisIndexAdapter(redis_url, index_name="a b*")
    with pytest.raises(ConfigError, match=r"invalid Redis URL http://u:\*\*\*@h"):
        RedisIndexAdapter("http://u:pw@h:1")


def test_library_lock_times_out_with_a_clear_error(
    open_adapter: Callable[..., RedisIndexAdapter],
) -> None:
    holder, other = open_adapter(), open_adapter()
    with holder.library_lock("t1", "docs", timeout=1):
        start = time.monotonic()
        with (
            pytest.raises(IngestError, match=r"another ingest of library 'docs'.*waited 0.3 s"),
            other.library_lock("t1", "docs", timeout=0.3),
        ):
            pass
        # It waited its own timeout (a lower bound holds under any load), then gave up
        # although the holder never let go: reaching this line is the proof.
        assert time.monotonic() - start >= 0.29
        with other.library_lock("t1", "wiki", timeout=0.3):  # another library: free
            pass
        with other.library_lock("t2", "docs", timeout=0.3):  # another tenant: free
            pass
    with other.library_lock("t1", "docs", timeout=0.3):  # released
        pass


def test_library_lock_is_renewed_while_held(
    open_adapter: Callable[..., RedisIndexAdapter], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOLODECK_REDIS_LOCK_TTL", "0.6")  # renewed every 0.2 s
    holder, other = open_adapter(), open_adapter()
    acquired = threading.Event()
    with holder.library_lock("t1", "docs", timeout=1):
        time.sleep(1.5)  # well past the TTL
        with pytest.raises(IngestError), other.library_lock("t1", "docs", timeout=0.2):
            acquired.set()
    assert not acquired.is_set()


def test_a_crashed_holder_frees_the_lock(
    open_adapter: Callable[..., RedisIndexAdapter], redis_url: str, redis_index_name: str
) -> None:
    """A holder that died (no renewal, no release) blocks the next ingest for its TTL at most."""
    client = redis.Redis.from_url(redis_url)
    key = f"{redis_index_name}:lock:" + json.dumps(["t1", "docs"])
    client.set(key, "token-of-a-dead-process", px=800)
    client.close()
    adapter = open_adapter()
    with pytest.raises(IngestError), adapter.library_lock("t1", "docs", timeout=0.2):
        pass
    with adapter.library_lock("t1", "docs", timeout=3):
        pass


def test_an_index_from_before_keyword_search_gains_it_in_place(
    redis_url: str, redis_index_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """An index (and chunks) written by 0.1, without the keyword fields: opening it adds them
    (FT.ALTER), fills them on the stored chunks, and keyword search finds those chunks."""
    client = redis.Redis.from_url(redis_url)
    name = redis_index_name
    tag = ["SEPARATOR", redis_fields.TAG_SEPARATOR, "CASESENSITIVE"]
    schema = [f for field in redis_fields.TAG_FIELDS for f in (field, "TAG", *tag)]
    client.execute_command(
        "FT.CREATE", name, "ON", "HASH", "PREFIX", "1", f"{name}:chunk:", "SCHEMA", *schema,
        "chunk_index", "NUMERIC", "SORTABLE",
        "vector", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM", str(DIMS),
        "DISTANCE_METRIC", "COSINE",
    )  # fmt: skip
    client.hset(
        f"{name}:meta",
        mapping={"embedding_model": MODEL, "dimensions": DIMS, "algorithm": "HNSW",
                 "metric": "COSINE"},
    )  # fmt: skip
    rng = np.random.default_rng(3)
    old = make_record(unit(rng))
    old.content = "The walrus uses max_retries when the tide is late."
    row = redis_fields.to_hash(old)
    for field in ("stems", "idents"):
        del row[field]  # what 0.1 wrote
    client.hset(f"{name}:chunk:{old.chunk_id}", mapping=row)

    with caplog.at_level(logging.INFO, logger="holodeck"):
        adapter = RedisIndexAdapter(redis_url, index_name=name)
        store = VectorStore(adapter)
        store.describe_index()
    assert any("gained the fields of keyword search" in m for m in caplog.messages)
    scope = ChunkFilters(library_ids=["lib"])
    deadline = time.monotonic() + 60  # a loaded machine indexes slowly
    found: list = []
    while not found and time.monotonic() < deadline:  # the server indexes in the background
        found = store.keyword_search("t1", "walrus tide", 5, scope)
        time.sleep(0.1)
    assert [h.record.chunk_id for h in found] == [old.chunk_id]
    assert [h.record.chunk_id for h in store.identifier_holders("t1", "max_retries", 5, scope)] == [
        old.chunk_id
    ]
    assert store.keyword_search("t2", "walrus tide", 5, scope) == []
    adapter.close()


def test_sections_round_trip_and_chunks_of_older_releases_read_without_one(
    open_adapter: Callable[..., RedisIndexAdapter], redis_url: str, redis_index_name: str
) -> None:
    rng = np.random.default_rng(7)
    adapter = open_adapter()
    store = VectorStore(adapter)
    new = make_record(unit(rng), doc="book/new.md")
    new.section = "EXAMPLES › Undo a commit"
    store.upsert_chunks("t1", [new])
    old = make_record(unit(rng), doc="book/old.md")
    row = redis_fields.to_hash(old)
    del row["section"]  # what a release before sections wrote
    redis.Redis.from_url(redis_url).hset(f"{redis_index_name}:chunk:{old.chunk_id}", mapping=row)

    (got_new,) = store.doc_chunks("t1", "lib", "book/new.md")
    (got_old,) = store.doc_chunks("t1", "lib", "book/old.md")
    assert got_new.section == "EXAMPLES › Undo a commit"
    assert got_old.section == "" and got_old.content == old.content
    hits = store.search("t1", old.vector, 2)
    assert {h.record.doc_id: h.record.section for h in hits} == {
        "book/new.md": "EXAMPLES › Undo a commit",
        "book/old.md": "",
    }


def _crowded(adapter: RedisIndexAdapter, n: int = 20_000) -> list[ChunkRecord]:
    """``n`` chunks that all hold seven of the query's words (a long scan); the last ten,
    which a scan reaches last, also say its rare word, so they are its ten best."""
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(n, 8)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    records = [make_record(v, doc=f"book/d{i // 1000}.md", index=i) for i, v in enumerate(vectors)]
    for i, rec in enumerate(records):
        rec.content = "alpha beta gamma delta epsilon zeta theta" + " omega" * (i >= n - 10)
    VectorStore(adapter).upsert_chunks("t1", records)
    return records


def test_a_servers_short_query_limit_never_cuts_a_ranking(
    redis_server_factory: Callable[..., RedisServer],
) -> None:
    """The Query Engine's own limit (1 ms here, 500 by default) with its default policy hands
    back a partial ranking as if whole; holodeck's queries ask for their own budget."""
    server = redis_server_factory(search_args=["TIMEOUT", "1"])
    adapter = RedisIndexAdapter(server.url, "crowded", algorithm="FLAT")
    try:
        records = _crowded(adapter)
        query = "alpha beta gamma delta epsilon zeta theta omega"
        hits = adapter.keyword_search("t1", query, 10, ChunkFilters())
        assert {h.record.chunk_id for h in hits} == {r.chunk_id for r in records[-10:]}
        assert adapter.count("t1", "lib") == len(records)
        assert adapter.doc_ids("t1", "lib") == {r.doc_id for r in records}
    finally:
        adapter.close()


def test_a_query_that_runs_out_of_time_is_refused_not_ranked(
    redis_server_factory: Callable[..., RedisServer], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = redis_server_factory()
    adapter = RedisIndexAdapter(server.url, "crowded", algorithm="FLAT")
    try:
        _crowded(adapter)
        query = "alpha beta gamma delta epsilon zeta theta omega"
        monkeypatch.setattr(redis_queries, "QUERY_TIMEOUT_MS", 1)  # a query here takes ~10 ms
        for policy in ("return", "fail"):
            redis.Redis.from_url(server.url).execute_command(
                "FT.CONFIG", "SET", "ON_TIMEOUT", policy
            )
            with pytest.raises(HoloDeckError, match="answer would be partial"):
                adapter.keyword_search("t1", query, 10, ChunkFilters())
    finally:
        adapter.close()
