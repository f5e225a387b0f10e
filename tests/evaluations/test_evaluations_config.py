"""The ``evaluations:`` section as the original HoloDeck writes it loads unchanged, and every
mistake in it is one line with the file, the line and what is supported."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

from holodeck.config.evaluations import GEvalMetric, RagMetric, StandardMetric
from holodeck.config.loader import load_project
from holodeck.errors import ConfigError
from holodeck.evaluations.evaluator import case_metrics, judge_model
from holodeck.testing.cases import load_cases

#: Written from the original HoloDeck's documented schema (docs/guides/evaluations.md):
#: every metric holodeck supports, with the keys the original gives each.
ORIGINAL = """
name: support-agent
model:
  provider: openai
  name: gpt-4o
  temperature: 0.3
  api_key: ${OPENAI_API_KEY}
tools:
  - type: vectorstore
    name: search_kb
    description: Search the knowledge base
    source: docs/
evaluations:
  model:
    provider: ollama
    name: llama3.2:latest
    temperature: 0.0
  metrics:
    - type: geval
      name: "Technical Accuracy"
      criteria: |
        Evaluate whether the response provides accurate technical information
        that correctly addresses the user's question.
      evaluation_steps:
        - "Check if the response directly addresses the user's question"
        - "Verify technical accuracy of any code or commands provided"
      evaluation_params:
        - actual_output
        - input
        - expected_output
        - retrieval_context
      threshold: 0.8
      strict_mode: false
      enabled: true
      fail_on_error: false
      model:
        provider: openai
        name: gpt-4
    - type: geval
      name: "Coherence"
      criteria: "Evaluate whether the response is clear and well-structured."
      threshold: 0.7
    - type: rag
      metric_type: faithfulness
      threshold: 0.8
      include_reason: true
      enabled: true
      fail_on_error: false
    - type: rag
      metric_type: answer_relevancy
      threshold: 0.7
    - type: rag
      metric_type: contextual_relevancy
      threshold: 0.75
    - type: rag
      metric_type: contextual_precision
      threshold: 0.8
    - type: rag
      metric_type: contextual_recall
      threshold: 0.7
    - type: standard
      metric: f1_score
      threshold: 0.7
    - type: standard
      metric: bleu
      threshold: 0.6
    - metric: rouge
      threshold: 0.7
    - type: standard
      metric: equality
      case_insensitive: true
      strip_whitespace: true
      strip_punctuation: false
    - type: standard
      metric: numeric
      absolute_tolerance: 0.5
      relative_tolerance: 0.0
      accept_percent: true
      accept_thousands_separators: true
      response_path: result.value
test_cases:
  - name: "Fact check test"
    input: "What's our company's founding date?"
    ground_truth: "Founded in 2010"
    evaluations:
      - type: rag
        metric_type: faithfulness
        threshold: 0.85
      - type: geval
        name: "Creativity"
        criteria: "Evaluate if the tagline is creative and memorable."
        threshold: 0.7
      - type: standard
        metric: rouge
        enabled: false
  - name: "Password reset"
    input: "How do I reset my password?"
    retrieval_context:
      - "To reset a password open Settings, then Security, then Reset."
