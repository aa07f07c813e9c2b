"""Human summaries of a render: used by the CLI, plan, job summaries and PR bodies."""

from __future__ import annotations

from pydantic import Field

from fleetflow.render.pipeline import Changes, RenderResult
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


class ValidateSummary(Result):
    """``fleetflow validate``'s result: every environment checked, with its number of assignments."""

    environments: list[ValidatedEnvironment]


def _listing(title: str, items: list[str]) -> list[str]:
    if not items:
        return []
    lines = [f"  {title} ({len(items)}):"]
    lines += [f"    {item}" for item in items[:MAX_LISTED]]
    if len(items) > MAX_LISTED:
        lines.append(f"    ... and {len(items) - MAX_LISTED} more")
    return lines


def changes_text(changes: Changes) -> list[str]:
    lines = []
    lines += _listing("added", changes.added)
    lines += _listing("removed", changes.removed)
    lines += _listing("changed", changes.changed)
    lines += _listing("config keys changed", changes.config_keys)
    lines += _listing("held back (kept their last good files)", changes.held_back)
    return lines


def headline(result: RenderResult) -> str:
    c = result.changes
    total = len(result.state.assignments)
    return (
        f"{result.environment}: {total} assignments, {len(c.added)} added, {len(c.changed)} changed, "
        f"{len(c.removed)} removed, {c.unchanged} unchanged"
        + (f", {len(c.held_back)} held back" if c.held_back else "")
    )
