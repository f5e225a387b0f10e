"""Function tools (``type: function``): a Python function next to agent.yaml that the model calls.

The real ``holodeck chat`` and ``holodeck test`` (run_holodeck), the real openai client and
agent loop; the fake OpenAI-compatible server plays the model: it asks for the function and
then answers with what the tool returned, so what reached the model is what the chat shows.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, quoting_tools, text, tool_calls, tool_results

from holodeck.config.loader import load_project
from holodeck.tools.callables import ToolError
from holodeck.tools.function_tool import load_function_tools

ORDERS_PY = '''
import asyncio


def lookup_order(order_id: str, include_items: bool = False) -> dict:
    """Look up an order in the order system.

    Args:
        order_id: The order's number, like A-1001.
        include_items: Whether to list the items too.
    """
    if order_id == "A-0000":
        raise KeyError(f"no order {order_id}")
    order = {"order_id": order_id, "status": "shipped", "carrier": "Parcelink"}
    if include_items:
        order["items"] = ["kettle", "mug"]
    return order


async def convert(amount: float, currency: str) -> str:
    """Convert an amount of euros.

    :param amount: how many euros
    :param currency: the currency to convert to
    """
    await asyncio.sleep(0)
    return f"{amount * 2:.2f} {currency}"
'''

AGENT = """
name: shop-agent
model:
  provider: openai
  name: fake-model
  endpoint: {url}
  api_key: ${{OPENAI_API_KEY}}
instructions: You answer questions about orders.
tools:
  - name: lookup_order
    description: Find an order by its number
    type: function
    file: tools/orders.py
    function: lookup_order
  - name: convert
    type: function
    file: tools/orders.py
    function: convert
    parameters:
      amount:
        type: float
        description: Euros to convert
        minimum: 0
      currency:
        type: string
        enum: [USD, GBP]
