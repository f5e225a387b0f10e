"""The postgres adapter against a real PostgreSQL with pgvector (no mocks).

The memory adapter is the reference for the vector side: the same records searched through
both give the same ids and scores, for every algorithm and metric. The rest is what every
store promises: isolation, counts, moves without re-embedding, states, owners, one
transaction per document that readers never wait for, the lock, the schema's versions, and
the contract's errors (unreachable at start: fall back; lost later: a clear error).
"""

from __future__ import annotations

import logging
import math
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import psycopg
import pytest
from postgres_server import PostgresServer, fresh_database
from redis_server import free_port

from holodeck.config.vectorstore_tool import DatabaseConfig
from holodeck.errors import ConfigError, IngestError, IngestRunning, ValidationError
from holodeck.vectorstore import postgres as pg
from holodeck.vectorstore.factory import open_index
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.postgres import PostgresIndexAdapter
from holodeck.vectorstore.records import (
    ChunkFilters,
    ChunkRecord,
    DocState,
    IndexInfo,
    chunk_id_for,
)
from holodeck.vectorstore.store import VectorStore

pytestmark = pytest.mark.postgres

MODEL = "test-model"
_OPCLASS = {"COSINE": "vector_cosine_ops", "L2": "vector_l2_ops", "IP": "vector_ip_ops"}
DIMS = 64


def unit(rng: np.random.Generator, dims: int = DIMS) -> np.ndarray:
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
    content: str | None = None,
) -> ChunkRecord:
    return ChunkRecord(
        chunk_id=chunk_id_for(tenant, library, doc, index),
        tenant_id=tenant,
        library_id=library,
        book_id=book,
        doc_id=doc,
        chunk_index=index,
        content=content if content is not None else f"{tenant}/{library}/{doc}#{index}",
        vector=vector,
        embedding_model=MODEL,
        source_path=f"/src/{doc}",
        mtime=1700000000.123456,
        content_hash=f"hash-{index}",
        token_count=10 + index,
        tags=list(tags or []),
        language=language,
        location=f"lines {index}-{index + 1}",
        section="Guide › Setup",
    )


@pytest.fixture
def open_adapter(pg_url: str, pg_index_name: str) -> Iterator[Callable[..., PostgresIndexAdapter]]:
    """Adapters on the test's own index (new connections each call); all closed after."""
    opened: list[PostgresIndexAdapter] = []

    def open_(**kwargs: str) -> PostgresIndexAdapter:
        kwargs.setdefault("index_name", pg_index_name)
        adapter = PostgresIndexAdapter(pg_url, **kwargs)  # type: ignore[arg-type]
        opened.append(adapter)
        return adapter

    yield open_
    for adapter in opened:
        adapter.close()


def clustered_records() -> list[ChunkRecord]:
    """240 records in 12 clusters, two tenants, two libraries, books, tags and languages."""
    rng = np.random.default_rng(42)
    records = []
    for c in range(12):
        center = unit(rng)
        for i in range(20):
            v = center + 0.35 * unit(rng)
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