"""


@pytest.fixture(autouse=True)
def in_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Messages name files relative to the current folder: be in the project."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def project_with(tmp_path: Path, text: str) -> Path:
    (tmp_path / "docs").mkdir(exist_ok=True)
    (tmp_path / "docs" / "kb.md").write_text("# KB\n\nFounded in 2010.\n")
    return write(tmp_path / "agent.yaml", text)


def error_of(tmp_path: Path, text: str) -> str:
    path = project_with(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_cases(load_project(path))
    return str(caught.value)


def test_the_original_holodeck_evaluations_section_loads_unchanged(tmp_path: Path) -> None:
    project = load_project(project_with(tmp_path, ORIGINAL))
    fact, reset = load_cases(project)
    metrics = project.agent.evaluations.metrics  # type: ignore[union-attr]
    assert [type(m) for m in metrics] == [GEvalMetric] * 2 + [RagMetric] * 5 + [StandardMetric] * 5
    accuracy = metrics[0]
    assert isinstance(accuracy, GEvalMetric)
    assert accuracy.evaluation_params == [
        "actual_output",
        "input",
        "expected_output",
        "retrieval_context",
    ]
    assert judge_model(project, accuracy).name == "gpt-4"  # type: ignore[union-attr]
    assert judge_model(project, metrics[1]).name == "llama3.2:latest"  # type: ignore[union-attr]
    assert metrics[9].type == "standard"  # `- metric: rouge` without a type
    numeric = metrics[11]
    assert isinstance(numeric, StandardMetric) and numeric.response_path == "result.value"

    # The case's faithfulness overrides the agent's, its Creativity is added, its rouge off.
    chosen = {m.label: m for m in case_metrics(project, fact)}
    assert chosen["faithfulness"].threshold == 0.85
    assert "Creativity" in chosen and "rouge" not in chosen
    assert len(chosen) == len(metrics) - 1 + 1
    assert reset.retrieval_context == [
        "To reset a password open Settings, then Security, then Reset."
    ]


def test_config_show_accepts_it_too(tmp_path: Path) -> None:
    project_with(tmp_path, ORIGINAL)
    result = run_holodeck("config", "show", cwd=tmp_path, env={"OPENAI_API_KEY": "sk-x"})
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("metric", "expected"),
    [
        (
            "- metric: meteor",
            "agent.yaml:5: evaluations.metrics[0].metric: 'meteor' needs NLTK's WordNet data, "
            "which NLTK downloads at run time",
        ),
        (
            "- metric: bleu_score",
            "agent.yaml:5: evaluations.metrics[0].metric: unknown standard metric 'bleu_score'; "
            "supported: equality, numeric, f1_score, rouge, bleu",
        ),
        (
            "- metric: safety",
            "evaluations.metrics[0].metric: 'safety' is the original HoloDeck's "
            "deprecated Azure AI metric; use type: geval with criteria saying what safe means",
        ),
        (
            "- {type: rag, metric_type: hallucination}",
            "agent.yaml:5: evaluations.metrics[0].metric_type: unknown rag metric "
            "'hallucination'; supported: faithfulness, answer_relevancy, contextual_relevancy, "
            "contextual_precision, contextual_recall",
        ),
        (
            "- {type: judge, name: x}",
            "agent.yaml:5: evaluations.metrics[0]: type: must be one of standard, geval, rag, code",
        ),
        (
            "- {type: geval, name: x, criteria: y, evaluation_step: [a]}",
            "agent.yaml:5: evaluations.metrics[0].evaluation_step: unknown key; did you mean "
            "'evaluation_steps'?",
        ),
        (
            "- {metric: rouge, treshold: 0.5}",
            "agent.yaml:5: evaluations.metrics[0].treshold: unknown key; did you mean 'threshold'? "
            "valid keys: threshold, enabled, fail_on_error, model, type, metric, response_path",
        ),
        (
            "- {type: geval, name: x, criteria: y, evaluation_params: [actual_output, context]}",
            "evaluation_params: 'context' (the original HoloDeck's test-case files: content)",
        ),
        (
            "- {metric: rouge, threshold: 1.5}",
            "agent.yaml:5: evaluations.metrics[0].threshold: Input should be less than or "
            "equal to 1",
        ),
        (
            "- {metric: numeric, response_path: $.value}",
            "evaluations.metrics[0].response_path: not a path",
        ),
        (
            "- {metric: rouge}\n    - {metric: rouge, threshold: 0.5}",
            "metric 'rouge' appears twice",
        ),
    ],
)
def test_a_bad_metric_is_one_line_with_file_line_and_what_is_supported(
    tmp_path: Path, metric: str, expected: str
) -> None:
    text = (
        f"name: a\nmodel: {{provider: ollama, name: m}}\nevaluations:\n  metrics:\n    {metric}\n"
    )
    text += "test_cases:\n  - {name: c, input: q, ground_truth: g}\n"
    assert expected in error_of(tmp_path, text)


def test_a_judged_metric_without_any_model_is_refused(tmp_path: Path) -> None:
    text = """
name: a
tools: [{type: vectorstore, name: kb, source: docs/}]
test_cases:
  - name: c
    input: q
    evaluations:
      - {type: rag, metric_type: contextual_recall}
"""
    message = error_of(tmp_path, text)
    assert message.startswith(
        "agent.yaml:7: test_cases[0].evaluations[0]: rag metric 'contextual_recall' needs a "
        "judge model: add evaluations.model:"
    )


def test_retrieval_only_refuses_metrics_of_an_answer_it_does_not_have(tmp_path: Path) -> None:
    text = """
name: a
tools: [{type: vectorstore, name: kb, source: docs/}]
evaluations:
  model: {provider: ollama, name: judge}
  metrics:
    - {type: rag, metric_type: contextual_precision}
    - {type: rag, metric_type: faithfulness}
test_cases:
  - {name: c, input: q, ground_truth: g}
"""
    message = error_of(tmp_path, text)
    assert message.startswith(
        "agent.yaml:7: evaluations.metrics[1]: rag metric 'faithfulness': it judges the agent's "
        "answer, and without a model: holodeck test runs retrieval-only"
    )
    # Disabled, it is not a problem; and the contextual metrics run without a model.
    ok = text.replace("metric_type: faithfulness}", "metric_type: faithfulness, enabled: false}")
    project = load_project(project_with(tmp_path, ok))
    (case,) = load_cases(project)
    assert [m.label for m in case_metrics(project, case)] == ["contextual_precision"]


def test_a_literal_key_for_the_judge_is_refused_like_the_agents(tmp_path: Path) -> None:
    text = """
name: a
evaluations:
  model: {provider: openai, name: gpt-4o, api_key: sk-live-123456}
  metrics: [{type: geval, name: g, criteria: c, evaluation_params: [input]}]
test_cases: [{name: c, input: q}]
"""
    project_with(tmp_path, text)
    result = run_holodeck("test", cwd=tmp_path)
    assert result.returncode == 2
    assert "agent.yaml:3: evaluations.model.api_key: must be exactly one ${VAR}" in result.stderr
    assert "sk-live-123456" not in result.stdout + result.stderr


def test_a_case_with_only_an_input_is_judged_by_the_agents_metrics(tmp_path: Path) -> None:
    text = """
name: a
model: {provider: ollama, name: m}
evaluations:
  metrics: [{type: rag, metric_type: answer_relevancy}]
test_cases: [{name: c, input: q}]
"""
    project = load_project(project_with(tmp_path, text))
    (case,) = load_cases(project)
    assert [m.label for m in case_metrics(project, case)] == ["answer_relevancy"]
    bare = "name: a\ntest_cases: [{name: c, input: q}]\n"
    assert "checks nothing: without a model: it needs at least one of" in error_of(tmp_path, bare)
