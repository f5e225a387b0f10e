"""PostgreSQL through the real pipeline and the real ``holodeck`` commands.

- Parity: the corpus ingested into PostgreSQL (HNSW and FLAT, COSINE, L2 and IP) ranks as
  the embedded default does, scores within 1e-3 (``test_redis_parity``'s reference).
- An agent.yaml written for the original HoloDeck (``provider: postgres``, the password a
  ``${VAR}``) loads, ingests and searches through ``holodeck ingest`` / ``search`` /
  ``store info``, the password in no output.
- Incremental: a touched file re-embeds nothing, a changed one only its changed chunks, a
  vanished one loses its chunks, ``--force-ingest`` rebuilds.
- The ingest killed (SIGKILL) mid-way: the re-run ends with the same library as a clean run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from cli_helpers import ingest_argv, run_holodeck, write
from postgres_server import drop_index
from rankings import assert_same_ranking
from redis_project import CORPUS, assert_same_library, holodeck_json, long_text, write_docs
from test_redis_parity import CHUNKING, PARITY_TOL, QUERIES, make_tool, rankings
from test_redis_parity import embedder as embedder  # the module's fixtures, shared
from test_redis_parity import reference as reference

from holodeck.embeddings.local import LocalOnnxEmbedder
from holodeck.vectorstore.postgres import PostgresIndexAdapter

pytestmark = pytest.mark.postgres

SECRET = "pg-Secret-never-shown"


def pg_database(url: str, index: str, algorithm: str = "HNSW", metric: str = "COSINE") -> str:
    return (
        "    database:\n      provider: postgres\n"
        f"      connection_string: {url}\n      index_name: {index}\n"
        f"      vector_algorithm: {algorithm}\n      distance_metric: {metric}\n"
    )


def with_password(url: str) -> str:
    """``url`` with its password taken from ``${PGPASSWORD}`` (the test server trusts
    127.0.0.1, so any password is accepted: what matters is that it is never shown)."""
    return url.replace("postgresql://postgres@", "postgresql://postgres:${PGPASSWORD}@")


@pytest.fixture
def pg_indexes(pg_url: str) -> Iterator[Callable[[], str]]:
    """Fresh index names on the test PostgreSQL; all dropped after the test."""
    names: list[str] = []

    def new() -> str:
        names.append(f"hdit_{os.urandom(6).hex()}")
        return names[-1]

    yield new
    for name in names:
        drop_index(pg_url, name)


@pytest.mark.parametrize("algorithm", ["HNSW", "FLAT"])
@pytest.mark.parametrize("metric", ["COSINE", "L2", "IP"])
def test_postgres_ranks_like_the_embedded_default(
    tmp_path: Path,
    pg_url: str,
    pg_index_name: str,
    embedder: LocalOnnxEmbedder,
    reference: dict[str, Any],
    algorithm: str,
    metric: str,
) -> None:
    tool = make_tool(tmp_path, pg_database(pg_url, pg_index_name, algorithm, metric), embedder)
    tool.initialize_sync()
    assert tool.backend == "postgres" and tool.fallback_reason is None
    stats = tool.store.adapter.stats(tool.project.tenant_id, "kb")
    assert (stats["algorithm"], stats["metric"]) == (algorithm, metric)
    assert stats["chunks"] == tool.summary.chunks_total > len(CORPUS)  # type: ignore[union-attr]
    got = rankings(tool)
    tool.close()
    for query in QUERIES:
        assert_same_ranking(got[query], reference[query], tol=PARITY_TOL)
        assert got[f"hybrid: {query}"] == reference[f"hybrid: {query}"]


ORIGINAL_AGENT = """
name: support-agent
description: Answers from the manuals.
instructions:
  inline: You answer from the manuals.
tools:
  - name: manuals
    description: Search the product manuals
    type: vectorstore
    source: ./docs
    embedding_model: all-MiniLM-L6-v2
    defer_loading: true
    database:
      provider: postgres
      connection_string: {url}
      index_name: {index}
      db_schema: public
{chunking}
  - name: local_notes
    description: Notes kept beside the project
    type: vectorstore
    source: ./docs
