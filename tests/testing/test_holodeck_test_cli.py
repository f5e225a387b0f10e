"""``holodeck test`` as CI runs it: exit codes, the live lines, JUnit XML and the reports.

Real documents (copied from examples/docs), the real local model, the real CLI in a
subprocess. One project is shared by the module so ingestion happens once; the pass and
fail agent files share its index (same agent name, same tools).
"""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

from holodeck.testing import metrics, report_markdown

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "examples" / "docs"

AGENT = """
name: ci-agent
tools:
  - type: vectorstore
    name: guides
    source: docs/guides/
    top_k: 3
  - type: vectorstore
    name: ops
    source: docs/ops/
    top_k: 3
ground_truth_threshold: 0.7   # the similarity check (issue 60 item 5: opt-in)
test_cases:
  - name: default-retries
    input: What is the default number of attempts for a job that keeps failing?
    ground_truth: Without a retry block a job gets 3 attempts in total.
    expected_tools: [guides]
    expected_sources: [docs/guides/retries.md]
    expected_content: ["3 attempts in total"]
  - name: database-for-3-2
    input: Which database version do I need before moving to release 3.2?
    expected_tools: [ops]
    expected_sources: [upgrade-notes.txt]
  - name: job-vs-run
    input: What is the difference between a job and a run in Skyline?
    expected_sources: [docs/ops/README.txt]
"""

