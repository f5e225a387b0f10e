"""``holodeck init``: the files a new project starts from, valid and passing on day one.

A copied example brings another product's name and test cases, so the first ``holodeck
test`` fails. Here the agent is named after the folder, its one knowledge base points at the
user's documents, and its one test case is made from those documents (a phrase of a file
that exists now must find that file), or, in an empty project, from a starter document
written next to it. Nothing is overwritten unless the caller says ``force``; every refusal
is decided before the first file is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

from holodeck.config.agent_file import AGENT_FILE
from holodeck.config.envsubst import literal
from holodeck.config.loader import DEFAULT_LOCAL_MODEL, PROJECT_CONFIG
from holodeck.errors import ConfigError

DEFAULT_SOURCE = "docs"
TOOL_NAME = "knowledge_base"
STARTER_FILE = "getting-started.md"
INDEX_IGNORE = ".holodeck/index/"
#: Files tried, in order, for the example test case (text first: it is cheapest to read).
_PREFERRED_SUFFIXES = (".md", ".txt", ".json", ".csv", ".pdf")
_MAX_CANDIDATES = 20
_MIN_WORDS, _GOOD_WORDS, _MAX_WORDS = 4, 8, 20

STARTER_TEXT = """\
# Getting started with this knowledge base

This folder holds the documents the agent searches. Replace this file with your own
documents: Markdown (.md), plain text (.txt), PDF (.pdf), CSV tables (.csv) and JSON (.json)
files are indexed, in subfolders too.

After adding or editing files run `holodeck ingest`: only what changed is processed. Keep
`holodeck ingest --watch` running to index every change as it is saved.