"""


def test_an_original_agent_on_postgres_ingests_and_searches_through_the_cli(
    tmp_path: Path, pg_url: str, pg_index_name: str
) -> None:
    url = with_password(pg_url)
    agent = ORIGINAL_AGENT.format(url=url, index=pg_index_name, chunking=CHUNKING.rstrip("\n"))
    write(tmp_path / "agent.yaml", agent)
    write_docs(tmp_path / "docs", CORPUS)
    env = {"PGPASSWORD": SECRET}

    ingested, done = holodeck_json("ingest", cwd=tmp_path, env=env)
    by_tool = {t["tool"]: t for t in ingested["tools"]}
    assert (by_tool["manuals"]["backend"], by_tool["manuals"]["fallback"]) == ("postgres", None)
    assert by_tool["manuals"]["new"] == len(CORPUS)
    assert by_tool["local_notes"]["backend"] == "local"
    assert "tools[0].database.db_schema: ignored (" in done.stderr

    found, searched = holodeck_json(
        "search", "proofing dough in the fridge", "--tool", "manuals", cwd=tmp_path, env=env
    )
    results = found["tools"][0]["results"]
    assert results[0]["source_path"] == "docs/kitchen/bread.md"

    info, shown = holodeck_json("store", "info", "--tool", "manuals", cwd=tmp_path, env=env)
    stats = info["tools"][0]
    assert (stats["backend"], stats["index"], stats["algorithm"], stats["metric"]) == (
        "postgres",
        pg_index_name,
        "HNSW",
        "COSINE",
    )
    assert (stats["documents"], stats["embedding_model"]) == (
        len(CORPUS),
        "all-MiniLM-L6-v2-onnx-int8",
    )
    assert stats["url"] == url.replace("${PGPASSWORD}", "***")
    text = run_holodeck("store", "info", cwd=tmp_path, env=env)
    assert f"  backend:         postgres at {stats['url']}\n" in text.stdout
    for result in (done, searched, shown, text):
        assert SECRET not in result.stdout + result.stderr


def test_modify_touch_delete_and_force_on_postgres(
    tmp_path: Path, pg_url: str, pg_index_name: str
) -> None:
    project = tmp_path / "proj"
    write(
        project / "agent.yaml",
        "name: incremental\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
        "    chunk_size: 128\n" + pg_database(pg_url, pg_index_name),
    )
    write_docs(
        project / "docs",
        {
            "long.md": long_text("reactor", 30),
            "short.md": "# Short\n\nA note about the coolant pumps.",
            "gone.md": "# Gone\n\nThe zebra migration schedule for the savanna.",
        },
    )

    def ingest(*args: str) -> dict[str, Any]:
        data, _ = holodeck_json("ingest", *args, cwd=project)
        return data["tools"][0]

    first = ingest()
    assert (first["backend"], first["new"]) == ("postgres", 3)
    total = first["chunks_total"]
    later = time.time() + 10
    os.utime(project / "docs" / "short.md", (later, later))
    touched = ingest()
    assert (touched["touched"], touched["unchanged"], touched["chunks_embedded"]) == (1, 2, 0)
    long_md = project / "docs" / "long.md"
    long_md.write_text(long_md.read_text().replace("Paragraph 15 about", "Paragraph 15 was about"))
    changed = ingest()
    assert (changed["changed"], changed["unchanged"]) == (1, 2)
    assert 1 <= changed["chunks_embedded"] <= 3 and changed["chunks_total"] == total
    (project / "docs" / "gone.md").unlink()
    removed = ingest()
    assert (removed["removed"], removed["chunks_total"]) == (1, total - 1)
    stored = snapshot(pg_url, pg_index_name, "incremental", "kb")
    assert set(stored["states"]) == {"long.md", "short.md"}
    forced = ingest("--force-ingest")
    assert forced["changed"] == 2
    assert forced["chunks_embedded"] == forced["chunks_total"] == total - 1


FILES = 24


def test_ingest_killed_mid_way_then_rerun_equals_a_clean_run(
    tmp_path: Path, pg_url: str, pg_indexes: Callable[[], str]
) -> None:
    killed_index, clean_index = pg_indexes(), pg_indexes()
    docs = {f"part{i:02d}.md": long_text(f"topic{i}", 6) for i in range(FILES)}
    roots = {}
    for name, index in (("killed", killed_index), ("clean", clean_index)):
        root = tmp_path / name
        write(
            root / "agent.yaml",
            "name: failures\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
            "    chunk_size: 64\n    chunk_overlap: 8\n" + pg_database(pg_url, index),
        )
        roots[name] = root
    write_docs(roots["killed"] / "docs", docs)
    shutil.copytree(roots["killed"] / "docs", roots["clean"] / "docs")  # same mtimes

    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env.update(HOME=str(roots["killed"] / "home"), NO_COLOR="1")
    proc = subprocess.Popen(
        ingest_argv(window=32), cwd=roots["killed"], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    with psycopg.connect(pg_url, autocommit=True) as conn:
        while True:  # until the first documents are committed, the ingest still running
            assert proc.poll() is None, proc.communicate()
            if conn.execute("SELECT to_regclass(%s)", (f'"{killed_index}_docs"',)).fetchone()[0]:
                stored = conn.execute(f'SELECT count(*) FROM "{killed_index}_docs"').fetchone()
                if stored and stored[0] > 0:
                    break
            time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    cut = snapshot(pg_url, killed_index, "failures", "kb")
    assert 0 < len(cut["states"]) < FILES

    for root in roots.values():
        (root / "docs" / "part00.md").unlink()
        rerun = run_holodeck("ingest", cwd=root)  # the killed one's lock went with its session
        assert rerun.returncode == 0, rerun.stderr
    assert_same_library(
        snapshot(pg_url, killed_index, "failures", "kb"),
        snapshot(pg_url, clean_index, "failures", "kb"),
    )


def snapshot(url: str, index: str, tenant: str, library: str) -> dict[str, Any]:
    """What one library holds: document states and every chunk with its vector."""
    adapter = PostgresIndexAdapter(url, index)
    try:
        states = {
            d: (s.content_hash, s.chunk_count, s.size, s.mtime)
            for d, s in adapter.doc_states(tenant, library).items()
        }
        chunks: dict[str, tuple[Any, ...]] = {}
        for doc in adapter.doc_ids(tenant, library) | set(states):
            for rec in adapter.get_doc_chunks(tenant, library, doc):
                chunks[rec.chunk_id] = (
                    rec.doc_id, rec.book_id, rec.chunk_index, rec.content, rec.source_path,
                    rec.content_hash, rec.embedding_model, rec.vector,
                )  # fmt: skip
        return {
            "states": states,
            "chunks": chunks,
            "count": adapter.count(tenant, library),
            "total": adapter.total_count(),
            "info": adapter.describe(),
        }
    finally:
        adapter.close()


def test_a_same_name_project_reads_and_writes_nothing_it_does_not_own(
    tmp_path: Path, pg_url: str, pg_index_name: str
) -> None:
    name, tool = "skyline-assistant", "knowledge_base"

    def make_project(root: Path, docs: dict[str, str], tenant: str = "") -> Path:
        agent = f"name: {name}\n" + (f"tenant: {tenant}\n" if tenant else "")
        agent += f"tools:\n  - type: vectorstore\n    name: {tool}\n    source: docs\n"
        write(root / "agent.yaml", agent + pg_database(pg_url, pg_index_name))
        write_docs(root / "docs", docs)
        return root

    docs_a = {k: v for k, v in CORPUS.items() if k.startswith(("space/", "kitchen/"))}
    docs_b = {k: v for k, v in CORPUS.items() if k.startswith("garden/")}
    a = make_project(tmp_path / "a", docs_a)
    b = make_project(tmp_path / "b", docs_b)
    summary, _ = holodeck_json("ingest", cwd=a)
    assert summary["tools"][0]["new"] == len(docs_a)
    before = snapshot(pg_url, pg_index_name, name, tool)
    for args in (("ingest",), ("ingest", "--force-ingest"), ("search", "compost")):
        refused = run_holodeck(*args, cwd=b)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        [line] = [x for x in refused.stderr.splitlines() if x.startswith("Error")]
        assert f"the library of tenant '{name}' in the postgres index is filled by another" in line
        assert str(a) not in refused.stderr
    assert_same_library(snapshot(pg_url, pg_index_name, name, tool), before)

    make_project(b, docs_b, tenant="garden-team")  # another tenant: both kept
    summary, _ = holodeck_json("ingest", cwd=b)
    assert summary["tools"][0]["new"] == len(docs_b)
    assert_same_library(
        snapshot(pg_url, pg_index_name, name, tool),
        before | {"total": before["total"] + summary["tools"][0]["chunks_total"]},
    )
