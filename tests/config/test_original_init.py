"""What the original HoloDeck's ``holodeck init`` writes loads and runs here, unchanged.

The files under ``original_init/`` are agent.yaml files in the shapes the original's three
templates (conversational, customer-support, research) render to, with its non-interactive
defaults and with its wizard's other choices: every provider, vector store, RAG eval and
MCP server it offers (see the README there). Each goes through the real
``holodeck config show`` and ``holodeck test``, the model, the judge and the embeddings
played by the fake server at the HTTP level (pointed at by the variables each SDK reads:
``OPENAI_BASE_URL``, ``ANTHROPIC_BASE_URL``, ``OLLAMA_HOST`` (without ``/v1``, as Ollama
writes it), ``AZURE_OPENAI_ENDPOINT``), the MCP servers by a stand-in ``npx`` that starts
a small real MCP server. What a user adds after ``init`` (documents in the knowledge
base's folder) is added; agent.yaml is not touched.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from cli_helpers import run_holodeck, write
from fake_judge import judge
from fake_openai import FakeOpenAI, Reply, text, tool_calls, tool_results

FIXTURES = Path(__file__).parent / "original_init"
TEMPLATES = sorted(p.name for p in FIXTURES.glob("*.yaml"))
#: The agent's system prompt (instructions/system-prompt.md).
PROMPT = "You are the agent of a project made by the original HoloDeck's init."
#: How the judge's system prompt starts: how the fake model tells its requests apart.
JUDGE = "You evaluate the output of an AI assistant"

#: What the stand-in ``npx`` starts: one real MCP server per package, one tool each.
MCP_SERVER = '''
import sys

from mcp.server.mcpserver import MCPServer

package = sys.argv[-1]
app = MCPServer(package)


@app.tool()
def remember(fact: str) -> str:
    """Keep a fact."""
    return f"{package} kept: {fact}"


app.run()
'''

FAQ = """# Help centre

## Passwords

To reset a forgotten password, open the sign-in page and choose "Forgot password"; a
reset link is sent by email and works for one hour.

## Billing

A double charge is refunded within five working days once support confirms it. Billing
details are changed under Account, then Billing.

## Opening hours

The shops open from nine to five on weekdays.
"""

PAPERS = [
    {
        "id": "p1",
        "title": "Factoring on a quantum computer",
        "authors": ["A. Author"],
        "year": 1995,
        "abstract": "Quantum factoring of integers in polynomial time, and what it means for "
        "public-key cryptography.",
        "url": "https://example.org/p1",
    },
    {
        "id": "p2",
        "title": "Open problems in quantum error correction",
        "authors": ["B. Writer"],
        "year": 2021,
        "abstract": "Quantum error correction still lacks codes with low overhead; we list the "
        "open problems and suggest directions.",
        "url": "https://example.org/p2",
    },
]

ORDERS_PY = '''
def get_order_status(order_id: str) -> str:
    """The status of an order.

    Args:
        order_id: The order number.
    """
    return f"order {order_id}: shipped"
'''


def make_project(root: Path, template: str) -> None:
    """The project as the original's init leaves it, with the user's documents added."""
    write(root / "agent.yaml", (FIXTURES / template).read_text(encoding="utf-8"))
    write(root / "instructions" / "system-prompt.md", PROMPT)
    write(root / "knowledge_base" / "faqs.md", FAQ)
    write(root / "data" / "knowledge_base" / "faqs.md", FAQ)
    write(root / "data" / "faqs.md", FAQ)
    write(root / "data" / "papers_index.json", json.dumps(PAPERS, indent=2))
    write(root / "tools" / "orders.py", ORDERS_PY)


def fake_npx(bin_dir: Path) -> Path:
    """An ``npx`` that starts ``MCP_SERVER`` for whatever package it is asked for."""
    server = write(bin_dir / "mcp_server.py", MCP_SERVER)
    npx = bin_dir / "npx"
    npx.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{server}" "$@"\n', encoding="utf-8")
    npx.chmod(npx.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def _system(body: dict[str, Any]) -> str:
    """The system prompt of a chat completions or a Messages API request."""
    if isinstance(body.get("system"), str):
        return str(body["system"])
    first = (body.get("messages") or [{}])[0]
    return str(first.get("content")) if first.get("role") == "system" else ""


def _tool_names(body: dict[str, Any]) -> list[str]:
    names = []
    for tool in body.get("tools") or []:
        names.append(tool["function"]["name"] if "function" in tool else tool["name"])
    return names


def _question(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            return str(message["content"])
    return ""


def model(body: dict[str, Any]) -> Reply:
    """The agent's model: searches the knowledge base (and keeps a fact when asked to
    remember), then answers from what the tools said; the judge's requests go to the judge."""
    if _system(body).startswith(JUDGE):
        return judge(body)
    question = _question(body)
    tools = _tool_names(body)
    if not tool_results(body):
        calls: list[tuple[str, dict[str, str]]] = []
        searches = [t for t in tools if t.startswith("search_")]
        if searches:
            calls.append((searches[0], {"query": question}))
        if "remember" in question.lower() and "memory__remember" in tools:
            calls.append(("memory__remember", {"fact": question}))
        if calls:
            return tool_calls(*calls)
    found = " ".join(tool_results(body))[:300]
    said = f"Here is what I found about {question.lower()} {found}".strip()
    schema = _schema(body)
    if schema is None:
        return text(said)
    answer = {key: _value(schema["properties"][key], said) for key in schema["required"]}
    if "respond" in tools:  # provider anthropic: the answer is the answer tool's input
        return tool_calls(("respond", answer))
    return text(json.dumps(answer))


