"""The ``redis`` backend: chunks in the Redis Query Engine (``adapter``), their fields and
tag filters (``fields``), and how its replies are read (``queries``)."""
