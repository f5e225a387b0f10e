"""``holodeck test``: run the test cases and tell CI, by exit code and reports, what broke.

Exit codes: 0 every case passed, 1 a case failed, 2 a configuration mistake, 3 a case errored
(or ran past ``--timeout``) or ingestion failed (or another ingest did not finish within
``HOLODECK_LOCK_TIMEOUT``: cases are never judged on a half-built index), 130 interrupted
(Ctrl-C: the cases done so far are still shown and written to the reports). Live lines, the
table and the summary go to stdout; ingestion progress goes to stderr like every other
command's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.status import Status
from rich.table import Table
from rich.text import Text

from holodeck.cli.interrupts import run_interruptible
from holodeck.cli.options import FiniteRange, agent_argument, agent_option, agent_path
from holodeck.cli.progress import ingest_tools
from holodeck.config.cases import TestCase
from holodeck.config.loader import load_project
from holodeck.console import make_console
from holodeck.errors import ConfigError, IngestRunning
from holodeck.evaluations import score_text
from holodeck.testing.baseline import DEFAULT_MAX_DROP, BaselineCheck, load_baseline
from holodeck.testing.cases import load_cases, select_cases
from holodeck.testing.history import record_run
from holodeck.testing.outcomes import CaseResult, SuiteResult
from holodeck.testing.report_markdown import baseline_line, judge_usage
from holodeck.testing.reports import (
    FORMATS,
    report_format,
    suite_dict,
    write_junit,
    write_report,
)
from holodeck.testing.runner import DEFAULT_CASE_TIMEOUT, TestRunner
from holodeck.tools.callables import CallableTool
from holodeck.tools.function_tool import load_function_tools
from holodeck.tools.initialize import agent_functions
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools

_LABEL = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}
_STYLE = {"passed": "green", "failed": "red", "error": "bold red"}
_METRIC_LABEL = {**_LABEL, "skipped": "skipped"}
_METRIC_STYLE = {**_STYLE, "skipped": "dim"}
_NAME_WIDTH = 40
#: The most of a reason a line in a pipe shows (the reports keep it whole).
_REASON_CHARS = 100


class _TestCommand(click.Command):
    """Also answers to ``holodeck test run [AGENT]``, as the original HoloDeck's CI scripts
    call it (unless a file named ``run`` is the agent file meant), and to ``holodeck test
    view`` (``holodeck.cli.test_view_cmd``), the original's page of the run history."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] == "run" and not Path("run").is_file():
            args = args[1:]
        if args and args[0] == "view" and not Path("view").is_file():
            from holodeck.cli.test_view_cmd import view

            code = view.main(
                args[1:], prog_name="holodeck test view", standalone_mode=False, obj=ctx.obj
            )
            ctx.exit(code if isinstance(code, int) else 0)
        return super().parse_args(ctx, args)


