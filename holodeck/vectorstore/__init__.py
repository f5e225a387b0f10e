"""The storage layer (docs/contract.md, "The store"): ``VectorStore`` (``store``) checks, a
backend stores.

Backends: ``local`` (``local``: a SQLite file, the embedded default), ``memory`` (``memory``:
the same engine, volatile) and ``redis`` (the ``redis`` package); the SQLite engine both of
the first two run on is the ``sqlite`` package. ``adapter`` says what a backend implements,
``factory`` which one a tool's configuration opens.
"""
