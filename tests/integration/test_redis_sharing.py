"""Done-when 3: one Redis index shared by two tools and two agents (tenants), no leaks.

Agent ``alpha`` has two tools (``manuals``, ``faq``) on a project-level config; agent ``beta``
has a tool also called ``manuals`` on a user-level config; all three libraries live in one
index. Every search returns only its own tool's chunks, ``store info`` counts per tenant and
library, and the per-document state in Redis makes a copy of the project on another
"machine" (another folder, no local state) find nothing to do.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_helpers import write
from redis_project import global_config, holodeck_json, snapshot, write_docs

pytestmark = pytest.mark.redis

ALPHA = """
name: alpha
tools:
  - type: vectorstore
    name: manuals
    source: manuals
  - type: vectorstore
    name: faq
    source: faq
"""
BETA = """
name: beta
tools:
  - type: vectorstore
    name: manuals
    source: manuals
"""
#: Every text names its owner, so a leaked chunk is seen at once. All are about pumps.
ALPHA_MANUALS = {
    "pump.md": "[alpha/manuals] The alpha cooling pump restarts itself 30 seconds after a trip.",
    "valves.md": "[alpha/manuals] Alpha pump valves are greased every month.",
}
ALPHA_FAQ = {
    "q1.md": "[alpha/faq] Q: Why did the pump stop? A: The alpha pump trips on low pressure.",
    "q2.md": "[alpha/faq] Q: Who restarts pumps? A: The alpha night shift restarts pumps.",
}
BETA_MANUALS = {
    "pump.md": "[beta/manuals] The beta pump restarts only by hand, after an inspection.",
    "motor.md": "[beta/manuals] The beta pump motor is rated for 11 kW.",
    "seals.md": "[beta/manuals] Beta pump seals are replaced every year.",
}
QUERY = "how does the pump restart after it stops"


def search(project: Path) -> dict[str, list[str]]:
    """Per tool, the contents of every hit for QUERY."""
    found, _ = holodeck_json("search", QUERY, "--top-k", "10", cwd=project)
    return {t["tool"]: [r["content"] for r in t["results"]] for t in found["tools"]}


def test_two_tools_and_two_tenants_share_one_index_without_leaks(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    write(alpha / "agent.yaml", ALPHA)
    write_docs(alpha / "manuals", ALPHA_MANUALS)
    write_docs(alpha / "faq", ALPHA_FAQ)
    global_config(alpha / ".holodeck" / "config.yaml", redis_url, redis_index_name)
    write(beta / "agent.yaml", BETA)
    write_docs(beta / "manuals", BETA_MANUALS)
    global_config(beta / "home" / ".holodeck" / "config.yaml", redis_url, redis_index_name)

    chunks: dict[tuple[str, str], int] = {}
    for project, tenant in ((alpha, "alpha"), (beta, "beta")):
        ingested, _ = holodeck_json("ingest", cwd=project)
        for summary in ingested["tools"]:
            assert summary["backend"] == "redis"
            chunks[(tenant, summary["tool"])] = summary["chunks_total"]

    hits = search(alpha)
    assert len(hits["manuals"]) == 2 and len(hits["faq"]) == 2  # all of their own, no more
    assert all(text.startswith("[alpha/manuals]") for text in hits["manuals"])
    assert all(text.startswith("[alpha/faq]") for text in hits["faq"])
    hits = search(beta)
    assert len(hits["manuals"]) == 3
    assert all(text.startswith("[beta/manuals]") for text in hits["manuals"])

    for project, tenant, docs in (
        (alpha, "alpha", {"manuals": 2, "faq": 2}),
        (beta, "beta", {"manuals": 3}),
    ):
        info, _ = holodeck_json("store", "info", cwd=project)
        assert info["tenant"] == tenant
        for stats in info["tools"]:
            assert stats["index"] == redis_index_name
            assert stats["documents"] == docs[stats["tool"]]
            assert stats["chunks"] == chunks[(tenant, stats["tool"])]
    total = snapshot(redis_url, redis_index_name, "alpha", "manuals")["total"]
    assert total == sum(chunks.values())  # every chunk of the index is someone's, once

    # Another machine: the same project elsewhere, no local state; Redis knows it all.
    elsewhere = tmp_path / "elsewhere" / "alpha"
    shutil.copytree(alpha, elsewhere)  # copy2 keeps the files' mtimes
    again, _ = holodeck_json("ingest", cwd=elsewhere)
    for summary in again["tools"]:
        assert (summary["unchanged"], summary["new"], summary["chunks_embedded"]) == (2, 0, 0)