Ask the documents a question with `holodeck search "your question"`, check that they still
answer what they should with `holodeck test`, and give them to an MCP client (Claude Desktop,
Cursor, VS Code) with `holodeck serve`.
"""

STARTER_CASE_INPUT = "Which kinds of files does the knowledge base index?"

CONFIG_TEXT = """\
# Project settings for holodeck, shared by every agent file in this folder (a tool's own
# database: in agent.yaml wins over this file; this file wins over ~/.holodeck/config.yaml).
#
# Without a vectorstore: section the knowledge bases live in the embedded local index under
# .holodeck/index/ (no server, no key). To keep them in Redis (8, or Redis Stack: it needs
# the Query Engine) instead, uncomment and set REDIS_URL in the environment or in .env:
#
# vectorstore:
#   provider: redis
#   connection_string: ${REDIS_URL}   # redis://[user:password@]host:6379[/db], rediss:// for TLS
#   index_name: holodeck_vectors      # letters, digits, _ . - (one index can hold many agents)
#   vector_algorithm: HNSW            # HNSW (default) | FLAT
#   distance_metric: COSINE           # COSINE (default) | L2 | IP
"""


@dataclass
class ExampleCase:
    """The one test case written into agent.yaml, and where it came from."""

    name: str
    input: str
    expected_source: str  # relative to the tool's source
    expected_content: str | None = None
    origin: str = ""  # shown in the comment above the case


@dataclass
class InitResult:
    """What ``init_project`` did, for the command to report."""

    root: Path
    agent_name: str
    source: str
    created: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    gitignore: str = ""  # "created", "added" or "present"
    case: ExampleCase | None = None
    #: Opt-in file types found in the source and enabled in agent.yaml, with their counts.
    enabled_types: dict[str, int] = field(default_factory=dict)


def init_project(root: Path, source: str | None = None, force: bool = False) -> InitResult:
    """Write agent.yaml, .holodeck/config.yaml and the .gitignore entry in ``root``.

    ``source`` (relative to ``root``, or absolute) must exist when given; the default
    ``docs/`` is created with a starter document when missing. A folder with no documents
    gets the starter document too, so the first ingest has something to index.
    """
    root = root.expanduser().resolve()
    if root.exists() and not root.is_dir():
        raise ConfigError(f"{root}: not a folder (holodeck init DIR makes a project in DIR)")
    _check_writable(root, root / DEFAULT_SOURCE if source is None else None)
    agent_path = root / AGENT_FILE
    if agent_path.exists() and not force:
        raise ConfigError(
            f"{agent_path} already exists; `holodeck init --force` overwrites it "
            "(or edit it by hand)"
        )
    if source is None:
        source_path = root / DEFAULT_SOURCE
    else:
        source_path = Path(source).expanduser()
        source_path = source_path if source_path.is_absolute() else root / source_path
        if not source_path.exists():
            raise ConfigError(
                f"--source {source}: {source_path} does not exist "
                "(give an existing file or folder, or leave --source out to start with docs/)"
            )
    source_text = _relative_source(source_path, root)
    result = InitResult(root=root, agent_name=agent_name_for(root), source=source_text)

    root.mkdir(parents=True, exist_ok=True)
    with _undo_on_failure(root) as written:
        _write_all(result, root, source_path, force, written)
    return result


def _write_all(
    result: InitResult, root: Path, source_path: Path, force: bool, written: list[Path]
) -> None:
    """Write the starter document (when needed), agent.yaml, the config, the .gitignore
    entry; every file created is added to ``written`` (removed again if a later one fails)."""
    agent_path = root / AGENT_FILE
    source_text = result.source
    case = example_case(source_path) if source_path.exists() else None
    if case is None and source_path.is_file():
        from holodeck.ingest.discover import path_text

        # One file: every search answers from it, so any question of it finds it.
        name = path_text(source_path.name)  # its document id
        case = ExampleCase(
            name="finds-the-document",
            input=f"What does {name} say?",
            expected_source=name,
            origin=source_text,
        )
    if case is None:
        starter = source_path / STARTER_FILE
        if not starter.exists():
            if not source_path.exists():
                source_path.mkdir(parents=True)
                written.append(source_path)
            starter.write_text(STARTER_TEXT, encoding="utf-8")
            written.append(starter)
            result.created.append(_relative(starter, root))
        case = ExampleCase(
            name="starter-document",
            input=STARTER_CASE_INPUT,
            expected_source=STARTER_FILE,
            expected_content="PDF",
            origin=f"the starter document\n# {_relative(starter, root)}",
        )
    result.case = case

    shown = source_text + "/" if source_path.is_dir() and source_text != "." else source_text
    _write(result, root / PROJECT_CONFIG, CONFIG_TEXT, force, written)
    gitignore = root / ".gitignore"
    existed = gitignore.exists()
    result.gitignore = add_gitignore_entry(gitignore)
    if not existed:
        written.append(gitignore)
    # agent.yaml last: once it exists, `init` says "already exists", so it must be whole.
    result.enabled_types = opt_in_types(source_path) if source_path.exists() else {}
    text = agent_yaml(result.agent_name, shown, case, result.enabled_types)
    _write(result, agent_path, text, force, written)


def _check_writable(root: Path, default_source: Path | None) -> None:
    """Refuse, before anything is written, a project folder holding a file where init needs
    a folder (``.holodeck``, ``docs``) or a folder where it needs a file (``.gitignore``)."""
    for name, folder in ((".holodeck", root / ".holodeck"), (DEFAULT_SOURCE, default_source)):
        if folder is not None and folder.exists() and not folder.is_dir():
            raise ConfigError(
                f"{folder}: a file, not a folder; holodeck keeps "
                + (
                    "the project's settings, id and local index in .holodeck/"
                    if name == ".holodeck"
                    else "the starter document in docs/ (or give --source PATH)"
                )
                + "; rename or remove the file, then run `holodeck init` again (nothing was "
                "written)"
            )
    for name in (AGENT_FILE, str(PROJECT_CONFIG), ".gitignore"):
        if (root / name).is_dir():
            raise ConfigError(
                f"{root / name}: a folder, not a file; holodeck init writes {name} there; "
                "rename or remove the folder, then run `holodeck init` again (nothing was "
                "written)"
            )


@contextmanager
def _undo_on_failure(root: Path) -> Iterator[list[Path]]:
    """Yield a list to record what gets created; if writing fails (a full disk, no
    permission), remove it again and raise one ``ConfigError`` naming the path: init writes
    everything or nothing it created."""
    written: list[Path] = []
    try:
        yield written
    except OSError as exc:
        for path in reversed(written):
            with suppress(OSError):
                path.rmdir() if path.is_dir() else path.unlink()
        where = exc.filename or root
        raise ConfigError(
            f"{where}: cannot write ({exc.strerror or exc}); nothing was written: fix the "
            "folder's permissions or free space, then run `holodeck init` again"
        ) from None


def agent_name_for(root: Path) -> str:
    """The folder's name as an agent name (lower case, words joined by '-')."""
    slug = re.sub(r"[^a-z0-9_]+", "-", root.name.lower()).strip("-_")
    return slug or "agent"


