"""A test case's ``files:`` (the original HoloDeck's): each file's text after the input,
converted as ingestion converts it; a PDF's ``pages``, a workbook's ``sheet`` and ``range``.

Real files (a PDF made with fpdf2, a workbook with openpyxl), the real ``holodeck test``,
the fake server as the model: what the model was sent is read from its requests.
"""

from __future__ import annotations

import json
from pathlib import Path

import openpyxl
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, text
from fpdf import FPDF

PAGES = {
    1: "The harbour opens at dawn. Fishing boats leave before the tide turns each day.",
    2: "The lighthouse keeper logs every ship. Her ledger lists forty vessels in March.",
    3: "Winter storms close the harbour. The ferries stop running until the spring thaw.",
}

AGENT = """
name: reader
model:
  provider: openai
  name: fake-model
  endpoint: {url}
  api_key: ${{OPENAI_API_KEY}}
instructions: Answer from the files.
test_cases:
{cases}
"""

CASES = """
  - name: one page
    input: What does the keeper log?
    files:
      - {path: docs/harbour.pdf, type: pdf, pages: [2], description: the harbour guide}
  - name: cells
    input: What did Q2 cost?
    files:
      - {path: docs/budget.xlsx, type: excel, sheet: Q2, range: "A1:B2"}
  - name: a sheet and a note
    input: Summarise.
    files:
      - {path: docs/budget.xlsx, type: excel, sheet: Q1}
      - {path: notes.md, type: text}
"""


def make_files(root: Path) -> None:
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for number in sorted(PAGES):
        pdf.add_page()
        pdf.multi_cell(0, 8, PAGES[number])
    (root / "docs").mkdir(parents=True)
    pdf.output(str(root / "docs" / "harbour.pdf"))
    book = openpyxl.Workbook()
    q1 = book.active
    q1.title = "Q1"
    q1.append(["item", "cost"])
    q1.append(["rope", 120])
    q2 = book.create_sheet("Q2")
    q2.append(["item", "cost"])
    q2.append(["paint", 340])
    q2.append(["nets", 990])
    book.save(root / "docs" / "budget.xlsx")
    write(root / "notes.md", "# Notes\n\nThe paint order is late.\n")
    write(root / ".env", "OPENAI_API_KEY=sk-test-files\n")


def test_files_are_sent_to_the_model_after_the_input(tmp_path: Path) -> None:
    make_files(tmp_path)
    with FakeOpenAI() as llm:
        write(tmp_path / "agent.yaml", AGENT.format(url=llm.url, cases=CASES))
        llm.chat.push(text("Ships."), text("340."), text("Rope and paint."))
        done = run_holodeck("test", "--report", "report.json", cwd=tmp_path)
        sent = [r["messages"][-1]["content"] for r in llm.chat_requests()]
    assert done.returncode == 0, done.stderr
    page, cells, both = sent
    assert page.startswith(
        "What does the keeper log?\n\n--- file docs/harbour.pdf, pages 2 (the harbour guide) ---\n"
    )
    assert page.endswith("--- end of file ---")
    assert "forty vessels in March" in page
    assert "Fishing boats" not in page and "Winter storms" not in page
    assert cells == (
        "What did Q2 cost?\n\n--- file docs/budget.xlsx, sheet Q2, cells A1:B2 ---\n"
        "| item | cost |\n| --- | --- |\n| paint | 340 |\n--- end of file ---"
    )
    assert "rope" in both and "120" in both and "paint" not in both.split("notes.md")[0]
    assert "--- file notes.md ---\n# Notes\n\nThe paint order is late.\n--- end" in both
    report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
    assert [c["input"] for c in report["cases"]] == [
        "What does the keeper log?",
        "What did Q2 cost?",
        "Summarise.",
    ]  # the reports keep the input as written


def test_a_url_an_image_and_a_missing_page_are_refused_with_their_lines(tmp_path: Path) -> None:
    make_files(tmp_path)
    refused = {
        "    files:\n      - {url: 'https://example.com/a.pdf', type: pdf}\n": (
            "agent.yaml:12: test_cases[0].files[0]: remote files are not fetched; download it "
            "next to agent.yaml and give its path: instead of url:"
        ),
        "    files:\n      - {path: docs/photo.png, type: image}\n": (
            "agent.yaml:12: test_cases[0].files[0].type: images are not read"
        ),
        "    files:\n      - {path: docs/harbour.pdf, type: pdf, pages: [9]}\n": (
            "agent.yaml:12: test_cases[0].files[0]: docs/harbour.pdf: no page 9 with text "
            "(pages with text: 1, 2, 3)"
        ),
        "    files:\n      - {path: docs/budget.xlsx, type: excel, sheet: Q9, range: A1}\n": (
            "agent.yaml:12: test_cases[0].files[0]: docs/budget.xlsx: no sheet 'Q9' "
            "(sheets: Q1, Q2)"
        ),
    }
    for files, expected in refused.items():
        cases = "  - name: x\n    input: Read it.\n" + files
        write(tmp_path / "agent.yaml", AGENT.format(url="http://127.0.0.1:9/v1", cases=cases))
        done = run_holodeck("test", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"Error: {expected}"), done.stderr
