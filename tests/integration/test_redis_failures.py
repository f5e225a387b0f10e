"""Done-when 5: Redis down at start falls back (with a warning); Redis lost mid-ingest fails.

- A closed port: a WARNING naming the URL and the reason, the embedded index instead, and
  the ingest summary, ``config show`` and ``store info`` all say so.
- Redis killed in the middle of an ingest: exit 3 and one error line (no password, no
  traceback), never a silent switch; once Redis is back, a re-run ends with the same index as
  a clean run.
- The ingest itself killed (SIGKILL) mid-way: the re-run ends with the same index as a clean
  run.
- Two ingests of one library at once: the second waits for the first (a Redis lock).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from cli_helpers import ingest_argv, run_holodeck, write
from redis_project import (
    CORPUS,
    assert_same_library,
    global_config,
    holodeck_json,
    long_text,
    snapshot,
    write_docs,
)
from redis_server import RedisServer, free_port

pytestmark = pytest.mark.redis

TENANT, LIBRARY = "failures", "kb"
AGENT = f"""
name: {TENANT}
tools:
  - type: vectorstore
    name: {LIBRARY}
    source: docs
    chunk_size: 64
    chunk_overlap: 8
"""
FILES = 24
PASSWORD = "kill-test-Pa55word"


def big_project(root: Path, url: str, index: str) -> Path:
    """A corpus of ~FILES x 6 chunks (several of ``start_ingest``'s windows), on ``index``."""
    write(root / "agent.yaml", AGENT)
    write_docs(root / "docs", {f"part{i:02d}.md": long_text(f"topic{i}", 6) for i in range(FILES)})
    global_config(root / ".holodeck" / "config.yaml", url, index)
    return root


def start_ingest(project: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """``holodeck ingest`` committing every 32 chunks, so a kill lands between commits."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    full.update(HOME=str(project / "home"), NO_COLOR="1", **env)
    return subprocess.Popen(
        ingest_argv(window=32),
        cwd=project,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_stored_documents(proc: subprocess.Popen[str], url: str, index: str) -> None:
    """Return once the ingest has stored its first documents in Redis, still running
    (however slow the machine: pytest-timeout bounds the wait)."""
    client = redis.Redis.from_url(url)
    key = f"{index}:docs:" + json.dumps([TENANT, LIBRARY])
    try:
        while client.hlen(key) == 0:
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
    finally:
        client.close()
    assert proc.poll() is None, "the ingest finished before it could be interrupted"


def test_closed_port_warns_and_falls_back_to_the_embedded_index(tmp_path: Path) -> None:
    url = f"redis://127.0.0.1:{free_port()}"
    write(tmp_path / "agent.yaml", AGENT)
    write_docs(tmp_path / "docs", CORPUS)
    global_config(tmp_path / ".holodeck" / "config.yaml", url, "never_made")
    fallback = f"redis at {url} unreachable"

    ingested = run_holodeck("ingest", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    assert f"WARNING: Redis at {url} is unreachable (" in ingested.stderr
    assert "Connection refused" in ingested.stderr
    assert "falls back to the embedded local index" in ingested.stderr
    summary = ingested.stderr.strip().splitlines()[-1]
    assert summary.startswith(f"{LIBRARY}: 6 new")
    assert "[local] in " in summary and summary.endswith(f"(fallback: {fallback})")
    assert (tmp_path / ".holodeck" / "index" / LIBRARY / "index.db").is_file()

    shown, _ = holodeck_json("config", "show", cwd=tmp_path)
    assert shown["tools"][0]["in_use"] == f"local (fallback: {fallback})"
    assert shown["tools"][0]["database"]["connection_string"] == url  # what was configured

    info, result = holodeck_json("store", "info", cwd=tmp_path)
    stats = info["tools"][0]
    assert (stats["backend"], stats["index"], stats["fallback"]) == (
        "local",
        f".holodeck/index/{LIBRARY}/index.db",
        fallback,
    )
    assert stats["documents"] == 6
    assert f"WARNING: Redis at {url} is unreachable" in result.stderr
    text = run_holodeck("store", "info", cwd=tmp_path).stdout
    assert f"  backend:         local (fallback: {fallback})\n" in text
    assert f"  index:           .holodeck/index/{LIBRARY}/index.db (FLAT, COSINE)\n" in text
    assert "  documents:       6\n" in text

    found, _ = holodeck_json("search", "sourdough starter", cwd=tmp_path)
    assert found["tools"][0]["results"][0]["source_path"] == "docs/kitchen/bread.md"


def test_redis_killed_mid_ingest_fails_clearly_then_a_rerun_repairs(
    tmp_path: Path, redis_server_factory: Callable[..., RedisServer]
) -> None:
    # Persistence (AOF), so the server comes back with what it had: the repair is real.
    server = redis_server_factory(password=PASSWORD, extra_args=["--appendonly", "yes"])
    env = {"REDIS_URL": server.url, "HOLODECK_REDIS_LOCK_TTL": "2"}
    project = big_project(tmp_path / "proj", "${REDIS_URL}", "killed")
    clean = big_project(tmp_path / "clean", "${REDIS_URL}", "clean")
    shutil.copytree(project / "docs", clean / "docs", dirs_exist_ok=True)  # same mtimes

    proc = start_ingest(project, env)
    wait_for_stored_documents(proc, server.url, "killed")
    server.kill()
    _, stderr = proc.communicate(timeout=180)
    assert proc.returncode == 3, stderr
    assert "Traceback" not in stderr and PASSWORD not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("Error")]
    assert errors == [stderr.strip().splitlines()[-1]]  # one error line, the last one
    assert errors[0].startswith(
        f"Error: lost the connection to Redis at redis://:***@127.0.0.1:{server.port} ("
    )
    assert "re-run repairs the index" in errors[0]
    assert not (project / ".holodeck" / "index").exists()  # never a silent switch to local

    server.start()  # same port, same data
    cut = snapshot(server.url, "killed", TENANT, LIBRARY)
    assert 0 < len(cut["states"]) < FILES  # it really was cut short

    for root in (project, clean):  # the world changes a little before the re-run
        (root / "docs" / "part00.md").unlink()
        rerun = run_holodeck("ingest", cwd=root, env=env)
        assert rerun.returncode == 0, rerun.stderr
        assert PASSWORD not in rerun.stdout + rerun.stderr
    assert_same_library(
        snapshot(server.url, "killed", TENANT, LIBRARY),
        snapshot(server.url, "clean", TENANT, LIBRARY),
    )


def test_ingest_killed_mid_way_then_rerun_equals_a_clean_run(
    tmp_path: Path, redis_url: str, index_names: Callable[[], str]
) -> None:
    killed_index, clean_index = index_names(), index_names()
    project = big_project(tmp_path / "proj", redis_url, killed_index)
    clean = big_project(tmp_path / "clean", redis_url, clean_index)
    shutil.copytree(project / "docs", clean / "docs", dirs_exist_ok=True)  # same mtimes
    env = {"HOLODECK_REDIS_LOCK_TTL": "2"}  # the killed ingest's lock lapses quickly

    proc = start_ingest(project, env)
    wait_for_stored_documents(proc, redis_url, killed_index)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    cut = snapshot(redis_url, killed_index, TENANT, LIBRARY)
    assert 0 < len(cut["states"]) < FILES

    for root in (project, clean):
        (root / "docs" / "part00.md").unlink()
        rerun = run_holodeck("ingest", cwd=root, env=env)
        assert rerun.returncode == 0, rerun.stderr
    assert_same_library(
        snapshot(redis_url, killed_index, TENANT, LIBRARY),
        snapshot(redis_url, clean_index, TENANT, LIBRARY),
    )


def test_two_ingests_of_one_library_never_interleave(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write_docs(project / "docs", {f"part{i:02d}.md": long_text(f"t{i}", 4) for i in range(12)})
    global_config(project / ".holodeck" / "config.yaml", redis_url, redis_index_name)
    cmd = [sys.executable, "-m", "holodeck", "ingest", "--json"]
    env = dict(os.environ, HOME=str(project / "home"))
    procs = [
        subprocess.Popen(cmd, cwd=project, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    summaries = []
    for proc in procs:
        out, _ = proc.communicate(timeout=240)
        assert proc.returncode == 0
        summaries.append(json.loads(out)["tools"][0])
    # One ingested everything; the other waited for the lock, then found nothing to do.
    assert sorted((s["new"], s["unchanged"]) for s in summaries) == [(0, 12), (12, 0)]
    stored = snapshot(redis_url, redis_index_name, TENANT, LIBRARY)
    assert len(stored["states"]) == 12
    assert stored["count"] == sum(state[1] for state in stored["states"].values())
