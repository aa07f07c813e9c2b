"""``fleetflow status``: every environment's pinned commit, PR and gate."""

from __future__ import annotations

from pathlib import Path

import click

from fleetflow.cli.errors import handled
from fleetflow.cli.fleet import fleet_options, make_context
from fleetflow.promotion.status import as_markdown, as_text, fleet_status


@click.command()
@fleet_options
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True,
              help="markdown: tables and a Mermaid diagram of the chain, for job summaries.")
def status(forge: str | None, control_plane: str | None, config: Path | None, fmt: str) -> None:
    """For each environment, in promotion order: pinned main commit (and hold), GitOps head, open PR,
    gate state with n/m clusters, and the last commit that rolled out successfully."""
    with handled(fmt) as reply, make_context(forge, control_plane, config, "json") as ctx:
        entries = fleet_status(ctx)

        def text() -> None:
            if fmt == "markdown":
                click.echo(as_markdown(entries), nl=False)
            else:
                click.echo(as_text(entries))

        reply.done({"environments": [e.to_json() for e in entries]}, text)
