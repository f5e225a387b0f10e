"""The commands that run until stopped say once, as they start, that Ctrl-C stops them
(issue 60, item 13): ``ingest --watch`` and ``serve --http``. Real processes, real model."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from serve_helpers import HttpServer, make_project, server_env, wait_for


def test_ingest_watch_says_ctrl_c_stops_it_once(tmp_path: Path) -> None:
    project = make_project(tmp_path / "station")
    err = project / "watch.err"
    with err.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "ingest", "--watch"],
            cwd=project,
            env=server_env(project),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
        try:
            wait_for(lambda: "for changes" in err.read_text(), 240)
            proc.send_signal(signal.SIGINT)
            assert proc.wait(240) == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    lines = err.read_text().splitlines()
    assert [x for x in lines if "Ctrl-C" in x] == [
        "Watching docs, faq.md for changes (Ctrl-C stops)"
    ]
    assert lines[-1] == "Stopped watching."


def test_serve_over_http_says_ctrl_c_stops_it_once(tmp_path: Path) -> None:
    project = make_project(tmp_path / "station")
    server = HttpServer(project)
    try:
        wait_for(lambda: "for changes" in server.stderr(), 240, server)
        assert server.stop(signal.SIGINT) == 0
    finally:
        server.kill()
    hints = [x for x in server.stderr().splitlines() if "Ctrl-C" in x]
    assert len(hints) == 1 and hints[0].startswith("Serving station_docs, faq over MCP at http")
    assert hints[0].endswith("/mcp (Ctrl-C stops)")
