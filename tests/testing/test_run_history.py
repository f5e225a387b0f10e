"""The run history: each ``holodeck test`` run kept as ``results/<agent>/<time>.json``, as the
original HoloDeck keeps it: the whole report, agent.yaml as written (no secret), the commit.

The real CLI in a real git repository, the fake server as the model.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, text

KEY = "sk-test-history-0123456789"

AGENT = """
name: desk helper
model:
  provider: openai
  name: fake-model
  endpoint: {url}
  api_key: ${{OPENAI_API_KEY}}
instructions: Answer briefly.
evaluations:
  metrics:
    - metric: equality
      case_insensitive: true
test_cases:
  - name: hours
    input: When do you open?
    ground_truth: At nine.
  - name: place
    input: Where are you?
    ground_truth: On the quay.
"""


def git(root: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def make_repo(root: Path, url: str) -> str:
    write(root / "agent.yaml", AGENT.format(url=url))
    write(root / ".env", f"OPENAI_API_KEY={KEY}\n")
    write(root / ".gitignore", ".env\nresults/\n.holodeck/\n")
    git(root, "init", "-q")
    git(root, "add", "agent.yaml", ".gitignore")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "agent")
    return git(root, "rev-parse", "HEAD")


def test_each_run_is_kept_with_its_cases_config_and_commit(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        commit = make_repo(tmp_path, llm.url)
        llm.chat.push(text("At nine."), text("In town."))
        first = run_holodeck("test", cwd=tmp_path)
        llm.chat.push(text("At nine."), text("On the quay."))
        second = run_holodeck("test", cwd=tmp_path)
    assert (first.returncode, second.returncode) == (1, 0), first.stderr + second.stderr
    runs = sorted((tmp_path / "results" / "desk_helper").glob("*.json"))
    assert len(runs) == 2
    assert f"History: results/desk_helper/{runs[0].name}" in first.stdout
    older, newer = (json.loads(p.read_text(encoding="utf-8")) for p in runs)
    assert older["git"] == {"commit": commit, "dirty": False}
    assert older["config"]["name"] == "desk helper"
    assert older["config"]["model"]["api_key"] == "${OPENAI_API_KEY}"  # as written
    assert KEY not in runs[0].read_text(encoding="utf-8")
    report = older["report"]
    assert report["summary"]["passed"] == 1 and report["summary"]["failed"] == 1
    cases = {c["name"]: c for c in report["cases"]}
    assert cases["hours"]["status"] == "passed" and cases["place"]["status"] == "failed"
    assert cases["place"]["answer"] == "In town."
    assert [m["name"] for m in cases["place"]["metrics"]] == ["equality"]
    assert newer["report"]["summary"]["pass_rate"] == 1.0


def test_no_history_keeps_nothing_and_an_unwritable_history_only_warns(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        make_repo(tmp_path, llm.url)
        llm.chat.push(text("At nine."), text("On the quay."))
        skipped = run_holodeck("test", "--no-history", cwd=tmp_path)
        assert skipped.returncode == 0, skipped.stderr
        assert not (tmp_path / "results").exists()
        write(tmp_path / "results", "a file where the folder would be")
        llm.chat.push(text("At nine."), text("On the quay."))
        blocked = run_holodeck("test", cwd=tmp_path)
    assert blocked.returncode == 0, blocked.stderr
    assert "WARNING: the run's history was not kept: cannot write results/desk_helper" in (
        blocked.stderr
    )


def test_test_view_says_in_one_line_what_to_use_instead(tmp_path: Path) -> None:
    done = run_holodeck("test", "view", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "Error: holodeck test view (an HTML page of the run history) is not built yet; each "
        "run is kept in results/<agent>/<time>.json next to agent.yaml, and holodeck test "
        "--report PATH.md (or .json) writes a run's report"
    ]
