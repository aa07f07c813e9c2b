"""``fleetflow promote``: pin a main commit on an environment (only after its upstreams rolled it out)."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import FLEET_NO_STEP, FLEET_WRITTEN, handled
from fleetflow.cli.fleet import fleet_options, make_context, report_step
from fleetflow.cli.github_actions import actions_step, github_actions_options, promote_report
from fleetflow.promotion.promote import PromoteResult, promote_many


@click.command()
@click.option("--environment", help="Environment to promote to (default: every first environment, as on a push "
              "to main).")
@click.option("--commit", required=True, help="The main commit (full or abbreviated sha).")
@click.option("--release", is_flag=True, help="Release a held environment (after a rollback) and move it to --commit "
              "(its pin or a newer commit; an older one is refused).")
@fleet_options
@FORMAT
@github_actions_options
def promote(environment: str | None, commit: str, release: bool, forge: str | None, control_plane: str | None,
            config: Path | None, fmt: str, github_actions: bool, job_summary: bool) -> None:
    """Pin a main commit on an environment, then schedule it.

    The workflows run it on a push to main and once a rollout succeeds; run it by hand to promote a commit
    the workflows have not moved on, or to roll an environment back. It pushes the pin (base-repo.yaml on the
    environment's branch of the control-plane repo), then does what schedule does: pushes the rendered commit
    to branch fleetflow/<environment> of the GitOps repo and opens or updates its PR (merged by a person, or
    by fleetflow with the environment's pullRequest.autoMerge).

    \b
    Examples (on GitHub the repos and token come from GITHUB_REPOSITORY and GITHUB_TOKEN or .fleetflow.yaml):
      fleetflow promote --commit 3f2a9c1                           # to the first environments (dev)
      fleetflow promote --environment qa --commit 3f2a9c1          # to qa, once dev rolled it out
      fleetflow promote --environment qa --commit 3f2a9c1 --release      # end a rollback's hold on qa
      fleetflow promote --commit 3f2a9c1 --forge local --control-plane control-plane.git   # repos in git only

    \b
    The guarantee: COMMIT is promoted only if every environment the target comes `after` has
    fleetflow/<env> = success on COMMIT in the control-plane repo (re-checked here, whatever triggered it).
    Promoting an older commit with --environment is a rollback: it passes the same check and holds the
    environment there until `--release`; without --environment an older commit is never a rollback
    (the environment stays where it is). `--release` moves to the pinned commit (the hold dropped) or a
    newer one; with an older commit it is refused (a rollback holds). Re-running with the same arguments
    changes nothing, but for a PR a person closed without merging: with --environment it is proposed again
    in a new PR (the output names the closed one); without it (the workflows' promotion of a push) it
    stays closed: operation rejected.

    \b
    Before the pin is pushed, COMMIT with the environment branch is rendered (the GitOps commit made,
    nothing pushed): when the render refuses it (a file that does not load, a reference, a template
    that does not compile or names an unknown variable, a config its schema refuses, no GitOpsRepo),
    the problems are printed with their file:line and nothing is written. An environment with
    shardedSchedule gets the render's checks instead (its shard jobs render).

    Exit 0 promoted (or already was), 1 refused (the guarantee, or the render), 2 usage error, 3 forge or git
    failure (docs/design.md section 6).
    """
    step = actions_step("promote", github_actions, job_summary)
    with handled(fmt, FLEET_WRITTEN, step, FLEET_NO_STEP) as reply, \
            make_context(forge, control_plane, config, fmt, on_step=reply.stepped, warn=reply.warn) as ctx:
        outcomes = promote_many(ctx, environment, commit, release=release)
        result = PromoteResult(promotions=outcomes)
        for warning in result.warnings():
            reply.warn(warning)
        report_step(step, ctx, promote_report(outcomes))

        def text() -> None:
            for outcome in outcomes:
                click.echo(outcome.message)

        reply.done(result, text)