def example_case(source: Path) -> ExampleCase | None:
    """A case true for the documents in ``source`` now: a phrase of a file finds the file.

    The phrase is the first line of several words of the first readable document (Markdown
    and text first); None when no document yields one (an empty folder, or only files
    that cannot be read as text).
    """
    from holodeck.ingest.convert import ConversionError, convert
    from holodeck.ingest.discover import discover
    from holodeck.ingest.frontmatter import split_front_matter

    files = discover(source).files  # lists only: skipped files are `holodeck ingest`'s to tell
    ranked = sorted(files, key=lambda f: (_suffix_rank(f.path), f.rel_path))
    for file in ranked[:_MAX_CANDIDATES]:
        try:
            text = convert(file).text
        except ConversionError:
            continue
        if file.path.suffix.lower() == ".md":
            try:
                _, text = split_front_matter(text, name=file.rel_path)
            except Exception:  # front matter it cannot parse: ingest warns about it, skip here
                continue
        phrase = _phrase(text)
        if phrase:
            stem = agent_name_for(Path(Path(file.rel_path).stem)) or "document"
            return ExampleCase(
                name=f"finds-{stem}",
                input=phrase,
                expected_source=file.rel_path,
                origin=f"a line of {file.rel_path}",
            )
    return None


def opt_in_types(source: Path) -> dict[str, int]:
    """The file types a tool reads only when asked (.docx .pptx .xlsx .html .htm .adoc) that
    ``source`` holds, with how many files of each, in the order of ``ALL_FILE_TYPES``."""
    from holodeck.config.file_types import ALL_FILE_TYPES, DEFAULT_FILE_TYPES
    from holodeck.ingest.discover import discover

    optional = [t for t in ALL_FILE_TYPES if t not in DEFAULT_FILE_TYPES]
    counts = {t: 0 for t in optional}
    for file in discover(source, optional).files:
        counts[file.path.suffix.lower()] += 1
    return {t: n for t, n in counts.items() if n}


def agent_yaml(
    name: str, where: str, case: ExampleCase, enabled: dict[str, int] | None = None
) -> str:
    """The text of a minimal, valid agent.yaml with comments that say what to change."""
    types = ""
    if enabled:
        from holodeck.config.file_types import DEFAULT_FILE_TYPES

        found = ", ".join(f"{n} {t}" for t, n in enabled.items())
        listed = ", ".join([*DEFAULT_FILE_TYPES, *enabled])
        types = (
            f"    # the default types, and those found in {where} when init ran ({found})\n"
            f"    file_types: [{listed}]\n"
        )
    content = (
        f"\n    expected_content: [{_quote(case.expected_content)}]"
        if case.expected_content
        else ""
    )
    return f"""\
# The agent: created by `holodeck init`. Relative paths resolve against this file's folder;
# ${{VAR}} and ${{VAR:-default}} are read from the environment and from .env next to it.
# Every field: `holodeck config schema`, or agent.yaml.example in HoloDeck's repository.
name: {_quote(name)}
description: {_quote(f"Answers questions from the documents in {where}")}

# An LLM for `holodeck chat` and `holodeck test` (optional). Without it they run in
# retrieval-only mode: each message is a search of the knowledge bases.
# model:
#   provider: openai              # openai | azure_openai | ollama
#   name: gpt-4o-mini             # model, or Azure deployment name
#   api_key: ${{OPENAI_API_KEY}}    # only as ${{VAR}}, never a literal key

tools:
  - type: vectorstore
    name: {TOOL_NAME}            # letters, digits, underscores: the name LLMs and MCP clients see
    description: {_quote(f"Search the documents in {where}")}
    source: {_quote(where)}
{types}    # The local model the index is built with; it stays when a model: is added above
    # (another one means re-embedding every document: `holodeck ingest --force-ingest`).
    embedding_model: {DEFAULT_LOCAL_MODEL}
    top_k: 5                        # results per search (1-100)

# Metrics that judge each case's answer (`holodeck test`), asked of a judge model. Uncomment
# with a model: above; standard ones need no judge (f1_score, equality, numeric; rouge and
# bleu with the metrics extra: pip install 'holodeck[metrics]').
# evaluations:
#   metrics:
#     - type: rag
#       metric_type: faithfulness     # each claim of the answer supported by the passages
#       threshold: 0.8

# Checks for `holodeck test` (exit code 0 when every case passes). This one was made from
# {case.origin}; replace it with questions your documents must answer.
test_cases:
  - name: {_quote(case.name)}
    input: {_quote(case.input)}
    expected_sources: [{_quote(case.expected_source)}]   # relative to the tool's source{content}
"""


