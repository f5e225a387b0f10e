"""Two `holodeck ingest` of one project started together, several times (a fresh project,
after edits, both forced): each ends cleanly (one takes its turn after the other, or says
another ingest is running), and the index is whole: every document once, no chunk twice, the
counts of one ingest alone.

Real processes (two at once), the real model, the local index and a real Redis.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from cli_helpers import holodeck_env, run_holodeck, write

from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.postgres import PostgresIndexAdapter
from holodeck.vectorstore.redis.adapter import RedisIndexAdapter

AGENT = """
name: twice-{name}
tools:
  - type: vectorstore
    name: kb
    source: docs
"""
REDIS_CONFIG = (
    "vectorstore:\n  provider: redis\n  connection_string: {url}\n  index_name: {index}\n"
)


def write_docs(docs: Path, edit: int = 0) -> None:
    for i in range(24):
        paragraphs = [
            f"Section {j} of note {i}: the winch {j} on deck {i} is greased weekly and its "
            f"cable {j * i + edit} is inspected for frayed strands before shift {j}."
            for j in range(6)
        ]
        write(docs / f"n{i:02}.md", f"# Note {i}\n\n" + "\n\n".join(paragraphs))


def both_at_once(project: Path, *args: str) -> list[tuple[int, str]]:
    """Two ingests of ``project`` started together; each one's exit code and stderr."""
    argv = [sys.executable, "-m", "holodeck", "ingest", *args]
    runs = [
        subprocess.Popen(
            argv,
            cwd=project,
            env=holodeck_env(project),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    return [(run.wait(timeout=300), run.communicate()[1]) for run in runs]


def stored(
    project: Path, redis: tuple[str, str] | None
) -> tuple[dict[str, int], Counter[tuple[str, int]]]:
    """Documents and their chunk counts as recorded, and each (document, chunk index) as
    stored, with how many times; ``redis``: the (url, index name) the project uses."""
    info = json.loads(run_holodeck("store", "info", "--json", cwd=project).stdout)
    adapter: LocalIndexAdapter | RedisIndexAdapter | PostgresIndexAdapter
    if redis and redis[0].startswith("postgres"):
        adapter = PostgresIndexAdapter(*redis)
    elif redis:
        adapter = RedisIndexAdapter(*redis)
    else:
        adapter = LocalIndexAdapter(project / ".holodeck" / "index" / "kb")
    try:
        tenant = info["tenant"]
        states = {d: s.chunk_count for d, s in adapter.doc_states(tenant, "kb").items()}
        chunks: Counter[tuple[str, int]] = Counter()
        for doc in adapter.doc_ids(tenant, "kb") | set(states):
            chunks.update(
                (c.doc_id, c.chunk_index) for c in adapter.get_doc_chunks(tenant, "kb", doc)
            )
        assert adapter.count(tenant, "kb") == sum(chunks.values())
        assert info["tools"][0]["chunks"] == sum(chunks.values())
    finally:
        adapter.close()
    return states, chunks


@pytest.fixture(
    params=[
        "local",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_two_ingests_at_once_leave_one_whole_index(
    tmp_path: Path, backend: str, request: pytest.FixtureRequest
) -> None:
    alone, together = tmp_path / "alone", tmp_path / "together"
    for project in (alone, together):
        write(project / "agent.yaml", AGENT.format(name=project.name))
        write_docs(project / "docs")
    redis: dict[Path, tuple[str, str] | None] = {alone: None, together: None}
    if backend in ("redis", "postgres"):
        url = request.getfixturevalue(f"{'pg' if backend == 'postgres' else 'redis'}_url")
        index = request.getfixturevalue(f"{'pg' if backend == 'postgres' else 'redis'}_index_name")
        for project in (alone, together):  # one index, a tenant each
            redis[project] = (url, index)
            config = REDIS_CONFIG.format(url=json.dumps(url), index=index)
            config = config.replace("provider: redis", f"provider: {backend}")
            write(project / ".holodeck" / "config.yaml", config)
    assert run_holodeck("ingest", cwd=alone).returncode == 0
    want_states, want_chunks = stored(alone, redis[alone])
    assert set(want_chunks.values()) == {1} and len(want_states) == 24

    rounds = [("fresh", ()), ("edited", ()), ("forced", ("--force-ingest",)), ("again", ())]
    for name, args in rounds:
        if name == "edited":
            write_docs(together / "docs", edit=1)
            write_docs(alone / "docs", edit=1)
            assert run_holodeck("ingest", cwd=alone).returncode == 0
            want_states, want_chunks = stored(alone, redis[alone])
        for code, said in both_at_once(together, *args):
            assert "Traceback" not in said, (name, said)
            if code != 0:  # the one that did not wait long enough: told why, in one line
                assert code == 3, (name, said)
                assert "another ingest of library 'kb' is running" in said, (name, said)
        states, chunks = stored(together, redis[together])
        assert states == want_states, name
        assert set(chunks) == set(want_chunks), name
        assert set(chunks.values()) == {1}, (name, [c for c, n in chunks.items() if n > 1])
