"""``fleetflow route``: what a GitHub event means (used by the workflows; testable without GitHub)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT
from fleetflow.cli.errors import handled
from fleetflow.cli.fleet import fleet_options, make_context
from fleetflow.cli.github_actions import actions_step, github_actions_options, route_report
from fleetflow.cli.paths import CommandPath
from fleetflow.errors import InputError, Location, Problem
from fleetflow.promotion.events import route


def one_line(text: str) -> str:
    """Event text is untrusted: control characters are escaped so that it can never start a new log line
    (a line beginning with ``::`` would be a workflow command in GitHub Actions)."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


@click.command("route")
@click.option("--event-name", required=True, help="The event ($GITHUB_EVENT_NAME): push, status, pull_request, ...")
@click.option("--event-path", required=True, type=CommandPath("file"),
              help="The event payload file ($GITHUB_EVENT_PATH).")
@click.option("--environments", help="Comma-separated environment names (default: read from the control plane's "
              "main branch).")
@fleet_options
@FORMAT
@github_actions_options
def route_command(event_name: str, event_path: Path, environments: str | None, forge: str | None,
                  control_plane: str | None, config: Path | None, fmt: str, github_actions: bool,
                  job_summary: bool) -> None:
    """Say what a GitHub event means for fleetflow (workflows).

    The workflows run it first; run it to see what an event would start. Decides what the event means:
    promote (push to main, fleetflow-promote dispatch, manual dispatch), schedule (push to an environment
    branch), check-rollout (status / merged fleetflow PR / schedule in the GitOps repo), or none. Prints
    {"action", "environments", "commit", "release", "reason"}. Writes nothing.

    \b
    Examples:
      fleetflow route --event-name "$GITHUB_EVENT_NAME" --event-path "$GITHUB_EVENT_PATH"
      fleetflow route --event-name push --event-path event.json --environments dev,qa,prod

    Exit 1 when the payload is not a JSON object or a manual request is invalid (unknown environment, not a
    sha), 2 usage error, 3 forge or git failure (docs/design.md section 6)."""
    step = actions_step("route", github_actions, job_summary)
    with handled(fmt, step=step) as reply:
        payload = read_event(event_path)
        branches: dict[str, str] | None = None
        if environments is not None:
            names = [n.strip() for n in environments.split(",") if n.strip()]
        else:
            with make_context(forge, control_plane, config, "json", warn=reply.warn) as ctx:
                envs = ctx.current_environments(ctx.main_tip())
                names = sorted(envs)
                branches = {ctx.env_branch(e): name for name, e in envs.items()}
        try:
            decision = route(event_name, payload, environments=names, env_branches=branches)
        except InputError as exc:
            raise InputError([Problem(p.message, p.location or Location(str(event_path)), p.hint)
                              for p in exc.problems()]) from None
        if step is not None:
            step.report(route_report(decision))

        def text() -> None:
            click.echo(f"{decision.action} {','.join(decision.environments)} {decision.commit}".rstrip())
            click.echo(one_line(decision.reason))

        problems = [Problem(one_line(decision.reason), None,
                            one_line(decision.hint) or "check the workflow_dispatch / dispatch inputs")]
        reply.done(decision, text, problems=problems if decision.invalid else [])


def read_event(path: Path) -> object:
    """The event payload file as JSON (any JSON value: ``route`` checks its shape); InputError when it is not."""
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise InputError([Problem(f"the event payload is not JSON: {exc}", Location(str(path)),
                                  "pass the file GitHub wrote for the event ($GITHUB_EVENT_PATH)")]) from None
    except OSError as exc:
        raise InputError([Problem(f"cannot read the event payload: {exc.strerror}", Location(str(path)))]) from None
