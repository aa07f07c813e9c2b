"""``fleetflow schedule``: re-render one environment at its pinned commit and update its PR (in one job, or in N
shard jobs and a stitch job)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import FLEET_NO_STEP, FLEET_WRITTEN, handled
from fleetflow.cli.fleet import fleet_options, make_context, plan_option, report_step
from fleetflow.cli.github_actions import actions_step, github_actions_options, schedule_report, shard_report
from fleetflow.cli.paths import CommandPath
from fleetflow.cli.render import foreign_lines
from fleetflow.errors import UsageError
from fleetflow.promotion.schedule import schedule_environment
from fleetflow.promotion.shards import ShardSpec, render_shard, stitch_environment
from fleetflow.render.summary import changes_text


@click.command()
@click.option("--environment", required=True, help="Environment to schedule.")
@click.option("--shard", "shard", metavar="K/N",
              help="Render only the cluster types of shard K of N and save them in --artifact (no push, no PR).")
@click.option("--artifact", type=CommandPath(exists=False),
              help="Folder a --shard job writes its manifest and git bundle into.")
@click.option("--stitch", type=CommandPath(),
              help="Folder holding every shard's artifact: commit them as one and update the PR.")
@fleet_options
@plan_option
@FORMAT
@github_actions_options
def schedule(environment: str, shard: str | None, artifact: Path | None, stitch: Path | None, forge: str | None,
             control_plane: str | None, config: Path | None, plan_dir: Path | None, fmt: str, github_actions: bool,
             job_summary: bool) -> None:
    """Render an environment at its pin; open or update its PR.

    The workflows run it on every push to an environment branch; run it by hand to render an environment
    again. It renders ENVIRONMENT from main@<pinned commit> + its environment branch, pushes the result to
    branch fleetflow/<environment> of the GitOps repo and creates, updates or closes that one PR. It never
    pushes to the environment's GitOps branch itself: the PR is merged by a person, or by fleetflow with the
    environment's pullRequest.autoMerge.

    \b
    Examples (on GitHub the repos and token come from GITHUB_REPOSITORY and GITHUB_TOKEN or .fleetflow.yaml):
      fleetflow schedule --environment dev
      fleetflow schedule --environment dev --forge local --control-plane control-plane.git
      fleetflow schedule --environment prod --shard 1/4 --artifact shard-1     # one of 4 shard jobs
      fleetflow schedule --environment prod --stitch shards                    # then: one commit, the PR

    \b
    No rendered change: no PR (an open one that became empty is closed). Concurrency `supersede` updates an
    open PR; `queue` leaves it until merged or closed.
    A new PR: the head branch is pushed, the PR opened, its reviewers asked, then labelled; an open PR: its
    description is updated, then its head pushed. A run stopped in between is finished by the next (reviewers
    no review was ever requested from are asked; one who reviewed or was taken off is not asked again).
    A PR closed without merging is not re-opened: when it proposed the same commit, a new PR proposes it
    again and the output names the closed one, if a person asked: run by hand, or in a workflow run they
    dispatched (GITHUB_EVENT_NAME=workflow_dispatch). A run an event started in GitHub Actions (a cron tick,
    a push, a status), reconcile and check-rollout's promotions leave it closed (operation rejected).
    Operation printed: created, updated, unchanged, closed, none, queued, merged, rejected; and for --stitch,
    superseded: the environment branch, the GitOps branch or a registered workload repository moved since
    the shards ran, so nothing is written (exit 0) and a newer run stitches the new inputs.

    \b
    Across N runners: `--shard K/N --artifact DIR` on each (K = 1..N) renders that shard's cluster types as
    git objects into DIR (nothing pushed); then `--stitch DIR` (every shard's DIR below it) commits once,
    the same commit one job gives, and updates the PR.

    Exit 0 done (also superseded), 1 the render refuses the input, 2 usage error, 3 forge or git failure
    (docs/design.md section 6).
    """
    step = actions_step("schedule", github_actions, job_summary)
    with handled(fmt, FLEET_WRITTEN, step, FLEET_NO_STEP) as reply:
        if stitch is not None and (shard is not None or artifact is not None):
            raise UsageError("--stitch runs alone: give either --shard K/N --artifact DIR, or --stitch DIR")
        if (shard is None) != (artifact is None):
            raise UsageError("--shard K/N and --artifact DIR go together")
        spec = ShardSpec.parse(shard) if shard is not None else None
        with make_context(forge, control_plane, config, fmt, plan_dir=plan_dir,
                          on_step=reply.stepped, warn=reply.warn) as ctx:
            if spec is not None:
                assert artifact is not None
                manifest = render_shard(ctx, environment, spec, artifact)
                if step is not None:
                    step.report(shard_report(manifest, artifact))

                def shard_text() -> None:
                    click.echo(f"{environment}: shard {spec}: {manifest.rendered} assignments rendered, "
                               f"{len(manifest.folders)} cluster-type folders changed; saved in {artifact}")
                    for line in changes_text(manifest.changes):
                        click.echo(line)
                    for line in foreign_lines(manifest.foreign, "kept"):
                        click.echo(line)

                reply.done(manifest, shard_text)
                return
            # asked by a person: a PR a person closed is proposed again, and said; an event's run leaves it closed
            asked = asked_by_a_person(os.environ)
            outcome = (stitch_environment(ctx, environment, stitch, propose_rejected=asked) if stitch is not None
                       else schedule_environment(ctx, environment, propose_rejected=asked))
            for warning in outcome.warnings:
                reply.warn(warning)
            report_step(step, ctx, schedule_report(outcome), plan_dir)

            def text() -> None:
                click.echo(f"{environment}: {outcome.operation}: {outcome.message}")
                for line in changes_text(outcome.changes):
                    click.echo(line)
                for line in foreign_lines(outcome.foreign, "kept"):
                    click.echo(line)

            reply.done(outcome, text)


def asked_by_a_person(environ: Mapping[str, str]) -> bool:
    """Whether a person asked for this run: outside GitHub Actions (``GITHUB_ACTIONS`` is "Always set to true when
    GitHub Actions is running the workflow"), or in a run they dispatched (``GITHUB_EVENT_NAME`` "The name of the
    event that triggered the workflow run", ``workflow_dispatch``; both: GitHub's "Variables reference", default
    environment variables). A run an event started (the shards workflow's cron tick, a push, a status) is no person
    asking: a PR a person closed without merging then stays closed."""
    return environ.get("GITHUB_ACTIONS") != "true" or environ.get("GITHUB_EVENT_NAME") == "workflow_dispatch"
