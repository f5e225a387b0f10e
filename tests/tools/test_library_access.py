"""Who may read a library, and a project moving its own source folder.

Reading follows writing: a project reads a library it fills (known by its id in
``.holodeck/project_id``), never another project's, unless its agent names that tenant
explicitly. A project that renames its source folder (or a file in it) is still the library's
owner: its next ingest moves the chunks to the new paths without re-embedding them, and no
result names a file that is gone. The same on the local index and on Redis.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_helpers import run_holodeck, write

from holodeck.vectorstore.adapter import IndexAdapter
from holodeck.vectorstore.local import LocalIndexAdapter

NAME = "field-notes"
TOOL = "kb"
DOCS = {
    "birds/otters.md": "# Otters\n\nThe purple otter migration happens every spring in the "
    "northern lakes, when the ice breaks.",
    "birds/herons.txt": "Grey herons stand still in shallow water for minutes before they "
    "strike at a fish.",
    "garden/compost.md": "# Compost\n\nA compost heap needs green and brown waste, turned "
    "every two weeks so the microbes get oxygen.",
    "readme.md": "# Field notes\n\nNotes from walks around the lakes and the garden.",
}
QUERIES = ["purple otter migration", "herons fishing", "turning a compost heap"]


def agent_yaml(source: str, database: str = "", tenant: str = "") -> str:
    head = f"name: {NAME}\n" + (f"tenant: {tenant}\n" if tenant else "")
    return (
        head + f"tools:\n  - type: vectorstore\n    name: {TOOL}\n    source: {source}\n"
        f"    top_k: 10\n{database}"
    )


def make_project(root: Path, source: str = "docs", database: str = "", tenant: str = "") -> Path:
    write(root / "agent.yaml", agent_yaml(source, database, tenant))
    for rel, text in DOCS.items():
        write(root / source / rel, text + "\n")
    return root


def ok(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = run_holodeck(*args, cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def ingest(project: Path) -> tuple[dict[str, Any], str]:
    """``ingest --json`` of the one tool: its summary and the command's stderr."""
    result = ok("ingest", "--json", cwd=project)
    return json.loads(result.stdout)["tools"][0], result.stderr


def result_sources(project: Path, query: str) -> list[str]:
    found = json.loads(ok("search", "--no-ingest", "--json", query, cwd=project).stdout)
    return [r["source_path"] for r in found["tools"][0]["results"]]


def vectors(adapter: IndexAdapter) -> dict[str, np.ndarray]:
    """Every chunk's vector of the library, by the chunk's text (its identity across moves)."""
    out = {}
    for doc in adapter.doc_ids(NAME, TOOL):
        for rec in adapter.get_doc_chunks(NAME, TOOL, doc):
            out[rec.content] = np.asarray(rec.vector)
    adapter.close()
    return out


