"""DeepEval's FaithfulnessMetric judging one case through the fake OpenAI-compatible server
on 127.0.0.1 (tests/ on PYTHONPATH): run under _netlog to see what else it reaches."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from fake_openai import FakeOpenAI, Reply, text


def reply(body: dict[str, Any]) -> Reply:
    """Minimal answers in DeepEval's shapes (truths, claims, verdicts, reason)."""
    prompt = str(body["messages"][-1]["content"]).lower()
    if "truths" in prompt and "extract" in prompt:
        return text(json.dumps({"truths": ["A job gets 3 attempts in total."]}))
    if "claims" in prompt and "extract" in prompt:
        return text(json.dumps({"claims": ["A job gets 3 attempts in total."]}))
    if "verdict" in prompt:
        return text(json.dumps({"verdicts": [{"verdict": "yes", "reason": None}]}))
    return text(json.dumps({"reason": "supported"}))


def main() -> None:
    with FakeOpenAI() as server:
        server.responder = reply
        started = time.perf_counter()
        from deepeval.metrics import FaithfulnessMetric
        from deepeval.models import GPTModel
        from deepeval.test_case import LLMTestCase

        print(f"import {time.perf_counter() - started:.2f} s", file=sys.stderr)
        model = GPTModel(model="gpt-4o-mini", api_key="sk-fake", base_url=server.url)
        metric = FaithfulnessMetric(model=model, async_mode=False)
        case = LLMTestCase(
            input="How many attempts?",
            actual_output="A job gets 3 attempts in total.",
            retrieval_context=["A job gets 3 attempts in total."],
        )
        try:
            metric.measure(case)
        finally:
            print(f"judge requests: {len(server.chat_requests())}", file=sys.stderr)


if __name__ == "__main__":
    main()
