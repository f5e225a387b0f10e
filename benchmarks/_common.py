"""Shared bits of the benchmarks: a throw-away project, timing, peak memory."""

from __future__ import annotations

import resource
import statistics
import tempfile
import textwrap
import time
from pathlib import Path

from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools


def make_project(
    docs: dict[str, str], top_k: int = 10, extra: str = "", root: Path | None = None
) -> tuple[Path, VectorStoreTool]:
    """A project in a temp folder whose only tool indexes ``docs`` (relative path -> text)."""
    root = root or Path(tempfile.mkdtemp(prefix="holodeck-bench-"))
    for rel, text in docs.items():
        path = root / "docs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "agent.yaml").write_text(
        textwrap.dedent(
            f"""\
            name: bench
            tools:
              - type: vectorstore
                name: kb
                source: docs
                top_k: {top_k}
            """
        )
        + extra
    )
    return root, reload_tool(root)


def reload_tool(root: Path) -> VectorStoreTool:
    """A fresh tool object (as a new CLI run would build) for the project at ``root``."""
    return build_tools(load_project(root / "agent.yaml"))[0]


def percentile(values: list[float], pct: float) -> float:
    """The ``pct`` percentile (0-100) of ``values``."""
    ordered = sorted(values)
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(pct) - 1]


def search_latency_ms(tool: VectorStoreTool, queries: list[str]) -> tuple[float, float]:
    """p50 and p95 of ``tool.find`` (query embedding included), after one warm-up query."""
    tool.find("warm up the model")
    latencies = []
    for query in queries:
        started = time.perf_counter()
        tool.find(query)
        latencies.append((time.perf_counter() - started) * 1000)
    return round(percentile(latencies, 50), 1), round(percentile(latencies, 95), 1)


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
