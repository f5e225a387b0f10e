"""How often the evaluation judge agrees with human labels (``benchmarks/data/judge_labels.json``:
32 answers marked faithful or not to their passages, 32 marked relevant or not to their
question), through holodeck's own judge layer and metrics (faithfulness, answer_relevancy).

A pair counts as agreeing when the metric's score is at least ``--threshold`` exactly when
the label says faithful (relevant). Against any OpenAI-compatible endpoint:

    OPENAI_API_KEY=sk-... python benchmarks/bench_judge.py --model gpt-4o-mini
    python benchmarks/bench_judge.py --provider ollama --model llama3.1:8b
    python benchmarks/bench_judge.py --endpoint http://localhost:8000/v1 --model my-model
    python benchmarks/bench_judge.py --fake      # the test suite's fake judge: the plumbing

The key comes from ``--api-key-env`` (default: the provider's variable, OPENAI_API_KEY for
openai). Nothing is cached: every run asks the judge.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from holodeck.config.llm import ModelConfig
from holodeck.evaluations.judge import Judge, JudgeError, Usage
from holodeck.evaluations.rag import RagInputs, score_rag
from holodeck.providers import KEY_VARIABLES

HERE = Path(__file__).resolve().parent
LABELS = HERE / "data" / "judge_labels.json"


@dataclass
class Tally:
    """Agreement of one metric with the labels."""

    metric: str
    pairs: int = 0
    agree: int = 0
    errors: int = 0
    positive_scores: list[float] | None = None
    negative_scores: list[float] | None = None

    def line(self) -> str:
        pos, neg = self.positive_scores or [], self.negative_scores or []
        mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")  # noqa: E731
        judged = self.pairs - self.errors
        rate = self.agree / judged if judged else float("nan")
        return (
            f"{self.metric}: agreement {self.agree}/{judged} = {rate:.2f} ({self.errors} errors); "
            f"mean score {mean(pos):.2f} on the positive pairs, {mean(neg):.2f} on the negative"
        )


async def run(judge: Judge, data: dict[str, Any], threshold: float) -> list[Tally]:
    """Score every labelled pair (concurrently, as holodeck test does) and tally."""
    jobs: list[tuple[str, bool, RagInputs]] = []
    for item in data["faithfulness"]:
        inputs = RagInputs(item["question"], item["answer"], None, item["passages"])
        jobs.append(("faithfulness", item["faithful"], inputs))
    for item in data["relevancy"]:
        inputs = RagInputs(item["question"], item["answer"], None, [])
        jobs.append(("answer_relevancy", item["relevant"], inputs))

    async def one(metric: str, inputs: RagInputs) -> float | str:
        try:
            return (await score_rag(metric, judge, inputs)).score
        except JudgeError as exc:
            return str(exc)

    scores = await asyncio.gather(*(one(metric, inputs) for metric, _, inputs in jobs))
    tallies = {m: Tally(m, positive_scores=[], negative_scores=[]) for m, _, _ in jobs}
    for (metric, label, _), score in zip(jobs, scores, strict=True):
        tally = tallies[metric]
        tally.pairs += 1
        if isinstance(score, str):
            tally.errors += 1
            print(f"  error ({metric}): {score}", file=sys.stderr)
            continue
        (tally.positive_scores if label else tally.negative_scores).append(score)  # type: ignore[union-attr]
        tally.agree += int((score >= threshold) == label)
    return list(tallies.values())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--provider", default="openai", choices=["openai", "azure_openai", "ollama", "anthropic"]
    )
    parser.add_argument("--model", default="gpt-4o-mini", help="judge model (or deployment)")
    parser.add_argument("--endpoint", default=None, help="OpenAI-compatible base URL")
    parser.add_argument("--api-key-env", default=None, help="variable holding the key")
    parser.add_argument("--api-version", default=None, help="azure_openai's api-version")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--fake", action="store_true", help="judge with the tests' fake server")
    args = parser.parse_args()
    data = json.loads(LABELS.read_text(encoding="utf-8"))
    with ExitStack() as stack:
        endpoint = args.endpoint
        env = dict(os.environ)
        if args.fake:
            sys.path.insert(0, str(HERE.parent / "tests"))
            import fake_judge
            from fake_openai import FakeOpenAI

            server = stack.enter_context(FakeOpenAI())
            server.responder = fake_judge.judge
            endpoint, env["OPENAI_API_KEY"] = server.url, "fake"
        if args.api_key_env:
            value = os.environ.get(args.api_key_env)
            if not value:
                sys.exit(f"--api-key-env {args.api_key_env}: the variable is not set")
            env[KEY_VARIABLES.get(args.provider, "OPENAI_API_KEY")] = value
        model = ModelConfig(
            provider=args.provider,
            name=args.model,
            endpoint=endpoint,
            api_version=args.api_version,
        )
        usage = Usage()

        async def go() -> list[Tally]:
            judge = Judge(model, env, None, usage)
            try:
                return await run(judge, data, args.threshold)
            finally:
                await judge.close()

        started = time.perf_counter()
        tallies = asyncio.run(go())
        seconds = time.perf_counter() - started
    where = (
        "the fake judge (tests/fake_judge.py)" if args.fake else f"{model.provider}:{model.name}"
    )
    print(f"judge: {where}; threshold {args.threshold}; labels: {LABELS.relative_to(HERE.parent)}")
    for tally in tallies:
        print(tally.line())
    print(f"{usage.calls} judge calls, {usage.tokens:,} tokens, {seconds:.1f} s")


if __name__ == "__main__":
    main()
