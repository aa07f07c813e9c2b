"""``fleetflow doctor``: check a live setup (workflows where GitHub reads them, App permissions, auto-merge,
default branches, status contexts, branch and tag rules, the Actions setting for PRs, ...) and print each problem
with its fix."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import handled
from fleetflow.cli.fleet import fleet_options, make_context
from fleetflow.errors import ExitCode
from fleetflow.promotion.doctor import diagnose


@click.command("doctor")
@fleet_options
@FORMAT
def doctor_command(forge: str | None, control_plane: str | None, config: Path | None, fmt: str) -> None:
    """Check a live setup through git and the forge's API.

    Run it after init, and whenever a promotion does not move: it checks the control plane and its GitOps
    repositories and prints each problem with its fix. Writes nothing.

    \b
    Examples (on GitHub the repos and token come from GITHUB_REPOSITORY and GITHUB_TOKEN or .fleetflow.yaml):
      fleetflow doctor --control-plane contoso/control-plane
      fleetflow doctor --forge local --control-plane control-plane.git

    \b
    Exit 0 when healthy, 1 when any problem was found (each printed with its fix), 3 when the forge or git failed.
    Checks: the caller workflow on every branch GitHub reads it from (the branches its push and pull_request filters
    run for, secrets passed by name and not inherited), the default branches, the GitHub App's permissions,
    autoMerge vs the repository's auto-merge setting, statuses on the GitOps branch tips whose contexts match no
    Cluster of the inventory, the checks the GitOps branches require, merge records of environments a GitOps
    repository no longer serves, rulesets that would decline fleetflow's own pushes (the pin, the PR head branches)
    or its merge records, branch protection rules that require checks of the environment branches (the pin), the
    shards workflow of sharded environments, the GitHub Environments the jobs use, and whether GitHub lets a
    workflow's GITHUB_TOKEN open the GitOps PRs when fleetflow runs with one (docs/setup.md lists each check with
    what it reads).
    """
    with handled(fmt) as reply, make_context(forge, control_plane, config, fmt, warn=reply.warn) as ctx:
        found = diagnose(ctx)

        def text() -> None:
            for line in found.checked:
                click.echo(f"ok       {line}")
            for line in found.skipped:
                click.echo(f"skipped  {line}")
            click.echo("healthy" if not found.findings else f"{len(found.findings)} problem(s):")

        problems = [f.to_problem() for f in found.findings]
        reply.done(found, text, problems=problems,
                   exit_code=ExitCode.REFUSED if problems else ExitCode.DONE)
