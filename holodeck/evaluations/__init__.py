"""Evaluation metrics for ``holodeck test``: standard ones computed here, geval and rag ones
asked of a judge model (cached), and the comparison with a baseline report."""


def score_text(value: float) -> str:
    """A score as every output writes it: the value the reports store (4 digits), shown with
    2 decimals, so the console, the tables, the reasons and the reports never disagree."""
    return f"{round(value, 4):.2f}"
