"""Options and setup shared by the commands that talk to git and the forge (promote, schedule, ...)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

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


def make_context(forge: str | None, control_plane: str | None, config: Path | None, fmt: str) -> Context:
    settings = load_settings(forge=forge, control_plane=control_plane, config=config)
    say: Callable[[str], None] = (lambda text: click.echo(text, err=True)) if fmt == "text" else (lambda _t: None)
    return Context(
        forge=make_forge(settings),
        git=GitRepos(settings.cache_dir / "git"),
        control_plane=settings.control_plane,
        say=say,
    )