@click.command("test", cls=_TestCommand)
@agent_argument
@agent_option
@click.option("--force-ingest", is_flag=True, help="Re-ingest every file before testing.")
@click.option(
    "-k",
    "keywords",
    multiple=True,
    metavar="PATTERN",
    help="Only cases whose name contains PATTERN (or matches it as a glob); repeatable.",
)
@click.option(
    "--limit", type=click.IntRange(min=1), default=None, metavar="N", help="Run the first N cases."
)
@click.option(
    "--parallel",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    metavar="N",
    help="Run N cases at once.",
)
@click.option(
    "--timeout",
    "case_timeout",
    type=FiniteRange(min=1, max=86400),
    default=DEFAULT_CASE_TIMEOUT,
    show_default=True,
    metavar="SECONDS",
    help="Time limit of each case; past it the case is an error and the run goes on.",
)
@click.option(
    "--report",
    "report_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write a report: .json or .md (Markdown).",
)
@click.option(
    "--format",
    "report_fmt",
    type=click.Choice(sorted(FORMATS), case_sensitive=False),
    default=None,
    help="Report format, whatever the extension.",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write JUnit XML for CI.",
)
@click.option(
    "--baseline",
    "baseline_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A JSON report of an earlier run: fail a case that passed there when one of its "
    "scores dropped by more than --max-drop.",
)
@click.option(
    "--max-drop",
    type=FiniteRange(min=0.0, max=1.0),
    default=DEFAULT_MAX_DROP,
    show_default=True,
    help="How far a score may drop below the baseline's.",
)
@click.option(
    "--no-cache", is_flag=True, help="Ask the judge again instead of reusing cached replies."
)
@click.option(
    "--no-history",
    is_flag=True,
    help="Do not keep this run in results/<agent>/<time>.json next to agent.yaml.",
)
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print the whole run (cases, checks, metrics, verdict) as JSON on stdout; the "
    "lines go to stderr.",
)
@click.pass_context
def test(
    ctx: click.Context,
    agent_arg: str | None,
    agent_opt: str | None,
    force_ingest: bool,
    keywords: tuple[str, ...],
    limit: int | None,
    parallel: int,
    case_timeout: float,
    report_path: Path | None,
    report_fmt: str | None,
    junit_path: Path | None,
    baseline_path: Path | None,
    max_drop: float,
    no_cache: bool,
    no_history: bool,
    as_json: bool,
) -> None:
    """Run the agent's test cases (ingesting whatever changed first).

    An ingest another process is running is waited for (at most HOLODECK_LOCK_TIMEOUT
    seconds): cases are never judged on a half-built index.

    Exit codes: 0 all passed, 1 a case failed, 2 a configuration mistake, 3 a case errored
    (LLM unreachable, Redis lost, past --timeout) or ingestion failed or did not finish in
    time, 130 interrupted (Ctrl-C: the cases done so far are reported).
    """
    if report_fmt and report_path is None:
        raise click.UsageError("--format needs --report PATH")
    project = load_project(agent_path(agent_opt, agent_arg), calls_model=True)
    cases = select_cases(load_cases(project), keywords, limit)
    fmt = report_format(report_path, report_fmt) if report_path else None
    baseline = (
        BaselineCheck(load_baseline(baseline_path), str(baseline_path), max_drop)
        if baseline_path
        else None
    )
    tools = build_tools(project)
    if not tools and project.agent.model is None:
        raise ConfigError(
            f"{project.display(project.agent_path)}: no vectorstore tools and no model: there "
            "is nothing to test; add a tool to tools: (or a model:)"
        )
    quiet = bool(ctx.obj.get("quiet"))
    console = make_console(highlight=False, soft_wrap=True, stderr=as_json)
    out = _Output(console, cases, quiet, baseline)
    try:
        runner = TestRunner(
            project,
            tools,
            parallel,
            on_start=out.started,
            on_done=out.done,
            use_cache=not no_cache,
            case_timeout=case_timeout,
        )
        runner.evaluator.prepare(cases)  # a judge without a key: exit 2 before any work
        # Function tools are imported now: a missing function is exit 2 before any ingest.
        functions = load_function_tools(project) if runner.mode == "llm" else []
        _ingest_whole(tools, force_ingest, quiet)
        out.header(runner.mode, project.agent.model.name if project.agent.model else None)
        try:
            with out.spinner():
                suite = run_interruptible(_run(runner, cases, functions))
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: what ran is still reported, exit 130
            suite = runner.partial(len(cases))
    finally:
        for tool in tools:
            tool.close()
    if baseline is not None:  # each case was compared as it ended (``_Output.done``)
        suite.baseline = baseline.outcome
    out.metrics(suite)
    out.summary(suite)
    if report_path is not None and fmt is not None:
        write_report(suite, report_path, fmt)
        out.note(f"Report: {report_path}")
    if junit_path is not None:
        write_junit(suite, junit_path)
        out.note(f"JUnit: {junit_path}")
    if not no_history:
        kept = record_run(project, suite)
        if kept is not None:
            out.note(f"History: {project.display(kept)}")
    if as_json:
        click.echo(json.dumps(suite_dict(suite), indent=2))
    ctx.exit(suite.exit_code)


