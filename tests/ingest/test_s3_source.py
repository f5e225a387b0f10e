"""Objects under an S3 prefix as a knowledge base's source (issue 64, S3 part).

moto's S3 server (from PyPI) in its own process on 127.0.0.1 stands in for AWS; boto3 in
the test fills the bucket, holodeck reaches it through the standard AWS variables. The
server's request log shows which objects were downloaded, so an unchanged one is seen not
to be fetched twice.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")

BUCKET = "handbook"


class S3Server:
    """``moto_server`` on a free port; its log in a file."""

    def __init__(self, tmp: Path) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.log = tmp / "moto.log"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=self.log.open("w"),
            stderr=subprocess.STDOUT,
        )
        self.env = {
            "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
        deadline = time.monotonic() + 120  # a loaded machine starts it slowly
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert self.proc.poll() is None, self.log.read_text()
                assert time.monotonic() < deadline, self.log.read_text()
                time.sleep(0.2)
        self.client = boto3.client(
            "s3",
            endpoint_url=self.env["AWS_ENDPOINT_URL"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        self.client.create_bucket(Bucket=BUCKET)
        self.seen = 0

    def downloads(self) -> list[str]:
        """Objects downloaded (GET of a key) since the last call."""
        lines = self.log.read_text().splitlines()
        new, self.seen = lines[self.seen :], len(lines)
        return sorted(
            ln.split('"GET ', 1)[1].split(" ", 1)[0]
            for ln in new
            if f'"GET /{BUCKET}/' in ln and "?" not in ln.split('"GET ', 1)[1].split(" ", 1)[0]
        )

    def put(self, key: str, text: str) -> None:
        self.client.put_object(Bucket=BUCKET, Key=key, Body=text.encode())


@pytest.fixture
def s3(tmp_path: Path) -> Iterator[S3Server]:
    server = S3Server(tmp_path)
    for topic in ("alpha", "bravo", "charlie"):
        server.put(f"docs/{topic}.md", f"# {topic}\n\nThe {topic} pump is checked monthly.\n")
    server.put("other/skip.md", "Not under the prefix.\n")
    yield server
    server.proc.terminate()
    server.proc.wait(60)


AGENT = f"""
name: s3-test
tools:
  - type: vectorstore
    name: kb
    source:
      s3: s3://{BUCKET}/docs/
"""


def ingest(project: Path, env: dict[str, str]) -> dict:
    result = run_holodeck("ingest", "--json", cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["tools"][0]


def test_unchanged_objects_are_not_downloaded_twice(tmp_path: Path, s3: S3Server) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    assert ingest(project, s3.env)["new"] == 3
    assert s3.downloads() == [f"/{BUCKET}/docs/{t}.md" for t in ("alpha", "bravo", "charlie")]

    again = ingest(project, s3.env)
    assert (again["unchanged"], again["chunks_embedded"]) == (3, 0)
    assert s3.downloads() == []

    s3.put("docs/bravo.md", "# bravo\n\nThe bravo pump was replaced by a turbine.\n")
    s3.client.delete_object(Bucket=BUCKET, Key="docs/charlie.md")
    third = ingest(project, s3.env)
    assert (third["changed"], third["removed"], third["unchanged"]) == (1, 1, 1)
    assert s3.downloads() == [f"/{BUCKET}/docs/bravo.md"]

    found = run_holodeck("search", "--json", "bravo turbine", cwd=project, env=s3.env)
    assert json.loads(found.stdout)["tools"][0]["results"][0]["url"] == (
        f"s3://{BUCKET}/docs/bravo.md"
    )


def test_an_unreachable_bucket_keeps_what_was_fetched(tmp_path: Path, s3: S3Server) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    ingest(project, s3.env)
    s3.proc.terminate()
    s3.proc.wait(60)
    result = run_holodeck("ingest", "--json", cwd=project, env={**s3.env, "AWS_MAX_ATTEMPTS": "1"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tools"][0]["unchanged"] == 3
    warned = [ln for ln in result.stderr.splitlines() if "cannot read s3://handbook/docs/" in ln]
    assert len(warned) == 1, result.stderr


def test_watch_polls_the_bucket_and_ingests_a_changed_object(tmp_path: Path, s3: S3Server) -> None:
    from test_ingest_watch import Watcher

    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT + "      poll: 1\n")
    aws = project / "home" / ".aws"  # the watcher's HOME: boto3's standard files reach moto
    write(
        aws / "config",
        f"[default]\nregion = us-east-1\nendpoint_url = {s3.env['AWS_ENDPOINT_URL']}\n",
    )
    write(
        aws / "credentials",
        "[default]\naws_access_key_id = testing\naws_secret_access_key = testing\n",
    )
    watcher = Watcher(project)
    try:
        watcher.wait_for("kb: 3 new")
        s3.put("docs/bravo.md", "# bravo\n\nThe bravo pump was replaced by a quiet turbine.\n")
        watcher.wait_for("kb: 0 new, 1 changed")
        found = run_holodeck("search", "--json", "quiet turbine", cwd=project, env=s3.env)
        best = json.loads(found.stdout)["tools"][0]["results"][0]
        assert best["url"] == f"s3://{BUCKET}/docs/bravo.md"
        assert "quiet turbine" in best["content"]
    finally:
        watcher.kill()


def test_store_info_and_config_show_name_the_prefix_and_its_objects(
    tmp_path: Path, s3: S3Server
) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    before = json.loads(run_holodeck("config", "show", "--json", cwd=project).stdout)
    assert before["tools"][0]["s3"] == {
        "bucket": BUCKET,
        "prefix": "docs/",
        "objects": 0,
        "fetched_at": None,
    }
    ingest(project, s3.env)
    for args in (("store", "info", "--json"), ("config", "show", "--json")):
        result = run_holodeck(*args, cwd=project, env=s3.env)
        assert result.returncode == 0, result.stderr
        shown = json.loads(result.stdout)["tools"][0]["s3"]
        assert (shown["bucket"], shown["prefix"], shown["objects"]) == (BUCKET, "docs/", 3)
        assert shown["fetched_at"].endswith("Z")
    for args in (("store", "info"), ("config", "show")):
        text = run_holodeck(*args, cwd=project, env=s3.env).stdout
        assert f"s3:              s3://{BUCKET}/docs/" in text
        assert "objects:         3 (fetched 20" in text
