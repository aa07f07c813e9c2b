"""Build the forge the settings name. The only place that knows both implementations."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from fleetflow.clock import utc_now
from fleetflow.errors import Problem, UsageError
from fleetflow.forge.base import Forge
from fleetflow.settings import Settings

# What the github forge takes as a repository (forge/github.py, promotion/bootstrap.py use it too); a URL of a
# repository (the browser's address, an https or ssh clone URL) and the owner/name inside it. GitHub names no
# repository ``*.git``: it takes the suffix off a new repository's name (github/docs#44518, line/centraldogma#956),
# and git's URLs add it.
GITHUB_NAME = re.compile(r"^[A-Za-z0-9-]+/[A-Za-z0-9._-]+$")
GITHUB_URL = re.compile(
    r"^(?:https?://[^/]+/|ssh://git@[^/]+/|git@[^:/]+:)?([A-Za-z0-9-]+/[A-Za-z0-9._-]+?)(?:\.git)?/?$"
)


def make_forge(settings: Settings, clock: Callable[[], datetime] | None = None) -> Forge:
    check_control_plane(settings)
    clock = clock or utc_now
    if settings.forge == "local":
        from fleetflow.forge.local import LocalForge

        return LocalForge(cache_dir=settings.cache_dir / "forge", clock=clock)
    from fleetflow.forge.github import GitHubForge

    return GitHubForge.from_settings(settings)


def check_control_plane(settings: Settings) -> None:
    """The control plane as the forge names repositories: ``owner/name`` on GitHub, a path or a git URL on the local
    forge. Until 2026-11-29 a GitHub URL was "forge/git error: invalid GitHub repository" (exit 3), ``owner/name.git``
    a 404 "it does not exist", a path on the github forge (``GITHUB_TOKEN`` set in the shell picks it) "invalid
    GitHub repository", and ``owner/name`` on the local forge "git ls-remote failed": none said what to change."""
    given, source = settings.control_plane, settings.control_plane_from
    if settings.forge == "github":
        if GITHUB_NAME.match(given) and not given.lower().endswith(".git"):
            return
        named = GITHUB_URL.match(given)
        if named:
            raise UsageError(Problem(f"{source} {given}: GitHub repositories are named owner/name here", None,
                                     _give(source, named.group(1))))
        if _is_path(given):
            raise UsageError(Problem(
                f"{source} {given} is a path, and the github forge takes a GitHub repository's owner/name", None,
                f"for a repository on this machine pass --forge local; the github forge was chosen because "
                f"{settings.forge_from}"))
        raise UsageError(Problem(f"{source} {given!r} is not a GitHub repository's owner/name", None,
                                 _give(source, "contoso/platform-control-plane")))
    if GITHUB_NAME.match(given) and not _is_path(given) and not Path(given).exists():
        raise UsageError(Problem(
            f"{source} {given}: no such folder, and the local forge takes the path or git URL of a repository", None,
            f"for the GitHub repository {given} pass --forge github and set GITHUB_TOKEN (or the GitHub App's "
            f"FLEETFLOW_APP_ID and FLEETFLOW_APP_PRIVATE_KEY); the local forge was chosen because "
            f"{settings.forge_from}"))


def _is_path(given: str) -> bool:
    return given.startswith(("/", "./", "../", "~", "file://")) or (
        not given.startswith(("http://", "https://", "ssh://", "git@")) and Path(given).expanduser().exists())


def _give(source: str, name: str) -> str:
    """How to give ``name`` where ``source`` (``--control-plane``, ``$FLEETFLOW_CONTROL_PLANE``, ``controlPlane
    (at file:line)``) gave the control plane."""
    if source.startswith("$"):
        return f"set {source[1:]}={name}"
    if source.startswith("controlPlane"):
        return f"write controlPlane: {name}"
    return f"pass {source} {name}"
