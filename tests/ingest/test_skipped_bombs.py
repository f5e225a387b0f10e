"""A file skipped for a limit is not converted again while it stays as it is, and a zip of
many small parts that together unzip to hundreds of times their size is refused unread
(issue 61, item 1: a 245 KB .xlsx of 90 parts of 0.99 MB was converted whole by every
``search``, 40 s and 585 MB each, to be skipped by ``max_text_chars`` again).

Real files (workbooks made with openpyxl, parts written with zipfile), the real CLI and model.
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from pathlib import Path

import openpyxl
import pytest
from cli_helpers import run_holodeck, write

from holodeck.config.file_limits import FileLimits
from holodeck.config.loader import load_project
from holodeck.ingest.convert import OverLimit, convert
from holodeck.ingest.discover import SourceFile
from holodeck.tools.vectorstore_tool import build_tools

MB = 1 << 20

AGENT = """\
name: bombs-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    file_types: [.md, .xlsx]
"""

GUIDE = "# Guide\n\nThe pumps of the east wing are checked every morning at six.\n"
LIMIT = "    limits:\n      max_text_chars: 3000\n"


def workbook(rows: int, sheets: int = 2) -> bytes:
    """A real workbook of ``sheets`` sheets of ``rows`` rows of words."""
    book = openpyxl.Workbook()
    for n in range(sheets):
        sheet = book.active if n == 0 else book.create_sheet()
        sheet.title = f"Pumps {n + 1}"
        sheet.append(["pump", "note"])
        for r in range(rows):
            sheet.append([f"pump {r}", f"checked on day {r % 28 + 1} by the night shift"])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def many_small_parts(path: Path, parts: int, part_size: int) -> Path:
    """A workbook with ``parts`` extra sheet parts, each just under the 1 MB the ratio of one
    part is checked from, of one repeated cell (a small copy of the issue's bomb)."""
    unit = b'<c t="inlineStr"><is><t>All work</t></is></c>'
    body = unit * (part_size // len(unit))
    source = zipfile.ZipFile(io.BytesIO(workbook(3, sheets=1)))
    with source, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(info, source.read(info))
        for n in range(parts):
            out.writestr(f"xl/worksheets/extra{n}.xml", body)
    return path


def ingest(project: Path, *args: str) -> tuple[dict, str]:
    result = run_holodeck(*args, "ingest", "--json", cwd=project, timeout=300)
    assert result.returncode == 0, result.stderr
    [summary] = json.loads(result.stdout)["tools"]
    return summary, result.stderr


def skipped(summary: dict) -> dict[str, tuple[str, bool]]:
    return {s["path"]: (s["reason"], s["as_before"]) for s in summary["skipped_files"]}


def current(project: Path) -> bool:
    """What a reader (search, chat, test) asks before it ingests."""
    (tool,) = build_tools(load_project(project / "agent.yaml"))
    try:
        return tool.is_current()
    finally:
        tool.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root / "agent.yaml", AGENT + LIMIT)
    write(root / "docs" / "guide.md", GUIDE)
    return root


def test_a_file_past_a_limit_is_not_converted_again_until_it_changes(project: Path) -> None:
    big = project / "docs" / "pumps.xlsx"
    content = workbook(60)  # made once: a workbook's bytes hold the time it was made
    big.write_bytes(content)
    first, err = ingest(project)
    reason, as_before = skipped(first)["pumps.xlsx"]
    assert reason.startswith("its text passes the limit of 3,000 characters at sheet Pumps ")
    assert reason.endswith("raise limits.max_text_chars of tool kb in agent.yaml")
    assert not as_before
    assert f"WARNING: Skipped pumps.xlsx: {reason}" in err
    assert current(project)  # a search now has nothing to ingest: no conversion at all

    # The same size and mtime, but bytes that are no workbook: converting it would fail
    # otherwise ("not a zip file"); it is skipped as before, unread.
    stat = big.stat()
    big.write_bytes(b"\0" * stat.st_size)
    os.utime(big, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    again, err = ingest(project)
    assert skipped(again) == {"pumps.xlsx": (reason, True)}
    assert (again["new"], again["unchanged"], again["failed"]) == (0, 1, 1), again
    assert "WARNING" not in err
    assert (
        "kb: 1 file skipped (see -v); skipped as before, past a limit (not converted again "
        "until changed): pumps.xlsx"
    ) in err

    # Touched (a new mtime, the same bytes): hashed, found the same, still not converted.
    # The same bytes, not a workbook made again: one made in a later second differs (its
    # zip and core properties hold the time) yet often has the same size, so the run below
    # would skip it by size and mtime and the touched one would be converted: a flake.
    big.write_bytes(content)
    os.utime(big, (stat.st_atime, stat.st_mtime))
    restored, _ = ingest(project)  # (the zeros were never seen: these are the remembered bytes)
    assert skipped(restored) == {"pumps.xlsx": (reason, True)}
    os.utime(big, (stat.st_atime, stat.st_mtime + 60))
    touched, _ = ingest(project)
    assert skipped(touched) == {"pumps.xlsx": (reason, True)}
    assert current(project)

    # --force-ingest converts every file again: the same skip, found anew.
    result = run_holodeck("ingest", "--json", "--force-ingest", cwd=project, timeout=300)
    assert result.returncode == 0, result.stderr
    assert skipped(json.loads(result.stdout)["tools"][0]) == {"pumps.xlsx": (reason, False)}

    # A raised limit converts it again (and takes it in).
    write(project / "agent.yaml", AGENT + "    limits:\n      max_text_chars: 300000\n")
    assert not current(project)
    raised, _ = ingest(project)
    assert (raised["new"], raised["failed"]) == (1, 0), raised

    # Changed content is converted again too: lowered back, the new bytes are measured.
    write(project / "agent.yaml", AGENT + LIMIT)
    big.write_bytes(workbook(2))
    changed, _ = ingest(project)
    assert (changed["changed"], changed["failed"]) == (1, 0), changed


def test_many_small_parts_that_together_unzip_far_past_their_size_are_refused(
    project: Path,
) -> None:
    docs = project / "docs"
    bomb = many_small_parts(docs / "bomb.xlsx", parts=4, part_size=MB - 10_000)
    with zipfile.ZipFile(bomb) as z:
        assert all(e.file_size < MB for e in z.infolist())  # each part under the part rule
        assert sum(e.file_size for e in z.infolist()) > 3.9 * MB
    assert bomb.stat().st_size < 40_000

    summary, err = ingest(project)

    with zipfile.ZipFile(bomb) as z:
        parts, total = len(z.infolist()), sum(e.file_size for e in z.infolist())
    reason, _ = skipped(summary)["bomb.xlsx"]
    assert reason.startswith(f"its {parts} parts unzip to {total / MB:.1f} MB, "), reason
    assert " times their zipped size (limit 100: a zip bomb?); to ingest it, raise " in reason
    assert reason.endswith("limits.max_zip_ratio of tool kb in agent.yaml"), reason
    assert f"WARNING: Skipped bomb.xlsx: {reason}" in err
    assert summary["new"] == 1


def test_a_real_workbook_passes_the_ratio_of_all_its_parts(project: Path) -> None:
    """Real sheets of repetitive rows zip well, but nowhere near a bomb's ratio."""
    write(project / "agent.yaml", AGENT)
    (project / "docs" / "log.xlsx").write_bytes(workbook(20_000, sheets=1))
    with zipfile.ZipFile(project / "docs" / "log.xlsx") as z:
        assert sum(e.file_size for e in z.infolist()) > MB  # the rule applies to it
    summary, _ = ingest(project)
    assert (summary["new"], summary["failed"]) == (2, 0), summary


def test_a_workbook_past_the_text_limit_stops_at_its_sheet_and_row(tmp_path: Path) -> None:
    """Sheets and rows are its records: measured before markitdown converts it whole, it is
    refused at the row where its text passes the limit, and one that fits is never refused
    by that measure (it counts no more than the Markdown made of it)."""
    path = tmp_path / "log.xlsx"
    path.write_bytes(workbook(400, sheets=3))
    file = SourceFile(path, path.name, 0.0, 0, root=os.path.realpath(tmp_path))
    whole = len(convert(file).text)
    assert whole > 30_000

    with pytest.raises(OverLimit) as refused:
        convert(file, FileLimits(max_text_chars=whole // 2))
    found = re.fullmatch(
        rf"its text passes the limit of {whole // 2:,} characters at sheet Pumps (\d), row "
        r"(\d+); to ingest it, raise limits.max_text_chars",
        refused.value.reason,
    )
    assert found, refused.value.reason
    assert found.group(1) == "2" and 1 < int(found.group(2)) < 400  # stopped inside sheet 2

    assert len(convert(file, FileLimits(max_text_chars=whole)).text) == whole  # fits exactly
    with pytest.raises(OverLimit):
        convert(file, FileLimits(max_text_chars=whole - 1))
