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
    """Decide an environment's rollout gate; on success promote onwards.

    The workflows run it when a cluster posts a status on the GitOps repo or a fleetflow PR is merged (and
    reconcile runs the same gate on every event and the cron tick); run it by hand to see why an environment
    does not move on. It reads ENVIRONMENT's pin, the commits of its GitOps branch from the merge that carries
    the pinned commit to the tip, and the statuses and check runs the clusters posted on them; records the
    decision as the status fleetflow/<environment> on the main commit in the control-plane repo; and on
    success promotes that commit to the environments that come after once all their upstreams succeeded
    (their pins and PRs, as promote does). It never merges a PR or pushes to a GitOps environment branch.

    \b
    Examples (on GitHub the repos and token come from GITHUB_REPOSITORY and GITHUB_TOKEN or .fleetflow.yaml):
      fleetflow check-rollout --environment dev
      fleetflow check-rollout --environment dev --format json     # clusters: succeeded, failed, missing
      fleetflow check-rollout --environment dev --forge local --control-plane control-plane.git

    \b
    Gate: the Cluster inventory's statusContexts (or rollout.contextPattern / minClusters), soakTime,
    timeout. Any failure fails it at once; a missing status is pending until the timeout. Contexts are
    compared without case, as GitHub does. While clusters are missing, a context close to one's (another
    spelling, the name with its domain) is printed as "not counted"; at a timeout, a missing cluster that
    reported on another commit (the PR's head, the previous rollout) as "elsewhere". A gate recorded as
    success stays decided: its statuses are not read again.

    \b
    Printed: the gate state (pending, success, failure, or waiting-for-merge while the PR that carries the
    pin is open) and why, then each environment promoted or not. Exit 0 when pending, waiting or success,
    1 when the gate failed (a cluster failed, or the timeout passed) or a branch holds bad input, 2 usage
    error, 3 forge or git failure (docs/design.md section 6).
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
