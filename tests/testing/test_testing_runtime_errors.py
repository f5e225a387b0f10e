"""A runtime failure mid-run (Redis lost) makes a case an error, never a failure, and the
other cases still run. In-process runner, real tools, a real Redis that dies."""

from __future__ import annotations

import asyncio
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import write
from redis_server import RedisServer

from holodeck.config.loader import load_project
from holodeck.testing.cases import load_cases
from holodeck.testing.runner import TestRunner
from holodeck.tools.vectorstore_tool import build_tools

DOCS = Path(__file__).resolve().parents[2] / "examples" / "docs"


@pytest.mark.redis
def test_redis_lost_is_an_error_and_the_rest_still_run(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    redis_server_factory: Callable[..., RedisServer],
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    server = redis_server_factory()
    for folder, name in (("remote", "retries.md"), ("local", "scheduling.md")):
        (tmp_path / folder).mkdir()
        shutil.copy(DOCS / "guides" / name, tmp_path / folder / name)
    path = write(
        tmp_path / "agent.yaml",
        f"""
        name: lost
        tools:
          - type: vectorstore
            name: remote
            source: remote/
            database: {{provider: redis, connection_string: "{server.url}", index_name: lost}}
          - type: vectorstore
            name: local
            source: local/
        test_cases:
          - name: on-redis
            input: What is the default number of attempts?
            expected_tools: [remote]
            expected_sources: [remote/retries.md]
          - name: on-local
            input: How do I run a job every weekday morning?
            expected_tools: [local]
            expected_sources: [local/scheduling.md]
        """,
    )
    project = load_project(path)
    tools = build_tools(project)
    try:
        for tool in tools:
            tool.initialize_sync()
        assert tools[0].backend == "redis"
        server.kill()
        suite = asyncio.run(TestRunner(project, tools).run(load_cases(project)))
    finally:
        for tool in tools:
            tool.close()

    on_redis, on_local = suite.results
    assert on_redis.status == "error"
    assert on_redis.error_type is not None and "Redis" in on_redis.reason
    assert on_local.status == "passed", on_local.reason
    assert (suite.passed, suite.failed, suite.errors) == (1, 0, 1)
    assert suite.exit_code == 3
    assert suite.retrieval.cases == 1  # an errored case is not scored
