"""Files on a web server as a knowledge base's source (issue 64, https part).

A real HTTP server (the standard library's ``http.server``, which answers If-Modified-Since
with 304) serving a folder; the real CLI and model. What the server sent is counted, so
an unchanged file is seen not to be fetched twice.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write


class Served:
    """A folder served over HTTP on 127.0.0.1, each answer's (path, status) recorded."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.answers: list[tuple[str, int]] = []
        served = self

        class Handler(SimpleHTTPRequestHandler):
            def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
                served.answers.append((self.path, int(code)))

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=folder))
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self) -> list[tuple[str, int]]:
        answers, self.answers = sorted(self.answers), []
        return answers


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    folder = tmp_path / "site"
    for topic in ("alpha", "bravo", "charlie"):
        write(folder / f"{topic}.md", f"# {topic}\n\nThe {topic} pump is checked monthly.\n")
    s = Served(folder)
    yield s
    s.server.shutdown()
    s.server.server_close()


def agent(urls: list[str]) -> str:
    listed = "".join(f"\n        - {u}" for u in urls)
    return f"""
name: web-test
tools:
  - type: vectorstore
    name: kb
    source:
      urls:{listed}
"""


def ingest(project: Path) -> dict:
    result = run_holodeck("ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["tools"][0]


def test_unchanged_files_are_not_fetched_twice(tmp_path: Path, served: Served) -> None:
    project = tmp_path / "proj"
    urls = [f"{served.url}/{t}.md" for t in ("alpha", "bravo", "charlie")]
    write(project / "agent.yaml", agent(urls))
    assert ingest(project)["new"] == 3
    assert served.take() == [("/alpha.md", 200), ("/bravo.md", 200), ("/charlie.md", 200)]

    again = ingest(project)
    assert (again["unchanged"], again["chunks_embedded"]) == (3, 0)
    assert served.take() == [("/alpha.md", 304), ("/bravo.md", 304), ("/charlie.md", 304)]

    bravo = served.folder / "bravo.md"
    write(bravo, "# bravo\n\nThe bravo pump was replaced by a turbine.\n")
    later = bravo.stat().st_mtime + 10  # Last-Modified has whole seconds
    os.utime(bravo, (later, later))
    third = ingest(project)
    assert (third["changed"], third["unchanged"]) == (1, 2)
    assert served.take() == [("/alpha.md", 304), ("/bravo.md", 200), ("/charlie.md", 304)]

    result = run_holodeck("search", "--json", "bravo turbine", cwd=project)
    best = json.loads(result.stdout)["tools"][0]["results"][0]
    assert best["url"] == f"{served.url}/bravo.md"


def test_an_unlisted_url_loses_its_chunks_and_a_failing_one_keeps_its_copy(
    tmp_path: Path, served: Served
) -> None:
    project = tmp_path / "proj"
    urls = [f"{served.url}/{t}.md" for t in ("alpha", "bravo", "charlie")]
    write(project / "agent.yaml", agent(urls))
    ingest(project)
    write(project / "agent.yaml", agent(urls[:2]))
    (served.folder / "bravo.md").unlink()  # now a 404
    result = run_holodeck("ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["tools"][0]
    assert (summary["removed"], summary["unchanged"]) == (1, 2)
    warned = [line for line in result.stderr.splitlines() if "cannot fetch" in line]
    assert len(warned) == 1 and "bravo.md" in warned[0] and "keeping the copy" in warned[0]


def test_a_url_that_is_not_http_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", agent(["ftp://example.com/a.md"]))
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 2
    assert "agent.yaml:5: tools[0].source: urls: ftp://example.com/a.md: not an http" in (
        result.stderr
    )


def test_a_credential_in_a_url_is_never_printed_or_stored(tmp_path: Path, served: Served) -> None:
    token = "webT0KEN8812"
    project = tmp_path / "proj"
    url = served.url.replace("http://", f"http://reader:{token}@") + "/alpha.md"
    write(project / "agent.yaml", agent([url, f"http://reader:{token}@127.0.0.1:9/gone.md"]))
    result = run_holodeck("ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    found = run_holodeck("search", "--json", "alpha pump", cwd=project)
    assert json.loads(found.stdout)["tools"][0]["results"][0]["url"].startswith(
        "http://reader:***@"
    )
    for out in (result, found):
        assert token not in out.stdout + out.stderr
    for f in (project / ".holodeck").rglob("*"):
        if f.is_file():
            assert token.encode() not in f.read_bytes(), f


def test_watch_polls_the_urls_and_ingests_a_changed_page(tmp_path: Path, served: Served) -> None:
    from test_ingest_watch import Watcher

    project = tmp_path / "proj"
    urls = [f"{served.url}/{t}.md" for t in ("alpha", "bravo", "charlie")]
    write(project / "agent.yaml", agent(urls) + "      poll: 1\n")
    watcher = Watcher(project)
    try:
        watcher.wait_for("kb: 3 new")
        bravo = served.folder / "bravo.md"
        write(bravo, "# bravo\n\nThe bravo pump was replaced by a quiet turbine.\n")
        later = bravo.stat().st_mtime + 10  # Last-Modified has whole seconds
        os.utime(bravo, (later, later))
        watcher.wait_for("kb: 0 new, 1 changed")
        found = run_holodeck("search", "--json", "quiet turbine", cwd=project)
        best = json.loads(found.stdout)["tools"][0]["results"][0]
        assert best["url"] == f"{served.url}/bravo.md"
        assert "quiet turbine" in best["content"]
    finally:
        watcher.kill()


def test_store_info_and_config_show_name_each_url_and_its_last_fetch(
    tmp_path: Path, served: Served
) -> None:
    token = "webT0KEN4471"
    project = tmp_path / "proj"
    secret = served.url.replace("http://", f"http://reader:{token}@") + "/alpha.md"
    shown_url = served.url.replace("http://", "http://reader:***@") + "/alpha.md"
    write(project / "agent.yaml", agent([secret, f"{served.url}/bravo.md"]))
    before = json.loads(run_holodeck("config", "show", "--json", cwd=project).stdout)
    assert before["tools"][0]["urls"] == [
        {"url": shown_url, "fetched_at": None},
        {"url": f"{served.url}/bravo.md", "fetched_at": None},
    ]
    ingest(project)
    for args in (("store", "info", "--json"), ("config", "show", "--json")):
        result = run_holodeck(*args, cwd=project)
        assert result.returncode == 0, result.stderr
        urls = json.loads(result.stdout)["tools"][0]["urls"]
        assert [u["url"] for u in urls] == [shown_url, f"{served.url}/bravo.md"]
        assert all(u["fetched_at"].endswith("Z") for u in urls), urls
        assert token not in result.stdout
    for args in (("store", "info"), ("config", "show")):
        text = run_holodeck(*args, cwd=project).stdout
        assert f"url:             {shown_url} (fetched 20" in text
        assert f"url:             {served.url}/bravo.md (fetched 20" in text
        assert token not in text
