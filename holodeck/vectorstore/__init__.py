"""The storage layer (seed 004): ``VectorStore`` checks, an ``IndexAdapter`` stores."""
