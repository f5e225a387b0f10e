"""Every chunk knows its section: heading paths from Markdown, reStructuredText and AsciiDoc
as real manuals write them (the shapes of git's man pages and Python's library docs)."""

from __future__ import annotations

from holodeck.ingest.sections import markdown_headings, section_paths, text_headings

GIT_RESET = """\
git-reset(1)
============

NAME
----
git-reset - Reset current HEAD to the specified state

OPTIONS
-------

-q::
--quiet::
\tBe quiet, only report errors.

EXAMPLES
--------

Undo add::
+
------------
$ edit
$ git add frotz.c filfre.c
------------

Undo a commit and redo::
+
------------
$ git commit ...
$ git reset --soft HEAD^
------------
+
This is most often done when you remembered what you just committed is incomplete.

DISCUSSION
----------

....
working index HEAD target         working index HEAD
----------------------------------------------------
 A       B     C    D     --soft   A       B     D
....
"""


def _path_at(text: str, headings: list, phrase: str) -> str:
    start = text.index(phrase)
    return section_paths(headings, [(start, start + len(phrase))])[0]


def test_a_man_page_in_asciidoc_names_its_examples_and_options() -> None:
    headings = text_headings(GIT_RESET)

    assert _path_at(GIT_RESET, headings, "most often done") == (
        "git-reset(1) › EXAMPLES › Undo a commit and redo"
    )
    assert _path_at(GIT_RESET, headings, "Be quiet") == "git-reset(1) › OPTIONS › -q, --quiet"
    # a table's header row above a rule of dashes is no title
    assert _path_at(GIT_RESET, headings, "--soft   A") == "git-reset(1) › DISCUSSION"


RST = """\
:mod:`json` --- JSON encoder and decoder
========================================

Basic Usage
-----------

.. function:: dumps(obj, *, indent=None, sort_keys=False)

   Serialize *obj* to a JSON formatted :class:`str`.

   If *sort_keys* is true (default: ``False``), the output of dictionaries
   will be sorted by key::

       json.dumps(data, sort_keys=True)

Exceptions
----------

.. exception:: JSONDecodeError(msg, doc, pos)
"""


def test_restructuredtext_titles_and_api_entries_make_the_path() -> None:
    headings = text_headings(RST)

    assert _path_at(RST, headings, "sorted by key") == (
        "json --- JSON encoder and decoder › Basic Usage › "
        "dumps(obj, *, indent=None, sort_keys=False)"
    )
    # "will be sorted by key::" opens a literal block: it is no heading
    assert "will be sorted by key" not in [h.title for h in headings]


MARKDOWN = """\
# Timers

Intro text.

## Class: `Timeout`

### `timeout.unref()`

When called, the active `Timeout` object will not require the event loop to stay active.

```bash
# a comment in a code block is not a heading
node app.js
```

Setext title
------------

Under it.
"""


def test_markdown_headings_skip_code_and_read_setext_titles() -> None:
    headings = markdown_headings(MARKDOWN)

    assert [h.title for h in headings] == [
        "Timers",
        "Class: Timeout",
        "timeout.unref()",
        "Setext title",
    ]
    in_code = _path_at(MARKDOWN, headings, "node app.js")
    assert in_code == "Timers › Class: Timeout › timeout.unref()"
    assert _path_at(MARKDOWN, headings, "Under it") == "Timers › Setext title"
