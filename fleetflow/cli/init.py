"""``fleetflow init``: set up a control-plane and GitOps repository pair (branches, caller workflows, defaults)."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import handled
from fleetflow.cli.fleet import fleet_options
from fleetflow.errors import ExitCode
from fleetflow.forge.factory import make_forge
from fleetflow.forge.git import GitRepos
from fleetflow.promotion.bootstrap import apply_init, conflicts_as_problems, plan_init, require_repos
from fleetflow.settings import load_settings

SYMBOLS = {"todo": "+", "unchanged": "=", "conflict": "!"}


@click.command("init")
@click.option("--gitops", "gitops", default="", help="The platform GitOps repository (owner/name, or a path).")
@click.option("--ref", default="v0", show_default=True,
              help="The fleetflow ref the caller workflows use (pin it to a release's commit sha).")
@click.option("--dry-run", is_flag=True, help="Print the plan; write nothing.")
@fleet_options
@FORMAT
def init_command(gitops: str, ref: str, dry_run: bool, forge: str | None, control_plane: str | None,
                 config: Path | None, fmt: str) -> None:
    """Set up a control-plane and GitOps repository pair.

    Run it once for a new fleet (the repositories must exist, they may be empty; the GitOps repository is one of
    its own, not the control plane), and again after adding an Environment.

    \b
    Examples:
      fleetflow init --control-plane contoso/control-plane --gitops contoso/platform-gitops --dry-run
      fleetflow init --control-plane contoso/control-plane --gitops contoso/platform-gitops --ref 1a2b3c4
      fleetflow init --forge local --control-plane control-plane.git --gitops gitops.git --dry-run

    \b
    Makes sure of: the control plane's main (a starter dev → qa → prod chain when main does not exist) with the
    caller workflow and .fleetflow.yaml; one branch per Environment with the caller workflow (a push runs the
    workflow file of the pushed commit); the GitOps repository's default branch and environment branches with
    the GitOps caller (status, schedule and dispatches run the default branch's file, pull_request the merge
    ref's); main as the control plane's default branch.

    \b
    Idempotent: a second run changes nothing and says so. A file init did not write is never overwritten: it is
    reported as a conflict (exit 1) and everything else is still set up. A run stopped half-way says what it
    wrote; run it again to finish. --dry-run prints the plan only.
    Exit 2 usage error, 3 forge or git failure (docs/design.md section 6).
    """
    with handled(fmt, "Nothing was written.") as reply:
        settings = load_settings(forge=forge, control_plane=control_plane, config=config)
        require_repos(settings.control_plane, gitops, ref, settings.forge)
        git = GitRepos(settings.cache_dir / "git")
        with closing(make_forge(settings)) as the_forge:
            plan = plan_init(the_forge, git, settings.control_plane, gitops, ref=ref)
            if not dry_run and (plan.writes or plan.defaults):
                made: list[str] = []

                def done(what: str) -> None:  # a run stopped half-way says what it wrote (until 2026-11-29 it
                    made.append(what)         # pointed at a list "above" that the text format never printed)
                    reply.written = (f"Stopped at this error. Written before it: {', '.join(made)}. Running init "
                                     "again is safe: it finds those set up and does the rest.")

                apply_init(plan, the_forge, git, done=done)

        def text() -> None:
            for step in plan.steps:
                click.echo(f"{SYMBOLS[step.state]} {step.repo}@{step.branch}: {step.what}: {step.detail}")
            if not plan.todo:
                click.echo("Nothing to do: the repositories are set up" +
                           (" (except the conflicts below)." if plan.conflicts else "."))
            elif dry_run:
                click.echo(f"Dry run: {len(plan.todo)} change(s) planned, nothing was written.")
            else:
                click.echo(f"Done: {len(plan.todo)} change(s) written.")

        problems = conflicts_as_problems(plan)
        reply.done(plan.outcome(), text, problems=problems,
                   exit_code=ExitCode.REFUSED if problems else ExitCode.DONE)
