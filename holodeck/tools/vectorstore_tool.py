"""``VectorStoreTool``: a knowledge base as the agent's tool (the tool of the interface
contract, docs/contract.md): its function definition for the LLM, and ``search`` returning
the formatted text the LLM reads.
Everything else a knowledge base does is ``holodeck.knowledge_base.KnowledgeBase``'s."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from holodeck.config.loader import Project
from holodeck.knowledge_base import KnowledgeBase, clean_query

if TYPE_CHECKING:
    from holodeck.ingest.status import Progress


class VectorStoreTool(KnowledgeBase):
    """Semantic search over one folder of documents, offered to the agent as a tool."""

    @property
    def description(self) -> str:
        """What the LLM is told the tool does."""
        return self.resolved.config.description or f"Semantic search over the {self.name} documents"

    def tool_definition(self) -> dict[str, Any]:
        """The function definition given to the LLM: one required ``query``."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": "Natural language search query"}
                },
                "required": ["query"],
            },
        }

    async def initialize(
        self, force_ingest: bool = False, progress: Progress | None = None, wait: bool = True
    ) -> None:
        """Ingest the source (incrementally, or everything with ``force_ingest``)."""
        import asyncio  # the CLI's search and ingest have no event loop

        await asyncio.to_thread(self.initialize_sync, force_ingest, progress, wait)

    async def search(self, query: str) -> str:
        """Search and return the formatted text the LLM reads."""
        if not self.is_initialized:
            raise RuntimeError("VectorStoreTool must be initialized before search")
        query = clean_query(query)
        import asyncio

        results, total = await asyncio.to_thread(self.find, query)
        return self.render(query, results, total)


def build_tools(project: Project, names: list[str] | None = None) -> list[VectorStoreTool]:
    """One tool per ``type: vectorstore`` entry (or just the ``names`` given)."""
    chosen = [project.tool(n) for n in names] if names else project.tools
    return [VectorStoreTool(t, project) for t in chosen]
