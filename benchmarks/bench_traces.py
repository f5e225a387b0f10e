"""What tracing costs a shell search and a re-ingest: off, ``--trace FILE``, and OTLP/HTTP
to a collector stand-in on 127.0.0.1, side by side in one run (issue 45).

A project of ``--files`` small files is ingested once; then, interleaved round by round,
each variant is timed from process start to exit (the real CLI):

- ``holodeck search --no-ingest QUERY`` (a shell search);
- ``holodeck ingest`` after every file's mtime moved (each file is hashed again, and the
  spans of a 1,000-file run, one per file touched, are written: none for an unchanged one).

    python benchmarks/bench_traces.py --files 1000 --rounds 5
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from _common import make_project

QUERY = "which component handles the boundary layer separation"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

OTLP_BLOCK = """
observability:
  enabled: true
  exporters:
    otlp: {{endpoint: "http://127.0.0.1:{port}"}}
"""


class _Collector(BaseHTTPRequestHandler):
    """Accepts every export (reads the body, answers 200): the network cost, no decoding."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def timed(cmd: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=ENV)
    took = time.perf_counter() - started
    if out.returncode:
        raise RuntimeError(f"{cmd[1:3]} failed: {out.stderr[-2000:]}")
    return took


def touch_all(docs: Path) -> None:
    now = time.time()
    for path in docs.rglob("*.md"):
        os.utime(path, (now, now))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="holodeck-traces-"))
    collector = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=collector.serve_forever, daemon=True).start()
    try:
        contents = {
            f"part{i // 100}/note{i}.md": f"# Note {i}\n\nComponent {i} handles the boundary "
            f"layer separation of stage {i % 7}.\n"
            for i in range(args.files)
        }
        off, tool = make_project(contents, root=work / "off")
        tool.initialize_sync()
        tool.close()
        otlp = work / "otlp"
        shutil.copytree(off, otlp)
        agent = (otlp / "agent.yaml").read_text()
        port = collector.server_address[1]
        (otlp / "agent.yaml").write_text(agent + OTLP_BLOCK.format(port=port))
        holodeck = str(Path(sys.executable).parent / "holodeck")
        search = [holodeck, "search", "--no-ingest", QUERY]
        trace = ["--trace", str(work / "t.jsonl")]
        variants: dict[str, tuple[Path, list[str], bool]] = {
            "search, tracing off": (off, search, False),
            "search --trace FILE": (off, [holodeck, *trace, *search[1:]], False),
            "search, OTLP/HTTP": (otlp, search, False),
            "re-ingest, tracing off": (off, [holodeck, "ingest"], True),
            "re-ingest --trace FILE": (off, [holodeck, *trace, "ingest"], True),
            "re-ingest, OTLP/HTTP": (otlp, [holodeck, "ingest"], True),
        }
        for root, cmd, _ in variants.values():  # bytecode caches and the page cache, once
            timed(cmd, root)
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, (root, cmd, touch) in variants.items():
                if touch:
                    touch_all(root / "docs")
                times[name].append(timed(cmd, root))
        print(f"{args.files} files, {args.rounds} rounds, median seconds (process start to exit)")
        for kind in ("search", "re-ingest"):
            base = statistics.median(times[f"{kind}, tracing off"])
            for name, values in times.items():
                if name.startswith(kind + ",") or name.startswith(kind + " "):
                    med = statistics.median(values)
                    print(f"  {name:26} {med:7.3f} s  {100 * (med / base - 1):+6.1f} %")
    finally:
        collector.shutdown()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
