"""A library belongs to one source: another project cannot erase it, whatever its flags.

Two projects whose agents share a name (both copied from agent.yaml.example) on one Redis
used to share the library: ingesting the second removed the first one's documents. The
index now records which project (its id in ``.holodeck/project_id``) and which source
folder fill each library. A checkout of the same project elsewhere (a laptop and CI) is the
same source; an explicit ``tenant:`` takes a library over.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import redis
from cli_helpers import run_holodeck, write
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
    write(root / "agent.yaml", agent + database_yaml(url, index))
    write_docs(root / "docs", docs)
    return root


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
        assert line.startswith(
            f"Error: library '{TOOL}' of tenant '{NAME}' in the redis index belongs to another "
            f"source: source docs of the project at {a} (host "
        ), line
        assert f"(project id {project_id}), not source docs of the project at {b}" in line
        assert "nothing was changed" in line
        assert "set tenant: in agent.yaml or rename the tool" in line
        assert "commit .holodeck/project_id" in line
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
    assert f"belonged to source docs of the project at {a} (host " in taken.stderr
    assert f"taken over by source docs of the project at {b}" in taken.stderr
    assert top_source(b, "compost heap") == "docs/garden/compost.txt"
    again = run_holodeck("ingest", cwd=a)  # now a is the other source
    assert again.returncode == 2 and f"project at {b}" in again.stderr


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
