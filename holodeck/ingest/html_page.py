"""The part of an HTML page that is its content, and the anchors of its headings.

A page's navigation, header, footer and sidebars are taken out by what the page itself says
they are (``<nav>``, ``<aside>``, a page-level ``<header>`` or ``<footer>``, ARIA roles such
as ``navigation`` or ``banner``), and its main region (``<main>``, ``role="main"``, or its
one ``<article>``) is kept alone when it has one. The text extractor then reads only what
is left, short page or long: a page of five lines with a sidebar of forty links is indexed
as its five lines. Links become their text, images go.

Each heading's anchor (``#bleeding-air``: its own id, an id inside it, the ``href`` of its
permalink mark, or the id of the section it opens) is kept, so a chunk can name a place a
browser opens: ``pumps.html#bleeding-air``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import lxml.html
from lxml import etree

#: Elements that are never content (not ``<form>``: some sites wrap a whole page in one).
_NEVER = ("script", "style", "noscript", "template", "nav", "aside", "button", "dialog")
#: ARIA roles of a page's chrome.
_CHROME_ROLES = {
    "navigation",
    "banner",
    "contentinfo",
    "complementary",
    "search",
    "menu",
    "menubar",
    "toolbar",
    "tree",
}
#: A ``<header>`` or ``<footer>`` inside one of these is the section's own (its title), not
#: the page's (HTML's rule for the banner and contentinfo landmarks).
_SECTIONING = {"article", "aside", "main", "nav", "section"}
_HEADINGS = ("h1", "h2", "h3", "h4", "h5", "h6")
#: A permalink's mark after a heading's text (Sphinx's ¶, Node's #).
_MARKS = {"¶", "#", "§", "🔗", "link"}
#: Classes highlighters give each line of a code block (Prism, Shiki, others).
_LINE_CLASSES = {"line", "token-line", "code-line", "highlight-line"}
_NON_WORD = re.compile(r"\W+")
# An XHTML page's first line: lxml refuses a declared encoding in text already decoded.
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")


@dataclass(frozen=True)
class Page:
    """A page's content as HTML, what it holds, and its headings' anchors in page order."""

    html: str
    headings: tuple[tuple[str, str], ...]  # (title key, anchor id or ""), in page order
    has_code: bool


def title_key(title: str) -> str:
    """A heading's title as two conversions of it compare equal: words only, any case."""
    return " ".join(_NON_WORD.sub(" ", title).casefold().split())[:60]


def page_content(html: str) -> Page:
    """The page's main region, its chrome out (see the module's docstring); ``html`` is
    ``""`` for a page without an element (blank, or only a comment)."""
    try:
        root = lxml.html.document_fromstring(_XML_DECLARATION.sub("", html, count=1))
    except etree.ParserError:
        return Page("", (), False)
    _drop_chrome(root)
    region = _main_region(root)
    headings = tuple(_heading(h) for h in region.iter(*_HEADINGS))
    for mark in [a for a in region.iter("a") if _is_mark(a)]:
        mark.drop_tree()
    for image in list(region.iter("img", "svg", "picture")):
        image.drop_tree()
    for link in list(region.iter("a")):
        link.drop_tag()  # its text stays
    for pre in region.iter("pre"):
        _break_code_lines(pre)
    has_code = next(region.iter("pre"), None) is not None
    content = etree.tostring(region, encoding="unicode", method="html")
    body = content if region.tag == "body" else f"<body>{content}</body>"
    return Page(f"<html>{body}</html>", headings, has_code)


def _drop_chrome(root: lxml.html.HtmlElement) -> None:
    """Take out the elements that are a page's navigation, banner, footer or sidebars."""
    doomed: list[lxml.html.HtmlElement] = []
    for element in root.iter():
        if not isinstance(element.tag, str) or _is_chrome(element):
            doomed.append(element)  # comments and processing instructions too
    for element in doomed:
        if element.getparent() is not None:
            element.drop_tree()  # the text after it stays


def _is_chrome(element: lxml.html.HtmlElement) -> bool:
    """Navigation, banner, footer or sidebar by its tag or role; hidden; a ``<header>`` or
    ``<footer>`` of the page (not of an article or section: that one holds its title)."""
    role = (element.get("role") or "").strip().lower()
    if element.tag in _NEVER or role in _CHROME_ROLES or element.get("hidden") is not None:
        return True
    if (element.get("aria-hidden") or "").lower() == "true":
        return True
    return element.tag in ("header", "footer") and not any(
        a.tag in _SECTIONING for a in element.iterancestors()
    )


def _main_region(root: lxml.html.HtmlElement) -> lxml.html.HtmlElement:
    """The page's one main region, else its one article, else its body."""
    for path in ("//main", "//*[@role='main']", "//article"):
        found = root.xpath(path)
        if len(found) == 1:
            return found[0]
    body = root.find("body")
    return body if body is not None else root


def _break_code_lines(pre: lxml.html.HtmlElement) -> None:
    """A newline after each line element of a code block (``<span class="token-line">``):
    highlighters that draw lines by style alone would have them read as one line."""
    for element in pre.iter():
        classes = (element.get("class") or "").split()
        if not _LINE_CLASSES.intersection(classes) or element is pre:
            continue
        if not (element.tail or "").startswith("\n") and not element.text_content().endswith("\n"):
            element.tail = "\n" + (element.tail or "")


def _is_mark(link: lxml.html.HtmlElement) -> bool:
    """A permalink mark: a link to an anchor whose text is only a symbol (``¶``)."""
    text = (link.text_content() or "").strip()
    return (link.get("href") or "").startswith("#") and (not text or text in _MARKS)


def _heading(heading: lxml.html.HtmlElement) -> tuple[str, str]:
    """A heading's title key and anchor: its id, an id inside it, its permalink's target,
    or the id of the element it is the first child of (``<section id=...><h2>``)."""
    anchor = heading.get("id") or ""
    if not anchor:
        for inner in heading.iter():
            anchor = inner.get("id") or (inner.get("name") if inner.tag == "a" else "") or ""
            if anchor:
                break
    if not anchor:
        for link in heading.iter("a"):
            if _is_mark(link):
                anchor = (link.get("href") or "")[1:]
                break
    parent = heading.getparent()
    if not anchor and parent is not None and parent.get("id"):
        first = next((c for c in parent if isinstance(c.tag, str)), None)
        if first is heading:
            anchor = parent.get("id") or ""
    marks = "".join(
        (a.text_content() or "") for a in heading.iter("a") if _is_mark(a)
    )  # the mark's symbol is no part of the title
    title = heading.text_content() or ""
    if marks and title.rstrip().endswith(marks.strip()):
        title = title.rstrip()[: -len(marks.strip())]
    return title_key(title), anchor.strip()
