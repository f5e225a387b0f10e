"""``type: code`` metrics: a Python grader of the project, with the original HoloDeck's
signature (``fn(ctx: GraderContext)`` imported from ``holodeck.lib.test_runner.code_grader``).

The real ``holodeck test`` in its own process (a hanging grader's thread must not outlive
the run here), the fake server as the model, a real search of a real knowledge base.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, text, tool_calls

GRADERS = '''
import json
import time
from pathlib import Path

from holodeck.lib.test_runner.code_grader import GraderContext, GraderResult


def same_number(ctx: GraderContext) -> bool:
    """Passes when the answer holds the ground truth's number; keeps what it was given."""
    seen = {
        "turn_input": ctx.turn_input,
        "agent_response": ctx.agent_response,
        "ground_truth": ctx.ground_truth,
        "tools": [[t.name, t.args, t.result[:20]] for t in ctx.tool_invocations],
        "retrieval_context": list(ctx.retrieval_context or []),
        "turn_index": ctx.turn_index,
        "test_case_name": ctx.test_case_name,
    }
    Path("seen.json").write_text(json.dumps(seen))
    return ctx.ground_truth.split()[-1] in ctx.agent_response


def too_short(ctx: GraderContext) -> GraderResult:
    return GraderResult(score=len(ctx.agent_response) / 1000, reason="shorter than 1000 chars")


def explode(ctx: GraderContext) -> float:
    raise ValueError("no number in the answer")


def hang(ctx: GraderContext) -> float:
    time.sleep(600)
    return 1.0
'''

AGENT = """
name: graded
model:
  provider: openai
  name: fake-model
  endpoint: {url}
  api_key: ${{OPENAI_API_KEY}}
instructions: Answer from the notes.
tools:
  - type: vectorstore
    name: notes
    source: notes/
evaluations:
  metrics:
    - type: code
      grader: graders:same_number
      name: same number
    - type: code
      grader: graders:too_short
      threshold: 0.5
    - type: code
      grader: graders:explode
    - type: code
      grader: graders:hang
      timeout: 1
test_cases:
  - name: attempts
    input: How many attempts does a job get?
    ground_truth: A job gets 3
"""


def make_project(root: Path, url: str, agent: str = AGENT) -> Path:
    write(root / "graders.py", GRADERS)
    write(root / "notes" / "retries.md", "# Retries\n\nA failing job gets 3 attempts in total.\n")
    write(root / "agent.yaml", agent.format(url=url))
    write(root / ".env", "OPENAI_API_KEY=sk-test-graders\n")
    return root


def test_passing_failing_raising_and_hanging_graders(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        llm.chat.push(
            tool_calls(("notes", {"query": "job attempts"})), text("A job gets 3 attempts.")
        )
        done = run_holodeck("test", "--report", "report.json", cwd=root, own_process=True)
    assert done.returncode == 1, done.stderr  # failed metrics: a failed case, not a crash
    assert "Traceback" not in done.stderr
    (case,) = json.loads((root / "report.json").read_text(encoding="utf-8"))["cases"]
    assert case["status"] == "failed"
    metrics = {m["name"]: m for m in case["metrics"]}
    assert metrics["same number"]["status"] == "passed"
    assert metrics["same number"]["score"] == 1.0
    assert metrics["too_short"]["status"] == "failed"
    assert metrics["too_short"]["score"] == 0.022  # 22 characters / 1000
    assert metrics["too_short"]["reason"] == "shorter than 1000 chars"
    assert metrics["explode"]["status"] == "failed"
    assert metrics["explode"]["reason"] == (
        "grader graders:explode raised ValueError: no number in the answer"
    )
    assert metrics["hang"]["status"] == "failed"
    assert metrics["hang"]["reason"].startswith("grader graders:hang did not return within 1 s")
    assert all(m["type"] == "code" for m in case["metrics"])
    seen = json.loads((root / "seen.json").read_text(encoding="utf-8"))
    assert seen["turn_input"] == "How many attempts does a job get?"
    assert seen["agent_response"] == "A job gets 3 attempts."
    assert seen["ground_truth"] == "A job gets 3"
    assert seen["tools"] == [["notes", {"query": "job attempts"}, "Found 1 result(s):\n\n"]]
    assert [p.strip() for p in seen["retrieval_context"]] == [
        "# Retries\n\nA failing job gets 3 attempts in total."
    ]
    assert (seen["turn_index"], seen["test_case_name"]) == (0, "attempts")


def test_a_raising_grader_with_fail_on_error_makes_the_case_an_error(tmp_path: Path) -> None:
    agent = AGENT.split("evaluations:")[0] + (
        "evaluations:\n  metrics:\n    - type: code\n      grader: graders:explode\n"
        "      fail_on_error: true\n"
        "test_cases:\n  - input: How many attempts?\n"
    )
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url, agent)
        llm.chat.push(text("Three."))
        done = run_holodeck("test", "--report", "report.json", cwd=root)
    (case,) = json.loads((root / "report.json").read_text(encoding="utf-8"))["cases"]
    assert case["status"] == "error"
    assert "grader graders:explode raised ValueError: no number in the answer" in case["reason"]
    assert done.returncode == 3, done.stderr


def test_a_grader_that_cannot_be_imported_is_refused_with_its_line(tmp_path: Path) -> None:
    agent = AGENT.replace("graders:too_short", "graders:missing").replace(
        "grader: graders:hang", "grader: nowhere.at_all:hang"
    )
    root = make_project(tmp_path, "http://127.0.0.1:9/v1", agent)
    done = run_holodeck("test", cwd=root)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "Error: agent.yaml:17: evaluations.metrics[1]: grader 'graders:missing': graders has "
        "no function 'missing'"
    ), done.stderr
