"""The LLM's key is needed only by what calls the LLM (issue 60, items 2 and 3).

A project made by the real ``holodeck init``, its ``model:`` block uncommented as a user does
(provider openai, ``api_key: ${OPENAI_API_KEY}``), and no OPENAI_API_KEY anywhere: the local
index, its search, its settings and its MCP server need no key; chat and test say which
variable they need, and doing what they say works (against the fake model at the HTTP level).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from cli_helpers import error_line, holodeck_env, run_holodeck
from fake_openai import FakeOpenAI, quoting_tools, text, tool_calls
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from test_init_llm import uncomment_model

KEY = "sk-keys-test-not-real-42"


def init_with_model(tmp_path: Path) -> Path:
    """``holodeck init``, then the model: block uncommented; the key is not set."""
    project = tmp_path / "handbook"
    project.mkdir()
    made = run_holodeck("init", cwd=project)
    assert made.returncode == 0, made.stderr
    uncomment_model(project / "agent.yaml")
    assert "  api_key: ${OPENAI_API_KEY}" in (project / "agent.yaml").read_text()
    return project


def key_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "OPENAI_API_KEY" in line]


def point_at(project: Path, url: str) -> None:
    """Add ``endpoint:`` to the model: block, so chat reaches the fake server."""
    agent = project / "agent.yaml"
    lines = agent.read_text().replace(
        "  name: gpt-4o-mini", f'  name: gpt-4o-mini\n  endpoint: "{url}"', 1
    )
    agent.write_text(lines)


def test_commands_that_never_call_the_model_run_without_its_key(tmp_path: Path) -> None:
    project = init_with_model(tmp_path)
    commands = [
        ("ingest", "--json"),
        ("search", "Which kinds of files are indexed?", "--json"),
        ("store", "info", "--json"),
        ("config", "show", "--json"),
    ]
    for args in commands:
        done = run_holodeck(*args, cwd=project)
        assert done.returncode == 0, (args, done.stderr)
        json.loads(done.stdout)  # the command's own output, whole
        # said once, naming the variable and who will need it
        (warning,) = key_warnings(done.stderr)
        assert warning.startswith("WARNING: agent.yaml:12: model.api_key: OPENAI_API_KEY is not")
        assert "holodeck chat and holodeck test will need it" in warning
        assert "Traceback" not in done.stderr
    found = run_holodeck("search", "Which kinds of files are indexed?", "--json", cwd=project)
    results = json.loads(found.stdout)["tools"][0]["results"]
    assert results[0]["source_path"] == "docs/getting-started.md"


def test_chat_and_test_name_the_variable_and_following_the_advice_works(tmp_path: Path) -> None:
    project = init_with_model(tmp_path)
    serve_rest = ("serve", "--protocol", "rest", "--port", "0")  # it answers with the model
    for args, stdin in ((("chat",), "hello\n"), (("test",), None), (serve_rest, None)):
        refused = run_holodeck(*args, cwd=project, stdin=stdin)
        assert error_line(refused) == (  # the one line, no warning before it
            "Error: agent.yaml:12: model.api_key: OPENAI_API_KEY is not set (export it, or add "
            "OPENAI_API_KEY=... to .env next to agent.yaml)"
        )
        assert ":-default" not in refused.stderr  # advice the loader would refuse (item 3)

    with FakeOpenAI() as server:
        point_at(project, server.url)
        # advice 1: add it to .env next to agent.yaml
        (project / ".env").write_text(f"OPENAI_API_KEY={KEY}\n")
        server.chat.push(tool_calls(("knowledge_base", {"query": "file kinds"})))
        server.chat.push(quoting_tools("From the docs: {result}"))
        chatted = run_holodeck("chat", cwd=project, stdin="Which files are indexed?\n")
        assert chatted.returncode == 0, chatted.stderr
        assert "From the docs: Found" in chatted.stdout
        assert key_warnings(chatted.stderr) == []
        # advice 2: export it
        (project / ".env").unlink()
        server.chat.push(text("Markdown, text, PDF, CSV and JSON."))
        exported = run_holodeck(
            "chat", cwd=project, stdin="Which files?\n", env={"OPENAI_API_KEY": KEY}
        )
        assert exported.returncode == 0, exported.stderr
        assert "Markdown, text, PDF, CSV and JSON." in exported.stdout
        sent = [r.headers.get("authorization") for r in server.requests]
        assert sent and set(sent) == {f"Bearer {KEY}"}


def test_the_default_advice_for_another_variable_works_when_followed(tmp_path: Path) -> None:
    """Outside api_key, an unset ${VAR} is advised ${VAR:-default}, which loads."""
    project = init_with_model(tmp_path)
    agent = project / "agent.yaml"
    agent.write_text(agent.read_text().replace('source: "docs/"', "source: ${HANDBOOK_DOCS}"))
    refused = run_holodeck("config", "show", cwd=project, env={"OPENAI_API_KEY": KEY})
    assert refused.returncode == 2
    assert "or write ${HANDBOOK_DOCS:-default})" in refused.stderr
    agent.write_text(agent.read_text().replace("${HANDBOOK_DOCS}", "${HANDBOOK_DOCS:-docs/}"))
    shown = run_holodeck("config", "show", "--json", cwd=project, env={"OPENAI_API_KEY": KEY})
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["tools"][0]["source"].endswith("docs")


def test_an_mcp_client_starts_serve_without_the_key(tmp_path: Path) -> None:
    project = init_with_model(tmp_path)
    errlog = project / "serve.err"
    asyncio.run(_serve_and_search(project, errlog))
    (warning,) = key_warnings(errlog.read_text())
    assert "holodeck chat and holodeck test will need it" in warning
    assert "Traceback" not in errlog.read_text()


async def _serve_and_search(project: Path, errlog_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "holodeck", "serve"],
        cwd=project,
        env=holodeck_env(project),
    )
    with errlog_path.open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            listed = await client.list_tools()
            assert [t.name for t in listed.tools] == ["knowledge_base"]
            for _ in range(600):  # the first ingest runs while the server answers
                result = await client.call_tool("knowledge_base", {"query": "file kinds"})
                if not result.is_error and "getting-started.md" in result.content[0].text:
                    break
                await asyncio.sleep(0.2)
            assert "getting-started.md" in result.content[0].text
