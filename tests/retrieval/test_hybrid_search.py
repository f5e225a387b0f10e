"""Hybrid retrieval as a user sees it, on both stores: exact identifiers found first, every
mode answers, neighbouring chunks come back as one passage, hostile queries stay harmless.

The real model, real files, the local SQLite index and a real Redis with the Query Engine.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_holodeck, write

from holodeck.config.loader import load_project
from holodeck.embeddings.factory import make_embedder
from holodeck.retrieval.hybrid import retrieve
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.postgres import PostgresIndexAdapter
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.redis.adapter import RedisIndexAdapter
from holodeck.vectorstore.store import VectorStore

#: Real-looking technical notes; each identifier sits in one file, among neighbours that
#: talk about the same things in other words (what a small embedding model confuses).
DOCS = {
    "config/retries.md": """
        # Retry settings

        A job that fails is attempted again. The `max_retries` option sets how many extra
        attempts a failing job gets before it is marked dead; the default is three.
        """,
    "config/timeouts.md": """
        # Timeouts and backoff

        Each attempt of a job may run for `job_timeout` seconds. Between attempts the worker
        waits longer each time (exponential backoff), so a flaky dependency can recover
        before the next retry.
        """,
    "git/merging.md": """
        # Merging branches

        To keep a record of every feature branch, merge with `git merge --no-ff feature`:
        it always creates a merge commit, even when the branch could be fast-forwarded.
        """,
    "git/rebasing.md": """
        # Rebasing

        Rebasing replays your commits on top of the main branch, so the history stays a
        straight line without merge commits. Never rebase commits others have pulled.
        """,
    "python/paths.md": """
        # Building paths

        `os.path.join` glues path components with the separator of the operating system;
        pass each component as its own argument.
        """,
    "python/pathlib.md": """
        # pathlib

        `Path` objects are the modern way to handle file names: the `/` operator builds a
        path from parts, and `Path.resolve()` makes it absolute.
        """,
    "errors/upload.md": """
        # Upload errors

        Error E1234 means the upload exceeded the project's storage quota: delete old
        artifacts or ask for a larger quota. Error E1201 means the file type is refused.
        """,
    "errors/auth.md": """
        # Authentication errors

        Error E4011 means the token expired; log in again. Error E4030 means the account
        lacks the permission the request needs.
        """,
    "releases/changelog.md": """
        # Changelog

        ## v2.3.1
        Fixed a crash when the cache folder was read-only.

        ## v2.4.0
        Added streaming exports and a dark theme.
        """,
    "releases/roadmap.md": """
        # Roadmap

        The next minor release brings plugins; the one after that drops the legacy API.
        """,
    "misc/flags.md": """
        # Feature flags

        The experimental PURPLE-OTTER flag turns on the new scheduler for one project.
        """,
    "misc/scheduler.md": """
        # The scheduler

        The scheduler decides which worker runs which job, balancing queues by priority.
        """,
}

#: (query, the file that must come first)
IDENTIFIER_QUERIES = [
    ("PURPLE-OTTER", "misc/flags.md"),
    ("what does the PURPLE-OTTER flag do?", "misc/flags.md"),
    ("max_retries", "config/retries.md"),
    ("what is the default of max_retries", "config/retries.md"),
    ("E1234", "errors/upload.md"),
    ("what does error E1234 mean", "errors/upload.md"),
    ("--no-ff", "git/merging.md"),
    ("when should I merge with --no-ff", "git/merging.md"),
    ("os.path.join", "python/paths.md"),
    ("how do I use os.path.join", "python/paths.md"),
    ("v2.3.1", "releases/changelog.md"),
    ("what was fixed in v2.3.1", "releases/changelog.md"),
]

AGENT = """
name: hybrid-test
tools:
  - type: vectorstore
    name: kb
    source: docs
{database}
"""


def project(root: Path, docs: dict[str, str], database: str = "", extra: str = "") -> Path:
    write(root / "agent.yaml", AGENT.format(database=database) + extra)
    for rel, text in docs.items():
        write(root / "docs" / rel, text)
    return root


def redis_database(url: str, index: str) -> str:
    return (
        "    database:\n      provider: redis\n"
        f"      connection_string: {url}\n      index_name: {index}\n"
    )


def postgres_database(url: str, index: str) -> str:
    return (
        "    database:\n      provider: postgres\n"
        f"      connection_string: {url}\n      index_name: {index}\n"
    )


def ready_tool(root: Path) -> VectorStoreTool:
    tool = build_tools(load_project(root / "agent.yaml"))[0]
    tool.initialize_sync()
    return tool


@pytest.mark.redis
def test_exact_identifiers_rank_their_chunk_first(tmp_path: Path, database: str) -> None:
    tool = ready_tool(project(tmp_path, DOCS, database))
    try:
        for mode in ("hybrid", "keyword"):
            for query, expected in IDENTIFIER_QUERIES:
                results, _ = tool.find(query, mode=mode)
                assert results, (mode, query)
                assert results[0].doc_id == expected, (mode, query, [r.doc_id for r in results])
    finally:
        tool.close()


@pytest.mark.redis
def test_every_mode_answers_with_scores_in_order(tmp_path: Path, database: str) -> None:
    tool = ready_tool(project(tmp_path, DOCS, database))
    try:
        for mode in ("hybrid", "semantic", "keyword"):
            results, total = tool.find("how many attempts does a failing job get", mode=mode)
            assert results and total >= len(results), mode
            scores = [r.score for r in results]
            assert all(0.0 <= s <= 1.0 for s in scores), (mode, scores)
            assert scores == sorted(scores, reverse=True), (mode, scores)
            assert results[0].doc_id == "config/retries.md", (mode, [r.doc_id for r in results])
            assert all(0.0 <= r.similarity <= 1.0 for r in results)
        # semantic: the score is the similarity itself
        semantic, _ = tool.find("how many attempts does a failing job get", mode="semantic")
        assert [r.score for r in semantic] == [r.similarity for r in semantic]
    finally:
        tool.close()


def test_min_similarity_score_means_semantic_similarity_in_every_mode(tmp_path: Path) -> None:
    tool = ready_tool(project(tmp_path, DOCS))
    try:
        for mode in ("hybrid", "semantic", "keyword"):
            everything, _ = tool.find("what does the error mean", mode=mode, top_k=20)
            floor = sorted(r.similarity for r in everything)[len(everything) // 2]
            kept, total = tool.find(
                "what does the error mean", mode=mode, top_k=20, min_score=floor
            )
            assert kept and all(r.similarity >= floor for r in kept), mode
            assert total >= len(everything) > len(kept), mode
    finally:
        tool.close()


def test_search_mode_in_agent_yaml_the_mode_flag_and_config_show(tmp_path: Path) -> None:
    root = project(tmp_path, DOCS, extra="    search_mode: keyword\n    top_k: 3\n")
    shown = run_holodeck("config", "show", "--json", cwd=root)
    assert json.loads(shown.stdout)["tools"][0]["search_mode"] == "keyword"
    assert "search mode:     keyword" in run_holodeck("config", "show", cwd=root).stdout
    keyword = run_holodeck("search", "merge commits", "--json", cwd=root)
    assert keyword.returncode == 0, keyword.stderr
    semantic = run_holodeck("search", "merge commits", "--json", "--mode", "semantic", cwd=root)
    by_keyword = json.loads(keyword.stdout)["tools"][0]["results"]
    by_meaning = json.loads(semantic.stdout)["tools"][0]["results"]
    # keyword mode: BM25 relative to the best match, so the first is 1.0; semantic: cosines
    assert by_keyword[0]["score"] == pytest.approx(1.0, abs=1e-9)
    assert by_meaning[0]["score"] == by_meaning[0]["similarity"] < 1.0
    wide = run_holodeck("search", "error", "--top-k", "1000", "--json", cwd=root)
    assert wide.returncode == 0, wide.stderr
    bad = run_holodeck("search", "error", "--mode", "fuzzy", cwd=root)
    assert bad.returncode == 2 and "'fuzzy' is not one of" in bad.stderr
    bad = run_holodeck(
        "config", "show", cwd=project(tmp_path / "bad", DOCS, extra="    search_mode: fuzzy\n")
    )
    assert bad.returncode == 2 and "search_mode" in bad.stderr


def test_neighbouring_chunks_come_back_as_one_passage(tmp_path: Path) -> None:
    paragraphs = [
        f"Paragraph {i}. The glacier feeds the river {i}; meltwater from the glacier rises in "
        f"spring and the river {i} floods the valley below the glacier every year."
        for i in range(12)
    ]
    docs = {"geo/glacier.md": "# Glaciers\n\n" + "\n\n".join(paragraphs)}
    docs.update(
        {f"other/n{i}.md": f"# Note {i}\n\nA note about bread number {i}." for i in range(6)}
    )
    root = project(tmp_path, docs, extra="    chunk_size: 48\n    chunk_overlap: 8\n")
    tool = ready_tool(root)
    try:
        for mode in ("hybrid", "semantic", "keyword"):
            results, _ = tool.find("glacier meltwater floods the valley", mode=mode, top_k=4)
            glacier = [r for r in results if r.doc_id == "geo/glacier.md"]
            assert glacier, mode
            spans = sorted((min(r.chunks), max(r.chunks)) for r in glacier)
            for (_, hi), (lo, _) in itertools.pairwise(spans):
                assert lo > hi + 1, (mode, spans)  # never two touching passages
            merged = [r for r in glacier if len(r.chunks) > 1]
            assert merged, (mode, spans)
            for r in merged:
                for i in r.chunks:  # each merged chunk's own paragraphs are in the passage
                    assert f"Paragraph {i}." in r.content or i == 0
                sentences = [s for s in r.content.split("\n\n") if s.startswith("Paragraph")]
                assert len(sentences) == len(set(sentences)), "the overlap was said twice"
    finally:
        tool.close()


# -- hostile queries: never an error the user cannot read, never another tenant's chunk ----

HOSTILE = [
    "@tenant_id:{*}",
    "@tenant_id:{beta} secret",
    "*",
    "|",
    "-",
    "- - -",
    '"',
    '"unbalanced quote',
    "{}",
    "((()))",
    "secret | beta",
    "secret -alpha",
    "NEAR(secret beta)",
    "secret* OR beta AND NOT alpha",
    "\\",
    "%",
    "x" * 100_000,
    ("secret " * 20_000).strip(),
]


def tenant_docs(tenant: str) -> list[tuple[str, str]]:
    return [
        (f"{tenant}/plans.md", f"The {tenant} secret plans name the beta launch date."),
        (f"{tenant}/notes.md", f"Notes of {tenant}: the secret is kept in the vault."),
    ]


def fill(store: VectorStore, embed: Callable[[list[str]], np.ndarray]) -> None:
    for tenant in ("alpha", "beta"):
        for doc, text in tenant_docs(tenant):
            rec = ChunkRecord(
                chunk_id=chunk_id_for(tenant, "kb", doc, 0),
                tenant_id=tenant,
                library_id="kb",
                book_id=tenant,
                doc_id=doc,
                chunk_index=0,
                content=text,
                vector=embed([text])[0],
                embedding_model="all-MiniLM-L6-v2-onnx-int8",
                source_path=f"docs/{doc}",
                mtime=1.0,
                content_hash=doc,
                token_count=12,
            )
            store.write_document(tenant, "kb", doc, [rec], DocState(doc, 1.0, 1, doc, 1))


@pytest.mark.redis
def test_hostile_queries_never_cross_tenants(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    embedder = make_embedder("all-MiniLM-L6-v2", tmp_path, None)
    if backend == "local":
        store = VectorStore(LocalIndexAdapter(tmp_path / "index"))
    elif backend == "postgres":
        url = request.getfixturevalue("pg_url")
        store = VectorStore(PostgresIndexAdapter(url, request.getfixturevalue("pg_index_name")))
    else:
        url = request.getfixturevalue("redis_url")
        store = VectorStore(RedisIndexAdapter(url, request.getfixturevalue("redis_index_name")))
    fill(store, embedder.embed)
    scope = ChunkFilters(library_ids=["kb"])
    for query in HOSTILE:
        vector = embedder.embed([query[:2000]])[0]
        for mode in ("hybrid", "semantic", "keyword"):
            passages, _ = retrieve(store, "alpha", query, vector, 10, scope, mode)
            tenants = {c.record.tenant_id for p in passages for c in p.chunks}
            assert tenants <= {"alpha"}, (query[:40], mode, tenants)
        hits = store.keyword_search("alpha", query, 10, scope)
        assert {h.record.tenant_id for h in hits} <= {"alpha"}
    # the words themselves still find alpha's chunks by keyword
    found = store.keyword_search("alpha", "secret plans", 10, scope)
    assert {h.record.doc_id for h in found} == {"alpha/plans.md", "alpha/notes.md"}
    store.adapter.close()


def test_hostile_queries_through_the_cli(tmp_path: Path) -> None:
    root = project(tmp_path, DOCS)
    for query in ("@tenant_id:{*}", "|", '"', "secret* OR NOT x", "x" * 100_000):
        result = run_holodeck("search", query, "--mode", "keyword", cwd=root)
        assert result.returncode == 0, (query[:20], result.stderr)
        assert "Traceback" not in result.stderr