def add_gitignore_entry(path: Path) -> str:
    """Make git ignore the local index; "created", "added" or "present" (already ignored)."""
    if not path.exists():
        path.write_text(_gitignore_block(), encoding="utf-8")
        return "created"
    text = path.read_text(encoding="utf-8", errors="replace")
    covered = {".holodeck", ".holodeck/*", ".holodeck/index", ".holodeck/index/*"}
    for line in text.splitlines():
        if line.strip().strip("/").rstrip("/") in covered or line.strip() in covered:
            return "present"
    separator = "" if not text or text.endswith("\n") else "\n"
    path.write_text(text + separator + "\n" + _gitignore_block(), encoding="utf-8")
    return "added"


def _gitignore_block() -> str:
    return f"# holodeck's local index, rebuilt by `holodeck ingest`\n{INDEX_IGNORE}\n"


def _write(result: InitResult, path: Path, text: str, force: bool, written: list[Path]) -> None:
    """Write a file unless it exists (then kept), or overwrite it with ``force``; a file or
    folder it creates goes into ``written``."""
    shown = _relative(path, result.root)
    if path.exists() and not force:
        result.kept.append(shown)
        return
    existed = path.exists()
    (result.overwritten if existed else result.created).append(shown)
    if not path.parent.exists():
        path.parent.mkdir(parents=True)
        written.append(path.parent)
    path.write_text(text, encoding="utf-8")
    if not existed:
        written.append(path)


def _phrase(text: str) -> str | None:
    """The first sentence of at least ``_GOOD_WORDS`` words (else the first line of
    ``_MIN_WORDS``), markup removed, at most ``_MAX_WORDS`` words."""
    fallback = None
    for raw in text.splitlines():
        line = re.sub(r"[`*_|>#\[\]]+", " ", raw)
        line = re.sub(r"^\s*(?:[-+]|\d+[.)])\s+", " ", line)
        for sentence in re.split(r"(?<=[.!?])\s+", line):
            words = [w for w in sentence.split() if any(c.isalnum() for c in w)]
            if len(words) >= _GOOD_WORDS:
                return " ".join(words[:_MAX_WORDS])
            if fallback is None and len(words) >= _MIN_WORDS:
                fallback = " ".join(words[:_MAX_WORDS])
    return fallback


def _suffix_rank(path: Path) -> int:
    suffix = path.suffix.lower()
    return _PREFERRED_SUFFIXES.index(suffix) if suffix in _PREFERRED_SUFFIXES else 99


def _relative_source(source: Path, root: Path) -> str:
    """The tool's ``source`` as written in agent.yaml: relative to the project when inside it."""
    try:
        rel = source.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(source.resolve())
    return rel if rel != "." else "."


def _relative(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _quote(value: str) -> str:
    """A YAML scalar for any string (JSON's double-quoted form is valid YAML) that loads back
    as written: a ``${`` in it (a folder named ``${TOKEN}docs``) is written ``$${``."""
    return json.dumps(literal(value), ensure_ascii=False)
