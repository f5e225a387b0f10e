"""The SQLite engine under two backends: ``local`` (a file) and ``memory`` (volatile).

The schema and its migrations (``schema``), the writes (``index``), the vector side
(``vectors``, its lists and codes), the keyword side (``fulltext``, ``postings``) and the SQL
both search sides share (``query``).
"""
