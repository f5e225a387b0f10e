"""Evaluation metrics for ``holodeck test``: standard ones computed here, geval and rag ones
asked of a judge model (cached), and the comparison with a baseline report."""
