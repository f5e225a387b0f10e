"""Conversion: what text a search sees for each file type, and the reason a file is refused."""

from __future__ import annotations

import codecs
import os
import random
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from holodeck.ingest.convert import ConversionError, Converted, convert
from holodeck.ingest.discover import SourceFile, discover

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_DOCS = REPO / "examples" / "docs"
EXAMPLE_PDF = EXAMPLE_DOCS / "operations" / "backup-and-restore.pdf"
EXAMPLE_PNG = EXAMPLE_DOCS / "api" / "architecture.png"

LATIN1_TEXT = (
    "Le café de la gare ouvre à 7 h. Les crêpes sont très appréciées par les élèves; "
    "le maître d'hôtel est très poli. Prix: 5 € la crêpe, 3,50 € le thé."
)


def _convert(path: Path) -> Converted:
    """Convert a file of a source folder (its parent) as the pipeline does."""
    return convert(SourceFile(path, path.name, 0.0, 0, root=os.path.realpath(path.parent)))


def _text(path: Path) -> str:
    return _convert(path).text


def _reason(path: Path) -> str:
    with pytest.raises(ConversionError) as info:
        _convert(path)
    return info.value.reason


def test_utf8_markdown_comes_out_unchanged(tmp_path: Path) -> None:
    text = "# Überblick\n\nZeitpläne für Jobs — mit Emoji 🚀.\n"
    (tmp_path / "doc.md").write_text(text, encoding="utf-8")

    assert _text(tmp_path / "doc.md") == text


def test_utf8_bom_is_stripped(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_bytes(codecs.BOM_UTF8 + "Title: café\n".encode())

    assert _text(tmp_path / "notes.txt") == "Title: café\n"


def test_latin1_text_is_decoded_right(tmp_path: Path) -> None:
    (tmp_path / "menu.txt").write_bytes(LATIN1_TEXT.replace("€", "EUR").encode("latin-1"))

    text = _text(tmp_path / "menu.txt")

    assert "café" in text and "crêpes" in text and "maître d'hôtel" in text


def test_windows_1252_smart_quotes_and_euro_sign_survive(tmp_path: Path) -> None:
    (tmp_path / "prices.txt").write_bytes(LATIN1_TEXT.encode("cp1252"))

    assert _text(tmp_path / "prices.txt") == LATIN1_TEXT


def test_utf16_with_bom_is_read(tmp_path: Path) -> None:
    (tmp_path / "export.txt").write_bytes("Grüße aus München\n".encode("utf-16"))

    assert _text(tmp_path / "export.txt") == "Grüße aus München\n"


def test_binary_data_named_txt_is_refused(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE_PNG, tmp_path / "image.txt")
    rng = random.Random(7)
    (tmp_path / "noise.md").write_bytes(bytes(rng.randint(1, 255) for _ in range(4000)))

    assert _reason(tmp_path / "image.txt") == "undecodable text"
    assert _reason(tmp_path / "noise.md") == "undecodable text"


@pytest.mark.parametrize("content", [b"", b"   \n\t\n", "\u00a0\n".encode()])
def test_whitespace_only_file_is_empty(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "blank.md").write_bytes(content)

    assert _reason(tmp_path / "blank.md") == "empty file"


def test_json_is_pretty_printed_in_a_fenced_block(tmp_path: Path) -> None:
    (tmp_path / "errors.json").write_text(
        '{"SKY-1":{"message":"Zeitüberschreitung","retry":true}}', encoding="utf-8"
    )

    text = _text(tmp_path / "errors.json")

    assert text == (
        "```json\n"
        "{\n"
        '  "SKY-1": {\n'
        '    "message": "Zeitüberschreitung",\n'
        '    "retry": true\n'
        "  }\n"
        "}\n"
        "```\n"
    )


def test_invalid_json_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "broken.json").write_text('{\n  "a": 1,\n  "b": \n}\n')

    assert _reason(tmp_path / "broken.json") == "conversion failed: invalid JSON at line 4"


def test_whitespace_json_is_empty(tmp_path: Path) -> None:
    (tmp_path / "nothing.json").write_text("\n\n")

    assert _reason(tmp_path / "nothing.json") == "empty file"


def test_utf8_csv_becomes_a_markdown_table(tmp_path: Path) -> None:
    (tmp_path / "cities.csv").write_text("name,city\nJosé,Zürich\nAnna,Kraków\n", encoding="utf-8")

    text = _text(tmp_path / "cities.csv")

    assert text.splitlines() == [
        "| name | city |",
        "| --- | --- |",
        "| José | Zürich |",
        "| Anna | Kraków |",
    ]


def test_latin1_csv_is_decoded_like_text(tmp_path: Path) -> None:
    rows = "client,remarque\nCafé Noël,très apprécié des élèves\nHôtel Ève,déjà réservé à midi\n"
    (tmp_path / "clients.csv").write_bytes(rows.encode("latin-1"))

    text = _text(tmp_path / "clients.csv")

    assert "| Café Noël | très apprécié des élèves |" in text
    assert "| Hôtel Ève | déjà réservé à midi |" in text


def test_pdf_text_is_extracted(tmp_path: Path) -> None:
    shutil.copy(EXAMPLE_PDF, tmp_path / "guide.pdf")

    text = _text(tmp_path / "guide.pdf")

    assert "Backup and Restore" in text
    assert "Automatic snapshots are kept for 14 days" in " ".join(text.split())


def test_corrupt_pdf_is_refused_not_ingested_as_raw_bytes(tmp_path: Path) -> None:
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not really a pdf\n")

    assert _reason(tmp_path / "broken.pdf").startswith("conversion failed: ")


def test_pdf_without_text_layer_says_so(tmp_path: Path) -> None:
    (tmp_path / "scan.pdf").write_bytes(
        b"%PDF-1.4\n"
        b"1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
        b"2 0 obj << /Type /Pages /Kids [3 0 R] /Count 1 >> endobj\n"
        b"3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >> endobj\n"
        b"trailer << /Root 1 0 R >>\n%%EOF\n"
    )

    assert _reason(tmp_path / "scan.pdf").startswith("conversion failed: no text layer")


def test_vanished_file_is_a_conversion_error(tmp_path: Path) -> None:
    assert _reason(tmp_path / "gone.md").startswith("conversion failed: ")


def test_importing_convert_does_not_load_the_heavy_converters() -> None:
    code = (
        "import sys, holodeck.ingest.convert, holodeck.ingest.discover\n"
        "heavy = ('markitdown', 'pypdfium2', 'pandas', 'trafilatura')\n"
        "print([m for m in heavy if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "[]"


def test_every_example_doc_converts_to_text() -> None:
    for f in discover(EXAMPLE_DOCS).files:
        assert len(convert(f).text.split()) > 40, f.rel_path


def test_example_questions_point_at_existing_docs_of_every_type() -> None:
    entries = yaml.safe_load((REPO / "tests" / "ingest" / "example_questions.yaml").read_text())

    assert 10 <= len(entries) <= 12
    sources = [e["expected_source"] for e in entries]
    assert all((REPO / s).is_file() for s in sources)
    assert {Path(s).suffix for s in sources} == {".md", ".txt", ".pdf", ".csv", ".json"}
    assert len({e["question"] for e in entries}) == len(entries)
