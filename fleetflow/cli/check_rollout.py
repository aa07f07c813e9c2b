"""``fleetflow check-rollout``: evaluate the rollout gate of one environment and promote onwards on success."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import FLEET_NO_STEP, FLEET_WRITTEN, handled
from fleetflow.cli.fleet import fleet_options, make_context, report_step
from fleetflow.cli.github_actions import actions_step, check_rollout_report, github_actions_options
from fleetflow.errors import Problem
from fleetflow.promotion.check_rollout import RolloutOutcome, check_rollout


@click.command("check-rollout")
@click.option("--environment", required=True, help="Environment whose rollout to check.")
@fleet_options
@FORMAT
@github_actions_options
def check_rollout_command(environment: str, forge: str | None, control_plane: str | None, config: Path | None,
                          fmt: str, github_actions: bool, job_summary: bool) -> None:
    """Read the statuses the clusters posted on the GitOps commit that carries ENVIRONMENT's pinned main
    commit, decide the gate, record fleetflow/<environment> on that main commit, and on success promote
    the commit to the environments that come after (once all their upstreams succeeded).

    \b
    Gate: the Cluster inventory's statusContexts (or rollout.contextPattern / minClusters), soakTime,
    timeout; any failure fails fast; a missing status is pending. Exit 0 when pending or success,
    1 when the gate failed.
    """
    step = actions_step("check-rollout", github_actions, job_summary)
    with handled(fmt, FLEET_WRITTEN, step, FLEET_NO_STEP) as reply, \
            make_context(forge, control_plane, config, fmt, on_step=reply.stepped, warn=reply.warn) as ctx:
        outcome = check_rollout(ctx, environment)
        report_step(step, ctx, check_rollout_report(outcome))

        def text() -> None:
            click.echo(f"{environment}: {outcome.state}: {outcome.description}")
            for stray in outcome.decision.strays if outcome.decision is not None else ():
                if str(stray) not in outcome.description:  # cut from the status's 140 characters, or not in it
                    click.echo(f"  not counted: {stray}")
            for note in outcome.decision.elsewhere if outcome.decision is not None else ():
                if note not in outcome.description:
                    click.echo(f"  elsewhere: {note}")
            for promoted in outcome.promoted:
                click.echo(f"  promoted: {promoted.message}")
            for skipped in outcome.skipped:
                click.echo(f"  not promoted: {skipped}")

        problems = [Problem(f"{environment}: failure: {outcome.description}", None, _hint(outcome))] \
            if outcome.state == "failure" else []
        reply.done(outcome, text, problems=problems)


def _hint(outcome: RolloutOutcome) -> str:
    """What to do about a failed gate: a cluster that failed is fixed and a new commit promoted; a cluster whose
    report never came (the gate timed out) is a reporter to check, and a late success still passes the gate."""
    decision = outcome.decision
    if decision is None or decision.failed:  # a failure without a failed cluster is a timeout
        return "fix the failing clusters, then promote a new commit (or roll back)"
    where = f"GitOps commit {outcome.gitops_commit[:12]} or a later one of its branch" if outcome.gitops_commit \
        else "the GitOps commits of this rollout"
    if decision.strays:
        return ("set each Cluster's spec.statusContext to the context its reporter posts, or make the reporter post "
                "the expected one: the gate compares contexts as written (only case aside); a success that comes "
                "late still passes the gate at the next check")
    return (f"no report the gate counts came from the missing clusters on {where}: check that each reconciles "
            "that branch and posts its statusContext on the commit it applied (docs/reporting-status.md; "
            "fleetflow doctor lists the contexts no Cluster expects); a success that comes late still passes the "
            "gate at the next check")
