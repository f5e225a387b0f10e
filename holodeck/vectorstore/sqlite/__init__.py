"""The SQLite engine under two backends: ``local`` (a file) and ``memory`` (volatile).

The schema and its migrations (``schema``), the writes (``index``), the vector side
(``vectors``, the search; ``vector_upkeep``, writing its files; ``vector_file``, naming and
checking one; their ``lists`` and ``codes``; ``matrix``, vectors read out of SQLite), the
keyword side (``fulltext``, ``postings``, ``postings_file``) and the SQL both search sides
share (``query``).
"""