def _schema(body: dict[str, Any]) -> dict[str, Any] | None:
    """The response_format schema a request asks the answer to fit."""
    fmt = body.get("response_format")
    if fmt:
        return dict(fmt["json_schema"]["schema"])
    for tool in body.get("tools") or []:
        if tool.get("name") == "respond":
            return dict(tool["input_schema"])
    return None


def _value(prop: dict[str, Any], said: str) -> Any:
    """A value of a schema property's type: the answer's words, in the shape asked for."""
    if "enum" in prop:
        return prop["enum"][0]
    if prop.get("type") == "array":
        return [said]
    return said


@pytest.fixture
def fake_world(tmp_path: Path) -> Any:
    """The fake server and the environment that points every SDK and ``npx`` at fakes."""
    with FakeOpenAI() as server:
        server.responder = model
        root_url = server.url.removesuffix("/v1")
        env = {
            "OPENAI_API_KEY": "sk-test-original-init",
            "ANTHROPIC_API_KEY": "sk-ant-test-original-init",
            "AZURE_OPENAI_API_KEY": "az-test-original-init",
            "AZURE_OPENAI_ENDPOINT": root_url,
            "OPENAI_BASE_URL": server.url,
            "ANTHROPIC_BASE_URL": root_url,
            "OLLAMA_HOST": root_url,
            "PATH": f"{fake_npx(tmp_path / 'bin')}{os.pathsep}{os.environ['PATH']}",
        }
        yield server, env


@pytest.mark.parametrize("template", TEMPLATES)
def test_what_the_original_init_writes_loads_and_runs(
    template: str, tmp_path: Path, fake_world: Any, request: pytest.FixtureRequest
) -> None:
    server, env = fake_world
    if "postgres" in template:  # its knowledge base goes into the suite's real PostgreSQL
        env = {**env, "POSTGRES_CONNECTION_STRING": request.getfixturevalue("pg_url")}
    project = tmp_path / "project"
    make_project(project, template)
    if "provider: postgres" in (FIXTURES / template).read_text(encoding="utf-8"):
        # its wizard's PostgreSQL: the suite's real one, where the variable it writes says
        env["POSTGRES_CONNECTION_STRING"] = request.getfixturevalue("pg_url")

    shown = run_holodeck("config", "show", cwd=project, env=env)
    assert shown.returncode == 0, shown.stderr
    assert "Error" not in shown.stderr
    assert f"from {project / 'agent.yaml'}" in shown.stdout

    ran = run_holodeck("test", "--report", "report.json", cwd=project, env=env)
    assert ran.returncode in (0, 1), ran.stderr  # 1: a case failed its checks; never 2
    warnings = [line for line in ran.stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == len(set(warnings)), "a key was warned about twice"
    report = json.loads((project / "report.json").read_text(encoding="utf-8"))
    cases = report["cases"]
    agent_yaml = yaml.safe_load((FIXTURES / template).read_text(encoding="utf-8"))
    assert [c["input"] for c in cases] == [c["input"] for c in agent_yaml["test_cases"]]
    errors = [(c["name"], c["reason"]) for c in cases if c["status"] == "error"]
    assert errors == []
    # every metric the file lists ran, through the judge where it needs one
    for case in cases:
        for metric in case["metrics"]:
            assert metric["status"] in ("passed", "failed"), metric
    # the answers were asked for in response_format's shape, and checked against it
    if "response_format" in agent_yaml:
        for case in cases:
            (fits,) = [c for c in case["checks"] if c["check"] == "response_format"]
            assert fits["passed"], fits
    # the model and the judge were asked at each provider's API (Ollama's under /v1)
    asked = [r.path for r in server.requests if r.path.endswith(("/completions", "/messages"))]
    assert asked and all("/v1/" in path for path in asked), asked
