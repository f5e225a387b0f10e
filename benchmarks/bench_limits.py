"""What one file too big to be a document costs an ingest: the time and peak memory to refuse
it, or to convert it, under a tool's default ``limits:`` (issue 41, item 4).

Each file is made here, then converted and chunked by ``prepare`` (the code ``holodeck
ingest`` runs on each file in its worker thread) with the local model's tokenizer at 256
tokens and 50 of overlap, no model, in a process of its own, so its peak RSS is its own (a
process that only imports the same modules is measured too: ``baseline``). The words of
the files are drawn at random from this project's docs/ (as often as each is written there),
so they tokenize as prose does. The files:

- ``bomb.docx``: a real .docx whose ``word/document.xml`` unzips to 300 MB (a small file:
  one paragraph repeated);
- ``big.csv``: 200 MB of records; ``at-cap.csv``: just under ``max_text_file_mb`` (32 MB);
- ``manual.pdf``: 3,000 pages of 30 lines each (fpdf2);
- ``page.html``: one 11 MB page of sections (headings, paragraphs, lists, code) with a
  navigation bar and footer; ``at-cap.html``: the same kind, just under 32 MB.

``--raised`` runs the same files with every limit raised past them, which is what each cost
before there were limits (the conversion is otherwise the same), each stopped after
``--timeout`` seconds (its peak memory read from /proc before it is stopped). Usage:

    python benchmarks/bench_limits.py [--raised] [--timeout 120] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

MB = 1 << 20
HERE = Path(__file__).resolve().parent
REPO = HERE.parent

_RNG = random.Random(41)
#: Every word of this project's own documentation, as often as it is written there: text
#: drawn from them has prose's words at about prose's frequencies, and tokenizes as prose.
_WORDS = [
    word
    for page in sorted((REPO / "docs").glob("*.md"))
    for word in re.findall(r"[a-z]+", page.read_text(encoding="utf-8"))
]


def _words(n: int) -> str:
    return " ".join(_RNG.choice(_WORDS) for _ in range(n))


def make_bomb_docx(path: Path, unzipped: int = 300 * MB) -> None:
    """A python-docx document whose document.xml is one paragraph repeated to ``unzipped``."""
    import docx

    out = io.BytesIO()
    document = docx.Document()
    document.add_paragraph("The last real paragraph.")
    document.save(out)
    source = zipfile.ZipFile(out)
    original = source.read("word/document.xml")
    cut = original.index(b"<w:p>")
    unit = b"<w:p><w:r><w:t>All work and no play makes Jack a dull boy.</w:t></w:r></w:p>"
    block = unit * (MB // len(unit))
    big = zipfile.ZipInfo("word/document.xml")
    big.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for info in source.infolist():
            if info.filename != big.filename:
                zf.writestr(info, source.read(info))
                continue
            with zf.open(big, "w", force_zip64=True) as stream:
                stream.write(original[:cut])
                for _ in range(unzipped // len(block)):
                    stream.write(block)
                stream.write(original[cut:])


def make_csv(path: Path, size: int) -> None:
    """Records of an order log, to ``size`` bytes."""
    with path.open("w", encoding="utf-8") as out:
        out.write("id,customer,city,amount,note\n")
        written, n = 0, 0
        while written < size:
            n += 1
            line = f"{n},customer {n % 9973},city {n % 977},{n * 37 % 100000}.{n % 100:02d},"
            line += f"order {n * 7} shipped by road\n"
            out.write(line)
            written += len(line)


def make_pdf(path: Path, pages: int = 3000) -> None:
    """``pages`` pages of 30 lines of words, as dense as a manual's page."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=10)
    for _ in range(pages):
        pdf.add_page()
        for _ in range(30):
            pdf.cell(0, 6, _words(14), new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def make_html(path: Path, size: int) -> None:
    """One page of ``size`` bytes: navigation, sections of prose, lists and code, a footer."""
    nav = "".join(f'<li><a href="/p{i}.html">Page {i}</a></li>' for i in range(60))
    with path.open("w", encoding="utf-8") as out:
        out.write(f"<html><head><title>Manual</title></head><body><nav><ul>{nav}</ul></nav>")
        out.write("<main>")
        written, n = 0, 0
        while written < size:
            n += 1
            part = f'<section id="s{n}"><h2>{n}. {_words(4).capitalize()}</h2>'
            part += "".join(f"<p>{_words(70).capitalize()}.</p>" for _ in range(3))
            part += "<ul>" + "".join(f"<li>{_words(10)}</li>" for _ in range(4)) + "</ul>"
            part += f"<pre><code>{_words(3).replace(' ', '_')}(x, y)</code></pre></section>"
            out.write(part)
            written += len(part)
        out.write("</main><footer>Copyright the authors</footer></body></html>")


#: name -> (file name, how it is made, what it is)
CASES: dict[str, tuple[str, Callable[[Path], None], str]] = {
    "bomb.docx": ("bomb.docx", make_bomb_docx, "document.xml unzips to 300 MB"),
    "big.csv": ("big.csv", lambda p: make_csv(p, 200 * MB), "200 MB of records"),
    "at-cap.csv": ("at-cap.csv", lambda p: make_csv(p, 32 * MB - 4096), "just under 32 MB"),
    "manual.pdf": ("manual.pdf", make_pdf, "3,000 pages"),
    "page.html": ("page.html", lambda p: make_html(p, 11 * MB), "one 11 MB page"),
    "at-cap.html": ("at-cap.html", lambda p: make_html(p, 32 * MB - 4096), "just under 32 MB"),
}

#: Every limit past every file here: what each cost before there were limits.
RAISED = {
    "max_text_chars": 10**12,
    "max_text_file_mb": 10**6,
    "max_pdf_pages": 10**9,
    "max_unzipped_mb": 10**6,
    "max_zip_ratio": 10**9,
    "max_zip_entries": 10**9,
}


def child(path: str | None, raised: bool) -> None:
    """Prepare one file (or only import, with no path) and print what it cost, as JSON."""
    from holodeck.config.file_limits import FileLimits
    from holodeck.embeddings.hf_tokenizer import HFTokenCounter
    from holodeck.embeddings.local import BUILTIN_TOKENIZER
    from holodeck.ingest import convert  # noqa: F401  (what a worker has imported)
    from holodeck.ingest.discover import SourceFile
    from holodeck.ingest.prefetch import prepare

    counter = HFTokenCounter.from_file(BUILTIN_TOKENIZER)
    limits = FileLimits(**RAISED) if raised else FileLimits()  # type: ignore[arg-type]
    result: dict[str, object] = {}
    if path is not None:
        file = Path(path)
        source = SourceFile(file, file.name, 0.0, file.stat().st_size, root=str(file.parent))
        started, cpu = time.perf_counter(), time.process_time()
        item = prepare(source, counter, 256, 50, limits)
        result = {
            "seconds": time.perf_counter() - started,
            "cpu": time.process_time() - cpu,
            "outcome": item.failure or f"{len(item.chunks):,} chunks",
        }
    result["peak_mb"] = _peak_mb(os.getpid())
    print(json.dumps(result))


def _peak_mb(pid: int) -> float:
    """Peak resident memory of process ``pid`` so far (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def measure(path: Path | None, raised: bool, timeout: float) -> dict[str, object]:
    """One child process: prepare ``path`` and report; stopped after ``timeout`` seconds."""
    argv = [sys.executable, __file__, "--child", str(path) if path else "-"]
    if raised:
        argv.append("--raised")
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
    started = time.perf_counter()
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        peak = _peak_mb(process.pid)
        process.kill()
        process.communicate()
        return {
            "seconds": time.perf_counter() - started,
            "outcome": f"stopped after {timeout:.0f} s, still converting",
            "peak_mb": peak,
            "stopped": True,
        }
    return dict(json.loads(out.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--raised", action="store_true", help="every limit raised past the files")
    parser.add_argument("--timeout", type=float, default=120, help="seconds per file at most")
    parser.add_argument("--only", nargs="*", choices=sorted(CASES), help="these files only")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(None if args.child == "-" else args.child, args.raised)
        return
    names = args.only or list(CASES)
    with tempfile.TemporaryDirectory(prefix="holodeck-limits-") as tmp:
        base = measure(None, args.raised, args.timeout)
        print(f"baseline (imports and tokenizer only): peak {base['peak_mb']:.0f} MB\n")
        print("| file | what | size | outcome | time | peak RSS |")
        print("|---|---|---:|---|---:|---:|")
        for name in names:
            file_name, make, what = CASES[name]
            path = Path(tmp) / file_name
            made = time.perf_counter()
            make(path)
            made = time.perf_counter() - made
            row = measure(path, args.raised, args.timeout)
            seconds = float(row["seconds"])  # type: ignore[arg-type]
            took = f"> {seconds:.0f} s" if row.get("stopped") else f"{seconds:.2f} s"
            print(
                f"| {name} | {what} | {path.stat().st_size / MB:,.1f} MB | {row['outcome']} "
                f"| {took} | {float(row['peak_mb']):,.0f} MB |",  # type: ignore[arg-type]
                flush=True,
            )
            print(f"  (made in {made:.1f} s)", file=sys.stderr, flush=True)
            path.unlink()


if __name__ == "__main__":
    main()
