"""A git repository as a knowledge base's source (issue 64), as a user sees it.

Real git: a bare repository made on disk, pushed to between ingests from a working clone;
the real CLI (run_holodeck), the real local model.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

TOKEN = "s3cretTOKEN4711"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=T", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def agent(url: str, path: str = "docs") -> str:
    where = f"\n      path: {path}" if path else ""
    return f"""
name: git-test
tools:
  - type: vectorstore
    name: kb
    source:
      git: {url}
      ref: main{where}
"""


def doc(topic: str) -> str:
    return (
        f"# The {topic} guide\n\nThe {topic} pump runs on tuesdays; the {topic} valve is "
        f"checked every month by the {topic} crew and logged in the {topic} journal.\n"
    )


class Remote:
    """A bare repository and a working clone that pushes to it."""

    def __init__(self, root: Path) -> None:
        self.bare = root / "handbook.git"
        self.work = root / "work"
        subprocess.run(["git", "init", "-q", "--bare", str(self.bare)], check=True)
        subprocess.run(["git", "init", "-q", "-b", "main", str(self.work)], check=True)
        git(self.work, "remote", "add", "origin", str(self.bare))

    def commit(self, message: str, force: bool = False) -> str:
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message)
        git(self.work, "push", "-q", *(["--force"] if force else []), "origin", "HEAD:main")
        return git(self.work, "rev-parse", "HEAD")


@pytest.fixture
def remote(tmp_path: Path) -> Remote:
    r = Remote(tmp_path)
    for topic in ("alpha", "bravo", "charlie"):
        write(r.work / "docs" / f"{topic}.md", doc(topic))
    write(r.work / "README.md", "Not under docs/: not indexed.\n")
    r.commit("three guides")
    return r


@pytest.fixture
def project(tmp_path: Path, remote: Remote) -> Path:
    root = tmp_path / "proj"
    write(root / "agent.yaml", agent(remote.bare.as_uri()))
    return root


def ingest(project: Path) -> dict:
    result = run_holodeck("ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["tools"][0]


def search(project: Path, query: str) -> list[dict]:
    result = run_holodeck("search", "--json", query, cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["tools"][0]["results"]


def test_one_commit_re_embeds_only_the_file_it_touched(project: Path, remote: Remote) -> None:
    first = ingest(project)
    assert (first["new"], first["chunks_embedded"]) == (3, 3)
    assert not (project / ".holodeck" / "sources" / "kb" / "repo" / "README.md").exists()

    write(remote.work / "docs" / "bravo.md", doc("bravo") + "\nThe bravo pump was replaced.\n")
    sha = remote.commit("bravo: pump replaced")
    second = ingest(project)
    assert (second["new"], second["changed"], second["unchanged"]) == (0, 1, 2)
    assert second["chunks_embedded"] == 1  # bravo's one chunk; alpha's and charlie's kept

    best = search(project, "bravo pump replaced")[0]
    assert best["repo_path"] == "docs/bravo.md"
    assert best["commit"] == sha
    text = run_holodeck("search", "bravo pump replaced", cwd=project)
    assert f"Commit: {sha[:12]}" in text.stdout


def test_a_rename_re_embeds_nothing_and_a_delete_removes_its_chunks(
    project: Path, remote: Remote
) -> None:
    ingest(project)
    git(remote.work, "mv", "docs/charlie.md", "docs/charlie-renamed.md")
    git(remote.work, "rm", "-q", "docs/alpha.md")
    remote.commit("rename charlie, drop alpha")
    summary = ingest(project)
    assert (summary["moved"], summary["removed"], summary["chunks_embedded"]) == (1, 1, 0)
    assert summary["chunks_total"] == 2
    paths = {r["repo_path"] for r in search(project, "alpha pump valve journal")}
    assert paths == {"docs/bravo.md", "docs/charlie-renamed.md"}


def test_a_force_push_is_followed(project: Path, remote: Remote) -> None:
    ingest(project)
    write(remote.work / "docs" / "delta.md", doc("delta"))
    remote.commit("delta")
    ingest(project)
    git(remote.work, "reset", "-q", "--hard", "HEAD~1")  # delta never happened
    write(remote.work / "docs" / "echo.md", doc("echo"))
    sha = remote.commit("echo instead", force=True)
    summary = ingest(project)
    assert (summary["new"], summary["removed"], summary["unchanged"]) == (1, 1, 3)
    assert {r["repo_path"] for r in search(project, "delta echo pump")} >= {"docs/echo.md"}
    assert "docs/delta.md" not in {r["repo_path"] for r in search(project, "delta pump")}
    info = run_holodeck("store", "info", "--json", cwd=project)
    git_info = json.loads(info.stdout)["tools"][0]["git"]
    assert git_info["indexed_commit"] == sha
    assert git_info["ref"] == "main"


def test_an_unreachable_remote_searches_what_the_last_fetch_brought(
    project: Path, remote: Remote, tmp_path: Path
) -> None:
    ingest(project)
    remote.bare.rename(tmp_path / "moved-away.git")
    result = run_holodeck("ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tools"][0]["unchanged"] == 3
    warnings = [line for line in result.stderr.splitlines() if "cannot reach git remote" in line]
    assert len(warnings) == 1, result.stderr
    assert remote.bare.as_uri() in warnings[0] and "fetched 20" in warnings[0]
    assert search(project, "charlie valve")[0]["repo_path"] == "docs/charlie.md"


def test_store_info_and_config_show_name_remote_ref_and_commit(
    project: Path, remote: Remote
) -> None:
    sha = git(remote.work, "rev-parse", "HEAD")
    ingest(project)
    info = run_holodeck("store", "info", cwd=project)
    assert f"commit indexed:  {sha}" in info.stdout
    assert remote.bare.as_uri() in info.stdout
    shown = run_holodeck("config", "show", "--json", cwd=project)
    tool = json.loads(shown.stdout)["tools"][0]
    assert tool["git"]["remote"] == remote.bare.as_uri()
    assert (tool["git"]["ref"], tool["git"]["path"]) == ("main", "docs")
    assert tool["git"]["indexed_commit"] == sha


@pytest.mark.parametrize(
    "url",
    [f"https://holo:{TOKEN}@127.0.0.1:9/acme/handbook.git", f"https://{TOKEN}@127.0.0.1:9/x.git"],
)
def test_a_credential_in_the_url_is_never_printed_or_stored(tmp_path: Path, url: str) -> None:
    root = tmp_path / "proj"
    write(root / "agent.yaml", agent(url))
    result = run_holodeck("ingest", cwd=root)
    assert result.returncode == 2, result.stderr
    assert "cannot fetch git source https://***@127.0.0.1:9/" in result.stderr
    assert "Traceback" not in result.stderr
    shown = run_holodeck("config", "show", cwd=root)
    assert "***@127.0.0.1:9" in shown.stdout
    verbose = run_holodeck("-v", "ingest", cwd=root)
    for out in (result, shown, verbose):
        assert TOKEN not in out.stdout + out.stderr
    for f in (root / ".holodeck").rglob("*"):
        if f.is_file():
            assert TOKEN.encode() not in f.read_bytes(), f


def test_a_path_missing_from_the_repository_is_said_plainly(tmp_path: Path, remote: Remote) -> None:
    root = tmp_path / "proj"
    write(root / "agent.yaml", agent(remote.bare.as_uri(), path="manuals"))
    result = run_holodeck("ingest", cwd=root)
    assert result.returncode == 2
    assert "tools[kb].source.path: manuals is not a folder of" in result.stderr


@pytest.mark.parametrize(
    ("source", "said"),
    [
        ("{git: 's3://bucket/docs'}", "agent.yaml:5: tools[0].source: git: not a git URL"),
        ("{git: x.git, path: ../up}", "agent.yaml:5: tools[0].source: path: must be a folder"),
        ("https://example.com/docs/", "remote sources are not fetched"),
    ],
)
def test_bad_git_sources_are_refused_in_one_line(tmp_path: Path, source: str, said: str) -> None:
    write(
        tmp_path / "agent.yaml",
        f"name: t\ntools:\n  - type: vectorstore\n    name: kb\n    source: {source}\n",
    )
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 2
    assert said in result.stderr, result.stderr


def test_links_to_github_and_gitlab_name_the_commit_and_lines() -> None:
    from holodeck.ingest.git_source import blob_url

    sha = "0123456789abcdef0123456789abcdef01234567"
    assert blob_url(
        "https://x:tok@github.com/acme/handbook.git", sha, "docs/a b.md", "lines 3-9"
    ) == (f"https://github.com/acme/handbook/blob/{sha}/docs/a%20b.md#L3-L9")
    assert blob_url("git@gitlab.com:acme/ops/runbooks.git", sha, "r.md", "line 4") == (
        f"https://gitlab.com/acme/ops/runbooks/-/blob/{sha}/r.md#L4"
    )
    assert blob_url("file:///srv/handbook.git", sha, "r.md", "line 4") is None


def test_watch_polls_the_remote_and_ingests_a_pushed_commit(tmp_path: Path, remote: Remote) -> None:
    from test_ingest_watch import Watcher

    root = tmp_path / "proj"
    write(root / "agent.yaml", agent(remote.bare.as_uri()) + "      poll: 1\n")
    watcher = Watcher(root)
    try:
        watcher.wait_for("kb: 3 new")
        write(remote.work / "docs" / "delta.md", doc("delta"))
        sha = remote.commit("delta")
        watcher.wait_for("kb: 1 new")
        best = search(root, "delta pump journal")[0]
        assert (best["repo_path"], best["commit"]) == ("docs/delta.md", sha)
    finally:
        watcher.kill()
