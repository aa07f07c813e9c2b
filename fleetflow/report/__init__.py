"""The one report path: every text fleetflow writes for people is a Jinja2 template rendered from result models.

Templates live in ``fleetflow/report/templates/`` (package data): PR bodies, status Markdown and HTML, plan
summaries, Actions job summaries. :func:`render_report` renders one from plain values or pydantic models.
HTML templates are autoescaped; undefined variables are errors. This folder is a leaf: it may import jinja2 and
``fleetflow.errors`` only; the modules that own the data (``promotion``, ``render``, ``cli``) call it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("fleetflow.report", "templates"),
        autoescape=select_autoescape(["html", "html.j2"]),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_report(name: str, **context: Any) -> str:
    """Render the report template ``name`` (a file in ``fleetflow/report/templates/``) with ``context``."""
    return _environment().get_template(name).render(**context)
