"""Which extractor keeps an HTML page's content and leaves its navigation out.

For every page of the HTML manuals (benchmarks/realdocs/build_html_corpus.sh: Python's Sphinx
pages, Node.js's API pages), each candidate's markdown is compared with the page's own main
element (Sphinx ``div[role=main]``, Node ``#apicontent``: what a reader reads):

- kept: share of the main element's words the output holds (a bag of words: each word as
  often as the main text has it);
- noise: share of the output's words that are not in the main text (sidebars, menus, footers);
- junk chunks: the output chunked as `holodeck ingest` does (256 tokens), chunks that are a
  table of contents, a link list or a fragment (benchmarks/_junk.py);
- CPU seconds for all pages.

    python benchmarks/bench_html_extract.py CORPUS/html [--limit N]

readability-lxml is not a dependency of holodeck: ``pip install "readability-lxml<0.9"``
(0.9 pins chardet below 6, holodeck needs 7) to run its row.
"""

from __future__ import annotations

import argparse
import io
import re
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lxml.html
from _junk import kind

from holodeck.embeddings.hf_tokenizer import HFTokenCounter
from holodeck.embeddings.local import BUILTIN_TOKENIZER
from holodeck.ingest.chunker import chunk_text

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> Counter[str]:
    return Counter(w.casefold() for w in _WORD.findall(text))


def main_text(html: str) -> str:
    tree = lxml.html.fromstring(html)
    for css in ("div[role=main]", "#apicontent", "main", "body"):
        found = tree.cssselect(css)
        if found:
            node = found[0]
            for bad in node.cssselect("script, style"):
                bad.drop_tree()
            return str(node.text_content())
    return ""


def markitdown_md(html: str) -> str:
    from markitdown import StreamInfo
    from markitdown.converters import HtmlConverter

    info = StreamInfo(extension=".html", charset="utf-8")
    return str(HtmlConverter().convert(io.BytesIO(html.encode()), info).markdown)


def trafilatura_md(html: str) -> str:
    import trafilatura

    return trafilatura.extract(
        html, output_format="markdown", include_tables=True, include_formatting=True,
        include_links=False, include_comments=False, favor_recall=True,
    ) or ""  # fmt: skip


def readability_md(html: str) -> str:
    from readability import Document

    summary = Document(html).summary(html_partial=True)
    return markitdown_md(summary)


def holodeck_md(html: str) -> str:
    from holodeck.ingest.convert import _convert

    return _convert(html.encode(), ".html", "page.html").text


CANDIDATES: dict[str, Callable[[str], str]] = {
    "markitdown (0.1: the whole page)": markitdown_md,
    "trafilatura": trafilatura_md,
    "readability-lxml + markitdown": readability_md,
    "holodeck now": holodeck_md,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("html", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="pages per manual (0: all)")
    parser.add_argument("--only", action="append", help="candidate names (substring)")
    args = parser.parse_args()
    counter = HFTokenCounter.from_file(BUILTIN_TOKENIZER)
    pages = []
    for manual in sorted(p for p in args.html.iterdir() if p.is_dir()):
        found = sorted(manual.rglob("*.html"))
        found = [p for p in found if p.name not in ("all.html", "genindex-all.html")]
        pages += found[: args.limit] if args.limit else found
    chosen = {
        name: fn
        for name, fn in CANDIDATES.items()
        if not args.only or any(o in name for o in args.only)
    }
    print(f"{len(pages)} pages")
    print("| extractor | kept | noise | chunks | toc | links | fragments | CPU s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, fn in chosen.items():
        kept = total = noise = out_total = 0
        kinds: Counter[str] = Counter()
        chunks = 0
        cpu = 0.0
        for page in pages:
            html = page.read_text(encoding="utf-8", errors="replace")
            ref = words(main_text(html))
            started = time.process_time()
            md = fn(html)
            cpu += time.process_time() - started
            got = words(md)
            kept += sum((ref & got).values())
            total += sum(ref.values())
            noise += sum((got - ref).values())
            out_total += sum(got.values())
            for chunk in chunk_text(md, counter, 256, 50) if md.strip() else []:
                chunks += 1
                k = kind(chunk.text)
                if k:
                    kinds[k] += 1
        print(
            f"| {name} | {kept / max(total, 1):.1%} | {noise / max(out_total, 1):.1%} | "
            f"{chunks:,} | {kinds['toc']} | {kinds['links']} | {kinds['fragment']} | {cpu:.0f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
