"""The rag metrics: the judge reads the question, the passages the tools returned, the answer
and the ground truth, and gives a verdict per claim or per passage; the score is counted
from the verdicts here, so it means the same whatever model judges.

- ``faithfulness``: the answer's claims the passages support / its claims (1.0 with none).
- ``answer_relevancy``: the answer's statements not off the question / its statements.
- ``contextual_relevancy``: passages relevant to the question / passages.
- ``contextual_precision``: are the passages useful for the ground truth ranked first?
  (mean of precision@k over the useful ones, as DeepEval and Ragas define it).
- ``contextual_recall``: sentences of the ground truth the passages support / its sentences.

One judge call per metric and case.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import pydantic

from holodeck.evaluations.judge import Judge, JudgeError

YesNo = Literal["yes", "no"]
YesNoIdk = Literal["yes", "no", "idk"]
#: Claims or statements a reason names.
_SHOWN = 3


class _Reply(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")


class ClaimVerdict(_Reply):
    claim: str
    verdict: YesNoIdk
    reason: str


class Claims(_Reply):
    claims: list[ClaimVerdict]


class Statement(_Reply):
    statement: str
    verdict: YesNoIdk
    reason: str


class Statements(_Reply):
    statements: list[Statement]


class PassageVerdict(_Reply):
    passage: int
    verdict: YesNo
    reason: str


class PassageVerdicts(_Reply):
    passages: list[PassageVerdict]


@dataclass
class RagInputs:
    """What a case gives the rag metrics."""

    question: str
    answer: str | None
    expected: str | None
    passages: list[str]


@dataclass
class JudgedScore:
    """A metric's score and why."""

    score: float
    reason: str


_FAITHFULNESS = """\
Split the ANSWER into the factual claims it makes: short statements that can each be checked \
on their own. Leave out greetings, offers of further help and remarks about the assistant \
itself. For each claim decide whether the PASSAGES support it:
- "yes": the passages state it, or it follows directly from them;
- "no": the passages contradict it;
- "idk": the passages do not say.
Use only the passages, never your own knowledge. Give a one-sentence reason for each verdict.
"""

_ANSWER_RELEVANCY = """\
Split the ANSWER into its statements. For each statement decide whether it helps answer the \
QUESTION:
- "yes": it addresses the question;
- "no": it is about something else;
- "idk": it neither helps nor distracts (a greeting, a pointer to further help).
Give a one-sentence reason for each verdict.
"""

_CONTEXTUAL_RELEVANCY = """\
For each of the {n} PASSAGES (numbered 1 to {n}) decide whether it holds information that \
helps answer the QUESTION ("yes") or not ("no"). Give exactly one verdict per passage, with \
its number and a one-sentence reason.
"""

_CONTEXTUAL_PRECISION = """\
For each of the {n} PASSAGES (numbered 1 to {n}) decide whether it was useful for arriving \
at the EXPECTED ANSWER to the QUESTION ("yes") or not ("no"). Give exactly one verdict per \
passage, with its number and a one-sentence reason.
"""

_CONTEXTUAL_RECALL = """\
Split the EXPECTED ANSWER into its sentences (or self-contained statements). For each, decide \
whether the PASSAGES support it ("yes": it can be attributed to them) or not ("no"). Use \
only the passages, never your own knowledge. Give a one-sentence reason for each verdict.
"""


async def score_rag(metric_type: str, judge: Judge, inputs: RagInputs) -> JudgedScore:
    """Score one rag metric for one case."""
    if metric_type == "faithfulness":
        return await faithfulness(judge, inputs)
    if metric_type == "answer_relevancy":
        return await answer_relevancy(judge, inputs)
    if metric_type == "contextual_recall":
        return await contextual_recall(judge, inputs)
    if metric_type in ("contextual_relevancy", "contextual_precision"):
        return await _per_passage(metric_type, judge, inputs)
    raise JudgeError(f"unknown rag metric {metric_type!r}")  # refused when the config loads


async def faithfulness(judge: Judge, inputs: RagInputs) -> JudgedScore:
    """Claims of the answer the passages support, over its claims."""
    prompt = _FAITHFULNESS + _sections(inputs, question=True, passages=True, answer=True)
    reply: Claims = (await judge.ask("faithfulness", prompt, Claims)).data
    if not reply.claims:
        return JudgedScore(1.0, "the answer makes no factual claim")
    supported = [c for c in reply.claims if c.verdict == "yes"]
    others = [c for c in reply.claims if c.verdict != "yes"]
    reason = f"{len(supported)} of {len(reply.claims)} claims supported by the passages"
    if others:
        shown = "; ".join(
            f"{c.claim!r} ({'contradicted' if c.verdict == 'no' else 'not in the passages'})"
            for c in others[:_SHOWN]
        )
        reason += f"; not supported: {shown}"
    return JudgedScore(len(supported) / len(reply.claims), reason)


