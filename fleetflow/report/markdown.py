"""Markdown that data cannot break: escaping for text, table cells, code spans, fenced blocks and Mermaid labels.

Every value a ``.md.j2`` template prints goes through :func:`text` unless a filter here already made it safe
(they return :class:`markupsafe.Markup`). The rules come from the specs GitHub renders with:

* CommonMark 0.31, "Backslash escapes" (https://spec.commonmark.org/0.31.2/#backslash-escapes): any ASCII
  punctuation may be backslash-escaped and is then literal; "Code spans": a span opened by N backticks ends at the
  next run of exactly N backticks, so a span longer than every run inside it cannot be closed early, and its content
  is never parsed as Markdown or HTML; "Fenced code blocks": a fence closes only on a fence at least as long.
* GitHub Flavored Markdown, "Tables (extension)" (https://github.github.com/gfm/#tables-extension-): cells are split
  on ``|`` before inline parsing, so a pipe inside a cell, even inside a code span, must be written ``\\|``.
* Mermaid flowchart syntax (https://mermaid.js.org/syntax/flowchart.html#entity-codes-to-escape-characters): a
  quoted node label ends at ``"``; entity codes such as ``#quot;`` stand for the characters themselves.
"""

from __future__ import annotations

import re

from markupsafe import Markup

# punctuation with a meaning anywhere in a line: emphasis, code, links and images, raw HTML, table cells,
# strikethrough (and '&', which starts an entity)
_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
# what only means something at a line start, and only followed by a blank or the end (CommonMark "ATX headings",
# "List items", "Setext headings", "Thematic breaks"): '#', '-', '+' markers, '1.' / '1)' markers, '---' / '==='
_LINE_START = re.compile(r"^(#{1,6}|[-+])(?=[ \t]|$)|^([-=])(?=[-= \t]*$)")
_ORDERED = re.compile(r"^(\d{1,9})([.)])(?=[ \t]|$)")  # an ordered list marker: the '.' or ')' gets escaped
_BACKTICKS = re.compile(r"`+")


def one_line(value: object) -> str:
    """The value on one line: a line break in data would end a table row or a list item."""
    return " ".join(str(value).splitlines()) if value is not None else ""


def inline(value: object) -> str:
    """Escape a value printed inside a line (never at its start). ``Markup`` passes."""
    if isinstance(value, Markup):
        return str(value)
    return _SPECIAL.sub(r"\\\1", one_line(value).replace("&", "&amp;"))


def text(value: object) -> str:
    """Escape a value printed as Markdown text anywhere, a line start included (a sentence, a heading, a table
    cell). ``Markup`` passes."""
    if isinstance(value, Markup):
        return str(value)
    # blanks at the start: Markdown drops them from a paragraph or a cell, but 1-3 would still let '#' or '-' start
    # a heading or a list, and 4 would start a code block
    escaped = _LINE_START.sub(lambda m: "\\" + m.group(0), inline(value).lstrip(" \t"))
    return _ORDERED.sub(r"\1\\\2", escaped)


def code(value: object, cell: bool = True) -> Markup:
    """A code span that holds the value literally: fenced by more backticks than any run inside it, padded so that
    CommonMark strips nothing of it. In a table ``cell`` (the default) a ``|`` is written ``\\|``, the one escape
    GFM reads inside a code span there; elsewhere (``cell=False``) it would show, so it is left alone."""
    content = one_line(value)
    if not content:
        return Markup("")
    if cell:
        content = content.replace("|", "\\|")
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    fence = "`" * (longest + 1)
    spaced = content.startswith(" ") and content.endswith(" ") and content.strip(" ")
    pad = " " if content.startswith("`") or content.endswith("`") or spaced else ""
    return Markup(f"{fence}{pad}{content}{pad}{fence}")


def fenced(value: object, info: str = "") -> Markup:
    """A fenced code block around ``value`` (several lines) that no line of it can close."""
    body = re.sub(r"\r\n?", "\n", str(value)).rstrip("\n")  # Markdown reads CR and CRLF as line ends too
    longest = max((len(run) for run in _BACKTICKS.findall(body)), default=0)
    fence = "`" * max(3, longest + 1)
    return Markup(f"{fence}{info}\n{body}\n{fence}")


def link(label: object, url: object) -> Markup:
    """``[label](url)`` with the label escaped; the URL must be http(s) (anything else is shown as text)."""
    target = one_line(url)
    if not re.match(r"^https?://[^\s()<>]+$", target):
        return Markup(inline(label))
    return Markup(f"[{inline(label)}]({target})")


def mermaid_label(value: object) -> Markup:
    """Text inside a quoted Mermaid node label."""
    entities = {'"': "#quot;", "<": "#lt;", ">": "#gt;", "#": "#35;", "&": "#amp;"}
    return Markup("".join(entities.get(ch, ch) for ch in one_line(value)))


def mermaid_id(value: object) -> Markup:
    """A Mermaid node id from a name: letters, digits and ``_`` only, one id per name. Lowercase letters and digits
    stay, ``-`` becomes ``_`` (``prod-eu``: ``env_prod_eu``), any other character ``_<hex code>X`` (``prod.eu``:
    ``env_prod_2EXeu``), so that no two names share a node. Until 2026-11-29 every such character became ``_``:
    Environments ``prod-eu``, ``prod.eu`` and ``prod_eu`` (all valid names) were one node of the summary's chain,
    with arrows to itself and the colour of the last one."""
    return Markup("env_" + "".join(ch if ch in _ID_KEEPS else "_" if ch == "-" else f"_{ord(ch):X}X"
                                   for ch in str(value)))


_ID_KEEPS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
