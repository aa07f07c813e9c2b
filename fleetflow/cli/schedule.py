"""``fleetflow schedule``: re-render one environment at its pinned commit and update its PR."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import FLEET_WRITTEN, handled
from fleetflow.cli.fleet import fleet_options, make_context, plan_option, plan_outputs
from fleetflow.cli.github_actions import actions_step, github_actions_options, schedule_report
from fleetflow.promotion.schedule import schedule_environment
from fleetflow.promotion.status import as_markdown, fleet_status
from fleetflow.render.summary import changes_text


@click.command()
@click.option("--environment", required=True, help="Environment to schedule.")
@fleet_options
@plan_option
@FORMAT
@github_actions_options
def schedule(environment: str, forge: str | None, control_plane: str | None, config: Path | None,
             plan_dir: Path | None, fmt: str, github_actions: bool, job_summary: bool) -> None:
    """Render ENVIRONMENT from main@<pinned commit> + its environment branch and create, update or close
    its one fleetflow PR (head branch fleetflow/<environment>) in the GitOps repo.

    \b
    Runs on every push to the environment branch. No rendered change: no PR (an open one that became
    empty is closed). Concurrency `supersede` updates an open PR; `queue` leaves it until merged or closed.
    Operation printed: created, updated, unchanged, closed, none, queued, merged.
    """
    step = actions_step("schedule", github_actions, job_summary)
    with handled(fmt, FLEET_WRITTEN, step) as reply, \
            make_context(forge, control_plane, config, fmt, plan_dir=plan_dir) as ctx:
        outcome = schedule_environment(ctx, environment)
        if step is not None:
            report = schedule_report(outcome)
            report.outputs.update(plan_outputs(plan_dir))
            step.report(report, lambda: as_markdown(fleet_status(ctx)))

        def text() -> None:
            click.echo(f"{environment}: {outcome.operation}: {outcome.message}")
            for line in changes_text(outcome.changes):
                click.echo(line)

        reply.done(outcome, text)
