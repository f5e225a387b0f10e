"""An existing Redis index that is not holodeck's is refused before any key is written.

Another application's index of the same name, or one with holodeck's prefix but another
vector length and no holodeck meta key, would be written into (or index nothing): ingest
must stop with one line naming the index and the fix, and leave Redis as it found it. An
empty index of holodeck's own shape without its meta key (an interrupted first ingest) is
taken over and rebuilt.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import redis
from cli_helpers import run_holodeck, write
from redis_project import CORPUS, database_yaml, holodeck_json, write_docs

from holodeck.vectorstore.records import IndexInfo
from holodeck.vectorstore.redis.adapter import RedisIndexAdapter

pytestmark = pytest.mark.redis


def project(root: Path, url: str, index: str) -> Path:
    write(
        root / "agent.yaml",
        "name: foreign\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
        + database_yaml(url, index),
    )
    write_docs(root / "docs", CORPUS)
    return root


def keys(client: redis.Redis, pattern: str) -> set[bytes]:
    return set(client.scan_iter(match=pattern, count=1000))


def other_application(client: redis.Redis, index: str) -> str:
    """Another application's index under holodeck's index name, with its own data."""
    client.execute_command(
        "FT.CREATE", index, "ON", "HASH", "PREFIX", "1", "shop:", "SCHEMA", "title", "TEXT"
    )
    client.hset("shop:1", mapping={"title": "a red bicycle"})
    return "it indexes keys under 'shop', not"


def other_vector_length(client: redis.Redis, index: str) -> str:
    """An index on holodeck's prefix with 128-dim vectors and no holodeck meta key."""
    client.execute_command(
        "FT.CREATE", index, "ON", "HASH", "PREFIX", "1", f"{index}:chunk", "SCHEMA",
        "vector", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", "128",
        "DISTANCE_METRIC", "COSINE",
    )  # fmt: skip
    vector = np.ones(128, dtype=np.float32).tobytes()
    client.hset(f"{index}:chunk:x", mapping={"vector": vector})
    return "it lacks holodeck's fields (tenant_id, library_id, book_id, doc_id, tags"


@pytest.mark.parametrize("make", [other_application, other_vector_length])
def test_an_index_that_is_not_holodecks_is_refused_before_any_write(
    tmp_path: Path, redis_url: str, index_names: Callable[[], str], make: Callable[..., str]
) -> None:
    index = index_names()
    client = redis.Redis.from_url(redis_url)
    why = make(client, index)
    before = keys(client, "*")
    info_before = client.ft(index).info()["attributes"]

    result = run_holodeck("ingest", cwd=project(tmp_path, redis_url, index))

    assert result.returncode == 2, result.stdout + result.stderr
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: Redis index {index} at redis://"), line
    assert why in line
    assert "set another database index_name for this tool" in line
    assert f"FT.DROPINDEX {index}" in line
    assert keys(client, "*") == before  # no meta, lock, owner or chunk key was written
    assert client.ft(index).info()["attributes"] == info_before

    shown = run_holodeck("config", "show", cwd=tmp_path)
    assert f"in use:          none (Redis index {index} at redis://" in shown.stdout


def test_an_empty_index_of_holodecks_shape_without_meta_is_rebuilt(
    tmp_path: Path, redis_url: str, index_names: Callable[[], str]
) -> None:
    """What a first ingest cut between creating the index and writing its meta leaves."""
    index = index_names()
    adapter = RedisIndexAdapter(redis_url, index)
    adapter.create(IndexInfo("some-other-model", 8))
    adapter.close()
    client = redis.Redis.from_url(redis_url)
    client.delete(f"{index}:meta")

    summary, ingested = holodeck_json("ingest", cwd=project(tmp_path, redis_url, index))
    assert summary["tools"][0]["new"] == len(CORPUS)
    [warning] = [line for line in ingested.stderr.splitlines() if "dropped" in line]
    assert warning == (
        f"WARNING: Redis index {index} at {redis_url} was dropped and is created again for "
        "all-MiniLM-L6-v2-onnx-int8 (384 dims): it had holodeck's fields but 8 dims, no "
        f"documents, no holodeck meta key {index}:meta (a first ingest cut short, or made by "
        "hand)"
    )
    [vector] = [a for a in client.ft(index).info()["attributes"] if a[1] == "vector"]
    assert vector[vector.index("dim") + 1] == 384  # rebuilt for the tool's model
    found, _ = holodeck_json("search", "espresso pressure", cwd=tmp_path)
    assert found["tools"][0]["results"][0]["source_path"] == "docs/kitchen/coffee.txt"