@pytest.fixture(
    params=[
        "local",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """``local``, or the ``database:`` block of a fresh index on the session Redis (or
    PostgreSQL)."""
    if request.param == "local":
        yield "local"
        return
    prefix = "pg" if request.param == "postgres" else "redis"
    url = request.getfixturevalue(f"{prefix}_url")
    index = request.getfixturevalue(f"{prefix}_index_name")
    yield (
        f"    database:\n      provider: {request.param}\n"
        f"      connection_string: {json.dumps(url)}\n      index_name: {index}\n"
    )


def open_adapter(project: Path, backend: str) -> IndexAdapter:
    if backend == "local":
        return LocalIndexAdapter(project / ".holodeck" / "index" / TOOL)
    from holodeck.vectorstore.postgres import PostgresIndexAdapter
    from holodeck.vectorstore.redis.adapter import RedisIndexAdapter

    url = json.loads(backend.split("connection_string: ")[1].splitlines()[0])
    name = backend.split("index_name: ")[1].strip()
    if "provider: postgres" in backend:
        return PostgresIndexAdapter(url, name)
    return RedisIndexAdapter(url, name)


def test_renaming_the_source_folder_moves_the_chunks_without_re_embedding(
    tmp_path: Path, backend: str
) -> None:
    database = "" if backend == "local" else backend
    project = make_project(tmp_path / "p", "docs", database)
    first, _ = ingest(project)
    assert first["new"] == len(DOCS)
    before = vectors(open_adapter(project, backend))

    # The folder is renamed and agent.yaml follows (same project, same .holodeck/project_id).
    (project / "docs").rename(project / "handbook")
    write(project / "agent.yaml", agent_yaml("handbook", database))
    stale = run_holodeck("search", "--no-ingest", QUERIES[0], cwd=project)
    assert stale.returncode == 0
    assert (
        f"WARNING: {TOOL}: indexed from docs, but its source is now handbook; results name "
        "the old paths until `holodeck ingest` moves them"
    ) in stale.stderr

    moved, log = ingest(project)
    assert (moved["moved"], moved["new"], moved["removed"], moved["chunks_embedded"]) == (
        len(DOCS),
        0,
        0,
        0,
    )
    assert moved["chunks_total"] == first["chunks_total"]
    assert (
        f"INFO: Library {TOOL} was filled from docs, now from handbook (this project's source "
        "moved): its documents follow without re-embedding where their content is the same"
    ) in log
    after = vectors(open_adapter(project, backend))
    assert after.keys() == before.keys()
    for text, vector in before.items():
        np.testing.assert_allclose(after[text], vector, atol=1e-6)
    for query in QUERIES:
        found = result_sources(project, query)
        assert found and all(s.startswith("handbook/") for s in found), found
        assert all((project / s).is_file() for s in found), found  # no file that is gone
    assert result_sources(project, QUERIES[0])[0] == "handbook/birds/otters.md"

    # A file renamed inside the source moves the same way; nothing is left to do after.
    (project / "handbook" / "birds" / "herons.txt").rename(project / "handbook" / "herons.txt")
    renamed, _ = ingest(project)
    assert (renamed["moved"], renamed["removed"], renamed["chunks_embedded"]) == (1, 0, 0)
    assert result_sources(project, QUERIES[1])[0] == "handbook/herons.txt"
    again, log = ingest(project)
    assert (again["moved"], again["unchanged"], again["chunks_embedded"]) == (0, len(DOCS), 0)
    assert "was filled from" not in log
    forced, _ = ingest_forced(project)
    assert forced["changed"] == len(DOCS)


def ingest_forced(project: Path) -> tuple[dict[str, Any], str]:
    result = ok("ingest", "--force-ingest", "--json", cwd=project)
    return json.loads(result.stdout)["tools"][0], result.stderr


READ_REFUSAL = (
    f"Error: agent '{NAME}', tool '{TOOL}': the library of tenant '{NAME}' in the local index "
    "is filled by another project, so this project may not read it."
)


def test_a_local_index_another_project_filled_is_not_read(tmp_path: Path) -> None:
    """B got A's index folder (copied, or committed without A's project id): B's commands
    neither read nor replace it; naming the tenant explicitly reads it."""
    a = make_project(tmp_path / "a")
    ingest(a)
    b = make_project(tmp_path / "b")
    (b / "docs" / "birds" / "otters.md").unlink()
    shutil.copytree(a / ".holodeck" / "index", b / ".holodeck" / "index")
    index = b / ".holodeck" / "index" / TOOL
    before = vectors(LocalIndexAdapter(index))

    for args in (("search", "--no-ingest", QUERIES[0]), ("store", "info", "--json")):
        refused = run_holodeck(*args, cwd=b)
        assert (refused.returncode, refused.stdout) == (2, ""), refused.stdout + refused.stderr
        assert refused.stderr.strip().splitlines()[-1].startswith(READ_REFUSAL), refused.stderr
        assert str(a) not in refused.stderr
    for args in (("ingest",), ("search", QUERIES[0])):
        refused = run_holodeck(*args, cwd=b)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "is filled by another project; nothing was changed" in refused.stderr
    assert vectors(LocalIndexAdapter(index)).keys() == before.keys()

    write(b / "agent.yaml", agent_yaml("docs", tenant=NAME))
    assert result_sources(b, QUERIES[0])[0] == "docs/birds/otters.md"  # A's chunk, as named
