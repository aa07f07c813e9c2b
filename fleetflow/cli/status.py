"""``fleetflow status``: every environment's pinned commit, PR and gate."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.errors import handled
from fleetflow.cli.fleet import fleet_options, make_context
from fleetflow.cli.github_actions import actions_step, github_actions_options, status_page_report
from fleetflow.cli.metrics import metrics_markdown
from fleetflow.cli.paths import CommandPath
from fleetflow.errors import UsageError
from fleetflow.promotion.status import FleetStatus, as_markdown, as_text, fleet_status
from fleetflow.promotion.statuspage import write_status_page


@click.command()
@fleet_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "html"]), default="text",
              show_default=True, help="markdown: tables and a Mermaid diagram of the chain, for job summaries. "
              "html: a self-contained status page written to --output DIR/index.html.")
@click.option("--output", type=CommandPath(exists=False),
              help="With --format html: the folder to write index.html into (created).")
@github_actions_options
def status(forge: str | None, control_plane: str | None, config: Path | None, fmt: str,
           output: Path | None, github_actions: bool, job_summary: bool) -> None:
    """Show where every environment stands: pin, PR, gate.

    Run it to see the fleet at a glance, by hand or in a workflow's job summary; the status-page action
    writes the HTML page with it. For each environment, in promotion order: the pinned main commit (and a
    rollback's hold), the GitOps branch's head, the open PR, the gate state with n/m clusters, and the last
    commit that rolled out successfully. It reads the control-plane and GitOps repos and the statuses; it
    writes nothing, except the page with --format html --output DIR.

    \b
    Examples (on GitHub the repos and token come from GITHUB_REPOSITORY and GITHUB_TOKEN or .fleetflow.yaml):
      fleetflow status
      fleetflow status --format markdown >> "$GITHUB_STEP_SUMMARY"   # tables and a Mermaid diagram
      fleetflow status --format html --output site                   # site/index.html, self-contained
      fleetflow status --forge local --control-plane control-plane.git

    Exit 0 done, 1 the input on a branch does not load, 2 usage error, 3 forge or git failure (docs/design.md
    section 6).
    """
    with handled(fmt) as reply:
        if (fmt == "html") != (output is not None):
            raise UsageError("--format html and --output DIR go together: the page is written to DIR/index.html")
    step = actions_step("status", github_actions, job_summary)
    with handled(fmt, step=step) as reply, make_context(
        forge, control_plane, config, "json" if fmt == "json" else "text", narrate=False, warn=reply.warn
    ) as ctx:
        if output is not None:
            reply.written = f"Nothing was written to {output}."
            path = write_status_page(ctx, output)
            if step is not None:  # the page is the status; the summary gets the delivery metrics
                step.report(status_page_report(str(path.parent.resolve())), lambda: metrics_markdown(ctx))
            reply.done({"page": str(path)}, lambda: click.echo(f"wrote {path} (nothing else)"))
            return
        entries = fleet_status(ctx, warn_pins=True)

        def text() -> None:
            if fmt == "markdown":
                click.echo(as_markdown(entries), nl=False)
            else:
                click.echo(as_text(entries))

        reply.done(FleetStatus(environments=entries), text)
