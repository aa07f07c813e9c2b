"""``fleetflow schedule``: re-render one environment at its pinned commit and update its PR."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import FLEET_WRITTEN, handled
from fleetflow.cli.fleet import fleet_options, make_context
from fleetflow.promotion.schedule import schedule_environment
from fleetflow.render.summary import changes_text


@click.command()
@click.option("--environment", required=True, help="Environment to schedule.")
@fleet_options
@FORMAT
def schedule(environment: str, forge: str | None, control_plane: str | None, config: Path | None, fmt: str) -> None:
    """Render ENVIRONMENT from main@<pinned commit> + its environment branch and create, update or close
    its one fleetflow PR (head branch fleetflow/<environment>) in the GitOps repo.

    \b
    Runs on every push to the environment branch. No rendered change: no PR (an open one that became
    empty is closed). Concurrency `supersede` updates an open PR; `queue` leaves it until merged or closed.
    Operation printed: created, updated, unchanged, closed, none, queued, merged.
    """
    with handled(fmt, FLEET_WRITTEN) as reply, make_context(forge, control_plane, config, fmt) as ctx:
        outcome = schedule_environment(ctx, environment)

        def text() -> None:
            click.echo(f"{environment}: {outcome.operation}: {outcome.message}")
            for line in changes_text(outcome.changes):
                click.echo(line)

        reply.done(outcome, text)
