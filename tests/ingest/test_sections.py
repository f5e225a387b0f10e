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

--soft::
\tDoes not touch the index file or the working tree at all (but
\tresets the head to <commit>, just like all modes do). This leaves
\tall your changed files "Changes to be committed", as git status
\twould put it.

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
    assert _path_at(GIT_RESET, headings, "resets the head") == "git-reset(1) › OPTIONS › --soft"
    # a table's header row above a rule of dashes is no title
    assert _path_at(GIT_RESET, headings, "--soft   A") == "git-reset(1) › DISCUSSION"


#: What git's tutorials and command lists hold: admonitions, an admonition block, a list of
#: one-line entries.
ASCIIDOC = """\
= My First Object Walk

== Setting Up

Create a new branch from `master` and open `builtin/walken.c`.

NOTE: `trace_printf()` differs from `printf()` in that it can be turned on or
off at runtime::
this line follows the admonition.

[NOTE]
====
Instead of using the shorthand `add_head_to_pending()`, you could set up the
revision options yourself.
====

WARNING:
=========
The walk stops at the first missing object.

== Main porcelain commands

linkgit:git-add[1]::
\tAdd file contents to the index.

linkgit:git-range-diff[1]::
\tCompare two commit ranges (e.g. two versions of a branch).

linkgit:git-rebase[1]::
\tReapply commits on top of another base tip.
"""


def test_asciidoc_admonitions_and_list_entries_are_no_sections() -> None:
    headings = text_headings(ASCIIDOC)

    assert [h.title for h in headings] == [
        "My First Object Walk",
        "Setting Up",
        "Main porcelain commands",
    ]
    assert _path_at(ASCIIDOC, headings, "set up the\nrevision options") == (
        "My First Object Walk › Setting Up"
    )
    assert _path_at(ASCIIDOC, headings, "Compare two commit ranges") == (
        "My First Object Walk › Main porcelain commands"
    )


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
