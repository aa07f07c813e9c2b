"""The results of render, plan and validate, and their summaries for a terminal (``fleetflow plan``, ``render``,
``schedule``): the report templates ``headline.txt.j2`` and ``changes.txt.j2``."""

from __future__ import annotations

from pydantic import Field

from fleetflow.render.pipeline import Changes, RenderResult
from fleetflow.report import render_report
from fleetflow.results import Result

MAX_LISTED = 20


class RenderSummary(Result):
    """``fleetflow render``'s result."""

    environment: str
    output: str
    assignments: int
    rendered: int
    changes: Changes
    written: list[str]
    deleted: list[str]
    foreign: list[str] = Field(default_factory=list)  # kept: not written by fleetflow


class PlanSummary(Result):
    """``fleetflow plan``'s result: what render would change, and the unified diff."""

    environment: str
    changes: Changes
    assignments: int
    delete: list[str] = Field(default_factory=list)  # every file render would delete (fleetflow wrote them)
    foreign: list[str] = Field(default_factory=list)  # files render keeps: not written by fleetflow
    diff: str


class ValidatedEnvironment(Result):
    name: str
    assignments: int
    main_tree: str  # the main tree checked: a path, or branch@sha when read from git (--into)
    env_tree: str


class ValidateSummary(Result):
    """``fleetflow validate``'s result: every environment checked, with its number of assignments."""

    environments: list[ValidatedEnvironment]


def changes_text(changes: Changes) -> list[str]:
    """The names added, removed, changed, the config keys changed and what was held back, as indented lines
    (report template ``changes.txt.j2``)."""
    return render_report("changes.txt.j2", changes=changes, limit=MAX_LISTED).strip("\n").splitlines()


def headline(result: RenderResult) -> str:
    return render_report("headline.txt.j2", result=result).strip()
