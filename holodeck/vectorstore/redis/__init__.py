"""The ``redis`` backend: chunks in the Redis Query Engine. The ``IndexAdapter`` and its data
operations (``adapter``), the index's keys, schema, creation, checks and rebuild (``index``),
the keyword side (``keywords``), the locks (``lock``), redis-py's failures as holodeck's
errors (``errors``), a chunk's fields and tag filters (``fields``), and how a query is asked
and its reply read (``queries``)."""
