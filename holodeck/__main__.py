"""``python -m holodeck`` runs the CLI."""

from holodeck.cli.main import main

main()