def _ingest_whole(tools: list[VectorStoreTool], force: bool, quiet: bool) -> None:
    """Bring every knowledge base in step before a case is judged; an ingest another process
    is running is waited for (with a line saying so), since cases judged on a half-built
    index fail for files not in yet; past HOLODECK_LOCK_TIMEOUT nothing is run (exit 3)."""
    try:
        ingest_tools(tools, force, quiet, wait=True)
    except IngestRunning as exc:
        raise IngestRunning(
            f"{exc}; no case was run (on a half-built index they fail for files not in yet): "
            "run holodeck test once it is done, or set HOLODECK_LOCK_TIMEOUT to wait longer"
        ) from None


async def _run(
    runner: TestRunner, cases: list[TestCase], functions: list[CallableTool]
) -> SuiteResult:
    """The cases, with the MCP servers running for as long as they run."""
    if runner.mode != "llm":
        return await runner.run(cases)
    async with agent_functions(runner.project, functions, _warn) as offered:
        runner.offer(offered)
        return await runner.run(cases)


def _warn(line: str) -> None:
    logging.getLogger("holodeck.testing").warning("%s", line)


class _Output:
    """What a person (or a CI log) sees while and after the cases run: on a terminal, tables;
    in a pipe or a file, one line per case and per metric, reasons shortened (the reports
    keep them whole)."""

    def __init__(
        self,
        console: Console,
        cases: list[TestCase],
        quiet: bool,
        baseline: BaselineCheck | None = None,
    ) -> None:
        self.console = console
        self.quiet = quiet
        self.baseline = baseline
        self.compact = not console.is_terminal
        self.total = len(cases)
        self.width = min(_NAME_WIDTH, max(len(c.name) for c in cases))
        self.running: dict[int, str] = {}
        self.finished = 0
        self.status: Status | None = None

    def header(self, mode: str, model: str | None) -> None:
        if self.quiet:
            return
        how = f"with {model}" if model else "retrieval-only: agent.yaml has no model"
        self.console.print(f"Running {_plural(self.total, 'test case')} ({how})")

    @contextmanager
    def spinner(self) -> Iterator[None]:
        """A spinner naming the running cases, on a terminal only (CI logs get lines)."""
        if not self.console.is_terminal or self.quiet:
            yield
            return
        with self.console.status("starting", spinner="dots") as status:
            self.status = status
            try:
                yield
            finally:
                self.status = None

    def started(self, index: int, case: TestCase) -> None:
        self.running[index] = case.name
        self._refresh()

    def done(self, result: CaseResult) -> None:
        if self.baseline is not None:  # before its line: the line is the case's verdict
            self.baseline.apply(result)
        self.running.pop(result.index, None)
        self.finished += 1
        self._refresh()
        if self.quiet and result.status == "passed":
            return
        line = Text()
        line.append(f"{_LABEL[result.status]:<5}", style=_STYLE[result.status])
        line.append(f" {_clip(result.case.name, self.width):<{self.width}}")
        line.append(f" {result.latency:6.2f} s")
        if _measures(result):
            line.append(f"  {_measures(result)}")
        if result.reason:
            reason = _short(result.reason) if self.compact else result.reason
            line.append(f"  {reason}", style=None if result.status == "passed" else "dim")
        self.console.print(line)

    def _refresh(self) -> None:
        if self.status is None:
            return
        names = ", ".join(self.running.values())
        self.status.update(f"[{self.finished}/{self.total}] running {names}")

    def summary(self, suite: SuiteResult) -> None:
        if suite.not_run:
            self.console.print(
                Text(
                    f"Interrupted: {_plural(len(suite.results), 'case')} of "
                    f"{len(suite.results) + suite.not_run} ran, {suite.not_run} did not",
                    style="bold red",
                )
            )
        rate = (suite.pass_rate or 0.0) * 100
        style = "green" if suite.exit_code == 0 else "red"
        self.console.print(
            Text(
                f"{_plural(len(suite.results), 'case')}: {suite.passed} passed, "
                f"{suite.failed} failed, {_plural(suite.errors, 'error')} "
                f"(pass rate {rate:.1f}%) in {suite.seconds:.2f} s",
                style=style,
            )
        )
        retrieval = suite.retrieval
        if retrieval.cases:
            k = suite.top_k or "top_k"
            self.console.print(
                f"Retrieval over {_plural(retrieval.cases, 'case')} with expected_sources: "
                f"hit rate@{k} {_fmt(retrieval.hit_rate)}, MRR {_fmt(retrieval.mrr)}, "
                f"recall {_fmt(retrieval.recall)}"
            )
        p50, p95 = suite.latency(50), suite.latency(95)
        if p50 is not None and p95 is not None:
            self.console.print(f"Latency: p50 {p50:.2f} s, p95 {p95:.2f} s")
        data = suite_dict(suite)
        if suite.judges:
            self.console.print(f"Judge {', '.join(suite.judges)}: {judge_usage(data['judge'])}")
        if data["baseline"]:
            b = data["baseline"]
            self.console.print(Text(baseline_line(b), style="red" if b["regressions"] else "green"))
            for r in b["regressions"]:
                self.console.print(
                    f"  {r['case']}: {r['metric']} {score_text(r['before'])} -> "
                    f"{score_text(r['after'])}"
                )

    def metrics(self, suite: SuiteResult) -> None:
        """Each case's evaluation metrics: score, threshold, result and the judge's reason."""
        rows = [(r, m) for r in suite.results for m in r.metrics]
        if self.quiet or not rows:
            return
        if self.compact:
            self.console.print("Evaluations:")
            for r, m in rows:
                score = "-" if m.score is None else score_text(m.score)
                limit = "" if m.threshold is None else f" (threshold {score_text(m.threshold)})"
                line = f"  {r.case.name}: {m.name} {score}{limit} {_METRIC_LABEL[m.status]}"
                self.console.print(
                    line + (f": {_short(m.reason)}" if m.reason else ""), markup=False
                )
            return
        table = Table(title="Evaluations", title_justify="left")
        for name, justify in (
            ("case", "left"),
            ("metric", "left"),
            ("score", "right"),
            ("threshold", "right"),
            ("result", "left"),
            ("reason", "left"),
        ):
            table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
        for r, m in rows:
            table.add_row(
                r.case.name,
                m.name,
                "-" if m.score is None else score_text(m.score),
                "-" if m.threshold is None else score_text(m.threshold),
                Text(_METRIC_LABEL[m.status], style=_METRIC_STYLE[m.status]),
                m.reason,
            )
        self.console.print(table)

    def note(self, text: str) -> None:
        if not self.quiet:
            self.console.print(text)


def _measures(result: CaseResult) -> str:
    """What a case's line says besides its verdict: the best rank of an expected source, the
    ground_truth similarity, the failing checks (each case is printed once: this line)."""
    cells = []
    if result.case.expected_sources:
        cells.append(f"rank {result.first_rank if result.first_rank is not None else '-'}")
    if result.ground_truth_score is not None:
        cells.append(f"gt sim {score_text(result.ground_truth_score)}")
    if _failed_checks(result):
        cells.append(f"failed: {_failed_checks(result)}")
    return ", ".join(cells)


def _failed_checks(result: CaseResult) -> str:
    """The table's short reason: the failing checks, or the error's type (lines say more)."""
    if result.status == "error":
        return f"error: {result.error_type}"
    failed = [c.kind.removeprefix("expected_") for c in result.checks if not c.passed]
    failed += [m.name for m in result.metrics if m.status == "failed"]
    return ", ".join(failed)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _fmt(value: float | None) -> str:
    return "-" if value is None else score_text(value)


def _short(reason: str) -> str:
    """A reason on one line of a CI log: whitespace folded, cut at ``_REASON_CHARS``."""
    return _clip(" ".join(reason.split()), _REASON_CHARS)
