"""HoloDeck: turn folders of documents into knowledge bases an AI agent can search.

The library's face is ``KnowledgeBase`` (``holodeck.knowledge_base``): imported on first
use, so ``import holodeck`` (and every command that does not search) stays quick.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from holodeck.knowledge_base import KnowledgeBase

__version__ = "0.1.0"
__all__ = ["KnowledgeBase", "__version__"]


def __getattr__(name: str) -> Any:
    """``holodeck.KnowledgeBase``, imported when first asked for."""
    if name == "KnowledgeBase":
        from holodeck.knowledge_base import KnowledgeBase

        return KnowledgeBase
    raise AttributeError(f"module 'holodeck' has no attribute {name!r}")
