"""Runs test cases against an agent and its (initialized) knowledge bases.

With a ``model:`` each case is one fresh conversation of the agent loop: one turn, or its
``turns`` in order, the conversation carried from one to the next and each turn checked (the
case passes when every turn does). Without one (retrieval-only) each input is the query of
the tools named in ``expected_tools`` (else of every tool). Cases run concurrently up to
``parallel``. A case that raises, or runs past its time limit (``case_timeout``), is an
*error*, never a failure (the turns after the one that raised are not run), and the others
still run. A run stopped half-way (Ctrl-C) still has the cases done so far (``partial``).
Nothing is printed here: the caller gets ``on_start`` and ``on_done`` callbacks and a
``SuiteResult``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from datetime import UTC, datetime

from holodeck import tracing
from holodeck.agent.loop import Agent, ToolCallRecord
from holodeck.agent.structured import violation
from holodeck.config.cases import TestCase, Turn
from holodeck.config.loader import Project
from holodeck.embeddings.base import Embedder
from holodeck.embeddings.factory import make_local_embedder
from holodeck.errors import ConfigError
from holodeck.evaluations.evaluator import Evaluator
from holodeck.ingest.discover import text_path
from holodeck.redact import redact
from holodeck.results import pieces
from holodeck.testing.checks import (
    Check,
    best_similarity,
    check_content,
    check_ground_truth,
    check_sources,
    check_tools,
    source_forms,
    source_ranks,
)
from holodeck.testing.files import message_with_files
from holodeck.testing.outcomes import CaseResult, Mode, SuiteResult, TurnOutcome
from holodeck.testing.spans import case_attributes
from holodeck.tools.initialize import Offered
from holodeck.tools.vectorstore_tool import VectorStoreTool

log = logging.getLogger("holodeck.testing")

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
        self.offered = Offered()
        self._local: Embedder | None = None  # compares ground truths when no tool embeds
        # Building the agent resolves endpoint and key now: a ConfigError before any work.
        self._agent: Agent | None = (
            Agent.from_project(project, tools) if project.agent.model is not None else None
        )

    def offer(self, offered: Offered) -> None:
        """The function and MCP tools each case's agent may call (their servers running)."""
        self.offered = offered

    def check_expected_tools(self, cases: list[TestCase]) -> None:
        """Names in expected_tools that no tool answers to are a ConfigError (exit 2).

        Checked once the MCP servers listed their tools; not when one failed to start, since
        its tools are unknown (its cases then fail on the tools it would have offered).
        """
        if self._agent is None or self.offered.failed:
            return
        known = set(self._by_name)
        for function in self.offered.functions:
            known |= {function.name, *function.aliases}
        for case in cases:
            for step in case.steps:
                for expected in step.expected_tools or []:
                    if expected.name not in known:
                        raise ConfigError(
                            f"case {case.name!r}: expected_tools names {expected.name!r}, which "
                            f"no tool offers (tools: {', '.join(sorted(known)) or 'none'})"
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
                with tracing.span(f"holodeck.test_case {case.name or index}") as span:
                    result = await self.run_case(index, case)
                    span.set_all(case_attributes(result))
                self.done.append(result)
                if self.on_done:
                    self.on_done(result)
                return result

        self.check_expected_tools(cases)
        try:
            await asyncio.to_thread(self._warm_up)
            with tracing.span(f"holodeck.test {self.project.agent.name}") as span:
                results = await asyncio.gather(*(one(i, c) for i, c in enumerate(cases, start=1)))
                span.set("holodeck.test.cases", len(results))
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
        """One case, turn by turn; an exception makes its turn an error with the exception's
        line, and running past ``case_timeout`` makes the running turn one (the rest are not
        run)."""
        started = time.perf_counter()
        result = CaseResult(index=index, case=case, status="passed", reason="")
        agent = None
        if self._agent is not None:
            agent = Agent.from_project(self.project, self.tools, functions=self.offered.functions)
        try:
            await asyncio.wait_for(self._run_turns(case, result, agent), self.case_timeout)
        except TimeoutError:
            self._timed_out(case, result, time.perf_counter() - started)
        finally:
            if agent is not None:
                await agent.close()
        _roll_up(result)
        result.seconds = time.perf_counter() - started
        return result

    async def _run_turns(self, case: TestCase, result: CaseResult, agent: Agent | None) -> None:
        """The case's turns in order; after a turn that errored the rest are skipped."""
        for n, step in enumerate(case.steps, start=1):
            turn = TurnOutcome(n, step.input)
            result.turns.append(turn)
            if any(t.status == "error" for t in result.turns):
                turn.status = "skipped"
                turn.reason = "not run: an earlier turn errored"
                continue
            await self._run_turn(case, step, turn, agent)

    def _timed_out(self, case: TestCase, result: CaseResult, elapsed: float) -> None:
        """The turn running when the case's time ran out is an error, the rest not run."""
        message = (
            f"the case took longer than {self.case_timeout:g} s and was stopped "
            "(raise the limit with `holodeck test --timeout SECONDS`)"
        )
        running = result.turns[-1]
        running.status = "error"
        running.error_type = CaseTimeout.__name__
        running.reason = f"{CaseTimeout.__name__}: {message}"
        running.latency = running.latency or max(
            0.0, elapsed - sum(t.latency for t in result.turns[:-1])
        )
        for n in range(len(result.turns) + 1, len(case.steps) + 1):
            skipped = TurnOutcome(n, case.steps[n - 1].input, status="skipped")
            skipped.reason = "not run: an earlier turn errored"
            result.turns.append(skipped)

    async def _run_turn(
        self, case: TestCase, step: Turn, turn: TurnOutcome, agent: Agent | None
    ) -> None:
        """One message: produce (search or agent turn), then check; errors end up in ``turn``."""
        started = time.perf_counter()
        try:
            if agent is None:
                await self._retrieve(step, turn)
            else:
                await self._converse(case, agent, step, turn)
            await asyncio.to_thread(self._check, step, turn)
            turn.metrics = await self.evaluator.evaluate(
                step, turn.answer, turn.tool_calls, case.name, turn.index - 1
            )
        except Exception as exc:
            log.debug("test case %r errored", case.name, exc_info=True)  # -v: the traceback
            turn.latency = turn.latency or time.perf_counter() - started
            turn.status = "error"
            turn.error_type = type(exc).__name__
            turn.reason = redact(f"{type(exc).__name__}: {exc}")
        else:
            broken = [m for m in turn.metrics if m.status == "error" and m.fail_on_error]
            failed = [c.line() for c in turn.checks if not c.passed]
            failed += [m.line() for m in turn.metrics if m.status == "failed"]
            if broken:  # the judge could not judge: a runtime failure, not the agent's
                turn.status = "error"
                turn.error_type = "MetricError"
                turn.reason = "; ".join(m.line() for m in broken)
            elif failed:
                turn.status = "failed"
                turn.reason = "; ".join(failed)

    # -- producing: searches or an agent turn ------------------------------------------

    def _searched_tools(self, step: Turn) -> list[VectorStoreTool]:
        """Retrieval-only: the tools named in expected_tools (each once), else every tool."""
        names = list(dict.fromkeys(t.name for t in step.expected_tools or []))
        return [self._by_name[n] for n in names] if names else list(self.tools)

    async def _retrieve(self, step: Turn, turn: TurnOutcome) -> None:
        """The input as the query of each tool, concurrently."""
        started = time.perf_counter()
        turn.tool_calls = list(
            await asyncio.gather(*(_search(t, step.input) for t in self._searched_tools(step)))
        )
        turn.latency = time.perf_counter() - started

    async def _converse(self, case: TestCase, agent: Agent, step: Turn, turn: TurnOutcome) -> None:
        """One turn of the case's own agent (its conversation, so cases never see each other)."""
        message = step.input
        if step.files:  # each file's text after the input
            message = await asyncio.to_thread(message_with_files, step, self.project.root)
        reply = await agent.run_turn(message)
        turn.answer = reply.answer
        turn.tool_calls = list(reply.tool_calls)
        turn.rounds = reply.rounds
        turn.latency = reply.seconds
        if reply.notice:
            log.warning("Test case %s: %s", case.name, reply.notice)
        broken = [c for c in reply.tool_calls if self._failed_to_run(c)]
        if broken:
            # The model asked properly but the tool itself failed (Redis lost, embedder down,
            # an MCP server gone): a runtime error, not the agent's mistake.
            raise ToolFailure(f"{broken[0].tool} failed: {broken[0].error}")

    def _failed_to_run(self, call: ToolCallRecord) -> bool:
        """An error on a well-formed call came from the tool, not the model.

        A search that failed, or a call of an MCP server that stopped. A function that raised
        is the function's answer: the model read it, and the checks judge what it did next.
        """
        if call.unavailable:
            return True
        return (
            call.error is not None
            and call.tool in self._by_name
            and isinstance(call.query, str)
            and bool(call.query.strip())
        )

    # -- judging -----------------------------------------------------------------------

    def _check(self, step: Turn, turn: TurnOutcome) -> None:
        """Run the turn's checks on what it produced (blocking: it may embed)."""
        calls = turn.tool_calls
        llm = turn.answer is not None
        checks: list[Check] = []
        if step.expected_tools:
            checks.append(check_tools(step.expected_tools, calls))
        if step.expected_sources:
            turn.source_ranks = source_ranks(step.expected_sources, calls)
            checks.append(check_sources(turn.source_ranks, calls, self._exists))
        chunks = [r.content for call in calls for r in call.results]
        if step.expected_content:
            if llm:
                checks.append(check_content(step.expected_content, turn.answer or "", "the answer"))
            else:
                text = "\n\n".join(chunks)
                checks.append(check_content(step.expected_content, text, "the retrieved chunks"))
        schema = self.project.response_schema
        if llm and schema is not None:
            problem = violation(turn.answer or "", schema)
            detail = f"the answer does not fit the schema: {problem}" if problem else "fits"
            checks.append(Check("response_format", problem is None, detail))
        threshold = step.ground_truth_threshold
        if threshold is None:
            threshold = self.project.agent.ground_truth_threshold
        if step.ground_truth and threshold is not None:  # else: only the metrics' reference
            embedder = self._ground_truth_embedder(step, calls)
            if llm:
                answer = (turn.answer or "").strip()
                score = best_similarity(embedder, step.ground_truth, [answer] if answer else [])
                against = "the answer" if answer else "the answer is empty"
            else:
                found = pieces("\n\n".join(chunks))
                score = best_similarity(embedder, step.ground_truth, found)
                against = "best passage of the retrieved chunks" if found else "nothing retrieved"
            checks.append(check_ground_truth(score, threshold, against))
        turn.checks = checks

    def _ground_truth_embedder(self, step: Turn, calls: list[ToolCallRecord]) -> Embedder:
        """Whose embedder compares texts: the first expected knowledge base, else the first
        searched, else the first configured; the embedded local model without any."""
        for name in [t.name for t in step.expected_tools or []] + [c.tool for c in calls]:
            if name in self._by_name:
                return self._by_name[name].embedder
        if self.tools:
            return self.tools[0].embedder
        if self._local is None:
            self._local = make_local_embedder(None, self.project.root)
        return self._local

    def _exists(self, source: str) -> bool:
        """Whether an expected source names a file under the root or a tool's source."""
        bases = [self.project.root, *(tool.resolved.source for tool in self.tools)]
        names = [text_path(form) for form in source_forms(source)]
        return any((base / name).is_file() for base in bases for name in names)


def _roll_up(result: CaseResult) -> None:
    """The case's status, reason and totals from its turns."""
    turns = result.turns
    statuses = {t.status for t in turns}
    result.status = (
        "error" if "error" in statuses else "failed" if "failed" in statuses else "passed"
    )
    result.checks = [c for t in turns for c in t.checks]
    result.metrics = [m for t in turns for m in t.metrics]
    result.tool_calls = [c for t in turns for c in t.tool_calls]
    answers = [t.answer for t in turns if t.answer is not None]
    result.answer = answers[-1] if answers else None
    result.latency = sum(t.latency for t in turns)
    result.rounds = sum(t.rounds for t in turns)
    result.error_type = next((t.error_type for t in turns if t.error_type), None)
    for turn in turns:
        for source, rank in turn.source_ranks.items():
            best = result.source_ranks.get(source)
            if rank is not None and (best is None or rank < best):
                result.source_ranks[source] = rank
            else:
                result.source_ranks.setdefault(source, best)
    bad = [t for t in turns if t.status in ("failed", "error")]
    if not result.multi_turn:
        result.reason = bad[0].reason if bad else ""
        return
    reasons = [f"turn {t.index}: {t.reason}" for t in bad]
    skipped = [t.index for t in turns if t.status == "skipped"]
    if skipped:
        reasons.append(f"turn{'s' if len(skipped) > 1 else ''} {_span(skipped)} not run")
    result.reason = "; ".join(reasons)


def _span(numbers: list[int]) -> str:
    """``3`` or ``3-5``."""
    return str(numbers[0]) if len(numbers) == 1 else f"{numbers[0]}-{numbers[-1]}"


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
