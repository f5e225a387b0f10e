"""``holodeck test`` over files whose names are not text or not safe to print: the cases name
them escaped (as ``holodeck search`` shows them), and the terminal, the JSON report, the
JUnit XML and the Markdown report all show those escaped names, never a raw escape byte.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from cli_helpers import run_holodeck, write
from odd_names import ESC, write_odd_docs

AGENT = r"""
name: odd-reports
tools:
  - type: vectorstore
    name: kb
    source: docs
    top_k: 3
test_cases:
  - name: latin-1
    input: espresso machine pressure
    expected_sources: ['docs/caf\xe9.md']
  - name: real-backslash
    input: kettle for green tea
    expected_sources: ['caf\\xe9.md']
  - name: escape-sequence
    input: lychee sorbet
    expected_sources: ['docs/\x1b[31mred\x1b[0m.md']
  - name: missing
    input: lychee sorbet
    expected_sources: [nothing.md]
"""


def test_reports_name_odd_files_escaped(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    write_odd_docs(tmp_path / "docs")
    result = run_holodeck("test", "--report", "out/r.json", "--junit", "out/r.xml", cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr  # "missing" fails
    for name in ("latin-1", "real-backslash", "escape-sequence"):
        assert re.search(rf"^PASS\s+{name}\s", result.stdout, re.M), result.stdout
    assert re.search(r"^FAIL\s+missing\s", result.stdout, re.M), result.stdout
    assert ESC not in result.stdout + result.stderr

    report = json.loads((tmp_path / "out" / "r.json").read_text(encoding="utf-8"))
    ranks = {c["name"]: c["source_ranks"] for c in report["cases"]}
    assert ranks["latin-1"] == {"docs/caf\\xe9.md": 1}
    assert ranks["real-backslash"] == {"caf\\\\xe9.md": 1}
    assert ranks["escape-sequence"] == {"docs/\\x1b[31mred\\x1b[0m.md": 1}
    [call] = report["cases"][3]["tool_calls"]
    assert call["results"][0]["source_path"] == "docs/\\x1b[31mred\\x1b[0m.md"

    xml_text = (tmp_path / "out" / "r.xml").read_text(encoding="utf-8")
    assert ESC not in xml_text
    suite = ET.fromstring(xml_text).find("testsuite")
    assert suite is not None
    [failed] = [c for c in suite.iter("testcase") if c.get("name") == "missing"]
    body = "".join(failed.itertext())
    assert "docs/\\x1b[31mred\\x1b[0m.md" in body, body

    markdown = run_holodeck("test", "--report", "out/r.md", cwd=tmp_path)
    assert markdown.returncode == 1, markdown.stdout + markdown.stderr
    text = (tmp_path / "out" / "r.md").read_text(encoding="utf-8")
    assert ESC not in text
    # In a table cell a backslash is doubled, so the rendered Markdown shows the name itself.
    assert "| docs/\\\\x1b[31mred\\\\x1b[0m.md |" in text, text
    assert "| docs/caf\\\\\\\\xe9.md |" in text, text
