"""G-Eval: custom criteria scored by the judge.

The judge follows ``evaluation_steps``; when a metric has none they are generated once from
its criteria and stored in ``.holodeck/geval_steps.json`` (commit it), so every later run,
on any machine, judges by the same steps until the criteria change. The judge then gives a
reason and an integer score 0-10 (0 or 1 in ``strict_mode``); where the server returns
log-probabilities the score is their expectation over 0-10 (G-Eval's weighting), which
separates answers a single integer would tie.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pydantic

from holodeck.config.evaluations import GEvalMetric
from holodeck.errors import ConfigError
from holodeck.evaluations.judge import Judge, JudgeError
from holodeck.evaluations.rag import JudgedScore, passages_block

log = logging.getLogger("holodeck.evaluations")

STEPS_FILE = Path(".holodeck") / "geval_steps.json"
_TAGS = {
    "input": "input",
    "actual_output": "actual_output",
    "expected_output": "expected_output",
    "retrieval_context": "retrieval_context",
}


class Steps(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    steps: list[str]


class Score(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")

    reason: str
    score: int


_STEPS_PROMPT = """\
Write 3 to 5 short evaluation steps a judge follows to decide how well a test case meets \
the CRITERIA below. Each step is one instruction. The judge is shown: {params}.

<criteria>
{criteria}
</criteria>
"""

_SCORE_PROMPT = """\
Evaluate the test case below against the CRITERIA by following the STEPS. First give your \
reason in two or three sentences that name the specific parts of the test case that decide \
it, then {scale}.

<criteria>
{criteria}
</criteria>
<steps>
{steps}
</steps>
<test_case>
{case}
</test_case>
"""

_SCALE = "an integer score from 0 (does not meet the criteria at all) to 10 (fully meets them)"
_STRICT = "a score of 1 if the test case fully meets the criteria, else 0"


class StepsStore:
    """Generated evaluation steps, per metric name, kept with the criteria they came from."""

    def __init__(self, root: Path) -> None:
        self.path = root / STEPS_FILE
        self._locks: dict[str, asyncio.Lock] = {}
        self._data: dict[str, Any] | None = None

    def _load(self) -> dict[str, Any]:
        if self._data is None:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                data = {}
            except (OSError, ValueError) as exc:
                raise ConfigError(
                    f"{STEPS_FILE.as_posix()}: cannot be read ({exc}); fix or delete it (the "
                    "steps are generated again)"
                ) from exc
            self._data = data if isinstance(data, dict) else {}
        return self._data

    def stored(self, metric: GEvalMetric) -> list[str] | None:
        """The steps stored for this metric's name, if made from the same criteria."""
        entry = self._load().get(metric.name)
        if (
            isinstance(entry, dict)
            and entry.get("criteria") == metric.criteria
            and entry.get("evaluation_params") == metric.evaluation_params
            and isinstance(entry.get("steps"), list)
            and entry["steps"]
        ):
            return [str(s) for s in entry["steps"]]
        return None

    async def steps_for(self, metric: GEvalMetric, judge: Judge) -> list[str]:
        """The metric's own steps, the stored ones, or new ones (generated once, stored)."""
        if metric.evaluation_steps:
            return metric.evaluation_steps
        lock = self._locks.setdefault(metric.name, asyncio.Lock())
        async with lock:
            steps = self.stored(metric)
            if steps is not None:
                return steps
            prompt = _STEPS_PROMPT.format(
                params=", ".join(metric.evaluation_params), criteria=metric.criteria.strip()
            )
            reply: Steps = (await judge.ask("geval_steps", prompt, Steps)).data
            steps = [s.strip() for s in reply.steps if s.strip()]
            if not steps:
                raise JudgeError(f"judge {judge.label} wrote no evaluation step")
            self._save(metric, steps, judge.label)
            return steps

    def _save(self, metric: GEvalMetric, steps: list[str], judge: str) -> None:
        data = self._load()
        data[metric.name] = {
            "criteria": metric.criteria,
            "evaluation_params": metric.evaluation_params,
            "steps": steps,
            "generated_by": judge,
        }
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
            tmp.replace(self.path)
        except OSError as exc:
            log.warning("cannot store the evaluation steps in %s: %s", self.path, exc)
            return
        log.warning(
            "geval %r: no evaluation_steps in agent.yaml; %d were generated from its criteria "
            "by %s and stored in %s: commit that file so every run judges by the same steps",
            metric.name,
            len(steps),
            judge,
            STEPS_FILE.as_posix(),
        )


async def score_geval(
    metric: GEvalMetric, judge: Judge, steps: list[str], values: dict[str, Any]
) -> JudgedScore:
    """Score the case's ``evaluation_params`` (values by param name) against the criteria."""
    case = "\n".join(_param_block(p, values.get(p)) for p in metric.evaluation_params)
    high = 1 if metric.strict_mode else 10
    prompt = _SCORE_PROMPT.format(
        scale=_STRICT if metric.strict_mode else _SCALE,
        criteria=metric.criteria.strip(),
        steps="\n".join(f"{i}. {s}" for i, s in enumerate(steps, start=1)),
        case=case,
    )
    verdict = await judge.ask("geval", prompt, Score, score_range=(0, high))
    reply: Score = verdict.data
    if not 0 <= reply.score <= high:
        raise JudgeError(f"judge {judge.label}'s score {reply.score} is outside 0-{high}")
    if verdict.distribution and not metric.strict_mode:
        expected = sum(value * p for value, p in verdict.distribution.items())
        weighted = f" (weighted by log-probabilities: {expected:.2f}/10)"
        return JudgedScore(expected / high, f"{reply.reason.strip()}{weighted}")
    return JudgedScore(reply.score / high, reply.reason.strip())


def _param_block(param: str, value: Any) -> str:
    tag = _TAGS[param]
    if param == "retrieval_context":
        return f"<{tag}>\n{passages_block(list(value or []))}\n</{tag}>"
    return f"<{tag}>\n{value or ''}\n</{tag}>"
