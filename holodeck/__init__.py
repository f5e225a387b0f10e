"""HoloDeck: turn folders of documents into knowledge bases an AI agent can search."""

__version__ = "0.1.0"
