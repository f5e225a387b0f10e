"""An evaluation judge for ``FakeOpenAI.responder``: reads holodeck's judge prompts and
answers as a careful (if literal) judge would, by comparing words.

The real judge client runs against it over HTTP. Its verdicts follow simple, stated rules,
so a test knows what a faithful and an unfaithful answer must score:

- a claim (a sentence) is supported when 80 % of its content words (no stop words) and
  every number of it appear in the passages: "3 attempts" is supported by "3 attempts in
  total", "5 attempts" is not;
- a statement addresses the question when it shares a content word with it;
- a passage is relevant when it shares a third of the question's content words, and useful
  for the expected answer when it holds half of the expected answer's content words;
- geval scores the share of the expected output's (else the input's) content words found in
  the actual output, 0-10, and sends log-probabilities putting 0.6 on that score and 0.4
  on the one above it (below at 10), so a weighted score is the integer plus 0.4.

The task comes from ``response_format.json_schema.name`` (or, for a server that refused
``response_format``, from the prompt's wording).
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from fake_openai import Reply, text

_STOP = set(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "of",
        "to",
        "in",
        "on",
        "at",
        "for",
        "by",
        "with",
        "from",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "when",
        "where",
        "why",
        "do",
        "does",
        "did",
        "can",
        "could",
        "should",
        "would",
        "will",
        "shall",
        "may",
        "might",
        "must",
        "not",
        "no",
        "yes",
        "you",
        "your",
        "i",
        "we",
        "they",
        "he",
        "she",
        "them",
        "their",
        "our",
        "my",
        "me",
        "has",
        "have",
        "had",
        "if",
        "then",
        "than",
        "so",
        "such",
        "into",
        "out",
        "up",
        "down",
        "over",
        "about",
        "also",
        "only",
        "just",
        "each",
        "per",
        "any",
        "all",
        "some",
        "more",
        "most",
        "other",
    ]
)
_WORD = re.compile(r"[a-z0-9]+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def words(text_: str) -> set[str]:
    """Content words: lower case, no stop words, a plural's s dropped."""
    out = set()
    for word in _WORD.findall(text_.lower()):
        if word in _STOP:
            continue
        out.add(word[:-1] if len(word) > 3 and word.endswith("s") else word)
    return out


def sentences(text_: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text_.strip()) if s.strip()]


def covered(part: str, whole: set[str], share: float = 0.8) -> bool:
    """Most of ``part``'s content words, and every number of it, are in ``whole``."""
    need = words(part)
    numbers = {w for w in need if w.isdigit()}
    return bool(need) and numbers <= whole and len(need & whole) >= share * len(need)


def tag(prompt: str, name: str) -> str | None:
    match = re.search(rf"<{name}>\n(.*?)\n</{name}>", prompt, re.DOTALL)
    return match.group(1) if match else None


def passages_in(prompt: str) -> list[str]:
    return re.findall(r'<passage n="\d+">\n(.*?)\n</passage>', prompt, re.DOTALL)


def task_of(body: dict[str, Any], prompt: str) -> str:
    fmt = body.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name")
    if name:
        return str(name)
    for task, phrase in (
        ("geval_steps", "evaluation steps a judge follows"),
        ("geval", "by following the STEPS"),
        ("faithfulness", "factual claims"),
        ("answer_relevancy", "helps answer the QUESTION"),
        ("contextual_recall", "Split the EXPECTED ANSWER"),
        ("contextual_precision", "useful for arriving"),
        ("contextual_relevancy", "holds information"),
    ):
        if phrase in prompt:
            return task
    raise AssertionError(f"fake judge: cannot tell the task of {prompt[:200]!r}")


def judge(body: dict[str, Any]) -> Reply:
    """The reply to one judge request."""
    prompt = str(body["messages"][-1]["content"])
    task = task_of(body, prompt)
    question = tag(prompt, "question") or ""
    answer = tag(prompt, "answer") or ""
    expected = tag(prompt, "expected_answer") or ""
    found = passages_in(prompt)
    context = words(" ".join(found))
    if task == "faithfulness":
        claims = [
            {
                "claim": c,
                "verdict": "yes" if covered(c, context) else "idk",
                "reason": "stated in the passages" if covered(c, context) else "not in them",
            }
            for c in sentences(answer)
        ]
        return _json({"claims": claims})
    if task == "answer_relevancy":
        asked = words(question)
        return _json(
            {
                "statements": [
                    {
                        "statement": s,
                        "verdict": "yes" if words(s) & asked else "no",
                        "reason": "on the question" if words(s) & asked else "off the question",
                    }
                    for s in sentences(answer)
                ]
            }
        )
    if task == "contextual_recall":
        return _json(
            {
                "statements": [
                    {
                        "statement": s,
                        "verdict": "yes" if covered(s, context) else "no",
                        "reason": "in the passages" if covered(s, context) else "missing",
                    }
                    for s in sentences(expected)
                ]
            }
        )
    if task in ("contextual_relevancy", "contextual_precision"):
        target = words(question if task == "contextual_relevancy" else expected)
        share = 1 / 3 if task == "contextual_relevancy" else 0.5
        verdicts = []
        for n, passage in enumerate(found, start=1):
            ok = bool(target) and len(words(passage) & target) >= share * len(target)
            verdicts.append({"passage": n, "verdict": "yes" if ok else "no", "reason": "words"})
        return _json({"passages": verdicts})
    if task == "geval_steps":
        return _json(
            {"steps": ["Read the criteria.", "Compare the actual output with what they ask."]}
        )
    if task == "geval":
        return _geval(prompt)
    raise AssertionError(f"fake judge: unknown task {task}")


def _geval(prompt: str) -> Reply:
    high = 1 if "a score of 1 if" in prompt else 10
    actual = words(tag(prompt, "actual_output") or "")
    target = words(tag(prompt, "expected_output") or tag(prompt, "input") or "")
    share = len(actual & target) / len(target) if target else 0.0
    score = round(share * high)
    reply = {"reason": f"{len(actual & target)} of {len(target)} expected words", "score": score}
    content = json.dumps(reply)
    other = score + 1 if score < high else score - 1
    # Tokens of the JSON up to the score, the score (with its alternatives), the rest.
    head, tail = content.split(f'"score": {score}')
    logprobs = [
        {"token": head + '"score": ', "logprob": 0.0, "top_logprobs": []},
        {
            "token": str(score),
            "logprob": math.log(0.6),
            "top_logprobs": [
                {"token": str(score), "logprob": math.log(0.6)},
                {"token": str(other), "logprob": math.log(0.4)},
                {"token": "x", "logprob": math.log(0.001)},  # not a score: left out
            ],
        },
        {"token": tail, "logprob": 0.0, "top_logprobs": []},
    ]
    return text(content, logprobs=logprobs if high > 1 else None)


def _json(data: dict[str, Any]) -> Reply:
    return text(json.dumps(data))
