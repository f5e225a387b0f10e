"""``holodeck test`` never hangs a CI job: a regex stops, a case has a time limit, Ctrl-C stops.

The real CLI in a subprocess; the fake OpenAI-compatible server plays a model that answers
slowly (its stream sleeps between chunks).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, text

REPO = Path(__file__).resolve().parents[2]
API_KEY = "sk-test-holodeck-limits"

REGEX_AGENT = """
name: regex-agent
tools:
  - {type: vectorstore, name: guides, source: docs/}
test_cases:
  - name: backtracks
    input: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"
    expected_tools:
      - name: guides
        args: {query: {regex: "(a|aa)+$"}}
  - name: from-the-issue
    input: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"
    expected_tools:
      - name: guides
        args: {query: {regex: "^(a+)+$"}}
  - name: after-them
    input: How many times is a failing job attempted?
    expected_sources: [retries.md]
"""

LLM_AGENT = """
name: slow-agent
model: {{provider: openai, name: fake-model, endpoint: "{url}", api_key: "${{OPENAI_API_KEY}}"}}
tools:
  - {{type: vectorstore, name: guides, source: docs/}}
test_cases:
  - {{name: quick, input: how many retries, expected_content: [attempts]}}
  - {{name: slow, input: how many retries, expected_content: [attempts]}}
  - {{name: last, input: how many retries, expected_content: [attempts]}}
"""


def make_project(root: Path, agent: str) -> Path:
    (root / "docs").mkdir(parents=True)
    shutil.copy(REPO / "examples" / "docs" / "guides" / "retries.md", root / "docs")
    write(root / "agent.yaml", agent)
    return root


def test_a_regex_that_backtracks_is_stopped_and_the_run_goes_on(tmp_path: Path) -> None:
    project = make_project(tmp_path, REGEX_AGENT)
    result = run_holodeck("test", "--report", "report.json", cwd=project, timeout=180)
    assert result.returncode == 3, result.stdout + result.stderr  # an errored case
    cases = {c["name"]: c for c in json.loads((project / "report.json").read_text())["cases"]}
    assert cases["backtracks"]["status"] == "error"
    assert cases["backtracks"]["reason"] == (
        "RegexTimeout: regex /(a|aa)+$/ took more than 2 s on "
        f"{'a' * 60!r} and was stopped (it backtracks too much); simplify it"
    )
    assert cases["from-the-issue"]["status"] == "failed"  # answered, not hung
    assert cases["after-them"]["status"] == "passed"


def test_a_case_past_its_time_limit_is_an_error_and_the_next_runs(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        project = make_project(tmp_path, LLM_AGENT.format(url=llm.url))
        llm.chat.push(
            text("A job gets 3 attempts."),
            text("A job gets 3 attempts, said very slowly.", delay=3600),  # answers after a minute
            text("A job gets 3 attempts."),
        )
        result = run_holodeck(
            "test",
            "--timeout",
            "3",
            "--report",
            "report.json",
            cwd=project,
            env={"OPENAI_API_KEY": API_KEY},
        )
    assert result.returncode == 3, result.stdout + result.stderr
    quick, slow, last = json.loads((project / "report.json").read_text())["cases"]
    assert (quick["status"], last["status"]) == ("passed", "passed")
    assert (slow["status"], slow["error_type"]) == ("error", "CaseTimeout")
    assert slow["reason"] == (
        "CaseTimeout: the case took longer than 3 s and was stopped (raise the limit with "
        "`holodeck test --timeout SECONDS`)"
    )
    assert "3 cases: 2 passed, 0 failed, 1 error" in result.stdout


def test_ctrl_c_stops_the_run_and_reports_the_cases_done(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        project = make_project(tmp_path, LLM_AGENT.format(url=llm.url))
        llm.chat.push(
            text("A job gets 3 attempts."),
            text("A job gets 3 attempts, said very slowly.", delay=3600),
            text("A job gets 3 attempts."),
        )
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
        env |= {"HOME": str(project / "home"), "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
        env["OPENAI_API_KEY"] = API_KEY
        out = (project / "out.txt").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "test", "--report", "r.json", "--junit", "j.xml"],
            cwd=project,
            env=env,
            stdout=out,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            while "PASS  quick" not in (project / "out.txt").read_text():
                assert proc.poll() is None  # however slow the machine (pytest-timeout bounds it)
                time.sleep(0.2)
            time.sleep(1)  # the slow case is waiting on its answer now
            proc.send_signal(signal.SIGINT)
            # It stops without the slow answer (an hour away), however loaded the machine.
            code = proc.wait(timeout=240)
        finally:
            if proc.poll() is None:
                proc.kill()
            out.close()
    printed = (project / "out.txt").read_text()
    assert code == 130, printed + (proc.stderr.read() if proc.stderr else "")
    assert "Interrupted: 1 case of 3 ran, 2 did not" in printed
    assert "1 case: 1 passed, 0 failed, 0 errors" in printed
    report = json.loads((project / "r.json").read_text())
    assert [c["name"] for c in report["cases"]] == ["quick"]
    assert (report["summary"]["not_run"], report["summary"]["exit_code"]) == (2, 130)
    assert 'tests="1"' in (project / "j.xml").read_text()


def test_limits_that_are_not_numbers_are_refused(tmp_path: Path) -> None:
    """``nan`` compares false with every bound, so a plain range would let it through."""
    project = make_project(tmp_path, REGEX_AGENT)
    for option, allowed in (("--timeout", "1<=x<=86400"), ("--max-drop", "0.0<=x<=1.0")):
        result = run_holodeck("test", option, "nan", cwd=project)
        assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
        assert result.stderr.strip().splitlines()[-1] == (
            f"Error: Invalid value for '{option}': 'nan' is not a number {allowed}"
        )
    assert not (project / ".holodeck").exists()  # refused before any work
