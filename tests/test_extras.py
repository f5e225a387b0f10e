"""Opt-in features live in extras (pyproject.toml): used without its extra, a feature stops
with one line naming the extra to install, exit code 2, before any work.

The missing package is simulated for real: a ``sitecustomize`` on PYTHONPATH that blocks
its import in a new ``holodeck`` process, as a default install would lack it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_helpers import error_line, run_holodeck, write

BLOCKER = '''
"""Imports of the packages in HOLODECK_TEST_BLOCK fail, as on an install without them."""
import os
import sys

BLOCKED = set(filter(None, os.environ.get("HOLODECK_TEST_BLOCK", "").split(",")))


class Blocker:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, Blocker())
'''

KB = """
  - name: kb
    type: vectorstore
    source: docs
    file_types: [.md, {types}]
"""


def without(tmp_path: Path, *packages: str) -> dict[str, str]:
    """The environment of a process in which ``packages`` cannot be imported."""
    site = write(tmp_path / "blocker" / "sitecustomize.py", BLOCKER).parent
    return {"PYTHONPATH": str(site), "HOLODECK_TEST_BLOCK": ",".join(packages)}


def project(root: Path, agent: str) -> Path:
    write(root / "docs" / "a.md", "# Retries\n\nA failing task is retried three times.\n")
    write(root / "agent.yaml", agent)
    return root


def test_a_docx_without_the_office_extra_names_it(tmp_path: Path) -> None:
    import docx

    root = project(tmp_path, "name: a\ntools:" + KB.format(types=".docx"))
    document = docx.Document()
    document.add_paragraph("The dashboard listens on port 8080.")
    document.save(str(root / "docs" / "b.docx"))
    done = run_holodeck("ingest", cwd=root, env=without(tmp_path, "mammoth"), own_process=True)
    assert error_line(done) == (
        "Error: tool kb: reading .docx files needs the extra holodeck[office] (package mammoth "
        "is not installed): pip install 'holodeck[office]'"
    )
    assert not (root / ".holodeck" / "index").exists() or not any(
        (root / ".holodeck" / "index").rglob("*.vec*")
    )


def test_html_without_the_html_extra_names_it(tmp_path: Path) -> None:
    root = project(tmp_path, "name: a\ntools:" + KB.format(types=".html"))
    write(root / "docs" / "c.html", "<html><body><main><p>Port 8080.</p></main></body></html>")
    done = run_holodeck("ingest", cwd=root, env=without(tmp_path, "trafilatura"), own_process=True)
    assert error_line(done).endswith(
        "reading .html files needs the extra holodeck[html] (package trafilatura is not "
        "installed): pip install 'holodeck[html]'"
    )


def test_a_folder_without_opt_in_files_needs_no_extra(tmp_path: Path) -> None:
    """The default path: .docx enabled but none in the folder, no extra's package there
    (lxml included: only the html and office extras bring it), ingest and search work."""
    root = project(tmp_path, "name: a\ntools:" + KB.format(types=".docx"))
    extras_only = ("markitdown", "mammoth", "trafilatura", "lxml", "lxml_html_clean", "pandas")
    servers = ("redis", "redisvl", "psycopg", "pgvector", "anthropic", "ag_ui", "plotly")
    env = without(tmp_path, *extras_only, *servers, "rouge_score", "sacrebleu")
    done = run_holodeck("ingest", cwd=root, env=env, own_process=True)
    assert done.returncode == 0, done.stderr
    assert "1 new" in done.stderr
    found = run_holodeck(
        "search", "how often is a task retried", cwd=root, env=env, own_process=True
    )
    assert found.returncode == 0, found.stderr
    assert "retried three times" in found.stdout


@pytest.mark.parametrize(
    ("agent", "command", "blocked", "expected"),
    [
        (
            "name: a\ntools:"
            + KB.format(types=".txt")
            + "    database:\n      provider: redis\n      connection_string: redis://127.0.0.1:1\n",
            ("ingest",),
            "redisvl",
            "Error: database provider redis needs the extra holodeck[redis] (package redisvl is "
            "not installed): pip install 'holodeck[redis]'",
        ),
        (
            "name: a\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4-20250514\n"
            "tools:" + KB.format(types=".txt"),
            ("chat",),
            "anthropic",
            "Error: provider anthropic needs the extra holodeck[anthropic] (package anthropic is "
            "not installed): pip install 'holodeck[anthropic]'",
        ),
        (
            "name: a\nmodel:\n  provider: openai\n  name: gpt-4o\n"
            "  endpoint: http://127.0.0.1:1/v1\ntools:"
            + KB.format(types=".txt")
            + "test_cases:\n  - input: How often is a task retried?\n"
            "    ground_truth: three times\n"
            "    evaluations:\n      - type: standard\n        metric: rouge\n",
            ("test",),
            "rouge_score",
            "Error: metric rouge needs the extra holodeck[metrics] (package rouge_score is not "
            "installed): pip install 'holodeck[metrics]'",
        ),
    ],
    ids=["redis", "anthropic", "metrics"],
)
def test_each_opt_in_feature_without_its_extra_names_it(
    tmp_path: Path, agent: str, command: tuple[str, ...], blocked: str, expected: str
) -> None:
    root = project(tmp_path, agent)
    keys = {"ANTHROPIC_API_KEY": "sk-ant-test", "OPENAI_API_KEY": "sk-test"}
    env = {**without(tmp_path, blocked), **keys}
    done = run_holodeck(*command, cwd=root, env=env, stdin="hi\n", own_process=True)
    assert error_line(done) == expected


def test_every_extra_the_code_names_is_in_pyproject_and_in_all() -> None:
    """A message's ``pip install 'holodeck[X]'`` installs something: X is an extra, in
    ``all`` (and so in ``test``, which the suite runs with)."""
    import re
    import tomllib

    from holodeck.extras import FILE_TYPE_EXTRAS

    repo = Path(__file__).resolve().parents[1]
    extras = tomllib.loads((repo / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    code = "\n".join(p.read_text(encoding="utf-8") for p in (repo / "holodeck").rglob("*.py"))
    named = set(re.findall(r'require\(\s*"([\w-]+)"', code)) | {
        e for e, _ in FILE_TYPE_EXTRAS.values()
    }
    assert named == {
        "office", "html", "redis", "postgres", "anthropic", "metrics", "view", "ag-ui", "traces",
        "s3",
    }  # fmt: skip
    everything = extras["all"][0]
    for extra in named:
        assert extra in extras and extra in everything
    assert "holodeck[all]" in extras["test"]


def test_init_enabling_a_type_says_which_extra_reading_it_needs(tmp_path: Path) -> None:
    """init enables the .docx it finds; without the office extra it says what to install,
    with it, nothing more."""
    import docx

    document = docx.Document()
    document.add_paragraph("The dashboard listens on port 8080.")
    root = tmp_path / "p"
    document.save(str(write(root / "docs" / "a.md", "# A\n\nText.\n").parent / "b.docx"))
    done = run_holodeck("init", cwd=root, env=without(tmp_path, "mammoth"), own_process=True)
    assert done.returncode == 0, done.stderr
    assert "Reading them needs pip install 'holodeck[office]' (not installed)" in done.stdout
    shutil.rmtree(root / ".holodeck")
    (root / "agent.yaml").unlink()
    done = run_holodeck("init", cwd=root, own_process=True)
    assert done.returncode == 0, done.stderr
    assert "Enabled .docx" in done.stdout and "pip install" not in done.stdout
