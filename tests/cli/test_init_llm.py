"""Adding an LLM to a project ``holodeck init`` made keeps its knowledge base (issue 42, item 2).

Uncommenting ``model:`` (provider openai) makes text-embedding-3-small every tool's default
embedding model (the original HoloDeck's contract); the index was built with the local model.
The real CLI, the real local model and index, the example documents; no request leaves the
machine (the key is a dummy: nothing may need it).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from cli_helpers import run_holodeck

from holodeck.embeddings.tiktoken_offline import TiktokenCounter

REPO = Path(__file__).resolve().parents[2]
KEY = {"OPENAI_API_KEY": "sk-test-not-a-real-key"}


def uncomment_model(agent: Path) -> None:
    """What a user does: remove the '# ' of the model: block init wrote."""
    text = agent.read_text()
    block = re.search(r"^# model:\n(?:#   .*\n)+", text, re.M)
    assert block, text
    lines = [line.removeprefix("# ") for line in block.group(0).splitlines(keepends=True)]
    agent.write_text(text.replace(block.group(0), "".join(lines)))


def ingest_json(project: Path) -> dict:
    result = run_holodeck("ingest", "--json", cwd=project, env=KEY)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout)["tools"][0]


def project_with_docs(tmp_path: Path) -> Path:
    project = tmp_path / "handbook"
    shutil.copytree(REPO / "examples" / "docs" / "guides", project / "docs")
    made = run_holodeck("init", cwd=project)
    assert made.returncode == 0, made.stderr
    return project


def test_uncommenting_the_model_keeps_the_index_init_built(tmp_path: Path) -> None:
    project = project_with_docs(tmp_path)
    first = ingest_json(project)
    assert first["chunks_total"] > 0

    uncomment_model(project / "agent.yaml")
    again = ingest_json(project)  # nothing to rebuild, nothing re-embedded
    assert (again["chunks_embedded"], again["chunks_total"]) == (0, first["chunks_total"])
    found = run_holodeck(
        "search", "How often is a failed job retried?", "--json", cwd=project, env=KEY
    )
    assert found.returncode == 0, found.stderr
    results = json.loads(found.stdout)["tools"][0]["results"]
    assert results and results[0]["source_path"].startswith("docs/")


def test_an_older_agent_yaml_is_told_both_ways_out_with_the_real_numbers(tmp_path: Path) -> None:
    project = project_with_docs(tmp_path)
    agent = project / "agent.yaml"
    # An agent.yaml from before init wrote the model: the tool names no embedding_model.
    lines = agent.read_text().splitlines(keepends=True)
    kept = [line for line in lines if "embedding_model:" not in line]
    agent.write_text("".join(kept))
    source_line = next(i for i, line in enumerate(kept, 1) if line.strip().startswith("source:"))
    built = ingest_json(project)
    uncomment_model(agent)

    refused = run_holodeck("ingest", cwd=project, env=KEY)
    assert refused.returncode == 2, refused.stderr  # a configuration matter, as docs say
    (line,) = [x for x in refused.stderr.splitlines() if x.strip()]
    assert "Traceback" not in refused.stderr
    # way out 1: keep the local model, with the line and where it goes
    assert "add `embedding_model: all-MiniLM-L6-v2`" in line
    assert (
        f"tools[0] (knowledge_base) of agent.yaml, below its source: on line {source_line}" in line
    )
    # way out 2: rebuild, with what it sends where
    assert "holodeck ingest --force-ingest" in line and "through openai" in line
    assert f"documents: {built['new']}," in line
    assert f"chunks: {built['chunks_total']}," in line
    tokens = int(re.search(r"about ([\d,]+) tokens", line).group(1).replace(",", ""))
    counter = TiktokenCounter.for_model("text-embedding-3-small")
    text_tokens = sum(counter.count(p.read_text()) for p in (project / "docs").glob("*.md"))
    assert 0.8 * text_tokens <= tokens <= 2 * text_tokens  # the folder's text, with overlaps

    # following way out 1 as said: the index answers again, nothing re-embedded
    where = source_line  # the line after source:, with its indent
    indent = re.match(r"\s*", kept[where - 1]).group(0)
    text = agent.read_text().splitlines(keepends=True)
    text.insert(where, f"{indent}embedding_model: all-MiniLM-L6-v2\n")
    agent.write_text("".join(text))
    after = ingest_json(project)
    assert (after["chunks_embedded"], after["chunks_total"]) == (0, built["chunks_total"])
