"""The one report path: every text fleetflow writes for people is a Jinja2 template rendered from result models.

Templates live in ``fleetflow/report/templates/`` (package data): PR bodies, status Markdown and HTML, plan
summaries, Actions job summaries. :func:`render_report` renders one from the result objects themselves (templates
read their attributes). Escaping follows the template's suffix, so a template cannot forget it:

* ``.html.j2``: HTML autoescaping;
* ``.md.j2``: every ``{{ value }}`` is Markdown-escaped (:func:`fleetflow.report.markdown.text`) unless a filter
  already made it safe: ``code`` (a code span), ``fenced`` (a code block), ``link``, ``mermaid_label``;
* ``.txt.j2``: plain text for a terminal, printed as is.

Undefined variables are errors. This folder is a leaf: it may import jinja2 (and its markupsafe) and
``fleetflow.errors`` only; the modules that own the data (``promotion``, ``render``, ``cli``) call it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from fleetflow.report import markdown

PROBLEMS_IN_SUMMARY = 200
"""The problems (and the warnings) a job summary lists (``_changes.md.j2``'s ``problem_list``; the rest: the step's
log); fleetflow.cli.github_actions says so in the annotations."""


def short(sha: object) -> str:
    """A commit as people read it: its first 12 hex digits ('-' when there is none)."""
    return str(sha)[:12] if sha else "-"


def plural(count: int, singular: str, many: str | None = None) -> str:
    return f"{count} {singular if count == 1 else (many or singular + 's')}"


def _finalize_markdown(value: Any) -> Any:
    return markdown.text(value)


@cache
def _environment(kind: str) -> Environment:
    env = Environment(
        loader=PackageLoader("fleetflow.report", "templates"),
        autoescape=select_autoescape(["html", "html.j2"]) if kind == "html" else False,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        finalize=_finalize_markdown if kind == "md" else None,
    )
    env.filters.update(
        short=short,
        plural=plural,
        code=markdown.code,
        fenced=markdown.fenced,
        link=markdown.link,
        md=markdown.text,
        one_line=markdown.one_line,
        mermaid_label=markdown.mermaid_label,
        mermaid_id=markdown.mermaid_id,
    )
    env.globals["problems_in_summary"] = PROBLEMS_IN_SUMMARY
    return env


def _kind(name: str) -> str:
    for kind in ("html", "md"):
        if name.endswith(f".{kind}.j2") or name.endswith(f".{kind}"):
            return kind
    return "txt"


def render_report(name: str, **context: Any) -> str:
    """Render the report template ``name`` (a file in ``fleetflow/report/templates/``) with ``context``."""
    return _environment(_kind(name)).get_template(name).render(**context)
