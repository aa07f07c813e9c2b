"""Options and setup shared by the commands that talk to git and the forge (promote, schedule, ...)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

import click

from fleetflow.cli.terminal import TERMINAL
from fleetflow.forge.factory import make_forge
from fleetflow.forge.git import GitRepos
from fleetflow.promotion.context import Context
from fleetflow.settings import load_settings

F = TypeVar("F", bound=Callable[..., Any])


def fleet_options(func: F) -> F:
    func = click.option(
        "--config", type=click.Path(dir_okay=False, path_type=Path),
        help="Config file (default: $FLEETFLOW_CONFIG, or .fleetflow.yaml here).",
    )(func)
    func = click.option(
        "--control-plane", help="Control-plane repo: owner/name on GitHub, a path or git URL for the local forge "
        "(default: $FLEETFLOW_CONTROL_PLANE, $GITHUB_REPOSITORY, the config file).",
    )(func)
    func = click.option(
        "--forge", type=click.Choice(["github", "local"]),
        help="Where PRs and statuses live (default: $FLEETFLOW_FORGE, the config file, github when a token is set).",
    )(func)
    return func


@contextmanager
def make_context(
    forge: str | None, control_plane: str | None, config: Path | None, fmt: str, *, narrate: bool = True
) -> Iterator[Context]:
    """The run's context. On a terminal a spinner shows the current step and the time spent while git or the forge
    is slow (an unreachable GitHub is retried for a while: the spinner says so); the narration (``ctx.say``) goes
    to stderr, plain, unless ``--format json``, ``narrate=False`` or ``--quiet``."""
    settings = load_settings(forge=forge, control_plane=control_plane, config=config)
    text = fmt != "json"
    where = f"{settings.forge} forge, control plane {settings.control_plane}"
    with TERMINAL.activity(f"working with the {where}") if text else nullcontext() as line:

        def say(message: str) -> None:
            if line is not None:
                line.update(f"{message} …")
            if narrate and line is not None:
                line.print(message)

        with Context(
            forge=make_forge(settings),
            git=GitRepos(settings.cache_dir / "git"),
            control_plane=settings.control_plane,
            say=say,
        ) as ctx:
            yield ctx
