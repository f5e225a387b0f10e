"""What a test case's span says (``holodeck.tracing``): its outcome, not its content."""

from __future__ import annotations

from typing import Any

from holodeck.testing.outcomes import CaseResult


def case_attributes(result: CaseResult) -> dict[str, Any]:
    """A case's status, turns, tool calls, checks and metrics, as ``holodeck.test_case.*``."""
    return {
        "holodeck.test_case.index": result.index,
        "holodeck.test_case.name": result.case.name,
        "holodeck.test_case.status": result.status,
        "holodeck.test_case.turns": len(result.turns),
        "holodeck.test_case.tool_calls": len(result.tool_calls),
        "holodeck.test_case.checks_failed": sum(not c.passed for c in result.checks),
        "holodeck.test_case.metrics": [m.name for m in result.metrics] or None,
        "holodeck.test_case.error_type": result.error_type,
    }
