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
from fleetflow.errors import InputError, Problem, Problems, UsageError, unknown_environment
from fleetflow.forge.git import work_tree_branch, work_tree_head
from fleetflow.forge.registrations import RegistrationFetcher
from fleetflow.model.controlplane import ControlPlane, load_control_plane
from fleetflow.model.documents import GitFiles, ParseCache, Tree, read_tree
from fleetflow.model.resources import KIND_ORIGINS

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
    folders = (main_dir, env_dir) if isinstance(main_dir, Path) and isinstance(env_dir, Path) else None
    if folders is not None:
        same_folder(*folders)
    fetcher = RegistrationFetcher(progress=TERMINAL.progress(fmt))
    try:
        plane = load_control_plane(
            main_dir, env_dir,
            main_label=str(main_dir) if main_label is None else main_label,
            env_label=str(env_dir) if env_label is None else env_label,
            fetch=fetcher, cache=parse_cache(),
        )
    except InputError:
        if folders is not None:
            mixed_up(*folders)  # only when loading failed: a run that loads reads nothing twice
        raise
    return plane


# kinds only one side holds (fleetflow.model.resources.KIND_ORIGINS): what tells a checkout of main from one of an
# environment branch. ConfigMaps and ConfigSchemas may be on either.
MAIN_ONLY = sorted(kind for kind, origins in KIND_ORIGINS.items() if "main" in origins and "env" not in origins)
ENV_ONLY = sorted(kind for kind, origins in KIND_ORIGINS.items() if "env" in origins and "main" not in origins)
WORKTREE_HINT = "a second checkout of the repo on another branch: git worktree add ../cp-dev dev"


def same_folder(main_dir: Path, env_dir: Path) -> None:
    """``--main`` and ``--env`` naming one folder: main's resources and an environment branch's are on two
    branches, so they are two checkouts. Until 2026-11-29 the folder was read twice: every resource "does not
    belong" on one side and every ConfigMap and ConfigSchema a "duplicate name (also defined at" itself ")"."""
    if main_dir.resolve() == env_dir.resolve():
        raise UsageError(Problem(
            f"--main {main_dir} and --env {env_dir} are the same folder: main and the environment branch are two "
            "branches, each needs its own checkout",
            None,
            f"pass --main a checkout of main and --env one of the environment's branch ({WORKTREE_HINT})",
        ))


def mixed_up(main_dir: Path, env_dir: Path) -> None:
    """Raise one usage error when the folders, which did not load, hold the other side's kinds only: ``--main`` and
    ``--env`` swapped, ``--env`` a checkout of main, or ``--main`` one of an environment branch. Until 2026-11-29
    each gave a "does not belong on ..." per resource (35 for the example's dev), with the hint to move the files
    to the other branch: a fix to the repo for a mistake on the command line."""
    cache = parse_cache()
    found = {flag: {doc.kind for doc in read_tree(Tree(tree, str(tree)), Problems(), cache)}
             for flag, tree in (("--main", main_dir), ("--env", env_dir))}
    main_is_env = bool(found["--main"] & set(ENV_ONLY)) and not found["--main"] & set(MAIN_ONLY)
    env_is_main = bool(found["--env"] & set(MAIN_ONLY)) and not found["--env"] & set(ENV_ONLY)
    main_kinds = ", ".join(sorted(found["--env"] & set(MAIN_ONLY)))
    env_kinds = ", ".join(sorted(found["--main"] & set(ENV_ONLY)))
    if main_is_env and env_is_main:
        raise UsageError(Problem(
            f"--main {main_dir} and --env {env_dir} look swapped: {main_dir} holds an environment branch's "
            f"resources ({env_kinds}) and {env_dir} main's ({main_kinds})",
            None,
            f"swap them: --main {env_dir} --env {main_dir}",
        ))
    if env_is_main:
        raise UsageError(Problem(
            f"--env {env_dir} looks like a checkout of main{_on_branch(env_dir)}, not of an environment branch: it "
            f"holds main's resources ({main_kinds}) and none of an environment branch's ({', '.join(ENV_ONLY)})",
            None,
            f"pass --env a checkout of the environment's branch ({WORKTREE_HINT})",
        ))
    if main_is_env:
        raise UsageError(Problem(
            f"--main {main_dir} looks like a checkout of an environment branch{_on_branch(main_dir)}, not of main: "
            f"it holds an environment branch's resources ({env_kinds}) and none of main's ({', '.join(MAIN_ONLY)})",
            None,
            "pass --main a checkout of the control-plane repo's main branch",
        ))


def _on_branch(directory: Path) -> str:
    branch = work_tree_branch(directory)
    return f" (branch {branch} is checked out there)" if branch else ""


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
