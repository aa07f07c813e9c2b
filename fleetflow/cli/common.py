"""Options and edge helpers shared by the commands: reading trees, finding commits, printing."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
import platformdirs

from fleetflow.cli.paths import CommandPath
from fleetflow.cli.terminal import TERMINAL
from fleetflow.errors import unknown_environment
from fleetflow.forge.git import work_tree_branch, work_tree_head
from fleetflow.forge.registrations import RegistrationFetcher
from fleetflow.model.controlplane import ControlPlane, load_control_plane
from fleetflow.model.documents import GitFiles, ParseCache

F = TypeVar("F", bound=Callable[..., Any])

FORMAT = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text for people, json for scripts and actions.",
)
FOLDER = CommandPath()  # must exist, be a folder, be readable: fleetflow.cli.paths

MAIN = click.option(
    "--main",
    "main_dir",
    required=True,
    type=FOLDER,
    help="Checkout of the control-plane main branch (environments, templates, workloads).",
)
ENV = click.option(
    "--env",
    "env_dir",
    required=True,
    type=FOLDER,
    help="Checkout of the environment branch (cluster types, clusters, configs, policies, GitOps repo).",
)


def trees(func: F) -> F:
    return MAIN(ENV(func))


def load(main_dir: Path | GitFiles, env_dir: Path | GitFiles, fmt: str = "text", *, main_label: str | None = None,
         env_label: str | None = None) -> ControlPlane:
    """Load and structurally check both trees (folders, or a commit's files); raise every problem at once (git
    failures exit 3). Messages name files by the labels (default: the paths as given; a commit's files by their
    own label)."""
    fetcher = RegistrationFetcher(progress=TERMINAL.progress(fmt))
    plane = load_control_plane(
        main_dir, env_dir,
        main_label=str(main_dir) if main_label is None else main_label,
        env_label=str(env_dir) if env_label is None else env_label,
        fetch=fetcher, cache=parse_cache(),
    )
    return plane


def parse_cache() -> ParseCache | None:
    """Parsed YAML by content, in the user's cache folder (platformdirs: $XDG_CACHE_HOME/fleetflow/parsed on
    Linux, ~/Library/Caches/fleetflow/parsed on macOS); off with FLEETFLOW_PARSE_CACHE=0."""
    if os.environ.get("FLEETFLOW_PARSE_CACHE", "1") == "0":
        return None
    return ParseCache(platformdirs.user_cache_path("fleetflow", appauthor=False) / "parsed")


def head_commit(directory: Path) -> str | None:
    """The commit checked out in ``directory`` when it is the top of a git work tree, else None."""
    return work_tree_head(directory)


def check_environment(plane: ControlPlane, environment: str) -> None:
    """``--environment`` must name an Environment on main (when main defines any): exit 2 otherwise, the same
    usage error as ``promote``'s."""
    if plane.environments and environment not in plane.environments:
        raise unknown_environment(environment, plane.environments)


def head_branch_name(directory: Path) -> str | None:
    """The branch checked out in ``directory`` when it is the top of a git work tree, else None."""
    return work_tree_branch(directory)
