"""Runs test cases against an agent and its (initialized) knowledge bases.

With a ``model:`` each case is one fresh conversation turn of the agent loop; without one
(retrieval-only) the input is the query of the tools named in ``expected_tools`` (else of
every tool). Cases run concurrently up to ``parallel``. A case that raises, or runs past its
time limit (``case_timeout``), is an *error*, never a failure, and the others still run. A
run stopped half-way (Ctrl-C) still has the cases done so far (``partial``). Nothing is
printed here: the caller gets ``on_start`` and ``on_done`` callbacks and a ``SuiteResult``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from holodeck.agent.loop import Agent, ToolCallRecord
from holodeck.chat.snippets import passages
from holodeck.config.loader import Project
from holodeck.config.models import TestCase
from holodeck.evaluations.baseline import BaselineResult
from holodeck.evaluations.evaluator import Evaluator, MetricResult
from holodeck.evaluations.judge import Usage
from holodeck.redact import redact
from holodeck.testing import metrics
from holodeck.testing.checks import (
    Check,
    best_similarity,
    check_content,
    check_ground_truth,
    check_sources,
    check_tools,
    normalize_source,
    source_ranks,
)
from holodeck.tools.vectorstore_tool import VectorStoreTool

log = logging.getLogger("holodeck.testing")

Status = Literal["passed", "failed", "error"]
Mode = Literal["llm", "retrieval-only"]


@dataclass
class CaseResult:
    """Everything one case did and how it was judged."""

    index: int  # 1-based position among the cases run
    case: TestCase
    status: Status
    reason: str  # why it failed or errored ("" when it passed)
    checks: list[Check] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    answer: str | None = None  # the LLM's answer (None in retrieval-only mode)
    latency: float = 0.0  # seconds the agent turn (or the searches) took; up to an error
    seconds: float = 0.0  # the whole case, checks included
    source_ranks: dict[str, int | None] = field(default_factory=dict)
    rounds: int = 0
    error_type: str | None = None
    metrics: list[MetricResult] = field(default_factory=list)  # evaluations:, in order

    @property
    def ground_truth_score(self) -> float | None:
        """The similarity the ground_truth check measured, if it ran."""
        return next((c.score for c in self.checks if c.kind == "ground_truth"), None)

    @property
    def first_rank(self) -> int | None:
        """Best rank of any expected source (None: none retrieved or none expected)."""
        found = [r for r in self.source_ranks.values() if r is not None]
        return min(found) if found else None


@dataclass
class SuiteResult:
    """A whole run: the cases in their order, and the suite metrics."""

    agent_name: str
    agent_file: str
    mode: Mode
    model: str | None
    started_at: datetime
    seconds: float
    results: list[CaseResult]
    top_k: int | None  # the tools' top_k when they share one (the k of hit rate@k)
    judge: Usage = field(default_factory=Usage)  # what the evaluation judges cost
    judges: list[str] = field(default_factory=list)  # provider:name of each judge used
    baseline: BaselineResult | None = None  # set by the --baseline comparison
    not_run: int = 0  # cases left when the run was interrupted (Ctrl-C)

    def count(self, status: Status) -> int:
        """Cases with this status."""
        return sum(1 for r in self.results if r.status == status)

    @property
    def passed(self) -> int:
        """Cases that passed."""
        return self.count("passed")

    @property
    def failed(self) -> int:
        """Cases with a failing check."""
        return self.count("failed")

    @property
    def errors(self) -> int:
        """Cases that could not run to the end."""
        return self.count("error")

    @property
    def pass_rate(self) -> float | None:
        """Passed over all cases run."""
        return metrics.pass_rate(self.passed, len(self.results))

    @property
    def retrieval(self) -> metrics.RetrievalMetrics:
        """Hit rate, MRR and recall over the cases with expected_sources that ran."""
        ranked = [
            list(r.source_ranks.values())
            for r in self.results
            if r.status != "error" and r.case.expected_sources
        ]
        return metrics.retrieval_metrics(ranked)

    def latency(self, q: float) -> float | None:
        """Percentile ``q`` of the latency of the cases that ran without an error."""
        return metrics.percentile([r.latency for r in self.results if r.status != "error"], q)

    @property
    def exit_code(self) -> int:
        """130 when interrupted, 3 when a case errored (runtime failure), else 1 when one
        failed, else 0."""
        if self.not_run:
            return 130
        if self.errors:
            return 3
        return 1 if self.failed else 0


CaseCallback = Callable[[int, TestCase], None]
DoneCallback = Callable[[CaseResult], None]

#: Seconds a case may take (the agent turn or the searches, then the checks) by default.
DEFAULT_CASE_TIMEOUT = 300.0


class TestRunner:
    """Runs cases for one project; build it before ingesting so config errors come first."""

    __test__ = False  # not a pytest class

    def __init__(
        self,
        project: Project,
        tools: list[VectorStoreTool],
        parallel: int = 1,
        on_start: CaseCallback | None = None,
        on_done: DoneCallback | None = None,
        use_cache: bool = True,
        case_timeout: float = DEFAULT_CASE_TIMEOUT,
    ) -> None:
        if parallel < 1:
            raise ValueError("parallel must be at least 1")
        self.project = project
        self.tools = tools
        self.parallel = parallel
        self.on_start = on_start
        self.on_done = on_done
        self.case_timeout = case_timeout
        #: Cases finished so far, in the order they finished (what an interrupted run has).
        self.done: list[CaseResult] = []
        self._started_at = datetime.now(UTC)
        self._started = time.perf_counter()
        self._by_name = {tool.name: tool for tool in tools}
        self.evaluator = Evaluator(project, use_cache)
        # Building the agent resolves endpoint and key now: a ConfigError before any work.
        self._agent: Agent | None = (
            Agent.from_project(project, tools) if project.agent.model is not None else None
        )

    @property
    def mode(self) -> Mode:
        """``llm`` with a model, else ``retrieval-only``."""
        return "retrieval-only" if self._agent is None else "llm"

    async def run(self, cases: list[TestCase]) -> SuiteResult:
        """Run ``cases`` (at most ``parallel`` at a time); results keep the cases' order."""
        self._started_at = datetime.now(UTC)
        self._started = time.perf_counter()
        self.done = []
        gate = asyncio.Semaphore(self.parallel)

        async def one(index: int, case: TestCase) -> CaseResult:
            async with gate:
                if self.on_start:
                    self.on_start(index, case)
                result = await self.run_case(index, case)
                self.done.append(result)
                if self.on_done:
                    self.on_done(result)
                return result

        try:
            await asyncio.to_thread(self._warm_up)
            results = await asyncio.gather(*(one(i, case) for i, case in enumerate(cases, start=1)))
        finally:
            if self._agent is not None:
                await self._agent.close()
            await self.evaluator.close()
        return self._suite(list(results))

    def partial(self, total: int) -> SuiteResult:
        """The cases done so far of a run of ``total`` that was interrupted, in case order."""
        done = sorted(self.done, key=lambda r: r.index)
        return self._suite(done, not_run=total - len(done))

    def _suite(self, results: list[CaseResult], not_run: int = 0) -> SuiteResult:
        top_ks = {tool.resolved.config.top_k for tool in self.tools}
        model = self.project.agent.model
        return SuiteResult(
            agent_name=self.project.agent.name,
            agent_file=self.project.display(self.project.agent_path),
            mode=self.mode,
            model=f"{model.provider}:{model.name}" if model else None,
            started_at=self._started_at,
            seconds=time.perf_counter() - self._started,
            results=results,
            top_k=top_ks.pop() if len(top_ks) == 1 else None,
            judge=self.evaluator.usage,
            judges=self.evaluator.judges,
            not_run=not_run,
        )

    def _warm_up(self) -> None:
        """Load each embedding model now, so the first case's latency is not the model's load.

        A failure here is left to the cases: each then errors with the reason, and the
        reports still get written.
        """
        seen: set[int] = set()
        for tool in self.tools:
            try:
                embedder = tool.embedder
                if id(embedder) not in seen:
                    seen.add(id(embedder))
                    embedder.embed(["warm-up"])
            except Exception:
                log.debug("warming up the embedder of %s failed", tool.name, exc_info=True)

    async def run_case(self, index: int, case: TestCase) -> CaseResult:
        """One case; any exception, or running past ``case_timeout``, makes it an error with
        one line saying why."""
        started = time.perf_counter()
        result = CaseResult(index=index, case=case, status="passed", reason="")
        try:
            try:
                await asyncio.wait_for(self._produce_and_check(case, result), self.case_timeout)
            except TimeoutError:
                raise CaseTimeout(
                    f"the case took longer than {self.case_timeout:g} s and was stopped "
                    "(raise the limit with `holodeck test --timeout SECONDS`)"
                ) from None
        except Exception as exc:
            log.debug("test case %r errored", case.name, exc_info=True)  # -v: the traceback
            result.latency = result.latency or time.perf_counter() - started
            result.status = "error"
            result.error_type = type(exc).__name__
            result.reason = redact(f"{type(exc).__name__}: {exc}")
        else:
            broken = [m for m in result.metrics if m.status == "error" and m.fail_on_error]
            failed = [c.line() for c in result.checks if not c.passed]
            failed += [m.line() for m in result.metrics if m.status == "failed"]
            if broken:  # the judge could not judge: a runtime failure, not the agent's
                result.status = "error"
                result.error_type = "MetricError"
                result.reason = "; ".join(m.line() for m in broken)
            elif failed:
                result.status = "failed"
                result.reason = "; ".join(failed)
        result.seconds = time.perf_counter() - started
        return result

    async def _produce_and_check(self, case: TestCase, result: CaseResult) -> None:
        if self._agent is None:
            await self._retrieve(case, result)
        else:
            await self._converse(case, result)
        await asyncio.to_thread(self._check, case, result)
        result.metrics = await self.evaluator.evaluate(case, result.answer, result.tool_calls)

    # -- producing: searches or an agent turn ------------------------------------------

    def _searched_tools(self, case: TestCase) -> list[VectorStoreTool]:
        """Retrieval-only: the tools named in expected_tools (each once), else every tool."""
        names = list(dict.fromkeys(t.name for t in case.expected_tools or []))
        return [self._by_name[n] for n in names] if names else list(self.tools)

    async def _retrieve(self, case: TestCase, result: CaseResult) -> None:
        """The input as the query of each tool, concurrently."""
        started = time.perf_counter()
        result.tool_calls = list(
            await asyncio.gather(*(_search(t, case.input) for t in self._searched_tools(case)))
        )
        result.latency = time.perf_counter() - started

    async def _converse(self, case: TestCase, result: CaseResult) -> None:
        """One turn of a fresh agent (its own conversation, so cases never see each other)."""
        agent = Agent.from_project(self.project, self.tools)
        try:
            turn = await agent.run_turn(case.input)
        finally:
            await agent.close()
        result.answer = turn.answer
        result.tool_calls = list(turn.tool_calls)
        result.rounds = turn.rounds
        result.latency = turn.seconds
        if turn.notice:
            log.warning("Test case %s: %s", case.name, turn.notice)
        broken = [c for c in turn.tool_calls if self._failed_to_run(c)]
        if broken:
            # The model asked properly but the search itself failed (Redis lost, embedder
            # down): a runtime error, not the agent's mistake.
            raise ToolFailure(f"{broken[0].tool} failed: {broken[0].error}")

    def _failed_to_run(self, call: ToolCallRecord) -> bool:
        """An error on a well-formed call of a real tool came from the search, not the model."""
        return (
            call.error is not None
            and call.tool in self._by_name
            and isinstance(call.query, str)
            and bool(call.query.strip())
        )

    # -- judging -----------------------------------------------------------------------

    def _check(self, case: TestCase, result: CaseResult) -> None:
        """Run the case's checks on what it produced (blocking: it may embed)."""
        calls = result.tool_calls
        llm = result.answer is not None
        checks: list[Check] = []
        if case.expected_tools:
            checks.append(check_tools(case.expected_tools, calls))
        if case.expected_sources:
            result.source_ranks = source_ranks(case.expected_sources, calls)
            checks.append(check_sources(result.source_ranks, calls, self._exists))
        chunks = [r.content for call in calls for r in call.results]
        if case.expected_content:
            if llm:
                checks.append(
                    check_content(case.expected_content, result.answer or "", "the answer")
                )
            else:
                text = "\n\n".join(chunks)
                checks.append(check_content(case.expected_content, text, "the retrieved chunks"))
        if case.ground_truth:
            threshold = case.ground_truth_threshold
            if threshold is None:
                threshold = self.project.agent.ground_truth_threshold
            embedder = self._ground_truth_tool(case, calls).embedder
            if llm:
                answer = (result.answer or "").strip()
                score = best_similarity(embedder, case.ground_truth, [answer] if answer else [])
                against = "the answer" if answer else "the answer is empty"
            else:
                found = passages("\n\n".join(chunks))
                score = best_similarity(embedder, case.ground_truth, found)
                against = "best passage of the retrieved chunks" if found else "nothing retrieved"
            checks.append(check_ground_truth(score, threshold, against))
        result.checks = checks

    def _ground_truth_tool(self, case: TestCase, calls: list[ToolCallRecord]) -> VectorStoreTool:
        """Whose embedder compares texts: the first expected tool, else the first called."""
        for name in [t.name for t in case.expected_tools or []] + [c.tool for c in calls]:
            if name in self._by_name:
                return self._by_name[name]
        if not self.tools:
            raise ToolFailure(
                "ground_truth needs a vectorstore tool's embedder; none is configured"
            )
        return self.tools[0]

    def _exists(self, source: str) -> bool:
        """Whether an expected source names a file under the root or a tool's source."""
        rel = normalize_source(source)
        bases = [self.project.root, *(tool.resolved.source for tool in self.tools)]
        return any((base / rel).is_file() for base in bases)


class ToolFailure(RuntimeError):
    """A search failed while a case ran: the case is an error, not a failure."""


class CaseTimeout(RuntimeError):
    """A case ran past its time limit: an error, and the run goes on with the next."""


async def _search(tool: VectorStoreTool, query: str) -> ToolCallRecord:
    """One search recorded like an agent's tool call (id "": no model asked for it)."""
    started = time.perf_counter()
    results, total = await asyncio.to_thread(tool.find, query)
    output = tool.render(query, results, total)
    return ToolCallRecord(
        id="",
        tool=tool.name,
        arguments={"query": query},
        query=query,
        output=output,
        results=results,
        error=None,
        seconds=time.perf_counter() - started,
    )
