"""``fleetflow plan``: what render would change in --output, written nowhere."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, trees
from fleetflow.cli.errors import handled
from fleetflow.cli.paths import CommandPath
from fleetflow.cli.render import foreign_lines, render_start, trees_in_hints
from fleetflow.cli.terminal import TERMINAL
from fleetflow.render.diff import plan_diff
from fleetflow.render.output import FolderTree, in_the_way, kustomization_warnings, survey
from fleetflow.render.pipeline import render_environment
from fleetflow.render.summary import PlanSummary, changes_text, headline


@click.command()
@trees
@click.option("--environment", required=True, help="Environment to plan.")
@click.option(
    "--output",
    required=True,
    type=CommandPath(exists=False),
    help="The current output root to compare against (may be empty or missing).",
)
@click.option("--main-commit", help="main commit to record (default: HEAD of --main if a git repo).")
@click.option("--env-commit", help="Environment-branch commit to record (default: HEAD of --env).")
@click.option(
    "--diff/--no-diff", default=True, show_default=True,
    help="Print the unified diff after the summary: the rendered files, then fleetflow's state.",
)
@FORMAT
def plan(
    main_dir: Path,
    env_dir: Path,
    environment: str,
    output: Path,
    main_commit: str | None,
    env_commit: str | None,
    diff: bool,
    fmt: str,
) -> None:
    """Show what render would change in a folder; writes nothing.

    Run it before `fleetflow render` (same options) to review a change: assignments added, removed and
    changed, config keys changed, every file render would delete (only files fleetflow wrote), the files it
    keeps because fleetflow did not write them, and a unified diff.

    \b
    Examples (cp-main, cp-dev: checkouts of main and of the dev branch; gitops-dev: of the GitOps repo's dev):
      fleetflow plan --main cp-main --env cp-dev --environment dev --output gitops-dev
      fleetflow plan --main cp-main --env cp-dev --environment dev --output gitops-dev --no-diff

    Exit 0 when the input is valid, 1 when not, 2 usage error (the table: fleetflow --help, docs/design.md
    section 6).
    """
    with handled(fmt) as reply:
        plane, previous, meta = render_start(main_dir, env_dir, environment, output, (main_commit, env_commit), fmt,
                                             reply)
        with trees_in_hints(main_dir, env_dir):
            result = render_environment(plane, environment, previous=previous, meta=meta,
                                        progress=TERMINAL.progress(fmt))
        owned = survey(output, result, previous)
        in_the_way(output, result, owned)
        for warning in [*result.warnings, *kustomization_warnings(output, result, owned)]:
            reply.warn(warning)
        text = plan_diff(FolderTree(output), result, owned, state=previous) if diff else ""

        def show() -> None:
            click.echo(f"Plan for {headline(result)}")
            for line in changes_text(result.changes):
                click.echo(line)
            if result.changes.empty:
                click.echo("  no rendered file changes")
            if owned.delete:
                click.echo(f"render would delete {len(owned.delete)} files fleetflow wrote:")
                for path in owned.delete:
                    click.echo(f"  delete {path}")
            for line in foreign_lines(owned.foreign, "render keeps"):
                click.echo(line)
            if text:
                click.echo("")
                click.echo(text, nl=False)

        reply.done(
            PlanSummary(
                environment=environment, changes=result.changes, assignments=len(result.state.assignments),
                delete=owned.delete, foreign=owned.foreign, diff=text,
            ),
            show,
        )
