"""The judge layer against the fake OpenAI-compatible server: the real openai client sends
every request over HTTP, and the fake answers as a judge would (tests/fake_judge.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import fake_judge
import pytest
from fake_openai import FakeOpenAI, error, raw, text

from holodeck.config.evaluations import GEvalMetric
from holodeck.config.llm import ModelConfig
from holodeck.evaluations.cache import JudgeCache
from holodeck.evaluations.geval import StepsStore, score_geval
from holodeck.evaluations.judge import Judge, JudgeError, Usage
from holodeck.evaluations.rag import RagInputs, score_rag

PASSAGES = [
    "Without a retry block a job gets the defaults: 3 attempts in total (the first run plus "
    "2 retries), exponential backoff starting at 30 seconds.",
    "The dashboard listens on port 8080; open it in a browser.",
]
QUESTION = "How many attempts does a failing job get by default?"
EXPECTED = "A job gets 3 attempts in total by default."
FAITHFUL = "A job gets 3 attempts in total. Backoff is exponential, starting at 30 seconds."
UNFAITHFUL = "A job gets 5 attempts in total. Retries happen every 10 minutes."


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        fake.responder = fake_judge.judge
        yield fake


def make_judge(server: FakeOpenAI, cache: JudgeCache | None = None) -> Judge:
    model = ModelConfig(provider="openai", name="judge-model", endpoint=server.url)
    return Judge(model, {"OPENAI_API_KEY": "sk-test"}, cache, Usage())


def rag(
    server: FakeOpenAI,
    metric: str,
    answer: str,
    passages: list[str] = PASSAGES,
    make: Callable[[FakeOpenAI], Judge] = make_judge,
) -> float:
    async def go() -> float:
        judge = make(server)
        try:
            inputs = RagInputs(QUESTION, answer, EXPECTED, passages)
            return (await score_rag(metric, judge, inputs)).score
        finally:
            await judge.close()

    return asyncio.run(go())


def test_faithfulness_scores_a_faithful_answer_above_an_unfaithful_one(
    server: FakeOpenAI,
) -> None:
    assert rag(server, "faithfulness", FAITHFUL) == pytest.approx(1.0)
    assert rag(server, "faithfulness", UNFAITHFUL) == pytest.approx(0.0)
    request = server.judge_requests()[0]
    assert request["temperature"] == 0
    schema = request["response_format"]["json_schema"]
    assert schema["strict"] is True and schema["name"] == "faithfulness"
    assert schema["schema"]["additionalProperties"] is False


def test_answer_relevancy_counts_statements_on_the_question(server: FakeOpenAI) -> None:
    on = "A failing job gets 3 attempts by default."
    off = "The dashboard listens on port 8080. Upgrades need PostgreSQL 14."
    assert rag(server, "answer_relevancy", on) == pytest.approx(1.0)
    assert rag(server, "answer_relevancy", off) == pytest.approx(0.0)


def test_contextual_metrics_judge_the_passages_in_rank_order(server: FakeOpenAI) -> None:
    relevant_first, relevant_last = PASSAGES, PASSAGES[::-1]
    assert rag(server, "contextual_relevancy", "", relevant_first) == pytest.approx(0.5)
    assert rag(server, "contextual_precision", "", relevant_first) == pytest.approx(1.0)
    assert rag(server, "contextual_precision", "", relevant_last) == pytest.approx(0.5)
    assert rag(server, "contextual_recall", "", relevant_first) == pytest.approx(1.0)
    assert rag(server, "contextual_recall", "", PASSAGES[1:]) == pytest.approx(0.0)
    calls = len(server.judge_requests())
    assert rag(server, "contextual_relevancy", "", []) == 0.0  # nothing retrieved: no call
    assert len(server.judge_requests()) == calls


def geval(
    server: FakeOpenAI,
    answer: str,
    tmp_path: Path,
    strict: bool = False,
    make: Callable[[FakeOpenAI], Judge] = make_judge,
) -> float:
    metric = GEvalMetric(
        name="Correct",
        criteria="The answer gives the number of attempts of the expected output.",
        evaluation_params=["actual_output", "expected_output"],
        strict_mode=strict,
    )

    async def go() -> float:
        judge = make(server)
        try:
            steps = await StepsStore(tmp_path).steps_for(metric, judge)
            values = {"actual_output": answer, "expected_output": EXPECTED}
            return (await score_geval(metric, judge, steps, values)).score
        finally:
            await judge.close()

    return asyncio.run(go())


def test_geval_weights_the_score_by_log_probabilities(server: FakeOpenAI, tmp_path: Path) -> None:
    # 5 of the 6 expected words: the judge says 8, with p=0.6 (and 9 with p=0.4): 8.4/10.
    assert geval(server, FAITHFUL, tmp_path) == pytest.approx(0.84, abs=1e-6)
    # 4 of 6: 7 (p=0.6) and 8 (p=0.4).
    assert geval(server, UNFAITHFUL, tmp_path) == pytest.approx(0.74, abs=1e-6)
    scoring = [
        r for r in server.judge_requests() if r["response_format"]["json_schema"]["name"] == "geval"
    ]
    assert scoring and all(r["logprobs"] is True and r["top_logprobs"] == 20 for r in scoring)


def test_geval_steps_are_generated_once_and_stored(server: FakeOpenAI, tmp_path: Path) -> None:
    geval(server, FAITHFUL, tmp_path)
    geval(server, UNFAITHFUL, tmp_path)
    names = [r["response_format"]["json_schema"]["name"] for r in server.judge_requests()]
    assert names.count("geval_steps") == 1
    stored = json.loads((tmp_path / ".holodeck" / "geval_steps.json").read_text())
    assert stored["Correct"]["steps"] == [
        "Read the criteria.",
        "Compare the actual output with what they ask.",
    ]
    assert stored["Correct"]["generated_by"] == "openai:judge-model"


def test_geval_strict_mode_scores_one_or_zero(server: FakeOpenAI, tmp_path: Path) -> None:
    assert geval(server, FAITHFUL, tmp_path, strict=True) == 1.0
    assert geval(server, "No idea.", tmp_path, strict=True) == 0.0


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (text("The answer looks faithful to me."), "reply is not JSON"),
        (text('{"claims": [{"claim": "x", "verdict": "maybe", "reason": "r"}]}'), "does not fit"),
        (text('{"claims": [{"claim": "x", "verdict": "yes"}]}'), "claims.0.reason"),
        (text('{"verdicts": []}'), "does not fit the schema"),
        (text('{"claims": [', finish="length"), "cut off at its token limit"),
        (raw("<html>login</html>"), "not a chat completion"),
        (error(401, "bad key sk-test"), "refused the API key"),
    ],
)
def test_a_reply_that_is_not_a_verdict_is_an_error(
    server: FakeOpenAI, reply: object, message: str
) -> None:
    server.chat.push(reply)  # type: ignore[arg-type]
    with pytest.raises(JudgeError, match=message) as caught:
        rag(server, "faithfulness", FAITHFUL)
    assert "sk-test" not in str(caught.value)


def test_one_verdict_per_passage_or_an_error(server: FakeOpenAI) -> None:
    server.chat.push(
        text(json.dumps({"passages": [{"passage": 1, "verdict": "yes", "reason": "r"}]}))
    )
    with pytest.raises(JudgeError, match="one verdict per passage 1-2 \\(got passages \\[1\\]\\)"):
        rag(server, "contextual_relevancy", "", PASSAGES)


def test_a_server_refusing_logprobs_or_json_schema_is_asked_again_without(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    geval(server, FAITHFUL, tmp_path)  # generates and stores the steps
    server.chat.push(error(400, "logprobs is not supported with this model"))
    assert geval(server, FAITHFUL, tmp_path) == pytest.approx(0.8)  # the plain integer 8
    assert "logprobs" not in server.chat_requests()[-1]
    server.reset()
    server.responder = fake_judge.judge
    server.chat.push(error(400, "response_format json_schema is not supported"))
    assert rag(server, "faithfulness", FAITHFUL) == pytest.approx(1.0)
    last = server.chat_requests()[-1]
    assert "response_format" not in last
    assert '"claims"' in last["messages"][0]["content"]  # the schema is in the prompt


def test_the_cache_answers_a_repeated_question_without_a_call(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    async def twice() -> tuple[float, float, Usage]:
        usage = Usage()
        model = ModelConfig(provider="openai", name="judge-model", endpoint=server.url)
        cache = JudgeCache(tmp_path)
        judge = Judge(model, {"OPENAI_API_KEY": "sk-test"}, cache, usage)
        inputs = RagInputs(QUESTION, UNFAITHFUL, EXPECTED, PASSAGES)
        first = (await score_rag("faithfulness", judge, inputs)).score
        second = (await score_rag("faithfulness", judge, inputs)).score
        await judge.close()
        cache.close()
        return first, second, usage

    first, second, usage = asyncio.run(twice())
    assert first == second == 0.0
    assert len(server.judge_requests()) == 1
    assert (usage.calls, usage.cached) == (1, 1)
    assert usage.tokens > 0
    assert (tmp_path / ".holodeck" / "cache" / ".gitignore").read_text().endswith("*\n")


# -- provider anthropic: the Messages API through Anthropic's SDK ------------------------

CLAUDE_KEY = "sk-ant-judge-0123456789"


def claude_judge(server: FakeOpenAI, usage: Usage | None = None) -> Judge:
    model = ModelConfig(provider="anthropic", name="claude-judge", endpoint=server.url)
    return Judge(model, {"ANTHROPIC_API_KEY": CLAUDE_KEY}, None, usage or Usage())


def test_an_anthropic_judge_is_asked_through_the_messages_api(server: FakeOpenAI) -> None:
    usage = Usage()

    def make(fake: FakeOpenAI) -> Judge:
        return claude_judge(fake, usage)

    assert rag(server, "faithfulness", FAITHFUL, make=make) == pytest.approx(1.0)
    assert rag(server, "faithfulness", UNFAITHFUL, make=make) == pytest.approx(0.0)
    assert server.chat_requests() == []  # never the OpenAI-compatible endpoint
    (first, _) = server.message_requests()
    assert first.path == "/v1/messages"
    sent = first.headers.get("x-api-key") or first.headers["authorization"].removeprefix("Bearer ")
    assert sent == CLAUDE_KEY  # x-api-key, or a bearer token as newer SDKs send it
    body = first.body
    assert body["model"] == "claude-judge" and body["temperature"] == 0
    assert body["max_tokens"] > 0
    assert '"claims"' in body["system"]  # the schema, in the system prompt
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert "response_format" not in body and "logprobs" not in body
    assert (usage.calls, usage.cached) == (2, 0) and usage.tokens > 0


def test_an_anthropic_judge_gives_geval_its_plain_integer(
    server: FakeOpenAI, tmp_path: Path
) -> None:
    # The OpenAI judge weighs 8 (p=0.6) and 9 (p=0.4) to 0.84; Claude sends no
    # log-probabilities, so the score is its integer 8 out of 10.
    assert geval(server, FAITHFUL, tmp_path, make=claude_judge) == pytest.approx(0.8, abs=1e-9)
    assert len(server.message_requests()) == 2  # the steps, then the score


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (text("The answer looks faithful to me."), "reply is not JSON"),
        (text('{"claims": [', finish="length"), "cut off at its token limit"),
        (error(401, f"invalid x-api-key {CLAUDE_KEY}"), "anthropic at .* refused the API key"),
        (error(400, "max_tokens: too large"), "answered 400: max_tokens: too large"),
    ],
)
def test_an_anthropic_judge_reply_that_is_not_a_verdict_is_an_error(
    server: FakeOpenAI, reply: object, message: str
) -> None:
    server.chat.push(reply)  # type: ignore[arg-type]
    with pytest.raises(JudgeError, match=message) as caught:
        rag(server, "faithfulness", FAITHFUL, make=claude_judge)
    assert CLAUDE_KEY not in str(caught.value)