@pytest.mark.parametrize("algorithm", ["HNSW", "FLAT"])
@pytest.mark.parametrize("metric", ["COSINE", "L2", "IP"])
def test_same_hits_and_scores_as_memory(
    open_adapter: Callable[..., PostgresIndexAdapter],
    algorithm: str,
    metric: str,
    pg_url: str,
    pg_index_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Exact scans, and pgvector's HNSW index once the ingest's end (``flush``) finds the
    index past ``HNSW_FROM`` chunks (lowered here: the 240 records pass it)."""
    monkeypatch.setattr(pg, "HNSW_FROM", 200)
    records = clustered_records()
    pg_store = VectorStore(open_adapter(algorithm=algorithm, metric=metric))
    memory_store = VectorStore(MemoryIndexAdapter())
    for tenant in ("t1", "t2"):
        batch = [r for r in records if r.tenant_id == tenant]
        pg_store.upsert_chunks(tenant, batch)
        memory_store.upsert_chunks(tenant, batch)
        pg_store.flush()
    with psycopg.connect(pg_url) as conn:
        made = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = %s",
            (f"{pg_index_name}_chunks_vector",),
        ).fetchall()
    assert [("USING hnsw" in d and _OPCLASS[metric] in d) for (d,) in made] == (
        [True] if algorithm == "HNSW" else []
    )
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
            got = pg_store.search(probe.tenant_id, query, 8, scope)
            want = memory_store.search(probe.tenant_id, query, 8, scope)
            assert [h.record.chunk_id for h in got] == [h.record.chunk_id for h in want]
            assert [h.score for h in got] == pytest.approx([h.score for h in want], abs=1e-3)
            compared += len(got)
    assert compared > 100
    stats = pg_store.adapter.stats("t1", "lib0")
    assert (stats["algorithm"], stats["metric"], stats["dimensions"]) == (algorithm, metric, DIMS)


def test_the_hnsw_index_waits_for_size_and_a_rebuild_drops_it(
    open_adapter: Callable[..., PostgresIndexAdapter],
    pg_url: str,
    pg_index_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pg, "HNSW_FROM", 30)
    adapter = open_adapter()
    store = VectorStore(adapter)
    rng = np.random.default_rng(20)

    def vector_index() -> bool:
        with psycopg.connect(pg_url) as conn:
            name = f'"{pg_index_name}_chunks_vector"'
            return bool(conn.execute("SELECT to_regclass(%s)", (name,)).fetchone()[0])

    store.upsert_chunks("t1", [make_record(unit(rng), index=i) for i in range(20)])
    store.flush()
    assert not vector_index()  # 20 chunks: searched exactly
    store.upsert_chunks("t1", [make_record(unit(rng), index=i) for i in range(20, 40)])
    store.flush()
    assert vector_index()
    probe = adapter.get_doc_chunks("t1", "lib", "book/doc.txt")[33]
    assert store.search("t1", probe.vector, 1, ChunkFilters())[0].record.chunk_id == probe.chunk_id
    adapter.recreate(IndexInfo(MODEL, DIMS))
    assert not vector_index()


def test_an_ingests_end_refreshes_the_planners_statistics(
    open_adapter: Callable[..., PostgresIndexAdapter],
    pg_url: str,
    pg_index_name: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A table just filled looks empty to the planner until it is analysed (then it scans
    and sorts every vector instead of using the HNSW index): flush analyses it after many
    writes."""
    monkeypatch.setattr(pg, "ANALYZE_AFTER", 30)
    store = VectorStore(open_adapter())
    rng = np.random.default_rng(22)

    def analysed() -> bool:
        with psycopg.connect(pg_url) as conn:
            row = conn.execute(
                "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = %s",
                (f"{pg_index_name}_chunks",),
            ).fetchone()
        return row is not None and row[0] is not None

    store.upsert_chunks("t1", [make_record(unit(rng), index=i) for i in range(20)])
    store.flush()
    assert not analysed()
    store.upsert_chunks("t1", [make_record(unit(rng), index=i) for i in range(20, 40)])
    store.flush()
    deadline = time.monotonic() + 30  # the statistics collector reports a moment later
    while not analysed():
        assert time.monotonic() < deadline, "the chunks table was never analysed"
        time.sleep(0.1)


def test_records_come_back_whole_and_upsert_replaces_every_field(
    open_adapter: Callable[..., PostgresIndexAdapter],
) -> None:
    adapter = open_adapter()
    store = VectorStore(adapter)
    rec = make_record(unit(np.random.default_rng(1)), tags=["a", "b c"], language="en")
    store.upsert_chunks("t1", [rec])
    (hit,) = store.search("t1", rec.vector, 1, ChunkFilters())
    got = hit.record
    assert (got.chunk_id, got.tags, got.language, got.location, got.section) == (
        rec.chunk_id,
        ["a", "b c"],
        "en",
        "lines 0-1",
        "Guide › Setup",
    )
    assert got.mtime == rec.mtime and got.token_count == rec.token_count
    np.testing.assert_allclose(got.vector, rec.vector, atol=1e-7)
    changed = make_record(unit(np.random.default_rng(2)), content="new text", tags=[])
    store.upsert_chunks("t1", [changed])
    (again,) = adapter.get_doc_chunks("t1", "lib", "book/doc.txt")
    assert (again.content, again.tags, again.language) == ("new text", [], None)
    assert adapter.total_count() == 1


def test_tenants_and_libraries_never_see_each_other(
    open_adapter: Callable[..., PostgresIndexAdapter],
) -> None:
    store = VectorStore(open_adapter())
    v = unit(np.random.default_rng(3))
    text = "the PURPLE-OTTER flag"
    for tenant, library in (("t1", "a"), ("t1", "b"), ("t2", "a")):
        store.upsert_chunks(tenant, [make_record(v, tenant, library, content=text)])
    for tenant, library in (("t1", "a"), ("t1", "b"), ("t2", "a")):
        scope = ChunkFilters(library_ids=[library])
        found = [
            *store.search(tenant, v, 10, scope),
            *store.keyword_search(tenant, "purple otter flag", 10, scope),
            *store.identifier_holders(tenant, "PURPLE-OTTER", 10, scope),
        ]
        assert {(h.record.tenant_id, h.record.library_id) for h in found} == {(tenant, library)}
    assert store.search("t3", v, 10, ChunkFilters()) == []
    assert store.search("t1", v, 10, ChunkFilters(library_ids=[])) == []


def test_keyword_side_ranks_by_bm25_and_finds_identifiers_whole(
    open_adapter: Callable[..., PostgresIndexAdapter],
) -> None:
    adapter = open_adapter()
    store = VectorStore(adapter)
    rng = np.random.default_rng(4)
    texts = [
        "the dashboard shows the dashboard and the dashboard again",
        "set max_retries to retry a failing task; the dashboard is elsewhere",
        "a quiet page about nothing in particular",
        *(f"filler page {i} on the dashboard" for i in range(6)),
    ]
    records = [
        make_record(unit(rng), doc=f"d{i}.md", index=0, content=t) for i, t in enumerate(texts)
    ]
    store.upsert_chunks("t1", records)
    hits = store.keyword_search("t1", "retrying dashboard", 5, ChunkFilters())
    # "retry" is rare, "dashboard" everywhere: BM25's IDF puts the one rare match first
    assert hits[0].record.doc_id == "d1.md"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    # the scale is the sum of the stems' IDFs, by hand: "retry" in 1 of the 9 chunks,
    # "dashboard" in 8 (BM25STD's IDF)
    def idf(held: int) -> float:
        return math.log(1 + (len(texts) - held + 0.5) / (held + 0.5))

    assert adapter.keyword_scale("retrying dashboard") == pytest.approx(idf(1) + idf(8))
    idfs = adapter.keyword_idfs(["retrying", "dashboard"])
    assert idfs == pytest.approx({"retrying": idf(1), "dashboard": idf(8)})
    # counts are kept between searches, and counted again once the index changes
    more = [make_record(unit(rng), doc=f"r{i}.md", content="retry again") for i in range(4)]
    store.upsert_chunks("t1", more)
    assert adapter.keyword_idfs(["retrying"])["retrying"] < idfs["retrying"]
    holders = store.identifier_holders("t1", "MAX_RETRIES", 5, ChunkFilters())
    assert [h.record.doc_id for h in holders] == ["d1.md"]
    assert store.identifier_holders("t1", "max_retr", 5, ChunkFilters()) == []
    assert store.keyword_search("t1", "zebra", 5, ChunkFilters()) == []


def test_keyword_scores_are_bm25_over_every_chunk_holding_a_query_stem(
    open_adapter: Callable[..., PostgresIndexAdapter],
) -> None:
    """The SQL's scores and top 10 are BM25's as computed here by hand (FTS5's k1 and b,
    BM25STD's IDF, a repeated query word asked again), over Zipf-distributed words."""
    from holodeck.text.analysis import BM25_B, BM25_K1, stems_text
    from holodeck.vectorstore.records import indexed_text

    adapter = open_adapter()
    store = VectorStore(adapter)
    rng = np.random.default_rng(21)
    vocab = [f"word{i}" for i in range(60)]
    weights = 1 / np.arange(1, 61)  # Zipf: word0 in most chunks, word59 in few
    texts = [
        " ".join(rng.choice(vocab, size=int(rng.integers(5, 40)), p=weights / weights.sum()))
        for _ in range(400)
    ]
    store.upsert_chunks(
        "t1", [make_record(unit(rng), doc=f"d{i}.md", content=t) for i, t in enumerate(texts)]
    )
    stems = [stems_text(indexed_text(t, "Guide › Setup")).split() for t in texts]
    average = sum(map(len, stems)) / len(stems)
    for query in ("word0 word1 word2 word45", "word3 word59", "word0 word1", "word7 word7 word30"):
        got = store.keyword_search("t1", query, 10, ChunkFilters())
        asked = pg._query_stems(query)  # a repeated word weighs more, as every backend asks
        # BM25STD's IDF by hand, from the chunks that hold each stem (not the adapter's)
        idf = {
            stem: math.log(1 + (len(stems) - held + 0.5) / (held + 0.5))
            for stem in set(asked)
            for held in [sum(stem in words for words in stems)]
        }
        scores = []
        for i, words in enumerate(stems):
            score = 0.0
            for stem in asked:  # a repeated stem adds again, as the backends do
                tf = words.count(stem)
                if tf:
                    norm = 1 - BM25_B + BM25_B * len(words) / average
                    score += idf[stem] * tf * (BM25_K1 + 1) / (tf + BM25_K1 * norm)
            if score > 0:
                scores.append((-score, f"d{i}.md"))
        want = sorted(scores)[:10]
        assert [h.score for h in got] == pytest.approx([-s for s, _ in want], rel=1e-6), query
        # the same chunks (those tied at one score may come in another order)
        for score in {round(h.score, 6) for h in got[:-1]} - {round(got[-1].score, 6)}:
            assert {h.record.doc_id for h in got if round(h.score, 6) == score} == {
                doc for s, doc in want if round(-s, 6) == score
            }, query


def test_delete_move_and_listings(open_adapter: Callable[..., PostgresIndexAdapter]) -> None:
    adapter = open_adapter()
    store = VectorStore(adapter)
    rng = np.random.default_rng(5)
    records = [make_record(unit(rng), doc="book/a.md", index=i) for i in range(5)] + [
        make_record(unit(rng), book="other", doc="other/b.md", index=i) for i in range(3)
    ]
    store.upsert_chunks("t1", records)
    assert adapter.doc_ids("t1", "lib") == {"book/a.md", "other/b.md"}
    assert [r.chunk_index for r in adapter.get_doc_chunks("t1", "lib", "book/a.md")] == [
        0,
        1,
        2,
        3,
        4,
    ]
    before = {r.chunk_id: r.vector for r in adapter.get_doc_chunks("t1", "lib", "other/b.md")}
    assert adapter.move_book("t1", "other", "lib2") == 3
    assert adapter.move_book("t1", "other", "lib2") == 0
    moved = adapter.get_doc_chunks("t1", "lib2", "other/b.md")
    assert len(moved) == 3 and all(np.array_equal(before[r.chunk_id], r.vector) for r in moved)
    assert adapter.delete_by_doc("t1", "lib", "book/a.md") == 5
    assert adapter.delete_by_doc("t1", "lib", "book/a.md") == 0
    assert (adapter.count("t1", "lib"), adapter.count("t1", "lib2")) == (0, 3)
    assert adapter.drop_library("t1", "lib2") == 3 and adapter.total_count() == 0


def test_states_owners_and_describe_survive_new_connections(
    open_adapter: Callable[..., PostgresIndexAdapter],
) -> None:
    adapter = open_adapter()
    store = VectorStore(adapter)
    rec = make_record(unit(np.random.default_rng(6)))
    state = DocState("book/doc.txt", 12.5, 99, "sha", 1)
    store.write_document("t1", "lib", "book/doc.txt", [rec], state)
    adapter.set_library_owner("t1", "lib", {"project": "p1", "source": "docs"})
    adapter.set_library_owner("t1", "lib", {"project": "p2"})
    again = open_adapter()
    assert again.describe() == IndexInfo(MODEL, DIMS)
    assert again.doc_states("t1", "lib") == {"book/doc.txt": state}
    assert again.doc_stats("t1", "lib") == {"book/doc.txt": (12.5, 99)}
    assert again.library_owner("t1", "lib") == {"project": "p2"}
    assert again.library_owner("t1", "other") is None
    again.delete_doc_state("t1", "lib", "book/doc.txt")
    assert adapter.doc_states("t1", "lib") == {}
    assert again.stats("t1", "lib")["documents"] == 0


def test_index_settings_win_over_configured_ones(
    open_adapter: Callable[..., PostgresIndexAdapter], caplog: pytest.LogCaptureFixture
) -> None:
    VectorStore(open_adapter(algorithm="FLAT", metric="L2")).upsert_chunks(
        "t1", [make_record(unit(np.random.default_rng(8)))]
    )
    with caplog.at_level(logging.WARNING, logger="holodeck.vectorstore"):
        later = open_adapter(algorithm="HNSW", metric="COSINE")
        later.describe()
    stats = later.stats("t1", "lib")
    assert (stats["algorithm"], stats["metric"]) == ("FLAT", "L2")
    assert "--force-ingest" in caplog.text


def test_recreate_drops_chunks_and_states_keeps_owners(
    open_adapter: Callable[..., PostgresIndexAdapter],
) -> None:
    adapter = open_adapter()
    store = VectorStore(adapter)
    store.write_document(
        "t1", "lib", "book/doc.txt", [make_record(unit(np.random.default_rng(9)))],
        DocState("book/doc.txt", 1.0, 1, "h", 1),
    )  # fmt: skip
    adapter.set_library_owner("t1", "lib", {"project": "p"})
    adapter.recreate(IndexInfo("other-model", 16))
    fresh = open_adapter()
    assert fresh.describe() == IndexInfo("other-model", 16)
    assert (fresh.total_count(), fresh.doc_states("t1", "lib")) == (0, {})
    assert fresh.library_owner("t1", "lib") == {"project": "p"}


def test_a_document_is_one_transaction_and_readers_never_wait(
    open_adapter: Callable[..., PostgresIndexAdapter],
) -> None:
    """A search from another thread during an open batch answers at once, from what is
    committed; a failure inside the batch leaves nothing of it."""
    writer = open_adapter()
    store = VectorStore(writer)
    rng = np.random.default_rng(10)
    old = make_record(unit(rng), doc="book/old.md")
    store.upsert_chunks("t1", [old])
    seen: list[set[str]] = []
    new = [make_record(unit(rng), doc="book/new.md", index=i) for i in range(3)]
    with pytest.raises(RuntimeError, match="stop"), store.batch():
        store.write_document("t1", "lib", "book/new.md", new, DocState("book/new.md", 1, 1, "h", 3))
        assert writer.count("t1", "lib") == 4  # the writer sees its own writes

        def read() -> None:
            seen.append(writer.doc_ids("t1", "lib"))

        reader = threading.Thread(target=read)
        reader.start()
        reader.join(30)
        assert not reader.is_alive(), "a reader waited for the writer"
        raise RuntimeError("stop")
    assert seen == [{"book/old.md"}]
    assert writer.doc_ids("t1", "lib") == {"book/old.md"}
    assert writer.doc_states("t1", "lib") == {}


def test_ids_postgres_cannot_store_are_refused_before_any_write(
    open_adapter: Callable[..., PostgresIndexAdapter],
) -> None:
    adapter = open_adapter()
    store = VectorStore(adapter)
    good = make_record(unit(np.random.default_rng(11)))
    bad = make_record(unit(np.random.default_rng(12)), doc="bad\x00name.md", index=1)
    with pytest.raises(ValidationError, match="NUL"):
        store.upsert_chunks("t1", [good, bad])
    assert adapter.total_count() == 0


def test_the_schema_is_versioned_and_a_newer_one_refused(
    pg_url: str, open_adapter: Callable[..., PostgresIndexAdapter], pg_index_name: str
) -> None:
    open_adapter()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        row = conn.execute(
            f"SELECT value FROM \"{pg_index_name}_meta\" WHERE key = 'schema_version'"
        ).fetchone()
        assert row == (str(pg.SCHEMA_VERSION),)
        conn.execute(
            f"UPDATE \"{pg_index_name}_meta\" SET value = '99' WHERE key = 'schema_version'"
        )
    with pytest.raises(ConfigError, match="schema version 99, made by a newer holodeck"):
        open_adapter()


def test_a_table_holodeck_did_not_make_is_never_used(pg_url: str, pg_index_name: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'CREATE TABLE "{pg_index_name}_chunks" (id int)')
    with pytest.raises(ConfigError, match="holodeck did not make"):
        PostgresIndexAdapter(pg_url, pg_index_name)


def test_library_lock_times_out_and_a_killed_holder_frees_it(
    pg_url: str, open_adapter: Callable[..., PostgresIndexAdapter], pg_index_name: str
) -> None:
    adapter = open_adapter()
    holder = subprocess.Popen(
        [
            sys.executable, "-c",
            "import sys, time\n"
            "from holodeck.vectorstore.postgres import PostgresIndexAdapter\n"
            f"a = PostgresIndexAdapter({pg_url!r}, {pg_index_name!r})\n"
            "with a.library_lock('t1', 'lib', 30):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(IngestRunning, match="another ingest of library 'lib'"):  # noqa: SIM117
            with adapter.library_lock("t1", "lib", 0.5):
                pass
        with adapter.library_lock("t1", "other", 0.5):  # another library: free
            pass
    finally:
        holder.kill()  # kill -9: the server ends its session and frees the lock
        holder.wait(30)
    with adapter.library_lock("t1", "lib", 30):
        pass


def test_unreachable_at_start_falls_back_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"postgresql://kb:pw-not-shown@127.0.0.1:{free_port()}/kb"
    with pytest.raises(ConnectionError) as caught:
        PostgresIndexAdapter(url, connect_timeout=2)
    assert "postgresql://kb:***@127.0.0.1" in str(caught.value)
    assert "pw-not-shown" not in str(caught.value)
    database = DatabaseConfig(provider="postgres", connection_string=url)
    with caplog.at_level(logging.WARNING, logger="holodeck.vectorstore"):
        opened = open_index(database, tmp_path, "kb")
    assert opened.adapter.backend == "local"
    assert opened.fallback_reason == f"postgres at {url.replace('pw-not-shown', '***')} unreachable"
    assert "PostgreSQL at postgresql://kb:***@" in caplog.text and "falls back" in caplog.text
    assert "pw-not-shown" not in caplog.text
    opened.adapter.close()


def test_a_wrong_database_or_url_is_a_config_error(pg_url: str) -> None:
    with pytest.raises(ConfigError, match="refused the connection"):
        PostgresIndexAdapter(pg_url.rsplit("/", 1)[0] + "/no_such_db")
    with pytest.raises(ConfigError, match="invalid PostgreSQL URL"):
        PostgresIndexAdapter("postgresql://h:notaport/db?nosuchoption=1")


def test_a_server_gone_mid_work_is_a_clear_error_and_nothing_committed_is_lost(
    tmp_path: Path,
) -> None:
    server = PostgresServer()
    server.start()
    try:
        url = fresh_database(server.url(), "gone")
        adapter = PostgresIndexAdapter(url, "kb")
        store = VectorStore(adapter)
        kept = make_record(unit(np.random.default_rng(13)), doc="book/kept.md")
        store.write_document("t1", "lib", "book/kept.md", [kept], None)
        server.stop()
        with pytest.raises(IngestError, match="lost the connection to PostgreSQL at"):
            store.write_document("t1", "lib", "book/lost.md", [kept], None)
        server.start()
        deadline = time.monotonic() + 60
        while True:  # the restarted server answers: the next call reconnects by itself
            try:
                assert adapter.doc_ids("t1", "lib") == {"book/kept.md"}
                break
            except IngestError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        adapter.close()
    finally:
        server.cleanup()
