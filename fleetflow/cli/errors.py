"""The one place where fleetflow errors become messages and exit codes (0 ok, 1 input/gate, 2 usage, 3 forge/git)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click

from fleetflow.errors import FleetflowError

F = TypeVar("F", bound=Callable[..., Any])


def emit_failure(error: FleetflowError, fmt: str) -> None:
    problems = error.problems()
    if fmt == "json":
        click.echo(
            json.dumps(
                {"ok": False, "exitCode": error.exit_code, "problems": [p.to_json() for p in problems]},
                indent=2,
            )
        )
        return
    label = {1: "error", 2: "usage error", 3: "forge/git error"}.get(error.exit_code, "error")
    for problem in problems:
        click.echo(f"{label}: {problem}", err=True)
    if len(problems) > 1:
        click.echo(f"{len(problems)} problems found; nothing was written.", err=True)
    else:
        click.echo("Nothing was written.", err=True)


@contextmanager
def handled(fmt: str) -> Iterator[None]:
    """Run a command body; a FleetflowError ends the process with its exit code and clear messages."""
    try:
        yield
    except FleetflowError as error:
        emit_failure(error, fmt)
        sys.exit(error.exit_code)