async def answer_relevancy(judge: Judge, inputs: RagInputs) -> JudgedScore:
    """Statements of the answer that are not off the question, over its statements."""
    if not (inputs.answer or "").strip():
        return JudgedScore(0.0, "the answer is empty")
    prompt = _ANSWER_RELEVANCY + _sections(inputs, question=True, answer=True)
    reply: Statements = (await judge.ask("answer_relevancy", prompt, Statements)).data
    if not reply.statements:
        raise JudgeError(f"judge {judge.label} found no statement in a non-empty answer")
    return _share(
        reply.statements,
        lambda s: s.verdict != "no",
        "statements address the question",
        "off the question",
    )


async def contextual_recall(judge: Judge, inputs: RagInputs) -> JudgedScore:
    """Sentences of the ground truth the passages support, over its sentences."""
    if not inputs.passages:
        return JudgedScore(0.0, "nothing was retrieved")
    prompt = _CONTEXTUAL_RECALL + _sections(inputs, expected=True, passages=True)
    reply: Statements = (await judge.ask("contextual_recall", prompt, Statements)).data
    if not reply.statements:
        raise JudgeError(f"judge {judge.label} found no sentence in the ground_truth")
    return _share(
        reply.statements,
        lambda s: s.verdict == "yes",
        "sentences of the ground_truth found in the passages",
        "missing",
    )


def _share(
    statements: list[Statement], counts: Callable[[Statement], bool], counted: str, lacking: str
) -> JudgedScore:
    """The share of statements that count, naming the first few that do not."""
    rest = [s for s in statements if not counts(s)]
    total = len(statements)
    reason = f"{total - len(rest)} of {total} {counted}"
    if rest:
        reason += f"; {lacking}: " + "; ".join(repr(s.statement) for s in rest[:_SHOWN])
    return JudgedScore((total - len(rest)) / total, reason)


async def _per_passage(metric_type: str, judge: Judge, inputs: RagInputs) -> JudgedScore:
    """contextual_relevancy and contextual_precision: one verdict per passage, in rank order."""
    n = len(inputs.passages)
    if n == 0:
        return JudgedScore(0.0, "nothing was retrieved")
    if metric_type == "contextual_relevancy":
        prompt = _CONTEXTUAL_RELEVANCY.format(n=n) + _sections(inputs, question=True, passages=True)
    else:
        prompt = _CONTEXTUAL_PRECISION.format(n=n) + _sections(
            inputs, question=True, expected=True, passages=True
        )
    reply: PassageVerdicts = (await judge.ask(metric_type, prompt, PassageVerdicts)).data
    numbers = sorted(v.passage for v in reply.passages)
    if numbers != list(range(1, n + 1)):
        raise JudgeError(
            f"judge {judge.label}'s reply does not give one verdict per passage 1-{n} "
            f"(got passages {numbers})"
        )
    useful = [v.verdict == "yes" for v in sorted(reply.passages, key=lambda v: v.passage)]
    ranks = ", ".join(str(i) for i, ok in enumerate(useful, start=1) if ok) or "none"
    if metric_type == "contextual_relevancy":
        return JudgedScore(
            sum(useful) / n, f"{sum(useful)} of {n} passages relevant (passages {ranks})"
        )
    return JudgedScore(
        precision_score(useful),
        f"{sum(useful)} of {n} passages useful for the ground_truth, at ranks {ranks}",
    )


def precision_score(useful: list[bool]) -> float:
    """Mean precision@k over the ranks k of the useful passages (0 when none is useful)."""
    hits = 0
    total = 0.0
    for k, ok in enumerate(useful, start=1):
        if ok:
            hits += 1
            total += hits / k
    return total / hits if hits else 0.0


def _sections(
    inputs: RagInputs,
    *,
    question: bool = False,
    passages: bool = False,
    answer: bool = False,
    expected: bool = False,
) -> str:
    """The case's texts, each in its own tag, in a fixed order."""
    parts = [""]
    if question:
        parts.append(f"<question>\n{inputs.question}\n</question>")
    if expected:
        parts.append(f"<expected_answer>\n{inputs.expected or ''}\n</expected_answer>")
    if passages:
        parts.append(passages_block(inputs.passages))
    if answer:
        parts.append(f"<answer>\n{inputs.answer or ''}\n</answer>")
    return "\n".join(parts) + "\n"


def passages_block(passages: list[str]) -> str:
    """Numbered passages; a note when there are none (the judge then supports nothing)."""
    if not passages:
        return "<passages>\n(no passages were retrieved)\n</passages>"
    body = "\n".join(f'<passage n="{i}">\n{p}\n</passage>' for i, p in enumerate(passages, 1))
    return f"<passages>\n{body}\n</passages>"
