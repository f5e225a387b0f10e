"""``from holodeck.lib.test_runner.code_grader import GraderContext, GraderResult``, as a
grader written for the original HoloDeck imports them: holodeck's own, re-exported."""

from holodeck.evaluations.code_grader import GraderContext, GraderResult, ToolInvocation

__all__ = ["GraderContext", "GraderResult", "ToolInvocation"]
