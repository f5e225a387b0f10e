"""What a chunker's run over the edited documents comes to: one summary for holodeck's
chunker (`bench_chunking.py`) and LangChain's (`peers_chunking.py`). Standard library only,
so the peers' environment imports it too."""

from __future__ import annotations

import statistics


def edit_summary(chunks: int, fills: list[int], changed: list[int]) -> dict[str, float]:
    """Chunks, their mean fill in tokens, and the chunks each edit re-embeds."""
    return {
        "chunks": chunks,
        "mean_tokens_per_chunk": round(statistics.mean(fills), 1),
        "edits": len(changed),
        "changed_chunks_per_edit_mean": round(statistics.mean(changed), 2),
        "changed_chunks_per_edit_p90": sorted(changed)[int(0.9 * len(changed))],
        "changed_chunks_per_edit_max": max(changed),
    }
