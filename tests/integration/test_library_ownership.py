"""A library belongs to one source: another project cannot erase it, whatever its flags.

Two projects whose agents share a name (both copied from agent.yaml.example) on one Redis
used to share the library: ingesting the second removed the first one's documents. The
index now records which project (its id in ``.holodeck/project_id``) and which source
folder fill each library. A checkout of the same project elsewhere (a laptop and CI) is the
same source; an explicit ``tenant:`` takes a library over.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from cli_helpers import run_holodeck, write
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from redis_project import (
    CORPUS,
    assert_same_library,
    database_yaml,
    holodeck_json,
    snapshot,
    write_docs,
)

pytestmark = pytest.mark.redis

NAME = "skyline-assistant"
TOOL = "knowledge_base"
DOCS_A = {k: v for k, v in CORPUS.items() if k.startswith(("space/", "kitchen/"))}
DOCS_B = {k: v for k, v in CORPUS.items() if k.startswith("garden/")}


def make_project(root: Path, url: str, index: str, docs: dict[str, str], tenant: str = "") -> Path:
    agent = f"name: {NAME}\n" + (f"tenant: {tenant}\n" if tenant else "")
    agent += f"tools:\n  - type: vectorstore\n    name: {TOOL}\n    source: docs\n"
    agent += database_yaml(url, index)
    agent += "test_cases:\n  - name: finds-something\n    input: espresso pressure\n"
    agent += "    expected_content: [espresso]\n"
    write(root / "agent.yaml", agent)
    write_docs(root / "docs", docs)
    return root


#: What a project gets back for a library another project fills, unless it names the tenant.
READ_REFUSAL = (
    f"Error: agent '{NAME}', tool '{TOOL}': the library of tenant '{NAME}' in the redis index "
    "is filled by another project, so this project may not read it. To keep both, set "
    "tenant: to another value in agent.yaml or rename the tool; to share it, set tenant: "
    f"{NAME} explicitly (its next ingest takes it over); if both are one project, commit "
    ".holodeck/project_id so every checkout shares its id"
)


def top_source(project: Path, query: str) -> str:
    found, _ = holodeck_json("search", query, cwd=project)
    return str(found["tools"][0]["results"][0]["source_path"])


def test_another_project_cannot_erase_a_library(
    tmp_path: Path, redis_url: str, index_names: Callable[[], str]
) -> None:
    index = index_names()
    a = make_project(tmp_path / "a", redis_url, index, DOCS_A)
    b = make_project(tmp_path / "b", redis_url, index, DOCS_B)

    summary, first = holodeck_json("ingest", cwd=a)
    assert summary["tools"][0]["new"] == len(DOCS_A)
    assert "INFO: Created .holodeck/project_id: this project's id in shared indexes; commit it" in (
        first.stderr
    )
    project_id = (a / ".holodeck" / "project_id").read_text().splitlines()[-1]
    before = snapshot(redis_url, index, NAME, TOOL)

    for args in (("ingest",), ("ingest", "--force-ingest"), ("search", "compost")):
        refused = run_holodeck(*args, cwd=b)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        [line] = [x for x in refused.stderr.splitlines() if x.startswith("Error")]
        assert line == (
            f"Error: agent '{NAME}', tool '{TOOL}': the library of tenant '{NAME}' in the "
            "redis index is filled by another project; nothing was changed. To keep both, set "
            "tenant: to another value in agent.yaml or rename the tool; to take it over, set "
            f"tenant: {NAME} explicitly; if both are one project, commit .holodeck/project_id "
            "so every checkout shares its id"
        )
        # Nothing of the other project: its folder, its host, its id.
        assert str(a) not in refused.stderr and project_id not in refused.stderr
        assert socket.gethostname() not in refused.stderr
    assert_same_library(snapshot(redis_url, index, NAME, TOOL), before)
    assert top_source(a, "espresso pressure") == "docs/kitchen/coffee.txt"

    # Another tenant keeps both knowledge bases.
    make_project(b, redis_url, index, DOCS_B, tenant="garden-team")
    summary, _ = holodeck_json("ingest", cwd=b)
    assert summary["tools"][0]["new"] == len(DOCS_B)
    both = before["total"] + summary["tools"][0]["chunks_total"]
    assert_same_library(snapshot(redis_url, index, NAME, TOOL), before | {"total": both})

    # The same tenant named explicitly takes the library over, and says so.
    make_project(b, redis_url, index, DOCS_B, tenant=NAME)
    summary, taken = holodeck_json("ingest", cwd=b)
    assert summary["tools"][0]["removed"] == len(DOCS_A)
    assert "belonged to another project; taken over by source docs of the project at " in (
        taken.stderr
    )
    assert str(a) not in taken.stderr
    assert top_source(b, "compost heap") == "docs/garden/compost.txt"
    again = run_holodeck("ingest", cwd=a)  # now a is the other project, and is told why
    assert again.returncode == 2
    assert "was this project's until another project took it over" in again.stderr
    assert f"To take it back, set tenant: {NAME} explicitly" in again.stderr
    assert str(b) not in again.stderr


def test_a_checkout_elsewhere_is_the_same_source(
    tmp_path: Path, redis_url: str, index_names: Callable[[], str]
) -> None:
    """A laptop and a CI checkout of one repository share .holodeck/project_id."""
    index = index_names()
    laptop = make_project(tmp_path / "laptop", redis_url, index, DOCS_A)
    holodeck_json("ingest", cwd=laptop)
    ci = tmp_path / "ci" / "checkout"
    shutil.copytree(laptop, ci)
    summary, result = holodeck_json("ingest", cwd=ci)
    assert summary["tools"][0]["unchanged"] + summary["tools"][0]["touched"] == len(DOCS_A)
    assert summary["tools"][0]["removed"] == 0
    assert "Created .holodeck/project_id" not in result.stderr
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    owner = client.hgetall(f"{index}:owner:" + json.dumps([NAME, TOOL]))
    assert owner["root"] == str(ci) and owner["source"] == "docs"  # the description follows

    # A checkout without the file (not committed) is another project: refused, with the fix.
    (ci / ".holodeck" / "project_id").unlink()
    refused = run_holodeck("ingest", cwd=ci)
    assert refused.returncode == 2 and "commit .holodeck/project_id" in refused.stderr


def test_a_library_made_before_owner_records_is_claimed_once(
    tmp_path: Path, redis_url: str, index_names: Callable[[], str]
) -> None:
    index = index_names()
    a = make_project(tmp_path / "a", redis_url, index, DOCS_A)
    holodeck_json("ingest", cwd=a)
    client = redis.Redis.from_url(redis_url)
    assert client.delete(f"{index}:owner:" + json.dumps([NAME, TOOL])) == 1  # as before owners

    summary, claimed = holodeck_json("ingest", cwd=a)
    assert summary["tools"][0]["unchanged"] == len(DOCS_A)
    info = [line for line in claimed.stderr.splitlines() if "had no owner record" in line]
    assert info == [
        f"INFO: Library {TOOL} of tenant {NAME} had no owner record (made by an older "
        f"holodeck); claimed for source docs of the project at {a} (host "
        + info[0].split("(host ")[1]
    ]
    _, quiet = holodeck_json("ingest", cwd=a)
    assert "had no owner record" not in quiet.stderr


def test_another_project_reads_nothing_of_a_library(
    tmp_path: Path, redis_url: str, index_names: Callable[[], str]
) -> None:
    """B copies A's agent shape (same agent and tool name, no tenant:) on one Redis: every
    command of B that would read A's library refuses, through the CLI and through MCP."""
    index = index_names()
    a = make_project(tmp_path / "a", redis_url, index, DOCS_A)
    b = make_project(tmp_path / "b", redis_url, index, DOCS_B)
    holodeck_json("ingest", cwd=a)
    project_id = (a / ".holodeck" / "project_id").read_text().splitlines()[-1]
    before = snapshot(redis_url, index, NAME, TOOL)
    b_agent = (b / "agent.yaml").read_bytes()
    phrase = "espresso nine bars of pressure"  # only in A's documents

    def unchanged() -> None:
        assert_same_library(snapshot(redis_url, index, NAME, TOOL), before)
        assert (b / "agent.yaml").read_bytes() == b_agent

    for args in (
        ("search", "--no-ingest", phrase),
        ("search", "--no-ingest", "--json", phrase),
        ("store", "info"),
        ("store", "info", "--json"),
    ):
        refused = run_holodeck(*args, cwd=b)
        assert (refused.returncode, refused.stdout) == (2, ""), refused.stdout + refused.stderr
        assert refused.stderr.strip().splitlines()[-1] == READ_REFUSAL, refused.stderr
        unchanged()
    for args, stdin in ((("search", phrase), None), (("chat",), phrase + "\n"), (("test",), None)):
        refused = run_holodeck(*args, cwd=b, stdin=stdin)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "filled by another project; nothing was changed" in refused.stderr
        assert "Espresso" not in refused.stdout + refused.stderr
        unchanged()
    for output in (run_holodeck("store", "info", cwd=b).stderr, READ_REFUSAL):
        assert str(a) not in output and project_id not in output
        assert socket.gethostname() not in output

    # The MCP server: the call is a tool error carrying the same line, never A's chunks.
    text, is_error = asyncio.run(_mcp_search(b, phrase))
    assert is_error and text == READ_REFUSAL.removeprefix("Error: "), text
    unchanged()

    # A still reads its own; a project naming the tenant explicitly reads it too.
    assert top_source(a, phrase) == "docs/kitchen/coffee.txt"
    c = make_project(tmp_path / "c", redis_url, index, DOCS_B, tenant=NAME)
    found, _ = holodeck_json("search", "--no-ingest", phrase, cwd=c)
    assert found["tools"][0]["results"][0]["source_path"] == "docs/kitchen/coffee.txt"
    info, _ = holodeck_json("store", "info", cwd=c)
    assert (info["tools"][0]["documents"], info["tools"][0]["chunks"]) == (
        len(DOCS_A),
        before["count"],
    )
    unchanged()


async def _mcp_search(project: Path, query: str) -> tuple[str, bool]:
    """One ``call_tool`` of ``holodeck serve`` (stdio) in ``project``: its text and is_error."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env |= {"HOME": str(project / "home"), "NO_COLOR": "1"}
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "holodeck", "serve"], cwd=project, env=env
    )
    with (project / "serve.err").open("w") as errlog:
        async with Client(stdio_client(params, errlog=errlog)) as client:
            result = await client.call_tool(TOOL, {"query": query})
    text = result.content[0].text  # type: ignore[union-attr]
    return text, bool(result.is_error)
