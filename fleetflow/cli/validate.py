"""``fleetflow validate``: check everything render would check, write nothing."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, check_environment, load, trees
from fleetflow.cli.errors import handled
from fleetflow.errors import InputError, Problems, UsageError
from fleetflow.render.pipeline import render_environment
from fleetflow.render.summary import ValidatedEnvironment, ValidateSummary


@click.command()
@trees
@click.option(
    "--environment", help="Environment to check (default: the one the --env branch belongs to, or all)."
)
@FORMAT
def validate(main_dir: Path, env_dir: Path, environment: str | None, fmt: str) -> None:
    """Load, schedule, compose, validate and render in memory; report every problem; write nothing.

    Without --environment, the environment is taken from the env branch's GitOpsRepo (its name) when
    there is one, else every environment defined on main is checked against this branch.
    """
    with handled(fmt) as reply:
        plane = load(main_dir, env_dir)
        gitops = plane.gitops_repo()
        if environment:
            check_environment(plane, environment)
            names = [environment]
        elif gitops is not None and gitops.name in plane.environments:
            names = [gitops.name]
        elif plane.environments:
            names = sorted(plane.environments)
        else:
            raise UsageError("no Environment on main: pass --environment NAME")
        problems = Problems()
        counts: dict[str, int] = {}
        for name in names:
            try:
                result = render_environment(plane, name)
                counts[name] = len(result.state.assignments)
            except InputError as exc:
                problems.extend(exc.problems())
        problems.raise_if_any()

        def text() -> None:
            for name, count in counts.items():
                click.echo(f"ok: {name}: {count} assignments scheduled, composed, validated and rendered")

        reply.done(
            ValidateSummary(environments=[ValidatedEnvironment(name=n, assignments=c) for n, c in counts.items()]),
            text,
        )
