"""Question-style labelled sets from two FAQs that Debian ships: perlfaq (perl-doc) and the
Python FAQ (python3.11-doc).

Each FAQ entry is a question a person asked in plain words and the answer written for it. The
corpus is the answers (the question left out of its answer: it would give the keyword side
the query's own words), the queries are the questions, and each query's one relevant
document is its answer. The answers of one FAQ talk about the same few subjects ("Perl",
"list", "hash", "Python", "module") over and over, so, as on WikiQA, the keyword side meets
many passages that repeat a question's subject but do not answer it.

    python benchmarks/build_faq_sets.py [OUT_DIR]   # default: benchmarks/results/sets

Writes OUT_DIR/faq_perl and OUT_DIR/faq_python in the layout of ``shared/eval`` (BEIR:
corpus.jsonl, queries.jsonl, qrels/test.tsv). Needs ``apt-get download`` (Debian's
packages; `apt-get update` once).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGES = {"faq_perl": "perl-doc", "faq_python": "python3.11-doc"}


def fetch(package: str, into: Path) -> Path:
    """The package's files, unpacked under ``into``."""
    subprocess.run(["apt-get", "download", package], cwd=into, check=True, capture_output=True)
    deb = next(into.glob(f"{package}_*.deb"))
    root = into / package
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


_POD_CODES = re.compile(r"[A-Z]<<+\s(.*?)\s>>+|[A-Z]<([^<>]*)>")
_POD_ESCAPES = {"lt": "<", "gt": ">", "verbar": "|", "sol": "/"}


def _pod_text(text: str) -> str:
    """POD formatting codes made plain text (``C<int()>`` -> ``int()``)."""
    for _ in range(4):  # nested codes, innermost first
        text = _POD_CODES.sub(lambda m: _pod_code(m.group(0), m.group(1) or m.group(2)), text)
    return text


def _pod_code(whole: str, inner: str) -> str:
    if whole.startswith("E<"):
        return _POD_ESCAPES.get(inner, inner)
    if whole.startswith("L<"):
        inner = inner.split("|", 1)[0]
        return inner.strip('"').replace('/"', " ").replace('"', "")
    return inner


def perl_entries(root: Path) -> list[tuple[str, str]]:
    """(question, answer) of every ``=head2`` of perlfaq1-9."""
    entries = []
    for pod in sorted(root.glob("usr/share/perl/*/pod/perlfaq[1-9].pod")):
        question, lines = None, []
        for line in [*pod.read_text(encoding="utf-8").splitlines(), "=head1 END"]:
            if line.startswith(("=head1", "=head2")):
                if question is not None:
                    entries.append((question, _pod_text("\n".join(lines)).strip()))
                question = _pod_text(line[6:].strip()) if line.startswith("=head2") else None
                lines = []
            elif not line.startswith(("=over", "=back", "=item", "=cut", "=pod", "=begin", "=end")):
                lines.append(line)
            elif line.startswith("=item"):
                lines.append(line[5:].strip())
    return entries


_RST_ROLE = re.compile(r":[\w:.-]+:`~?!?([^`<]*?)(?:\s*<[^`>]*>)?`")
_RST_LINK = re.compile(r"`([^`<]+?)\s*<[^`>]*>`__?")
_RST_LITERAL = re.compile(r"``([^`]+)``")


def _rst_text(text: str) -> str:
    text = _RST_ROLE.sub(r"\1", text)
    text = _RST_LINK.sub(r"\1", text)
    return _RST_LITERAL.sub(r"\1", text)


def python_entries(root: Path) -> list[tuple[str, str]]:
    """(question, answer) of every ``---``-underlined heading of the Python FAQ pages (the
    ``===`` headings group questions; their text is no answer)."""
    entries = []
    pages = {p.resolve() for p in root.glob("usr/share/doc/python3*/html/_sources/faq/*.rst.txt")}
    for page in sorted(pages):  # (one folder is a link to the other)
        lines = page.read_text(encoding="utf-8").splitlines()
        question, body = None, []
        for i, line in enumerate([*lines, "", "END", "==="]):
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            heading = line.strip() and re.fullmatch(r"([-=~^*])\1{2,}", nxt.strip() or "x")
            if heading or line == "END":
                if question is not None:
                    entries.append((question, _rst_text("\n".join(body)).strip()))
                level = nxt.strip()[:1] if heading else "="
                question = _rst_text(line.strip()) if level in "-~" else None
                body = []
            elif re.fullmatch(r"([-=~^*])\1{2,}", line.strip()) or line.startswith(".. "):
                continue
            else:
                body.append(line)
    return [(q, a) for q, a in entries if q.endswith("?")]


def write_set(out: Path, entries: list[tuple[str, str]]) -> None:
    """BEIR layout: answer ``a<i>`` is relevant (grade 1) to question ``q<i>``."""
    kept = [(q, a) for q, a in entries if len(a.split()) >= 3]
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    with (out / "corpus.jsonl").open("w") as corpus, (out / "queries.jsonl").open("w") as queries:
        for i, (question, answer) in enumerate(kept):
            corpus.write(json.dumps({"_id": f"a{i}", "title": "", "text": answer}) + "\n")
            queries.write(json.dumps({"_id": f"q{i}", "text": question}) + "\n")
    qrels = ["query-id\tcorpus-id\tscore", *(f"q{i}\ta{i}\t1" for i in range(len(kept)))]
    (out / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    print(f"{out.name}: {len(kept)} questions and answers", file=sys.stderr)


def paragraphs(answer: str, min_words: int = 8) -> list[str]:
    """The answer's blank-line separated blocks, a block under ``min_words`` words joined to
    the next ("Yes." and "For example, this" say nothing alone)."""
    blocks, pending = [], ""
    for block in re.split(r"\n\s*\n", answer):
        block = (pending + "\n\n" + block).strip() if pending else block.strip()
        if len(block.split()) < min_words:
            pending = block
            continue
        blocks.append(block)
        pending = ""
    if pending:
        if blocks:
            blocks[-1] += "\n\n" + pending
        else:
            blocks.append(pending)
    return blocks


def write_paragraph_set(out: Path, entries: list[tuple[str, str]]) -> None:
    """Every answer's paragraphs as documents of their own (``a<i>p<j>``): the first one, which
    answers, is relevant with grade 2 to question ``q<i>``, the rest of the answer grade 1."""
    kept = [(q, a) for q, a in entries if len(a.split()) >= 3]
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    qrels = ["query-id\tcorpus-id\tscore"]
    count = 0
    with (out / "corpus.jsonl").open("w") as corpus, (out / "queries.jsonl").open("w") as queries:
        for i, (question, answer) in enumerate(kept):
            queries.write(json.dumps({"_id": f"q{i}", "text": question}) + "\n")
            for j, para in enumerate(paragraphs(answer)):
                corpus.write(json.dumps({"_id": f"a{i}p{j}", "title": "", "text": para}) + "\n")
                qrels.append(f"q{i}\ta{i}p{j}\t{2 if j == 0 else 1}")
                count += 1
    (out / "qrels" / "test.tsv").write_text("\n".join(qrels) + "\n")
    print(f"{out.name}: {len(kept)} questions, {count} paragraphs", file=sys.stderr)


def main() -> None:
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "results" / "sets"
    with tempfile.TemporaryDirectory(prefix="holodeck-faq-") as tmp:
        for name, package in PACKAGES.items():
            root = fetch(package, Path(tmp))
            entries = perl_entries(root) if name == "faq_perl" else python_entries(root)
            write_set(out / name, entries)
            write_paragraph_set(out / (name + "_paragraphs"), entries)


if __name__ == "__main__":
    main()
