"""File names that are not text, or not safe to print: a Latin-1 ``caf\\xe9.md``, tabs,
newlines and terminal escape sequences in names, 255-byte names, a folder whose name is not
UTF-8. Each file is ingested under its escaped name (docs/ingestion.md), the same on every
run; the others are ingested as usual; search, its JSON and the terminal show the escaped
name, and no raw escape byte of a name reaches the output.

The real CLI on real files (created from bytes names), on the local index and on Redis.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from odd_names import ESC, ODD_FILES, ODD_SKIP_SHOWN, SHOWN, write_named, write_odd_docs
from terminal import final_screen, spawn_holodeck

AGENT = """
name: odd-names
tools:
  - type: vectorstore
    name: kb
    source: docs
"""

REDIS_CONFIG = (
    "vectorstore:\n  provider: redis\n  connection_string: {url}\n  index_name: {index}\n"
)


@pytest.fixture(
    params=[
        "local",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    """A project whose docs/ holds every odd name, on the local index, Redis or PostgreSQL."""
    write(tmp_path / "agent.yaml", AGENT)
    if request.param == "postgres":
        url = request.getfixturevalue("pg_url")
        index = request.getfixturevalue("pg_index_name")
        write(
            tmp_path / ".holodeck" / "config.yaml",
            REDIS_CONFIG.replace("redis", "postgres").format(url=json.dumps(url), index=index),
        )
    if request.param == "redis":
        url = request.getfixturevalue("redis_url")
        index = request.getfixturevalue("redis_index_name")
        write(
            tmp_path / ".holodeck" / "config.yaml",
            REDIS_CONFIG.format(url=json.dumps(url), index=index),
        )
    write_odd_docs(tmp_path / "docs")
    return tmp_path


def no_raw_escapes(*outputs: str) -> None:
    """No output holds a control character from a name (only newlines and tabs of its own)."""
    for text in outputs:
        assert ESC not in text and "\x07" not in text, text
        assert not any("\udc80" <= ch <= "\udcff" for ch in text), text


def test_every_odd_name_is_ingested_escaped_and_found(project: Path) -> None:
    first = run_holodeck("ingest", "--json", cwd=project)
    assert first.returncode == 0, first.stderr
    no_raw_escapes(first.stdout, first.stderr)
    [summary] = json.loads(first.stdout)["tools"]
    assert (summary["new"], summary["failed"]) == (len(ODD_FILES), 0), summary
    assert f"Skipped {ODD_SKIP_SHOWN}: unsupported file type .png" in first.stderr

    again = run_holodeck("ingest", "--json", cwd=project)  # the same ids: nothing to do
    assert again.returncode == 0, again.stderr
    [summary] = json.loads(again.stdout)["tools"]
    assert (summary["new"], summary["unchanged"], summary["removed"]) == (0, len(ODD_FILES), 0)

    for name, (query, _) in ODD_FILES.items():
        found = run_holodeck("search", query, "--json", cwd=project)
        assert found.returncode == 0, found.stderr
        no_raw_escapes(found.stdout, found.stderr)
        best = json.loads(found.stdout)["tools"][0]["results"][0]
        assert (best["doc_id"], best["source_path"]) == (SHOWN[name], f"docs/{SHOWN[name]}")

    # --book takes the folder as holodeck shows it, or its own name as a shell completes it.
    for book in ("r\\xe9sum\\xe9", os.fsdecode(b"r\xe9sum\xe9")):
        found = run_holodeck("search", "rocket", "--book", book, "--json", cwd=project)
        assert found.returncode == 0, found.stderr
        results = json.loads(found.stdout)["tools"][0]["results"]
        assert [r["source_path"] for r in results] == ["docs/r\\xe9sum\\xe9/rockets.md"]
        assert "Warning" not in found.stderr

    shown = run_holodeck("search", "lychee sorbet", cwd=project)  # the compact (piped) view
    assert shown.returncode == 0, shown.stderr
    no_raw_escapes(shown.stdout, shown.stderr)
    assert "Source: docs/\\x1b[31mred\\x1b[0m.md | Location: lines 1-3" in shown.stdout
    bilge = run_holodeck("search", "bilge pump water", cwd=project)
    assert "Source: docs/new\\nline.md | Location: lines 1-3 | Section: Bilge" in bilge.stdout


def test_a_renamed_odd_file_keeps_one_document(tmp_path: Path) -> None:
    """Two byte names never share an id: the Latin-1 file and its look-alike with a real
    backslash are two documents, and removing one leaves the other."""
    write(tmp_path / "agent.yaml", AGENT)
    docs = tmp_path / "docs"
    write_named(docs, b"caf\xe9.md", ODD_FILES[b"caf\xe9.md"][1])
    write_named(docs, b"caf\\xe9.md", ODD_FILES[b"caf\\xe9.md"][1])
    first = run_holodeck("ingest", "--json", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["tools"][0]["new"] == 2
    os.unlink(os.path.join(os.fsencode(docs), b"caf\xe9.md"))
    second = run_holodeck("ingest", "--json", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    [summary] = json.loads(second.stdout)["tools"]
    assert (summary["removed"], summary["unchanged"]) == (1, 1), summary
    found = run_holodeck("search", "espresso kettle", "--json", cwd=tmp_path)
    sources = {r["source_path"] for r in json.loads(found.stdout)["tools"][0]["results"]}
    assert sources == {"docs/caf\\\\xe9.md"}


def test_the_terminal_shows_the_escaped_name(tmp_path: Path) -> None:
    """On a real terminal, the name's escape sequence is drawn as text, not obeyed."""
    write(tmp_path / "agent.yaml", AGENT)
    write_odd_docs(tmp_path / "docs")
    assert run_holodeck("ingest", cwd=tmp_path).returncode == 0
    size = (40, 200)
    child = spawn_holodeck("search", "lychee sorbet", "--no-ingest", cwd=tmp_path, size=size)
    screen = "\n".join(final_screen(child, size))
    assert "docs/\\x1b[31mred\\x1b[0m.md › Sorbet · lines 1-3" in screen, screen