FAILING = """
  - name: wrong-tool
    input: What is the default number of attempts for a job that keeps failing?
    expected_tools: [ops]
    expected_sources: [docs/guides/retries.md]
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("ci")
    for rel, dest in [
        ("guides/retries.md", "guides/retries.md"),
        ("guides/scheduling.md", "guides/scheduling.md"),
        ("operations/upgrade-notes.txt", "ops/upgrade-notes.txt"),
        ("README.txt", "ops/README.txt"),
    ]:
        (root / "docs" / dest).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(DOCS / rel, root / "docs" / dest)
    write(root / "pass.yaml", AGENT)
    write(root / "fail.yaml", AGENT + FAILING)
    return root


def test_all_cases_pass_exit_0_with_junit_and_json(project: Path) -> None:
    result = run_holodeck(
        "test", "pass.yaml", "--junit", "out/pass.xml", "--report", "out/pass.json", cwd=project
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for name in ("default-retries", "database-for-3-2", "job-vs-run"):
        assert re.search(rf"^PASS\s+{name}\s", result.stdout, re.M), result.stdout
    assert "3 cases: 3 passed, 0 failed, 0 errors (pass rate 100.0%)" in result.stdout
    assert "hit rate@3 1.00, MRR" in result.stdout

    suite = ET.parse(project / "out" / "pass.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "0", "0")
    assert [c.get("name") for c in suite.iter("testcase")] == [
        "default-retries",
        "database-for-3-2",
        "job-vs-run",
    ]
    assert not list(suite.iter("failure"))

    report = json.loads((project / "out" / "pass.json").read_text())
    assert report["summary"]["exit_code"] == 0
    first = report["cases"][0]
    assert first["status"] == "passed"
    assert first["source_ranks"] == {"docs/guides/retries.md": 1}
    assert first["ground_truth_score"] >= 0.7
    [call] = first["tool_calls"]  # retrieval-only: expected_tools picks the tool searched
    assert call["tool"] == "guides"
    assert call["query"] == first["input"]
    ranks = [r["rank"] for r in call["results"]]  # top_k 3: adjacent chunks are one passage
    assert ranks == list(range(1, len(ranks) + 1)) and 2 <= len(ranks) <= 3
    scores = [r["score"] for r in call["results"]]
    assert scores == sorted(scores, reverse=True) and all(0 < s <= 1 for s in scores)
    assert call["results"][0]["source_path"] == "docs/guides/retries.md"
    assert call["results"][0]["doc_id"] == "retries.md"
    # Where in the file each result is: line numbers of the markdown file.
    assert all(re.fullmatch(r"lines? \d+(-\d+)?", r["location"]) for r in call["results"])
    # No expected_tools: every tool is searched.
    assert {c["tool"] for c in report["cases"][2]["tool_calls"]} == {"guides", "ops"}
    assert {c["check"] for c in first["checks"]} == {
        "expected_tools",
        "expected_sources",
        "expected_content",
        "ground_truth",
    }


def test_a_failing_case_exit_1_reason_everywhere(project: Path) -> None:
    result = run_holodeck(
        "test",
        "fail.yaml",
        "--junit",
        "out/fail.xml",
        "--report",
        "out/fail.data",
        "--format",
        "json",
        cwd=project,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    reason = "expected_sources: not retrieved: docs/guides/retries.md; retrieved: docs/ops/"
    line = next(ln for ln in result.stdout.splitlines() if ln.startswith("FAIL"))
    assert "wrong-tool" in line and reason in line
    assert "4 cases: 3 passed, 1 failed, 0 errors (pass rate 75.0%)" in result.stdout

    suite = ET.parse(project / "out" / "fail.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "1", "0")
    [failure] = list(suite.iter("failure"))
    assert reason in (failure.get("message") or "")
    assert failure.get("type") == "expected_sources"

    report = json.loads((project / "out" / "fail.data").read_text())
    assert report["summary"]["exit_code"] == 1
    assert report["cases"][3]["status"] == "failed"
    assert reason in report["cases"][3]["reason"]
    # The Markdown report is rendered from the same data as the JSON one.
    markdown = report_markdown.markdown(report)
    assert "**3 of 4 passed** (75.0%), 1 failed, 0 errors" in markdown
    assert "## 4. wrong-tool: FAIL" in markdown
    assert reason in markdown
    assert "| rank | score | source | location |" in markdown
    first = report["cases"][0]["tool_calls"][0]["results"][0]
    assert f"| docs/guides/retries.md | {first['location']} |" in markdown

    # Suite metrics, by hand from the ranks in the report: three cases found their source,
    # one (retries.md is not in the ops tool) did not.
    ranks = [list(c["source_ranks"].values()) for c in report["cases"]]
    assert ranks[3] == [None]
    assert all(r[0] is not None for r in ranks[:3])
    summary = report["summary"]
    assert summary["cases_with_sources"] == 4
    assert summary["hit_rate"] == pytest.approx(0.75)
    assert summary["mrr"] == pytest.approx(sum(1 / r[0] for r in ranks[:3]) / 4, abs=1e-4)
    assert summary["recall"] == pytest.approx(0.75)
    latencies = [c["latency_seconds"] for c in report["cases"]]
    assert summary["latency_p50"] == pytest.approx(metrics.percentile(latencies, 50), abs=1e-3)


def test_select_limit_parallel_quiet(project: Path) -> None:
    result = run_holodeck(
        "-q",
        "test",
        "fail.yaml",
        *("-k", "retr", "-k", "job-*", "-k", "wrong"),
        *("--limit", "2", "--parallel", "2"),
        cwd=project,
    )
    assert result.returncode == 0, result.stdout + result.stderr  # wrong-tool is the third
    assert result.stdout.startswith("2 cases: 2 passed, 0 failed, 0 errors")
    assert "PASS" not in result.stdout  # -q: only failures and the summary


def test_force_ingest_reaches_every_tool(project: Path) -> None:
    # Stored first (whichever test ran before): the forced pass re-embeds unchanged files.
    assert run_holodeck("ingest", "pass.yaml", cwd=project).returncode == 0
    result = run_holodeck("test", "pass.yaml", "--force-ingest", "-k", "job-vs-run", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    for tool in ("guides", "ops"):
        summary = re.search(
            rf"^{tool}: 0 new, (\d+) changed.*?(\d+) chunks embedded", result.stderr, re.M
        )
        assert summary, result.stderr
        assert int(summary.group(1)) == 2 and int(summary.group(2)) > 0


def test_configuration_errors_exit_2_before_any_work(project: Path) -> None:
    broken = write(
        project / "broken.yaml",
        AGENT
        + """
  - name: no-such-tool
    input: hello
    expected_tools: [faq]
""",
    )
    line = 1 + broken.read_text().splitlines().index("    expected_tools: [faq]")
    result = run_holodeck("test", "broken.yaml", "--junit", "out/broken.xml", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"Error: broken.yaml:{line}: test_cases[3].expected_tools[0]: case 'no-such-tool': "
        "no tool named 'faq' (tools: guides, ops)"
    )
    assert "Traceback" not in result.stderr
    assert not (project / "out" / "broken.xml").exists()

    result = run_holodeck("test", "pass.yaml", "--report", "out/r.txt", cwd=project)
    assert result.returncode == 2
    assert "cannot tell the format from the extension" in result.stderr


def test_the_example_passes_offline(tmp_path: Path) -> None:
    shutil.copytree(DOCS, tmp_path / "examples" / "docs")
    shutil.copy(REPO / "agent.yaml.example", tmp_path / "agent.yaml")
    result = run_holodeck("test", "--junit", "junit.xml", "--parallel", "2", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert int(suite.get("tests") or 0) >= 4
    assert (suite.get("failures"), suite.get("errors")) == ("0", "0")
