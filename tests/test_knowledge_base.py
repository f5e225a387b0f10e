"""``holodeck.KnowledgeBase``, the library the commands are thin over: the docs' Python
example (docs/library.md) runs as written and finds the answer, and opening names what is
ambiguous."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import write

from holodeck import KnowledgeBase
from holodeck.errors import ConfigError

REPO = Path(__file__).resolve().parents[1]


def docs_example() -> str:
    """The first Python block of docs/library.md."""
    text = (REPO / "docs" / "library.md").read_text(encoding="utf-8")
    found = re.search(r"```python\n(.*?)```", text, re.S)
    assert found, "docs/library.md: no python block"
    return found.group(1)


def test_the_docs_example_runs_as_written_and_finds_the_answer(tmp_path: Path) -> None:
    shutil.copy(REPO / "agent.yaml.example", tmp_path / "agent.yaml.example")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    (tmp_path / "example.py").write_text(docs_example(), encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "example.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "guides/retries.md" in lines[0]  # the page that answers comes first
    assert re.fullmatch(r"[1-9]\d* chunks", lines[-1])
    assert (tmp_path / ".holodeck" / "index").is_dir()  # beside the agent.yaml, as ingest does


def test_opening_an_agent_of_several_knowledge_bases_asks_which(tmp_path: Path) -> None:
    write(tmp_path / "a" / "x.md", "alpha\n")
    write(tmp_path / "b" / "y.md", "beta\n")
    write(
        tmp_path / "agent.yaml",
        "name: two\ntools:\n  - {type: vectorstore, name: one, source: a}\n"
        "  - {type: vectorstore, name: two, source: b}\n",
    )
    with pytest.raises(ConfigError, match=r"name one knowledge base of one, two"):
        KnowledgeBase.open(tmp_path / "agent.yaml")
    with KnowledgeBase.open(tmp_path, name="two") as kb:
        summary = kb.ingest()
        assert summary is not None and summary.chunks_total == 1
        results, _ = kb.find("beta")
        assert [r.source_path for r in results] == ["b/y.md"]


def test_a_searching_process_runs_numpy_blas_on_one_thread_and_leaves_faiss_its_own() -> None:
    """After start-up, numpy's products use one thread (its OpenBLAS threads spin on a busy
    machine) while faiss's BLAS, which an ingest's k-means uses, keeps its threads."""
    import subprocess
    import sys

    code = (
        "import numpy, faiss, threadpoolctl\n"
        "from holodeck.knowledge_base import settle\n"
        "threadpoolctl.threadpool_limits(limits=2)\n"
        "settle()\n"
        "for lib in threadpoolctl.threadpool_info():\n"
        "    if lib['internal_api'] == 'openblas':\n"
        "        print(lib['prefix'], lib['num_threads'])\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout.split("\n")
    threads = dict(line.split() for line in out if line)
    assert threads["libscipy_openblas"] == "1"
    assert threads.get("libopenblas", "2") == "2"
