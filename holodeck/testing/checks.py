"""The checks of one test case, each a pass or a fail with the reason a person reads in CI.

Plain functions of what a case produced (tool calls, retrieved chunks, the answer); only the
ground_truth check needs a model, and it gets the tool's embedder handed in.

- ``expected_tools``: every named tool was called; with ``args``, one call of that tool
  passes every argument check (substring, case-insensitive, or ``regex``).
- ``expected_sources``: every file is among the results of some call, matched against the
  result's path relative to the project root or to the tool's source.
- ``expected_content``: every substring is in the text checked (case and runs of
  whitespace ignored): the retrieved chunks, or the answer when an LLM answers.
- ``response_format``: an LLM's answer is JSON that fits the agent's schema (the path of
  the first bad field when not; ``holodeck.agent.structured``).
- ``ground_truth``: cosine similarity of the embedded ground truth and the answer (LLM), or
  the best similarity with any passage (sentence, list item, table row) of the retrieved
  chunks (retrieval-only), at least the threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from holodeck.agent.loop import ToolCallRecord
from holodeck.config.cases import ExpectedTool
from holodeck.embeddings.base import Embedder
from holodeck.evaluations import score_text

#: How many retrieved sources a failure reason lists.
SHOWN_SOURCES = 5


@dataclass
class Check:
    """The outcome of one kind of check on one case."""

    kind: str  # expected_tools | expected_sources | expected_content | ground_truth |
    # response_format
    passed: bool
    detail: str
    score: float | None = None
    threshold: float | None = None

    def line(self) -> str:
        """``kind: detail``, as reasons and reports show it."""
        return f"{self.kind}: {self.detail}"


def check_tools(expected: Sequence[ExpectedTool], calls: Sequence[ToolCallRecord]) -> Check:
    """Every expected tool was called (``count`` times at least), with arguments that pass
    its ``args`` checks. An MCP server's tool answers to ``<server>__<tool>``, to the
    server's name and to the tool's own name."""
    problems: list[str] = []
    for want in expected:
        made = [c for c in calls if want.name == c.tool or want.name in c.aliases]
        if not made:
            problems.append(f"{want.name} was not called")
            continue
        passing = [
            call
            for call in made
            if all(
                match.matches(call.arguments.get(arg)) for arg, match in (want.args or {}).items()
            )
        ]
        if len(passing) >= want.count:
            continue
        if not want.args:
            problems.append(f"{want.name} was called {len(passing)} times, not {want.count}")
            continue
        wanted = " and ".join(f"{arg} {m.describe()}" for arg, m in want.args.items())
        if want.count == 1:
            problems.append(f"no {want.name} call with {wanted}")
        else:
            problems.append(f"{len(passing)} {want.name} calls with {wanted}, not {want.count}")
    if problems:
        return Check("expected_tools", False, "; ".join(problems) + f" ({describe_calls(calls)})")
    return Check("expected_tools", True, describe_calls(calls))


def describe_calls(calls: Sequence[ToolCallRecord]) -> str:
    """``calls: kb(query='...'), ...`` or ``no tool was called``."""
    if not calls:
        return "no tool was called"
    shown = ", ".join(_call(c) for c in calls)
    return f"calls: {shown}"


def _call(call: ToolCallRecord) -> str:
    """``kb(query='...')`` for a search, ``subtract(a=5120, b=4800)`` for any other call."""
    if call.kind == "search":
        return f"{call.tool}(query={_short(call.query or '')!r})"
    arguments = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    return f"{call.tool}({_short(arguments)})"


def source_forms(path: str) -> tuple[str, ...]:
    """What a source written in a case may name, as POSIX paths without a leading ``./``:
    the text as written (odd names escaped as holodeck shows them, docs/ingestion.md) and,
    when it holds backslashes, the same with them read as Windows separators."""
    forms = []
    for form in dict.fromkeys((path.strip(), path.strip().replace("\\", "/"))):
        while form.startswith("./"):
            form = form[2:]
        forms.append(form)
    return tuple(forms)


def source_ranks(expected: Sequence[str], calls: Sequence[ToolCallRecord]) -> dict[str, int | None]:
    """The best rank each expected source reached in any call (None: not retrieved)."""
    ranks: dict[str, int | None] = {}
    for source in expected:
        want = source_forms(source)
        found = [
            r.rank
            for call in calls
            for r in call.results
            if r.source_path in want or r.doc_id in want
        ]
        ranks[source] = min(found) if found else None
    return ranks


def check_sources(
    ranks: dict[str, int | None],
    calls: Sequence[ToolCallRecord],
    exists: Callable[[str], bool],
) -> Check:
    """Every expected source was retrieved; a missing one says whether the file exists."""
    missing = [s for s, r in ranks.items() if r is None]
    if not missing:
        found = ", ".join(f"{s} at rank {r}" for s, r in ranks.items())
        return Check("expected_sources", True, found)
    named = ", ".join(s if exists(s) else f"{s} (no such file)" for s in missing)
    retrieved = _retrieved_sources(calls)
    got = f"retrieved: {', '.join(retrieved)}" if retrieved else "nothing was retrieved"
    return Check("expected_sources", False, f"not retrieved: {named}; {got}")


def _retrieved_sources(calls: Sequence[ToolCallRecord]) -> list[str]:
    """Distinct retrieved files, best rank first, for a failure reason."""
    best: dict[str, int] = {}
    for call in calls:
        for r in call.results:
            best[r.source_path] = min(r.rank, best.get(r.source_path, r.rank))
    ordered = sorted(best, key=lambda s: best[s])
    shown = [f"{s} (#{best[s]})" for s in ordered[:SHOWN_SOURCES]]
    if len(ordered) > SHOWN_SOURCES:
        shown.append(f"{len(ordered) - SHOWN_SOURCES} more")
    return shown


def check_content(expected: Sequence[str], text: str, where: str) -> Check:
    """Every substring appears in ``text`` (case and whitespace runs ignored)."""
    haystack = _fold(text)
    missing = [s for s in expected if _fold(s) not in haystack]
    if missing:
        shown = ", ".join(repr(s) for s in missing)
        return Check("expected_content", False, f"not in {where}: {shown}")
    return Check("expected_content", True, f"{len(expected)} found in {where}")


def check_ground_truth(score: float, threshold: float, against: str) -> Check:
    """Similarity at least ``threshold``; the score is reported either way."""
    passed = score >= threshold
    sign = ">=" if passed else "<"
    detail = f"similarity {score_text(score)} {sign} {score_text(threshold)} ({against})"
    return Check("ground_truth", passed, detail, score=score, threshold=threshold)


def best_similarity(embedder: Embedder, ground_truth: str, texts: Sequence[str]) -> float:
    """Highest cosine similarity of ``ground_truth`` with any of ``texts`` (0 for none)."""
    if not texts:
        return 0.0
    vectors = np.asarray(embedder.embed([ground_truth, *texts]), dtype=np.float32)
    return float(np.max(vectors[1:] @ vectors[0]))


def _fold(text: str) -> str:
    return " ".join(text.casefold().split())


def _short(text: str, limit: int = 80) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
