"""The run history: each ``holodeck test`` run kept as ``results/<agent>/<time>.json``, as the
original HoloDeck keeps it: the whole report, agent.yaml as written (no secret), the commit.

The real CLI in a real git repository, the fake server as the model.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
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


#: The browser the page is opened in (headless); the test is skipped where there is none.
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium to open the page in")
def test_view_draws_the_history_in_a_browser_from_one_file(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        make_repo(tmp_path, llm.url)
        llm.chat.push(text("At nine."), text("In town."))
        assert run_holodeck("test", cwd=tmp_path).returncode == 1
        llm.chat.push(text("At nine."), text("On the quay."))
        assert run_holodeck("test", cwd=tmp_path).returncode == 0
    done = run_holodeck("test", "view", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    page = tmp_path / "results" / "desk_helper" / "history.html"
    assert done.stdout == f"View: {page}\n"
    source = page.read_text(encoding="utf-8")
    assert not re.search(r"<(script|link)[^>]+(src|href)=", source)  # nothing fetched
    assert "On the quay." in source  # the latest run's answers

    assert CHROMIUM is not None
    browser = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars"]
    browser += ["--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(
        [*browser, "--virtual-time-budget=10000", "--dump-dom", page.as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
    ).stdout
    # both charts drawn by plotly.js (its SVG in each chart's div), the comparison filled
    for chart in ("pass-rate", "metric-scores"):
        drawn = re.search(rf'<div id="{chart}"[^>]*class="[^"]*js-plotly-plot', dom)
        assert drawn, f"chart {chart} not drawn"
    assert dom.count('class="main-svg"') >= 4
    assert '<tr class="changed"><td>place</td><td class="failed">failed</td>' in dom
    shot = tmp_path / "history.png"  # the artefact: kept with the test's tmp_path
    subprocess.run(
        [*browser, "--virtual-time-budget=10000", "--window-size=1280,1800",
         f"--screenshot={shot}", page.as_uri()],
        capture_output=True,
        timeout=180,
    )  # fmt: skip
    assert shot.stat().st_size > 20_000, "the screenshot is blank"
    print(f"screenshot: {shot}")


def test_view_without_a_history_says_to_run_the_tests_first(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT.format(url="http://127.0.0.1:9/v1"))
    done = run_holodeck("test", "view", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        f"Error: {tmp_path / 'results' / 'desk_helper'}: no run history (holodeck test keeps "
        "each run there); run holodeck test first"
    ]
