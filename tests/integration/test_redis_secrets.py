"""Done-when 6: a password in the Redis URL never appears in any output.

A password-protected server; the URL with its password given through ``${REDIS_URL}`` in the
project config and as a literal in a tool's ``database``. Every command a user runs (ingest,
search, config show, store info, with and without ``-v``), the fallback warning of a closed
port and the refusal of a wrong password: the password is in none of their stdout or stderr.
(The mid-ingest error is checked in ``test_redis_failures``.)
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import fake_judge
import pytest
import redis
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, text, tool_calls, tool_results
from redis_project import CORPUS, database_yaml, global_config, write_docs
from redis_server import RedisServer, free_port

pytestmark = pytest.mark.redis

PASSWORD = "Top-s3cret-pa55"
WRONG = "Not-the-pa55word"
AGENT = """
name: secrets
tools:
  - type: vectorstore
    name: kb
    source: docs
"""


def literal_tool(url: str, index: str) -> str:
    return "  - type: vectorstore\n    name: lit\n    source: docs\n" + database_yaml(url, index)


def check(outputs: list[str], *secrets: str) -> None:
    for output in outputs:
        for secret in secrets:
            assert secret not in output


def test_password_never_printed(
    tmp_path: Path, redis_server_factory: Callable[..., RedisServer]
) -> None:
    server = redis_server_factory(password=PASSWORD)
    assert PASSWORD in server.url
    redacted = f"redis://:***@127.0.0.1:{server.port}"
    env = {"REDIS_URL": server.url}
    outputs: list[str] = []

    def run(project: Path, *args: str, code: int = 0) -> str:
        result = run_holodeck(*args, cwd=project, env=env)
        assert result.returncode == code, result.stdout + result.stderr
        outputs.extend([result.stdout, result.stderr])
        return result.stdout + result.stderr

    # Working server: every command, quiet and verbose.
    ok = tmp_path / "ok"
    write(ok / "agent.yaml", AGENT + literal_tool(server.url, "literal"))
    write_docs(ok / "docs", CORPUS)
    global_config(ok / ".holodeck" / "config.yaml", "${REDIS_URL}", "from_env")
    assert "[redis]" in run(ok, "ingest")
    run(ok, "-v", "ingest", "--force-ingest")
    assert "Score:" in run(ok, "search", "espresso pressure")
    run(ok, "-v", "search", "--json", "espresso pressure")
    assert redacted in run(ok, "config", "show")
    run(ok, "-v", "config", "show", "--json")
    assert redacted in run(ok, "store", "info")
    run(ok, "-v", "store", "info", "--json")

    # The same password on a closed port: the fallback warning.
    down = tmp_path / "down"
    closed = f"redis://:{PASSWORD}@127.0.0.1:{free_port()}"
    write(down / "agent.yaml", AGENT)
    write_docs(down / "docs", CORPUS)
    global_config(down / ".holodeck" / "config.yaml", closed, "down")
    warned = run(down, "-v", "ingest")
    assert "WARNING holodeck.vectorstore: Redis at redis://:***@127.0.0.1:" in warned
    assert "fallback: redis at redis://:***@" in run(down, "config", "show")
    run(down, "-v", "store", "info")

    # A wrong password: refused with exit 2 (the user's to fix), neither password shown.
    wrong = tmp_path / "wrong"
    write(wrong / "agent.yaml", AGENT)
    write_docs(wrong / "docs", CORPUS)
    global_config(wrong / ".holodeck" / "config.yaml", server.url.replace(PASSWORD, WRONG), "w")
    assert "refused the login" in run(wrong, "ingest", code=2)
    assert "Traceback" in run(wrong, "-v", "ingest", code=2)
    assert "none (Redis at redis://:***@" in run(wrong, "config", "show")

    check(outputs, PASSWORD, WRONG)


def test_a_database_the_server_lacks_is_the_user_s_to_fix(
    tmp_path: Path, redis_server_factory: Callable[..., RedisServer]
) -> None:
    """``redis://...:PORT/99`` on a server with 16 databases: one line naming the redacted
    URL and the fix, exit 2 (a user's mistake, not an outage), no traceback without -v."""
    server = redis_server_factory(password=PASSWORD)
    write(tmp_path / "agent.yaml", AGENT)
    write_docs(tmp_path / "docs", CORPUS)
    global_config(tmp_path / ".holodeck" / "config.yaml", f"{server.url}/99", "db99")
    result = run_holodeck("ingest", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "has no database 99" in result.stderr
    assert f"redis://:***@127.0.0.1:{server.port}/99" in result.stderr
    assert "Traceback" not in result.stderr and PASSWORD not in result.stderr


LLM_AGENT = """
name: secrets-llm
model: {{provider: openai, name: fake-model, endpoint: "{llm}", api_key: "${{OPENAI_API_KEY}}"}}
tools:
  - type: vectorstore
    name: kb
    source: docs
evaluations:
  model: {{provider: openai, name: judge-model, endpoint: "{judge}"}}
  metrics:
    - type: rag
      metric_type: faithfulness
      threshold: 0.5
test_cases:
  - name: espresso
    input: How much pressure does espresso need?
    expected_tools: [kb]
    expected_content: [bars]
"""


def test_password_never_written_to_any_file(
    tmp_path: Path, redis_server_factory: Callable[..., RedisServer]
) -> None:
    """``holodeck test`` with its JSON and JUnit reports and evaluation cache, ``chat`` and
    the commands before it, against a password-protected Redis: no file the project holds
    afterwards (reports, caches, index files, logs under ``.holodeck``) and no output
    carries the password."""
    server = redis_server_factory(password=PASSWORD)
    env = {"REDIS_URL": server.url, "OPENAI_API_KEY": "sk-not-a-secret-1"}
    outputs: list[str] = []
    write_docs(tmp_path / "docs", CORPUS)
    global_config(tmp_path / ".holodeck" / "config.yaml", "${REDIS_URL}", "files")
    with FakeOpenAI() as llm, FakeOpenAI() as judge:
        judge.responder = fake_judge.judge
        write(tmp_path / "agent.yaml", LLM_AGENT.format(llm=llm.url, judge=judge.url))
        for args in (("ingest",), ("-v", "test", "--report", "r.json", "--junit", "j.xml")):
            llm.chat.push(
                tool_calls(("kb", {"query": "espresso pressure"})),
                text("Espresso is brewed at about nine bars of pressure."),
            )
            result = run_holodeck(*args, cwd=tmp_path, env=env)
            assert result.returncode == 0, result.stdout + result.stderr
            outputs += [result.stdout, result.stderr]
        llm.chat.push(
            tool_calls(("kb", {"query": "espresso pressure"})),
            text("Nine bars."),
        )
        result = run_holodeck("-v", "chat", cwd=tmp_path, env=env, stdin="espresso?\n")
        assert result.returncode == 0, result.stdout + result.stderr
        outputs += [result.stdout, result.stderr]
        # The tool really answered from Redis: the passage reached the model.
        assert any("nine bars" in " ".join(tool_results(body)) for body in llm.chat_requests())
    report = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert report["summary"]["passed"] == 1, report
    assert list((tmp_path / ".holodeck" / "cache").rglob("*")), "the judge's replies are cached"
    written = [p for p in tmp_path.rglob("*") if p.is_file() and "docs" not in p.parts]
    assert {"r.json", "j.xml", "config.yaml"} <= {p.name for p in written}
    for path in written:
        data = path.read_bytes()
        assert PASSWORD.encode() not in data, f"the password is in {path}"
    check(outputs, PASSWORD)


def test_a_database_path_that_is_no_number_is_refused_not_database_0(
    tmp_path: Path, redis_server_factory: Callable[..., RedisServer]
) -> None:
    """``redis://...:PORT/abc`` was database 0 in silence (issue 61, debatable): refused as
    ``/99`` is, one line naming the redacted URL and the fix, exit 2, nothing written."""
    server = redis_server_factory(password=PASSWORD)
    write(tmp_path / "agent.yaml", AGENT)
    write_docs(tmp_path / "docs", CORPUS)
    global_config(tmp_path / ".holodeck" / "config.yaml", f"{server.url}/abc", "dbabc")
    result = run_holodeck("ingest", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: invalid Redis URL redis://:***@127.0.0.1:{server.port}/abc: '/abc' is not a "
        "database number; end the connection string with /0 (the default, also when left "
        "out), /1, ..."
    )
    assert "Traceback" not in result.stderr and PASSWORD not in result.stderr
    client = redis.Redis.from_url(server.url)
    assert client.dbsize() == 0  # database 0 untouched