"""


def make_project(root: Path, url: str) -> Path:
    write(root / "tools" / "orders.py", ORDERS_PY)
    write(root / ".env", "OPENAI_API_KEY=sk-test-functions\n")
    write(root / "agent.yaml", AGENT.format(url=url))
    return root


def test_the_model_sees_each_function_with_its_schema(tmp_path: Path) -> None:
    project = load_project(make_project(tmp_path, "http://127.0.0.1:9/v1") / "agent.yaml")
    lookup, convert = load_function_tools(project)
    assert lookup.definition() == {
        "name": "lookup_order",
        "description": "Find an order by its number",
        "parameters": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "order_id": {"type": "string", "description": "The order's number, like A-1001."},
                "include_items": {
                    "type": "boolean",
                    "default": False,
                    "description": "Whether to list the items too.",
                },
            },
            "required": ["order_id"],
        },
    }
    # parameters: given in agent.yaml win over the signature; the docstring fills the rest.
    assert convert.description == "Convert an amount of euros."
    assert convert.parameters["properties"] == {
        "amount": {"type": "number", "description": "Euros to convert", "minimum": 0},
        "currency": {
            "enum": ["USD", "GBP"],
            "type": "string",
            "description": "the currency to convert to",
        },
    }
    assert convert.parameters["required"] == ["amount", "currency"]


def test_arguments_are_validated_and_failures_are_tool_errors(tmp_path: Path) -> None:
    project = load_project(make_project(tmp_path, "http://127.0.0.1:9/v1") / "agent.yaml")
    lookup, convert = load_function_tools(project)
    assert json.loads(asyncio.run(lookup.run({"order_id": "A-1", "include_items": True}))) == {
        "order_id": "A-1",
        "status": "shipped",
        "carrier": "Parcelink",
        "items": ["kettle", "mug"],
    }
    assert asyncio.run(convert.run({"amount": "2.5", "currency": "GBP"})) == "5.00 GBP"  # async
    failures = {
        "missing": (lookup, {}, "invalid arguments for lookup_order: order_id: Field required"),
        "extra": (
            lookup,
            {"order_id": "A-1", "expedite": True},
            "invalid arguments for lookup_order: expedite: Extra inputs are not permitted",
        ),
        "enum": (convert, {"amount": 1, "currency": "JPY"}, "currency: Input should be 'USD' or"),
        "raises": (
            lookup,
            {"order_id": "A-0000"},
            "lookup_order raised KeyError: 'no order A-0000'",
        ),
    }
    for name, (tool, arguments, message) in failures.items():
        with pytest.raises(ToolError) as caught:
            asyncio.run(tool.run(arguments))
        assert message in str(caught.value), name


def test_chat_calls_the_function_and_the_result_reaches_model_and_output(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        llm.chat.push(
            tool_calls(("lookup_order", {"order_id": "A-1001"})),
            quoting_tools("Order A-1001: {result}"),
            tool_calls(("lookup_order", {"order_id": "A-0000"})),
            quoting_tools("The lookup failed: {result}"),
        )
        done = run_holodeck(
            "chat", cwd=root, stdin="Where is order A-1001?\nAnd order A-0000?\n", timeout=120
        )
        requests = llm.chat_requests()
    assert done.returncode == 0, done.stderr
    returned = '{"order_id": "A-1001", "status": "shipped", "carrier": "Parcelink"}'
    # The model got the function's return value as the tool result...
    assert tool_results(requests[1]) == [returned]
    # ...and the chat shows the call, and the answer built from it.
    assert f"Order A-1001: {returned}" in done.stdout
    assert f'[tool] lookup_order({{"order_id": "A-1001"}}) -> {returned}' in done.stderr
    # A function that raises is an error the model reads and the chat shows; the chat goes on.
    error = "lookup_order raised KeyError: 'no order A-0000'"
    assert tool_results(requests[3])[-1] == f"Error: {error}"
    assert f"The lookup failed: Error: {error}" in done.stdout
    assert f'[tool] lookup_order({{"order_id": "A-0000"}}) -> error: {error}' in done.stderr
    assert "Traceback" not in done.stderr
    # Both functions were offered in every request, with their schemas.
    offered = [t["function"]["name"] for t in requests[0]["tools"]]
    assert offered == ["lookup_order", "convert"]


def test_holodeck_test_checks_function_calls_and_their_arguments(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        with (root / "agent.yaml").open("a") as f:
            f.write(
                "test_cases:\n"
                "  - name: converts\n"
                "    input: What is 10 euros in dollars?\n"
                "    expected_tools:\n"
                "      - name: convert\n"
                "        args: {amount: 10, currency: USD}\n"
                "    expected_content: ['20.00 USD']\n"
                "  - input: What is 10 euros in pounds?\n"
                "    expected_tools:\n"
                "      - name: convert\n"
                "        args: {currency: GBP}\n"
            )
        llm.chat.push(
            tool_calls(("convert", {"amount": 10, "currency": "USD"})),
            quoting_tools("That is {result}."),
            tool_calls(("convert", {"amount": 10, "currency": "USD"})),
            text("About 17 pounds."),
        )
        done = run_holodeck("test", "--report", "r.json", cwd=root, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads((root / "r.json").read_text())
    first, second = report["cases"]
    assert first["status"] == "passed", first["reason"]
    assert first["tool_calls"][0]["output"] == "20.00 USD"
    assert first["tool_calls"][0]["kind"] == "function"
    # The name-less case is named after its input; its argument check fails.
    assert second["name"] == "What is 10 euros in pounds?"
    assert second["status"] == "failed"
    assert second["reason"].startswith(
        "expected_tools: no convert call with currency containing 'GBP' (calls: "
        "convert(amount=10, currency='USD'))"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            (
                "file: tools/orders.py\n    function: lookup_order",
                "file: tools/nope.py\n    function: lookup_order",
            ),
            "Error: agent.yaml:12: tools[0].file: tools/nope.py not found (path relative to "
            "agent.yaml)",
        ),
        (
            ("function: lookup_order", "function: find_order"),
            "Error: agent.yaml:13: tools[0].function: no function 'find_order' in tools/orders.py "
            "(functions there: lookup_order, convert)",
        ),
    ],
    ids=["missing-file", "missing-function"],
)
def test_a_missing_file_or_function_is_exit_2_naming_file_and_line(
    tmp_path: Path, change: tuple[str, str], message: str
) -> None:
    root = make_project(tmp_path, "http://127.0.0.1:9/v1")
    agent = root / "agent.yaml"
    agent.write_text(agent.read_text().replace(*change) + "test_cases:\n  - input: hi\n")
    for command in (["chat"], ["test"]):
        done = run_holodeck(*command, cwd=root, stdin="hi\n")
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(message), done.stderr


def test_a_tool_file_that_does_not_import_names_its_line(tmp_path: Path) -> None:
    root = make_project(tmp_path, "http://127.0.0.1:9/v1")
    write(root / "tools" / "orders.py", "import json\n\nraise RuntimeError('no database')\n")
    done = run_holodeck("chat", cwd=root, stdin="hi\n")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "Error: tools/orders.py:3: importing it raised RuntimeError: no database "
        "(the file of agent.yaml:12: tools[0].file)"
    ), done.stderr
    write(root / "tools" / "orders.py", "def lookup_order(:\n    pass\n")
    done = run_holodeck("chat", cwd=root, stdin="hi\n")
    assert done.returncode == 2
    assert done.stderr.startswith("Error: tools/orders.py:1: "), done.stderr
