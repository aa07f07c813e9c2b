"""``fleetflow render``: write an environment's GitOps tree to a directory."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, check_environment, head_commit, load, trees
from fleetflow.cli.errors import handled
from fleetflow.render.output import apply_result, read_state
from fleetflow.render.pipeline import Meta, render_environment
from fleetflow.render.summary import RenderSummary, changes_text, headline


@click.command()
@trees
@click.option("--environment", required=True, help="Environment to render (an Environment on main).")
@click.option(
    "--output",
    "output",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="The environment's output root (the GitOpsRepo path in a checkout of the GitOps branch).",
)
@click.option(
    "--full", is_flag=True, help="Re-render every assignment, even those whose inputs did not change."
)
@click.option(
    "--keep-last-good",
    is_flag=True,
    help="Invalid assignments keep their previous files; everything else is rendered; still exits 1.",
)
@click.option(
    "--main-commit", help="main commit recorded in state.json (default: HEAD of --main if a git repo)."
)
@click.option(
    "--env-commit", help="Environment-branch commit recorded in state.json (default: HEAD of --env)."
)
@FORMAT
def render(
    main_dir: Path,
    env_dir: Path,
    environment: str,
    output: Path,
    full: bool,
    keep_last_good: bool,
    main_commit: str | None,
    env_commit: str | None,
    fmt: str,
) -> None:
    """Render ENVIRONMENT into --output: <clusterType>/<target>/{reconciler,namespace,platform-config}.<ext>
    plus .fleetflow/state.json.

    \b
    Incremental: when --output holds a previous state.json, only assignments whose inputs changed are
    rendered again; the result is byte-identical to a full render. Unchanged files are not rewritten.
    Nothing is written when any input is invalid (unless --keep-last-good).
    """
    with handled(fmt, f"Nothing was written to {output}.") as reply:
        plane = load(main_dir, env_dir)
        check_environment(plane, environment)
        previous, warning = read_state(output)
        if warning:
            reply.warn(warning)
        meta = Meta(main_commit or head_commit(main_dir), env_commit or head_commit(env_dir))
        result = render_environment(
            plane, environment, previous=previous, meta=meta, keep_last_good=keep_last_good, reuse=not full
        )
        for item in result.warnings:
            reply.warn(item)
        reply.written = (
            f"The render stopped while writing {output}: each file written is whole, and state.json was not "
            "updated, so the next render finishes the job."
        )
        report = apply_result(output, result, previous, sweep=full)

        def text() -> None:
            click.echo(f"Rendered {headline(result)}")
            for line in changes_text(result.changes):
                click.echo(line)
            click.echo(f"Wrote {len(report.written)} files, deleted {len(report.deleted)} into {output}")
            if result.problems:
                click.echo(
                    f"{len(result.problems)} invalid assignments kept their previous files (--keep-last-good)."
                )

        reply.done(
            RenderSummary(
                environment=environment,
                output=str(output),
                assignments=len(result.state.assignments),
                rendered=len(result.rendered),
                changes=result.changes,
                written=report.written,
                deleted=report.deleted,
            ),
            text,
            problems=result.problems,
        )
