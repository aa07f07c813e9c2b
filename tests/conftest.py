from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fleet import Fleet
from tests.ghstub.fixtures import github_stub  # noqa: F401


@pytest.fixture(autouse=True)
def clean_environment(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """The runner's environment never leaks into a test: no GITHUB_*, a fixed git identity, a private cache."""
    for name in list(os.environ):
        if name.startswith(("GITHUB_", "FLEETFLOW_", "GIT_")) or name in ("CI", "NO_COLOR"):
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("GIT_AUTHOR_NAME", "fleetflow tests")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "tests@fleetflow.invalid")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "fleetflow tests")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "tests@fleetflow.invalid")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    cache: Path = tmp_path_factory.mktemp("cache")
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache))
    yield


@pytest.fixture(params=["local", "github"])
def fleet(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Fleet]:
    """The fleet (tests/fleet.py) on each forge: the local forge, and the real ``GitHubForge`` on the stand-in
    (``tests.fleet.local_fleet`` / ``github_fleet``); its forge is closed after the test.
    A module that needs another fleet defines a ``fleet`` fixture of its own, which pytest uses instead."""
    from tests.fleet import github_fleet, local_fleet

    made = (local_fleet(tmp_path) if request.param == "local"
            else github_fleet(tmp_path, request.getfixturevalue("github_stub")))
    yield made
    made.forge.close()
