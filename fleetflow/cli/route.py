"""``fleetflow route``: what a GitHub event means (used by the workflows; testable without GitHub)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, print_json
from fleetflow.cli.errors import handled
from fleetflow.cli.fleet import fleet_options, make_context
from fleetflow.errors import InputError, Problem, UsageError
from fleetflow.promotion.events import route


def one_line(text: str) -> str:
    """Event text is untrusted: control characters are escaped so that it can never start a new log line
    (a line beginning with ``::`` would be a workflow command in GitHub Actions)."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


@click.command("route")
@click.option("--event-name", required=True, help="The event ($GITHUB_EVENT_NAME): push, status, pull_request, ...")
@click.option("--event-path", required=True, type=click.Path(dir_okay=False, exists=True, path_type=Path),
              help="The event payload file ($GITHUB_EVENT_PATH).")
@click.option("--environments", help="Comma-separated environment names (default: read from the control plane's "
              "main branch).")
@fleet_options
@FORMAT
def route_command(event_name: str, event_path: Path, environments: str | None, forge: str | None,
                  control_plane: str | None, config: Path | None, fmt: str) -> None:
    """Decide what EVENT means: promote (push to main, fleetflow-promote dispatch, manual dispatch),
    schedule (push to an environment branch), check-rollout (status / merged fleetflow PR / schedule
    in the GitOps repo), or none. Prints {"action", "environments", "commit", "release", "reason"}.
    Exit 1 when a manual request is invalid (unknown environment, not a sha)."""
    with handled(fmt):
        try:
            payload = json.loads(event_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise UsageError(f"{event_path} is not JSON: {exc}") from None
        branches: dict[str, str] | None = None
        if environments is not None:
            names = [n.strip() for n in environments.split(",") if n.strip()]
        else:
            with make_context(forge, control_plane, config, "json") as ctx:
                envs = ctx.environments(ctx.main_tip())
                names = sorted(envs)
                branches = {ctx.env_branch(e): name for name, e in envs.items()}
        decision = route(event_name, payload, environments=names, env_branches=branches)
        if fmt == "json":
            print_json(decision.to_json())
        else:
            click.echo(f"{decision.action} {','.join(decision.environments)} {decision.commit}".rstrip())
            click.echo(one_line(decision.reason))
        if decision.invalid:
            if fmt == "json":
                sys.exit(1)
            raise InputError([Problem(decision.reason, None, "check the workflow_dispatch / dispatch inputs")])
