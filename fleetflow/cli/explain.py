"""``fleetflow explain``: where each composed config value of one assignment came from."""

from __future__ import annotations

import json
from pathlib import Path

import click

from fleetflow.cli.common import FORMAT, check_environment, load, trees
from fleetflow.cli.errors import handled
from fleetflow.errors import InputError, Problem
from fleetflow.render.composition import Provenance
from fleetflow.render.explain import Explanation, explain_assignment, key_text


def _show(value: object) -> str:
    return json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)


@click.command()
@trees
@click.option("--environment", required=True, help="Environment the assignment belongs to.")
@click.option(
    "--assignment",
    required=True,
    metavar="CLUSTERTYPE/TARGET",
    help="The assignment, as its output folder: cluster type / <workload>-<target>.",
)
@click.option("--key", help="Only this key (dotted path, e.g. db.host) and what is below it.")
@FORMAT
def explain(
    main_dir: Path, env_dir: Path, environment: str, assignment: str, key: str | None, fmt: str
) -> None:
    """Show every composed config value of ASSIGNMENT: its value, the ConfigMap, file and line it came from,
    and the lower-precedence values it overrode (highest first).

    Precedence, lowest first: annotation fleetflow.dev/priority, then the number of matching labels,
    then the ConfigMap name. Works on invalid assignments too: it is how you find out why.
    """
    with handled(fmt) as reply:
        plane = load(main_dir, env_dir, fmt)
        check_environment(plane, environment)
        explanation = explain_assignment(plane, environment, assignment)
        entries = explanation.entries(key)
        if key is not None and not entries:
            raise InputError(
                [
                    Problem(
                        f"key {key!r} is not set for {assignment}",
                        None,
                        "run without --key to list every key",
                    )
                ]
            )
        reply.done(explanation.result(key), lambda: _text(explanation, entries, assignment, environment))


def _text(explanation: Explanation, entries: list[Provenance], assignment: str, environment: str) -> None:
    click.echo(f"{assignment} (environment {environment})")
    click.echo(f"  selected by policies: {', '.join(explanation.policies)}")
    click.echo(
        f"  ConfigMaps applied, lowest precedence first: {', '.join(explanation.composed.sources) or 'none'}"
    )
    for entry in entries:
        click.echo(f"{key_text(entry.path)} = {_show(entry.winner.value)}")
        click.echo(f"    from {entry.winner.source} at {entry.winner.location}")
        for lost in entry.overridden:
            click.echo(f"    overrides {_show(lost.value)} from {lost.source} at {lost.location}")
