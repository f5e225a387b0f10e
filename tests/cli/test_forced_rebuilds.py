"""A forced rebuild ends with the vector index it had: two and three ``--force-ingest`` in a
row each leave the library's ``.ivf`` and ``.ivf.sq8`` and ``store info`` says ``IVF``
(issue 61, item 2: every other rebuild dropped the file, silently, and the library was
searched by exact scan until the next one).

The real CLI, real files, the real local model; the size past which a library gets its side
files is lowered (in this process) so a few hundred one-line documents get them, by the code
path of a library of any size.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import ALWAYS_OWN_PROCESS, run_holodeck, write

pytestmark = pytest.mark.skipif(
    ALWAYS_OWN_PROCESS, reason="the lowered side-file sizes live in this process"
)

AGENT = """
name: rebuilds
tools:
  - type: vectorstore
    name: kb
    source: docs
"""
WORDS = ["apple", "banana", "kiwi", "papaya", "mango", "grape", "lemon", "lime", "peach", "fig"]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "proj"
    write(root / "agent.yaml", AGENT)
    rng = random.Random(3)
    for i in range(400):
        write(root / "docs" / f"d{i:03}.txt", f"{' '.join(rng.sample(WORDS, 3))} note {i}\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("holodeck.vectorstore.sqlite.vector_upkeep.ANN_MIN_ROWS", 300)
        patch.setattr("holodeck.vectorstore.sqlite.postings.POSTINGS_MIN_ROWS", 300)
        yield root


def vector_files(project: Path) -> list[str]:
    """The kinds of vector index file beside the library's database."""
    names = [p.name for p in (project / ".holodeck" / "index" / "kb").iterdir()]
    return [kind for kind in (".ivf", ".ivf.sq8") if any(n.endswith(kind) for n in names)]


def algorithm(project: Path) -> str:
    done = run_holodeck("store", "info", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["tools"][0]["algorithm"])


def test_forced_rebuilds_in_a_row_each_end_with_the_vector_file(project: Path) -> None:
    done = run_holodeck("ingest", cwd=project)
    assert done.returncode == 0, done.stderr
    assert vector_files(project) == [".ivf", ".ivf.sq8"]
    assert algorithm(project) == "IVF"

    for rebuild in (1, 2, 3):
        done = run_holodeck("ingest", "--force-ingest", "--json", cwd=project)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["tools"][0]["changed"] == 400
        assert vector_files(project) == [".ivf", ".ivf.sq8"], rebuild
        assert algorithm(project) == "IVF", rebuild

    found = run_holodeck("search", "note 17", "--no-ingest", "--json", cwd=project)
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["tools"][0]["results"]
    assert any(r["source_path"] == "docs/d017.txt" for r in results)
